"""The file store of shared documents' updates that jupyter_mcp gives jupyter-collaboration
(``jupyter_mcp/lab/ystore.py``) keeps its file readable when a room stops mid-write."""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("jupyter_server_ydoc")


@pytest.mark.parametrize("library_store", [False, True], ids=["ours", "library"])
async def test_a_room_that_stops_mid_write_leaves_its_store_readable(library_store: bool) -> None:
    # A room that stops cancels its task group, and with it the store writes in flight
    # (pycrdt-websocket's YRoom.stop). jupyter-collaboration's own file store writes an update
    # as three records, and a cancel between them left the file a record short: every later
    # read failed ("unpack requires a buffer of 8 bytes"), and the notebook's room with it,
    # for the rest of the server's life (a 10 min soak: 100 failed starts).
    from jupyter_server_ydoc.stores import TempFileYStore

    from jupyter_mcp.lab.ystore import _file_store

    store = _file_store(TempFileYStore)(path=f"json:notebook:mid-write-{library_store}")
    if library_store:  # what the library's own write does, to show the test can fail
        store.write = TempFileYStore.write.__get__(store)  # type: ignore[method-assign]
    for n in range(60):
        async with anyio.create_task_group() as rooms_tasks:
            rooms_tasks.start_soon(store.write, b"update %d" % n)
            # Stopped at every stage of the write: before it began, in its thread hops, after.
            await anyio.sleep(0.0003 * (n % 10))
            rooms_tasks.cancel_scope.cancel()
    if library_store:
        with pytest.raises(Exception, match="unpack requires a buffer"):
            _ = [update async for update in store.read()]
        return
    updates = [update async for update, _, _ in store.read()]
    # Every write that began was finished, each update is there whole, in order.
    numbers = [int(update.split()[1]) for update in updates]
    assert numbers == sorted(numbers) and len(numbers) >= 10
