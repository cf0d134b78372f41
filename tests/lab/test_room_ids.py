"""The room a tool opens is the one a JupyterLab window opens: named by jupyter_server_fileid's
id of the notebook, whatever was renamed, moved, deleted, re-created or checked out since.

lab/rooms.py remembers the ids the default manager (``ArbitraryFileIdManager``) gives, and
forgets them on the server's contents events, the only place that manager changes them; any
other manager is asked every time. Each test compares with what fileid answers itself, as
collaboration's session handler does for a window (``file_id_manager.index(path)``).
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest
from code_notebook import write_code_notebook
from live_documents import scratch_server_config
from server_configs import collaboration_installed

from jupyter_mcp.lab.live_notebooks import collaboration
from jupyter_mcp.lab.rooms import AgentRooms

pytestmark = [
    pytest.mark.skipif(
        not collaboration_installed(), reason="jupyter-collaboration is not installed"
    ),
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

ARBITRARY = "jupyter_server_fileid.manager.ArbitraryFileIdManager"
LOCAL = "jupyter_server_fileid.manager.LocalFileIdManager"


@pytest.fixture(params=[ARBITRARY])
def file_id_manager(request: pytest.FixtureRequest) -> str:
    """The file id manager class the server is configured with (fileid's default here)."""
    return str(request.param)


@pytest.fixture
def jp_server_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_id_manager: str
) -> dict[str, Any]:
    config = scratch_server_config(True, tmp_path, monkeypatch)
    config["FileIdExtension"] = {"file_id_manager_class": file_id_manager}
    return config


@pytest.fixture(name="collaboration")
def _collaboration() -> bool:
    """This folder's fixtures then wait for collaboration's saves before the server stops."""
    return True


class Ids:
    """The rooms of the test server's notebooks, as the tools name them and as fileid does."""

    def __init__(self, jp_serverapp: Any) -> None:
        self.serverapp = jp_serverapp
        self.rooms = AgentRooms(collaboration(jp_serverapp), logging.getLogger("test"))

    def ours(self, lab_path: str) -> str:
        return self.rooms.room_id(lab_path)

    def fileids(self, lab_path: str) -> str:
        """The room a window opening ``lab_path`` joins."""
        from jupyter_server_ydoc.utils import encode_file_path, room_id_from_encoded_path

        manager = self.serverapp.web_app.settings["file_id_manager"]
        encoded = encode_file_path("json", "notebook", manager.index(lab_path))
        return str(room_id_from_encoded_path(encoded))

    async def events_followed(self) -> None:
        """Every listener of the events emitted so far has run (fileid's and ours)."""
        await self.serverapp.event_logger.gather_listeners()


@pytest.fixture
def ids(jp_serverapp: Any) -> Ids:
    return Ids(jp_serverapp)


async def _new_notebook(jp_serverapp: Any, lab_path: str) -> None:
    """A notebook saved through the server, as JupyterLab's "New Notebook" saves one."""
    model = {"type": "notebook", "format": "json", "content": nbformat.v4.new_notebook()}
    await jp_serverapp.contents_manager.save(model, lab_path)


async def test_a_notebook_renamed_in_the_file_browser_keeps_its_room_and_its_old_name_gets_another(
    jp_serverapp: Any, ids: Ids
) -> None:
    await jp_serverapp.contents_manager.new(path="sub", model={"type": "directory"})
    await _new_notebook(jp_serverapp, "a.ipynb")
    first = ids.ours("a.ipynb")
    assert first == ids.fileids("a.ipynb")
    # Renamed in place, then moved into a folder, as the file browser does both
    await jp_serverapp.contents_manager.rename("a.ipynb", "b.ipynb")
    await ids.events_followed()
    assert ids.ours("b.ipynb") == first == ids.fileids("b.ipynb")
    await jp_serverapp.contents_manager.rename("b.ipynb", "sub/b.ipynb")
    await ids.events_followed()
    assert ids.ours("sub/b.ipynb") == first
    # A new notebook at the old names is another notebook, with a room of its own
    for old in ("a.ipynb", "b.ipynb"):
        await _new_notebook(jp_serverapp, old)
        assert ids.ours(old) == ids.fileids(old) != first


async def test_a_notebook_whose_folder_was_renamed_keeps_its_room(
    jp_serverapp: Any, ids: Ids
) -> None:
    await jp_serverapp.contents_manager.new(path="old", model={"type": "directory"})
    await _new_notebook(jp_serverapp, "old/n.ipynb")
    first = ids.ours("old/n.ipynb")
    # fileid moves the ids below a folder it has an id for (one it never named, it leaves)
    jp_serverapp.web_app.settings["file_id_manager"].index("old")
    await jp_serverapp.contents_manager.rename("old", "new")
    await ids.events_followed()
    assert ids.ours("new/n.ipynb") == first == ids.fileids("new/n.ipynb")
    await jp_serverapp.contents_manager.new(path="old", model={"type": "directory"})
    await _new_notebook(jp_serverapp, "old/n.ipynb")
    assert ids.ours("old/n.ipynb") == ids.fileids("old/n.ipynb") != first


async def test_a_notebook_deleted_and_made_again_gets_a_new_room(
    jp_serverapp: Any, ids: Ids
) -> None:
    await _new_notebook(jp_serverapp, "d.ipynb")
    first = ids.ours("d.ipynb")
    await jp_serverapp.contents_manager.delete("d.ipynb")
    await ids.events_followed()
    await _new_notebook(jp_serverapp, "d.ipynb")
    assert ids.ours("d.ipynb") == ids.fileids("d.ipynb") != first


@pytest.mark.parametrize("file_id_manager", [ARBITRARY, LOCAL], indirect=True)
async def test_a_move_or_checkout_outside_the_server_is_named_as_fileid_names_it(
    jp_serverapp: Any, jp_root_dir: Path, ids: Ids, file_id_manager: str
) -> None:
    # LocalFileIdManager follows a file moved in a terminal by its inode (the id goes with
    # it); ArbitraryFileIdManager keeps the id with the path. The tools name it either way.
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(jp_root_dir)]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    write_code_notebook(jp_root_dir, "m.ipynb", "x = 1")
    first = ids.ours("m.ipynb")
    os.rename(jp_root_dir / "m.ipynb", jp_root_dir / "moved.ipynb")  # mv in a terminal
    write_code_notebook(jp_root_dir, "m.ipynb", "x = 2")
    assert ids.ours("moved.ipynb") == ids.fileids("moved.ipynb")
    assert ids.ours("m.ipynb") == ids.fileids("m.ipynb")
    if file_id_manager == LOCAL:
        assert ids.ours("moved.ipynb") == first != ids.ours("m.ipynb")
    # A checkout that rewrites the notebook (a new file in its place)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "checkout", "-qb", "other"], check=True)
    write_code_notebook(jp_root_dir, "m.ipynb", "x = 3")
    subprocess.run([*git, "commit", "-qam", "two"], check=True)
    assert ids.ours("m.ipynb") == ids.fileids("m.ipynb")
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    assert ids.ours("m.ipynb") == ids.fileids("m.ipynb")
    assert ids.ours("moved.ipynb") == ids.fileids("moved.ipynb")


async def test_a_tool_follows_a_symlink_that_was_pointed_elsewhere(
    ok: Any, jp_serverapp: Any, jp_root_dir: Path, ids: Ids
) -> None:
    write_code_notebook(jp_root_dir, "a.ipynb", "'in a'", ids=True)
    write_code_notebook(jp_root_dir, "b.ipynb", "'in b'", ids=True)
    link = jp_root_dir / "link.ipynb"
    link.symlink_to("a.ipynb")
    cell = await ok("get_notebook_cell", pathInProject="link.ipynb", cellId="c0")
    assert cell["source"] == "'in a'"
    link.unlink()
    link.symlink_to("b.ipynb")
    cell = await ok("get_notebook_cell", pathInProject="link.ipynb", cellId="c0")
    assert cell["source"] == "'in b'"
    server = collaboration(jp_serverapp).ywebsocket_server
    assert ids.fileids("b.ipynb") in server.rooms, "the tool opened b's own room"
