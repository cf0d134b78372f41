"""The server's MCP tasks: each one a tool call running on its own, kept until its ttl is over.

A :class:`Task` belongs to the principal that started it (a token, a user); the store answers a
task only to its principal, so another one cannot tell it from a task that never existed. Its
work runs in an asyncio task of its own, not in the request that started it, so it goes on when
that request ends, when its client disconnects or comes back in a new session. Its result is
kept while it runs and for its ttl after it ended (capped by ``c.JupyterMCP.max_task_ttl``),
then dropped.

How the work ends is kept in neutral terms (:class:`Task` ``result``, ``error``, ``failure``);
each protocol era derives its own status from them (:mod:`jupyter_mcp.tasks.protocol`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.registry import summarize_arguments

log = logging.getLogger(__name__)

#: What a task is doing, as its requestor would say it: "failed" covers a protocol error, an
#: ``isError`` result and work that failed although the tool answered (a kernel that died).
State = Literal["working", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

#: Tasks of one principal that may run at once; more are refused until some end.
MAX_RUNNING = 64
#: Tasks of one principal kept in all, and the characters of their results (pictures
#: included); beyond either the oldest ended ones are dropped first.
MAX_KEPT = 1000
MAX_KEPT_CHARS = 256 * 1024 * 1024
#: Seconds ``cancel`` waits for the work to stop (the kernel interrupted, the process group
#: killed) before answering.
CANCEL_GRACE = 15.0

#: ``observer(task, event)``; event is "announced", "progress" or "ended".
Observer = Callable[["Task", str], None]


class TaskLimitError(Exception):
    """The principal already runs as many tasks as it may."""


@dataclass(eq=False)
class Task:
    """One tool call running as a task (it is the call's :class:`~jupyter_mcp.core.context.
    TaskLink`)."""

    task_id: str
    #: Who started it (None on a server without auth, where everyone is the same one).
    principal: str | None
    tool: str
    arguments: dict[str, Any]
    #: Seconds the task and its result are kept after it ended.
    ttl: float
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    ended: float | None = None
    cancelled: bool = False
    #: The call's answer in its wire form (a ``CallToolResult``), once the tool answered.
    result: dict[str, Any] | None = None
    #: The JSON-RPC error the call ended with instead of an answer (``code``, ``message``).
    error: dict[str, Any] | None = None
    #: Why the work failed although the tool answered (see ``fail``).
    failure: str | None = None
    #: What runs now: the tool's last progress message, or how it ended.
    message: str | None = None
    #: What it was asked, for people to read (``key=value``, each cut short): kept after the
    #: arguments are dropped.
    asked: str = ""
    #: True once its requestor was given the task (before, it may still answer inline).
    announced: bool = False
    #: Anything the protocol layer keeps with the task (the era and session it came from).
    origin: Any = None
    #: How many characters its kept result takes (its JSON), once it ended.
    size: int = 0
    _done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _work: asyncio.Task[None] | None = field(default=None, repr=False)
    _store: TaskStore | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.updated = self.updated or self.created

    @property
    def state(self) -> State:
        """What the task is doing (see :data:`State`)."""
        if self.cancelled:
            return "cancelled"
        if self.ended is None:
            return "working"
        if self.error is not None or self.failure is not None:
            return "failed"
        if self.result is not None and self.result.get("isError"):
            return "failed"
        return "completed"

    @property
    def done(self) -> bool:
        """True once the task is in a terminal state."""
        return self.state in TERMINAL

    def reported_ttl(self, now: float | None = None) -> float:
        """The ttl as the protocol counts it, from creation: it grows while the task runs,
        since the result is kept for ``ttl`` seconds after the task ended."""
        end = self.ended if self.ended is not None else (time.time() if now is None else now)
        return (end - self.created) + self.ttl

    def expires(self) -> float | None:
        """When the task is dropped (None while it runs)."""
        return None if self.ended is None else self.ended + self.ttl

    # -- what the running call tells its task (any thread) -----------------------------------

    def fail(self, message: str) -> None:
        """The work failed although the tool answered (see ``TaskLink.fail``)."""
        self._on_loop(self._set_failure, message)

    def note(self, message: str | None) -> None:
        """The call's latest progress message: what the task's status message says now."""
        if message:
            self._on_loop(self._set_message, message)

    def _on_loop(self, fn: Callable[[str], None], value: str) -> None:
        store = self._store
        if store is None:
            return
        try:
            on_loop = asyncio.get_running_loop() is store.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            fn(value)
        else:
            store.loop.call_soon_threadsafe(fn, value)

    def _set_failure(self, message: str) -> None:
        if self.ended is None and not self.cancelled:
            self.failure = message

    def _set_message(self, message: str) -> None:
        if self.ended is None and not self.cancelled:
            self.message = message[:1000]
            self.updated = time.time()
            if self._store is not None:
                self._store.tell(self, "progress")

    async def wait(self) -> None:
        """Until the task is in a terminal state."""
        await self._done.wait()


def new_task_id() -> str:
    """An unguessable task id: 128 random bits, as hex."""
    return secrets.token_hex(16)


class TaskStore:
    """The tasks of one server, by id; each visible to its principal only."""

    def __init__(self, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._tasks: OrderedDict[str, Task] = OrderedDict()
        self._loop = loop
        #: Told when a task is given to its requestor, when its message changes, when it ends.
        self.observers: list[Observer] = []
        self._sweeps: set[asyncio.TimerHandle] = set()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the tasks run on (the first one the store was used on)."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    # -- starting -------------------------------------------------------------------------------

    def start(
        self,
        principal: str | None,
        tool: str,
        arguments: dict[str, Any],
        ttl: float,
        work: Callable[[Task], Awaitable[dict[str, Any]]],
        *,
        origin: Any = None,
    ) -> Task:
        """Create a task and start ``work(task)``, its call, in an asyncio task of its own.

        ``work`` answers the call's wire result; an exception with ``code`` and ``message``
        (an ``MCPError``) ends the task with that JSON-RPC error, any other with an internal
        error. A :class:`TaskLimitError` when ``principal`` runs :data:`MAX_RUNNING` tasks.
        """
        self.sweep()
        running = sum(1 for t in self._mine(principal) if t.ended is None)
        if running >= MAX_RUNNING:
            raise TaskLimitError(
                f"{running} tasks of this client are still running, the most it may have; "
                "wait for some to end or cancel them (tasks/cancel)"
            )
        task = Task(
            task_id=new_task_id(),
            principal=principal,
            tool=tool,
            arguments=dict(arguments),
            ttl=max(0.0, ttl),
            origin=origin,
            asked=summarize_arguments(arguments, limit=60)[:300],
            _store=self,
        )
        self._tasks[task.task_id] = task
        task._work = self.loop.create_task(self._run(task, work), name=f"jupyter_mcp task {tool}")
        log.info("jupyter_mcp: task %s started: %s for %s", task.task_id, tool, principal)
        return task

    async def _run(self, task: Task, work: Callable[[Task], Awaitable[dict[str, Any]]]) -> None:
        try:
            result = await work(task)
        except asyncio.CancelledError:
            self._end(task, cancelled=True)
            return
        except Exception as e:
            code, message = getattr(e, "code", None), getattr(e, "message", None)
            if isinstance(code, int) and isinstance(message, str):
                error: dict[str, Any] = {"code": code, "message": message}
                data = getattr(e, "data", None)
                if data is not None:
                    error["data"] = data
            else:
                log.exception("jupyter_mcp: task %s (%s) failed", task.task_id, task.tool)
                error = {"code": -32603, "message": f"{task.tool} failed: {type(e).__name__}: {e}"}
            self._end(task, error=error)
            return
        self._end(task, result=result)

    def _end(
        self,
        task: Task,
        *,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        cancelled: bool = False,
    ) -> None:
        if task.ended is not None:
            return
        now = time.time()
        task.ended = task.updated = now
        if task.cancelled or cancelled:
            task.cancelled = True
            task.message = f"Cancelled by request after {now - task.created:.1f} s"
        else:
            task.result, task.error = result, error
            task.message = _ending(task, now)
        task._done.set()
        log.info("jupyter_mcp: task %s ended %s: %s", task.task_id, task.state, task.message)
        self.tell(task, "ended")
        # Nothing reads the arguments of a task that ended (its activity entry has them).
        task.arguments = {}
        task.size = len(json.dumps(task.result or task.error or {}, default=str))
        self._limit(task.principal)
        self._sweep_at(task.ttl + 0.1)

    def _sweep_at(self, delay: float) -> None:
        """Sweep ``delay`` seconds from now (when a task's ttl is over)."""

        def sweep() -> None:
            self._sweeps.discard(handle)
            self.sweep()

        handle = self.loop.call_later(delay, sweep)
        self._sweeps.add(handle)

    # -- finding ------------------------------------------------------------------------------

    def get(self, task_id: str, principal: str | None) -> Task | None:
        """The task ``task_id`` of ``principal``; None when there is none (or it is another's,
        or its ttl is over)."""
        self.sweep()
        task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.principal != principal:
            return None
        return task

    def list(self, principal: str | None) -> list[Task]:
        """The tasks of ``principal``, oldest first."""
        self.sweep()
        return list(self._mine(principal))

    def _mine(self, principal: str | None) -> Iterator[Task]:
        return (t for t in self._tasks.values() if t.principal == principal)

    def sweep(self, now: float | None = None) -> None:
        """Drop the tasks whose ttl is over."""
        now = time.time() if now is None else now
        expired = [
            i for i, t in self._tasks.items() if t.ended is not None and t.ended + t.ttl <= now
        ]
        for task_id in expired:
            del self._tasks[task_id]

    def _limit(self, principal: str | None) -> None:
        """Drop the oldest ended tasks of ``principal`` while it keeps more than it may."""
        mine = list(self._mine(principal))
        count, chars = len(mine), sum(t.size for t in mine)
        for task in mine:
            if count <= MAX_KEPT and chars <= MAX_KEPT_CHARS:
                break
            if task.ended is not None:
                del self._tasks[task.task_id]
                count, chars = count - 1, chars - task.size

    def forget(self, task: Task) -> None:
        """Drop a task that its requestor was never given (its call answered inline)."""
        self._tasks.pop(task.task_id, None)

    # -- changing -------------------------------------------------------------------------------

    def announce(self, task: Task) -> None:
        """The task was given to its requestor: from now on it shows as a task."""
        if not task.announced:
            task.announced = True
            self.tell(task, "announced")

    async def cancel(self, task: Task) -> bool:
        """Cancel a task still working: it is ``cancelled`` at once, and its work is stopped
        as a cancelled call is (the kernel interrupted, the process group killed), waiting up
        to :data:`CANCEL_GRACE` seconds for that. False when it had already ended."""
        if task.done:
            return False
        task.cancelled = True
        task.updated = time.time()
        work = task._work
        if work is None or work.done():
            self._end(task, cancelled=True)
            return True
        work.cancel()
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(work), CANCEL_GRACE)
        return True

    def tell(self, task: Task, event: str) -> None:
        """Tell the observers about ``task`` (an observer that fails never breaks a task)."""
        for observer in list(self.observers):
            try:
                observer(task, event)
            except Exception:
                log.exception("jupyter_mcp: task observer %r failed", observer)

    async def close(self) -> None:
        """Cancel the work of every task still running (the server stops)."""
        for handle in self._sweeps:
            handle.cancel()
        self._sweeps.clear()
        running = [t._work for t in self._tasks.values() if t._work and not t._work.done()]
        for work in running:
            work.cancel()
        if running:
            await asyncio.wait(running, timeout=CANCEL_GRACE)


def _ending(task: Task, now: float) -> str:
    """The status message of a task that just ended."""
    took = f"after {now - task.created:.1f} s"
    if task.failure is not None:
        return task.failure
    if task.error is not None:
        return f"Failed {took}: {task.error.get('message')}"
    if task.result is not None and task.result.get("isError"):
        first = next(
            (b.get("text") for b in task.result.get("content") or [] if b.get("type") == "text"),
            "",
        )
        return f"Failed {took}: {first}"[:1000]
    last = f"; last progress: {task.message}" if task.message else ""
    return f"Completed {took}{last}"[:1000]
