"""The editor link's state: which JupyterLab windows are connected and what they show.

Each JupyterLab window (browser tab) keeps a WebSocket to the server (see
:mod:`jupyter_mcp.surfaces.lab_socket`) and reports the document it shows in front (path,
notebook or file, selection, unsaved edits) and the documents it has open. "The editor" of
the editor tools is the active document of the window that had focus most recently. The server
sends a window requests (read the text, replace the selection, open a file, run a command, ask
for approval …) and awaits the answer with a timeout.

This module knows nothing of tornado: a window is an id and a ``send(message)`` callable that
must be called on the event loop. Everything that file tools call from worker threads
(:meth:`EditorBridge.before_file_write`, :meth:`EditorBridge.on_file_written`,
:meth:`EditorBridge.state`) reads a snapshot under a lock and hands sends to the loop. The app
puts the link and those hooks into the services; tools reach it through
:func:`connected_editor`.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.context import Actor, acting, running_task
from ..core.errors import ToolError
from ..core.registry import current_call_id, summarize_arguments
from ..documents.notebook_view import notebook_from_cells, view_of_notebook
from .breakpoint_sync import BreakpointSync
from .protocol import WindowRequests, check_params

if TYPE_CHECKING:
    from ..core.context import ToolContext
    from ..core.registry import Tool
    from ..tasks.store import Task

#: Seconds a window has to answer an editor request.
REQUEST_TIMEOUT = 10.0
#: How many recent tool calls the activity panel of a newly connected window is shown.
ACTIVITY_HISTORY = 100
#: A call still running after this many seconds shows in the activity panel as running (until
#: its end replaces it); quicker calls only show when they end.
RUNNING_AFTER = 0.5
#: Seconds between two updates of a running task's entry (its status message changes often).
TASK_UPDATE_GAP = 1.0
#: Seconds the activity panel's updates are gathered before they go to the windows, in one
#: message per window holding the last state of each entry. Each call's outcome was a message
#: to every window of its own: ~87 a second under 50 agents, whose socket writes held the
#: event loop every agent and the user wait for.
ACTIVITY_GATHER = 0.05

Send = Callable[[dict[str, Any]], None]

#: Requests (and reload notices) whose sender's actor is remembered, to name the author of the
#: document changes a window reports for them.
REMEMBERED_ORIGINS = 1000


class NoWindowError(ToolError):
    """No JupyterLab window is connected, or none shows a document."""


def connected_editor(ctx: ToolContext, refusal: str) -> EditorBridge:
    """The editor link of ``ctx`` with a window connected, else :class:`NoWindowError`.

    ``refusal`` is the error's message: each tool module says what is missing without a window
    (an active editor, actions) and what to do instead.
    """
    bridge = ctx.services.editor  # None outside a server
    if bridge is None or bridge.current() is None:
        raise NoWindowError(refusal)
    return bridge


@dataclass
class Document:
    """A document open in a window, named by its path relative to the server's root."""

    path: str
    type: str  # "file" or "notebook"
    dirty: bool = False

    @classmethod
    def from_message(cls, data: Any) -> Document | None:
        """The document a window described, or None when the description is unusable."""
        if not isinstance(data, dict):
            return None
        path = data.get("path")
        kind = data.get("type")
        if not isinstance(path, str) or not path or kind not in ("file", "notebook"):
            return None
        return cls(path=path.lstrip("/"), type=kind, dirty=bool(data.get("dirty")))


@dataclass(frozen=True)
class DocumentChange:
    """A window reports that a document it shows changed (before it is saved)."""

    #: The document's path as JupyterLab names it (relative to the server's root).
    path: str
    type: str  # "file" or "notebook"
    #: The notebook cells whose source, type, outputs, count or metadata changed, deleted ones
    #: included; None when the window could not tell (a file, a whole reload).
    cells: frozenset[str] | None
    #: Whether the document's text (a file's, a notebook's percent view) may have changed.
    sources: bool
    #: Who made it: the actor of a request or reload notice of ours the window was applying
    #: (a session's tool call), None for the user of the window.
    authors: tuple[Actor | None, ...]


@dataclass
class Window:
    """One connected JupyterLab window (a browser tab)."""

    id: str
    send: Send
    #: Server-side monotonic time of the window's last focus; the largest is "the editor".
    focused_at: float
    active: Document | None = None
    selection: dict[str, Any] | None = None
    open: list[Document] = field(default_factory=list)


class EditorBridge:
    """Connected windows, their documents, and requests to them awaited with a timeout."""

    def __init__(
        self,
        ctx: ToolContext,
        *,
        timeout: float = REQUEST_TIMEOUT,
        history: int = ACTIVITY_HISTORY,
    ) -> None:
        self.ctx = ctx
        self.timeout = timeout
        self._lock = threading.Lock()
        self._windows: dict[str, Window] = {}
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.activity: deque[dict[str, Any]] = deque(maxlen=history)
        # Calls shown as running (by call id, or task id for a call that runs as a task), and
        # the timers that will show the others.
        self._running: dict[int | str, dict[str, Any]] = {}
        self._running_soon: dict[int | str, asyncio.TimerHandle] = {}
        # Running tasks: when each entry was last sent, and the timers of the next updates.
        self._task_sent: dict[str, float] = {}
        self._task_soon: dict[str, asyncio.TimerHandle] = {}
        # Record ids are unique across server restarts: a window never mistakes a new call for
        # one it saw running before.
        self._instance = os.urandom(4).hex()
        self._breakpoints: BreakpointSync | None = None
        # The actors of requests and reload notices sent from a session's tool call, by id.
        self._origins: OrderedDict[int, Actor] = OrderedDict()
        self._document_listeners: list[Callable[[DocumentChange], None]] = []
        self._open_listeners: list[Callable[[], None]] = []
        # The activity entries gathered for each window (by window id), by entry id in the
        # order they were first shown (an update keeps its entry's place); the timer that
        # sends them, and whether one is asked for (from another thread, it is not set yet).
        self._outbox: dict[str, dict[str | int, dict[str, Any]]] = {}
        self._outbox_due = False
        self._outbox_soon: asyncio.TimerHandle | None = None
        self._unnamed = itertools.count()

    # -- wiring ----------------------------------------------------------------------------

    def close(self) -> None:
        """Fail every pending request and forget every window (server shutdown)."""
        with self._lock:
            windows = list(self._windows.values())
            self._windows.clear()
        for window in windows:
            self._fail_pending(window.id, "The server is shutting down")
        for soon in [*self._running_soon.values(), *self._task_soon.values()]:
            soon.cancel()
        self._running_soon.clear()
        self._task_soon.clear()
        if self._outbox_soon is not None:
            self._outbox_soon.cancel()
        with self._lock:
            self._outbox.clear()
            self._outbox_due = False
        if self._breakpoints is not None:
            self._breakpoints.close()
            self._breakpoints = None

    # -- connections (event loop) ------------------------------------------------------------

    def connect(self, window_id: str, send: Send, *, focus_age: float | None = None) -> Window:
        """Register a window; a window that reconnects under its id replaces its old link.

        ``focus_age`` is how many seconds ago the window last had focus, as the window itself
        measured it (so windows on machines with different clocks still compare fairly).
        """
        self._loop = asyncio.get_running_loop()
        now = time.monotonic()
        focused_at = now - max(0.0, focus_age) if focus_age is not None else now
        window = Window(id=window_id, send=send, focused_at=focused_at)
        with self._lock:
            previous = self._windows.get(window_id)
            self._windows[window_id] = window
            # The welcome below shows the entries gathered for a window of this id already.
            self._outbox.pop(window_id, None)
        if previous is not None:
            self._fail_pending(window_id, "The JupyterLab window reconnected before answering")
        # What the panel shows: recent calls and those still running, oldest first.
        shown = sorted([*self.activity, *self._running.values()], key=lambda r: r["at"])
        send({"type": "welcome", "root": str(self.ctx.root_dir), "activity": shown})
        sync = self._breakpoint_sync()
        if sync is not None:
            sync.push(window)
        return window

    def add_document_listener(self, listener: Callable[[DocumentChange], None]) -> None:
        """Tell ``listener`` (on the loop) of every document change a window reports."""
        self._document_listeners.append(listener)

    def add_open_listener(self, listener: Callable[[], None]) -> None:
        """Tell ``listener`` (on the loop) whenever the documents open in the windows may have
        changed (a window opened or closed one, connected or left)."""
        self._open_listeners.append(listener)

    def _tell_open(self) -> None:
        for listener in list(self._open_listeners):
            try:
                listener()
            except Exception:  # a listener must not break the link
                self.ctx.log.exception("jupyter_mcp: an open-documents listener failed")

    def _breakpoint_sync(self) -> BreakpointSync:
        # The breakpoint store is another service; follow it from the first window (on the loop).
        if self._breakpoints is None:
            self._breakpoints = BreakpointSync(
                self.ctx, self.ctx.services.breakpoints, self.broadcast
            )
        return self._breakpoints

    def disconnect(self, window_id: str, send: Send | None = None) -> None:
        """Forget a window (only if ``send`` is still its link, when given)."""
        with self._lock:
            window = self._windows.get(window_id)
            if window is None or (send is not None and window.send != send):
                return
            del self._windows[window_id]
            self._outbox.pop(window_id, None)
        self._fail_pending(window_id, "The JupyterLab window disconnected before answering")
        self._tell_open()

    def receive(self, window_id: str, message: Any) -> None:
        """Handle one message from a window: a state report or the answer to a request."""
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "response":
            self._resolve(window_id, message)
        elif kind == "state":
            self._update_state(window_id, message)
        elif kind == "changed":
            self._document_changed(window_id, message)
        elif kind == "breakpointsChanged":
            sync = self._breakpoint_sync()
            if sync is not None:
                sync.receive(message)

    def _update_state(self, window_id: str, message: dict[str, Any]) -> None:
        with self._lock:
            window = self._windows.get(window_id)
            if window is None:
                return
            if message.get("focus"):
                window.focused_at = time.monotonic()
            if "active" in message:
                window.active = Document.from_message(message["active"])
            if "selection" in message:
                selection = message["selection"]
                window.selection = selection if isinstance(selection, dict) else None
            opened = None
            if isinstance(message.get("open"), list):
                docs = (Document.from_message(d) for d in message["open"])
                opened = [d for d in docs if d is not None]
                before = [(d.path, d.type) for d in window.open]
                window.open = opened
        if opened is not None and [(d.path, d.type) for d in opened] != before:
            self._tell_open()

    def _document_changed(self, window_id: str, message: dict[str, Any]) -> None:
        if window_id not in self._windows or not self._document_listeners:
            return
        doc = Document.from_message({**message, "type": message.get("kind")})
        if doc is None:
            return
        cells = message.get("cells")
        origins = message.get("origins")
        authors: list[Actor | None] = []
        if isinstance(origins, list):
            known = [o for o in origins if isinstance(o, int)]
            with self._lock:
                authors += [self._origins[o] for o in known if o in self._origins]
        if message.get("user") or not authors:
            authors.append(None)
        change = DocumentChange(
            path=doc.path,
            type=doc.type,
            cells=(
                frozenset(c for c in cells if isinstance(c, str))
                if isinstance(cells, list)
                else None
            ),
            sources=bool(message.get("sources", True)),
            authors=tuple(dict.fromkeys(authors)),
        )
        for listener in list(self._document_listeners):
            try:
                listener(change)
            except Exception:
                self.ctx.log.exception("jupyter_mcp: a document listener failed")

    def _remember_origin(self, origin: int) -> None:
        """Remember that the request or notice ``origin`` comes from the acting session."""
        actor = acting()
        if actor is None:
            return
        with self._lock:  # file tools write (and call this) from their worker threads
            self._origins[origin] = actor
            while len(self._origins) > REMEMBERED_ORIGINS:
                self._origins.popitem(last=False)

    # -- queries (any thread) ------------------------------------------------------------------

    def windows(self) -> list[Window]:
        """The connected windows, most recently focused first."""
        with self._lock:
            return sorted(self._windows.values(), key=lambda w: w.focused_at, reverse=True)

    def current(self) -> Window | None:
        """The most recently focused window, or None when none is connected."""
        windows = self.windows()
        return windows[0] if windows else None

    def absolute(self, path: str) -> str:
        """The absolute path of a document path as JupyterLab names it."""
        return str(self.ctx.root_dir / path)

    def state(self) -> dict[str, Any]:
        """``activeFile`` and ``openFiles`` (absolute paths) of the current window."""
        window = self.current()
        if window is None:
            return {"activeFile": "", "openFiles": []}
        with self._lock:
            active = window.active
            opened = list(window.open)
        return {
            "activeFile": self.absolute(active.path) if active else "",
            "openFiles": [self.absolute(d.path) for d in opened],
        }

    def documents_at(self, path: Path) -> list[tuple[Window, Document]]:
        """Every (window, document) pair showing the file at real path ``path``."""
        target = os.path.realpath(path)
        found = []
        with self._lock:
            pairs = [(w, d) for w in self._windows.values() for d in w.open]
            pairs += [(w, w.active) for w in self._windows.values() if w.active is not None]
        seen: set[tuple[str, str]] = set()
        for window, doc in pairs:
            if (window.id, doc.path) in seen:
                continue
            seen.add((window.id, doc.path))
            if os.path.realpath(self.ctx.root_dir / doc.path) == target:
                found.append((window, doc))
        return found

    # -- services for the file tools (worker threads) ----------------------------------------

    def before_file_write(self, path: Path) -> None:
        """Refuse to write a file that has unsaved edits in a JupyterLab window."""
        for _window, doc in self.documents_at(path):
            if doc.dirty:
                raise ToolError(
                    f"{doc.path} has unsaved changes in JupyterLab; save or revert them first "
                    "(or edit it in the editor with replace_current_file_text)"
                )

    def on_file_written(self, path: Path) -> None:
        """Tell each window that shows ``path`` to reload it (windows skip unsaved documents).

        The notice carries an id, which the window reports with the change the reload makes,
        so that the change is known to be the writing session's.
        """
        for window, doc in self.documents_at(path):
            origin = next(self._ids)
            self._remember_origin(origin)
            self._send_threadsafe(window, {"type": "reload", "path": doc.path, "origin": origin})

    def _send_threadsafe(self, window: Window, message: dict[str, Any]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            window.send(message)
        else:
            loop.call_soon_threadsafe(window.send, message)

    # -- requests (event loop) -----------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        window: Window | None = None,
    ) -> Any:
        """Send ``method`` to the current window and return its answer.

        Raises :class:`NoWindowError` when no window is connected, and :class:`ToolError`
        when the window answers with an error, disconnects or does not answer in time.
        ``method`` and ``params`` must be a request of protocol.json (see :meth:`ask`).
        """
        check_params(method, params or {})
        window = window or self.current()
        if window is None:
            raise NoWindowError(
                "No JupyterLab window is connected; open JupyterLab in a browser first"
            )
        loop = asyncio.get_running_loop()
        self._loop = loop
        request_id = next(self._ids)
        self._remember_origin(request_id)
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[request_id] = (window.id, future)
        limit = self.timeout if timeout is None else timeout
        try:
            window.send(
                {"type": "request", "id": request_id, "method": method, "params": params or {}}
            )
            return await asyncio.wait_for(future, limit)
        except asyncio.TimeoutError as e:
            window.send({"type": "cancel", "id": request_id})
            raise ToolError(
                f"The JupyterLab window did not answer within {limit:g} s ({method})"
            ) from e
        finally:
            self._pending.pop(request_id, None)

    def ask(self, *, timeout: float | None = None, window: Window | None = None) -> WindowRequests:
        """The requests of protocol.json, sent to ``window`` (default: the current one)."""
        return WindowRequests(functools.partial(self.request, timeout=timeout, window=window))

    def _resolve(self, window_id: str, message: dict[str, Any]) -> None:
        entry = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if entry is None or entry[0] != window_id or entry[1].done():
            return
        future = entry[1]
        error = message.get("error")
        if error:
            future.set_exception(ToolError(str(error)))
        else:
            future.set_result(message.get("result"))

    def _fail_pending(self, window_id: str, reason: str) -> None:
        for owner, future in list(self._pending.values()):
            if owner == window_id and not future.done():
                future.set_exception(ToolError(reason))

    # -- what the editor tools ask ----------------------------------------------------------

    async def read_active(self) -> dict[str, Any] | None:
        """The active document of the current window: path, type and text (unsaved edits
        included; a notebook as its percent-format view). None when nothing is open."""
        if self.current() is None:
            return None
        answer = await self.ask().read_text()
        if not answer:
            return None
        path = answer.get("path")
        if not isinstance(path, str):
            raise ToolError("The JupyterLab window sent a malformed answer (no path)")
        if answer.get("type") == "notebook":
            nb = notebook_from_cells(answer.get("cells"), answer.get("metadata"))
            text = await asyncio.to_thread(view_of_notebook, nb)
            return {"path": path, "type": "notebook", "text": text, "notebook": nb}
        text = answer.get("text")
        if not isinstance(text, str):
            raise ToolError("The JupyterLab window sent a malformed answer (no text)")
        return {"path": path, "type": "file", "text": text}

    async def approve(self, tool: Tool, arguments: dict[str, Any]) -> bool:
        """Show an approval dialog for a call in the current window; True when approved.

        The services' approver: with no window connected it refuses as
        :meth:`ToolContext.request_approval` does when there is no approver at all.
        """
        timeout = self.ctx.settings.approval_timeout
        try:
            answer = await self.ask(timeout=timeout).confirm(
                tool=tool.name,
                title=tool.annotations["title"],
                description=tool.description,
                arguments=summarize_arguments(arguments, limit=2000),
            )
        except NoWindowError as e:
            raise ToolError(
                f"{tool.name} needs the user's approval, but no JupyterLab window is connected "
                "to ask in; nothing was done"
            ) from e
        except ToolError as e:
            raise ToolError(f"{tool.name} was not approved ({e}); nothing was done") from e
        return answer is True

    # -- activity ----------------------------------------------------------------------------

    def call_started(self, call_id: int, name: str, arguments: dict[str, Any]) -> None:
        """A call started (on the loop): once it has run :data:`RUNNING_AFTER` seconds, show it
        as running in every window, until :meth:`record_call` replaces it by its outcome.

        A call that runs as an MCP task is shown by its task (:meth:`task_changed`) once the
        task was handed out; until then (a 2026-07-28 call may still answer inline) as a call,
        under the task's entry id, so that the task's entry takes its place.
        """
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a call run outside the server's loop has no window to show in
            return
        task = running_task.get()
        if task is not None and task.announced:
            return
        key: int | str = call_id if task is None else task.task_id
        started = time.time() * 1000

        def show() -> None:
            self._running_soon.pop(key, None)
            record = {
                "id": self._record_id(key),
                "tool": name,
                # Summarized only for the calls that last long enough to be shown running.
                "arguments": summarize_arguments(arguments, limit=60),
                "ok": True,
                "error": None,
                "durationMs": round(time.time() * 1000 - started, 1),
                "at": started,
                "running": True,
            }
            self._running[key] = record
            self._show(record)

        self._running_soon[key] = loop.call_later(RUNNING_AFTER, show)

    def _record_id(self, key: int | str) -> str:
        return f"{self._instance}-{key}" if isinstance(key, int) else f"{self._instance}-task-{key}"

    def record_call(
        self,
        name: str,
        arguments: dict[str, Any],
        ok: bool,
        error: str | None,
        duration_ms: float,
    ) -> None:
        """Keep a record of a finished tool call and show it in every window (in place of its
        running entry, when it had one)."""
        call_id = current_call_id.get()
        task = running_task.get()
        key: int | str | None = call_id if task is None else task.task_id
        soon = self._running_soon.pop(key, None) if key is not None else None
        if soon is not None:
            soon.cancel()
        if task is not None and task.announced:
            return  # its task's end shows the outcome (task_changed)
        if key is not None:
            self._running.pop(key, None)
        record = {
            "id": self._record_id(key) if key is not None else None,
            "running": False,
            "tool": name,
            "arguments": summarize_arguments(arguments, limit=60),
            "ok": ok,
            "error": (error[:300] + "…") if error and len(error) > 300 else error,
            "durationMs": round(duration_ms, 1),
            "at": time.time() * 1000,
        }
        self.activity.append(record)
        self._show(record)

    def task_changed(self, task: Task, event: str) -> None:
        """An MCP task was handed out, said what it runs now, or ended (on the loop): its entry
        shows it running with its status message, then its outcome. A task whose call
        answered before it was handed out is shown as that call (by :meth:`record_call`)."""
        if not task.announced:
            return
        key = task.task_id
        soon = self._running_soon.pop(key, None)
        if soon is not None:
            soon.cancel()  # the call's own running entry is not needed any more
        if event == "ended":
            self._task_sent.pop(key, None)
            later = self._task_soon.pop(key, None)
            if later is not None:
                later.cancel()
            self._running.pop(key, None)
            record = self._task_record(task)
            self.activity.append(record)
            self._show(record)
            return
        if event == "progress" and key in self._task_sent:
            wait = TASK_UPDATE_GAP - (time.monotonic() - self._task_sent[key])
            if wait > 0:
                if key not in self._task_soon:
                    loop = asyncio.get_running_loop()
                    self._task_soon[key] = loop.call_later(wait, self._show_task, task)
                return
        self._show_task(task)

    def _show_task(self, task: Task) -> None:
        self._task_soon.pop(task.task_id, None)
        if task.ended is not None:
            return
        self._task_sent[task.task_id] = time.monotonic()
        record = self._running[task.task_id] = self._task_record(task)
        self._show(record)

    def _task_record(self, task: Task) -> dict[str, Any]:
        """A task's activity entry: the call it runs, its state and its status message."""
        state = task.state
        end = task.ended if task.ended is not None else time.time()
        message = task.message or ""
        return {
            "id": self._record_id(task.task_id),
            "running": state == "working",
            "tool": task.tool,
            "arguments": summarize_arguments(task.arguments, limit=60),
            "ok": state in ("working", "completed"),
            "error": None if state in ("working", "completed") else message[:300],
            "durationMs": round((end - task.created) * 1000, 1),
            "at": (task.created if state == "working" else end) * 1000,
            "task": {"id": task.task_id, "status": state, "message": message[:300] or None},
        }

    def _show(self, record: dict[str, Any]) -> None:
        """Show ``record`` in every window's activity panel, with whatever else is shown in the
        next :data:`ACTIVITY_GATHER` seconds: one ``activities`` message per window, where a
        later state of an entry (a running call's outcome, a task's newer status) replaces the
        earlier one. The windows' panels end as they would have with every state sent."""
        key: str | int = record["id"] if record["id"] is not None else next(self._unnamed)
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # no window ever connected
        with self._lock:
            if not self._windows:
                return
            for window_id in self._windows:
                self._outbox.setdefault(window_id, {})[key] = record
            if self._outbox_due:
                return
            self._outbox_due = True
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._send_outbox_soon()
        else:
            loop.call_soon_threadsafe(self._send_outbox_soon)

    def _send_outbox_soon(self) -> None:
        self._outbox_soon = asyncio.get_running_loop().call_later(
            ACTIVITY_GATHER, self._send_outbox
        )

    def _send_outbox(self) -> None:
        with self._lock:
            self._outbox_soon = None
            self._outbox_due = False
            outbox, self._outbox = self._outbox, {}
            windows = dict(self._windows)
        for window_id, records in outbox.items():
            window = windows.get(window_id)
            if window is not None:
                window.send({"type": "activities", "records": list(records.values())})

    def broadcast(self, message: dict[str, Any]) -> None:
        """Send ``message`` to every connected window."""
        for window in self.windows():
            self._send_threadsafe(window, message)
