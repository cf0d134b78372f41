"""MCP tasks on the wire, in the two spellings of the two protocol eras.

**2025-11-25** (core, experimental): the server declares ``capabilities.tasks`` (``list``,
``cancel``, ``requests.tools.call``) and each long tool ``execution.taskSupport: "optional"``. A
``tools/call`` carrying ``params.task`` (an optional ``ttl`` in ms) answers a ``CreateTaskResult``
at once; ``tasks/get`` gives the task, ``tasks/result`` waits for its end and answers what the
call would have (with the ``io.modelcontextprotocol/related-task`` ``_meta``), ``tasks/list``
pages through the caller's tasks, ``tasks/cancel`` cancels one. A task whose result is an
``isError`` one (or whose work failed although the tool answered, as when its kernel died) is
``failed``. Progress goes, with the related-task ``_meta``, and ``notifications/tasks/status``
at the end, to the session's standalone stream.

**2026-07-28** (the ``io.modelcontextprotocol/tasks`` extension, declared under ``extensions``
in ``server/discover``): the server decides. A call of a long tool from a client that declares
the extension in the request's ``clientCapabilities`` answers inline when its work ends within
:data:`INLINE_WAIT`, else a flat ``CreateTaskResult`` (``resultType: "task"``). ``tasks/get``
inlines the ``result`` (or, for a protocol error, the ``error``); ``tasks/cancel`` and
``tasks/update`` acknowledge with an empty result; ``tasks/result`` and ``tasks/list`` are not
methods of this era. ``failed`` is kept for protocol errors: a tool error is ``completed`` with
its ``isError`` result. Over Streamable HTTP an ``Mcp-Name`` header must carry the ``taskId``.
A ``subscriptions/listen`` stream that names ``taskIds`` is sent ``notifications/tasks`` (each
the ``tasks/get`` answer of that moment) for those of the caller's tasks: at once, when the
status message changes (at most once per poll interval) and at the end (:meth:`TaskProtocol.
watch`); so a listening client learns of the end without polling.

Both eras: a task belongs to the principal of the request that started it (a token, a user),
is found by its id from any session (or none) of that principal and is invisible to every
other; its status message says what runs now (the tool's last progress message).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import decode_header_value
from mcp_types import methods as wire_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..core.context import ToolContext, progress_reporter, running_task
from ..core.registry import Registry, Tool
from .store import Task, TaskLimitError, TaskStore

#: The 2026-07-28 extension's identifier.
EXTENSION = "io.modelcontextprotocol/tasks"
RELATED_TASK = "io.modelcontextprotocol/related-task"
IMMEDIATE_RESPONSE = "io.modelcontextprotocol/model-immediate-response"
#: The 2026-07-28 extension's task status notification (2025-11-25's is
#: ``notifications/tasks/status``).
TASK_NOTIFICATION = "notifications/tasks"
#: Seconds a 2026-07-28 call may take before it answers a task instead of its result: quick
#: work answers inline, and work of a second or more is a task (as the extension's
#: conformance scenarios expect of a one-second job).
INLINE_WAIT = 0.5
#: Milliseconds between polls that tasks suggest.
POLL_INTERVAL_MS = 1000
#: Tasks per ``tasks/list`` page.
PAGE_SIZE = 100

#: The error data of a request that needs the extension declared and does not declare it.
MISSING_EXTENSION: dict[str, Any] = {"requiredCapabilities": {"extensions": {EXTENSION: {}}}}


class Sender(Protocol):
    """Sends notifications in order, from any thread (the surface's relay of a call)."""

    def put(self, item: tuple[Any, ...]) -> None:
        """Queue ``(method, params)``."""

    async def close(self) -> None:
        """Send what is queued, then stop."""


@dataclass(frozen=True)
class CallOrigin:
    """What a task keeps of the ``tools/call`` request that started it (the surface reads it
    off the SDK's request context, which ends with the request)."""

    protocol_version: str
    #: Who made the request; the task is theirs alone.
    principal: str | None
    #: The tool sets the request's connection chose (within what its OAuth token allows).
    toolsets: frozenset[str] | None = None
    #: Whether the connection may use read-only tools only (an OAuth grant's ``mcp:read``).
    read_only: bool = False
    #: Who pages through result windows (a legacy session and user).
    caller: Hashable | None = None
    #: The request's progress token (2025-11-25: valid for the task's whole life).
    progress_token: str | int | None = None
    #: Makes a sender of notifications on the legacy session's standalone stream.
    notifier: Callable[[], Sender] | None = None
    #: The legacy session the call came from: what the call changes is that session's own
    #: (its resource subscriptions are not told of it).
    session: str | None = None
    #: Whether the request's client shows views: its answer then carries their data.
    views: bool = False

    @property
    def modern(self) -> bool:
        """True for a 2026-07-28 request."""
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS


#: The wire answer of one call, as the plain ``tools/call`` gives it.
Answer = Callable[[CallOrigin, str, dict[str, Any]], Awaitable[dict[str, Any]]]


class _TaskParams(types.RequestParams):
    """Params of ``tasks/get``, ``tasks/result``, ``tasks/cancel`` and ``tasks/update``
    (``taskId`` checked by the handler, so that a method of another era is refused as such)."""

    task_id: Any = None
    input_responses: Any = None


class TaskProtocol:
    """The tasks of one MCP surface: the store, and the SDK middleware and handlers that serve
    it (:meth:`install`)."""

    def __init__(
        self,
        registry: Registry,
        ctx: ToolContext,
        *,
        origin: Callable[[Any], CallOrigin],
        answer: Answer,
        server_info: Callable[[], dict[str, Any]],
        stopped_when_left: Callable[[Any], AbstractContextManager[Any]],
    ) -> None:
        self.registry = registry
        self.ctx = ctx
        self.store = TaskStore()
        self._origin = origin
        self._answer = answer
        self._server_info = server_info
        # A cancel scope that the surface cancels when a legacy request's client leaves.
        self._stopped_when_left = stopped_when_left
        self._senders: dict[str, Sender] = {}
        #: The 2026-07-28 listeners of each task (see :meth:`watch`).
        self._watches: dict[str, set[_Watch]] = {}
        self.store.observers.append(self._tell_status)
        self.store.observers.append(self._tell_watches)

    @staticmethod
    def legacy_capability() -> types.ServerTasksCapability:
        """``capabilities.tasks`` of the 2025-11-25 handshake."""
        return types.ServerTasksCapability(
            list=types.TasksListCapability(),
            cancel=types.TasksCancelCapability(),
            requests=types.ServerTasksRequestsCapability(
                tools=types.TasksToolsCapability(call=types.TasksCallCapability())
            ),
        )

    def install(self, server: Any) -> None:
        """Serve tasks on the SDK ``server``: the extension in ``server/discover``, the
        ``tools/call`` middleware that starts tasks, and the ``tasks/*`` methods."""
        server.extensions[EXTENSION] = {}
        server.middleware.append(self.middleware)
        for method, handler in (
            ("tasks/get", self._get),
            ("tasks/result", self._result),
            ("tasks/list", self._list),
            ("tasks/cancel", self._cancel),
            ("tasks/update", self._update),
        ):
            params: type[types.RequestParams]
            params = types.PaginatedRequestParams if method == "tasks/list" else _TaskParams
            server.add_request_handler(method, params, handler)

    async def close(self) -> None:
        """Stop the work of every task (the surface stops)."""
        await self.store.close()
        for sender in list(self._senders.values()):
            await sender.close()
        self._senders.clear()

    # -- tools/call ---------------------------------------------------------------------------

    async def middleware(self, rctx: Any, call_next: Any) -> Any:
        """Start a ``tools/call`` as a task where the era's rules say so; else pass it on.

        A middleware, because the SDK checks a 2025-11-25 ``tools/call`` answer against the
        ``CallToolResult`` shape, which a ``CreateTaskResult`` is not; so the call's params are
        validated here against the era's schema, as the SDK would have.
        """
        if rctx.method != "tools/call" or rctx.request_id is None:
            return await call_next(rctx)
        params = rctx.params
        if not isinstance(params, Mapping) or not isinstance(params.get("name"), str):
            return await call_next(rctx)
        modern = rctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        # Most calls ask for no task: they pass on before any look-up.
        if not (declares_extension(rctx.meta) if modern else params.get("task") is not None):
            return await call_next(rctx)
        tool = self._tool(params["name"])
        if modern:
            if tool is None or not tool.task_support:
                return await call_next(rctx)
            return await self._modern_call(rctx, params)
        if tool is None:
            return await call_next(rctx)  # the plain call's "Unknown tool"
        if not tool.task_support:
            raise MCPError(
                types.METHOD_NOT_FOUND,
                f"{tool.name} does not run as a task (its execution.taskSupport is forbidden); "
                "call it without params.task",
            )
        return await self._legacy_call(rctx, params)

    def _tool(self, name: str) -> Tool | None:
        return self.registry.find(name)

    def _validated(self, rctx: Any, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        try:
            wire_methods.validate_client_request("tools/call", rctx.protocol_version, params)
        except ValidationError as e:
            raise MCPError(types.INVALID_PARAMS, f"Invalid tools/call params: {e}") from None
        return params["name"], dict(params.get("arguments") or {})

    def _ttl(self, requested_ms: Any = None) -> float:
        """Seconds a task is kept after it ended: what was asked, at most the setting."""
        cap = self.ctx.settings.max_task_ttl
        if isinstance(requested_ms, int | float) and not isinstance(requested_ms, bool):
            return min(cap, max(0.0, requested_ms / 1000))
        return cap

    def _start(self, origin: CallOrigin, name: str, arguments: dict[str, Any], ttl: float) -> Task:
        async def work(task: Task) -> dict[str, Any]:
            linked = running_task.set(task)
            reporting = progress_reporter.set(self._reporter(task, origin))
            try:
                return await self._answer(origin, name, arguments)
            finally:
                progress_reporter.reset(reporting)
                running_task.reset(linked)

        return self.store.start(origin.principal, name, arguments, ttl, work, origin=origin)

    def _reporter(self, task: Task, origin: CallOrigin) -> Callable[..., None]:
        """The progress reporter of a task's call: its messages become the task's status
        message; with a 2025-11-25 progress token they also go out as progress notifications
        related to the task (2026-07-28 tasks carry no progress)."""
        if origin.modern or origin.progress_token is None or origin.notifier is None:

            def note(progress: float, total: float | None, message: str | None) -> None:
                task.note(message)

            return note
        sender = self._sender(task)

        def report(progress: float, total: float | None, message: str | None) -> None:
            task.note(message)
            params: dict[str, Any] = {
                "progressToken": origin.progress_token,
                "progress": float(progress),
                "_meta": {RELATED_TASK: {"taskId": task.task_id}},
            }
            if total is not None:
                params["total"] = float(total)
            if message is not None:
                params["message"] = message
            sender.put(("notifications/progress", params))

        return report

    def _sender(self, task: Task) -> Sender:
        sender = self._senders.get(task.task_id)
        if sender is None:
            assert task.origin is not None and task.origin.notifier is not None
            sender = self._senders[task.task_id] = task.origin.notifier()
        return sender

    async def _legacy_call(self, rctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        name, arguments = self._validated(rctx, params)
        requested = params["task"].get("ttl") if isinstance(params["task"], Mapping) else None
        origin = self._origin(rctx)
        try:
            task = self._start(origin, name, arguments, self._ttl(requested))
        except TaskLimitError as e:
            raise MCPError(types.INVALID_REQUEST, str(e)) from None
        self.store.announce(task)
        return {
            "task": self._legacy_task(task),
            "_meta": {
                IMMEDIATE_RESPONSE: (
                    f"{name} runs as task {task.task_id}: tasks/get tells how it goes, "
                    "tasks/result answers its result when it ends."
                )
            },
        }

    async def _modern_call(self, rctx: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        name, arguments = self._validated(rctx, params)
        origin = self._origin(rctx)
        try:
            task = self._start(origin, name, arguments, self._ttl())
        except TaskLimitError:
            # The client asked for no task: at the limit, the call runs as a plain one.
            return self._stamped(await self._answer(origin, name, arguments))
        try:
            await asyncio.wait_for(asyncio.shield(task.wait()), INLINE_WAIT)
        except asyncio.TimeoutError:
            pass
        except asyncio.CancelledError:
            # The request went away before a task was handed out: stop the call, as a plain
            # call whose client leaves is stopped.
            self.store.forget(task)
            asyncio.get_running_loop().create_task(self.store.cancel(task))
            raise
        if task.ended is not None and not task.cancelled:
            self.store.forget(task)  # quick work answers inline; the task was never seen
            if task.error is not None:
                raise MCPError(task.error["code"], task.error["message"], task.error.get("data"))
            assert task.result is not None
            return self._stamped(task.result)
        self.store.announce(task)
        return self._stamped(self._modern_task(task, result_type="task", detailed=False))

    def _stamped(self, result: dict[str, Any]) -> dict[str, Any]:
        """A 2026-07-28 answer with the envelope the SDK gives the answers it makes itself."""
        meta = dict(result.get("_meta") or {})
        meta.setdefault(types.SERVER_INFO_META_KEY, self._server_info())
        return {**result, "_meta": meta}

    # -- the tasks/* methods ------------------------------------------------------------------

    def _find(self, rctx: Any, params: _TaskParams, method: str) -> Task:
        """The caller's task named by ``params``; the era's errors otherwise."""
        task_id = params.task_id
        if rctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not declares_extension(rctx.meta):
                raise MCPError(
                    types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                    f"Missing required client capability: {method} needs the {EXTENSION} "
                    "extension declared in the request's clientCapabilities",
                    MISSING_EXTENSION,
                )
            headers = getattr(getattr(rctx, "request", None), "headers", None)
            named = headers.get("mcp-name") if headers is not None else None
            # A header that names another task is refused; none at all is let through, since
            # real clients (FastMCP's tasks client, behind Pydantic AI) send none.
            if named is not None and decode_header_value(named) != task_id:
                raise MCPError(
                    types.HEADER_MISMATCH,
                    f"The Mcp-Name header of {method} must be the request's taskId",
                )
        if not isinstance(task_id, str) or not task_id:
            raise MCPError(types.INVALID_PARAMS, f"{method} needs a taskId (a string)")
        task = self.store.get(task_id, self._origin(rctx).principal)
        if task is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Failed to retrieve task: Task not found: {task_id} (unknown to this client, "
                "expired after its ttl, or lost when the server restarted)",
            )
        return task

    @staticmethod
    def _not_in_era(rctx: Any, method: str, era: str) -> None:
        modern = rctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if modern != (era == "modern"):
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", method)

    async def _get(self, rctx: Any, params: _TaskParams) -> dict[str, Any]:
        task = self._find(rctx, params, "tasks/get")
        if rctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._modern_task(task, result_type="complete", detailed=True)
        return self._legacy_task(task)

    async def _result(self, rctx: Any, params: _TaskParams) -> dict[str, Any]:
        self._not_in_era(rctx, "tasks/result", "legacy")
        task = self._find(rctx, params, "tasks/result")
        with self._stopped_when_left(rctx) as waiting:
            await task.wait()
        if waiting.cancelled_caught:
            # Nobody reads this: the client left (the task goes on; it may ask again).
            raise MCPError(types.INTERNAL_ERROR, "The client went away before the task ended")
        related = {RELATED_TASK: {"taskId": task.task_id}}
        if task.cancelled:
            return {
                "content": [
                    {
                        "type": "text",
                        "text": (
                            f"Task {task.task_id} was cancelled: {task.tool} was stopped as a "
                            f"cancelled call is. {task.message or ''}"
                        ).strip(),
                    }
                ],
                "isError": True,
                "_meta": related,
            }
        if task.error is not None:
            raise MCPError(task.error["code"], task.error["message"], task.error.get("data"))
        assert task.result is not None
        answer = {k: v for k, v in task.result.items() if k != "resultType"}
        if not isinstance(answer.get("structuredContent"), dict | None):
            del answer["structuredContent"]  # an array, of a 2026-07-28 call: not in this era
        answer["_meta"] = {**(answer.get("_meta") or {}), **related}
        return answer

    async def _list(self, rctx: Any, params: types.PaginatedRequestParams) -> dict[str, Any]:
        self._not_in_era(rctx, "tasks/list", "legacy")
        tasks = self.store.list(self._origin(rctx).principal)
        after = _decode_cursor(params.cursor)
        if after is not None:
            tasks = [t for t in tasks if (t.created, t.task_id) > after]
        page = tasks[:PAGE_SIZE]
        answer: dict[str, Any] = {"tasks": [self._legacy_task(t) for t in page]}
        if len(tasks) > PAGE_SIZE:
            last = page[-1]
            answer["nextCursor"] = _encode_cursor((last.created, last.task_id))
        return answer

    async def _cancel(self, rctx: Any, params: _TaskParams) -> dict[str, Any]:
        task = self._find(rctx, params, "tasks/cancel")
        modern = rctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not await self.store.cancel(task) and not modern:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Cannot cancel task: already in terminal status '{task.state}'",
            )
        # 2026-07-28 acknowledges (also a task that had ended: cancelling is idempotent there).
        return {} if modern else self._legacy_task(task)

    async def _update(self, rctx: Any, params: _TaskParams) -> dict[str, Any]:
        self._not_in_era(rctx, "tasks/update", "modern")
        self._find(rctx, params, "tasks/update")
        # No task of this server asks its client for input, so every response answers a
        # request that is not outstanding: acknowledged and ignored, as the extension says.
        return {}

    # -- shapes -------------------------------------------------------------------------------

    def _legacy_task(self, task: Task) -> dict[str, Any]:
        """The 2025-11-25 ``Task``."""
        return {
            "taskId": task.task_id,
            "status": task.state,
            "statusMessage": self._message(task),
            "createdAt": _iso(task.created),
            "lastUpdatedAt": _iso(task.updated),
            "ttl": round(task.reported_ttl() * 1000),
            "pollInterval": POLL_INTERVAL_MS,
        }

    def _modern_task(self, task: Task, *, result_type: str, detailed: bool) -> dict[str, Any]:
        """The 2026-07-28 ``CreateTaskResult`` or ``tasks/get`` answer (``detailed``: with the
        result or error of a task that ended)."""
        status = task.state
        if status == "failed" and task.error is None:
            status = "completed"  # a tool error (or failed work) is a result in this era
        answer: dict[str, Any] = {
            "resultType": result_type,
            "taskId": task.task_id,
            "status": status,
            "statusMessage": self._message(task),
            "createdAt": _iso(task.created),
            "lastUpdatedAt": _iso(task.updated),
            "ttlMs": round(task.reported_ttl() * 1000),
            "pollIntervalMs": POLL_INTERVAL_MS,
        }
        if detailed and status == "completed" and task.result is not None:
            answer["result"] = {"resultType": "complete", **task.result}
        elif detailed and status == "failed" and task.error is not None:
            answer["error"] = dict(task.error)
        return answer

    @staticmethod
    def _message(task: Task) -> str:
        """What runs now: the tool's last progress message, or, for a tool that reports none
        (yet), the tool, what it was asked and for how long it has run."""
        if task.message:
            return task.message
        asked = f" ({task.asked})" if task.asked else ""
        return f"{task.tool}{asked} running for {time.time() - task.created:.1f} s"

    # -- 2026-07-28 task status notifications ------------------------------------------------

    @staticmethod
    def listened(meta: Any, extra: Mapping[str, Any] | None) -> list[str] | None:
        """The ``taskIds`` a ``subscriptions/listen`` asks task notifications for (the
        extension's key of the filter, among its ``extra`` keys), each once; None when it asks
        for none. ``meta`` is the request's: it must declare the extension."""
        task_ids = (extra or {}).get("taskIds")
        if task_ids is None:
            return None
        if not isinstance(task_ids, list) or not all(isinstance(i, str) for i in task_ids):
            raise MCPError(types.INVALID_PARAMS, "taskIds must be an array of task ids (strings)")
        if not declares_extension(meta):
            raise MCPError(
                types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: task notifications need the {EXTENSION} "
                "extension declared in the request's clientCapabilities",
                MISSING_EXTENSION,
            )
        return list(dict.fromkeys(task_ids))

    def watch(self, task_id: str, principal: str | None, tell: Callable[[], None]) -> bool:
        """Call ``tell()`` when the task ``task_id`` of ``principal`` changes: its status message
        (at most once per :data:`POLL_INTERVAL_MS`, the last change always told) and its end
        (at once). False, and nothing watched, when it is not a task of ``principal``'s (or its
        ttl is over). :meth:`unwatch` with the same ``tell`` ends it."""
        if self.store.get(task_id, principal) is None:
            return False
        self._watches.setdefault(task_id, set()).add(_Watch(tell))
        return True

    def unwatch(self, task_id: str, tell: Callable[[], None]) -> None:
        """Stop telling ``tell`` of the task ``task_id``."""
        watches = self._watches.get(task_id)
        if watches is None:
            return
        for watch in [w for w in watches if w.tell == tell]:
            watch.stop()
            watches.discard(watch)
        if not watches:
            del self._watches[task_id]

    def notification_params(self, task_id: str, principal: str | None) -> dict[str, Any] | None:
        """The params of a ``notifications/tasks`` for the task now: its ``tasks/get`` answer,
        without the ``resultType`` that a notification has not. None once it is gone."""
        task = self.store.get(task_id, principal)
        if task is None:
            return None
        answer = self._modern_task(task, result_type="complete", detailed=True)
        del answer["resultType"]
        return answer

    def _tell_watches(self, task: Task, event: str) -> None:
        watches = self._watches.get(task.task_id)
        if not watches or event == "announced":
            return
        for watch in list(watches):
            if event == "ended":
                watch.now()
            else:
                watch.soon(POLL_INTERVAL_MS / 1000)

    def _tell_status(self, task: Task, event: str) -> None:
        """At a 2025-11-25 task's end: ``notifications/tasks/status`` to its session."""
        if event != "ended":
            return
        origin = task.origin
        if not isinstance(origin, CallOrigin) or origin.modern or origin.notifier is None:
            return
        sender = self._sender(task)
        sender.put(("notifications/tasks/status", self._legacy_task(task)))
        self._senders.pop(task.task_id, None)
        asyncio.get_running_loop().create_task(sender.close())


class _Watch:
    """One listener of one task, told of its changes no more often than it would poll."""

    def __init__(self, tell: Callable[[], None]) -> None:
        self.tell = tell
        self._last = -math.inf
        self._timer: asyncio.TimerHandle | None = None

    def now(self) -> None:
        """Tell at once (the task ended): what waited is in it."""
        self.stop()
        self._last = time.monotonic()
        self.tell()

    def soon(self, every: float) -> None:
        """Tell now if the last time was ``every`` seconds ago, else once at the end of it."""
        if self._timer is not None:
            return  # a later one is coming; it tells the state of then
        wait = self._last + every - time.monotonic()
        if wait <= 0:
            self.now()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self._later)

    def _later(self) -> None:
        self._timer = None
        self.now()

    def stop(self) -> None:
        """Tell nothing more that was waiting."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def declares_extension(meta: Any) -> bool:
    """Whether a 2026-07-28 request's ``_meta`` declares the tasks extension."""
    if not isinstance(meta, Mapping):
        return False
    capabilities = meta.get(types.CLIENT_CAPABILITIES_META_KEY)
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and EXTENSION in extensions


def _iso(moment: float) -> str:
    return (
        datetime.fromtimestamp(moment, timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def _encode_cursor(after: tuple[float, str]) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": list(after)}).encode()).decode()


def _decode_cursor(cursor: str | None) -> tuple[float, str] | None:
    if cursor is None:
        return None
    try:
        created, task_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))["after"]
        if not isinstance(created, int | float) or not isinstance(task_id, str):
            raise TypeError
    except (ValueError, KeyError, TypeError) as e:
        raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor!r}") from e
    return float(created), task_id
