"""Where jupyter-collaboration keeps a shared document's updates: files, not its SQLite store.

jupyter-collaboration writes every update of a shared document to its store
(``YDocExtension.ystore_class``), by default ``SQLiteYStore``: one database file for every
document, one connection per document, each write a transaction held across several thread
hops of the server's loop. Under agents running cells in their own notebooks (bench_agents:
10 notebooks, each update a write) the connections wait for each other's write lock in their
threads (SQLite's busy handler, up to 5 s), and the garbage collector, freeing on the loop a
cursor of one of those connections (left in a reference cycle), waits for that connection
with the interpreter lock held: nothing in the server ran for 4.5-5.8 s, once every 10-15 s
(py-spy: ``cursor_dealloc`` → ``sqlite3_reset`` → ``pthread_mutex_lock`` under
``gc_collect_main`` on the main thread, six worker threads in ``sqlite3InvokeBusyHandler``).
The user's folder listing, some 400 loop turns long, met one of them nearly every time.

Unless the user chose a store, the documents' updates go to jupyter-collaboration's own
``TempFileYStore`` (one file per document, no lock shared between documents), in a folder of
this server's that is removed when the process ends. That is safe for the user's data: the
notebook's file is what holds it (the room saves the document there about a second after
each change), and a room that starts takes the file's content over a store that differs from
it (jupyter_server_ydoc 3.0.4, ``rooms.py`` lines 160-180); what is given up is the updates'
history across a server restart, which only the document timeline shows. A store the user
configured (``--YDocExtension.ystore_class``, a config file) is left as it is.

That store writes each update as three records (the update, its metadata, its time), each its
own write with a thread hop between, and a room that stops cancels the writes it has in
flight. A write cancelled between its records leaves the file one record short, and every
later read of it pairs the records wrongly ("unpack requires a buffer of 8 bytes"): the
notebook's room then fails to start for the rest of the server's life, for the agents and for
every JupyterLab window (a 10 min soak: 100 failed starts, each call falling back to the
file). Our store writes an update's three records at once, and a write that has begun is
finished even if its room stops.
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import struct
import tempfile
import time
from typing import Any

import anyio

#: The folder prefix of the stores' files (under the system's temporary folder).
PREFIX = "jupyter_mcp_ystore_"


def prefer_file_store(collaboration_app: Any) -> type | None:
    """Have ``collaboration_app`` (jupyter-collaboration's extension, linked but not loaded
    yet) keep documents' updates in files; returns the class it now uses, or None when it was
    left as it is (a store the user configured, a jupyter-collaboration without that store, or
    one already started)."""
    serverapp = getattr(collaboration_app, "serverapp", None)
    for config in (collaboration_app.config, getattr(serverapp, "config", None) or {}):
        if "ystore_class" in config.get("YDocExtension", {}):
            return None
    if getattr(collaboration_app, "ywebsocket_server", None) is not None:
        return None
    try:
        from jupyter_server_ydoc.stores import TempFileYStore
    except ImportError:
        return None
    store = _file_store(TempFileYStore)
    collaboration_app.ystore_class = store
    return store


_made: dict[type, type] = {}


def _file_store(base: type) -> type:
    """A subclass of ``base`` with a folder of its own, removed when the process ends."""
    made = _made.get(base)
    if made is None:

        class FileYStore(base):
            """jupyter-collaboration's ``TempFileYStore`` in a folder of this server's."""

            prefix_dir = PREFIX
            base_dir = None

            def make_directory(self) -> None:
                folder = type(self).base_dir = tempfile.mkdtemp(prefix=PREFIX)
                atexit.register(_remove, folder)

            async def write(self, data: bytes) -> None:
                """The update, its metadata and its time appended in one write, in the
                format pycrdt's ``FileYStore.read`` reads, and not cut short by a cancel
                (see the module's docstring)."""
                from pycrdt import write_var_uint

                with anyio.CancelScope(shield=True):
                    async with self.lock:
                        await anyio.Path(self.path).parent.mkdir(parents=True, exist_ok=True)
                        await self.check_version()
                        metadata = await self.get_metadata()
                        stamp = struct.pack("<d", time.time())
                        record = b"".join(
                            write_var_uint(len(part)) + part for part in (data, metadata, stamp)
                        )
                        async with await anyio.open_file(self.path, "ab") as f:
                            await f.write(record)

        made = _made[base] = FileYStore
    return made


def _remove(folder: str) -> None:
    with contextlib.suppress(OSError):
        shutil.rmtree(folder)
