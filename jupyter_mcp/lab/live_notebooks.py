"""Notebooks open in JupyterLab: changed through their live documents, not their files.

:class:`LiveNotebooks` chooses where a notebook's document lives, on each ``open``:

1. with jupyter-collaboration enabled, the server's shared document (:class:`SharedNotebook`):
   every window sees each change, and it works with no window open at all;
2. else the JupyterLab window showing the notebook, the one focused most recently
   (:class:`WindowNotebook`): its live model is read (the user's unsaved edits included) and
   each change is one transaction there, so it shows at once and one Ctrl+Z undoes it;
3. else its file (:class:`~jupyter_mcp.documents.notebook_file.FileNotebook`).

A change is computed on a copy of the notebook (the same edit functions as for files) and
sent as the difference, cell by cell (by id): insertions, deletions, moves, and the sources,
metadata and outputs that changed. It runs under the notebook's lock, the one the file tools
take, so a file-tool write and a cell edit never interleave.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import difflib
import itertools
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.context import ToolContext, held, outside_the_call
from ..core.errors import ToolError
from ..documents.notebook_document import Location, NotebookDocument, NotebookDocuments
from ..documents.notebook_file import FileNotebooks, load_notebook, stored_format
from ..documents.notebook_format import (
    IDS_SINCE,
    Stored,
    check_structure,
    give_ids,
    is_known_cell,
    source_text,
    upgrade_note,
    upgraded_for_write,
    version_of,
)
from ..documents.running_cell import CELL_OUTPUT_LIMIT, RunningCell
from ..kernels.sessions import api_path
from .rooms import AgentRooms

if TYPE_CHECKING:
    from .editor import EditorBridge, Window

T = TypeVar("T")

#: Seconds between two updates of a running cell's outputs in a live document.
LIVE_FLUSH_INTERVAL = 0.1
#: Characters of outputs a second a running cell sends to a live document at most.
LIVE_BYTES_PER_SECOND = 2_000_000


def _normalised(nb: dict[str, Any], shown: str) -> dict[str, Any]:
    check_structure(nb, shown)
    for cell in nb["cells"]:
        if is_known_cell(cell):
            cell["source"] = source_text(cell)
    give_ids(nb)
    return nb


def _placements(order: list[str], new_ids: list[str], stable: set[str]) -> list[dict[str, Any]]:
    """Moves and insertions that turn ``order`` into ``new_ids``, leaving ``stable`` alone."""
    order = list(order)
    ops: list[dict[str, Any]] = []
    for index, cell_id in enumerate(new_ids):
        if index < len(order) and order[index] == cell_id or cell_id in stable:
            continue
        if cell_id in order:
            order.remove(cell_id)
            ops.append({"op": "move", "id": cell_id, "index": index})
        else:
            ops.append({"op": "insert", "index": index, "id": cell_id})
        order.insert(index, cell_id)
    return ops if order == new_ids else []


def cell_ops(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps that turn the cells ``old`` into ``new`` (matched by id), applied in order.

    Deletions first; then moves and insertions, moving as few cells as it can (the longest
    run of cells kept in order stays where it is, so one moved cell is one move, one undo
    step and no re-rendering of the others); then, for kept cells, what changed in them (a
    changed type replaces the cell).
    """
    new_ids = [c["id"] for c in new]
    wanted = set(new_ids)
    ops: list[dict[str, Any]] = [
        {"op": "delete", "id": c["id"]} for c in old if c["id"] not in wanted
    ]
    by_id_old = {c["id"]: c for c in old}
    by_id_new = {c["id"]: c for c in new}
    order = [c["id"] for c in old if c["id"] in wanted]
    matcher = difflib.SequenceMatcher(
        a=order, b=[i for i in new_ids if i in by_id_old], autojunk=False
    )
    stable = {
        order[block.a + k] for block in matcher.get_matching_blocks() for k in range(block.size)
    }
    # The cells outside the longest kept run move into place; should that ever not give the
    # order wanted, every cell out of place moves instead (always right, maybe more moves).
    placed = _placements(order, new_ids, stable) or _placements(order, new_ids, set())
    for op in placed:
        if op["op"] == "insert":
            op["cell"] = copy.deepcopy(by_id_new[op.pop("id")])
    ops += placed
    for cell in new:
        before = by_id_old.get(cell["id"])
        if before is None:
            continue
        if before.get("cell_type") != cell.get("cell_type"):
            ops.append({"op": "replace", "id": cell["id"], "cell": copy.deepcopy(cell)})
            continue
        if before.get("source") != cell.get("source"):
            ops.append({"op": "source", "id": cell["id"], "source": cell["source"]})
        if (before.get("metadata") or {}) != (cell.get("metadata") or {}):
            ops.append({"op": "metadata", "id": cell["id"], "metadata": cell.get("metadata") or {}})
        if cell.get("cell_type") == "code" and (
            before.get("outputs") != cell.get("outputs")
            or before.get("execution_count") != cell.get("execution_count")
        ):
            ops.append(
                {
                    "op": "outputs",
                    "id": cell["id"],
                    "outputs": copy.deepcopy(cell.get("outputs") or []),
                    "execution_count": cell.get("execution_count"),
                }
            )
    return ops


class _LiveRuns:
    """Running cells of a live document, shown at most every ``interval`` seconds."""

    def __init__(
        self, show: Callable[[RunningCell, str], Any], interval: float, limit: int
    ) -> None:
        self._show = show
        self.interval = interval
        self.limit = limit
        self._runs: dict[str, RunningCell] = {}
        self._last = 0.0
        self._dirty = False
        self._pending: asyncio.Task[None] | None = None

    async def started(self, cell_id: str) -> None:
        run = self._runs[cell_id] = RunningCell(cell_id, limit=self.limit)
        try:
            await self._show(run, "started")
        except BaseException:
            self._runs.pop(cell_id, None)
            raise
        # The start was an update: the first outputs wait an interval like any others, so a
        # cell that ends within it is shown by its start and its end alone (its outputs come
        # with the end). Each update of a shared document is one more write to the
        # collaboration's store and a message to each window, of the run's whole outputs.
        self._last = time.monotonic()

    def get(self, cell_id: str) -> RunningCell:
        run = self._runs.get(cell_id)
        if run is None:
            raise RuntimeError(f"cell {cell_id} is not running")
        return run

    def changed(self) -> None:
        self._dirty = True
        if self._pending is None or self._pending.done():
            self._pending = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        # Outputs that arrive while an update is on its way are sent by the next round.
        while self._dirty:
            # Each update sends the cell's outputs whole: a big output is sent less often
            # (about 2 MB a second at most), so a cell that prints a lot does not flood the
            # window.
            size = max((run.size for run in self._runs.values()), default=0)
            interval = max(self.interval, size / LIVE_BYTES_PER_SECOND)
            await asyncio.sleep(max(0.0, self._last + interval - time.monotonic()))
            self._dirty = False
            await self.flush()

    async def flush(self) -> None:
        self._last = time.monotonic()
        for run in list(self._runs.values()):
            if not run.finished:
                with contextlib.suppress(ToolError):  # the last show says it, when it fails
                    await self._show(run, "outputs")

    async def finished(self, cell_id: str, execution_count: int | None) -> None:
        run = self.get(cell_id)
        run.finish(execution_count)
        del self._runs[cell_id]
        if not self._runs and self._pending is not None:
            self._pending.cancel()
            self._pending = None
        await self._show(run, "finished")


class _LiveExecution(ABC):
    """The execution half of a live document: running cells go through its batcher (``_runs``),
    which shows them in the document at most every flush interval."""

    def __init__(
        self, ctx: ToolContext, path: Path, shown: str, flush_interval: float, output_limit: int
    ) -> None:
        self.ctx = ctx
        self.path = path
        self.shown = shown
        self.notes: dict[str, str] = {}
        # Weakly: a live document is then freed as soon as its last user lets go of it (not at
        # the collector's next full pass), and with it the hold on its room (lab/rooms.py).
        show = weakref.WeakMethod(self._show_run)

        async def show_run(run: RunningCell, state: str) -> None:
            method = show()
            if method is not None:  # whoever runs a cell holds its document
                await method(run, state)

        self._runs = _LiveRuns(show_run, flush_interval, output_limit)

    @abstractmethod
    async def _show_run(self, run: RunningCell, state: str) -> None:
        """Show ``run`` in the document (``state``: how far it is), the document's own way."""

    async def _stored(self) -> Stored | None:
        """What the notebook's file says of itself now (read before a change: whether the
        change is the one that upgrades it, once it is saved)."""
        return await asyncio.to_thread(stored_format, self.ctx, self.path, self.shown)

    def _changed(self, stored: Stored | None, saved_by: str) -> None:
        """Say in ``notes`` when the change just made upgrades the file ``stored`` describes,
        once ``saved_by`` stores it."""
        note = None if stored is None else upgrade_note(self.shown, stored, saved_by=saved_by)
        self.notes = {} if note is None else {"upgraded": note}

    async def run_started(self, cell_id: str) -> None:
        await self._runs.started(cell_id)

    async def output(self, cell_id: str, output: dict[str, Any]) -> None:
        self._runs.get(cell_id).add(output)
        self._runs.changed()

    async def clear_output(self, cell_id: str) -> None:
        self._runs.get(cell_id).clear()
        self._runs.changed()

    async def run_finished(self, cell_id: str, execution_count: int | None) -> None:
        await self._runs.finished(cell_id, execution_count)


class WindowNotebook(_LiveExecution):
    """A notebook open in a JupyterLab window, changed through that window's live model."""

    location: Location = "window"

    def __init__(
        self,
        ctx: ToolContext,
        bridge: EditorBridge,
        window: Window,
        path: Path,
        shown: str,
        lab_path: str,
        *,
        flush_interval: float = LIVE_FLUSH_INTERVAL,
        output_limit: int = CELL_OUTPUT_LIMIT,
    ) -> None:
        super().__init__(ctx, path, shown, flush_interval, output_limit)
        self._lab_path = lab_path
        self._requests = bridge.ask(window=window)

    def _closed(self) -> ToolError:
        return ToolError(
            f"{self.shown} was closed in JupyterLab during the call; nothing was changed, "
            "call again (it is then changed in its file)"
        )

    async def snapshot(self) -> dict[str, Any]:
        answer = await self._requests.notebook_snapshot(self._lab_path)
        if not isinstance(answer, dict):
            raise self._closed()
        answer.pop("path", None)
        return _normalised(answer, self.shown)

    def version(self) -> Hashable | None:
        return None  # the window's cells change without the server hearing of it

    async def change(self, edit: Callable[[dict[str, Any]], T]) -> T:
        async with held(self.ctx.locks(self.path)):
            nb = await self.snapshot()
            ids_missing = [c for c in nb["cells"] if not c.get("id")]
            assert not ids_missing  # a live model gives every cell an id
            before = copy.deepcopy(nb["cells"])
            result = edit(nb)
            _normalised(nb, self.shown)
            ops = cell_ops(before, nb["cells"])
            if ops:
                stored = await self._stored()
                if await self._requests.notebook_apply(self._lab_path, ops) is None:
                    raise self._closed()
                self._changed(stored, "the JupyterLab window")
        return result

    async def _show_run(self, run: RunningCell, state: str) -> None:
        answer = await self._requests.notebook_run(
            self._lab_path,
            run.cell_id,
            state,
            outputs=run.outputs,
            executionCount=run.execution_count if state == "finished" else None,
        )
        if answer is None:
            raise self._closed()


_serials = itertools.count(1)


class _Changes:
    """Counts the changes to one shared notebook's cells and metadata, and keeps its last
    snapshot.

    Every change reaches the document as a transaction (an agent's, a window's edit over the
    websocket, a reload from the file), deletions included, so an unchanged count means an
    unchanged notebook; reading it is no transaction that changes it. Only the ``cells`` and
    ``meta`` roots are watched (what ``YNotebook.get()`` is made of): the room's save writes
    ``dirty`` and ``hash`` into the ``state`` root, and counting that would make a notebook
    read in windows look changed by a save that changed nothing in it (CI failed on that).
    """

    def __init__(self, ydoc: Any) -> None:
        self.serial = next(_serials)  # ids of collected documents may be reused; this is not
        self.count = 0
        self.snapshot: tuple[int, dict[str, Any]] | None = None
        from pycrdt import Map  # only with jupyter-collaboration, which a shared doc implies

        # jupyter_ydoc's own observe() would replace the room's observer, so the roots are
        # observed directly; pycrdt hands out the same root for the same name and type.
        cells, meta = ydoc.ycells, ydoc.ydoc.get("meta", type=Map)
        self._observed: tuple[tuple[Any, Any], ...] = tuple(
            (root, root.observe_deep(self._changed)) for root in (cells, meta)
        )
        # pycrdt's callback holds the pycrdt Doc, and the Doc (in Rust, out of the collector's
        # sight) holds the callback: observed, a document is never freed, its whole history
        # with it (a soak's notebook agents: +15 MiB of malloc per round with collaboration,
        # +2 without). The observers go once the room's document is gone (its room closed).
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # made outside a loop: stopped where the collector frees it
            loop = None
        weakref.finalize(ydoc, _stop_soon, loop, self._observed)

    def _changed(self, _events: Any) -> None:
        self.count += 1


def _stop_soon(
    loop: asyncio.AbstractEventLoop | None, observed: tuple[tuple[Any, Any], ...]
) -> None:
    # The collector may free the document in any thread; pycrdt's objects are the loop's.
    if loop is None:
        _stop(observed)
        return
    with contextlib.suppress(RuntimeError):  # the loop closed: the process ends
        loop.call_soon_threadsafe(_stop, observed)


def _stop(observed: tuple[tuple[Any, Any], ...]) -> None:
    for shared, subscription in observed:
        with contextlib.suppress(Exception):  # already dropped with its document
            shared.unobserve(subscription)


#: The change counts of the shared documents tools opened, for as long as each lives.
_changes: weakref.WeakKeyDictionary[Any, _Changes] = weakref.WeakKeyDictionary()


def _changes_of(ydoc: Any) -> _Changes | None:
    found = _changes.get(ydoc)
    if found is None:
        try:
            found = _changes[ydoc] = _Changes(ydoc)
        except (AttributeError, TypeError):  # not a pycrdt-backed document: count nothing
            return None
    return found


class SharedNotebook(_LiveExecution):
    """A notebook changed in the server's shared document (jupyter-collaboration)."""

    location: Location = "shared"

    def __init__(
        self,
        ctx: ToolContext,
        ydoc: Any,
        path: Path,
        shown: str,
        *,
        flush_interval: float = LIVE_FLUSH_INTERVAL,
        output_limit: int = CELL_OUTPUT_LIMIT,
    ) -> None:
        super().__init__(ctx, path, shown, flush_interval, output_limit)
        self._ydoc = ydoc
        self._changes = _changes_of(ydoc)

    async def snapshot(self) -> dict[str, Any]:
        changes = self._changes
        if changes is None:
            return _normalised(self._content(), self.shown)
        count = changes.count
        if changes.snapshot is None or changes.snapshot[0] != count:
            # Converting the document to Python costs milliseconds; keep it while unchanged.
            changes.snapshot = (count, _normalised(self._content(), self.shown))
        return copy.deepcopy(changes.snapshot[1])

    def _content(self) -> dict[str, Any]:
        nb: dict[str, Any] = self._ydoc.get()
        if version_of(nb) < IDS_SINCE:
            # jupyter_ydoc leaves the ids out of a notebook older than 4.5, but its cells
            # have them (those Jupyter's contents manager loaded it with): they are the ids
            # handed out, and the first change stores them.
            ycells = list(self._ydoc.ycells)
            if len(ycells) == len(nb["cells"]):
                for cell, ycell in zip(nb["cells"], ycells, strict=True):
                    cell_id = ycell.get("id")
                    if isinstance(cell_id, str) and cell_id and "id" not in cell:
                        cell["id"] = cell_id
        return nb

    def version(self) -> Hashable | None:
        if self._changes is None:
            return None
        return ("shared", self._changes.serial, self._changes.count)

    async def change(self, edit: Callable[[dict[str, Any]], T]) -> T:
        async with held(self.ctx.locks(self.path)):
            nb = await self.snapshot()
            before = copy.deepcopy(nb)
            result = edit(nb)
            _normalised(nb, self.shown)
            if nb != before:
                upgraded_for_write(nb)  # its cells have ids, which 4.5 is the first to keep
                stored = await self._stored()
                # jupyter_ydoc matches cells by id and updates only what changed, in one
                # transaction, so every window sees the change as a change, not a reload.
                self._ydoc.set(nb)
                self._changed(stored, "jupyter-collaboration")
        return result

    def _ycell(self, cell_id: str) -> Any:
        for ycell in self._ydoc.ycells:
            if ycell.get("id") == cell_id:
                if ycell.get("cell_type") != "code":
                    raise ToolError(f"Cell {cell_id} of {self.shown} is not a code cell")
                return ycell
        raise ToolError(f"{self.shown} has no cell with id {cell_id!r}")

    async def _show_run(self, run: RunningCell, state: str) -> None:
        from pycrdt import Array, Map, Text

        ycell = self._ycell(run.cell_id)
        youtputs = []
        for output in run.outputs:
            output = dict(output)
            if output.get("output_type") == "stream":
                output["text"] = Text(str(output.get("text", "")))
            youtputs.append(Map(output))
        with self._ydoc.ydoc.transaction():
            if not isinstance(ycell.get("outputs"), Array):
                ycell["outputs"] = Array()
            ycell["outputs"].clear()
            ycell["outputs"].extend(youtputs)
            if state == "started":
                ycell["execution_count"] = None
                ycell["execution_state"] = "running"
            elif state == "finished":
                ycell["execution_count"] = run.execution_count
                ycell["execution_state"] = "idle"


def collaboration(serverapp: Any) -> Any:
    """jupyter-collaboration's server extension when it is enabled and running, else None."""
    manager = getattr(serverapp, "extension_manager", None)
    if manager is None:
        return None
    for name in ("jupyter_server_ydoc", "jupyter_collaboration"):
        apps = manager.extension_apps.get(name) if hasattr(manager, "extension_apps") else None
        for app in apps or ():
            if hasattr(app, "get_document") and not getattr(app, "disable_rtc", False):
                return app
    return None


class LiveNotebooks:
    """The documents of notebooks on a server: shared, in a window, or in their file."""

    def __init__(
        self, ctx: ToolContext, bridge: EditorBridge | None, files: NotebookDocuments | None
    ) -> None:
        self.ctx = ctx
        self.bridge = bridge
        self.files = files if files is not None else FileNotebooks(ctx)
        self._shared_listeners: list[Callable[[str, Any], None]] = []
        #: The rooms of the shared documents opened here, closed once unused (lab/rooms.py).
        self.rooms: AgentRooms | None = None

    def _rooms_of(self, extension: Any) -> AgentRooms:
        rooms = self.rooms
        if rooms is None or rooms.extension is not extension:
            rooms = self.rooms = AgentRooms(extension, self.ctx.log)
        return rooms

    async def _shared_document(
        self, extension: Any, lab_path: str, path: Path, shown: str, *, create: bool
    ) -> SharedNotebook | None:
        """The shared document of the notebook, held open while the answer lives; None when
        it has no room (and ``create`` is false)."""
        rooms = self._rooms_of(extension)
        # On the loop: the file id manager's SQLite connection is the loop thread's only.
        room_id = rooms.room_id(lab_path)
        with rooms.opening(room_id):
            # The room it opens (its awareness and save tasks) outlives this call. Named by
            # its id: given the path, get_document would ask the file id manager again.
            try:
                ydoc = await outside_the_call(
                    extension.get_document(room_id=room_id, copy=False, create=create)
                )
            except Exception:
                await rooms.forget_failed_start(room_id)
                raise
            if ydoc is None:
                return None
            self._opened_shared(lab_path, ydoc)
            doc = SharedNotebook(self.ctx, ydoc, path, shown)
            rooms.hold(doc, room_id)
        return doc

    def close(self) -> None:
        """Call off the closes of unused rooms still waiting (the server stops)."""
        if self.rooms is not None:
            self.rooms.close()

    def add_shared_listener(self, listener: Callable[[str, Any], None]) -> None:
        """Tell ``listener`` of each shared document a tool opens (its server path and the
        document), before the tool changes it."""
        self._shared_listeners.append(listener)

    def _opened_shared(self, lab_path: str, ydoc: Any) -> None:
        for listener in list(self._shared_listeners):
            try:
                listener(lab_path, ydoc)
            except Exception:  # a listener must never fail the tool
                self.ctx.log.exception("jupyter_mcp: a shared-document listener failed")

    async def open(self, path: Path, shown: str, *, create: bool = True) -> NotebookDocument:
        serverapp = self.ctx.serverapp
        extension = collaboration(serverapp) if serverapp is not None else None
        lab_path = api_path(self.ctx, path) if serverapp is not None else ""

        async def loaded_room(error: ToolError) -> NotebookDocument:
            # jupyter-collaboration saves a shared document by rewriting its file in place
            # (Jupyter's atomic_writing keeps a backup copy, not a temporary file): read in the
            # middle of a save, the file is empty or cut short. A shared document already
            # loaded is then the notebook; without one, the file's error stands.
            shared = None
            if extension is not None and path.is_file():
                shared = await self._shared_document(extension, lab_path, path, shown, create=False)
            if shared is None:
                raise error
            return shared

        try:
            doc = await self.files.open(path, shown)  # the file's errors (missing, not a notebook)
        except ToolError as e:
            return await loaded_room(e)
        if serverapp is None:
            return doc
        if extension is not None:
            try:
                shareable = await asyncio.to_thread(self._shareable, path, shown)
            except ToolError as e:
                # Read again, the file may be caught in a save that began since (under load
                # its room saves it every second or so): the same as above.
                return await loaded_room(e)
            if not shareable:
                extension = None
        if extension is not None:
            try:
                shared = await self._shared_document(
                    extension, lab_path, path, shown, create=create
                )
            except Exception as e:  # jupyter-collaboration's own failure to load the notebook
                # (jupyter_ydoc wants a source in every cell, which a cell of a newer minor
                # version may lack): no window can open it shared either, so its file is
                # the notebook.
                self.ctx.log.warning(
                    "jupyter-collaboration cannot load %s (%s: %s); it is changed in its file",
                    shown,
                    type(e).__name__,
                    e,
                )
            else:
                if shared is not None:
                    return shared
        window = self._window_showing(path)
        if window is not None and self.bridge is not None:
            return WindowNotebook(self.ctx, self.bridge, window, path, shown, lab_path)
        return doc

    def _shareable(self, path: Path, shown: str) -> bool:
        """Whether a shared document can hold the notebook: jupyter_ydoc needs a source in
        every cell, which a cell of a newer minor version may not have (loading it would
        leave a shared document without the cells after it)."""
        nb = load_notebook(self.ctx, path, shown, private=False)  # parsed by files.open
        if all(isinstance(cell.get("source"), str) for cell in nb["cells"]):
            return True
        self.ctx.log.info(
            "%s has a cell without a source, which jupyter-collaboration cannot share; it is "
            "changed in its file",
            shown,
        )
        return False

    def _window_showing(self, path: Path) -> Window | None:
        if self.bridge is None:
            return None
        found = [
            window
            for window, document in self.bridge.documents_at(path)
            if document.type == "notebook"
        ]
        return max(found, key=lambda w: w.focused_at) if found else None
