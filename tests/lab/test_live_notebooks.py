"""Notebooks open in a window change there: the server's side of the live notebook requests.

A scripted window on the real lab socket keeps a notebook model and answers notebookSnapshot,
notebookApply and notebookRun as the labextension does (``labextension/src/notebooks.ts``);
the real labextension in Chromium is exercised by ``test_browser.py``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import random
from pathlib import Path
from typing import Any

import nbformat
import pytest
from lab_windows import FakeWindow, until

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.lab.live_notebooks import WindowNotebook, cell_ops
from jupyter_mcp.lab.notebooks import open_notebook


def apply_ops(cells: list[dict[str, Any]], ops: list[dict[str, Any]]) -> None:
    """What the labextension's applyOp does, on a list of cells."""

    def at(cell_id: str) -> int:
        return next(i for i, c in enumerate(cells) if c["id"] == cell_id)

    for op in ops:
        kind = op["op"]
        if kind == "delete":
            del cells[at(op["id"])]
        elif kind == "insert":
            cells.insert(op["index"], copy.deepcopy(op["cell"]))
        elif kind == "move":
            cells.insert(op["index"], cells.pop(at(op["id"])))
        elif kind == "replace":
            cells[at(op["id"])] = copy.deepcopy(op["cell"])
        elif kind == "source":
            cells[at(op["id"])]["source"] = op["source"]
        elif kind == "metadata":
            cells[at(op["id"])]["metadata"] = op["metadata"]
        elif kind == "outputs":
            cell = cells[at(op["id"])]
            cell["outputs"], cell["execution_count"] = op["outputs"], op["execution_count"]


class NotebookWindow(FakeWindow):
    """A window showing notebooks (path → nbformat dict), answering the notebook requests."""

    def __init__(self, ws: Any, notebooks: dict[str, dict[str, Any]]) -> None:
        super().__init__(ws)
        self.notebooks = notebooks
        for method in ("notebookSnapshot", "notebookApply", "notebookRun"):
            self.handlers[method] = functools.partial(self.answer, method)

    def answer(self, method: str, params: dict[str, Any]) -> Any:
        nb = self.notebooks.get(params.get("path", ""))
        if nb is None:
            return None
        if method == "notebookSnapshot":
            return {"path": params["path"], **copy.deepcopy(nb)}
        if method == "notebookApply":
            apply_ops(nb["cells"], params["ops"])
            return True
        cell = next((c for c in nb["cells"] if c["id"] == params["cellId"]), None)
        if cell is None:
            raise ValueError(f"{params['path']} has no code cell with id {params['cellId']}")
        if "outputs" in params:
            cell["outputs"] = params["outputs"]
        if params["state"] == "started":
            cell["execution_count"] = None
        elif params["state"] == "finished":
            cell["execution_count"] = params.get("executionCount")
        return True

    def runs(self) -> list[tuple[str, int]]:
        return [
            (r["params"]["state"], len(r["params"].get("outputs", [])))
            for r in self.requests
            if r["method"] == "notebookRun"
        ]


@pytest.fixture
def ctx(mcp_app: Any) -> ToolContext:
    return mcp_app.tool_context


@pytest.fixture
def open_window(jp_ws_fetch: Any, ctx: ToolContext):  # type: ignore[no-untyped-def]
    windows: list[NotebookWindow] = []
    bridge = ctx.services.editor
    assert bridge is not None

    async def _open(window_id: str, notebooks: dict[str, Any], active: str | None = None) -> Any:
        ws = await jp_ws_fetch("mcp", "bridge", params={"window": window_id})
        window = NotebookWindow(ws, notebooks)
        windows.append(window)
        docs = [{"path": p, "type": "notebook", "dirty": True} for p in notebooks]
        window.state(
            focus=True,
            open=docs,
            active={"path": active, "type": "notebook", "dirty": True} if active else None,
        )
        await until(
            lambda: any(w.id == window_id and len(w.open) == len(docs) for w in bridge.windows())
        )
        return window

    yield _open
    for window in windows:
        window.ws.close()
    assert not [v for window in windows for v in window.violations]


def _notebook(root: Path, name: str, *sources: str) -> tuple[Path, dict[str, Any]]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    path = root / name
    path.write_text(nbformat.writes(nb))
    return path, json.loads(nbformat.writes(nb))


def test_cell_ops_turn_old_cells_into_new_ones() -> None:
    def cell(cell_id: str, source: str = "", kind: str = "code") -> dict[str, Any]:
        made = {"id": cell_id, "cell_type": kind, "source": source, "metadata": {}}
        if kind == "code":
            made |= {"outputs": [], "execution_count": None}
        return made

    old = [cell("a", "1"), cell("b", "2"), cell("c", "3"), cell("d", "4")]
    new = [cell("c", "3"), cell("x", "new"), cell("a", "1!"), cell("d", "4", "markdown")]
    new[0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "3\n"}]
    ops = cell_ops(old, new)
    got = copy.deepcopy(old)
    apply_ops(got, ops)
    assert got == new
    assert [op["op"] for op in ops] == ["delete", "move", "insert", "outputs", "source", "replace"]
    assert cell_ops(new, copy.deepcopy(new)) == []


def test_cell_ops_reach_any_new_order_and_move_one_cell_with_one_move() -> None:
    rng = random.Random(7)
    for _ in range(300):
        old = [
            {"id": f"c{i}", "cell_type": "code", "source": str(i), "metadata": {}}
            for i in range(rng.randint(0, 8))
        ]
        new = [copy.deepcopy(c) for c in old if rng.random() > 0.2]
        if rng.random() > 0.5:
            rng.shuffle(new)
        for k in range(rng.randint(0, 3)):
            new.insert(rng.randint(0, len(new)), {"id": f"n{k}", "cell_type": "raw", "source": ""})
        got = copy.deepcopy(old)
        apply_ops(got, cell_ops(old, new))
        assert got == new
    old = [{"id": c, "cell_type": "raw", "source": ""} for c in "abcdef"]
    moved = [old[i] for i in (1, 2, 3, 4, 0, 5)]
    assert [op["op"] for op in cell_ops(old, moved)] == ["move"]


async def test_an_open_notebook_is_read_and_changed_in_its_window(
    ok: Any, fails: Any, open_window: Any, jp_root_dir: Path
) -> None:
    path, nb = _notebook(jp_root_dir, "n.ipynb", "a = 1", "b = 2")
    before = path.read_bytes()
    live = copy.deepcopy(nb)
    live["cells"][0]["source"] = "a = 'typed, unsaved'"
    window = await open_window("w1", {"n.ipynb": live}, active="n.ipynb")
    ids = [c["id"] for c in nb["cells"]]

    # Reads see the unsaved edit; with no path given, the focused notebook is meant
    cells = (await ok("get_notebook_cells"))["cells"]
    assert cells[0]["source"] == "a = 'typed, unsaved'"
    stale = await fails(
        "edit_notebook_cell",
        pathInProject="n.ipynb",
        cellId=ids[0],
        source="x",
        expectedSource="a = 1",
    )
    assert stale.endswith("a = 'typed, unsaved'")

    await ok(
        "edit_notebook_cell",
        pathInProject="n.ipynb",
        cellId=ids[1],
        searchText="2",
        replaceText="3",
    )
    added = await ok("insert_notebook_cell", pathInProject="n.ipynb", source="c = 4", index=0)
    await ok("move_notebook_cell", pathInProject="n.ipynb", cellId=added["cellId"], toIndex=2)
    assert [c["source"] for c in live["cells"]] == ["a = 'typed, unsaved'", "b = 3", "c = 4"]
    applies = [r["params"]["ops"] for r in window.requests if r["method"] == "notebookApply"]
    assert [[op["op"] for op in ops] for ops in applies] == [["source"], ["insert"], ["move"]]
    assert path.read_bytes() == before  # the file is the user's to save


async def test_the_most_recently_focused_window_showing_it_is_chosen(
    ctx: ToolContext, open_window: Any, jp_root_dir: Path
) -> None:
    path, nb = _notebook(jp_root_dir, "n.ipynb", "x")
    _, other = _notebook(jp_root_dir, "other.ipynb", "y")
    first = await open_window("w1", {"n.ipynb": copy.deepcopy(nb)})
    await open_window("w2", {"other.ipynb": other})  # focused last, but not showing n.ipynb
    doc = await open_notebook(ctx, "n.ipynb")
    assert isinstance(doc, WindowNotebook)
    await doc.snapshot()
    assert [r["method"] for r in first.requests] == ["notebookSnapshot"]
    first.notebooks.clear()  # closed in the window since it was opened
    with pytest.raises(ToolError, match="was closed in JupyterLab during the call"):
        await doc.snapshot()


async def test_a_running_cell_shows_started_outputs_and_finished_in_the_window(
    ctx: ToolContext, open_window: Any, jp_root_dir: Path
) -> None:
    path, nb = _notebook(jp_root_dir, "n.ipynb", "for i in range(50): print(i)")
    nb["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "old\n"}]
    nb["cells"][0]["execution_count"] = 1
    window = await open_window("w1", {"n.ipynb": nb})
    cell_id = nb["cells"][0]["id"]
    doc = await open_notebook(ctx, "n.ipynb")
    await doc.run_started(cell_id)
    await until(lambda: window.runs() == [("started", 0)])
    assert nb["cells"][0]["execution_count"] is None and nb["cells"][0]["outputs"] == []
    for i in range(50):
        await doc.output(cell_id, {"output_type": "stream", "name": "stdout", "text": f"{i}\n"})
        await asyncio.sleep(0.01)
    await doc.output(
        cell_id, {"output_type": "display_data", "data": {"text/plain": "done"}, "metadata": {}}
    )
    await doc.run_finished(cell_id, 2)
    await until(lambda: window.runs()[-1][0] == "finished")
    runs = window.runs()
    # Batched: far fewer updates than outputs, each with the stream merged into one output
    assert 2 <= len(runs) <= 15, runs
    assert all(state == "outputs" for state, _ in runs[1:-1])
    cell = nb["cells"][0]
    assert cell["execution_count"] == 2
    assert cell["outputs"][0]["text"] == "".join(f"{i}\n" for i in range(50))
    assert cell["outputs"][1]["data"] == {"text/plain": "done"}
    nb["cells"].clear()  # the user deleted the cell: the next run of it is refused
    with pytest.raises(ToolError, match="no code cell with id"):
        await doc.run_started(cell_id)


async def test_a_live_edit_waits_for_a_file_tool_write_holding_the_notebook(
    ok: Any, ctx: ToolContext, open_window: Any, jp_root_dir: Path
) -> None:
    _, nb = _notebook(jp_root_dir, "n.ipynb", "a = 1")
    window = await open_window("w1", {"n.ipynb": nb})
    lock = ctx.locks(jp_root_dir / "n.ipynb")
    lock.acquire()  # as a file tool's write transaction holds it
    try:
        edit = asyncio.ensure_future(
            ok("edit_notebook_cell", pathInProject="n.ipynb", index=0, source="a = 2")
        )
        await asyncio.sleep(0.5)
        assert not edit.done() and not window.requests  # not even read before the lock
    finally:
        lock.release()
    await edit
    assert nb["cells"][0]["source"] == "a = 2"
    assert lock.acquire(blocking=False)  # and given back
    lock.release()


def test_a_shared_notebooks_version_changes_with_its_cells_not_with_the_rooms_saves() -> None:
    # Reads in result windows compare this version: the room's save marks the document clean
    # (``dirty``/``hash`` in its ``state`` root) and must not look like a change of the notebook
    # (CI saw a whole read refused as "changed since its first window" by the save of an
    # edit made before it began).
    from jupyter_ydoc import YNotebook
    from pycrdt import Map

    from jupyter_mcp.lab.live_notebooks import _changes_of

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("a = 1")]
    ydoc = YNotebook()
    ydoc.set(nb)
    changes = _changes_of(ydoc)
    assert changes is not None and _changes_of(ydoc) is changes
    count = changes.count
    ydoc.dirty = False
    ydoc.hash = "0123"
    ydoc.path = "renamed.ipynb"
    assert changes.count == count
    ydoc.ycells[0]["source"].insert(5, "0")  # a window's typing
    assert changes.count > count
    count = changes.count
    ydoc.ydoc.get("meta", type=Map)["metadata"]["kernelspec"] = Map({"name": "python3"})
    assert changes.count > count
    count = changes.count
    ydoc.ycells.append(ydoc.create_ycell(nbformat.v4.new_markdown_cell("# more")))
    assert changes.count > count


async def test_a_quick_cell_is_two_updates_of_the_shared_document_and_a_long_one_is_batched(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    # Each update of a shared document is a write to jupyter-collaboration's store and a
    # message to every window: a bench_agents run (20 agents running 50 quick cells each)
    # queued 2,832 store writes on the server's loop. A cell that ends within the flush
    # interval is shown by its start and its end, its outputs coming with the end.
    from jupyter_ydoc import YNotebook

    from jupyter_mcp.lab.live_notebooks import SharedNotebook

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print('hi')")]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="old\n")]
    ydoc = YNotebook()
    ydoc.set(nb)
    cell_id = nb.cells[0].id
    path = jp_root_dir / "n.ipynb"
    # An interval no loaded machine outlasts between an output and the end of its cell
    doc = SharedNotebook(ctx, ydoc, path, "n.ipynb", flush_interval=60)
    updates: list[Any] = []
    ydoc.ydoc.observe(updates.append)

    def cell() -> dict[str, Any]:
        return ydoc.get()["cells"][0]

    for run in range(1, 6):
        before = len(updates)
        await doc.run_started(cell_id)
        # The start shows at once: running, the old outputs gone
        assert cell()["outputs"] == [] and cell()["execution_count"] is None
        assert len(updates) == before + 1
        await doc.output(cell_id, {"output_type": "stream", "name": "stdout", "text": "hi\n"})
        await asyncio.sleep(0.05)  # the kernel's next message, a moment later
        await doc.run_finished(cell_id, run)
        assert len(updates) == before + 2
        assert cell()["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
        assert cell()["execution_count"] == run
    await asyncio.sleep(0.3)  # and no late update follows
    assert len(updates) == 10

    # A cell that prints for a while: updates every flush interval, not one per output
    doc = SharedNotebook(ctx, ydoc, path, "n.ipynb")
    before = len(updates)
    await doc.run_started(cell_id)
    for i in range(50):
        await doc.output(cell_id, {"output_type": "stream", "name": "stdout", "text": f"{i}\n"})
        await asyncio.sleep(0.01)
    await doc.run_finished(cell_id, 6)
    assert 3 <= len(updates) - before <= 15, len(updates) - before
    assert cell()["outputs"][0]["text"] == "".join(f"{i}\n" for i in range(50))
