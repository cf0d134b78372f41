"""Rooms of shared documents that tools opened: closed once nobody uses them.

jupyter-collaboration (jupyter_server_ydoc 3.0.4) closes a document's room only from its
websocket handler: when the last window leaves, ``YDocWebSocketHandler.on_close`` starts
``_clean_room``, which waits ``document_cleanup_delay`` (60 s by default, None: never) and then
deletes the room and, when no other room uses it, the file's loader. A room a tool opens with
``get_document(create=True)`` never has a window client, so nothing closed it: every notebook an
agent ever read, edited or ran kept, for the server's whole life, its document with its
history (pycrdt's, in Rust memory), its store, its room's tasks and its loader polling the file.

:class:`AgentRooms` closes such a room the way collaboration closes a window's, after the same
delay, once all of these hold:

- no window client is in it: collaboration's own cleaning takes over when the last one leaves;
- no live document of ours holds it: a :class:`~jupyter_mcp.lab.live_notebooks.SharedNotebook`
  holds its room for as long as it lives, which is as long as the tool call that opened it, or
  the run that writes a cell's outputs into it, keeps it (``kernels/runner.py`` lets go of the
  document when the run ends). While one does, collaboration's own cleaning is called off too
  (a window that leaves mid-run would otherwise close the room under the run's outputs);
- its last change is saved: ``DocumentRoom.stop`` cancels a save that is still waiting its
  ``document_save_delay``, which would lose the edits since the previous save, so the close waits
  for it. With autosave off (``document_save_delay`` None) nothing saves an agent's edits, so the
  room is never closed;
- its last save did not fail: collaboration logs a failed save (``Error saving file``, as when
  its ``aget`` meets a cell deleted mid-read) and leaves the edits in the room until the next
  change saves them. Before closing such a room a save is asked for again; while saves fail, it
  stays open and the close is tried again after the delay.

A resource subscription does not keep a room open: ``SharedDocuments``
(``resources/changes.py``) observes a document while its room is open and follows collaboration's
"clean" and "initialize" events, which the close here emits as collaboration's does, and the
file watcher sees the file in between. A subscription lasts as long as a client's session;
keeping its notebooks' rooms that long would keep their histories that long.

A tool that opens a closed notebook again gets a fresh room, loaded from the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from collections.abc import Iterator
from typing import Any

#: jupyter-collaboration's event schemas: its rooms (initialize, save, clean) and its clients
#: (join, leave).
COLLABORATION_EVENTS = "https://schema.jupyter.org/jupyter_collaboration/session/v1"
AWARENESS_EVENTS = "https://schema.jupyter.org/jupyter_collaboration/awareness/v1"
#: jupyter_server's contents events (a file saved, renamed, copied, deleted through the server).
CONTENTS_EVENTS = "https://events.jupyter.org/jupyter_server/contents_service/v1"
#: The contents actions after which jupyter_server_fileid may name a path with another id.
_ID_CHANGING_ACTIONS = ("rename", "copy", "delete")
#: The most file ids one server remembers.
_REMEMBERED_IDS = 4096


class AgentRooms:
    """The rooms of the shared documents tools opened on one collaboration extension."""

    def __init__(self, extension: Any, log: Any) -> None:
        self.extension = extension
        self.log = log
        #: room id -> live documents (and opens under way) holding it.
        self._holders: dict[str, int] = {}
        #: room id -> its close, waiting for the delay.
        self._closing: dict[str, asyncio.Task[None]] = {}
        #: The room locks when collaboration's own are not found (see :meth:`_lock`).
        self._own_locks: dict[str, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening = False
        #: room ids whose last save failed (from collaboration's events).
        self._unsaved: set[str] = set()
        #: server path -> jupyter_server_fileid's id for it, while the contents events are
        #: followed (None: they are not, every id is asked for; see :meth:`_file_id`).
        self._file_ids: dict[str, str] | None = None

    # -- what collaboration is configured with -----------------------------------------------

    @property
    def cleanup_delay(self) -> float | None:
        """Seconds an unused room stays open (collaboration's ``document_cleanup_delay``)."""
        delay = getattr(self.extension, "document_cleanup_delay", 60.0)
        if getattr(self.extension, "document_save_delay", 1.0) is None:
            return None  # autosave off: a close would drop what the agents changed
        return delay

    def room_id(self, lab_path: str, *, file_type: str = "notebook") -> str:
        """The id of the room of ``lab_path``, as ``YDocExtension.get_document`` names it."""
        from jupyter_server_ydoc.utils import encode_file_path, room_id_from_encoded_path

        file_id = self._file_id(lab_path)
        file_format = "json" if file_type == "notebook" else "text"
        return room_id_from_encoded_path(encode_file_path(file_format, file_type, file_id))

    def _file_id(self, lab_path: str) -> str:
        """jupyter_server_fileid's id of ``lab_path`` (JupyterLab's and collaboration's rooms
        are named by it), remembered where that is safe.

        The manager's ``index`` is an SQLite query (an insert and a sync to disk for a new
        path) on the event loop, whose connection no other thread may use. Its default
        manager, ``ArbitraryFileIdManager``, names a path by the database alone: the id of a
        path changes only when its own listener of the contents events moves, copies or
        deletes rows (a file renamed, copied or deleted through the server); a move, an edit
        or a checkout made outside the server changes nothing it answers. Those events drop
        what is remembered (:meth:`_contents_event`). Any other manager (the
        ``LocalFileIdManager`` follows files moved outside the server by their inode) is
        asked every time. The events are this server's: a second server sharing the database
        (fileid keeps it in the user's data folder) that renames a notebook of this root is
        not followed until this server renames, copies or deletes something itself.
        """
        manager = self.extension.serverapp.web_app.settings["file_id_manager"]
        self._listen()
        known = self._file_ids if _names_by_path_alone(manager) else None
        if known is not None and lab_path in known:
            return known[lab_path]
        file_id = str(manager.index(lab_path))
        if known is not None:
            if len(known) >= _REMEMBERED_IDS:  # a bound, for a server whose agents open many
                known.clear()
            known[lab_path] = file_id
        return file_id

    async def _contents_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        # jupyter_events calls listeners with these keywords; nothing may escape from here.
        try:
            if data.get("action") not in _ID_CHANGING_ACTIONS or self._file_ids is None:
                return
            # fileid changes its rows in a listener of its own, a task of the same event,
            # whose turn may come after this one: what is remembered is dropped now, and
            # again once that task has had its turn (an id asked for in between is the one
            # fileid gave before its change).
            self._file_ids.clear()
            await asyncio.sleep(0)
            self._file_ids.clear()
        except Exception:
            self.log.exception("jupyter_mcp: a contents event was not followed")

    def _room(self, room_id: str) -> Any:
        server = getattr(self.extension, "ywebsocket_server", None)
        return None if server is None else server.rooms.get(room_id)

    def open_rooms(self) -> int:
        """How many document rooms collaboration has open now (windows' and tools')."""
        server = getattr(self.extension, "ywebsocket_server", None)
        return 0 if server is None else sum(1 for r in server.rooms.values() if _is_document(r))

    # -- holding -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def opening(self, room_id: str) -> Iterator[None]:
        """Hold ``room_id`` while a tool gets its document: the close cannot slip in between
        ``get_document`` handing the document out and :meth:`hold` being called with it."""
        self._take(room_id)
        try:
            yield
        finally:
            self._let_go(room_id)

    def hold(self, holder: object, room_id: str) -> None:
        """Keep ``room_id`` open for as long as ``holder`` (a live document of ours) lives."""
        self._take(room_id)
        loop = self._loop
        assert loop is not None

        def collected() -> None:
            # The collector may run in any thread (a tool's worker, say): back to the loop.
            with contextlib.suppress(RuntimeError):  # the loop closed: nothing left to close
                loop.call_soon_threadsafe(self._let_go, room_id)

        weakref.finalize(holder, collected)

    def held(self, room_id: str) -> bool:
        """Whether a live document of ours holds ``room_id``."""
        return self._holders.get(room_id, 0) > 0

    def _take(self, room_id: str) -> None:
        self._loop = asyncio.get_running_loop()
        self._listen()
        self._holders[room_id] = self._holders.get(room_id, 0) + 1
        closing = self._closing.pop(room_id, None)
        if closing is not None:
            closing.cancel()
        self._call_off_cleaning(room_id)

    def _let_go(self, room_id: str) -> None:
        left = self._holders.get(room_id, 0) - 1
        if left > 0:
            self._holders[room_id] = left
            return
        self._holders.pop(room_id, None)
        delay = self.cleanup_delay
        if delay is None or room_id in self._closing or self._loop is None:
            return
        # In a context of its own: the last holder may go in a tool call's (a collection
        # there), and the task would keep that call's context until the room closes.
        task = contextvars.Context().run(self._loop.create_task, self._close_later(room_id, delay))
        self._closing[room_id] = task
        task.add_done_callback(lambda done: self._forget_close(room_id, done))

    def _forget_close(self, room_id: str, task: asyncio.Task[None]) -> None:
        if self._closing.get(room_id) is task:
            del self._closing[room_id]

    def _call_off_cleaning(self, room_id: str) -> None:
        """Cancel collaboration's own close of ``room_id`` (a window left it) while it is held:
        its task would delete the room under our document after its delay. Ours closes it
        once it is let go."""
        room = self._room(room_id)
        cleaner = getattr(room, "cleaner", None)
        if cleaner is not None and not cleaner.done():
            cleaner.cancel()

    def _listen(self) -> None:
        if self._listening:
            return
        self._listening = True
        logger = getattr(self.extension.serverapp, "event_logger", None)
        if logger is not None:
            with contextlib.suppress(Exception):  # schema not registered: windows leave untold
                logger.add_listener(schema_id=AWARENESS_EVENTS, listener=self._client_event)
            with contextlib.suppress(Exception):  # schema not registered: failed saves untold
                logger.add_listener(schema_id=COLLABORATION_EVENTS, listener=self._room_event)
            with contextlib.suppress(Exception):  # schema not registered: no id remembered
                logger.add_listener(schema_id=CONTENTS_EVENTS, listener=self._contents_event)
                self._file_ids = {}

    async def _client_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        # jupyter_events calls listeners with these keywords; nothing may escape from here.
        try:
            room_id = str(data.get("roomid") or "")
            if data.get("action") == "leave" and self.held(room_id):
                self._call_off_cleaning(room_id)
        except Exception:
            self.log.exception("jupyter_mcp: a collaboration client event was not followed")

    async def _room_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        # DocumentRoom emits "save" when a save wrote the file, and an ERROR event with no
        # action, "Error saving file: …", when it failed (jupyter_server_ydoc 3.0.4).
        try:
            room_id = str(data.get("room") or "")
            if data.get("action") in ("save", "clean"):
                self._unsaved.discard(room_id)
            elif data.get("level") == "ERROR" and str(data.get("msg", "")).startswith(
                "Error saving"
            ):
                self._unsaved.add(room_id)
        except Exception:
            self.log.exception("jupyter_mcp: a collaboration room event was not followed")

    async def forget_failed_start(self, room_id: str) -> None:
        """Take out the room collaboration left registered when it failed to start it.

        ``get_document`` adds a new room to the websocket server before it initializes it,
        and when the initialize fails (the file read in the middle of a write, a cell
        jupyter_ydoc cannot load) it stops the room but leaves it registered. The next
        ``get_document`` then hands out that stopped room: its document lacks what was
        written to the file since (in a soak under load, a cell an agent inserted, which the
        failed call wrote into the file, was "not found" by the next call), nothing saves
        what is changed in it, and closing it stops it a second time (a KeyError in the file
        loader's ``unobserve``). Under the room's lock a registered room that is not ready is
        such a room: every start initializes its room before it lets go of the lock.
        """
        async with self._lock(room_id):
            room = self._room(room_id)
            if room is not None and _is_document(room) and not getattr(room, "ready", True):
                self.extension.ywebsocket_server.rooms.pop(room_id, None)
                self.log.warning(
                    "jupyter_mcp: the shared document %s failed to start; the next use starts "
                    "it again from its file",
                    room_id,
                )

    # -- closing -----------------------------------------------------------------------------

    async def _close_later(self, room_id: str, delay: float) -> None:
        await asyncio.sleep(delay)
        # A tool holding the room again cancels this task; once the close has begun it goes
        # on (it looks again before it deletes anything): a room half stopped would be lost.
        await asyncio.shield(self._close(room_id))

    async def _close(self, room_id: str) -> None:
        try:
            await self.close_if_unused(room_id)
        except Exception:  # the room stays open, as it did before
            self.log.exception("jupyter_mcp: closing the unused shared document %s failed", room_id)

    async def _saved_again(self, room_id: str, room: Any) -> bool:
        """Whether the room's document is in its file: its last save did not fail, or a save
        asked for now succeeds. ``DocumentRoom._save_to_disc`` (private; the save behind
        JupyterLab's Save command) is what asks; without it the room stays open."""
        if room_id not in self._unsaved:
            return True
        save = getattr(room, "_save_to_disc", None)
        saving = save() if callable(save) else None
        if isinstance(saving, asyncio.Future):
            await asyncio.wait({saving})
            # The save's event reaches _room_event in a task of its own, scheduled before the
            # save ended: one turn of the loop lets it run.
            await asyncio.sleep(0)
        if room_id not in self._unsaved:
            return True
        delay = self.cleanup_delay
        self.log.warning(
            "jupyter_mcp: the last save of the unused shared document %s failed; it stays open%s",
            room_id,
            "" if delay is None else f" and its close is tried again in {delay:g} s",
        )
        if delay is not None and self._loop is not None:
            task = contextvars.Context().run(
                self._loop.create_task, self._close_later(room_id, delay)
            )
            self._closing[room_id] = task
            task.add_done_callback(lambda done: self._forget_close(room_id, done))
        return False

    def _lock(self, room_id: str) -> asyncio.Lock:
        # collaboration's room locks (one per room, shared by get_document and its handlers):
        # a private class attribute of YDocExtension; without it, locks of our own keep our
        # closes apart, though not from a window joining at that moment.
        locks = getattr(self.extension, "_room_locks", None)
        if not isinstance(locks, dict):
            locks = self._own_locks
        lock = locks.get(room_id)
        if lock is None:
            lock = locks[room_id] = asyncio.Lock()
        return lock

    def _unused(self, room_id: str, room: Any) -> bool:
        cleaner = getattr(room, "cleaner", None)
        return (
            room is not None
            and self._room(room_id) is room
            and not room.clients  # a window is in it: its leaving starts collaboration's close
            and not self.held(room_id)
            and (cleaner is None or cleaner.done())  # collaboration's own close is under way
        )

    async def close_if_unused(self, room_id: str) -> bool:
        """Close ``room_id`` as collaboration closes a room its last window left, if no window
        and no document of ours is in it; its pending save is waited for first. True when
        it was closed."""
        lock = self._lock(room_id)
        async with lock:
            room = self._room(room_id)
            if not self._unused(room_id, room) or not await _saved(room, self.log):
                return False
            if not self._unused(room_id, room):  # a window or a tool came while it saved
                return False
            if not await self._saved_again(room_id, room):
                return False
            if not self._unused(room_id, room):
                return False
            server = self.extension.ywebsocket_server
            self.log.info("jupyter_mcp: closing the unused shared document %s", room_id)
            await server.delete_room(room=room)
            from jupyter_server_ydoc.utils import decode_file_path

            _, _, file_id = decode_file_path(room_id)
            path = _path_of(self.extension, file_id)
            self._emit(room_id, path, "Room deleted.")
            loaders = getattr(self.extension, "file_loaders", None)
            if loaders is not None and file_id in loaders:
                loader = loaders[file_id]
                if loader.number_of_subscriptions == 0:
                    await loaders.remove(file_id)
                    self._emit(room_id, path, "Loader deleted.")
        locks = getattr(self.extension, "_room_locks", self._own_locks)
        # The lock goes with the room (collaboration deletes it too), unless someone waits for
        # it: a tool opening the notebook again would then make a room under another lock.
        if locks.get(room_id) is lock and not lock.locked() and not getattr(lock, "_waiters", None):
            del locks[room_id]
        return True

    def _emit(self, room_id: str, path: str | None, msg: str) -> None:
        from jupyter_server_ydoc.utils import LogLevel

        logger = getattr(self.extension.serverapp, "event_logger", None)
        if logger is None:
            return
        data = {"level": LogLevel.INFO.value, "room": room_id, "path": path, "action": "clean"}
        data["msg"] = msg
        logger.emit(schema_id=COLLABORATION_EVENTS, data=data)

    def close(self) -> None:
        """Cancel the closes waiting for their delay (the server stops: collaboration's own
        stop deletes every room)."""
        for task in list(self._closing.values()):
            task.cancel()
        self._closing.clear()


def _is_document(room: Any) -> bool:
    try:
        from jupyter_server_ydoc.rooms import DocumentRoom
    except ImportError:
        return False
    return isinstance(room, DocumentRoom)


def _names_by_path_alone(manager: Any) -> bool:
    """Whether ``manager`` answers ``index`` from its database alone, which changes only in
    its listener of the contents events (``ArbitraryFileIdManager``'s own methods)."""
    try:
        from jupyter_server_fileid.manager import ArbitraryFileIdManager
    except ImportError:
        return False
    kind = type(manager)
    return all(
        getattr(kind, name, None) is getattr(ArbitraryFileIdManager, name)
        for name in ("index", "_create", "_normalize_path", "get_handlers_by_action")
    )


def _path_of(extension: Any, file_id: str) -> str | None:
    try:
        path = extension.serverapp.web_app.settings["file_id_manager"].get_path(file_id)
    except Exception:  # the file was deleted meanwhile: its id is gone
        return None
    return None if path is None else str(path)


_MISSING = object()


async def _saved(room: Any, log: Any) -> bool:
    """Wait until the room has no save pending; False when that cannot be told.

    ``DocumentRoom._saving_document`` (private, jupyter_server_ydoc 3.0.4) is the save that
    each change (re)starts and that ``DocumentRoom.stop`` cancels when it is still waiting: a
    room without it is left open rather than maybe closed with edits unsaved.
    """
    while True:
        saving: Any = getattr(room, "_saving_document", _MISSING)
        if saving is _MISSING:
            log.warning(
                "jupyter_mcp: this jupyter-collaboration's rooms do not show their pending "
                "save; the shared documents of tools stay open"
            )
            return False
        if saving is None or saving.done():
            return True
        # A change made meanwhile replaces the task (cancelling this one): look again.
        await asyncio.wait({saving})
