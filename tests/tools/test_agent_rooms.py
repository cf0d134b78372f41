"""The shared-document rooms tools open are closed once nobody uses them (lab/rooms.py).

jupyter-collaboration closes a room only when the last window client leaves it; a room a tool
opened has none, so before this every notebook an agent touched kept its room (document,
history, store, tasks, file polling) for the server's life. Here the server's
``document_cleanup_delay`` is short, so that each test sees the close; what must keep a room
open is checked by asking for the close directly (no waiting for something not to happen).
"""

from __future__ import annotations

import asyncio
import gc
import json
import warnings
import weakref
from pathlib import Path
from typing import Any

import nbformat
import pytest
import tornado.httpclient
import tornado.websocket
from code_notebook import write_code_notebook
from lab_windows import until
from live_documents import scratch_server_config
from mcp.shared.exceptions import MCPDeprecationWarning
from notebook_files import on_disk
from server_configs import collaboration_installed

from jupyter_mcp.lab.live_notebooks import SharedNotebook, collaboration
from jupyter_mcp.lab.notebooks import open_notebook
from jupyter_mcp.lab.rooms import AgentRooms
from jupyter_mcp.resources.project import ProjectResources

pytestmark = [
    pytest.mark.skipif(
        not collaboration_installed(), reason="jupyter-collaboration is not installed"
    ),
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

#: The rooms' cleanup delay of this module's server, in seconds.
DELAY = 0.3
#: Seconds a test waits for what must happen (generous: a loaded machine).
COMES = 30.0


@pytest.fixture
def jp_server_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    config = scratch_server_config(True, tmp_path, monkeypatch)
    config["YDocExtension"]["document_cleanup_delay"] = DELAY
    return config


@pytest.fixture(name="collaboration")
def _collaboration() -> bool:
    """This folder's fixtures then wait for collaboration's saves before the server stops."""
    return True


class Rooms:
    """The test server's collaboration rooms, by notebook."""

    def __init__(self, mcp_app: Any, jp_serverapp: Any) -> None:
        self.extension = collaboration(jp_serverapp)
        self.notebooks = mcp_app.tool_context.services.notebooks

    @property
    def agent_rooms(self) -> Any:
        rooms = self.notebooks.rooms
        assert rooms is not None, "no shared document was opened by a tool yet"
        return rooms

    def id_of(self, name: str) -> str:
        return AgentRooms(self.extension, None).room_id(name)

    def room(self, name: str) -> Any:
        return self.extension.ywebsocket_server.rooms.get(self.id_of(name))

    def file_id(self, name: str) -> str:
        return self.id_of(name).rsplit(":", 1)[1]

    async def closed(self, name: str) -> None:
        room_id = self.id_of(name)
        rooms = self.extension.ywebsocket_server.rooms
        await until(lambda: room_id not in rooms, timeout=COMES)


@pytest.fixture
def rooms(mcp_app: Any, jp_serverapp: Any) -> Rooms:
    return Rooms(mcp_app, jp_serverapp)


def _cells(path: Path) -> list[Any]:
    return list(nbformat.read(path, as_version=4).cells)


async def test_an_agents_room_closes_after_the_delay_with_its_edits_and_outputs_saved(
    ok: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", "print('before')", ids=True)
    # When an agent edits a cell and runs the notebook (in its shared document)
    await ok("edit_notebook_cell", pathInProject="n.ipynb", cellId="c1", source="print(x + 41)")
    assert rooms.room("n.ipynb") is not None, "the tool opened the notebook's room"
    ran = await ok("execute_notebook_cells", pathInProject="n.ipynb")
    assert ran["status"] == "ok", ran
    # Then, once the delay has passed with nobody in it, its room is closed, the file's
    # loader (polling the file) removed ...
    await rooms.closed("n.ipynb")
    assert rooms.file_id("n.ipynb") not in rooms.extension.file_loaders
    # ... and the file holds the edit and the run's outputs
    cells = _cells(path)
    assert cells[1].source == "print(x + 41)"
    assert cells[1].execution_count is not None
    assert [o.get("text") for o in cells[1].outputs] == ["42\n"]
    # A tool opening it again gets a fresh room, from the file
    again = await ok("get_notebook_cell", pathInProject="n.ipynb", cellId="c1")
    assert again["source"] == "print(x + 41)" and again["outputs"][0]["text"] == "42\n"
    await ok("edit_notebook_cell", pathInProject="n.ipynb", cellId="c0", source="x = 2")
    await on_disk(path, lambda nb: nb.cells[0].source == "x = 2")
    await rooms.closed("n.ipynb")


async def test_an_edit_whose_save_is_still_waiting_is_saved_before_the_close(
    mcp_app: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")
    room = rooms.room("n.ipynb")
    if not hasattr(room, "_save_delay") or not hasattr(room, "_saving_document"):
        pytest.skip("jupyter-collaboration's rooms changed: no _save_delay/_saving_document")
    # Its save waits longer than the room's cleanup: DocumentRoom.stop would cancel it
    room._save_delay = DELAY * 5

    def edit(nb: dict[str, Any]) -> None:
        nb["cells"][0]["source"] = "x = 'last'"

    await doc.change(edit)
    del doc
    await rooms.closed("n.ipynb")
    assert _cells(path)[0].source == "x = 'last'"


class FailingSaves:
    """The notebook's saves through its room fail, the first ``times`` of them (None: all),
    as collaboration's save can (its ``aget`` meeting a cell deleted mid-read, a full disk):
    collaboration then logs "Error saving file" and keeps the edit in the room only."""

    def __init__(self, rooms: Rooms, name: str, error: Exception, times: int | None) -> None:
        self.loader = rooms.extension.file_loaders[rooms.file_id(name)]
        self.save = self.loader.maybe_save_content
        self.error, self.times, self.failed = error, times, 0

    async def maybe_save_content(self, model: dict[str, Any]) -> Any:
        if self.times is None or self.failed < self.times:
            self.failed += 1
            raise self.error
        return await self.save(model)

    def __enter__(self) -> FailingSaves:
        self.loader.maybe_save_content = self.maybe_save_content
        return self

    def __exit__(self, *exc: object) -> None:
        self.loader.maybe_save_content = self.save


async def _edit(doc: Any, source: str) -> None:
    """A tool's edit of the first cell, in the notebook's shared document."""

    def edit(nb: dict[str, Any]) -> None:
        nb["cells"][0]["source"] = source

    await doc.change(edit)


async def test_a_room_whose_last_save_failed_is_saved_again_before_it_closes(
    mcp_app: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    # Closing the room then would lose the edit
    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")  # held: its room stays open
    if not callable(getattr(rooms.room("n.ipynb"), "_save_to_disc", None)):
        pytest.skip("jupyter-collaboration's rooms changed: no _save_to_disc to save again")
    with FailingSaves(rooms, "n.ipynb", IndexError("Array index out of range"), 1) as saves:
        await _edit(doc, "x = 'kept'")
        del doc  # the tool lets go
        await rooms.closed("n.ipynb")
    assert saves.failed == 1, "the save did not fail as the test meant"
    assert _cells(path)[0].source == "x = 'kept'"


async def test_a_room_whose_saves_keep_failing_stays_open(
    mcp_app: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")  # held: its room stays open
    room, room_id = rooms.room("n.ipynb"), rooms.id_of("n.ipynb")
    with FailingSaves(rooms, "n.ipynb", OSError(28, "No space left on device"), None) as saves:
        await _edit(doc, "x = 'unsaved'")
        del doc  # the tool lets go
        # Its close is tried (and a save asked for) again and again, and it stays open
        await until(lambda: saves.failed >= 3, timeout=COMES)
        assert rooms.room("n.ipynb") is room
        assert not await rooms.agent_rooms.close_if_unused(room_id)
        assert rooms.room("n.ipynb") is room
    # Once a save succeeds, it closes with the edit in its file
    await rooms.closed("n.ipynb")
    assert _cells(path)[0].source == "x = 'unsaved'"


async def test_a_document_a_call_still_holds_keeps_its_room(
    mcp_app: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")
    assert isinstance(doc, SharedNotebook)
    room_id = rooms.id_of("n.ipynb")
    assert not await rooms.agent_rooms.close_if_unused(room_id)
    assert rooms.room("n.ipynb") is not None
    del doc  # the call ends
    await rooms.closed("n.ipynb")


def _notebook_running_until(root: Path, go: Path) -> Path:
    """n.ipynb, whose one cell runs until ``go`` exists, then prints "done"."""
    source = f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
    return write_code_notebook(root, "n.ipynb", source + "print('done')", ids=True)


async def test_a_running_cell_keeps_its_room_until_the_run_ends(
    ok: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    go = jp_root_dir / "go"
    path = _notebook_running_until(jp_root_dir, go)
    started = await ok("execute_notebook_cells", pathInProject="n.ipynb", background=True)
    execution = started["executionId"]
    room_id = rooms.id_of("n.ipynb")
    # While the cell runs, its room is held: past the delay, and asked to close, it stays
    await asyncio.sleep(DELAY * 3)
    assert rooms.room("n.ipynb") is not None
    assert not await rooms.agent_rooms.close_if_unused(room_id)
    go.write_text("")
    ended = await ok("get_execution", executionId=execution, waitMs=60000)
    assert ended["status"] == "ok", ended
    # Once it ended (its outputs written), the room closes with them saved
    await rooms.closed("n.ipynb")
    assert [o.get("text") for o in _cells(path)[0].outputs] == ["done\n"]


@pytest.fixture
def open_window(
    jp_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str]
) -> Any:
    """``await open_window(name)``: a collaboration client of the notebook's room, as a
    JupyterLab window opens it (its session, then the room's websocket)."""

    async def _open(name: str) -> Any:
        answer = await jp_fetch(
            "api",
            "collaboration",
            "session",
            name,
            method="PUT",
            body=json.dumps({"format": "json", "type": "notebook"}),
        )
        session = json.loads(answer.body)
        # The room id's colons unescaped, as JupyterLab sends them (jp_ws_fetch escapes them,
        # and collaboration would take the escaped path for another room).
        url = (
            f"ws://localhost:{jp_http_port}{jp_base_url}api/collaboration/room/"
            f"json:notebook:{session['fileId']}?sessionId={session['sessionId']}"
        )
        request = tornado.httpclient.HTTPRequest(url, headers=dict(jp_auth_header))
        return await tornado.websocket.websocket_connect(request)

    return _open


async def test_a_window_keeps_the_room_and_collaboration_closes_it_when_it_leaves(
    mcp_app: Any, rooms: Rooms, jp_root_dir: Path, open_window: Any
) -> None:
    write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")
    room = rooms.room("n.ipynb")
    window = await open_window("n.ipynb")
    await until(lambda: len(room.clients) == 1, timeout=COMES)
    del doc
    gc.collect()
    # With a window in it, the agent leaving does not close it
    assert not await rooms.agent_rooms.close_if_unused(rooms.id_of("n.ipynb"))
    assert rooms.room("n.ipynb") is room
    # When the window leaves, collaboration's own cleaning closes it
    window.close()
    await rooms.closed("n.ipynb")


async def test_a_window_leaving_mid_run_does_not_close_the_room_under_the_run(
    ok: Any, rooms: Rooms, jp_root_dir: Path, open_window: Any
) -> None:
    go = jp_root_dir / "go"
    path = _notebook_running_until(jp_root_dir, go)
    window = await open_window("n.ipynb")
    room = rooms.room("n.ipynb")
    await until(lambda: room is not None and len(room.clients) == 1, timeout=COMES)
    started = await ok("execute_notebook_cells", pathInProject="n.ipynb", background=True)
    # When the window leaves while the agent's cell runs, collaboration's close is called off
    window.close()
    await until(lambda: not room.clients, timeout=COMES)
    await until(lambda: room.cleaner is not None and room.cleaner.done(), timeout=COMES)
    await asyncio.sleep(DELAY * 3)
    assert rooms.room("n.ipynb") is room
    go.write_text("")
    ended = await ok("get_execution", executionId=started["executionId"], waitMs=60000)
    assert ended["status"] == "ok", ended
    # and the room closes once the run ended, its outputs saved
    await rooms.closed("n.ipynb")
    assert [o.get("text") for o in _cells(path)[0].outputs] == ["done\n"]


async def test_a_subscription_follows_the_notebook_across_its_room_closing_and_reopening(
    connect: Any, mcp_app: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    (project,) = [
        p
        for p in mcp_app.tool_context.services.resources.providers
        if isinstance(p, ProjectResources)
    ]
    uri = "jupyter-mcp://notebook/n.ipynb"
    async with connect() as subscriber, connect() as agent:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await subscriber.subscribe_resource(uri)
        edit = {"pathInProject": "n.ipynb", "cellId": "c0", "source": "x = 2"}
        assert not (await agent.call_tool("edit_notebook_cell", edit)).is_error
        shared = project._shared
        await until(lambda: shared.observing("n.ipynb"), timeout=COMES)
        # A subscription does not keep the room open: it closes, and is let go of ...
        await rooms.closed("n.ipynb")
        await until(lambda: not shared.observing("n.ipynb"), timeout=COMES)
        # ... and the room a tool opens again is observed again
        edit["source"] = "x = 3"
        assert not (await agent.call_tool("edit_notebook_cell", edit)).is_error
        await until(lambda: shared.observing("n.ipynb"), timeout=COMES)
        read = await subscriber.read_resource(uri)
        assert "x = 3" in read.contents[0].text


async def test_without_collaborations_pending_save_to_look_at_the_room_stays_open(
    mcp_app: Any, rooms: Rooms, jp_root_dir: Path
) -> None:
    # lab/rooms.py reads DocumentRoom._saving_document (private, jupyter_server_ydoc 3.0.4)
    # to close only once the last change is saved; without it, it must keep the room.
    write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")
    room = rooms.room("n.ipynb")
    if "_saving_document" not in vars(room):
        pytest.skip("jupyter-collaboration's rooms no longer have _saving_document")
    saving = room._saving_document
    del room._saving_document
    room_id = rooms.id_of("n.ipynb")
    try:
        del doc
        await until(lambda: not rooms.agent_rooms.held(room_id), timeout=COMES)
        assert not await rooms.agent_rooms.close_if_unused(room_id)
        assert rooms.room("n.ipynb") is room
    finally:
        room._saving_document = saving
    await rooms.agent_rooms.close_if_unused(room_id)  # (unless its own close came first)
    await rooms.closed("n.ipynb")


def test_collaborations_room_locks_are_where_the_close_takes_them() -> None:
    # The close takes collaboration's room lock (YDocExtension._room_locks, private), which
    # get_document and the room handlers share; without it, it takes locks of its own.
    from jupyter_server_ydoc.app import YDocExtension

    if not isinstance(getattr(YDocExtension, "_room_locks", None), dict):
        pytest.skip("jupyter-collaboration no longer keeps YDocExtension._room_locks")
    fallback = AgentRooms(object(), None)
    assert fallback._lock("r") is fallback._lock("r")
    assert "r" in fallback._own_locks


async def test_a_closed_rooms_document_is_freed(ok: Any, rooms: Rooms, jp_root_dir: Path) -> None:
    # What counts a notebook's changes observes its document: pycrdt's callback holds the
    # Doc, which holds the callback in Rust, where the collector cannot see the cycle.
    write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    await ok("insert_notebook_cell", pathInProject="n.ipynb", source="y = 2", index=0)
    document = weakref.ref(rooms.room("n.ipynb").ydoc)
    await rooms.closed("n.ipynb")

    def freed() -> bool:
        gc.collect()
        return document() is None

    await until(freed, timeout=COMES)


async def test_a_room_that_failed_to_start_is_not_handed_out_afterwards(
    ok: Any, rooms: Rooms, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_server_ydoc.rooms import DocumentRoom

    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    initialize = DocumentRoom.initialize
    failures = []

    async def fails_once(room: Any) -> None:
        if not failures:  # as when the file is read in the middle of a write
            failures.append(room)
            raise ValueError("the file was cut short")
        await initialize(room)

    monkeypatch.setattr(DocumentRoom, "initialize", fails_once)
    # The room fails to start: the agent's cell goes into the file
    inserted = await ok("insert_notebook_cell", pathInProject="n.ipynb", source="y = 2")
    assert failures, "the room's start did not fail"
    assert [c.source for c in _cells(path)] == ["x = 1", "y = 2"]
    # The next call gets a room started afresh from the file, not the one that failed
    cell = await ok("get_notebook_cell", pathInProject="n.ipynb", cellId=inserted["cellId"])
    assert cell["source"] == "y = 2"
    assert rooms.room("n.ipynb") is not failures[0]
    assert rooms.room("n.ipynb").ready
    # It closes as any other, once unused
    await rooms.closed("n.ipynb")
