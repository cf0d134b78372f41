"""The server's side of code intelligence: the jedi worker process, the project index, writes.

jedi runs in one worker process per server (a :class:`~jupyter_mcp.core.worker.WorkerProcess`
running :func:`jupyter_mcp.code.engine.worker_handler`), started on the first code tool call
and kept for the server's lifetime, so its parsed modules and answers stay cached between calls
while its CPU time and garbage collection never hold the server's interpreter. Each request
carries what changed in the project since the last one (files are compared by modification
time and size), and waits at most ``code_timeout`` seconds: a call that takes longer stops the
worker (the next call starts a fresh one) and fails clearly.

Refactorings come back as new text views; :func:`apply_changes` writes them all or none.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..core.cancel import acquire
from ..core.context import Settings, ToolContext
from ..core.errors import ToolError
from ..core.paths import is_inside
from ..core.worker import WorkerFailed, WorkerProcess, WorkerTimeout
from ..documents.facts import NOTEBOOK_SUFFIX, Stamp, is_notebook, stamp_of_stat
from ..documents.files import read_notebook_and_view, read_text, transaction
from ..documents.notebook_format import notebook_language, parsed_file, source_text
from ..documents.notebook_view import cell_marker_lines, view_of
from ..project.walk import iter_project_files
from .engine import PYTHON_SUFFIXES, WARM, Changes, Delta, Source


def load_source(ctx: ToolContext, path_in_project: str, *, tool: str) -> Source:
    """Read a Python file or a Python notebook for analysis; anything else is refused."""
    path = ctx.resolve(path_in_project, must_exist=True)
    shown = ctx.relative(path)
    if is_notebook(path):
        nb, view = read_notebook_and_view(ctx, path, path_in_project)
        language = notebook_language(nb)
        if language and language.lower() != "python":
            raise ToolError(f"{tool} analyses Python; {shown} is a {language} notebook")
        return Source.of(path, shown, view, notebook=True)
    if path.suffix.lower() not in PYTHON_SUFFIXES:
        raise ToolError(
            f"{tool} supports Python files (.py, .pyi) and Python notebooks (.ipynb); "
            f"{shown} is not one"
        )
    return Source.of(path, shown, read_text(ctx, path, path_in_project), notebook=False)


def problem_input(
    ctx: ToolContext, path_in_project: str
) -> tuple[Source, list[dict[str, Any]] | None, list[int] | None]:
    """What the worker checks for a file's problems: its source, and for a notebook its cells
    (id, type, source, execution count) and the view lines of their markers."""
    source = load_source(ctx, path_in_project, tool="get_file_problems")
    if not source.notebook:
        return source, None, None
    nb, view = read_notebook_and_view(ctx, source.path, path_in_project)
    cells = [
        {
            "id": cell.get("id"),
            "cell_type": cell.cell_type,
            "source": source_text(cell),
            "execution_count": cell.get("execution_count"),
        }
        for cell in nb.cells
    ]
    return source, cells, cell_marker_lines(nb, view)


def python_files_under(ctx: ToolContext, folder: Path) -> list[Path]:
    """The Python files and notebooks of the project below ``folder``, sorted by path."""
    found = set()
    for walked, _st, link in iter_project_files(
        folder, (*PYTHON_SUFFIXES, NOTEBOOK_SUFFIX), skip_tool_dirs=True
    ):
        path = Path(os.path.realpath(walked)) if link else walked
        if is_inside(ctx.root_dir, path):
            found.add(path)
    return sorted(found)


class ProjectFiles:
    """The Python files and notebooks of the project, by modification time and size.

    The files are those of :func:`~jupyter_mcp.project.walk.iter_project_files` (ignored
    files, VCS folders, tool and dependency folders and links leading outside the root left
    out), each under its real path, so that a file reached through a symlink is the same file
    that the file tools lock and write.
    """

    def __init__(self, root: Path, max_file_bytes: int) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        self._stamps: dict[Path, Stamp] = {}

    def delta(self, *, reset: bool = False) -> Delta:
        """What changed since the last call (everything, with ``reset``)."""
        if reset:
            self._stamps.clear()
        found = Delta(reset=reset)
        seen: set[Path] = set()
        for walked, st, link in iter_project_files(
            self.root, (*PYTHON_SUFFIXES, NOTEBOOK_SUFFIX), skip_tool_dirs=True
        ):
            path = Path(os.path.realpath(walked)) if link else walked
            if path in seen or not path.name.endswith((*PYTHON_SUFFIXES, NOTEBOOK_SUFFIX)):
                continue  # a link to another project file, or to a file of another kind
            seen.add(path)
            stamp = stamp_of_stat(st)
            if self._stamps.get(path) == stamp:
                continue
            self._stamps[path] = stamp
            too_big = st.st_size > self.max_file_bytes
            if is_notebook(path):
                found.notebooks[path] = None if too_big else self._view(path, st)
            elif too_big:
                found.removed.append(path)
            else:
                found.python.append(path)
        for gone in set(self._stamps) - seen:
            del self._stamps[gone]
            found.removed.append(gone)
        return found

    def forget(self, paths: list[Path]) -> None:
        """Treat ``paths`` as changed next time (they were just written)."""
        for path in paths:
            self._stamps.pop(path, None)

    @staticmethod
    def _view(path: Path, st: os.stat_result) -> str | None:
        stamp = stamp_of_stat(st)

        def load() -> str:
            return path.read_bytes().decode("utf-8")

        try:
            language = notebook_language(parsed_file(path, stamp, load, path.name).nb)
            if language and language.lower() != "python":
                return None  # an R or bash notebook's cells are not Python: no part either
            return view_of(path, stamp, load, path.name)
        except (OSError, UnicodeDecodeError, ToolError):
            return None  # an unreadable notebook simply takes no part


def kernel_python(ctx: ToolContext) -> str | None:
    """The interpreter of the server's default Python kernel, when it is another one than ours."""
    app = ctx.serverapp
    ksm = getattr(app, "kernel_spec_manager", None)
    if ksm is None:
        return None
    name = getattr(getattr(app, "kernel_manager", None), "default_kernel_name", None) or "python3"
    try:
        spec = ksm.get_kernel_spec(name)
    except Exception:  # no such kernel: analyse with the server's interpreter
        return None
    if (spec.language or "").lower() != "python" or not spec.argv:
        return None
    exe = spec.argv[0]
    # jupyter_client runs "python" kernels with the server's interpreter.
    if exe in {
        "python",
        f"python{sys.version_info[0]}",
        "python{}.{}".format(*sys.version_info[:2]),
    }:
        return None
    found = exe if os.path.isabs(exe) else shutil.which(exe)
    if not found or not os.access(found, os.X_OK):
        return None
    if os.path.realpath(found) == os.path.realpath(sys.executable):
        return None
    return found


class CodeIntel:
    """The server's handle on its jedi worker process."""

    def __init__(
        self,
        root: Path,
        *,
        environment_path: str | None = None,
        max_file_bytes: int = Settings.max_file_bytes,
    ) -> None:
        self.root = root
        self.environment_path = environment_path
        self.files = ProjectFiles(root, max_file_bytes)
        self._lock = threading.Lock()
        self.worker = WorkerProcess(
            "jupyter_mcp.code.engine",
            str(root),
            environment_path or "",
            timeout=Settings.code_timeout,
            cwd=root,
        )

    def call(self, method: str, *args: Any, timeout: float, what: str) -> Any:
        """Run ``Engine.method(*args)`` in the worker; stop it after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        if not acquire(self._lock, timeout, "it was waiting for code analysis"):
            raise self._timeout_error(what, timeout)
        try:
            if self.worker.closed:
                raise ToolError("Code analysis is shut down on this server")
            try:
                # A new worker knows nothing yet: it gets the whole project.
                fresh = self.worker.start()
                delta = self.files.delta(reset=fresh)
                return self.worker.call(
                    (method, args, delta),
                    timeout=max(0.0, deadline - time.monotonic()),
                    start=False,  # one started since would miss the files sent before
                )
            except WorkerTimeout as e:
                raise self._timeout_error(what, timeout) from e
            except WorkerFailed as e:
                raise ToolError(
                    f"{what} failed: the code-analysis process stopped unexpectedly ({e}); "
                    "try again"
                ) from e
        finally:
            self._lock.release()

    @staticmethod
    def _timeout_error(what: str, timeout: float) -> ToolError:
        return ToolError(
            f"{what} did not finish within {timeout:g} s (the server's code_timeout) and was "
            "stopped; nothing was changed. Try again (the next call starts a fresh analysis), "
            "or raise c.JupyterMCP.code_timeout"
        )

    def forget(self, paths: list[Path]) -> None:
        """Send ``paths`` to the worker again with the next request (they were just written)."""
        with self._lock:
            self.files.forget(paths)

    def close(self) -> None:
        """Stop the worker process for good."""
        with self._lock:
            self.worker.close()


def apply_changes(ctx: ToolContext, changes: Changes) -> None:
    """Write every changed file or none, in one :func:`~jupyter_mcp.documents.files.transaction`.

    ``changes`` maps a path to ``(shown, text the change was computed from, new text)``; a
    file whose text view is no longer the one the change was computed from is refused.
    """
    resolved: Changes = {}
    for given, change in changes.items():
        # The jail's real path: the one the file tools lock, and never a link's own path
        # (``os.replace`` would turn the link into a regular file).
        try:
            path = ctx.resolve(str(given))
        except ToolError as e:
            raise ToolError(f"{change[0]} leads outside the project; nothing was changed") from e
        if path in resolved:
            raise ToolError(
                f"{change[0]} and {resolved[path][0]} are the same file; nothing was changed"
            )
        resolved[path] = change
    changes = resolved
    with transaction(ctx, changes) as tx:
        for path in tx.paths:
            shown, old_text, _ = changes[path]
            tx.check_unsaved(path)  # the JupyterLab editor link refuses files with unsaved edits
            if tx.read(path, shown) != old_text:
                raise ToolError(
                    f"{shown} changed while the refactoring was computed; nothing was changed, "
                    "try again"
                )
        for path in tx.paths:
            shown, _, new_text = changes[path]
            try:
                tx.write(path, shown, new_text)
            except ToolError as e:
                raise ToolError(f"{e.message}; no file was changed") from e
            except BaseException as e:
                raise ToolError(f"Writing {shown} failed ({e}); no file was changed") from e


class CodeService:
    """The context's code intelligence (``ctx.services.code``): one :class:`CodeIntel`, made on
    the first code tool call (the kernel's interpreter and the size limit are read then), and
    kept until :meth:`close`.

    With ``local_kernels`` False (the server's kernels run behind a gateway, on other machines,
    whose interpreters are not this one's to read), code is analysed with the server's own
    interpreter."""

    def __init__(self, ctx: ToolContext, *, local_kernels: bool = True) -> None:
        self.ctx = ctx
        self._local_kernels = local_kernels
        self._lock = threading.Lock()
        self._intel: CodeIntel | None = None
        self._closed = False

    @property
    def current(self) -> CodeIntel | None:
        """The :class:`CodeIntel` made by the first call, None before it."""
        return self._intel

    def intel(self) -> CodeIntel:
        """The :class:`CodeIntel` of the context (its worker process starts on its first call)."""
        with self._lock:
            if self._closed:
                raise ToolError("Code analysis is shut down on this server")
            if self._intel is None:
                self._intel = CodeIntel(
                    self.ctx.root_dir,
                    environment_path=kernel_python(self.ctx) if self._local_kernels else None,
                    max_file_bytes=self.ctx.settings.max_file_bytes,
                )
            return self._intel

    def warm(self) -> None:
        """Start the worker and hand it the project now, so the first code call is quick.

        Blocks (call it off the event loop); a code call arriving meanwhile waits for this one
        instead of starting a second worker.
        """
        self.intel().call(WARM, timeout=timeout(self.ctx), what="Starting code analysis")

    def close(self) -> None:
        """Stop the worker process for good."""
        with self._lock:
            self._closed = True
            intel = self._intel
        if intel is not None:
            intel.close()


def timeout(ctx: ToolContext) -> float:
    """The time limit of one code-analysis call, in seconds (``c.JupyterMCP.code_timeout``)."""
    return ctx.settings.code_timeout or Settings.code_timeout
