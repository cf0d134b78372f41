"""A notebook that no live document shows: read and changed in its file.

Every change is one :func:`~jupyter_mcp.documents.files.transaction` (the notebook's lock, the
same the file tools take; the unsaved-edit guard; an atomic write; the reload notice), so a
file-tool write and a cell edit of one notebook never interleave and a failed edit leaves the
file byte for byte as it was. A running cell's outputs are written as they arrive, at most every
:data:`FLUSH_INTERVAL` seconds and when it finishes, each write re-reading the file so that
other cells' edits in between are kept.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import stat
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.context import ToolContext
from ..core.errors import ToolError
from .facts import Stamp, is_notebook, stamp_of, stamp_of_stat
from .files import read_raw_text, transaction
from .notebook_document import Location
from .notebook_view import dump_notebook, read_notebook
from .running_cell import CELL_OUTPUT_LIMIT, RunningCell

if TYPE_CHECKING:
    from nbformat import NotebookNode

T = TypeVar("T")

#: Seconds between two writes of a running cell's outputs into its file.
FLUSH_INTERVAL = 0.5

_CELL_TYPES = ("code", "markdown", "raw")


def check_structure(nb: Any, shown: str) -> None:
    """Refuse (ToolError) a parsed notebook whose cells the tools could not work with."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ToolError(f"{shown} is not a valid notebook: it has no list of cells")
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") not in _CELL_TYPES:
            raise ToolError(f"{shown} is not a valid notebook: cell {index} has no valid cell_type")
        if not isinstance(cell.get("source", ""), str | list):
            raise ToolError(f"{shown} is not a valid notebook: cell {index} has no valid source")


def _has_ids(nb: Any) -> bool:
    return (nb.get("nbformat", 4), nb.get("nbformat_minor", 0)) >= (4, 5)


def stable_ids(nb: Any) -> None:
    """Give the cells of a notebook without ids (nbformat < 4.5) ids, in place.

    The ids follow from each cell's position and source, so reading the notebook twice gives
    the same ids and an edit by an id the agent read finds its cell; the first change stores
    them (and the notebook becomes nbformat 4.5, as when JupyterLab saves it).
    """
    seen: set[str] = set()
    for index, cell in enumerate(nb.get("cells") or []):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not cell_id or cell_id in seen:
            source = cell.get("source", "")
            if isinstance(source, list):
                source = "".join(source)
            digest = hashlib.sha1(f"{index}\0{source}".encode(errors="replace")).hexdigest()
            cell_id = digest[:8]
            while cell_id in seen:
                cell_id = hashlib.sha1(cell_id.encode()).hexdigest()[:8]
            cell["id"] = cell_id
        seen.add(cell_id)


def _normalised(nb: Any) -> None:
    """Sources as strings and every cell with an id: what the tools' edits rely on."""
    for cell in nb.get("cells") or []:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
    stable_ids(nb)


def _dump(nb: Any) -> str:
    import nbformat

    # Edits may put plain dicts into the notebook; nbformat's writer wants NotebookNodes.
    return dump_notebook(nbformat.from_dict(nb))


def _valid(nb: Any) -> bool:
    import nbformat

    if not _has_ids(nb):  # as it will be stored: with the ids it was given
        nb = {**nb, "nbformat": 4, "nbformat_minor": 5}
    try:
        nbformat.validate(nb)
    except Exception:
        return False
    return True


#: Parsed notebook files by path, with the stamp they were read at. Parsing (nbformat reads and
#: validates) costs milliseconds per hundred cells and agents re-read the same notebooks, often
#: several times in one answer (opening it, then its snapshot, then each result window).
_PARSED_SIZE = 16
_parsed: dict[Path, tuple[Stamp, Any]] = {}
_parsed_lock = threading.Lock()


def _parse(ctx: ToolContext, path: Path, shown: str) -> Any:
    """The notebook at ``path`` parsed and normalised, shared: callers must not change it."""
    try:
        st = path.stat()
    except OSError:
        raise ToolError(f"Notebook not found: {shown}") from None
    if stat.S_ISREG(st.st_mode) and st.st_size <= ctx.settings.max_file_bytes:
        seen: Stamp | None = stamp_of_stat(st)  # before the read: a later write shows
        with _parsed_lock:
            found = _parsed.get(path)
        if found is not None and found[0] == seen:
            return found[1]
    else:
        seen = None  # read_raw_text says what is wrong with it
    nb = read_notebook(read_raw_text(ctx, path, shown), shown)
    check_structure(nb, shown)
    _normalised(nb)
    if seen is not None:
        with _parsed_lock:
            _parsed.pop(path, None)  # re-inserted last: the oldest entry goes first
            _parsed[path] = (seen, nb)
            while len(_parsed) > _PARSED_SIZE:
                _parsed.pop(next(iter(_parsed)))
    return nb


def load_notebook(
    ctx: ToolContext, path: Path, shown: str, *, private: bool = True
) -> NotebookNode:
    """The notebook file at ``path`` parsed (sources as strings, every cell with an id).

    A file unchanged since it was last read (same stamp) is not read, parsed or validated
    again. With ``private`` the caller gets its own copy, to change; without, the cached one,
    which it must only read.
    """
    if not is_notebook(path):
        raise ToolError(
            f"{shown} is not a notebook (.ipynb); the notebook tools work on notebooks, the "
            "file tools (get_file_text_by_path …) on other files"
        )
    if not path.exists():
        raise ToolError(f"Notebook not found: {shown}")
    nb = _parse(ctx, path, shown)
    return copy.deepcopy(nb) if private else nb


class FileNotebook:
    """A notebook document kept in its file (see the module docstring)."""

    location: Location = "file"

    def __init__(
        self,
        ctx: ToolContext,
        path: Path,
        shown: str,
        *,
        flush_interval: float = FLUSH_INTERVAL,
        output_limit: int = CELL_OUTPUT_LIMIT,
    ) -> None:
        self.ctx = ctx
        self.path = path
        self.shown = shown
        self.flush_interval = flush_interval
        self.output_limit = output_limit
        self._runs: dict[str, RunningCell] = {}
        self._runs_lock = threading.Lock()  # the loop adds outputs, a worker thread writes them
        self._last_write = 0.0
        self._dirty = False
        self._flush_task: asyncio.Task[None] | None = None

    # -- reading and changing --------------------------------------------------------------

    async def snapshot(self) -> dict[str, Any]:
        return await asyncio.to_thread(load_notebook, self.ctx, self.path, self.shown)

    def version(self) -> Hashable | None:
        stamp = stamp_of(self.path)
        return None if stamp is None else ("file", str(self.path), stamp)

    async def change(self, edit: Callable[[dict[str, Any]], T]) -> T:
        return await asyncio.to_thread(self._change, edit)

    def _change(self, edit: Callable[[dict[str, Any]], T]) -> T:
        with transaction(self.ctx, [self.path]) as tx:
            nb = load_notebook(self.ctx, self.path, self.shown)
            was_valid = _valid(nb)
            before = _dump(nb)
            result = edit(nb)
            if _dump(nb) != before or not _has_ids(nb):
                self._store(tx, nb, was_valid)
        return result

    def _store(self, tx: Any, nb: Any, was_valid: bool) -> None:
        import nbformat

        if not _has_ids(nb):
            nb["nbformat"], nb["nbformat_minor"] = 4, 5
        if was_valid and not _valid(nb):
            try:
                nbformat.validate(nb)
            except Exception as e:  # a bug of an edit, not the agent's input: say it, write nothing
                raise ToolError(
                    f"The change would make {self.shown} an invalid notebook ({e}); "
                    "nothing was written"
                ) from None
        tx.write_notebook(self.path, nbformat.from_dict(nb))

    # -- a running cell --------------------------------------------------------------------

    async def run_started(self, cell_id: str) -> None:
        with self._runs_lock:
            self._runs[cell_id] = RunningCell(cell_id, limit=self.output_limit)
        try:
            await self._flush()  # the old outputs go at once; an unknown cell fails here
        except BaseException:
            with self._runs_lock:
                self._runs.pop(cell_id, None)
            raise

    async def output(self, cell_id: str, output: dict[str, Any]) -> None:
        with self._runs_lock:
            self._run(cell_id).add(output)
        self._schedule()

    async def clear_output(self, cell_id: str) -> None:
        with self._runs_lock:
            self._run(cell_id).clear()
        self._schedule()

    async def run_finished(self, cell_id: str, execution_count: int | None) -> None:
        with self._runs_lock:
            self._run(cell_id).finish(execution_count)
        task, self._flush_task = self._flush_task, None
        self._dirty = False
        if task is not None:
            task.cancel()
        await self._flush()

    def _run(self, cell_id: str) -> RunningCell:
        run = self._runs.get(cell_id)
        if run is None:
            raise RuntimeError(f"cell {cell_id} of {self.shown} is not running")
        return run

    def _schedule(self) -> None:
        self._dirty = True
        if self._flush_task is None or self._flush_task.done():
            self._flush_task = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        # Outputs that arrive while a write is under way are written by the next round.
        while self._dirty:
            await asyncio.sleep(max(0.0, self._last_write + self.flush_interval - time.monotonic()))
            self._dirty = False
            try:
                await self._flush()
            except ToolError as e:  # the next write, at the latest when the cell ends, says it
                self.ctx.log.warning("Could not write the outputs into %s: %s", self.shown, e)

    async def _flush(self) -> None:
        self._last_write = time.monotonic()
        await asyncio.to_thread(self._write_runs)

    def _write_runs(self) -> None:
        # The state is read under the notebook's lock, so whichever write comes last has the
        # latest outputs, even when an earlier flush's thread is still running.
        with transaction(self.ctx, [self.path]) as tx:
            nb = load_notebook(self.ctx, self.path, self.shown)
            was_valid = _valid(nb)
            with self._runs_lock:
                runs = list(self._runs.values())
                states = [(run, run.outputs, run.execution_count, run.finished) for run in runs]
                for run in runs:
                    if run.finished:
                        del self._runs[run.cell_id]
            cells = {cell.get("id"): cell for cell in nb.cells}
            for run, outputs, count, finished in states:
                cell = cells.get(run.cell_id)
                if cell is None:
                    if not finished and not run.version:
                        raise ToolError(f"{self.shown} has no cell with id {run.cell_id!r}")
                    continue  # deleted while it ran: its outputs have nowhere to go
                if cell.get("cell_type") != "code":
                    raise ToolError(f"Cell {run.cell_id} of {self.shown} is not a code cell")
                cell["outputs"] = copy.deepcopy(outputs)
                cell["execution_count"] = count if finished else None
            self._store(tx, nb, was_valid)


class FileNotebooks:
    """Opens notebooks in their files: the documents of a server without live ones."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    async def open(self, path: Path, shown: str, *, create: bool = True) -> FileNotebook:
        # Clear errors up front; the parse is cached, so the snapshot that follows is cheap.
        await asyncio.to_thread(load_notebook, self.ctx, path, shown, private=False)
        return FileNotebook(self.ctx, path, shown)
