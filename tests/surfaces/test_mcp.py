"""Standard MCP at ``{base_url}mcp`` through the official SDK client, both protocol eras.

``legacy`` is the initialize handshake (sessions, SSE); ``auto`` probes ``server/discover`` and
so speaks 2026-07-28 with this server.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import weakref
from typing import Any

import anyio
import httpx2
import pytest
from mcp import MCPError
from mcp_lists import list_all
from mcp_messages import INITIALIZED, initialize
from tool_doubles import add_slow_tool, add_tool

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.registry import Tool
from jupyter_mcp.surfaces.asgi import StreamableHTTPHandler

MODES = ["legacy", "auto"]


# --- handshake, discovery ---------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_handshake_gives_server_info_and_instructions(connect, mode):
    async with connect(mode) as client:
        if mode == "legacy":
            assert client.protocol_version == "2025-11-25"
        else:
            assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.tools is not None
        instructions = client.instructions or ""
        assert "relative to the project root" in instructions
        assert "percent-format" in instructions
        assert "resultStart" in instructions
        assert "at most 8000 characters" in instructions
        assert "0-based" in instructions and "1-based" in instructions


async def test_ping_on_legacy_session(connect):
    async with connect("legacy") as client:
        # send_ping raises unless the server answers; the session stays usable after it.
        await asyncio.wait_for(client.session.send_ping(), timeout=10)
        assert (await client.list_tools(cache_mode="refresh")).tools


# --- tools/list -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_lists_every_registry_tool_with_annotations_and_schema(connect, mcp_app, mode):
    async with connect(mode) as client:
        listed = await list_all(client)

    expected = mcp_app.registry.visible(mcp_app.tool_context)
    window = mcp_app.tool_context.settings.result_window
    assert [t.name for t in listed] == [t.name for t in expected]
    by_name = {t.name: t for t in listed}
    for tool in expected:
        got = by_name[tool.name]
        hints = tool.annotations
        assert got.title == hints["title"]
        assert got.annotations is not None
        assert got.annotations.read_only_hint is hints["readOnlyHint"]
        assert got.annotations.destructive_hint is hints["destructiveHint"]
        assert got.annotations.idempotent_hint is hints["idempotentHint"]
        assert got.annotations.open_world_hint is hints["openWorldHint"]
        assert got.input_schema == tool.advertised_schema(window)
    reader = by_name["get_file_text_by_path"]
    assert reader.annotations.read_only_hint is True
    assert "resultStart" in reader.input_schema["properties"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_registered_again_is_listed_as_it_is_now(connect, mcp_app, mode):
    # Given a session that listed a plugin-like tool once
    async def one() -> str:
        return "one"

    add_tool(mcp_app, "probe_tool", one)
    async with connect(mode) as client:
        first = {t.name: t for t in await list_all(client)}["probe_tool"]
        # When the tool is withdrawn and registered again (a plugin reloaded) with another
        # description and argument
        mcp_app.registry.remove("probe_tool")
        mcp_app.registry.add(
            Tool(
                name="probe_tool",
                description="the probe, reloaded",
                properties={"level": {"type": "integer"}},
                fn=one,
            )
        )
        # Then the next listing shows the new declaration, not the one made before
        again = {t.name: t for t in await list_all(client)}["probe_tool"]
    assert first.description == "test tool probe_tool"
    assert again.description == "the probe, reloaded"
    assert "level" in again.input_schema["properties"]
    assert "level" not in first.input_schema["properties"]


SMALL_WINDOW = {
    "ServerApp": {
        "jpserver_extensions": {"jupyter_mcp": True},
        "allow_unauthenticated_access": False,
    },
    "JupyterMCP": {"result_window": 500},
}


@pytest.mark.parametrize("jp_server_config", [SMALL_WINDOW])
@pytest.mark.parametrize("mode", MODES)
async def test_every_surface_advertises_the_configured_result_window(
    connect, jp_fetch, jp_root_dir, mode
):
    # Given c.JupyterMCP.result_window = 500, every listed schema says 500 …
    async with connect(mode) as client:
        listed = await list_all(client)
        assert "at most 500 characters" in (client.instructions or "")
        (jp_root_dir / "big.txt").write_text("x" * 2000)
        answer = await client.call_tool("get_file_text_by_path", {"pathInProject": "big.txt"})
    seed = json.loads((await jp_fetch("mcp", "list_tools")).body)
    proxied = json.loads((await jp_fetch("api", "mcp", "list_tools")).body)
    schemas = [t.input_schema for t in listed] + [t["inputSchema"] for t in seed + proxied]
    assert len(schemas) == 3 * len(listed)
    for schema in schemas:
        end = schema["properties"]["resultEnd"]
        assert end["default"] == 500
        assert "at most resultStart+500." in end["description"] and "8000" not in end["description"]
    # … and that is the window a call gets.
    assert len(answer.content[0].text) == 500
    assert "resultStart=500" in answer.content[1].text


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_pages_with_a_cursor(connect, mcp_app, mode):
    mcp_app.tool_context.services.mcp_surface.page_size = 7
    async with connect(mode) as client:
        first = await client.list_tools(cache_mode="refresh")
        assert len(first.tools) == 7 and first.next_cursor
        listed = await list_all(client)
        with pytest.raises(MCPError) as refused:
            await client.list_tools(cursor="not-a-cursor", cache_mode="refresh")

    names = [t.name for t in listed]
    assert names == [t.name for t in mcp_app.registry.visible(mcp_app.tool_context)]
    assert len(set(names)) == len(names)
    assert refused.value.code == -32602
    assert "Invalid cursor" in refused.value.message


# --- tools/call -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_call_returns_text_and_structured_content(connect, jp_root_dir, mode):
    (jp_root_dir / "hello.py").write_text("print('hi')\n")
    async with connect(mode) as client:
        result = await client.call_tool("get_file_text_by_path", {"pathInProject": "hello.py"})

    assert result.is_error is False
    # The text, then a link to the file it read
    assert [block.type for block in result.content] == ["text", "resource_link"]
    assert result.content[1].uri == "jupyter-mcp://file/hello.py"
    value = json.loads(result.content[0].text)
    assert value["content"] == "print('hi')\n"
    assert value["relativePath"] == "hello.py"
    assert result.structured_content == value


@pytest.mark.parametrize("mode", MODES)
async def test_tool_failure_is_an_error_result_with_the_message(connect, jp_root_dir, mode):
    async with connect(mode) as client:
        missing = await client.call_tool("get_file_text_by_path", {"pathInProject": "nope.txt"})
        invalid = await client.call_tool("get_file_text_by_path", {"pathInProject": 3})
        outside = await client.call_tool("get_file_text_by_path", {"pathInProject": "../x"})

    assert missing.is_error is True
    assert "nope.txt" in missing.content[0].text
    assert invalid.is_error is True
    assert "pathInProject" in invalid.content[0].text
    assert outside.is_error is True
    assert missing.structured_content is None


@pytest.mark.parametrize("mode", MODES)
async def test_a_bug_in_a_tool_answers_alike_on_every_surface(connect, mcp_app, jp_fetch, mode):
    def raising(ctx: ToolContext) -> str:
        raise KeyError("boom")

    def unserialisable(ctx: ToolContext) -> Any:
        return {1, 2}  # a set is no JSON value: the bug shows after the function returned

    add_tool(mcp_app, "test_raising", raising, read_only=True)
    add_tool(mcp_app, "test_unserialisable", unserialisable, read_only=True)
    names = ("test_raising", "test_unserialisable")
    async with connect(mode) as client:
        results = {name: await client.call_tool(name, {}) for name in names}

    for name, result in results.items():
        seed = json.loads((await jp_fetch("mcp", name, method="POST", body="{}")).body)
        assert result.is_error is True
        assert result.content[0].text.startswith(f"{name} failed unexpectedly: ")
        assert result.content[0].text == seed["error"]
        assert seed["status"] is None


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_is_a_protocol_error(connect, mode):
    async with connect(mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool("no_such_tool", {})
    assert refused.value.code == -32602
    assert "Unknown tool: no_such_tool" in refused.value.message


@pytest.mark.parametrize("mode", MODES)
async def test_long_result_is_windowed_with_a_trailer(connect, jp_root_dir, mode):
    text = "".join(f"line {i:05d} " + "x" * 40 + "\n" for i in range(400))  # ~20 000 chars
    (jp_root_dir / "big.txt").write_text(text)
    async with connect(mode) as client:
        first = await client.call_tool("get_file_text_by_path", {"pathInProject": "big.txt"})
        second = await client.call_tool(
            "get_file_text_by_path", {"pathInProject": "big.txt", "resultStart": 8000}
        )

    whole = json.dumps(
        {
            "content": text,
            "path": str(jp_root_dir / "big.txt"),
            "relativePath": "big.txt",
        },
        ensure_ascii=False,
    )
    assert first.is_error is False
    assert first.content[0].text == whole[:8000]
    assert [block.type for block in first.content] == ["text", "text", "resource_link"]
    trailer = first.content[1].text
    assert str(len(whole)) in trailer and "resultStart=8000" in trailer
    assert first.structured_content is None  # the whole value would defeat the window
    assert second.content[0].text == whole[8000:16000]
    assert "resultStart=16000" in second.content[1].text
    assert len(second.content) == 2  # the link came with the first window


# --- progress, logging, cancellation ----------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_progress_notifications_reach_the_client(connect, mcp_app, mode):
    def counting(ctx: ToolContext) -> str:  # a sync tool: runs in a worker thread
        for step in range(1, 4):
            ctx.report_progress(step, 3, f"step {step}")
        return "counted"

    add_tool(mcp_app, "test_counting", counting, read_only=True)
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with connect(mode) as client:
        result = await client.call_tool("test_counting", {}, progress_callback=on_progress)

    assert result.content[0].text == "counted"
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.parametrize("mode", MODES)
async def test_tool_log_lines_reach_a_client_that_asked_for_them(connect, mcp_app, mode):
    async def chatty(ctx: ToolContext) -> str:
        ctx.log.info("jupyter_mcp test: working on it")
        ctx.log.debug("jupyter_mcp test: too detailed")
        return "done"

    add_tool(mcp_app, "test_chatty", chatty, read_only=True)
    received: list[Any] = []

    async def on_log(params: Any) -> None:
        received.append(params)

    options: dict[str, Any] = {"logging_callback": on_log}
    if mode == "auto":
        options["log_level"] = "info"
    async with connect(mode, **options) as client:
        if mode == "legacy":
            await client.session.set_logging_level("info")
        await client.call_tool("test_chatty", {})

    texts = [p.data for p in received]
    assert "jupyter_mcp test: working on it" in texts
    assert "jupyter_mcp test: too detailed" not in texts
    assert all(p.level == "info" for p in received if "jupyter_mcp test" in p.data)


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_a_call_stops_the_work(connect, mcp_app, mode):
    state = add_slow_tool(mcp_app, read_only=True)
    async with connect(mode) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "test_slow", {})
            await asyncio.wait_for(state.started.wait(), 10)
            tg.cancel_scope.cancel()
        await asyncio.wait_for(state.cancelled.wait(), 10)
        # The session still serves calls afterwards.
        tools = await list_all(client)

    assert state.finished is False
    assert "test_slow" in [t.name for t in tools]


async def test_tools_list_changed_is_announced_on_a_legacy_session(connect, mcp_app):
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with connect("legacy", message_handler=on_message) as client:
        before = await list_all(client)
        await asyncio.sleep(0.3)  # let the client open its GET stream
        mcp_app.read_only = True
        await asyncio.wait_for(changed.wait(), 10)
        after = await list_all(client)

    assert len(after) < len(before)
    assert all(t.annotations.read_only_hint for t in after)


async def test_a_legacy_session_that_ended_leaves_nothing_on_the_surface(
    connect, mcp_app, jp_root_dir
):
    """A legacy session's channel (the SDK's session object, with its streams) and its log
    level are kept to announce tool list changes and to filter its log lines; once it ended
    they went only when the tool list changed, or beyond 10,000 sessions: a soak's every
    session stayed in the server's memory."""
    surface = mcp_app.tool_context.services.mcp_surface
    if not hasattr(surface.manager, "_server_instances"):
        pytest.skip("this SDK lists no live sessions: ended ones go only beyond the bound")
    (jp_root_dir / "a.txt").write_text("alpha\n")
    before = set(surface._sessions)
    async with connect("legacy") as client:
        await client.session.set_logging_level("info")
        await client.call_tool("get_file_text_by_path", {"pathInProject": "a.txt"})
        (session_id,) = set(surface._sessions) - before
        assert session_id in surface._levels
        channel = weakref.ref(surface._sessions[session_id])
    # The client ended it (DELETE); the tool list did not change.
    for _ in range(600):
        if session_id not in surface._sessions and session_id not in surface._levels:
            break
        await asyncio.sleep(0.05)
    assert session_id not in surface._sessions and session_id not in surface._levels
    gc.collect()
    assert channel() is None, [type(r).__name__ for r in gc.get_referrers(channel())]


async def test_tools_list_changed_reaches_a_modern_listen_stream(connect, mcp_app):
    async with connect("auto") as client:
        assert client.server_capabilities.tools.list_changed is True
        before = await list_all(client)
        async with client.listen(tools_list_changed=True) as subscription:
            mcp_app.read_only = True
            with anyio.fail_after(10):
                async for event in subscription:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
        after = await list_all(client)

    assert len(after) < len(before)


# --- HTTP layer: auth, origin, Accept, sessions -----------------------------------------

INITIALIZE = initialize("2025-06-18")


async def post(url: str, body: Any, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(url, content=json.dumps(body), headers=headers)


async def test_missing_or_wrong_token_is_refused(mcp_url):
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    missing = await post(mcp_url, INITIALIZE, headers)
    wrong = await post(mcp_url, INITIALIZE, {**headers, "Authorization": "token wrong"})
    # No credential at all: the OAuth challenge (tests/auth); a wrong one: refused.
    assert missing.status_code == 401
    assert missing.headers["WWW-Authenticate"].startswith("Bearer resource_metadata=")
    assert wrong.status_code == 403
    assert missing.json()["error"]["message"]


async def test_foreign_origin_is_refused_even_with_the_token(mcp_url, token):
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"token {token}",
    }
    foreign = await post(mcp_url, INITIALIZE, {**headers, "Origin": "http://evil.example.com"})
    own_origin = mcp_url.split("/a%40b/")[0]
    own = await post(mcp_url, INITIALIZE, {**headers, "Origin": own_origin})
    assert foreign.status_code == 403
    assert "Origin" in foreign.json()["error"]["message"]
    assert own.status_code == 200


async def test_foreign_host_is_refused(mcp_url, token):
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"token {token}",
        "Host": "evil.example.com",
    }
    response = await post(mcp_url, INITIALIZE, headers)
    assert response.status_code in (403, 421)


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_json_only_client_gets_a_json_answer(mcp_url, token, version):
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "Authorization": f"token {token}",
    }
    body = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
    response = await post(mcp_url, body, headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    answer = response.json()
    assert answer["id"] == 1
    assert answer["result"]["protocolVersion"] == version
    assert answer["result"]["serverInfo"]["name"] == "jupyter-mcp"
    assert response.headers.get("mcp-session-id")


async def test_legacy_session_lifecycle_over_raw_http(mcp_url, token):
    auth = {"Authorization": f"token {token}"}
    post_headers = {
        **auth,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx2.AsyncClient(timeout=10) as http:
        opened = await http.post(mcp_url, content=json.dumps(INITIALIZE), headers=post_headers)
        session = opened.headers["mcp-session-id"]
        in_session = {
            **post_headers,
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": "2025-06-18",
        }
        accepted = await http.post(mcp_url, content=json.dumps(INITIALIZED), headers=in_session)
        async with http.stream(
            "GET", mcp_url, headers={**in_session, "Accept": "text/event-stream"}
        ) as stream:
            stream_status = stream.status_code
            stream_type = stream.headers["content-type"]
        listed = await http.post(
            mcp_url,
            content=json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            headers=in_session,
        )
        ended = await http.delete(mcp_url, headers=in_session)
        after = await http.post(
            mcp_url,
            content=json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
            headers=in_session,
        )

    assert opened.status_code == 200
    assert accepted.status_code == 202
    assert stream_status == 200 and stream_type.startswith("text/event-stream")
    assert listed.status_code == 200 and "get_file_text_by_path" in listed.text
    assert ended.status_code == 200
    assert after.status_code == 404


async def test_legacy_calls_stream_only_when_they_have_something_to_stream(
    mcp_url, token, mcp_app, jp_root_dir
):
    def counting(ctx: ToolContext) -> str:
        ctx.report_progress(1, 1, "done")
        return "counted"

    add_tool(mcp_app, "test_counting", counting, read_only=True)
    (jp_root_dir / "a.txt").write_text("alpha\n")
    headers = {
        "Authorization": f"token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }

    def call(number: int, name: str, arguments: dict[str, Any], **meta: Any) -> str:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return json.dumps(
            {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
        )

    async with httpx2.AsyncClient(timeout=10) as http:
        opened = await http.post(mcp_url, content=json.dumps(INITIALIZE), headers=headers)
        headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-06-18"
        await http.post(mcp_url, content=json.dumps(INITIALIZED), headers=headers)
        # A plain call has nothing to stream: one JSON body
        plain = await http.post(
            mcp_url,
            content=call(2, "get_file_text_by_path", {"pathInProject": "a.txt"}),
            headers=headers,
        )
        # A call that asked for progress gets an event stream with the progress first
        tracked = await http.post(
            mcp_url, content=call(3, "test_counting", {}, progressToken="p1"), headers=headers
        )
        # Once the session asked for log lines, its calls stream (the lines come in-band)
        level = {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "logging/setLevel",
            "params": {"level": "info"},
        }
        leveled = await http.post(mcp_url, content=json.dumps(level), headers=headers)
        logged = await http.post(
            mcp_url,
            content=call(5, "get_file_text_by_path", {"pathInProject": "a.txt"}),
            headers=headers,
        )

    assert plain.headers["content-type"].startswith("application/json")
    answer = plain.json()
    assert answer["id"] == 2 and "alpha" in answer["result"]["content"][0]["text"]
    assert answer["result"]["isError"] is False and "resultType" not in answer["result"]
    assert tracked.headers["content-type"].startswith("text/event-stream")
    assert tracked.text.index("notifications/progress") < tracked.text.index('"counted"')
    assert leveled.headers["content-type"].startswith("application/json")  # not a call
    assert logged.headers["content-type"].startswith("text/event-stream")
    assert "alpha" in logged.text


async def test_an_answered_request_is_freed_without_a_garbage_collection(
    mcp_url, token, mcp_app, jp_root_dir
):
    """Each request's handler (with its request, headers and connection state) is freed by
    reference counting once nothing uses it: a reference cycle through it (the OAuth identity
    held the handler's bound method) left every call's objects to the collector, about a
    twentieth of the endpoint's CPU per call."""
    assert mcp_app.tool_context.services.oauth is not None  # the identity that made the cycle
    (jp_root_dir / "a.txt").write_text("alpha\n")
    headers = {
        "Authorization": f"token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    body = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "get_file_text_by_path", "arguments": {"pathInProject": "a.txt"}},
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        opened = await http.post(mcp_url, content=json.dumps(INITIALIZE), headers=headers)
        headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        headers["MCP-Protocol-Version"] = "2025-11-25"
        await http.post(mcp_url, content=json.dumps(INITIALIZED), headers=headers)
        gc.collect()
        gc.disable()
        try:
            for number in range(2, 22):
                answer = await http.post(
                    mcp_url, content=json.dumps({**body, "id": number}), headers=headers
                )
                assert "alpha" in answer.json()["result"]["content"][0]["text"]
            # What only the collector frees (a cycle), kept by it for a look instead of freed.
            gc.set_debug(gc.DEBUG_SAVEALL)
            gc.collect()
            left = sum(isinstance(o, StreamableHTTPHandler) for o in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert left == 0, f"{left} handlers of 20 answered calls were left to the garbage collector"


async def test_a_modern_call_is_checked_against_its_tools_header_declarations(
    mcp_url, token, mcp_app
):
    """The SDK checks a 2026-07-28 call's ``Mcp-Param-*`` headers against the schema this
    server gives it for the tool (looked up per call): a property declared as a header must
    come with one that agrees with the body, and a tool the server does not offer has none."""

    def regional(ctx: ToolContext, region: str) -> str:
        return f"served {region}"

    mcp_app.registry.add(
        Tool(
            name="test_regional",
            description="test tool with a header-routed argument",
            properties={"region": {"type": "string", "x-mcp-header": "Region"}},
            required=["region"],
            fn=regional,
            read_only=True,
        )
    )
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {
        "Authorization": f"token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Mcp-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
        "Mcp-Name": "test_regional",
    }

    def call(number: int) -> str:
        params = {"name": "test_regional", "arguments": {"region": "eu"}, "_meta": meta}
        return json.dumps(
            {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}
        )

    async with httpx2.AsyncClient(timeout=30) as http:
        missing = await http.post(mcp_url, content=call(1), headers=headers)
        wrong = await http.post(
            mcp_url, content=call(2), headers={**headers, "Mcp-Param-Region": "us"}
        )
        agreeing = await http.post(
            mcp_url, content=call(3), headers={**headers, "Mcp-Param-Region": "eu"}
        )
        mcp_app.disabled_tools = ["test_regional"]
        try:
            disabled = await http.post(mcp_url, content=call(4), headers=headers)
        finally:
            mcp_app.disabled_tools = []

    assert missing.status_code == 400 and "Mcp-Param-Region" in missing.text
    assert wrong.status_code == 400 and "Mcp-Param-Region" in wrong.text
    assert agreeing.status_code == 200 and "served eu" in agreeing.text
    # Not offered: no declaration to check; the call itself is refused as disabled.
    assert disabled.status_code == 200 and "disabled" in disabled.text


async def test_seed_rest_routes_still_answer_beside_mcp(jp_fetch):
    response = await jp_fetch("mcp", "list_tools", method="GET")
    assert response.code == 200
    assert any(t["name"] == "get_file_text_by_path" for t in json.loads(response.body))


@pytest.mark.parametrize("mode", MODES)
async def test_cancelling_a_background_command_kills_it(connect, jp_root_dir, mode):
    pid_file = jp_root_dir / "pid.txt"

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    async with connect(mode) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                client.call_tool,
                "run_command_on_background",
                {"command": "echo $$ > pid.txt; sleep 60", "timeout": 120000},
            )
            for _ in range(200):
                if pid_file.exists() and pid_file.read_text().strip():
                    break
                await asyncio.sleep(0.05)
            pid = int(pid_file.read_text())
            assert alive(pid)
            tg.cancel_scope.cancel()
        for _ in range(200):
            if not alive(pid):
                break
            await asyncio.sleep(0.05)

    assert not alive(pid)


async def test_a_leaving_client_stops_only_calls_of_its_own_principal(tmp_path):
    from jupyter_mcp.core.registry import Registry
    from jupyter_mcp.surfaces.asgi import _principal
    from jupyter_mcp.surfaces.mcp import MCPSurface

    surface = MCPSurface(Registry([]), ToolContext(root_dir=tmp_path))
    mine, theirs = anyio.CancelScope(), anyio.CancelScope()
    surface._calls[("s1", "7")] = (mine, _principal("user:alice"))
    surface._calls[("s2", "7")] = (theirs, _principal("user:alice"))
    # A request of another principal naming alice's session and call stops nothing
    surface.cancel_call("s2", 7, _principal("user:mallory"))
    surface.cancel_call("s2", 7, None)
    assert not theirs.cancel_called
    # Alice's own request that left stops her call, and only that one
    surface.cancel_call("s1", 7, _principal("user:alice"))
    assert mine.cancel_called and not theirs.cancel_called
