"""Reading and writing project files as text, notebooks through their percent-format view.

Every write of a project file is one :func:`transaction`: the files' locks (so concurrent
edits of one file are applied one after the other), the refusal of files with unsaved edits in
JupyterLab, an atomic write (a temporary file in the same folder, then a rename) and, once the
locks are released, the reload notice to editors showing the file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_server.services.contents.fileio import path_to_intermediate

from ..core.context import ToolContext
from ..core.errors import ToolError
from .facts import is_notebook, looks_binary, stamp_of_stat
from .notebook_format import (
    ParsedFile,
    dump_notebook,
    parsed_file,
    upgrade_note,
    upgraded_for_write,
    validation_problem,
)
from .notebook_view import apply_view, new_notebook_from_view, view_of

if TYPE_CHECKING:
    from nbformat import NotebookNode


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


#: How long after a Jupyter save began a read still waits for it to end (see settled_bytes).
SAVE_WAIT = 2.0


def settled_bytes(path: Path) -> bytes:
    """The file's bytes, never caught in the middle of a save by Jupyter.

    Jupyter's contents manager (JupyterLab's saves, jupyter-collaboration's) rewrites a file in
    place, keeping the previous version beside it (``.~name``) until the new one is written:
    read meanwhile, the file is empty or cut short. So a read waits while that backup is
    there, and reads again when the file changed under it. A backup older than SAVE_WAIT is
    one a stopped server left behind, not a save going on, and is not waited for.

    It may sleep up to SAVE_WAIT: call it from a worker thread (the tools' reads run in one),
    never on the event loop.
    """
    backup = Path(path_to_intermediate(str(path)))
    deadline = time.monotonic() + SAVE_WAIT
    while True:
        before = path.stat()
        data = path.read_bytes()
        after = path.stat()
        same = (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size)
        try:
            saving = time.time() - backup.stat().st_ctime < SAVE_WAIT
        except OSError:
            saving = False
        if (same and not saving) or time.monotonic() > deadline:
            return data
        time.sleep(0.02)


def read_file_bytes(ctx: ToolContext, path: Path, shown: str) -> bytes:
    """The file's bytes, binary or not, within the size limit the text tools have."""
    _check_file(ctx, path, shown)
    return settled_bytes(path)


def read_raw_text(ctx: ToolContext, path: Path, shown: str) -> str:
    """The file's text exactly as stored (line endings kept); refuses binary files."""
    _check_file(ctx, path, shown)
    data = settled_bytes(path)
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
    return view_of(path, stamp_of_stat(path.stat()), lambda: read_raw_text(ctx, path, shown), shown)


def read_notebook_file(ctx: ToolContext, path: Path, shown: str) -> ParsedFile:
    """The notebook file at ``path`` parsed, every cell with its id (see
    :mod:`~jupyter_mcp.documents.notebook_format`): parsed once per change of the file and
    shared, so the caller must not change it."""
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > ctx.settings.max_file_bytes:
        _check_file(ctx, path, shown)  # says what is wrong with it
    assert st is not None
    seen = stamp_of_stat(st)  # before the read: a write after it shows as a new stamp
    return parsed_file(path, seen, lambda: read_raw_text(ctx, path, shown), shown)


def _parsed_and_view(ctx: ToolContext, path: Path, shown: str) -> tuple[ParsedFile, str]:
    parsed = read_notebook_file(ctx, path, shown)
    return parsed, view_of(path, parsed.version, lambda: read_raw_text(ctx, path, shown), shown)


def read_notebook_and_view(ctx: ToolContext, path: Path, shown: str) -> tuple[NotebookNode, str]:
    """A notebook file parsed (shared: the caller must not change it), and its percent-format
    view, both from the caches while the file is unchanged."""
    parsed, view = _parsed_and_view(ctx, path, shown)
    return parsed.nb, view


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file and a rename.

    The file keeps its permission bits; a new one gets those the umask allows. This is the one
    function that replaces files: project files reach it only through :func:`transaction`.
    """
    # The folders made for a new file go again when its write fails (a full disk): a refused
    # write leaves the project as it was.
    made = [parent for parent in path.parents if not parent.exists()]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = _mode_for(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except BaseException:
        _remove_folders(made)
        raise
    try:
        if isinstance(data, bytes):
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        else:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        _remove_folders(made)
        raise


def _mode_for(path: Path) -> int:
    """The permission bits ``path`` keeps when rewritten (a new file: the umask's)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return 0o666 & ~_UMASK


def _remove_folders(made: list[Path]) -> None:
    """Remove the folders of ``made`` (deepest first) that are still empty."""
    for folder in made:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _guard(ctx: ToolContext, path: Path) -> None:
    """Raise ToolError when ``path`` must not be written now (unsaved edits in JupyterLab)."""
    guard = ctx.services.before_file_write
    if guard is not None:
        guard(path)


def _announce(ctx: ToolContext, path: Path) -> None:
    """Tell whoever listens (the JupyterLab editor link) that ``path`` changed on disk."""
    listener = ctx.services.on_file_written
    if listener is not None:
        listener(path)


def notify_written(ctx: ToolContext, path: Path) -> None:
    """Announce a file that something else than a transaction rewrote (a git checkout)."""
    _announce(ctx, path)


class Transaction:
    """The files of one change, held locked; made by :func:`transaction`.

    ``read`` and ``write`` see and store a file's text view, as the file tools do. Before the
    first write of a file its unsaved-edit guard runs; a transaction over several files keeps
    each file's original bytes, so a failure part way puts every written file back.
    """

    def __init__(self, ctx: ToolContext, paths: list[Path]) -> None:
        self.ctx = ctx
        #: The locked files, in lock order.
        self.paths = paths
        #: The files written so far, in order.
        self.written: list[Path] = []
        #: What the results of the change say of a written notebook: ``upgraded`` when this
        #: write changed its format (see :func:`~.notebook_format.upgrade_note`), ``invalid``
        #: when nbformat already found it invalid (the write left that as it was).
        self.notes: dict[Path, dict[str, str]] = {}
        self._checked: set[Path] = set()
        self._originals: dict[Path, bytes | None] = {}

    def _require(self, path: Path) -> None:
        if path not in self.paths:
            raise RuntimeError(f"{path} is not part of this transaction")

    def check_unsaved(self, path: Path | None = None) -> None:
        """Refuse (ToolError) when ``path`` (default: every file) has unsaved edits."""
        for item in self.paths if path is None else [path]:
            self._require(item)
            if item not in self._checked:
                _guard(self.ctx, item)
                self._checked.add(item)

    def read(self, path: Path, shown: str) -> str:
        """The text a tool sees: a notebook's percent-format view, any other file as stored."""
        self._require(path)
        return read_text(self.ctx, path, shown)

    def write(self, path: Path, shown: str, text: str, *, create: bool = False) -> bool:
        """Store ``text`` as the file's new text view; False when nothing had to change.

        For a notebook, ``text`` is percent-format: it is merged into the existing notebook (see
        :func:`~jupyter_mcp.documents.notebook_view.apply_view`) or, with ``create``, becomes a
        new one.
        """
        self._require(path)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            # JSON may carry "\ud800"-style escapes that no UTF-8 file can hold.
            raise ToolError(
                f"Cannot write {shown}: the text has an unpaired surrogate "
                f"U+{ord(text[e.start]):04X} at character {e.start}, which UTF-8 cannot encode; "
                "nothing was written"
            ) from None
        self.check_unsaved(path)
        if is_notebook(path):
            if create:
                self._store(path, dump_notebook(new_notebook_from_view(text)))
                return True
            parsed, view = _parsed_and_view(self.ctx, path, shown)
            updated = apply_view(parsed.nb, text, view)
            if updated is None:
                return False
            self.write_notebook(path, shown, updated, parsed)
            return True
        if not create:
            with contextlib.suppress(ToolError):
                if read_raw_text(self.ctx, path, shown) == text:
                    return False
        self._store(path, text)
        return True

    def write_notebook(self, path: Path, shown: str, nb: Any, parsed: ParsedFile) -> None:
        """Store ``nb``, a changed copy of the notebook file ``parsed`` (as read in this
        transaction), as the file at ``path``.

        It is stored as nbformat 4.5 when it is older (its cells keep the ids they were read
        with); a change that would make a valid notebook invalid is refused, writing nothing.
        """
        self._require(path)
        self.check_unsaved(path)
        upgraded_for_write(nb)
        invalid = parsed.problem()
        if invalid is None:
            problem = validation_problem(nb)
            if problem is not None:  # a bug of an edit, not the agent's input: say it
                raise ToolError(
                    f"The change would make {shown} an invalid notebook ({problem}); nothing "
                    "was written"
                )
        self._store(path, dump_notebook(nb))
        notes = self.notes.setdefault(path, {})
        note = upgrade_note(shown, parsed.stored)
        if note is not None:
            notes["upgraded"] = note
        if invalid is not None:
            notes["invalid"] = (
                f"{shown} is not a valid notebook for nbformat ({invalid}); the change left "
                "that as it was"
            )

    def _store(self, path: Path, data: str | bytes | None) -> None:
        """The one place a project file is replaced (``None``: removed, when rolling back)."""
        if len(self.paths) > 1 and path not in self._originals:
            try:
                self._originals[path] = path.read_bytes()
            except FileNotFoundError:
                self._originals[path] = None
        if data is None:
            path.unlink(missing_ok=True)
        else:
            try:
                atomic_write(path, data)
            except OSError as e:  # a full disk, a file-size limit: the old file is still whole
                reason = e.strerror or str(e)
                raise ToolError(
                    f"Writing {self.ctx.relative(path)} failed ({reason}); it was left as it was"
                ) from e
        if path not in self.written:
            self.written.append(path)

    def _roll_back(self) -> None:
        for path in reversed(list(self.written)):
            if path not in self._originals:
                continue  # a transaction of one file: its write was the last step
            self._store(path, self._originals[path])
            self.written.remove(path)


@contextlib.contextmanager
def transaction(ctx: ToolContext, paths: Iterable[Path]) -> Iterator[Transaction]:
    """Lock ``paths`` (real paths in the project) for one change of their files.

    The locks are taken in sorted order, so two transactions over overlapping files never wait
    on each other in a circle. When the block raises, files it wrote are put back; once the
    locks are released, editors showing a written file are told to reload it.
    """
    tx = Transaction(ctx, sorted(set(paths), key=str))
    try:
        with contextlib.ExitStack() as stack:
            for path in tx.paths:
                stack.enter_context(ctx.locks(path))
            try:
                yield tx
            except BaseException:
                tx._roll_back()
                raise
    finally:
        for path in tx.written:
            _announce(ctx, path)


@dataclass
class Edit:
    """The outcome of :func:`edit_text`."""

    path: Path
    changed: bool
    result: object = None
    #: What the result says of a notebook this write upgraded (see ``Transaction.notes``).
    notes: dict[str, str] = field(default_factory=dict)


def edit_text(
    ctx: ToolContext, path_in_project: str, change: Callable[[str], tuple[str, object]]
) -> Edit:
    """Read a file's text view, apply ``change`` (text → new text, extra result), write it back.

    The whole read-modify-write is one :func:`transaction`; ``change`` may raise ToolError,
    and then nothing is written.
    """
    path = ctx.resolve(path_in_project)
    with transaction(ctx, [path]) as tx:
        text = tx.read(path, path_in_project)
        new_text, extra = change(text)
        changed = new_text != text and tx.write(path, path_in_project, new_text)
    return Edit(path=path, changed=changed, result=extra, notes=tx.notes.get(path, {}))
