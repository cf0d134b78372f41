"""Where changes of the project come from, for the resources that are watched.

- :class:`FileWatcher`: files changed on disk (a save in JupyterLab, an editor outside, a
  ``git checkout``), through inotify on the folders of the watched files (stat checks where
  inotify is missing);
- :class:`WriteLog`: which session's tool call wrote a file, so that its own writes are told
  apart from everyone else's;
- :class:`SharedDocuments`: the shared documents of jupyter-collaboration, observed while
  their rooms are open (every keystroke of every window reaches them);
- :class:`KernelActivity`: the executions of a kernel (the user's cells, the agent's), read
  from its iopub channel.

JupyterLab windows without jupyter-collaboration report their own document changes over the
lab socket (:meth:`~jupyter_mcp.lab.editor.EditorBridge.add_document_listener`). Every
listener here is called on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_core.utils import ensure_async

from ..core.context import Actor, acting
from ..documents.facts import Stamp, is_notebook, stamp_of
from ..kernels import managers
from ..project.events import GONE, IGNORED, Q_OVERFLOW, WATCH_MASK, open_events, pending

log = logging.getLogger("jupyter_mcp.resources")

#: Seconds between stat checks of the watched files where inotify is missing.
POLL_SECONDS = 0.25
#: Seconds an event of a file that a tool call is writing waits for the write to finish.
WRITE_GRACE = 1.0


# ------------------------------------------------------------------------------ own writes


@dataclass
class _Write:
    actor: Actor
    #: The file's stamp once written; None while the write is under way.
    stamp: Stamp | None
    at: float
    #: Whether a shared document's reload from the file was put down to it already.
    claimed: bool = False


class WriteLog:
    """Which session's tool call last wrote each file, and the stamp it left.

    The file tools call :meth:`writing` before they write (from their worker thread, in the
    call's context) and :meth:`written` after; a change seen on disk with that stamp is then
    the session's own. Bounded: the oldest entries go first.
    """

    def __init__(self, entries: int = 4096) -> None:
        self._lock = threading.Lock()
        self._writes: OrderedDict[str, _Write] = OrderedDict()
        self._entries = entries

    def writing(self, path: Path) -> None:
        """A tool call is about to write ``path`` (a no-op outside a session's call)."""
        actor = acting()
        if actor is not None:
            self._put(os.fspath(path), _Write(actor, None, time.monotonic()))

    def written(self, path: Path) -> None:
        """A tool call wrote ``path``: remember the stamp it left."""
        actor = acting()
        if actor is not None:
            self._put(os.fspath(path), _Write(actor, stamp_of(path), time.monotonic()))

    def _put(self, key: str, write: _Write) -> None:
        with self._lock:
            self._writes.pop(key, None)
            self._writes[key] = write
            while len(self._writes) > self._entries:
                self._writes.popitem(last=False)

    def in_progress(self, path: str) -> bool:
        """Whether a tool call is writing ``path`` now (for at most :data:`WRITE_GRACE` s)."""
        with self._lock:
            write = self._writes.get(path)
        return (
            write is not None and write.stamp is None and time.monotonic() - write.at < WRITE_GRACE
        )

    def claim(self, path: str) -> Actor | None:
        """The actor of the tool write that a shared document's reload of ``path`` comes
        from: the last write, if the file still has its stamp and it was recent; each write is
        claimed once (the reload is one change; the user's typing after it is the user's)."""
        stamp = stamp_of(path)
        with self._lock:
            write = self._writes.get(path)
            if (
                write is None
                or write.claimed
                or write.stamp is None
                or write.stamp != stamp
                or time.monotonic() - write.at > 2 * WRITE_GRACE
            ):
                return None
            write.claimed = True
            return write.actor

    def author(self, path: str, stamp: Stamp | None) -> Actor | None:
        """The actor whose write left ``path`` with ``stamp``, or None (someone else's)."""
        with self._lock:
            write = self._writes.get(path)
        if write is None or stamp is None or write.stamp != stamp:
            return None
        return write.actor


# ------------------------------------------------------------------------------ files on disk


class FileWatcher:
    """Tells listeners when watched files change on disk.

    Each watched file's folder gets an inotify watch (shared by the files in it); one thread
    reads the events and hands each file's change to the loop, where the file is stat-ed: a
    change is told with the stamp it left (so :class:`WriteLog` can name its author). Without
    inotify every watched file is stat-ed every :data:`POLL_SECONDS`.
    """

    def __init__(self, writes: WriteLog) -> None:
        self.writes = writes
        self._lock = threading.Lock()
        self._files: dict[str, list[Callable[[Actor | None], None]]] = {}
        self._stamps: dict[str, Stamp | None] = {}
        self._dirs: dict[str, int] = {}  # folder -> watch descriptor
        self._wds: dict[int, str] = {}
        self._lost: set[str] = set()  # folders whose watch went (deleted): tried again
        self._events: Any = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._poller: asyncio.Task[None] | None = None

    @property
    def uses_events(self) -> bool:
        """Whether inotify tells of the changes (else stat checks do)."""
        return self._events is not None

    def watch(self, path: Path, changed: Callable[[Actor | None], None]) -> Callable[[], None]:
        """Tell ``changed`` (with the author, when a session's call wrote it) of every change of
        the file at ``path`` (an absolute real path; it need not exist yet)."""
        self._loop = asyncio.get_running_loop()
        key = os.fspath(path)
        with self._lock:
            listeners = self._files.setdefault(key, [])
            listeners.append(changed)
            first = len(listeners) == 1
        if first:
            self._stamps[key] = stamp_of(key)
            self._start()
            self._watch_dir(os.path.dirname(key))

        def stop() -> None:
            with self._lock:
                found = self._files.get(key)
                if found is None or changed not in found:
                    return
                found.remove(changed)
                if found:
                    return
                del self._files[key]
                self._stamps.pop(key, None)
                folder = os.path.dirname(key)
                still = any(os.path.dirname(f) == folder for f in self._files)
            if not still:
                self._unwatch_dir(folder)

        return stop

    def close(self) -> None:
        """Stop watching everything."""
        self._closed = True
        if self._poller is not None:
            self._poller.cancel()
        events, self._events = self._events, None
        if events is not None:
            with contextlib.suppress(OSError):
                events.close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    # -- inotify ---------------------------------------------------------------------------

    def _start(self) -> None:
        if self._closed or self._thread is not None or self._poller is not None:
            return
        try:
            self._events = open_events()
        except OSError as e:
            log.info("resource subscriptions: no file events (%s); using stat checks", e)
            self._poller = asyncio.get_running_loop().create_task(self._poll())
            return
        self._thread = threading.Thread(
            target=self._read, name="jupyter-mcp-file-events", daemon=True
        )
        self._thread.start()

    def _watch_dir(self, folder: str) -> None:
        events = self._events
        if events is None:
            return
        with self._lock:
            if folder in self._dirs:
                return
            try:
                wd = events.add_watch(folder, WATCH_MASK)
            except OSError:
                self._lost.add(folder)  # not there (yet): looked for again every second
                return
            self._lost.discard(folder)
            self._dirs[folder] = wd
            self._wds[wd] = folder

    def _unwatch_dir(self, folder: str) -> None:
        with self._lock:
            self._lost.discard(folder)
            wd = self._dirs.pop(folder, None)
            if wd is None:
                return
            self._wds.pop(wd, None)
            events = self._events
        if events is not None:
            with contextlib.suppress(OSError):
                events.rm_watch(wd)

    def _read(self) -> None:
        last_retry = time.monotonic()
        while not self._closed:
            events = self._events
            if events is None:
                return
            try:
                batch = pending(events, timeout=0.5)
            except (OSError, ValueError):  # closed under us: the server stops
                return
            touched: set[str] = set()
            for wd, mask, name in batch:
                with self._lock:
                    folder = self._wds.get(wd)
                if mask & Q_OVERFLOW:
                    with self._lock:
                        touched.update(self._files)
                    continue
                if folder is None:
                    continue
                if mask & (IGNORED | GONE):
                    with self._lock:
                        self._wds.pop(wd, None)
                        self._dirs.pop(folder, None)
                        self._lost.add(folder)
                        touched.update(f for f in self._files if os.path.dirname(f) == folder)
                    continue
                touched.add(os.path.join(folder, name))
            now = time.monotonic()
            if now - last_retry >= 1.0:
                last_retry = now
                with self._lock:
                    lost = list(self._lost)
                for folder in lost:
                    self._watch_dir(folder)
                    if folder in self._dirs:  # back: what it holds may have changed meanwhile
                        with self._lock:
                            touched.update(f for f in self._files if os.path.dirname(f) == folder)
            with self._lock:
                wanted = [path for path in touched if path in self._files]
            loop = self._loop
            if wanted and loop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(self._changed_all, wanted)

    # -- without inotify -------------------------------------------------------------------

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            with self._lock:
                watched = list(self._files)
            changed = [p for p in watched if stamp_of(p) != self._stamps.get(p)]
            if changed:
                self._changed_all(changed)

    # -- on the loop -----------------------------------------------------------------------

    def _changed_all(self, paths: list[str]) -> None:
        for path in paths:
            self._changed(path)

    def _changed(self, path: str, waited: float = 0.0) -> None:
        if self._closed or path not in self._files:
            return
        if self.writes.in_progress(path) and waited < WRITE_GRACE:
            # A tool call is replacing the file: tell the change once its stamp is known.
            assert self._loop is not None
            self._loop.call_later(0.02, self._changed, path, waited + 0.02)
            return
        stamp = stamp_of(path)
        if stamp == self._stamps.get(path, ()):
            return  # an event that changed nothing the stamp shows (chmod, an empty write)
        self._stamps[path] = stamp
        author = self.writes.author(path, stamp)
        for listener in list(self._files.get(path, ())):
            try:
                listener(author)
            except Exception:  # one listener must not keep the others from hearing
                log.exception("resource subscriptions: a file listener failed")


# ------------------------------------------------------------------------------ shared documents

#: The event schema of jupyter-collaboration's rooms (a room initialized, cleaned, saved).
COLLABORATION_EVENTS = "https://schema.jupyter.org/jupyter_collaboration/session/v1"


class SharedDocuments:
    """Observes the shared documents (jupyter-collaboration) of the watched files.

    A document is observed while its room is open: when a window opens the file, or a tool
    changes the notebook, the room starts ("initialize" event) and its document is observed
    from then on; rooms that close are let go. Every transaction on an observed document (a
    keystroke in any window, a tool's change, a reload from the file) tells the file's
    listeners, with the session whose tool call made it when one did.
    """

    def __init__(
        self,
        serverapp: Any,
        extension: Any,
        writes: WriteLog | None = None,
        real_path: Callable[[str], str] | None = None,
    ) -> None:
        self.serverapp = serverapp
        self.extension = extension
        #: Tool writes of files, which a room reloads from the file (as a change of nobody's).
        self.writes = writes
        self._real_path = real_path
        # api path -> listeners; api path -> (document, subscription)
        self._listeners: dict[str, list[Callable[[Actor | None], None]]] = {}
        self._observed: dict[str, tuple[Any, Any]] = {}
        self._listening = False
        self._tasks: set[asyncio.Task[None]] = set()

    def watch(self, api_path: str, changed: Callable[[Actor | None], None]) -> Callable[[], None]:
        """Tell ``changed`` of every change of the shared document of ``api_path`` (a path as
        the server's contents name it), whenever its room is open."""
        self._listen_for_rooms()
        listeners = self._listeners.setdefault(api_path, [])
        listeners.append(changed)
        if len(listeners) == 1:
            self._attach_soon(api_path)

        def stop() -> None:
            found = self._listeners.get(api_path)
            if found is None or changed not in found:
                return
            found.remove(changed)
            if not found:
                del self._listeners[api_path]
                self._detach(api_path)

        return stop

    def close(self) -> None:
        """Stop observing every document."""
        for api_path in list(self._observed):
            self._detach(api_path)
        self._listeners.clear()
        for task in self._tasks:
            task.cancel()

    def _listen_for_rooms(self) -> None:
        if self._listening:
            return
        self._listening = True
        logger = getattr(self.serverapp, "event_logger", None)
        if logger is not None:
            with contextlib.suppress(Exception):  # the schema not registered: rooms not told
                logger.add_listener(schema_id=COLLABORATION_EVENTS, listener=self._room_event)

    async def _room_event(self, logger: Any, schema_id: str, data: dict[str, Any]) -> None:
        # jupyter_events calls listeners with these keywords, and a listener that raises
        # would fail the room's start: nothing escapes from here.
        try:
            path = str(data.get("path") or "").lstrip("/")
            if path not in self._listeners:
                return
            action = data.get("action")
            if action in ("initialize", "load", "overwrite"):
                await self._attach(path)
            elif action == "clean":
                self._detach(path)
        except Exception:
            log.exception("resource subscriptions: a room event was not followed")

    def opened(self, api_path: str, document: Any) -> None:
        """A tool opened the shared document of ``api_path``: observe it now, before the tool
        changes it (the room's own start is told a moment later)."""
        if api_path in self._listeners:
            self._observe(api_path, document)

    def _attach_soon(self, api_path: str) -> None:
        task = asyncio.get_running_loop().create_task(self._attach(api_path))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _attach(self, api_path: str) -> None:
        notebook = is_notebook(api_path)
        try:
            document = await self.extension.get_document(
                path=api_path,
                content_type="notebook" if notebook else "file",
                file_format="json" if notebook else "text",
                copy=False,
            )
        except Exception:  # no file id yet, a room that failed: nothing to observe now
            log.debug("resource subscriptions: no shared document for %s", api_path, exc_info=True)
            return
        if document is None or api_path not in self._listeners:
            return
        self._observe(api_path, document)

    def _observe(self, api_path: str, document: Any) -> None:
        observed = self._observed.get(api_path)
        if observed is not None:
            if observed[0] is document:
                return
            self._detach(api_path)
        try:
            subscription = document.ydoc.observe(lambda _event: self._changed(api_path))
        except AttributeError:  # not a pycrdt-backed document
            return
        self._observed[api_path] = (document, subscription)

    def _detach(self, api_path: str) -> None:
        observed = self._observed.pop(api_path, None)
        if observed is not None:
            with contextlib.suppress(Exception):
                observed[0].ydoc.unobserve(observed[1])

    def observing(self, api_path: str) -> bool:
        """Whether the shared document of ``api_path`` is observed (its room is open)."""
        return api_path in self._observed

    def _changed(self, api_path: str) -> None:
        # Called inside the document's transaction, in the context of whoever made it: a tool
        # call's change runs with that call's actor. A reload from the file a tool wrote runs
        # in the room's own task: it is put down to the writer.
        author = acting()
        if author is None and self.writes is not None and self._real_path is not None:
            author = self.writes.claim(self._real_path(api_path))
        for listener in list(self._listeners.get(api_path, ())):
            try:
                listener(author)
            except Exception:
                log.exception("resource subscriptions: a shared-document listener failed")


# ------------------------------------------------------------------------------ kernels


class KernelActivity:
    """Tells a listener each time an execution ends in a kernel (its variables may differ).

    A client of the kernel's iopub channel (its own, reading only) sees each non-silent
    execution's input broadcast and the idle status that ends it; silent requests (the
    variable and completion queries) broadcast no input and so are not told. A restart is told
    too: the kernel's variables are gone.
    """

    def __init__(self, manager: Any, changed: Callable[[], None]) -> None:
        self.manager = manager
        self.changed = changed
        self._task = asyncio.get_running_loop().create_task(self._run())

    def stop(self) -> None:
        """Stop listening."""
        self._task.cancel()

    async def _run(self) -> None:
        client = managers.new_client(self.manager, own_session=True)
        try:
            await ensure_async(
                client.start_channels(shell=False, iopub=True, stdin=False, hb=False, control=False)
            )
            running: set[str] = set()
            # A kernel starting says "starting" once it is up: a change only when it had been
            # up (busy or idle) before, so a restart (its variables gone), not the first start.
            up = False
            while True:
                try:
                    msg = await client.get_iopub_msg(timeout=1)
                except Exception:  # queue.Empty on a timeout: nothing happened
                    continue
                kind = msg.get("msg_type")
                parent = (msg.get("parent_header") or {}).get("msg_id")
                if kind == "execute_input" and parent:
                    running.add(parent)
                elif kind == "status":
                    state = (msg.get("content") or {}).get("execution_state")
                    if state == "idle" and parent in running:
                        running.discard(parent)
                        self.changed()
                    elif state == "starting" and up:
                        running.clear()
                        up = False
                        self.changed()
                    elif state in ("busy", "idle"):
                        up = True
                if len(running) > 1000:  # inputs whose end was never seen (a dead kernel)
                    running.clear()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.debug("resource subscriptions: kernel activity stopped", exc_info=True)
        finally:
            managers.disconnect(client)
