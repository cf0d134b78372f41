"""Clients of MCP tasks in both protocol eras, as the task tests drive them.

The official SDK (2.x) has types for the 2025-11-25 tasks but no client method that sends
``params.task`` (and it checks a ``tools/call`` answer against ``CallToolResult``), so the
2025-11-25 session here speaks raw JSON-RPC over HTTP. For 2026-07-28 the SDK's own client
extension mechanism does the work: :class:`TasksExtension` declares
``io.modelcontextprotocol/tasks`` in every request and claims the ``resultType: "task"`` answer,
which it resolves by polling ``tasks/get`` (what a client of that era would do).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_messages import initialize
from pydantic import ConfigDict

EXTENSION = "io.modelcontextprotocol/tasks"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


def sse_payloads(text: str) -> list[dict[str, Any]]:
    """The JSON messages of an SSE body."""
    messages = []
    for event in text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(
            line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")
        )
        if data:
            messages.append(json.loads(data))
    return messages


class LegacySession:
    """One 2025-11-25 session (``Mcp-Session-Id``) spoken as raw JSON-RPC, with its GET stream
    collected into :attr:`notifications`."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.session_id: str | None = None
        self.notifications: list[dict[str, Any]] = []
        self._ids = iter(range(1, 1_000_000))
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()
        self.initialize_result: dict[str, Any] = {}

    @property
    def headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": LEGACY,
        }
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    async def open(
        self, *, listen: bool = True, capabilities: dict[str, Any] | None = None
    ) -> LegacySession:
        body = initialize(LEGACY, id=0, client="task-test", capabilities=capabilities)
        response = await self.http.post(self.url, content=json.dumps(body), headers=self.headers)
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        self.initialize_result = self._answer(response, 0)["result"]
        await self.notify("notifications/initialized")
        if listen:
            self._listener = asyncio.get_running_loop().create_task(self._listen())
            await asyncio.wait_for(self._listening.wait(), 30)
        return self

    async def _listen(self) -> None:
        headers = {**self.headers, "Accept": "text/event-stream"}
        async with self.http.stream("GET", self.url, headers=headers, timeout=None) as stream:
            assert stream.status_code == 200
            self._listening.set()
            buffer = ""
            async for chunk in stream.aiter_text():
                buffer += chunk.replace("\r\n", "\n")
                while "\n\n" in buffer:
                    event, buffer = buffer.split("\n\n", 1)
                    self.notifications.extend(sse_payloads(event + "\n\n"))

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        response = await self.http.post(self.url, content=json.dumps(body), headers=self.headers)
        assert response.status_code == 202, response.text

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 120
    ) -> dict[str, Any]:
        """The JSON-RPC answer (``result`` or ``error``) to one request."""
        number = next(self._ids)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
        if params is not None:
            body["params"] = params
        response = await self.http.post(
            self.url, content=json.dumps(body), headers=self.headers, timeout=timeout
        )
        return self._answer(response, number)

    async def result(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``result`` of one request, failing the test on an error answer."""
        answer = await self.request(method, params)
        assert "result" in answer, answer
        return answer["result"]

    async def error(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The ``error`` of one request, failing the test on a result."""
        answer = await self.request(method, params)
        assert "error" in answer, answer
        return answer["error"]

    async def call_as_task(
        self, name: str, arguments: dict[str, Any], *, ttl: int | None = None, **meta: Any
    ) -> dict[str, Any]:
        """``tools/call`` with ``params.task``: the ``CreateTaskResult``."""
        params: dict[str, Any] = {"name": name, "arguments": arguments, "task": {}}
        if ttl is not None:
            params["task"]["ttl"] = ttl
        if meta:
            params["_meta"] = meta
        return await self.result("tools/call", params)

    @staticmethod
    def _answer(response: httpx2.Response, number: int) -> dict[str, Any]:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            messages = sse_payloads(response.text)
        else:
            messages = [response.json()]
        for message in messages:
            if message.get("id") == number and ("result" in message or "error" in message):
                return message
        raise AssertionError(f"no answer to request {number}: {response.status_code} {messages}")

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
        if self.session_id:
            await self.http.delete(self.url, headers=self.headers)
            self.session_id = None


@asynccontextmanager
async def legacy_session(
    url: str, token: str, *, listen: bool = True, capabilities: dict[str, Any] | None = None
) -> AsyncIterator[LegacySession]:
    """``async with legacy_session(url, token) as session``: an open 2025-11-25 session (of a
    client with ``capabilities``)."""
    async with httpx2.AsyncClient(headers={"Authorization": f"token {token}"}, timeout=60) as http:
        session = await LegacySession(http, url).open(listen=listen, capabilities=capabilities)
        try:
            yield session
        finally:
            await session.close()


# --- 2026-07-28: the tasks extension through the SDK's client ---------------------------------


class TaskState(types.Result):
    """The extension's ``Task``: what every task answer carries."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class CreateTaskResult(TaskState):
    """The extension's flat ``CreateTaskResult`` (``resultType: "task"``)."""

    result_type: Literal["task"] = "task"


class TaskIdParams(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    # The extension's routing rule: tasks/* carry the taskId in the Mcp-Name header.
    name_param = "taskId"


class CancelTask(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param = "taskId"


class DetailedTask(TaskState):
    """``tasks/get``'s answer: the task, with its result or error once it ended."""

    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


async def get_task(session: Any, task_id: str) -> DetailedTask:
    """``tasks/get`` on an SDK client session."""
    return await session.send_request(GetTask(params=TaskIdParams(task_id=task_id)), DetailedTask)


async def cancel_task(session: Any, task_id: str) -> types.EmptyResult:
    """``tasks/cancel`` on an SDK client session."""
    return await session.send_request(
        CancelTask(params=TaskIdParams(task_id=task_id)), types.EmptyResult
    )


async def until_ended(session: Any, task_id: str, timeout: float = 120) -> DetailedTask:
    """Poll ``tasks/get`` until the task is in a terminal state."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        task = await get_task(session, task_id)
        if task.status in ("completed", "failed", "cancelled"):
            return task
        assert asyncio.get_running_loop().time() < deadline, f"task still {task.status}"
        await asyncio.sleep((task.poll_interval_ms or 1000) / 1000 / 4)


class TasksExtension(ClientExtension):
    """The client side of ``io.modelcontextprotocol/tasks``: declared in every request; a
    task answer is polled until it ends and its result is what ``call_tool`` returns."""

    identifier = EXTENSION

    def __init__(self) -> None:
        #: The task ids this client was answered with.
        self.created: list[CreateTaskResult] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(created)
        ended = await until_ended(ctx.session, created.task_id)
        if ended.status != "completed" or ended.result is None:
            raise RuntimeError(f"task {created.task_id} ended {ended.status}: {ended.error}")
        return types.CallToolResult.model_validate(ended.result)


@asynccontextmanager
async def modern_client(
    url: str, token: str, *, tasks: TasksExtension | None = None
) -> AsyncIterator[Client]:
    """An SDK client of the 2026-07-28 era; with ``tasks``, one that declares the extension."""
    async with httpx2.AsyncClient(headers={"Authorization": f"token {token}"}, timeout=60) as http:
        transport = streamable_http_client(url, http_client=http)
        extensions = [tasks] if tasks is not None else None
        # Pinned to the era rather than probed ("auto"), so that a slow first answer on a busy
        # machine does not fall back to the legacy handshake.
        async with Client(transport, mode=MODERN, extensions=extensions) as client:
            yield client


# --- 2026-07-28: a subscriptions/listen stream, raw (the SDK's listen() sends no taskIds) ----


class ListenStream:
    """One ``subscriptions/listen`` request whose SSE answer is collected into
    :attr:`messages` as it comes (the acknowledgement, the notifications, an error)."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.status_code: int | None = None

    def of(self, method: str) -> list[dict[str, Any]]:
        """The params of the messages of ``method`` so far."""
        return [m["params"] for m in self.messages if m.get("method") == method]

    async def until(self, check: Any, timeout: float = 60, what: str = "a message") -> Any:
        """Wait until ``check(self)`` answers something true."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not (value := check(self)):
            assert asyncio.get_running_loop().time() < deadline, f"never came: {what}"
            await asyncio.sleep(0.05)
        return value


@asynccontextmanager
async def listen_stream(
    url: str, token: str, notifications: dict[str, Any], *, declare: bool = True
) -> AsyncIterator[ListenStream]:
    """``async with listen_stream(url, token, {"taskIds": [...]}) as stream``: an open
    ``subscriptions/listen`` (of a client declaring the tasks extension unless not ``declare``);
    leaving the block closes it."""
    capabilities: dict[str, Any] = {"extensions": {EXTENSION: {}}} if declare else {}
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": "subscriptions/listen",
        "params": {
            "notifications": notifications,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "task-test", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
        },
    }
    headers = {
        "Authorization": f"token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "subscriptions/listen",
    }
    stream = ListenStream()
    opened = asyncio.Event()

    async def read() -> None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(60, read=None)) as http:
            async with http.stream("POST", url, content=json.dumps(body), headers=headers) as r:
                stream.status_code = r.status_code
                opened.set()
                if not r.headers.get("content-type", "").startswith("text/event-stream"):
                    stream.messages.append(json.loads(await r.aread()))
                    return
                buffer = ""
                async for chunk in r.aiter_text():
                    buffer += chunk.replace("\r\n", "\n")
                    while "\n\n" in buffer:
                        event, buffer = buffer.split("\n\n", 1)
                        stream.messages.extend(sse_payloads(event + "\n\n"))

    reader = asyncio.get_running_loop().create_task(read())
    try:
        await asyncio.wait_for(opened.wait(), 60)
        yield stream
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


async def until(check: Any, timeout: float = 120, what: str = "the condition") -> Any:
    """Poll ``check`` (a function, or a coroutine function) until it answers something true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, f"never reached: {what}"
        await asyncio.sleep(0.1)
