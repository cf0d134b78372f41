"""Legacy calls answered as JSON run in their POST's task (surfaces/inline_calls.py).

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
