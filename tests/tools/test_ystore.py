"""jupyter-collaboration keeps the shared documents' updates in files unless the user chose a
store (``jupyter_mcp/lab/ystore.py``): its SQLite store stalled the whole server for 5 s at a
time under agents running cells in their own notebooks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from code_notebook import write_code_notebook
from live_documents import collaboration_saves_done, scratch_server_config
from notebook_files import answer_of, on_disk
from server_configs import collaboration_installed

pytestmark = pytest.mark.skipif(
    not collaboration_installed(), reason="jupyter-collaboration is not installed"
)


@pytest.fixture
def collaboration() -> bool:
    return True


@pytest.fixture(params=["default", "configured"])
def store_choice(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def jp_server_config(
    store_choice: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    config = scratch_server_config(True, tmp_path, monkeypatch)
    if store_choice == "configured":  # the user's own choice, as a config file gives it
        config["YDocExtension"]["ystore_class"] = "jupyter_server_ydoc.stores.SQLiteYStore"
    return config


async def test_shared_documents_keep_their_updates_in_files_unless_a_store_was_chosen(
    connect: Any, jp_root_dir: Path, jp_serverapp: Any, tmp_path: Path, store_choice: str
) -> None:
    from jupyter_mcp.lab.live_notebooks import collaboration
    from jupyter_mcp.lab.ystore import PREFIX

    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1")
    async with connect() as client:
        for n in range(3):
            await answer_of(
                client, "insert_notebook_cell", pathInProject="n.ipynb", source=f"y = {n}"
            )
    await on_disk(path, lambda nb: len(nb.cells) == 4)
    await collaboration_saves_done()
    rooms = [r for r in collaboration(jp_serverapp).ywebsocket_server.rooms.values() if r.ystore]
    assert len(rooms) == 1
    ystore = rooms[0].ystore
    # Every change is in the store, which reads back
    updates = [update async for update in ystore.read()]
    assert len(updates) >= 3
    store_folder = tmp_path / "collaboration"  # the server's working folder too
    if store_choice == "configured":
        assert type(ystore).__name__ == "SQLiteYStore"
        return
    # By default: one file per document in a folder of this server's, no SQLite database
    from jupyter_server_ydoc.stores import TempFileYStore

    assert isinstance(ystore, TempFileYStore)
    assert not [p.name for p in store_folder.iterdir() if "ystore" in p.name]
    assert Path(ystore.path).is_file() and Path(ystore.path).parent.name.startswith(PREFIX)
