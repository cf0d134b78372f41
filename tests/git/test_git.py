"""Git tools and branch_action, on real repositories built in each test.

The server's root (``jp_root_dir``) is made a git repository (or a clone of a bare remote, or
a sub-folder of a repository); every refused operation is checked to leave the working tree,
the index and HEAD exactly as they were.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.core.errors import ToolError

GIT_TOOLS = {
    "get_project_vcs_status": {},
    "find_commit_by_message": {"text": "x"},
    "get_file_history": {"pathInProject": "a.txt"},
    "get_file_diff": {"pathInProject": "a.txt"},
    "get_branch_info": {},
    "get_commit_details": {"commitHash": "HEAD"},
    "commit_changes": {"message": "m"},
    "pull_changes": {},
    "switch_branch": {"branch": "main"},
    "create_branch": {"branch": "b"},
    "branch_action": {"action": "list"},
}

HASH = re.compile(r"^[0-9a-f]{40}$")


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A fixed author and committer, and no global or system git configuration."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test Author")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "author@example.org")


def git(cwd: Path, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
    """Run git in ``cwd`` and return its stdout."""
    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def commit_file(repo: Path, name: str, text: str, message: str, when: str | None = None) -> str:
    """Write ``name``, commit it (at time ``when``), return the new HEAD hash."""
    path = repo / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    git(repo, "add", "--", name)
    dates = {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else None
    git(repo, "commit", "-q", "-m", message, env=dates)
    return git(repo, "rev-parse", "HEAD").strip()


def init_repo(path: Path, branch: str = "main") -> Path:
    git(path, "init", "-q", "-b", branch)
    return path


def state(repo: Path) -> dict[str, Any]:
    """HEAD, branch, index, working tree diff, status and every file's bytes."""
    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(repo).parts
    }
    return {
        "head": git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip(),
        "branch": git(repo, "symbolic-ref", "-q", "HEAD", check=False).strip(),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"),
        "index": git(repo, "diff", "--cached"),
        "index_files": git(repo, "ls-files", "-s"),
        "worktree": git(repo, "diff"),
        "status": git(repo, "status", "--porcelain", "-uall"),
        "files": files,
        "merging": (repo / ".git" / "MERGE_HEAD").exists(),
    }


@pytest.fixture
def repo(jp_root_dir: Path) -> Path:
    """The project root as a repository on main with two commits."""
    init_repo(jp_root_dir)
    commit_file(jp_root_dir, "a.txt", "one\n", "Add a")
    commit_file(jp_root_dir, "b.txt", "bee\n", "Add b")
    return jp_root_dir


@pytest.fixture
def approve(mcp_app: Any) -> Iterator[list[Any]]:
    """Set an approver that answers with ``answers[0]``; the list records the requests."""
    context = mcp_app.tool_context
    previous = context.services.approver
    asked: list[Any] = [True]

    async def approver(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append((tool.name, dict(arguments)))
        return bool(asked[0])

    context.services.approver = approver
    yield asked
    context.services.approver = previous


# --- repositories that are not, or barely, repositories ---------------------------------


async def test_every_tool_says_git_is_not_available_outside_a_repository(fails, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("x")
    for tool, arguments in GIT_TOOLS.items():
        error = await fails(tool, **arguments)
        assert error == f"Git not available: {jp_root_dir} is not inside a git repository", tool
    assert not (jp_root_dir / ".git").exists()


async def test_repository_without_commits(ok, fails, jp_root_dir):
    init_repo(jp_root_dir)
    (jp_root_dir / "new.txt").write_text("new\n")
    (jp_root_dir / "staged.txt").write_text("staged\n")
    git(jp_root_dir, "add", "staged.txt")

    status = await ok("get_project_vcs_status")
    assert {(s["pathInProject"], s["type"]) for s in status} == {
        ("new.txt", "UNVERSIONED"),
        ("staged.txt", "ADDITION"),
    }
    info = await ok("get_branch_info")
    assert info["current"] == "main" and info["branches"] == [] and info["headCommit"] is None
    before = state(jp_root_dir)
    assert await ok("get_file_history", pathInProject="new.txt") == []
    assert "File not found" in await fails("get_file_history", pathInProject="nope.txt")
    for tool, arguments in [
        ("find_commit_by_message", {"text": "x"}),
        ("get_commit_details", {"commitHash": "HEAD"}),
        ("get_file_diff", {"pathInProject": "staged.txt"}),
        ("create_branch", {"branch": "feature"}),
    ]:
        assert "no commits yet" in await fails(tool, **arguments), tool
    assert state(jp_root_dir) == before

    # The first commit takes only the named file, even though another one is staged.
    done = await ok("commit_changes", message="First", files=["new.txt"])
    assert HASH.match(done["commitHash"]) and done["files"] == ["new.txt"]
    assert git(jp_root_dir, "show", "--name-only", "--format=", "HEAD").split() == ["new.txt"]
    assert git(jp_root_dir, "diff", "--cached", "--name-only").split() == ["staged.txt"]


# --- get_project_vcs_status ---------------------------------------------------------------


async def test_status_lists_every_kind_of_change(ok, repo):
    commit_file(repo, "gone.txt", "x\n", "Add gone")
    commit_file(repo, "old_name.txt", "moving\n", "Add old name")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    (repo / "a.txt").write_text("changed\n")  # unstaged modification
    (repo / "b.txt").write_text("staged change\n")
    git(repo, "add", "b.txt")  # staged modification
    (repo / "gone.txt").unlink()
    git(repo, "mv", "old_name.txt", "new_name.txt")
    (repo / "dir").mkdir()
    (repo / "dir" / "untracked.py").write_text("print()\n")
    (repo / "debug.log").write_text("ignored\n")

    status = await ok("get_project_vcs_status")

    by_path = {s["pathInProject"]: s for s in status}
    assert {p: s["type"] for p, s in by_path.items()} == {
        ".gitignore": "ADDITION",
        "a.txt": "MODIFICATION",
        "b.txt": "MODIFICATION",
        "gone.txt": "DELETION",
        "new_name.txt": "MOVED",
        "dir/untracked.py": "UNVERSIONED",
    }
    assert by_path["new_name.txt"]["fromPathInProject"] == "old_name.txt"
    assert by_path["a.txt"]["unstaged"] and not by_path["a.txt"]["staged"]
    assert by_path["b.txt"]["staged"] and not by_path["b.txt"]["unstaged"]


async def test_status_of_a_clean_tree_is_empty(ok, repo):
    assert await ok("get_project_vcs_status") == []


async def test_project_in_a_subfolder_of_the_repository(ok, fails, jp_root_dir):
    top = init_repo(jp_root_dir.parent)
    commit_file(top, "outside.txt", "o\n", "Outside")
    commit_file(jp_root_dir, "inside.txt", "i\n", "Inside")
    (top / "outside.txt").write_text("changed outside\n")
    (top / "other_untracked.txt").write_text("u\n")
    (jp_root_dir / "inside.txt").write_text("changed inside\n")
    (jp_root_dir / "pkg").mkdir()
    (jp_root_dir / "pkg" / "mod.py").write_text("x = 1\n")

    status = await ok("get_project_vcs_status")
    assert sorted((s["pathInProject"], s["type"]) for s in status) == [
        ("inside.txt", "MODIFICATION"),
        ("pkg/mod.py", "UNVERSIONED"),
    ]
    history = await ok("get_file_history", pathInProject="inside.txt")
    assert [h["message"] for h in history] == ["Inside"]
    diff = await ok("get_file_diff", pathInProject="inside.txt")
    assert "--- a/inside.txt" in diff and "+changed inside" in diff
    details = await ok("get_commit_details", commitHash="HEAD~1")
    assert details["files"] == ["../outside.txt"]

    done = await ok("commit_changes", message="Pkg", files=["pkg/mod.py"])
    assert done["files"] == ["pkg/mod.py"]
    assert "outside" in await fails("get_file_history", pathInProject="../outside.txt")


# --- find_commit_by_message ---------------------------------------------------------------


async def test_find_commit_by_message(ok, fails, repo):
    first = commit_file(repo, "c.txt", "c\n", "Fix bug in parser", "2030-01-01T10:00:00Z")
    git(repo, "switch", "-q", "-c", "other")
    second = commit_file(
        repo, "d.txt", "d\n", "Another fix for the parser BUG", "2030-01-02T10:00:00Z"
    )
    git(repo, "switch", "-q", "main")

    assert await ok("find_commit_by_message", text="fix bug") == [second, first]
    assert await ok("find_commit_by_message", text="parser bug another") == [second]
    assert await ok("find_commit_by_message", text="no such words") == []
    assert "at least one word" in await fails("find_commit_by_message", text="   ")


# --- get_file_history ---------------------------------------------------------------------


async def test_file_history_follows_renames_and_limits(ok, fails, repo):
    commit_file(repo, "a.txt", "one\ntwo\n", "Grow a")
    git(repo, "mv", "a.txt", "renamed.txt")
    git(repo, "commit", "-q", "-m", "Rename a")
    commit_file(repo, "renamed.txt", "one\ntwo\nthree\n", "Grow renamed")

    history = await ok("get_file_history", pathInProject="renamed.txt")

    assert [h["message"] for h in history] == ["Grow renamed", "Rename a", "Grow a", "Add a"]
    assert [h["pathInProject"] for h in history] == ["renamed.txt", "renamed.txt", "a.txt", "a.txt"]
    assert all(HASH.match(h["hash"]) for h in history)
    assert history[0]["hash"] == git(repo, "rev-parse", "HEAD").strip()
    assert history[0]["author"] == "Test Author"
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", history[0]["date"])

    limited = await ok("get_file_history", pathInProject="renamed.txt", maxEntries=2)
    assert [h["message"] for h in limited] == ["Grow renamed", "Rename a"]

    error = await fails("get_file_history", pathInProject="nope.txt")
    assert error == (
        "File not found: nope.txt is neither in the project nor in the current branch's history"
    )
    # Files not committed yet have no commits: an empty array.
    (repo / "untracked.txt").write_text("u")
    assert await ok("get_file_history", pathInProject="untracked.txt") == []
    (repo / "staged.txt").write_text("s")
    git(repo, "add", "staged.txt")
    assert await ok("get_file_history", pathInProject="staged.txt") == []
    # A deleted file still has its history.
    git(repo, "rm", "-q", "b.txt")
    git(repo, "commit", "-q", "-m", "Remove b")
    deleted = await ok("get_file_history", pathInProject="b.txt")
    assert [h["message"] for h in deleted] == ["Remove b", "Add b"]
    assert "outside the project" in await fails("get_file_history", pathInProject="../x.txt")
    assert "maxEntries" in await fails("get_file_history", pathInProject="a.txt", maxEntries=0)


# --- get_file_diff ------------------------------------------------------------------------


async def test_file_diff_working_tree_and_revisions(ok, fails, repo):
    first = git(repo, "rev-parse", "HEAD").strip()
    commit_file(repo, "b.txt", "bee\nsecond\n", "Grow b")
    git(repo, "branch", "before-change", first)
    (repo / "b.txt").write_text("bee\nsecond\nunstaged\n")

    working = await ok("get_file_diff", pathInProject="b.txt")
    assert working.startswith("diff --git a/b.txt b/b.txt\n")
    assert "+unstaged" in working and "+second" not in working

    between = await ok("get_file_diff", pathInProject="b.txt", commit1="HEAD~1", commit2="HEAD")
    assert "+second" in between and "+unstaged" not in between
    assert await ok("get_file_diff", pathInProject="b.txt", commit1=first[:7], commit2="main") == (
        between
    )
    since_branch = await ok("get_file_diff", pathInProject="b.txt", commit1="before-change")
    assert "+second" in since_branch and "+unstaged" in since_branch
    assert await ok("get_file_diff", pathInProject="a.txt") == ""

    (repo / "brand_new.txt").write_text("fresh\n")
    new = await ok("get_file_diff", pathInProject="brand_new.txt")
    assert "--- /dev/null\n+++ b/brand_new.txt\n" in new and "+fresh" in new

    assert "Unknown revision 'nope'" in await fails(
        "get_file_diff", pathInProject="b.txt", commit1="nope"
    )
    assert "Invalid revision" in await fails(
        "get_file_diff", pathInProject="b.txt", commit1="--output=/tmp/x"
    )
    assert "File not found" in await fails("get_file_diff", pathInProject="missing.txt")
    assert "directory" in await fails("get_file_diff", pathInProject="")


def _notebook(source: str, output: str, count: int) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    cell = nbformat.v4.new_code_cell(source, execution_count=count)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=output)]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), cell]
    for i, c in enumerate(nb.cells):
        c.id = f"cell-{i}"
    return nbformat.writes(nb)


async def test_notebook_diff_is_a_source_diff(ok, repo):
    (repo / "nb.ipynb").write_text(_notebook("x = 1\nprint(x)", "1\n", 1))
    git(repo, "add", "nb.ipynb")
    git(repo, "commit", "-q", "-m", "Add notebook")

    # Only outputs and execution counts changed: no source difference.
    (repo / "nb.ipynb").write_text(_notebook("x = 1\nprint(x)", "something else\n", 7))
    assert await ok("get_file_diff", pathInProject="nb.ipynb") == ""

    (repo / "nb.ipynb").write_text(_notebook("x = 2\nprint(x)", "2\n", 2))
    diff = await ok("get_file_diff", pathInProject="nb.ipynb")
    assert diff.startswith("diff --git a/nb.ipynb b/nb.ipynb\n--- a/nb.ipynb\n+++ b/nb.ipynb\n")
    assert "-x = 1\n+x = 2\n" in diff
    assert "execution_count" not in diff and "outputs" not in diff and '"cell_type"' not in diff

    git(repo, "commit", "-q", "-am", "Change notebook")
    between = await ok("get_file_diff", pathInProject="nb.ipynb", commit1="HEAD~1", commit2="HEAD")
    assert "-x = 1\n+x = 2\n" in between and "outputs" not in between
    created = await ok("get_file_diff", pathInProject="nb.ipynb", commit1="HEAD~2", commit2="HEAD")
    assert "--- /dev/null" in created and "+# # Title" in created


# --- get_branch_info / get_commit_details -------------------------------------------------


async def test_branch_info_and_detached_head(ok, repo):
    git(repo, "branch", "develop")
    git(repo, "branch", "feature/x")
    info = await ok("get_branch_info")
    assert info["current"] == "main"
    assert info["branches"] == ["develop", "feature/x", "main"]
    assert info["detached"] is False and info["mainBranch"] == "main"

    first = git(repo, "rev-parse", "HEAD~1").strip()
    git(repo, "switch", "-q", "--detach", first)
    info = await ok("get_branch_info")
    assert info["current"] is None and info["detached"] is True
    assert info["headCommit"] == first[:7]
    assert (await ok("branch_action", action="list"))["detached"] is True


async def test_master_is_the_main_branch_when_there_is_no_main(ok, jp_root_dir):
    init_repo(jp_root_dir, "master")
    commit_file(jp_root_dir, "a.txt", "a\n", "A")
    assert (await ok("get_branch_info"))["mainBranch"] == "master"


async def test_commit_details(ok, fails, repo):
    git(repo, "mv", "a.txt", "c.txt")
    (repo / "b.txt").write_text("changed\n")
    (repo / "d.txt").write_text("d\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Several changes\n\nWith a body.")
    head = git(repo, "rev-parse", "HEAD").strip()
    parent = git(repo, "rev-parse", "HEAD~1").strip()

    details = await ok("get_commit_details", commitHash=head[:8])

    assert details["hash"] == head and details["shortHash"] == head[:7]
    assert details["message"] == "Several changes\n\nWith a body."
    assert details["author"] == "Test Author" and details["parents"] == [parent]
    assert sorted(details["files"]) == ["b.txt", "c.txt", "d.txt"]
    types = {c["pathInProject"]: c["type"] for c in details["changes"]}
    assert types == {"b.txt": "MODIFICATION", "c.txt": "MOVED", "d.txt": "ADDITION"}
    root = await ok("get_commit_details", commitHash="HEAD~2")
    assert root["files"] == ["a.txt"] and root["parents"] == []
    assert "Unknown revision 'deadbeef'" in await fails("get_commit_details", commitHash="deadbeef")


# --- commit_changes -----------------------------------------------------------------------


async def test_commit_only_the_given_files(ok, repo):
    (repo / "a.txt").write_text("staged elsewhere\n")
    git(repo, "add", "a.txt")
    (repo / "b.txt").write_text("bee changed\n")
    (repo / "new.txt").write_text("new\n")
    parent = git(repo, "rev-parse", "HEAD").strip()

    done = await ok("commit_changes", message="Change b, add new", files=["b.txt", "new.txt"])

    assert done["success"] is True and done["branch"] == "main"
    assert done["commitHash"] == git(repo, "rev-parse", "HEAD").strip()
    assert sorted(done["files"]) == ["b.txt", "new.txt"]
    assert git(repo, "rev-parse", "HEAD~1").strip() == parent
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["b.txt", "new.txt"]
    assert git(repo, "show", "HEAD:b.txt") == "bee changed\n"
    # a.txt is still staged (not swept into the commit); the committed files are clean.
    assert git(repo, "status", "--porcelain") == "M  a.txt\n"
    assert not list((repo / ".git").glob("jupyter-mcp-index-*"))


async def test_commit_a_deleted_file_and_what_is_staged(ok, repo):
    (repo / "a.txt").unlink()
    done = await ok("commit_changes", message="Remove a", files=["a.txt"])
    assert done["files"] == ["a.txt"]
    assert git(repo, "ls-tree", "--name-only", "HEAD").split() == ["b.txt"]

    (repo / "b.txt").write_text("staged\n")
    git(repo, "add", "b.txt")
    (repo / "c.txt").write_text("untracked, not staged\n")
    done = await ok("commit_changes", message="Staged only")
    assert done["files"] == ["b.txt"]
    assert git(repo, "status", "--porcelain") == "?? c.txt\n"


async def test_commit_refusals_leave_everything_as_it_was(ok, fails, repo):
    (repo / ".gitignore").write_text("*.log\n")
    commit_file(repo, ".gitignore", "*.log\n", "Ignore logs")
    (repo / "a.txt").write_text("staged\n")
    git(repo, "add", "a.txt")
    (repo / "b.txt").write_text("unstaged\n")
    (repo / "x.log").write_text("ignored\n")
    before = state(repo)

    refusals = [
        ({"message": "m", "files": ["missing.txt"]}, "File not found: missing.txt"),
        ({"message": "   ", "files": ["b.txt"]}, "message must not be empty"),
        ({"message": "m", "files": []}, "at least one file"),
        ({"message": "m", "files": [".gitignore"]}, "Nothing to commit"),
        ({"message": "m", "files": ["x.log"]}, "ignored"),
        ({"message": "m", "files": ["../outside.txt"]}, "outside the project"),
    ]
    for arguments, message in refusals:
        assert message in await fails("commit_changes", **arguments), arguments
        assert state(repo) == before, arguments

    # A hook that rejects the commit: refused with its message, nothing changed.
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint failed: fix it' >&2\nexit 1\n")
    hook.chmod(0o755)
    assert "lint failed" in await fails("commit_changes", message="m", files=["b.txt"])
    assert state(repo) == before
    assert "lint failed" in await fails("commit_changes", message="m")
    assert state(repo) == before
    hook.unlink()

    git(repo, "reset", "-q")
    nothing_staged = state(repo)
    assert "no changes are staged" in await fails("commit_changes", message="m")
    assert state(repo) == nothing_staged


async def test_conflicted_merge_in_progress(ok, fails, repo):
    git(repo, "switch", "-q", "-c", "other")
    commit_file(repo, "a.txt", "other\n", "Other a")
    git(repo, "switch", "-q", "main")
    commit_file(repo, "a.txt", "main\n", "Main a")
    git(repo, "merge", "other", check=False)  # stops with a conflict in a.txt
    (repo / "b.txt").write_text("changed b\n")
    before = state(repo)

    status = await ok("get_project_vcs_status")
    conflicted = [s for s in status if s.get("conflict")]
    assert [s["pathInProject"] for s in conflicted] == ["a.txt"]
    error = await fails("commit_changes", message="m", files=["b.txt"])
    assert "while a merge is in progress" in error
    assert state(repo) == before


async def test_concurrent_commits_are_serialised(call, repo):
    names = [f"f{i}.txt" for i in range(6)]
    for name in names:
        (repo / name).write_text(name)

    answers = await asyncio.gather(
        *(call("commit_changes", message=f"Add {n}", files=[n]) for n in names)
    )

    assert all(a["error"] is None for a in answers), answers
    assert int(git(repo, "rev-list", "--count", "HEAD")) == 2 + len(names)
    assert git(repo, "status", "--porcelain") == ""


def test_reads_of_a_repository_run_together_and_a_change_waits_for_them(tmp_path: Path) -> None:
    # Thirty agents' status, history and diff calls once queued behind one another for
    # minutes ("Git is busy"): reads share the repository, a change has it alone.
    from jupyter_mcp.git.repo import open_repository

    repo = init_repo(tmp_path)
    commit_file(repo, "a.txt", "a\n", "First")
    reading, release = threading.Event(), threading.Event()

    def long_read() -> None:
        with open_repository(repo, read_only=True) as project:
            assert project.status() == []
            reading.set()
            assert release.wait(120)

    def change(done: threading.Event) -> None:
        with open_repository(repo):
            done.set()

    def read(done: threading.Event) -> None:
        with open_repository(repo, read_only=True) as project:
            project.history("a.txt", 10)
            done.set()

    first = threading.Thread(target=long_read)
    first.start()
    try:
        assert reading.wait(120)
        # When a read is under way, another read runs at once
        assert (tmp_path / "a.txt").read_text() == "a\n"
        alongside = threading.Event()
        read(alongside)
        assert alongside.is_set()
        # A change waits for the reads to end, and a read that comes meanwhile waits for it
        changed, late = threading.Event(), threading.Event()
        writer = threading.Thread(target=change, args=(changed,))
        writer.start()
        assert not changed.wait(1)
        reader = threading.Thread(target=read, args=(late,))
        reader.start()
        assert not late.wait(1)
    finally:
        release.set()
        first.join(120)
    # Then, the read over, the change runs, and the late read after it
    assert changed.wait(120) and late.wait(120)
    writer.join(120)
    reader.join(120)


async def test_git_calls_leave_nothing_to_the_garbage_collector(ok, repo):
    # GitPython's Repo and its config parser sit in reference cycles and have finalizers: one
    # made per call was freed by full garbage collections, which then took 4.5-5.8 s on the
    # server's loop under bench_agents' load. The calls reuse one, and leave no cycles.
    import gc

    await ok("get_project_vcs_status")  # the repository found once
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)  # every collection keeps what it found, to be counted
    try:
        for _ in range(5):
            await ok("get_project_vcs_status")
            await ok("get_file_history", pathInProject="a.txt")
            await ok("get_file_diff", pathInProject="a.txt", commit1="HEAD~1", commit2="HEAD")
        gc.collect()
        found = [type(o).__module__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert [m for m in found if m.startswith("git.")] == []
    # And no git process is kept between calls (git cat-file, the history's reader)
    children = subprocess.run(
        ["ps", "-o", "args=", "--ppid", str(os.getpid())], capture_output=True, text=True
    ).stdout
    assert "git" not in children.split(), children


def test_a_repository_reused_is_still_the_one_git_finds(tmp_path: Path) -> None:
    from jupyter_mcp.git.repo import open_repository

    top = init_repo(tmp_path)
    commit_file(top, "sub/a.txt", "a\n", "First")
    sub = tmp_path / "sub"
    with open_repository(sub, read_only=True) as project:
        assert project.worktree == tmp_path.resolve()
    # A repository made in the folder since is the one found from there
    init_repo(sub)
    commit_file(sub, "b.txt", "b\n", "Inner")
    with open_repository(sub, read_only=True) as project:
        assert project.worktree == sub.resolve()
        assert [h["message"] for h in project.history("b.txt", 10)] == ["Inner"]
    # And none once it is gone
    shutil.rmtree(sub / ".git")
    shutil.rmtree(tmp_path / ".git")
    with pytest.raises(ToolError, match="is not inside a git repository"):
        with open_repository(sub, read_only=True):
            pass


async def test_git_work_runs_off_the_event_loop(ok, call, repo):
    # A pre-commit hook that waits until the test lets it go: while it waits, other calls
    # are answered, so the commit is not holding the server's event loop.
    started, release = repo / ".git" / "started", repo / ".git" / "release"
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        f"#!/bin/sh\ntouch '{started}'\n"
        f"for i in $(seq 300); do [ -e '{release}' ] && exit 0; sleep 0.1; done\nexit 1\n"
    )
    hook.chmod(0o755)
    (repo / "c.txt").write_text("c\n")
    commit = asyncio.ensure_future(call("commit_changes", message="Add c", files=["c.txt"]))
    while not started.exists():
        await asyncio.sleep(0.05)

    read = await ok("get_file_text_by_path", pathInProject="a.txt")

    assert read["content"] == "one\n" and not commit.done()
    release.touch()
    assert (await commit)["error"] is None
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["c.txt"]


# --- pull_changes -------------------------------------------------------------------------


@pytest.fixture
def remote(tmp_path: Path, jp_root_dir: Path) -> dict[str, Path]:
    """A bare remote, the project as one clone of it and another clone that pushes."""
    bare = tmp_path / "remote.git"
    seed = tmp_path / "seed"
    seed.mkdir()
    init_repo(seed)
    commit_file(seed, "shared.txt", "line 1\n", "Initial")
    commit_file(seed, "other.txt", "other\n", "Other file")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(tmp_path, "clone", "-q", str(bare), str(jp_root_dir))
    pusher = tmp_path / "pusher"
    git(tmp_path, "clone", "-q", str(bare), str(pusher))
    return {"bare": bare, "pusher": pusher, "project": jp_root_dir}


async def test_pull_fast_forward_and_up_to_date(ok, remote, mcp_app, monkeypatch):
    project, pusher = remote["project"], remote["pusher"]
    pushed = commit_file(pusher, "shared.txt", "line 1\nline 2\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")

    written: list[Path] = []
    monkeypatch.setattr(mcp_app.tool_context.services, "on_file_written", written.append)

    done = await ok("pull_changes")

    assert written == [project / "shared.txt"]
    assert done["success"] is True and done["message"].startswith("Fast-forward")
    assert done["commitHash"] == pushed == git(project, "rev-parse", "HEAD").strip()
    assert (project / "shared.txt").read_text() == "line 1\nline 2\n"
    again = await ok("pull_changes", remote="origin", branch="main")
    assert again["message"] == "Already up to date."


async def test_pull_diverged_merges(ok, remote):
    project, pusher = remote["project"], remote["pusher"]
    pushed = commit_file(pusher, "shared.txt", "line 1\nupstream\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")
    local = commit_file(project, "local.txt", "mine\n", "Local change")

    done = await ok("pull_changes")

    assert done["message"].startswith("Merged")
    parents = git(project, "rev-list", "--parents", "-n1", "HEAD").split()[1:]
    assert parents == [local, pushed]
    assert (project / "shared.txt").read_text() == "line 1\nupstream\n"
    assert (project / "local.txt").read_text() == "mine\n"


async def test_pull_honours_pull_ff(ok, fails, remote):
    project, pusher = remote["project"], remote["pusher"]
    pushed = commit_file(pusher, "shared.txt", "line 1\nupstream\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")
    git(project, "config", "pull.ff", "false")
    head = git(project, "rev-parse", "HEAD").strip()

    done = await ok("pull_changes")  # could fast-forward, but pull.ff=false makes a merge
    assert git(project, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == [head, pushed]
    assert done["message"].startswith("Merged")

    commit_file(pusher, "other.txt", "upstream other\n", "More upstream")
    git(pusher, "push", "-q", "origin", "main")
    commit_file(project, "local.txt", "mine\n", "Local change")
    git(project, "config", "pull.ff", "only")
    before = state(project)
    error = await fails("pull_changes")
    assert "diverged" in error and "not possible to fast-forward" in error
    assert state(project) == before


async def test_pull_refuses_to_overwrite_local_changes(fails, remote):
    project, pusher = remote["project"], remote["pusher"]
    commit_file(pusher, "shared.txt", "line 1\nupstream\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")
    (project / "shared.txt").write_text("line 1\nmy unsaved work\n")
    (project / "other.txt").write_text("staged work\n")
    git(project, "add", "other.txt")
    before = state(project)

    error = await fails("pull_changes")

    assert "would be overwritten by merge" in error and "shared.txt" in error
    assert state(project) == before


async def test_pull_that_would_conflict_is_aborted(fails, remote):
    project, pusher = remote["project"], remote["pusher"]
    commit_file(pusher, "shared.txt", "theirs\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")
    commit_file(project, "shared.txt", "ours\n", "Local change")
    (project / "notes.txt").write_text("untracked notes\n")
    before = state(project)

    error = await fails("pull_changes")

    assert "conflict" in error and "shared.txt" in error and "aborted" in error
    assert state(project) == before


async def test_pull_refusals(fails, remote):
    before = state(remote["project"])
    assert "Unknown remote 'upstream'" in await fails("pull_changes", remote="upstream")
    assert "couldn't find remote ref" in await fails("pull_changes", branch="no-such-branch")
    git(remote["project"], "switch", "-q", "--detach", "HEAD")
    detached = state(remote["project"])
    assert "detached" in await fails("pull_changes")
    assert state(remote["project"]) == detached
    git(remote["project"], "switch", "-q", "main")
    assert state(remote["project"]) == before


async def test_pull_with_rebase_configured(ok, fails, remote):
    project, pusher = remote["project"], remote["pusher"]
    git(project, "config", "pull.rebase", "true")
    pushed = commit_file(pusher, "other.txt", "upstream other\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")
    commit_file(project, "local.txt", "mine\n", "Local change")

    done = await ok("pull_changes")

    assert done["message"].startswith("Rebased")
    assert git(project, "rev-parse", "HEAD~1").strip() == pushed
    assert git(project, "log", "-1", "--format=%s").strip() == "Local change"

    commit_file(pusher, "shared.txt", "theirs\n", "Upstream shared")
    git(pusher, "push", "-q", "origin", "main")
    commit_file(project, "shared.txt", "ours\n", "Local shared")
    before = state(project)
    error = await fails("pull_changes")
    assert "conflict" in error and "shared.txt" in error and "rebase was aborted" in error
    assert state(project) == before
    assert not (project / ".git" / "rebase-merge").exists()


async def test_switch_to_a_branch_that_exists_only_on_the_remote(ok, remote):
    project, pusher = remote["project"], remote["pusher"]
    git(pusher, "switch", "-q", "-c", "remote-only")
    pushed = commit_file(pusher, "remote.txt", "r\n", "Remote-only work")
    git(pusher, "push", "-q", "origin", "remote-only")
    git(project, "fetch", "-q", "origin")

    done = await ok("switch_branch", branch="remote-only")

    assert done["commitHash"] == pushed
    assert git(project, "rev-parse", "--abbrev-ref", "remote-only@{upstream}").strip() == (
        "origin/remote-only"
    )


class _AskForCredentials(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="private"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


async def test_pull_needing_credentials_fails_fast_without_prompting(
    fails, remote, tmp_path, monkeypatch
):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AskForCredentials)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    # An askpass program that would hang: the tools must never run it.
    hanging = tmp_path / "askpass.sh"
    hanging.write_text("#!/bin/sh\nsleep 600\n")
    hanging.chmod(0o755)
    monkeypatch.setenv("GIT_ASKPASS", str(hanging))
    monkeypatch.setenv("SSH_ASKPASS", str(hanging))
    project = remote["project"]
    git(project, "remote", "add", "private", f"http://127.0.0.1:{server.server_port}/x.git")
    git(project, "remote", "add", "closed", "http://127.0.0.1:9/x.git")
    before = state(project)
    try:
        error = await fails("pull_changes", remote="private", branch="main")
        assert "Pull from private failed" in error and "Authentication failed" in error
        assert "credentials are never prompted for" in error
        error = await fails("pull_changes", remote="closed", branch="main")
        assert "Pull from closed failed" in error and "127.0.0.1" in error
    finally:
        server.shutdown()
        server.server_close()
    assert state(project) == before


# --- switch_branch / create_branch --------------------------------------------------------


async def test_switch_branch(ok, fails, repo, mcp_app, monkeypatch):
    git(repo, "switch", "-q", "-c", "develop")
    commit_file(repo, "a.txt", "develop version\n", "Develop change")
    git(repo, "switch", "-q", "main")
    written: list[Path] = []
    monkeypatch.setattr(mcp_app.tool_context.services, "on_file_written", written.append)

    done = await ok("switch_branch", branch="develop")
    assert written == [repo / "a.txt"]  # open editors are told the file changed on disk
    assert done == {
        "success": True,
        "branch": "develop",
        "previousBranch": "main",
        "commitHash": git(repo, "rev-parse", "HEAD").strip(),
    }
    assert (repo / "a.txt").read_text() == "develop version\n"
    assert (await ok("switch_branch", branch="develop"))["message"] == "Already on 'develop'"

    (repo / "a.txt").write_text("unsaved work\n")
    (repo / "b.txt").write_text("staged work\n")
    git(repo, "add", "b.txt")
    before = state(repo)
    error = await fails("switch_branch", branch="main")
    assert "would be overwritten by checkout" in error and "a.txt" in error
    assert state(repo) == before
    assert "Unknown branch 'nope'" in await fails("switch_branch", branch="nope")
    assert "Invalid branch name" in await fails("switch_branch", branch="-f")
    assert state(repo) == before


async def test_create_branch(ok, fails, repo):
    head = git(repo, "rev-parse", "HEAD").strip()
    done = await ok("create_branch", branch="feature/new")
    assert done == {
        "success": True,
        "branch": "feature/new",
        "checkedOut": False,
        "commitHash": head,
    }
    assert git(repo, "branch", "--show-current").strip() == "main"

    (repo / "a.txt").write_text("work in progress\n")
    done = await ok("create_branch", branch="other", checkout=True)
    assert done["checkedOut"] is True
    assert git(repo, "branch", "--show-current").strip() == "other"
    assert (repo / "a.txt").read_text() == "work in progress\n"

    git(repo, "switch", "-q", "main")
    commit_file(repo, "b.txt", "bee 2\n", "Change b")
    (repo / "b.txt").write_text("unsaved\n")
    before = state(repo)
    error = await fails(
        "branch_action", action="create", branchName="from-old", sourceBranch="HEAD~1"
    )
    assert "would be overwritten" in error and "b.txt" in error
    assert state(repo) == before  # the branch was not left behind
    assert "already exists" in await fails("create_branch", branch="feature/new")
    assert "Invalid branch name" in await fails("create_branch", branch="bad..name")
    assert "Invalid branch name" in await fails("create_branch", branch="")
    assert state(repo) == before


# --- branch_action ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": "create"}, "branchName is required for action=create"),
        ({"action": "create", "branchName": ""}, "branchName must not be empty"),
        ({"action": "create", "branchName": "x" * 81}, "at most 80 characters"),
        ({"action": "create", "branchName": "x", "switchToBranch": "yes"}, "must be a boolean"),
        ({"action": "create", "branchName": "x", "branchId": "y"}, "Unknown field branchId"),
        ({"action": "switch"}, "branchId is required for action=switch"),
        ({"action": "switch", "branchId": 3}, "branchId must be a string"),
        ({"action": "list", "branchName": "x"}, "Unknown field branchName for action=list"),
        ({"action": "merge", "branchId": "x"}, "Unknown field branchId for action=merge"),
        ({"action": "mergeToMain", "sourceBranch": "x"}, "for action=mergeToMain"),
        ({"action": "delete"}, "must be one of"),
    ],
)
async def test_branch_action_validates_fields_per_action(fails, repo, arguments, message):
    before = state(repo)
    assert message in await fails("branch_action", **arguments)
    assert state(repo) == before


async def test_branch_action_list_create_switch(ok, repo):
    listed = await ok("branch_action", action="list")
    assert listed["current"] == "main" and listed["branches"] == ["main"]

    created = await ok("branch_action", action="create", branchName="feature")
    assert created["checkedOut"] is True
    assert git(repo, "branch", "--show-current").strip() == "feature"

    await ok("branch_action", action="create", branchName="side", switchToBranch=False)
    from_first = await ok(
        "branch_action",
        action="create",
        branchName="old",
        sourceBranch="HEAD~1",
        switchToBranch=False,
    )
    assert from_first["commitHash"] == git(repo, "rev-parse", "HEAD~1").strip()
    assert git(repo, "branch", "--show-current").strip() == "feature"

    switched = await ok("branch_action", action="switch", branchId="main")
    assert switched["branch"] == "main" and switched["previousBranch"] == "feature"
    assert (await ok("branch_action", action="list", resultStart=0, resultEnd=20)) == json.dumps(
        await ok("get_branch_info")
    )[:20]


@pytest.fixture
def feature(repo: Path) -> Path:
    """A feature branch one commit ahead of main, checked out."""
    git(repo, "switch", "-q", "-c", "feature")
    commit_file(repo, "feature.txt", "feature\n", "Feature work")
    return repo


async def test_merge_without_a_window_or_approval_changes_nothing(fails, feature, mcp_app, approve):
    before = state(feature)
    services = mcp_app.tool_context.services
    services.approver = services.editor.approve  # the server's own, with no window to ask in
    error = await fails("branch_action", action="merge")
    assert "needs the user's approval" in error and "no JupyterLab window" in error
    assert state(feature) == before

    async def reject(tool: Any, arguments: dict[str, Any]) -> bool:
        return False

    services.approver = reject
    assert "did not approve" in await fails("branch_action", action="mergeToMain")
    assert state(feature) == before


async def test_merge_feature_into_main_fast_forward(ok, feature, approve):
    tip = git(feature, "rev-parse", "HEAD").strip()

    done = await ok("branch_action", action="merge")

    assert approve[1][0] == "branch_action" and approve[1][1]["action"] == "merge"
    assert done["fastForward"] is True and done["commitHash"] == tip
    assert git(feature, "rev-parse", "main").strip() == tip
    assert git(feature, "branch", "--show-current").strip() == "feature"
    assert git(feature, "status", "--porcelain") == ""


async def test_merge_diverged_branches_into_a_branch_not_checked_out(ok, feature, approve):
    git(feature, "switch", "-q", "main")
    main_tip = commit_file(feature, "main.txt", "main\n", "Main work")
    git(feature, "switch", "-q", "feature")
    feature_tip = git(feature, "rev-parse", "HEAD").strip()
    (feature / "feature.txt").write_text("unsaved\n")

    done = await ok("branch_action", action="merge", sourceBranch="feature", targetBranch="main")

    assert done["fastForward"] is False and done["switched"] is False
    merged = done["commitHash"]
    assert git(feature, "rev-parse", "main").strip() == merged
    assert git(feature, "rev-list", "--parents", "-n1", merged).split()[1:] == [
        main_tip,
        feature_tip,
    ]
    assert sorted(git(feature, "ls-tree", "--name-only", merged).split()) == [
        "a.txt",
        "b.txt",
        "feature.txt",
        "main.txt",
    ]
    assert (feature / "feature.txt").read_text() == "unsaved\n"
    assert git(feature, "log", "-1", "--format=%s", "main").strip() == (
        "Merge branch 'feature' into main"
    )


async def test_merge_into_the_current_branch_and_switch_to_target(ok, feature, approve):
    git(feature, "switch", "-q", "main")
    commit_file(feature, "main.txt", "main\n", "Main work")

    done = await ok("branch_action", action="merge", sourceBranch="feature")
    assert done["fastForward"] is False and done["switched"] is True
    assert (feature / "feature.txt").read_text() == "feature\n"
    assert git(feature, "status", "--porcelain") == ""

    git(feature, "switch", "-q", "-c", "topic", "HEAD~1")
    commit_file(feature, "topic.txt", "topic\n", "Topic work")
    switched = await ok(
        "branch_action",
        action="merge",
        sourceBranch="topic",
        targetBranch="feature",
        switchToTarget=True,
    )
    assert switched["switched"] is True
    assert git(feature, "branch", "--show-current").strip() == "feature"
    assert (feature / "topic.txt").read_text() == "topic\n"


async def test_merge_refusals_change_nothing(ok, fails, feature, approve):
    git(feature, "switch", "-q", "main")
    commit_file(feature, "feature.txt", "main's version\n", "Conflicting main work")
    git(feature, "switch", "-q", "feature")
    before = state(feature)

    error = await fails("branch_action", action="merge")
    assert "would conflict in feature.txt" in error and "nothing was changed" in error
    assert state(feature) == before
    assert "Unknown target branch 'nope'" in await fails(
        "branch_action", action="merge", targetBranch="nope"
    )
    assert "into itself" in await fails("branch_action", action="merge", targetBranch="feature")
    assert state(feature) == before

    # Local changes that the merge into the checked-out branch would overwrite.
    git(feature, "switch", "-q", "-c", "clean", "main~1")
    commit_file(feature, "clean.txt", "clean\n", "Clean work")
    git(feature, "switch", "-q", "main")
    git(feature, "switch", "-q", "-c", "target")
    (feature / "clean.txt").write_text("local, unsaved\n")
    dirty = state(feature)
    error = await fails(
        "branch_action", action="merge", sourceBranch="clean", targetBranch="target"
    )
    assert "would be overwritten" in error and "clean.txt" in error
    assert state(feature) == dirty

    git(feature, "switch", "-q", "main")
    on_main = state(feature)
    assert "you are on 'main'" in await fails("branch_action", action="mergeToMain")
    assert state(feature) == on_main


async def test_merge_to_main(ok, fails, feature, approve):
    tip = git(feature, "rev-parse", "HEAD").strip()
    done = await ok("branch_action", action="mergeToMain")
    assert done["targetBranch"] == "main" and done["sourceBranch"] == "feature"
    assert git(feature, "rev-parse", "main").strip() == tip
    assert (await ok("branch_action", action="mergeToMain"))["message"] == "Already up to date."


def test_git_tools_are_registered_with_their_annotations(mcp_app):
    tools = {t.name: t for t in mcp_app.registry.all()}
    read_only = {
        "get_project_vcs_status",
        "find_commit_by_message",
        "get_file_history",
        "get_file_diff",
        "get_branch_info",
        "get_commit_details",
    }
    for name in GIT_TOOLS:
        hints = tools[name].annotations
        assert hints["readOnlyHint"] is (name in read_only), name
        assert hints["idempotentHint"] is (name in read_only), name
    assert tools["branch_action"].annotations["destructiveHint"] is True
    assert tools["pull_changes"].annotations["openWorldHint"] is True
    assert tools["branch_action"].approval_needed({"action": "merge"})
    assert not tools["branch_action"].approval_needed({"action": "list"})


# --- files with unsaved edits in JupyterLab -----------------------------------------------


@pytest.fixture
def unsaved(mcp_app: Any) -> Iterator[dict[str, Any]]:
    """A fake ``before_file_write`` guard refusing the file names in ``unsaved["names"]``.

    ``unsaved["checked"]`` records every path it was asked about and whether that file's lock
    was held at the time.
    """
    from jupyter_mcp.core.errors import ToolError

    context = mcp_app.tool_context
    record: dict[str, Any] = {"names": set(), "checked": []}

    def guard(path: Path) -> None:
        record["checked"].append((Path(path).name, context.locks(Path(path)).locked()))
        if Path(path).name in record["names"]:
            raise ToolError(f"{Path(path).name} has unsaved changes in JupyterLab")

    previous = context.services.before_file_write
    context.services.before_file_write = guard
    yield record
    context.services.before_file_write = previous


def _develop_changes_a(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "develop")
    commit_file(repo, "a.txt", "develop version\n", "Develop change")
    git(repo, "switch", "-q", "main")


async def test_switch_refuses_a_file_with_unsaved_edits(ok, fails, repo, unsaved):
    _develop_changes_a(repo)
    unsaved["names"] = {"a.txt"}
    before = state(repo)

    for tool, arguments in [
        ("switch_branch", {"branch": "develop"}),
        ("branch_action", {"action": "switch", "branchId": "develop"}),
    ]:
        error = await fails(tool, **arguments)
        assert "a.txt has unsaved changes in JupyterLab" in error, tool
        assert "nothing was changed" in error, tool
        assert state(repo) == before, tool
    # Checked while holding the file's lock, and only the files the switch rewrites.
    assert unsaved["checked"] == [("a.txt", True), ("a.txt", True)]

    error = await fails(
        "branch_action",
        action="create",
        branchName="from-develop",
        sourceBranch="develop",
        switchToBranch=True,
    )
    assert "a.txt has unsaved changes" in error
    assert state(repo) == before  # the new branch was not left behind

    # b.txt is open with unsaved edits, but the switch does not touch it.
    unsaved["names"] = {"b.txt"}
    done = await ok("switch_branch", branch="develop")
    assert done["branch"] == "develop"
    assert (repo / "a.txt").read_text() == "develop version\n"
    created = await ok("create_branch", branch="here", checkout=True)  # same commit: no files
    assert created["checkedOut"] is True


async def test_switch_waits_for_a_file_tool_writing_a_file_it_rewrites(call, repo, mcp_app):
    _develop_changes_a(repo)
    lock = mcp_app.tool_context.locks(repo / "a.txt")
    lock.acquire()
    try:
        switching = asyncio.ensure_future(call("switch_branch", branch="develop"))
        await asyncio.sleep(0.5)
        # Held by a file tool writing a.txt: git has not touched the working tree yet.
        assert not switching.done()
        assert git(repo, "branch", "--show-current").strip() == "main"
        assert (repo / "a.txt").read_text() == "one\n"
    finally:
        lock.release()
    await switching
    assert git(repo, "branch", "--show-current").strip() == "develop"
    assert (repo / "a.txt").read_text() == "develop version\n"


async def test_pull_refuses_a_file_with_unsaved_edits(ok, fails, remote, unsaved):
    project, pusher = remote["project"], remote["pusher"]
    pushed = commit_file(pusher, "shared.txt", "line 1\nline 2\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")
    unsaved["names"] = {"shared.txt"}
    before = state(project)

    error = await fails("pull_changes")

    assert "shared.txt has unsaved changes in JupyterLab" in error
    assert "nothing was changed" in error
    assert state(project) == before
    assert unsaved["checked"] == [("shared.txt", True)]

    unsaved["names"] = {"other.txt"}  # not among the pulled changes
    done = await ok("pull_changes")
    assert done["commitHash"] == pushed
    assert (project / "shared.txt").read_text() == "line 1\nline 2\n"


async def test_diverged_pull_checks_only_the_files_it_brings_in(ok, fails, remote, unsaved):
    project, pusher = remote["project"], remote["pusher"]
    pushed = commit_file(pusher, "shared.txt", "line 1\nupstream\n", "Upstream change")
    git(pusher, "push", "-q", "origin", "main")
    local = commit_file(project, "local.txt", "mine\n", "Local change")
    unsaved["names"] = {"shared.txt"}
    before = state(project)

    assert "shared.txt has unsaved changes" in await fails("pull_changes")
    assert state(project) == before

    # local.txt differs from the upstream too, but the merge leaves it as it is.
    unsaved["names"] = {"local.txt"}
    done = await ok("pull_changes")
    assert done["message"].startswith("Merged")
    assert git(project, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == [local, pushed]


async def test_merge_refuses_a_file_with_unsaved_edits(ok, fails, feature, approve, unsaved):
    git(feature, "switch", "-q", "main")
    commit_file(feature, "main.txt", "main\n", "Main work")
    unsaved["names"] = {"feature.txt"}
    before = state(feature)

    # Into the checked-out branch: feature.txt would appear in the working tree.
    error = await fails("branch_action", action="merge", sourceBranch="feature")
    assert "feature.txt has unsaved changes in JupyterLab" in error
    assert "nothing was changed" in error
    assert state(feature) == before

    # Into a branch that is not checked out, then switching to it.
    git(feature, "switch", "-q", "-c", "target", "main~1")
    before = state(feature)
    unsaved["names"] = {"main.txt"}
    error = await fails(
        "branch_action",
        action="merge",
        sourceBranch="main",
        targetBranch="feature",
        switchToTarget=True,
    )
    assert "main.txt has unsaved changes" in error
    assert state(feature) == before

    # Without switching, the working tree is not touched: the merge goes ahead.
    done = await ok("branch_action", action="merge", sourceBranch="main", targetBranch="feature")
    assert (
        done["switched"] is False
        and git(feature, "rev-parse", "feature").strip() == (done["commitHash"])
    )

    # mergeToMain from feature while on feature: main.txt is not rewritten here.
    git(feature, "switch", "-q", "feature")
    merged = await ok("branch_action", action="mergeToMain")
    assert git(feature, "rev-parse", "main").strip() == merged["commitHash"]


def test_a_git_command_past_its_time_limit_is_killed_with_the_programs_it_started(
    tmp_path: Path,
) -> None:
    from process_table import processes_with

    from jupyter_mcp.core.errors import ToolError
    from jupyter_mcp.git.repo import open_repository

    repo = init_repo(tmp_path)
    commit_file(repo, "a.txt", "a\n", "First")
    marker = f"{800 + os.getpid() % 100}.{threading.get_ident() % 10**6}"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text(f"#!/bin/sh\nsleep {marker}\n")
    (hooks / "pre-commit").chmod(0o755)
    git(repo, "config", "core.hooksPath", str(hooks))

    with open_repository(repo) as project:
        with pytest.raises(ToolError, match="git commit did not finish within 1 seconds"):
            project.run("commit", "--allow-empty", "-m", "Slow", timeout=1)

    # The hook went with git (its own process group), and the commit never happened.
    assert processes_with(f"sleep {marker}") == []
    assert git(repo, "log", "--format=%s") == "First\n"
