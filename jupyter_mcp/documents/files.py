"""Reading and writing project files as text, notebooks through their percent-format view.

Every write is atomic (a temporary file in the same folder, then a rename) and holds the
file's lock, so concurrent edits of one file are applied one after the other.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..core.context import ToolContext
from ..core.errors import ToolError
from .facts import is_notebook, looks_binary, stamp
from .notebook_view import (
    apply_view,
    dump_notebook,
    new_notebook_from_view,
    notebook_view,
    read_notebook,
)


def _read_umask() -> int:
    """The process umask, read without changing it where the OS allows (it is process-wide,
    so setting it to read it would race with threads creating files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)  # once, at import, before tool threads exist
    os.umask(umask)
    return umask


_UMASK = _read_umask()


def _check_file(ctx: ToolContext, path: Path, shown: str) -> None:
    if not path.exists():
        raise ToolError(f"File not found: {shown}")
    if path.is_dir():
        raise ToolError(f"{shown} is a directory, not a file")
    if not path.is_file():
        raise ToolError(f"{shown} is not a regular file")
    size = path.stat().st_size
    if size > ctx.settings.max_file_bytes:
        raise ToolError(
            f"{shown} is {size} bytes, over the server's limit of {ctx.settings.max_file_bytes}"
        )


def read_raw_text(ctx: ToolContext, path: Path, shown: str) -> str:
    """The file's text exactly as stored (line endings kept); refuses binary files."""
    _check_file(ctx, path, shown)
    data = path.read_bytes()
    if looks_binary(data):
        raise ToolError(f"{shown} is a binary file; only text files can be read as text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolError(f"{shown} is not UTF-8 text ({e.reason} at byte {e.start})") from e


def read_text(ctx: ToolContext, path: Path, shown: str) -> str:
    """The text a tool sees: a notebook's percent-format view, any other file as stored."""
    if not is_notebook(path):
        return read_raw_text(ctx, path, shown)
    _check_file(ctx, path, shown)
    st = path.stat()
    key = stamp(st)
    cached = _views.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    view = notebook_view(read_notebook(read_raw_text(ctx, path, shown), shown))
    with _views_lock:
        _views[path] = (key, view)
        while len(_views) > _VIEW_CACHE_SIZE:
            _views.pop(next(iter(_views)))
    return view


# Converting a notebook to its view costs milliseconds (nbformat + jupytext); agents re-read
# the same notebooks often, so views are cached by the file's identity and change stamp.
_VIEW_CACHE_SIZE = 128
_views: dict[Path, tuple[tuple[int, int, int], str]] = {}
_views_lock = threading.Lock()


def atomic_write(path: Path, data: str) -> None:
    """Write ``data`` (UTF-8) to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_UMASK
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(
    ctx: ToolContext, path: Path, shown: str, text: str, *, create: bool = False
) -> bool:
    """Store ``text`` as the file's new text view; False when nothing had to change.

    For a notebook, ``text`` is percent-format: it is merged into the existing notebook (see
    :func:`~jupyter_mcp.documents.notebook_view.apply_view`) or, with ``create``, becomes a new one.
    The caller holds the file's lock.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        # JSON may carry "\ud800"-style escapes that no UTF-8 file can hold.
        raise ToolError(
            f"Cannot write {shown}: the text has an unpaired surrogate U+{ord(text[e.start]):04X} "
            f"at character {e.start}, which UTF-8 cannot encode; nothing was written"
        ) from None
    guard = ctx.services.get("before_file_write")
    if guard is not None:
        guard(path)  # the browser bridge refuses files with unsaved edits in JupyterLab
    if is_notebook(path):
        if create:
            atomic_write(path, dump_notebook(new_notebook_from_view(text)))
            return True
        nb = read_notebook(read_raw_text(ctx, path, shown), shown)
        updated = apply_view(nb, text)
        if updated is None:
            return False
        atomic_write(path, dump_notebook(updated))
        return True
    if not create:
        with contextlib.suppress(ToolError):
            if read_raw_text(ctx, path, shown) == text:
                return False
    atomic_write(path, text)
    return True


@dataclass
class Edit:
    """The outcome of :func:`edit_text`."""

    path: Path
    changed: bool
    result: object = None


@contextlib.contextmanager
def locked(ctx: ToolContext, path: Path) -> Iterator[None]:
    """Hold the lock of ``path`` for a read-modify-write."""
    with ctx.locks(path):
        yield


def edit_text(
    ctx: ToolContext, path_in_project: str, change: Callable[[str], tuple[str, object]]
) -> Edit:
    """Read a file's text view, apply ``change`` (text → new text, extra result), write it back.

    The whole read-modify-write holds the file's lock; ``change`` may raise ToolError, and
    then nothing is written.
    """
    path = ctx.resolve(path_in_project)
    with locked(ctx, path):
        text = read_text(ctx, path, path_in_project)
        new_text, extra = change(text)
        changed = new_text != text and write_text(ctx, path, path_in_project, new_text)
    if changed:
        notify_written(ctx, path)
    return Edit(path=path, changed=changed, result=extra)


def notify_written(ctx: ToolContext, path: Path) -> None:
    """Tell whoever listens (the browser bridge) that a tool changed ``path`` on disk."""
    listener = ctx.services.get("on_file_written")
    if listener is not None:
        listener(path)
