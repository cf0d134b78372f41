"""The stdio relay (``jupyter-mcp-ide stdio``) driven by the official SDK's stdio client.

The relay is a real subprocess that finds the test server through its runtime file (no
``--url``/``--token``), relaying to the server that runs in this test's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_lists import list_all
from mcp_messages import INITIALIZED, initialize
from tool_doubles import add_slow_tool, add_tool

from jupyter_mcp.cli.launcher import relay_launcher
from jupyter_mcp.core.context import ToolContext

# The console script when this environment has it installed, else ``python -m jupyter_mcp.cli``.
RELAY, *RELAY_ARGS = relay_launcher()
#: The relay runs the code under test: this checkout when PYTHONPATH puts it first.
RELAY_ENV = (
    {
        "PYTHONPATH": os.pathsep.join(
            map(os.path.abspath, os.environ["PYTHONPATH"].split(os.pathsep))
        )
    }
    if os.environ.get("PYTHONPATH")
    else {}
)


@pytest.fixture
def runtime_dir(jp_serverapp: Any, http_server: Any) -> str:
    """The runtime folder holding the test server's ``jpserver-*.json`` (URL, token, root)."""
    if not os.path.exists(jp_serverapp.info_file):
        jp_serverapp.write_server_info_file()
    return str(Path(jp_serverapp.info_file).parent)


@pytest.fixture
def relay_params(runtime_dir: str, jp_root_dir: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """``relay_params(*args)``: spawn parameters for the relay run inside the project."""
    project_sub = jp_root_dir / "src" / "pkg"
    project_sub.mkdir(parents=True, exist_ok=True)

    def _params(*args: str, cwd: Path = project_sub) -> StdioServerParameters:
        return StdioServerParameters(
            command=RELAY,
            args=[*RELAY_ARGS, *(args or ["stdio"])],
            cwd=str(cwd),
            env={"JUPYTER_RUNTIME_DIR": runtime_dir, **RELAY_ENV},
        )

    return _params


@pytest.fixture
def errlog(tmp_path: Path):  # type: ignore[no-untyped-def]
    with open(tmp_path / "relay-stderr.log", "w+") as f:
        yield f


def stdio_client_for(params: StdioServerParameters, errlog: Any):  # type: ignore[no-untyped-def]
    from mcp.client.stdio import stdio_client

    return stdio_client(params, errlog=errlog)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_relay_finds_the_server_and_relays_both_eras(
    relay_params, errlog, mcp_app, jp_root_dir, mode
):
    (jp_root_dir / "notes.md").write_text("# Notes\n" + "word " * 3000)
    transport = stdio_client_for(relay_params(), errlog)

    async with Client(transport, mode=mode) as client:
        tools = await list_all(client)
        found = await client.call_tool("get_file_text_by_path", {"pathInProject": "notes.md"})
        missing = await client.call_tool("get_file_text_by_path", {"pathInProject": "nope.md"})
        protocol = client.protocol_version

    assert protocol == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    names = [t.name for t in tools]
    assert names == [t.name for t in mcp_app.registry.visible(mcp_app.tool_context)]
    reader = next(t for t in tools if t.name == "get_file_text_by_path")
    assert reader.annotations.read_only_hint is True
    assert found.is_error is False
    assert len(found.content[0].text) == 8000
    assert "resultStart=8000" in found.content[1].text
    assert missing.is_error is True and "nope.md" in missing.content[0].text


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_relay_serves_only_the_chosen_toolsets(
    relay_params, errlog, mcp_app, jp_root_dir, mode
):
    (jp_root_dir / "a.txt").write_text("hello\n")
    params = relay_params("stdio", "--toolsets", "search,git")

    async with Client(stdio_client_for(params, errlog), mode=mode) as client:
        names = [t.name for t in await list_all(client)]
        refused = await client.call_tool("get_file_text_by_path", {"pathInProject": "a.txt"})
        found = await client.call_tool("find_files_by_name_substring", {"nameSubstring": "a.t"})

    ctx = mcp_app.tool_context
    assert names == [t.name for t in mcp_app.registry.visible(ctx, frozenset({"git", "search"}))]
    assert {t.toolset for t in mcp_app.registry.all() if t.name in names} == {"git", "search"}
    assert refused.is_error is True
    assert "not among the chosen toolsets (git, search)" in refused.content[0].text
    assert found.is_error is False and "a.txt" in found.content[0].text


async def test_relay_refuses_an_unknown_toolset_before_connecting(tmp_path):
    process = await asyncio.create_subprocess_exec(
        RELAY,
        *RELAY_ARGS,
        "stdio",
        "--url",
        "http://127.0.0.1:9/",
        "--toolsets",
        "files,gti",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(b""), 60)

    assert process.returncode == 2
    assert stdout == b""
    assert b"Unknown tool set 'gti' in toolsets" in stderr


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_relay_relays_progress_and_cancellation(relay_params, errlog, mcp_app, mode):
    state = add_slow_tool(mcp_app)

    def counting(ctx: ToolContext) -> str:
        for step in (1, 2):
            ctx.report_progress(step, 2, f"step {step}")
        return "counted"

    add_tool(mcp_app, "test_counting", counting)
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with Client(stdio_client_for(relay_params(), errlog), mode=mode) as client:
        counted = await client.call_tool("test_counting", {}, progress_callback=on_progress)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "test_slow", {})
            await asyncio.wait_for(state.started.wait(), 10)
            tg.cancel_scope.cancel()
        await asyncio.wait_for(state.cancelled.wait(), 10)

    assert counted.content[0].text == "counted"
    assert updates == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert state.finished is False


async def test_relay_takes_url_and_token_flags(
    relay_params, errlog, jp_serverapp, jp_base_url, tmp_path
):
    port = jp_serverapp.port
    url = f"http://127.0.0.1:{port}{jp_base_url}"
    token = jp_serverapp.identity_provider.token
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    params = relay_params("stdio", "--url", url, "--token", token, cwd=outside)

    async with Client(stdio_client_for(params, errlog), mode="legacy") as client:
        result = await client.call_tool("list_files_in_folder", {"pathInProject": "/"})

    assert result.is_error is False


async def test_relay_without_a_running_server_says_so(tmp_path):
    empty_runtime = tmp_path / "runtime"
    empty_runtime.mkdir()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(empty_runtime)}
    process = await asyncio.create_subprocess_exec(
        RELAY,
        *RELAY_ARGS,
        "stdio",
        cwd=tmp_path,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(b""), 60)

    assert process.returncode == 1
    assert stdout == b""
    assert b"No running Jupyter server found" in stderr
    assert b"--url" in stderr


async def test_relay_reports_an_unreachable_server_as_an_error_answer(tmp_path):
    request = initialize("2025-06-18", id=7, client="t")
    process = await asyncio.create_subprocess_exec(
        RELAY,
        *RELAY_ARGS,
        "stdio",
        "--url",
        "http://127.0.0.1:9/",
        "--token",
        "x",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, _ = await asyncio.wait_for(
        process.communicate(json.dumps(request).encode() + b"\n"), 60
    )

    answer = json.loads(stdout.decode().strip())
    assert answer["id"] == 7
    assert "unreachable" in answer["error"]["message"]
    assert process.returncode == 0


async def test_relay_opens_a_new_session_when_the_server_lost_its_own(
    relay_params, errlog, mcp_app, jp_root_dir, jp_serverapp
):
    from jupyter_mcp.surfaces.mcp import MCPSurface, allowed_hosts

    (jp_root_dir / "kept.txt").write_text("still here\n")
    services = mcp_app.tool_context.services

    async with Client(stdio_client_for(relay_params(), errlog), mode="legacy") as client:
        before = await client.call_tool("get_file_text_by_path", {"pathInProject": "kept.txt"})
        # What a restarted server has: the same routes, no memory of the relay's session.
        await services.mcp_surface.stop()
        services.mcp_surface = MCPSurface(
            mcp_app.registry, mcp_app.tool_context, allowed_hosts=allowed_hosts(jp_serverapp)
        )
        after = await client.call_tool("get_file_text_by_path", {"pathInProject": "kept.txt"})
        listed = await client.list_tools()

    assert before.is_error is False and after.is_error is False
    assert "still here" in after.content[0].text
    assert listed.tools


class Updates:
    """The ``notifications/resources/updated`` a client heard, by URI."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.event = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            self.uris.append(str(message.params.uri))
            self.event.set()

    async def wait_for(self, uri: str) -> None:
        with anyio.fail_after(15):
            while uri not in self.uris:
                self.event.clear()
                await self.event.wait()


async def test_relay_relays_a_listen_streams_resource_updates(relay_params, errlog, jp_root_dir):
    target = jp_root_dir / "watched.txt"
    target.write_text("0\n")
    uri = "jupyter-mcp://file/watched.txt"
    async with Client(stdio_client_for(relay_params(), errlog), mode="auto") as client:
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            target.write_text("2\n")
            with anyio.fail_after(15):
                event = await subscription.__anext__()
    assert event.uri == uri


async def test_relay_relays_subscriptions_and_makes_them_again_after_a_server_restart(
    relay_params, errlog, mcp_app, jp_root_dir, jp_serverapp
):
    from jupyter_mcp.surfaces.mcp import MCPSurface, allowed_hosts

    target = jp_root_dir / "watched.txt"
    target.write_text("0\n")
    uri = "jupyter-mcp://file/watched.txt"
    services = mcp_app.tool_context.services
    heard = Updates()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with Client(
            stdio_client_for(relay_params(), errlog), mode="legacy", message_handler=heard
        ) as client:
            await client.subscribe_resource(uri)
            target.write_text("changed\n")
            await heard.wait_for(uri)
            heard.uris.clear()
            # The server restarts: it forgets the session and its subscriptions
            await services.mcp_surface.stop()
            services.mcp_surface = MCPSurface(
                mcp_app.registry, mcp_app.tool_context, allowed_hosts=allowed_hosts(jp_serverapp)
            )
            assert services.subscriptions.watched == 0
            # The next request finds the session gone: the relay opens a new one, subscribed
            await client.send_ping()
            assert services.subscriptions.watched == 1
            # Changes are told once the relay listens on the new session's stream again (a
            # moment later: what is sent before that is not kept for it)
            with anyio.fail_after(30):
                for n in range(1, 1000):
                    target.write_text(f"{n}\n")
                    with anyio.move_on_after(0.6):
                        await heard.wait_for(uri)
                    if heard.uris:
                        break


class RelayLines:
    """The relay as a subprocess, driven one JSON-RPC line at a time (a 2025-11-25 client that
    sends ``params.task``, which the SDK's client has no method for)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self._ids = iter(range(1, 1_000_000))
        self._reader = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def start(cls, params: StdioServerParameters, errlog: Any) -> RelayLines:
        process = await asyncio.create_subprocess_exec(
            params.command,
            *params.args,
            cwd=params.cwd,
            env={**os.environ, **(params.env or {})},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=errlog,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.messages.append(json.loads(line))
            self._arrived.set()

    async def until(self, match: Any, timeout: float = 60) -> dict[str, Any]:
        """The first message ``match(message)`` holds for, waiting for it to arrive."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            found = next((m for m in self.messages if match(m)), None)
            if found is not None:
                return found
            self._arrived.clear()
            left = deadline - asyncio.get_running_loop().time()
            assert left > 0, f"no such message came; got {self.messages}"
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._arrived.wait(), left)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        number = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": number, "method": method, "params": params or {}})
        return await self.until(lambda m: m.get("id") == number and "method" not in m)

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await asyncio.wait_for(self.process.wait(), 60)
        self._reader.cancel()


async def test_relay_passes_tasks_through_both_eras_and_a_server_restart(
    relay_params, errlog, mcp_app, jp_serverapp
):
    from task_clients import TasksExtension

    from jupyter_mcp.surfaces.mcp import MCPSurface, allowed_hosts

    services = mcp_app.tool_context.services
    relay = await RelayLines.start(relay_params(), errlog)
    try:
        opened = await relay.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "lines", "version": "0"},
            },
        )
        relay.send(INITIALIZED)
        wait = {"name": "wait", "arguments": {"milliseconds": 1500}, "task": {"ttl": 60000}}
        created = await relay.request("tools/call", wait)
        task_id = created["result"]["task"]["taskId"]
        polled = await relay.request("tasks/get", {"taskId": task_id})
        result = await relay.request("tasks/result", {"taskId": task_id})
        status = await relay.until(lambda m: m.get("method") == "notifications/tasks/status")
        # The server restarts: its tasks are gone, the relay opens a new session.
        await services.mcp_surface.stop()
        services.mcp_surface = MCPSurface(
            mcp_app.registry, mcp_app.tool_context, allowed_hosts=allowed_hosts(jp_serverapp)
        )
        lost = await relay.request("tasks/get", {"taskId": task_id})
        again = await relay.request("tools/call", {**wait, "arguments": {"milliseconds": 10}})
        collected = await relay.request(
            "tasks/result", {"taskId": again["result"]["task"]["taskId"]}
        )
    finally:
        await relay.close()
    ext = TasksExtension()
    async with Client(
        stdio_client_for(relay_params(), errlog), mode="2026-07-28", extensions=[ext]
    ) as client:
        modern = await client.call_tool("wait", {"milliseconds": 2500})

    assert opened["result"]["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
    assert polled["result"]["taskId"] == task_id
    assert "1500 milliseconds" in result["result"]["content"][0]["text"]
    assert result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"] == task_id
    assert status["params"] == {**status["params"], "taskId": task_id, "status": "completed"}
    assert lost["error"]["code"] == -32602 and "restarted" in lost["error"]["message"]
    assert "10 milliseconds" in collected["result"]["content"][0]["text"]
    # 2026-07-28 through the relay: the task was handed out and polled (Mcp-Name: its id).
    assert len(ext.created) == 1 and "2500 milliseconds" in modern.content[0].text


async def test_relay_relays_the_task_notifications_of_a_listen_stream(relay_params, errlog):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "lines", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }
    relay = await RelayLines.start(relay_params(), errlog)
    try:
        wait = {"name": "wait", "arguments": {"milliseconds": 2500}, "_meta": meta}
        created = await relay.request("tools/call", wait)
        task_id = created["result"]["taskId"]
        listen = {"notifications": {"taskIds": [task_id]}, "_meta": meta}
        relay.send(
            {"jsonrpc": "2.0", "id": "tasks", "method": "subscriptions/listen", "params": listen}
        )
        ack = await relay.until(
            lambda m: m.get("method") == "notifications/subscriptions/acknowledged"
        )
        ended = await relay.until(
            lambda m: (
                m.get("method") == "notifications/tasks" and m["params"]["status"] == "completed"
            ),
            timeout=120,
        )
        # The client ends its stream as the specification says: it cancels the request.
        cancel = {"requestId": "tasks", "_meta": meta}
        relay.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    finally:
        await relay.close()

    assert created["result"]["resultType"] == "task"
    assert ack["params"]["notifications"]["taskIds"] == [task_id]
    assert ended["params"]["taskId"] == task_id
    assert "2500 milliseconds" in ended["params"]["result"]["content"][0]["text"]


async def _eventually(check: Any, timeout: float = 30) -> None:
    """Wait for ``check()`` to hold (the server notices a closed connection a moment later)."""
    with anyio.fail_after(timeout):
        while not check():
            await asyncio.sleep(0.05)


async def _relay_ends(relay: RelayLines, how: str) -> None:
    """End the relay as a client does (stdin closed, or SIGTERM); it exits by itself. The
    bound only stops a hang: before the fix the relay waited 30 s for its open streams."""
    assert relay.process.stdin is not None
    if how == "eof":
        relay.process.stdin.close()
    else:
        relay.process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(relay.process.wait(), 10)
    finally:
        if relay.process.returncode is None:
            relay.process.kill()
            await relay.process.wait()
        relay._reader.cancel()
    assert relay.process.returncode == 0


@pytest.mark.parametrize("how", ["eof", "sigterm"])
async def test_relay_exits_at_once_when_its_client_goes_with_a_listen_stream_open(
    relay_params, errlog, mcp_app, jp_root_dir, how
):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "lines", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    (jp_root_dir / "watched.txt").write_text("0\n")
    hub = mcp_app.tool_context.services.subscriptions
    slow = add_slow_tool(mcp_app, "test_slow_until_cancelled")
    relay = await RelayLines.start(relay_params(), errlog)
    listen = {
        "notifications": {"resourceSubscriptions": ["jupyter-mcp://file/watched.txt"]},
        "_meta": meta,
    }
    relay.send({"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen", "params": listen})
    await relay.until(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
    call = {"name": "test_slow_until_cancelled", "arguments": {}, "_meta": meta}
    relay.send({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": call})
    await asyncio.wait_for(slow.started.wait(), 60)
    assert hub.streams == 1 and hub.watched == 1

    await _relay_ends(relay, how)

    # The server saw the relay go: the stream and its watch are gone, the call cancelled.
    await _eventually(lambda: hub.streams == 0 and hub.watched == 0)
    await asyncio.wait_for(slow.cancelled.wait(), 30)


@pytest.mark.parametrize("how", ["eof", "sigterm"])
async def test_relay_ends_its_legacy_session_at_once_when_its_client_goes(
    relay_params, errlog, mcp_app, jp_root_dir, how
):
    (jp_root_dir / "watched.txt").write_text("0\n")
    hub = mcp_app.tool_context.services.subscriptions
    slow = add_slow_tool(mcp_app, "test_slow_until_cancelled")
    relay = await RelayLines.start(relay_params(), errlog)
    await relay.request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "lines", "version": "0"},
        },
    )
    relay.send(INITIALIZED)
    await relay.request("resources/subscribe", {"uri": "jupyter-mcp://file/watched.txt"})
    relay.send(
        {
            "jsonrpc": "2.0",
            "id": "c",
            "method": "tools/call",
            "params": {"name": "test_slow_until_cancelled", "arguments": {}},
        }
    )
    await asyncio.wait_for(slow.started.wait(), 60)
    assert len(hub.sessions()) == 1 and hub.watched == 1

    await _relay_ends(relay, how)

    # The relay ended its session (and with it the session's GET stream and the call).
    await _eventually(lambda: not hub.sessions() and hub.watched == 0)
    await asyncio.wait_for(slow.cancelled.wait(), 30)


async def test_relay_exits_when_its_client_closed_its_stdout(relay_params, errlog, mcp_app):
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "lines", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    hub = mcp_app.tool_context.services.subscriptions
    params = relay_params()
    read_end, write_end = os.pipe()
    process = await asyncio.create_subprocess_exec(
        params.command,
        *params.args,
        cwd=params.cwd,
        env={**os.environ, **(params.env or {})},
        stdin=asyncio.subprocess.PIPE,
        stdout=write_end,
        stderr=errlog,
    )
    os.close(write_end)
    assert process.stdin is not None
    try:
        listen = {"notifications": {"toolsListChanged": True}, "_meta": meta}
        line = {"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen", "params": listen}
        process.stdin.write(json.dumps(line).encode() + b"\n")
        with open(read_end, "rb", buffering=0, closefd=False) as stdout:
            first = await asyncio.to_thread(stdout.readline)
        assert b"notifications/subscriptions/acknowledged" in first
        assert hub.streams == 1
        os.close(read_end)  # the client stops reading: the next answer cannot be written
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": meta}}
        process.stdin.write(json.dumps(ping).encode() + b"\n")
        await asyncio.wait_for(process.wait(), 10)  # the bound only stops a hang
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

    assert process.returncode == 0
    await _eventually(lambda: hub.streams == 0)
