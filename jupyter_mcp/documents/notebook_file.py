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
import threading
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.context import ToolContext
from ..core.errors import ToolError
from .facts import is_notebook, stamp_of
from .files import read_notebook_file, transaction
from .notebook_document import Location
from .notebook_format import ParsedFile, Stored
from .running_cell import CELL_OUTPUT_LIMIT, RunningCell

if TYPE_CHECKING:
    from nbformat import NotebookNode

T = TypeVar("T")

#: Seconds between two writes of a running cell's outputs into its file.
FLUSH_INTERVAL = 0.5


def load_notebook(
    ctx: ToolContext, path: Path, shown: str, *, private: bool = True
) -> NotebookNode:
    """The notebook file at ``path`` parsed (sources as strings, every cell with its id).

    A file unchanged since it was last read (same stamp) is not read or parsed again. With
    ``private`` the caller gets its own copy, to change; without, the cached one, which it
    must only read.
    """
    nb = _parsed(ctx, path, shown).nb
    return copy.deepcopy(nb) if private else nb


def _parsed(ctx: ToolContext, path: Path, shown: str) -> ParsedFile:
    if not is_notebook(path):
        raise ToolError(
            f"{shown} is not a notebook (.ipynb); the notebook tools work on notebooks, the "
            "file tools (get_file_text_by_path …) on other files"
        )
    if not path.exists():
        raise ToolError(f"Notebook not found: {shown}")
    return read_notebook_file(ctx, path, shown)


def stored_format(ctx: ToolContext, path: Path, shown: str) -> Stored | None:
    """What the notebook file at ``path`` says of itself (version, ids), from the parse cache;
    None when it cannot be read as a notebook now (caught mid-save, say)."""
    try:
        return _parsed(ctx, path, shown).stored
    except ToolError:
        return None


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
        self.notes: dict[str, str] = {}
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
            parsed = _parsed(self.ctx, self.path, self.shown)
            nb = copy.deepcopy(parsed.nb)
            result = edit(nb)
            if nb != parsed.nb:  # the cached parse is the file as it is
                tx.write_notebook(self.path, self.shown, nb, parsed)
                self.notes = tx.notes.get(self.path, {})
        return result

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
            parsed = _parsed(self.ctx, self.path, self.shown)
            nb = copy.deepcopy(parsed.nb)
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
            tx.write_notebook(self.path, self.shown, nb, parsed)


class FileNotebooks:
    """Opens notebooks in their files: the documents of a server without live ones."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx

    async def open(self, path: Path, shown: str, *, create: bool = True) -> FileNotebook:
        # Clear errors up front; the parse is cached, so the snapshot that follows is cheap.
        await asyncio.to_thread(load_notebook, self.ctx, path, shown, private=False)
        return FileNotebook(self.ctx, path, shown)
