"""Git for the project: the repository that contains the project root, through GitPython.

A pure domain module (no tornado, no tool context): :func:`open_repository` finds the
repository that contains a folder and holds that repository's lock while a
:class:`GitProject` works on it, so a change of a repository never meets another git operation
on it (reads share the lock with each other). Every git command
runs non-interactively (no terminal, no credential prompt, no editor, a timeout), and every
operation that could lose work is refused with git's own reason and leaves the working tree,
the index and HEAD as they were.

Paths given to and returned by a :class:`GitProject` are relative to the *project root*,
which may be a sub-folder of the repository's working tree.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import posixpath
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..core.cancel import CANCEL_POLL, CallCancelled, call_cancelled
from ..core.errors import ToolError
from ..core.paths import (
    checked_path_argument,
    is_inside,
    is_sealed,
    os_encodable,
    relative_path,
    sealed_error,
)
from ..documents.facts import is_notebook, looks_binary
from ..documents.notebook_view import view_of_json

try:
    import git
    from git.exc import GitCommandNotFound, InvalidGitRepositoryError, NoSuchPathError
except ImportError as e:  # GitPython refuses to import when no git executable is found
    git = None  # type: ignore[assignment]
    _IMPORT_ERROR: Exception | None = e
else:
    _IMPORT_ERROR = None

#: Seconds a local git command may take (hooks included) before it is killed.
LOCAL_TIMEOUT = 120.0
#: Seconds a command that talks to a remote may take before it is killed.
NETWORK_TIMEOUT = 60.0
#: Seconds a call waits for another git operation on the same repository to finish.
LOCK_TIMEOUT = NETWORK_TIMEOUT + LOCAL_TIMEOUT

#: Change types a status or diff entry reports.
MODIFICATION = "MODIFICATION"
ADDITION = "ADDITION"
DELETION = "DELETION"
MOVED = "MOVED"
UNVERSIONED = "UNVERSIONED"

_TRUE = shutil.which("true") or "true"

#: Environment of every git command: never prompt, never open an editor, English messages.
_BASE_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": _TRUE,
    "SSH_ASKPASS": _TRUE,
    "SSH_ASKPASS_REQUIRE": "never",
    "GCM_INTERACTIVE": "never",
    "GIT_EDITOR": _TRUE,
    "GIT_SEQUENCE_EDITOR": _TRUE,
    "GIT_MERGE_AUTOEDIT": "no",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    # Paths we pass are file names, never glob patterns.
    "GIT_LITERAL_PATHSPECS": "1",
    # A stalled transfer (under 1 KB/s for 20 s) is given up.
    "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
    "GIT_HTTP_LOW_SPEED_TIME": "20",
}

#: Added for a reader: git then skips the locks it takes only to tidy up (``git status``
#: refreshing the index), so readers sharing the repository never meet on ``index.lock``.
_READ_ONLY_ENV = {"GIT_OPTIONAL_LOCKS": "0"}

_CONFIG = ["-c", "core.quotepath=off", "-c", "color.ui=false", "-c", "credential.interactive=never"]

#: Called with the files an operation is about to rewrite, before it touches any: a context
#: manager held across the operation (the tools check unsaved editors and take file locks).
Protect = Callable[[list[Path]], contextlib.AbstractContextManager[Any]]


def _unprotected(paths: list[Path]) -> contextlib.AbstractContextManager[Any]:
    return contextlib.nullcontext()


class RepositoryLock:
    """One repository's lock: operations that only read it hold it together, one that
    changes it holds it alone.

    Reads (status, history, diffs) change nothing git keeps (they run with optional locks
    off), so they need not wait for each other; serialising them made thirty agents' reads
    queue behind one another for minutes. A change waits until the reads under way end,
    and reads that come while it waits wait for it, so a stream of reads never starves it.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    def acquire(self, *, shared: bool, timeout: float) -> bool:
        """Take the lock (``shared`` for a read); False when ``timeout`` seconds passed."""
        with self._changed:
            if shared:
                free = lambda: not self._writing and not self._writers_waiting  # noqa: E731
                if not self._changed.wait_for(free, timeout):
                    return False
                self._readers += 1
                return True
            self._writers_waiting += 1
            try:
                alone = lambda: not self._writing and not self._readers  # noqa: E731
                if not self._changed.wait_for(alone, timeout):
                    return False
                self._writing = True
                return True
            finally:
                self._writers_waiting -= 1
                self._changed.notify_all()  # readers held back by this writer may go on

    def release(self, *, shared: bool) -> None:
        with self._changed:
            if shared:
                self._readers -= 1
            else:
                self._writing = False
            self._changed.notify_all()


_locks_guard = threading.Lock()
_locks: dict[str, RepositoryLock] = {}


def _repository_lock(key: str) -> RepositoryLock:
    with _locks_guard:
        lock = _locks.get(key)
        if lock is None:
            lock = _locks[key] = RepositoryLock()
        return lock


#: Repository objects not in use, by the folder they were found from, at most
#: :data:`IDLE_REPOSITORIES` each. GitPython's ``Repo`` and the config parser it reads the
#: repository's config with (in ``Repo.__init__``) are in reference cycles and have
#: finalizers (``__del__``): a ``Repo`` made per call left about 45 objects to the garbage
#: collector, two with finalizers, freed by whichever thread's collection finds them, often
#: the server's loop (py-spy found ``GitConfigParser.__del__`` waiting there for the
#: interpreter lock under bench_agents' load). A ``Repo`` kept here is closed (its
#: ``git cat-file`` processes ended) and taken again by the next call, one caller at a time.
_idle_repositories: dict[str, list[Any]] = {}
_idle_guard = threading.Lock()
IDLE_REPOSITORIES = 8


def _repository_of(root: Path) -> Any:
    """A ``Repo`` of the repository containing ``root``: an idle one when it is still the
    one git would find from there, else a new one."""
    with _idle_guard:
        idle = _idle_repositories.get(str(root))
        repo = idle.pop() if idle else None
    if repo is not None and _still_found(repo, root):
        return repo
    return git.Repo(str(root), search_parent_directories=True)


def _still_found(repo: Any, root: Path) -> bool:
    """Whether git, looking from ``root``, still finds ``repo``: its git folder is there
    and no folder from ``root`` up to its working tree has got a repository of its own."""
    try:
        worktree = Path(os.path.realpath(repo.working_tree_dir))
        if not os.path.isdir(repo.git_dir) or not os.path.exists(worktree / ".git"):
            return False
        folder = root
        while folder != worktree:
            if os.path.lexists(folder / ".git") or folder.parent == folder:
                return False
            folder = folder.parent
        return True
    except (OSError, TypeError, ValueError):
        return False


def _put_back(repo: Any, root: Path) -> None:
    """Close ``repo`` (ending its git processes, whatever state a failed call left them in)
    and keep it for the next caller."""
    repo.close()
    with _idle_guard:
        idle = _idle_repositories.setdefault(str(root), [])
        if len(idle) < IDLE_REPOSITORIES:
            idle.append(repo)


def not_a_repository(root: Path) -> ToolError:
    """The error every git tool answers outside a repository."""
    return ToolError(f"Git not available: {root} is not inside a git repository")


@contextlib.contextmanager
def open_repository(
    root: Path, protect: Protect | None = None, *, read_only: bool = False
) -> Iterator[GitProject]:
    """The repository containing ``root``, locked for this caller until the block ends.

    ``protect`` is given the files of the project a branch switch, pull or merge is about to
    rewrite in the working tree; it may refuse (raise) before anything changed. A
    ``read_only`` caller only reads the repository: it shares the lock with other readers,
    and its git commands take no optional locks (``git status`` leaves the index alone).
    """
    root = Path(os.path.realpath(root))
    if _IMPORT_ERROR is not None:
        raise ToolError(f"Git not available: GitPython cannot run git ({_IMPORT_ERROR})")
    try:
        repo = _repository_of(root)
    except (InvalidGitRepositoryError, NoSuchPathError) as e:
        raise not_a_repository(root) from e
    try:
        if repo.bare or repo.working_tree_dir is None:
            raise ToolError(f"Git not available: {root} is inside a bare repository")
        worktree = Path(os.path.realpath(repo.working_tree_dir))
        if not is_inside(worktree, root):
            raise not_a_repository(root)
        lock = _repository_lock(os.path.realpath(repo.common_dir))
        if not lock.acquire(shared=read_only, timeout=LOCK_TIMEOUT):
            raise ToolError("Git is busy: another operation on this repository did not finish")
        try:
            yield GitProject(repo, root, worktree, protect, read_only=read_only)
        finally:
            lock.release(shared=read_only)
    finally:
        _put_back(repo, root)


@dataclass
class GitResult:
    """What one git command answered."""

    status: int
    stdout: str
    stderr: str


def _wait_for(proc: subprocess.Popen[bytes], timeout: float) -> tuple[str | None, bytes, bytes]:
    """Wait for git to end: ``(None, stdout, stderr)``, or ``("cancelled"|"timeout", …)`` once
    it was killed because the call was cancelled (looked at every :data:`CANCEL_POLL`
    seconds) or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            out, err = proc.communicate(timeout=CANCEL_POLL)
            return None, out or b"", err or b""
        except subprocess.TimeoutExpired:
            pass  # communicate() again loses nothing it read
        why = (
            "cancelled" if call_cancelled() else "timeout" if time.monotonic() >= deadline else None
        )
        if why is None:
            continue
        with contextlib.suppress(OSError):
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            out, err = proc.communicate(timeout=5)
            return why, out or b"", err or b""
        return why, b"", b""


def git_reason(text: str) -> str:
    """Git's message without ``fatal:``/``error:`` prefixes, hints and blank lines."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("hint:"):
            continue
        stripped = re.sub(r"^(fatal|error|warning):\s*", "", stripped)
        lines.append(stripped)
    return "\n".join(lines)


def _iso_utc(timestamp: str | int) -> str:
    return datetime.fromtimestamp(int(timestamp), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _change_type(letter: str) -> str:
    return {"A": ADDITION, "D": DELETION, "R": MOVED, "C": ADDITION}.get(letter, MODIFICATION)


class GitProject:
    """One repository seen from the project root; use it only inside :func:`open_repository`."""

    def __init__(
        self,
        repo: Any,
        root: Path,
        worktree: Path,
        protect: Protect | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        self.repo = repo
        #: Opened to read only (the lock shared with other readers): no optional locks.
        self.read_only = read_only
        self.protect: Protect = protect or _unprotected
        self.root = root
        self.worktree = worktree
        prefix = root.relative_to(worktree).as_posix()
        #: The project root relative to the working tree, "" when they are the same folder.
        self.prefix = "" if prefix == "." else prefix
        self.git_dir = Path(repo.git_dir)

    # ----------------------------------------------------------------- running git

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = LOCAL_TIMEOUT,
        check: bool = True,
        raw: bool = False,
    ) -> GitResult:
        """Run ``git args`` in the working tree; with ``check``, a failure is a ToolError."""
        for arg in args:
            if isinstance(arg, str) and ("\x00" in arg or not os_encodable(arg)):
                # A process argument cannot hold them (ValueError / UnicodeEncodeError).
                raise ToolError(
                    "Git arguments must not contain NUL characters or unpaired surrogates: "
                    f"{arg[:80]!r}"
                )
        command = ["git", *_CONFIG, *args]
        try:
            # As a process (GitPython still makes its environment): waited for here, so a
            # cancelled call kills it at once rather than when its timeout comes.
            handle = self.repo.git.execute(
                command,
                as_process=True,
                env={**_BASE_ENV, **_READ_ONLY_ENV, **(env or {})}
                if self.read_only
                else {**_BASE_ENV, **(env or {})},
                # Its own process group: the helpers it starts (ssh, hooks) are killed with it.
                start_new_session=os.name == "posix",
            )
        except GitCommandNotFound as e:
            raise ToolError("Git not available: the git executable was not found") from e
        proc = handle.proc
        stopped, stdout, stderr = _wait_for(proc, timeout)
        if stopped == "cancelled":
            raise CallCancelled(f"git {args[0]} was stopped")
        if stopped == "timeout":
            raise ToolError(
                f"git {args[0]} did not finish within {timeout:g} seconds and was stopped"
            )
        status = proc.returncode
        err = stderr.decode("utf-8", "surrogateescape").removesuffix("\n")
        out: Any = stdout if raw else stdout.decode("utf-8", "surrogateescape")
        result = GitResult(status, out, err)
        if check and status != 0:
            raise ToolError(git_reason(err) or git_reason(out) or f"git {args[0]} failed")
        return result

    def ok(self, *args: str, **kwargs: Any) -> bool:
        """True when ``git args`` exits with 0."""
        return self.run(*args, check=False, **kwargs).status == 0

    # ----------------------------------------------------------------- paths

    def repo_path(self, path_in_project: str) -> str:
        """The repository-relative path of a project path (lexically, the last link kept).

        The file need not exist (deleted files have history and diffs). Refused when it is
        outside the project root, or is a symlink that leads outside it.
        """
        raw = checked_path_argument(self.root, path_in_project)
        raw = raw.replace("\\", "/") if os.sep == "/" else raw
        given = Path(raw)
        candidate = Path(os.path.normpath(given if given.is_absolute() else self.root / given))
        if candidate == self.root or not raw or raw in (".", "./"):
            full = self.root
        else:
            full = Path(os.path.realpath(candidate.parent)) / candidate.name
        # The leaf stays lexical so a link inside the project is handled as the link, but a
        # link that leads outside the root is refused like every other path tool.
        if not is_inside(self.root, full) or (
            full.is_symlink() and not is_inside(self.root, Path(os.path.realpath(full)))
        ):
            raise ToolError(f"Path is outside the project root: {path_in_project}")
        if is_sealed(self.root, Path(os.path.realpath(full))):
            raise sealed_error(path_in_project)  # its history and diffs are its content
        return relative_path(self.worktree, full)

    def project_path(self, repo_path: str) -> str | None:
        """The project-relative form of a repository path; None when outside the project."""
        if not self.prefix:
            return repo_path
        if repo_path.startswith(self.prefix + "/"):
            return repo_path[len(self.prefix) + 1 :]
        return None

    def shown_path(self, repo_path: str) -> str:
        """A repository path relative to the project root (``../`` when outside it)."""
        if not self.prefix:
            return repo_path
        return posixpath.relpath(repo_path, self.prefix)

    # ----------------------------------------------------------------- refs and commits

    def head_commit(self) -> str | None:
        """The full hash of HEAD, None when the repository has no commits yet."""
        result = self.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
        return result.stdout.strip() if result.status == 0 else None

    def current_branch(self) -> str | None:
        """The checked-out branch (also when it has no commits yet); None when detached."""
        result = self.run("symbolic-ref", "--quiet", "--short", "HEAD", check=False)
        return result.stdout.strip() if result.status == 0 else None

    def require_commits(self) -> str:
        """HEAD's hash, or a clear error for a repository without commits."""
        head = self.head_commit()
        if head is None:
            branch = self.current_branch()
            where = f" (branch {branch!r} is unborn)" if branch else ""
            raise ToolError(f"The repository has no commits yet{where}; make a first commit")
        return head

    def local_branches(self) -> list[str]:
        """Names of the local branches, sorted."""
        return sorted(head.name for head in self.repo.heads)

    def remote_branches(self) -> list[str]:
        """Remote-tracking branches (``origin/main``), without symbolic ``*/HEAD`` refs."""
        out = self.run("for-each-ref", "--format=%(refname:short)%00%(symref)", "refs/remotes")
        names = []
        for line in out.stdout.splitlines():
            name, _, symref = line.partition("\x00")
            if not symref:
                names.append(name)
        return sorted(names)

    def branch_exists(self, name: str) -> bool:
        """True when ``name`` is a local branch."""
        return self.ok("show-ref", "--verify", "--quiet", f"refs/heads/{name}")

    def main_branch(self) -> str | None:
        """``main``, or ``master`` when there is no ``main``; None when neither exists."""
        for name in ("main", "master"):
            if self.branch_exists(name):
                return name
        return None

    def resolve_commit(self, rev: str, field: str = "commit") -> str:
        """The full hash of a revision: full or short hash, ``HEAD~n``, branch or tag name."""
        if not isinstance(rev, str) or not rev.strip():
            raise ToolError(f"{field} must be a non-empty revision (a hash, HEAD~1, a branch …)")
        rev = rev.strip()
        if rev.startswith("-") or "\x00" in rev or not os_encodable(rev):
            raise ToolError(f"Invalid revision for {field}: {rev}")
        result = self.run("rev-parse", "--verify", f"{rev}^{{commit}}", check=False)
        if result.status != 0:
            reason = git_reason(result.stderr)
            if self.head_commit() is None:
                raise ToolError(f"Unknown revision {rev!r}: the repository has no commits yet")
            if "ambiguous" in reason:
                raise ToolError(f"Ambiguous revision {rev!r}: {reason}; give more characters")
            raise ToolError(f"Unknown revision {rev!r}: no commit, branch or tag has that name")
        return result.stdout.strip()

    def config(self, key: str) -> str | None:
        """The effective value of a git setting, None when unset."""
        result = self.run("config", "--get", key, check=False)
        return result.stdout.strip() if result.status == 0 else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        """True when ``older`` is reachable from ``newer`` (or is it)."""
        return self.ok("merge-base", "--is-ancestor", older, newer)

    def operation_in_progress(self) -> str | None:
        """The name of an unfinished merge, rebase, cherry-pick or revert, if any."""
        for marker, name in (
            ("MERGE_HEAD", "merge"),
            ("rebase-merge", "rebase"),
            ("rebase-apply", "rebase"),
            ("CHERRY_PICK_HEAD", "cherry-pick"),
            ("REVERT_HEAD", "revert"),
        ):
            if (self.git_dir / marker).exists():
                return name
        return None

    def changed_between(self, old: str | None, new: str | None) -> list[Path]:
        """Files of the project that differ between two commits (for editors to reload)."""
        if not old or not new or old == new:
            return []
        out = self.run("diff", "--name-only", "-z", "--no-renames", old, new, check=False)
        paths = []
        for name in out.stdout.split("\x00"):
            inside = self.project_path(name) if name else None
            if inside:
                paths.append(self.root / inside)
        return paths

    def planned_changes(self, target: str, *, since_fork: bool = False) -> list[Path]:
        """Files of the project the working tree changes in when it moves from HEAD to
        ``target`` (a commit or tree); with ``since_fork``, only the files ``target`` changed
        since it forked from HEAD (what a merge of ``target`` brings in).
        """
        head = self.head_commit()
        if head is None:
            args = ["ls-tree", "-r", "-z", "--name-only", target]
        else:
            span = [f"{head}...{target}"] if since_fork else [head, target]
            args = ["diff", "--name-only", "-z", "--no-renames", *span]
        paths = []
        for name in self.run(*args).stdout.split("\x00"):
            inside = self.project_path(name) if name else None
            if inside:
                paths.append(self.root / inside)
        return paths

    # ----------------------------------------------------------------- read-only tools

    def status(self) -> list[dict[str, Any]]:
        """Staged and unstaged changes plus untracked files under the project root."""
        args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--renames"]
        if self.prefix:
            args += ["--", self.prefix]
        out = self.run(*args, env={"GIT_OPTIONAL_LOCKS": "0"}).stdout
        fields = out.split("\x00")
        changes: list[dict[str, Any]] = []
        i = 0
        while i < len(fields):
            entry = fields[i]
            i += 1
            if len(entry) < 4:
                continue
            x, y, path = entry[0], entry[1], entry[3:]
            origin = None
            if x in "RC" or y in "RC":
                origin = fields[i] if i < len(fields) else None
                i += 1
            shown = self.project_path(path)
            if shown is None or is_sealed(self.root, self.root / shown):
                continue  # outside the project, or the server's credentials (core/paths.py)
            item: dict[str, Any] = {"pathInProject": shown}
            if x == "?":
                item["type"] = UNVERSIONED
            elif x == "!":
                continue
            elif "R" in (x, y):
                before = self.project_path(origin) if origin else None
                item["type"] = MOVED if before is not None else ADDITION
                if before is not None:
                    item["fromPathInProject"] = before
            elif x in "AC" or y in "AC":
                item["type"] = ADDITION
            elif "D" in (x, y) and not (x == "U" or y == "U"):
                item["type"] = DELETION
            else:
                item["type"] = MODIFICATION
            if x == "U" or y == "U" or (x, y) in (("A", "A"), ("D", "D")):
                item["conflict"] = True
            item["staged"] = x not in " ?"
            item["unstaged"] = y not in " ?" or x == "?"
            changes.append(item)
        return changes

    def changed_since(self, base: str) -> list[str]:
        """The project's files that differ in the working tree from ``base`` (a revision):
        changed, added or deleted since, and untracked ones, sorted."""
        commit = self.resolve_commit(base, "base")
        args = ["diff", "--name-only", "-z", "--no-renames", commit]
        if self.prefix:
            args += ["--", self.prefix]
        names = {
            inside
            for name in self.run(*args).stdout.split("\x00")
            if name and (inside := self.project_path(name))
        }
        names.update(c["pathInProject"] for c in self.status() if c["type"] == UNVERSIONED)
        return sorted(names)

    def tags(self) -> list[str]:
        """Names of the tags, sorted."""
        return sorted(line for line in self.run("tag", "--list").stdout.splitlines() if line)

    def find_commits(self, text: str) -> list[str]:
        """Full hashes of commits whose message holds every word of ``text``, newest first."""
        words = text.split()
        if not words:
            raise ToolError("text must hold at least one word to search for")
        revs = ["--branches", "--tags", "--remotes"]
        if self.head_commit() is not None:
            revs.insert(0, "HEAD")
        elif not self.run("for-each-ref", "--count=1", "refs/heads", "refs/tags").stdout.strip():
            self.require_commits()
        greps = [f"--grep={word}" for word in words]
        out = self.run(
            "log",
            "--format=%H",
            "--regexp-ignore-case",
            "--fixed-strings",
            "--all-match",
            *greps,
            *revs,
            "--",
        )
        return out.stdout.split()

    def history(self, path_in_project: str, max_entries: int) -> list[dict[str, Any]]:
        """Commits that changed a file, newest first, following renames."""
        path = self.repo_path(path_in_project)
        args = [
            "log",
            f"--max-count={max_entries}",
            "--format=%x1e%H%x1f%an%x1f%ae%x1f%at%x1f%B%x1f",
        ]
        on_disk = self.worktree / path if path else self.worktree
        if path and not on_disk.is_dir():
            args += ["--follow", "--name-only"]
        if self.head_commit() is None:
            # No commits yet: a file that exists simply has no history.
            self._require_on_disk(on_disk, path_in_project)
            return []
        args += ["HEAD", "--", path or "."]
        result = self.run(*args, check=False)
        if result.status != 0:
            raise ToolError(git_reason(result.stderr) or "git log failed")
        out = result.stdout
        entries = []
        for record in out.split("\x1e")[1:]:
            sha, author, email, when, message, names = record.split("\x1f", 5)
            entry: dict[str, Any] = {
                "hash": sha,
                "message": message.strip(),
                "author": author,
                "authorEmail": email,
                "date": _iso_utc(when),
            }
            name = next((n for n in names.splitlines() if n.strip()), None)
            if name:
                entry["pathInProject"] = self.shown_path(name)
            entries.append(entry)
        if not entries:
            # Untracked or only staged: not committed yet, so no commits (an empty array).
            self._require_on_disk(on_disk, path_in_project)
        return entries

    @staticmethod
    def _require_on_disk(path: Path, shown: str) -> None:
        if not os.path.lexists(path):
            raise ToolError(
                f"File not found: {shown} is neither in the project nor in the current "
                "branch's history"
            )

    def commit_details(self, rev: str) -> dict[str, Any]:
        """Hash, message, author, date, parents and changed files of one commit."""
        sha = self.resolve_commit(rev, "commitHash")
        fmt = "%H%x1f%h%x1f%an%x1f%ae%x1f%at%x1f%cn%x1f%P%x1f%B"
        fields = self.run("show", "-s", f"--format={fmt}", sha).stdout.split("\x1f", 7)
        full, short, author, email, when, committer, parents, message = fields
        parent_list = parents.split()
        diff = ["diff-tree", "-r", "-z", "--no-commit-id", "--name-status", "-M"]
        diff += [parent_list[0], sha] if parent_list else ["--root", sha]
        out = self.run(*diff).stdout.split("\x00")
        changes: list[dict[str, Any]] = []
        i = 0
        while i < len(out):
            status = out[i]
            i += 1
            if not status:
                continue
            letter = status[0]
            if letter in "RC":
                before, after = out[i], out[i + 1]
                i += 2
                change = {"pathInProject": self.shown_path(after), "type": _change_type(letter)}
                if letter == "R":
                    change["fromPathInProject"] = self.shown_path(before)
            else:
                change = {"pathInProject": self.shown_path(out[i]), "type": _change_type(letter)}
                i += 1
            changes.append(change)
        return {
            "hash": full,
            "shortHash": short,
            "message": message.strip(),
            "author": author,
            "authorEmail": email,
            "committer": committer,
            "date": _iso_utc(when),
            "parents": parent_list,
            "files": [c["pathInProject"] for c in changes],
            "changes": changes,
        }

    def branch_info(self) -> dict[str, Any]:
        """Current branch (None when detached), local and remote branches, the main branch."""
        head = self.head_commit()
        current = self.current_branch()
        return {
            "current": current,
            "branches": self.local_branches(),
            "detached": current is None,
            "headCommit": head[:7] if head else None,
            "mainBranch": self.main_branch(),
            "remoteBranches": self.remote_branches(),
        }

    # ----------------------------------------------------------------- diffs

    def _blob(self, sha: str, path: str) -> bytes | None:
        result = self.run("cat-file", "blob", f"{sha}:{path}", check=False, raw=True)
        data: Any = result.stdout  # bytes, since raw=True
        return data if result.status == 0 else None

    def _tracked(self, path: str) -> bool:
        return bool(self.run("ls-files", "--", path).stdout.strip())

    def diff(self, path_in_project: str, commit1: str | None, commit2: str | None) -> str:
        """A unified diff of one file between two commits, or a commit and the working tree."""
        path = self.repo_path(path_in_project)
        if not path or (self.worktree / path).is_dir():
            raise ToolError(f"{path_in_project or '.'} is a directory; give a file")
        if commit1 is None:
            commit1 = "HEAD"
        old = self.resolve_commit(commit1, "commit1")
        new = self.resolve_commit(commit2, "commit2") if commit2 is not None else None
        shown = self.project_path(path) or path
        if is_notebook(path):
            old_blob = self._blob(old, path)
            new_blob = self._blob(new, path) if new else _read_file(self.worktree / path)
            self._require_somewhere(old_blob, new_blob, path_in_project, commit1, commit2)
            views = [_notebook_text(b, shown) for b in (old_blob, new_blob)]
            if all(v is not False for v in views):
                return unified_diff(shown, views[0], views[1])  # type: ignore[arg-type]
        args = ["diff", "--no-color", "--no-ext-diff"]
        if self.prefix:
            args.append(f"--relative={self.prefix}")
        args += [old] + ([new] if new else []) + ["--", path]
        text = self.run(*args).stdout
        if text:
            if _binary_diff(text):
                between = f"{commit1} and {commit2 or 'the working tree'}"
                raise ToolError(
                    f"{shown} is a binary file (it differs between {between}); "
                    "get_file_diff shows differences of text files only"
                )
            return text
        # No difference, an untracked file, or no such file at all: tell them apart.
        old_blob = self._blob(old, path)
        new_blob = self._blob(new, path) if new else _read_file(self.worktree / path)
        self._require_somewhere(old_blob, new_blob, path_in_project, commit1, commit2)
        if new is None and old_blob is None and not self._tracked(path):
            try:
                return unified_diff(shown, None, _text_or_none(new_blob))
            except _Binary:
                raise ToolError(
                    f"{shown} is a binary file (new, not yet tracked); "
                    "get_file_diff shows differences of text files only"
                ) from None
        return ""

    @staticmethod
    def _require_somewhere(
        old: bytes | None, new: bytes | None, shown: str, commit1: str, commit2: str | None
    ) -> None:
        if old is None and new is None:
            where = f"{commit1} or {commit2}" if commit2 else f"{commit1} or the working tree"
            raise ToolError(f"File not found: {shown} is in neither {where}")

    # ----------------------------------------------------------------- writing tools

    def commit(self, message: str, files: list[str] | None) -> dict[str, Any]:
        """Commit ``files`` exactly (adding them), or what is staged when ``files`` is None."""
        if not isinstance(message, str) or not message.strip():
            raise ToolError("message must not be empty")
        if files is not None:
            return self._commit_only(message, files)
        in_progress = self.operation_in_progress()
        if in_progress != "merge" and self.ok("diff", "--cached", "--quiet"):
            raise ToolError(
                "Nothing to commit: no changes are staged (stage them first, or pass files)"
            )
        self.run("commit", "--no-edit", "-m", message)
        return self._commit_result()

    def _commit_only(self, message: str, files: list[str]) -> dict[str, Any]:
        if not files:
            raise ToolError(
                "files must list at least one file (leave it out to commit what is staged)"
            )
        in_progress = self.operation_in_progress()
        if in_progress:
            raise ToolError(
                f"Cannot commit only some files while a {in_progress} is in progress; "
                "finish it by committing what is staged (no files), or abort it"
            )
        paths = []
        for name in files:
            path = self.repo_path(name) or "."
            if not os.path.lexists(self.worktree / path) and not self._known(path):
                raise ToolError(f"File not found: {name}")
            paths.append(path)
        head = self.head_commit()
        index = self.git_dir / f"jupyter-mcp-index-{uuid.uuid4().hex}"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            # A temporary index that starts from HEAD: the commit is HEAD plus these files,
            # whatever else the real index has staged (git commit --only semantics).
            self.run("read-tree", head or "--empty", env=env)
            self.run("add", "--all", "--", *paths, env=env)
            if self.ok("diff", "--cached", "--quiet", env=env):
                raise ToolError(
                    "Nothing to commit: " + ", ".join(files) + " have no changes against HEAD"
                )
            self.run("commit", "--no-edit", "-m", message, env=env)
        finally:
            for leftover in (index, index.with_name(index.name + ".lock")):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
        # The real index now agrees with the new commit for these paths; other staged
        # changes stay staged.
        self.run("reset", "--quiet", "HEAD", "--", *paths, check=False)
        return self._commit_result()

    def _known(self, path: str) -> bool:
        if self._tracked(path):
            return True
        head = self.head_commit()
        return bool(head and self.run("ls-tree", "--name-only", head, "--", path).stdout.strip())

    def _commit_result(self) -> dict[str, Any]:
        sha = self.require_commits()
        names = self.run(
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-commit-id",
            "--root",
            "-m",
            "--first-parent",
            sha,
        ).stdout.split("\x00")
        return {
            "success": True,
            "commitHash": sha,
            "branch": self.current_branch(),
            "files": sorted({self.shown_path(n) for n in names if n}),
        }

    def pull(self, remote: str, branch: str | None) -> dict[str, Any]:
        """``git pull`` (merge, or rebase when pull.rebase says so) without ever prompting."""
        if not isinstance(remote, str) or not remote.strip() or remote.startswith("-"):
            raise ToolError("remote must be the name of a configured remote, such as origin")
        remotes = sorted(r.name for r in self.repo.remotes)
        if remote not in remotes:
            known = ", ".join(remotes) if remotes else "none configured"
            raise ToolError(f"Unknown remote {remote!r} (remotes: {known})")
        in_progress = self.operation_in_progress()
        if in_progress:
            raise ToolError(f"Cannot pull while a {in_progress} is in progress; finish or abort it")
        current = self.current_branch()
        if branch is not None:
            if not branch.strip() or branch.startswith("-"):
                raise ToolError(f"Invalid branch name: {branch!r}")
        elif current is None:
            raise ToolError("HEAD is detached: pass branch, or switch to a branch first")
        elif not self._has_upstream(current, remote):
            branch = current
        else:
            branch = self.config(f"branch.{current}.merge") or current
        short = branch.removeprefix("refs/heads/")
        before = self.head_commit()
        rebase = (self.config("pull.rebase") or "").lower()
        mode = (
            "--rebase" if rebase in ("true", "merges", "interactive", "m", "i") else "--no-rebase"
        )
        # git pull in two steps, so the files it will rewrite are known (and protected) before
        # the working tree changes: fetch, then merge or rebase exactly the fetched commit.
        tracking = f"refs/remotes/{remote}/{short}"
        fork_point = None
        if mode == "--rebase" and before and self.ok("show-ref", "--verify", "--quiet", tracking):
            # As git pull --rebase does: commits the upstream dropped are not replayed.
            found = self.run("merge-base", "--fork-point", tracking, before, check=False)
            fork_point = (found.stdout.strip() or None) if found.status == 0 else None
        fetch = ["fetch", "--no-auto-gc", remote, branch]
        result = self.run(*fetch, env=self._network_env(), timeout=NETWORK_TIMEOUT, check=False)
        if result.status != 0:
            raise ToolError(self._pull_failure(result, remote))
        fetched = self.resolve_commit("FETCH_HEAD", "branch")
        output = result.stdout + result.stderr
        pull_ff = (self.config("pull.ff") or "").lower()
        if before is not None and mode == "--no-rebase" and pull_ff == "false":
            step = ["merge", "--no-edit", "--no-autostash", "--no-ff", "FETCH_HEAD"]
            planned = self.planned_changes(fetched, since_fork=True)
        elif before is None or self.is_ancestor(before, fetched):
            step = ["merge", "--ff-only", "--no-autostash", "FETCH_HEAD"]
            planned = self.planned_changes(fetched)
        elif mode == "--rebase":
            step = ["rebase", "--no-autostash"]
            if rebase in ("merges", "m"):
                step.append("--rebase-merges")
            step += ["--onto", fetched, fork_point or fetched]
            planned = self.planned_changes(fetched)
        elif pull_ff == "only":
            raise ToolError(
                f"Pull from {remote} refused: your branch and {remote}/{short} have diverged and "
                "pull.ff is 'only' (not possible to fast-forward); nothing was changed"
            )
        else:
            step = ["merge", "--no-edit", "--no-autostash", "FETCH_HEAD"]
            planned = self.planned_changes(fetched, since_fork=True)
        if before != fetched and not (before and self.is_ancestor(fetched, before)):
            with self.protect(planned):
                result = self.run(*step, check=False)
            output += result.stdout + result.stderr
            if result.status != 0:
                raise ToolError(self._pull_failure(result, remote))
        after = self.head_commit()
        if before == after:
            message = "Already up to date."
        elif before is None or "Fast-forward" in result.stdout:
            message = f"Fast-forward {before[:7] if before else '(empty)'}..{(after or '')[:7]}"
        elif mode == "--rebase":
            message = f"Rebased {current or 'HEAD'} onto {remote}/{short}"
        else:
            message = f"Merged {remote}/{short} into {current or 'HEAD'}"
        return {
            "success": True,
            "message": message,
            "branch": current,
            "previousCommit": before,
            "commitHash": after,
            "output": output.strip(),
            "_changed": self.changed_between(before, after),
        }

    def _has_upstream(self, branch: str, remote: str) -> bool:
        return self.config(f"branch.{branch}.remote") == remote and bool(
            self.config(f"branch.{branch}.merge")
        )

    def _network_env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        if "GIT_SSH" not in os.environ:
            base = os.environ.get("GIT_SSH_COMMAND")
            if not base:
                base = self.config("core.sshCommand") or "ssh"
            env["GIT_SSH_COMMAND"] = f"{base} -o BatchMode=yes -o ConnectTimeout=20"
        return env

    def _pull_failure(self, result: GitResult, remote: str) -> str:
        text = result.stdout + "\n" + result.stderr
        conflicts = re.findall(r"^CONFLICT \([^)]*\): .*? in (.+)$", text, re.MULTILINE)
        undone = self._abort_unfinished()
        if conflicts:
            names = ", ".join(sorted({self.shown_path(c.strip()) for c in conflicts}))
            return (
                f"Pull stopped: the changes from {remote} conflict with yours in {names}. "
                f"The {undone or 'merge'} was aborted; your branch and files are as before"
            )
        reason = git_reason(result.stderr) or git_reason(result.stdout)
        lowered = reason.lower()
        if (
            "authentication" in lowered
            or "could not read username" in lowered
            or ("permission denied" in lowered and "publickey" in lowered)
        ):
            reason += (
                "\n(credentials are never prompted for; configure a credential helper or SSH key)"
            )
        suffix = f"; the {undone} was aborted" if undone else ""
        return f"Pull from {remote} failed: {reason}{suffix}"

    def _abort_unfinished(self) -> str | None:
        in_progress = self.operation_in_progress()
        if in_progress in ("merge", "rebase"):
            self.run(in_progress, "--abort", check=False)
            return in_progress
        return None

    def switch(self, branch: str) -> dict[str, Any]:
        """Check out an existing branch; refused with git's reason when work would be lost."""
        if not isinstance(branch, str) or not branch.strip() or branch.startswith("-"):
            raise ToolError(f"Invalid branch name: {branch!r}")
        previous = self.current_branch()
        if previous == branch:
            message = f"Already on '{branch}'"
            return {
                "success": True,
                "branch": branch,
                "previousBranch": previous,
                "message": message,
            }
        target = f"refs/heads/{branch}"
        if not self.branch_exists(branch):
            remote_matches = [r for r in self.remote_branches() if r.split("/", 1)[-1] == branch]
            if len(remote_matches) != 1:
                local = ", ".join(self.local_branches()) or "none"
                raise ToolError(f"Unknown branch {branch!r} (local branches: {local})")
            target = f"refs/remotes/{remote_matches[0]}"
        before = self.head_commit()
        with self.protect(self.planned_changes(self.resolve_commit(target, "branch"))):
            self.run("switch", branch)
        return {
            "success": True,
            "branch": branch,
            "previousBranch": previous,
            "commitHash": self.head_commit(),
            "_changed": self.changed_between(before, self.head_commit()),
        }

    def create_branch(
        self, branch: str, *, source: str | None = None, checkout: bool = False
    ) -> dict[str, Any]:
        """Create a branch at HEAD or ``source``; optionally switch to it."""
        if not isinstance(branch, str) or not branch.strip() or branch.startswith("-"):
            raise ToolError(f"Invalid branch name: {branch!r}")
        if not self.ok("check-ref-format", "--branch", branch):
            raise ToolError(f"Invalid branch name: {branch!r} is not a valid git branch name")
        if self.branch_exists(branch):
            raise ToolError(f"Branch {branch!r} already exists")
        if source is None:
            start = self.require_commits()
        else:
            start = self.resolve_commit(source, "sourceBranch")
        before = self.head_commit()
        if checkout:
            with self.protect(self.planned_changes(start)):
                result = self.run("switch", "-c", branch, start, check=False)
                if result.status != 0:
                    if self.branch_exists(branch) and self.current_branch() != branch:
                        self.run("branch", "-D", branch, check=False)
                    raise ToolError(git_reason(result.stderr) or "git switch failed")
        else:
            self.run("branch", branch, start)
        return {
            "success": True,
            "branch": branch,
            "checkedOut": checkout,
            "commitHash": start,
            "_changed": self.changed_between(before, self.head_commit()) if checkout else [],
        }

    def merge(
        self, source: str | None, target: str | None, *, switch_to_target: bool = False
    ) -> dict[str, Any]:
        """Merge branch ``source`` (default: current) into ``target`` (default: main).

        Refused, with nothing changed, when the branches would conflict, when local changes
        would be overwritten, or when ``target`` is checked out in another worktree.
        """
        self.require_commits()
        in_progress = self.operation_in_progress()
        if in_progress:
            raise ToolError(
                f"Cannot merge while a {in_progress} is in progress; finish or abort it"
            )
        current = self.current_branch()
        if source is None:
            if current is None:
                raise ToolError("HEAD is detached: give sourceBranch")
            source = current
        if target is None:
            target = self.main_branch()
            if target is None:
                raise ToolError(
                    "No main branch: neither 'main' nor 'master' exists; give targetBranch"
                )
        if not self.branch_exists(target):
            local = ", ".join(self.local_branches())
            raise ToolError(f"Unknown target branch {target!r} (local branches: {local})")
        if source == target:
            raise ToolError(f"Cannot merge {source!r} into itself")
        source_sha = self.resolve_commit(source, "sourceBranch")
        target_ref = f"refs/heads/{target}"
        target_sha = self.resolve_commit(target_ref, "targetBranch")
        elsewhere = self._checked_out_elsewhere(target_ref)
        if elsewhere:
            raise ToolError(f"Branch {target!r} is checked out in another worktree ({elsewhere})")
        before = self.head_commit()
        result: dict[str, Any] = {"success": True, "sourceBranch": source, "targetBranch": target}
        if self.is_ancestor(source_sha, target_sha):
            result.update(message="Already up to date.", commitHash=target_sha, fastForward=False)
            if switch_to_target and current != target:
                with self.protect(self.planned_changes(target_sha)):
                    self.run("switch", target)
            result["switched"] = self.current_branch() == target
            result["_changed"] = self.changed_between(before, self.head_commit())
            return result
        fast_forward = self.is_ancestor(target_sha, source_sha)
        if not fast_forward and tuple(self.repo.git.version_info[:2]) < (2, 38):
            raise ToolError("Merging branches that diverged needs git 2.38 or newer")
        tree = source_sha
        if not fast_forward:
            conflicts = self._merge_conflicts(target_sha, source_sha)
            if conflicts:
                names = ", ".join(self.shown_path(c) for c in conflicts)
                raise ToolError(
                    f"Merge refused: merging {source!r} into {target!r} would conflict in {names}; "
                    "nothing was changed"
                )
            tree = self.run("merge-tree", "--write-tree", target_sha, source_sha).stdout.split()[0]
        # The working tree changes only when it ends on the target: from HEAD to the result.
        lands_here = current == target or switch_to_target
        with self.protect(self.planned_changes(tree) if lands_here else []):
            if current == target:
                run = self.run("merge", "--no-edit", "--no-autostash", source, check=False)
                if run.status != 0:
                    self._abort_unfinished()
                    reason = git_reason(run.stderr) or git_reason(run.stdout)
                    raise ToolError(f"Merge refused: {reason}")
                new_sha = self.require_commits()
            else:
                message = f"Merge branch '{source}' into {target}"
                if fast_forward:
                    new_sha = source_sha
                else:
                    new_sha = self.run(
                        "commit-tree", tree, "-p", target_sha, "-p", source_sha, "-m", message
                    ).stdout.strip()
                self.run(
                    "update-ref",
                    "-m",
                    f"merge {source}: {message}",
                    target_ref,
                    new_sha,
                    target_sha,
                )
                if switch_to_target:
                    switched = self.run("switch", target, check=False)
                    if switched.status != 0:
                        self.run("update-ref", target_ref, target_sha, new_sha, check=False)
                        reason = git_reason(switched.stderr)
                        raise ToolError(
                            f"Merge refused: cannot switch to {target!r}: {reason}; "
                            "nothing was changed"
                        )
        result.update(
            message=("Fast-forward" if fast_forward else "Merge made")
            + f" {target} to {new_sha[:7]}",
            commitHash=new_sha,
            fastForward=fast_forward,
            switched=self.current_branch() == target,
        )
        result["_changed"] = self.changed_between(before, self.head_commit())
        return result

    def merge_to_main(self) -> dict[str, Any]:
        """Merge the current feature branch into the main branch."""
        current = self.current_branch()
        if current is None:
            raise ToolError("mergeToMain needs a feature branch checked out, but HEAD is detached")
        main = self.main_branch()
        if main is None:
            raise ToolError("No main branch: neither 'main' nor 'master' exists")
        if current == main:
            raise ToolError(f"mergeToMain needs a feature branch checked out; you are on {main!r}")
        return self.merge(current, main)

    def _merge_conflicts(self, ours: str, theirs: str) -> list[str]:
        result = self.run(
            "merge-tree", "--write-tree", "--name-only", "--no-messages", ours, theirs, check=False
        )
        if result.status == 0:
            return []
        if result.status == 1:
            lines = result.stdout.splitlines()[1:]
            names = []
            for line in lines:
                if not line.strip():
                    break
                if line not in names:
                    names.append(line)
            return names
        raise ToolError(f"Merge refused: {git_reason(result.stderr) or 'git merge-tree failed'}")

    def _checked_out_elsewhere(self, ref: str) -> str | None:
        out = self.run("worktree", "list", "--porcelain", check=False).stdout
        here = str(self.worktree)
        path = None
        for line in out.splitlines():
            if line.startswith("worktree "):
                path = line[len("worktree ") :]
            elif line == f"branch {ref}" and path and os.path.realpath(path) != here:
                return path
        return None


def _read_file(path: Path) -> bytes | None:
    try:
        return path.read_bytes() if path.is_file() or path.is_symlink() else None
    except OSError:
        return None


def _text_or_none(data: bytes | None) -> str | None:
    if data is None:
        return None
    if looks_binary(data):
        raise _Binary
    return data.decode("utf-8", "replace")


def _binary_diff(text: str) -> bool:
    """True when git's diff of one file says only that binary contents differ."""
    lines = text.splitlines()
    return any(line.startswith("Binary files ") for line in lines) and not any(
        line.startswith("@@") for line in lines
    )


class _Binary(Exception):
    pass


def _notebook_text(data: bytes | None, shown: str) -> str | None | bool:
    """A notebook blob as its text view; None when absent, False when not a valid notebook."""
    if data is None:
        return None
    try:
        return view_of_json(data.decode("utf-8"), shown)
    except (UnicodeDecodeError, ToolError):
        return False


def unified_diff(path: str, old: str | None, new: str | None) -> str:
    """A git-style unified diff of two texts (None: the file does not exist on that side)."""
    if old == new:
        return ""
    header = [f"diff --git a/{path} b/{path}\n"]
    if old is None:
        header.append("new file mode 100644\n")
    elif new is None:
        header.append("deleted file mode 100644\n")
    body = list(
        difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            (new or "").splitlines(keepends=True),
            fromfile="/dev/null" if old is None else f"a/{path}",
            tofile="/dev/null" if new is None else f"b/{path}",
        )
    )
    lines = header
    for line in body:
        if line.endswith("\n"):
            lines.append(line)
        else:
            lines.append(line + "\n\\ No newline at end of file\n")
    return "".join(lines)
