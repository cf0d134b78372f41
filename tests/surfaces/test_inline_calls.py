"""Calls answered as JSON run in their POST's task: legacy ones (surfaces/inline_calls.py) and
2026-07-28 ones (``MCPSurface.answers_modern_inline``, served by surfaces/asgi.py).

Each behaviour is checked with the inline path on and off: the client must not be able to tell
them apart (answers, errors, cancellation, the session's end), and with it on the call must
really have run inline.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp_messages import INITIALIZED, initialize
from server_configs import server_config
from tool_doubles import add_slow_tool, add_tool

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.surfaces import inline_calls
from jupyter_mcp.surfaces.inline_calls import InlineCalls

pytestmark = pytest.mark.skipif(
    not inline_calls.supported(), reason="this SDK's internals differ: every call goes its way"
)

INLINE = [True, False]

INITIALIZE = initialize()


def call(number: int, name: str, arguments: Any = None, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}


class Session:
    """A raw legacy session: initialize, initialized, then one POST per message."""

    def __init__(self, http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self.http, self.url, self.headers = http, url, headers

    async def post(self, body: Any) -> httpx2.Response:
        return await self.http.post(self.url, content=json.dumps(body), headers=self.headers)


@pytest.fixture
def surface(mcp_app: Any) -> Any:
    return mcp_app.tool_context.services.mcp_surface


@pytest.fixture
def ran_inline(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The request ids answered inline (InlineCalls._call wrapped)."""
    ran: list[Any] = []
    run = InlineCalls._call

    async def counted(self: InlineCalls, request: Any, http_request: Any) -> Any:
        ran.append(request.id)
        return await run(self, request, http_request)

    monkeypatch.setattr(InlineCalls, "_call", counted)
    return ran


@pytest.fixture
def session(mcp_url: str, token: str, surface: Any):  # type: ignore[no-untyped-def]
    """``async with session() as live``: a raw legacy session, initialized. Skips the test
    when the inline path is on but could not attach to the SDK's session (its objects are laid
    out differently: then every call goes the SDK's way)."""

    @asynccontextmanager
    async def _open() -> AsyncIterator[Session]:
        headers = {
            "Authorization": f"token {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        async with httpx2.AsyncClient(timeout=20) as http:
            opened = await http.post(mcp_url, content=json.dumps(INITIALIZE), headers=headers)
            headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            headers["MCP-Protocol-Version"] = "2025-11-25"
            live = Session(http, mcp_url, headers)
            await live.post(INITIALIZED)
            if surface.inline_calls and headers["Mcp-Session-Id"] not in surface._inline:
                pytest.skip("the SDK's session objects are not laid out as inline_calls knows")
            yield live

    return _open


async def test_answers_and_errors_are_the_sdks(
    surface, session, mcp_app, jp_root_dir, ran_inline, monkeypatch
):
    """Results, tool failures, bugs, unknown tools and malformed params: the same bodies and
    statuses whether the call ran inline or in the SDK's dispatcher task."""

    def broken(ctx: ToolContext) -> str:
        raise RuntimeError("a bug in the tool")

    add_tool(mcp_app, "test_broken", broken, read_only=True)
    (jp_root_dir / "a.txt").write_text("alpha\n")
    sent = [
        call(2, "get_file_text_by_path", {"pathInProject": "a.txt"}),
        call(3, "get_file_text_by_path", {"pathInProject": "missing.txt"}),
        call(4, "test_broken"),
        call(5, "no_such_tool"),
        call(6, "get_file_text_by_path", "not an object"),
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"arguments": {}}},
    ]
    answered: dict[bool, list[tuple[int, str, Any]]] = {}
    for inline in INLINE:
        monkeypatch.setattr(surface, "inline_calls", inline)
        async with session() as live:
            answers = [await live.post(body) for body in sent]
        answered[inline] = [(a.status_code, a.headers["content-type"], a.json()) for a in answers]
        # Inline: every one of these calls; else none.
        assert ran_inline == ([2, 3, 4, 5, 6, 7] if inline else [])
        ran_inline.clear()

    assert answered[True] == answered[False]
    statuses, types, bodies = zip(*answered[True], strict=True)
    assert statuses == (200,) * 6
    assert all(t.startswith("application/json") for t in types)
    assert "alpha" in bodies[0]["result"]["content"][0]["text"]
    assert bodies[0]["result"]["isError"] is False
    assert bodies[1]["result"]["isError"] is True
    assert "missing.txt" in bodies[1]["result"]["content"][0]["text"]
    assert bodies[2]["result"]["isError"] is True
    assert bodies[3]["error"] == {"code": -32602, "message": "Unknown tool: no_such_tool"}
    assert bodies[4]["error"]["code"] == -32602
    assert bodies[5]["error"]["code"] == -32602


async def test_a_call_that_asked_for_progress_is_not_inline(
    surface, session, jp_root_dir, ran_inline
):
    """Progress comes on the call's own event stream, which only the SDK's way gives."""
    (jp_root_dir / "a.txt").write_text("alpha\n")
    async with session() as live:
        tracked = await live.post(
            call(2, "get_file_text_by_path", {"pathInProject": "a.txt"}, progressToken="p")
        )

    assert tracked.headers["content-type"].startswith("text/event-stream")
    assert "alpha" in tracked.text
    assert ran_inline == []


@pytest.mark.parametrize("inline", INLINE)
async def test_a_cancelled_notification_stops_the_call(
    surface, session, mcp_app, ran_inline, monkeypatch, inline
):
    monkeypatch.setattr(surface, "inline_calls", inline)
    state = add_slow_tool(mcp_app, read_only=True)
    async with session() as live:
        running = asyncio.ensure_future(live.post(call(2, "test_slow")))
        await asyncio.wait_for(state.started.wait(), 10)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "changed my mind"},
        }
        accepted = await live.post(cancel)
        await asyncio.wait_for(state.cancelled.wait(), 10)
        answer = await asyncio.wait_for(running, 10)
        after = await live.post(call(3, "no_such_tool"))  # the session goes on

    assert accepted.status_code == 202
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32800, "message": "Request cancelled"},
    }
    assert after.json()["error"]["code"] == -32602
    assert ran_inline == ([2, 3] if inline else [])


@pytest.mark.parametrize("inline", INLINE)
async def test_a_client_that_leaves_stops_its_call(
    surface, mcp_url, token, session, mcp_app, ran_inline, monkeypatch, inline
):
    monkeypatch.setattr(surface, "inline_calls", inline)
    state = add_slow_tool(mcp_app, read_only=True)
    async with session() as live:
        # The call on a connection of its own, closed while the call runs.
        async with httpx2.AsyncClient(timeout=20) as other:
            running = asyncio.ensure_future(
                other.post(live.url, content=json.dumps(call(2, "test_slow")), headers=live.headers)
            )
            await asyncio.wait_for(state.started.wait(), 10)
            running.cancel()
        await asyncio.wait_for(state.cancelled.wait(), 10)
        after = await live.post(call(3, "no_such_tool"))

    assert after.json()["error"]["code"] == -32602
    assert ran_inline == ([2, 3] if inline else [])


@pytest.mark.parametrize("inline", INLINE)
async def test_the_sessions_end_stops_its_calls(
    surface, session, mcp_app, ran_inline, monkeypatch, inline
):
    """A DELETE while a call runs: the call is stopped (the SDK cancels its dispatcher's tasks,
    and the inline ones with them) and its POST gets the SDK's answer for a session ended."""
    monkeypatch.setattr(surface, "inline_calls", inline)
    state = add_slow_tool(mcp_app, read_only=True)
    async with session() as live:
        running = asyncio.ensure_future(live.post(call(2, "test_slow")))
        await asyncio.wait_for(state.started.wait(), 10)
        session_id = live.headers["Mcp-Session-Id"]
        ended = await live.http.delete(live.url, headers=live.headers)
        await asyncio.wait_for(state.cancelled.wait(), 10)
        answer = await asyncio.wait_for(running, 10)
    for _ in range(200):  # what answered its calls inline is let go with the session
        if session_id not in surface._inline:
            break
        await asyncio.sleep(0.05)

    assert ended.status_code == 200
    assert answer.status_code == 500
    assert answer.json()["error"]["message"] == "Session terminated before the request completed"
    assert session_id not in surface._inline
    assert ran_inline == ([2] if inline else [])


async def test_a_session_that_asked_for_log_lines_is_not_inline(
    surface, session, jp_root_dir, ran_inline
):
    """Log lines of a session at a level of its own come on the call's stream: not inline."""
    (jp_root_dir / "a.txt").write_text("alpha\n")
    async with session() as live:
        level = {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {}}
        level["params"] = {"level": "info"}
        await live.post(level)
        logged = await live.post(call(3, "get_file_text_by_path", {"pathInProject": "a.txt"}))

    assert logged.headers["content-type"].startswith("text/event-stream")
    assert ran_inline == []


#: A session ends after three seconds without a request in flight.
SHORT_IDLE = {**server_config(), "JupyterMCP": {"session_idle_timeout": 3.0}}


@pytest.mark.parametrize("jp_server_config", [SHORT_IDLE])
@pytest.mark.parametrize("inline", INLINE)
async def test_a_call_in_flight_holds_its_session_past_the_idle_timeout(
    surface, session, mcp_app, ran_inline, monkeypatch, inline
):
    """The idle countdown waits while a call runs, as the SDK's transport counts it."""
    monkeypatch.setattr(surface, "inline_calls", inline)

    async def longer(ctx: ToolContext) -> str:
        await asyncio.sleep(7)  # well past the idle timeout
        return "done"

    add_tool(mcp_app, "test_longer", longer, read_only=True)
    async with session() as live:
        answer = await live.post(call(2, "test_longer"))
        after = await live.post(call(3, "no_such_tool"))

    assert answer.status_code == 200 and answer.json()["result"]["content"][0]["text"] == "done"
    assert after.status_code == 200 and after.json()["error"]["code"] == -32602
    assert ran_inline == ([2, 3] if inline else [])


# -- 2026-07-28: a plain call answered as JSON in its POST's task ---------------------------

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_call(number: int, name: str, arguments: Any = None, **meta: Any) -> dict[str, Any]:
    return call(number, name, arguments, **MODERN_META, **meta)


@pytest.fixture
def modern(mcp_url: str, token: str):  # type: ignore[no-untyped-def]
    """``async with modern() as post``: POSTs of 2026-07-28 requests (no session)."""

    @asynccontextmanager
    async def _open() -> AsyncIterator[Any]:
        headers = {
            "Authorization": f"token {token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
        }

        def routing(body: dict[str, Any]) -> dict[str, str]:
            """The era's routing headers, as its clients send them."""
            name = (body.get("params") or {}).get("name")
            named = {"Mcp-Name": name} if isinstance(name, str) else {}
            return {**headers, "Mcp-Method": body["method"], **named}

        async with httpx2.AsyncClient(timeout=20) as http:

            async def post(body: Any, **more: str) -> httpx2.Response:
                return await http.post(
                    mcp_url, content=json.dumps(body), headers={**routing(body), **more}
                )

            post.http, post.routing, post.url = http, routing, mcp_url  # type: ignore[attr-defined]
            yield post

    return _open


@pytest.fixture
def tasks_run_in(mcp_app: Any) -> list[str]:
    """The coroutine of the task each call of ``test_where`` ran in: the POST's own
    (Tornado's ``RequestHandler._execute``) or a task the SDK started for it."""
    seen: list[str] = []

    async def where(ctx: ToolContext) -> str:
        task = asyncio.current_task()
        seen.append(getattr(task.get_coro(), "__qualname__", "") if task else "")
        return "here"

    add_tool(mcp_app, "test_where", where, read_only=True)
    return seen


IN_THE_POST = "RequestHandler._execute"


async def test_modern_answers_and_errors_are_the_sdks(
    surface, modern, mcp_app, jp_root_dir, tasks_run_in, monkeypatch
):
    """Results, failures, unknown tools, bad params and the era's own checks (its ``_meta``,
    its routing headers): the same statuses and bodies either way; inline, the call ran in
    the POST's task, else in one the SDK started."""

    def broken(ctx: ToolContext) -> str:
        raise RuntimeError("a bug in the tool")

    add_tool(mcp_app, "test_broken", broken, read_only=True)
    (jp_root_dir / "a.txt").write_text("alpha\n")
    no_meta = call(8, "get_file_text_by_path", {"pathInProject": "a.txt"})
    sent: list[tuple[dict[str, Any], dict[str, str]]] = [
        (modern_call(2, "get_file_text_by_path", {"pathInProject": "a.txt"}), {}),
        (modern_call(3, "get_file_text_by_path", {"pathInProject": "missing.txt"}), {}),
        (modern_call(4, "test_broken"), {}),
        (modern_call(5, "no_such_tool"), {}),
        (modern_call(6, "get_file_text_by_path", "not an object"), {}),
        (
            modern_call(7, "get_file_text_by_path", {"pathInProject": "a.txt"}),
            {"Mcp-Method": "tools/list"},
        ),
        (no_meta, {}),
        (modern_call(9, "test_where"), {}),
    ]
    answered: dict[bool, list[tuple[int, str, Any]]] = {}
    for inline in INLINE:
        monkeypatch.setattr(surface, "inline_calls", inline)
        async with modern() as post:
            answers = [await post(body, **headers) for body, headers in sent]
        answered[inline] = [(a.status_code, a.headers["content-type"], a.json()) for a in answers]

    assert answered[True] == answered[False]
    statuses, types, bodies = zip(*answered[True], strict=True)
    assert all(t.startswith("application/json") for t in types)
    assert "alpha" in bodies[0]["result"]["content"][0]["text"]
    assert bodies[1]["result"]["isError"] is True
    assert bodies[2]["result"]["isError"] is True
    assert bodies[3]["error"]["code"] == -32602
    assert bodies[4]["error"]["code"] == -32602
    assert statuses[5] == 400 and "error" in bodies[5]  # the header disagrees with the body
    assert statuses[6] >= 400 and "error" in bodies[6]  # no protocol version in _meta
    assert bodies[7]["result"]["content"][0]["text"] == "here"
    assert tasks_run_in[0] == IN_THE_POST and tasks_run_in[1] != IN_THE_POST


async def test_a_modern_call_that_asked_for_progress_is_not_inline(
    surface, modern, jp_root_dir, tasks_run_in
):
    """Progress comes on the call's own event stream: the SDK's way."""
    async with modern() as post:
        tracked = await post(modern_call(2, "test_where", progressToken="p"))

    assert tracked.status_code == 200 and "here" in tracked.text
    assert tasks_run_in and tasks_run_in[0] != IN_THE_POST


@pytest.mark.parametrize("inline", INLINE)
async def test_a_modern_client_that_leaves_stops_its_call(
    surface, modern, mcp_app, monkeypatch, inline
):
    monkeypatch.setattr(surface, "inline_calls", inline)
    state = add_slow_tool(mcp_app, read_only=True)
    async with modern() as post:
        running = asyncio.ensure_future(post(modern_call(2, "test_slow")))
        await asyncio.wait_for(state.started.wait(), 10)
        running.cancel()  # the connection closes under the call
        await asyncio.wait_for(state.cancelled.wait(), 10)


@pytest.mark.parametrize("inline", INLINE)
async def test_a_silent_modern_call_gets_the_sdks_pings(
    surface, modern, mcp_app, monkeypatch, tasks_run_in, inline
):
    """Past the SDK's ping interval without a word, a call's answer becomes an event stream
    that pings, then carries the answer as its one message: the same both ways."""
    from mcp.server import _streamable_http_modern

    if not isinstance(getattr(_streamable_http_modern, "_SSE_PING_INTERVAL", None), float):
        pytest.skip("this SDK has no ping interval where inline_calls reads it")
    monkeypatch.setattr(_streamable_http_modern, "_SSE_PING_INTERVAL", 0.05)
    monkeypatch.setattr(surface, "inline_calls", inline)
    release = asyncio.Event()

    async def waits(ctx: ToolContext) -> str:
        await release.wait()
        return "released"

    add_tool(mcp_app, "test_waits", waits, read_only=True)
    async with modern() as post:
        sent = modern_call(2, "test_waits")
        async with post.http.stream(
            "POST", post.url, content=json.dumps(sent), headers=post.routing(sent)
        ) as streamed:
            received = b""
            chunks = streamed.aiter_raw()
            while b": ping" not in received:
                received += await asyncio.wait_for(chunks.__anext__(), 10)
            release.set()
            async for chunk in chunks:
                received += chunk

    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [e for e in received.decode().split("\r\n\r\n") if e.startswith("event: message")]
    assert len(events) == 1
    answer = json.loads(events[0].split("data: ", 1)[1])
    assert answer["id"] == 2 and answer["result"]["content"][0]["text"] == "released"
