"""Shared fixtures: a real Jupyter server (pytest-jupyter) with the extension enabled."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT
from server_configs import server_config

# lab_windows: scripted JupyterLab windows on the lab socket (the bridge, open_window fixtures).
pytest_plugins = ["pytest_jupyter.jupyter_server", "lab_windows"]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run, rather than hang it, when a test left an AnyIO worker thread stranded.

    AnyIO's worker threads are not daemons: each stops when the task it serves ends. A test
    whose event loop closed while such a task was still running (jupyter-collaboration saving
    a document the test changed, say) leaves a thread that waits forever, and the test process
    never exits; CI would sit out its whole time limit. Here such threads are named, stopped,
    and the run fails.
    """
    stranded = []
    for thread in threading.enumerate():
        task = getattr(thread, "root_task", None)
        if thread.daemon or task is None or not task.get_loop().is_closed():
            continue
        stranded.append(f"{thread.name} serving {task!r}")
        thread.stop()  # type: ignore[attr-defined]  # AnyIO's WorkerThread
    if stranded:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        message = (
            "A test's event loop closed while these tasks still ran in AnyIO worker threads "
            "(which would keep this process from exiting):\n  " + "\n  ".join(stranded)
        )
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(message, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """Jupyter with jupyter_mcp enabled and no unauthenticated access."""
    return server_config()


@pytest.fixture
def mcp_app(jp_serverapp: Any) -> Any:
    """The running ``JupyterMCP`` extension app."""
    return jp_serverapp.extension_manager.extension_apps["jupyter_mcp"].copy().pop()


@pytest.fixture
def mcp_url(http_server: Any, http_server_port: tuple[Any, int], jp_base_url: str) -> str:
    """The standard MCP endpoint (``{base_url}mcp``) of the running test server."""
    return f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"


@pytest.fixture
def token(jp_serverapp: Any) -> str:
    """The test server's token."""
    return str(jp_serverapp.identity_provider.token)


@pytest.fixture
def connect(mcp_url: str, token: str):  # type: ignore[no-untyped-def]
    """``async with connect(mode, **client_options) as client``: an official SDK client on
    ``/mcp`` (``mode`` ``legacy``: the 2025 handshake; ``auto``: 2026-07-28 with this server).
    ``query`` is added to the URL (``query="toolsets=files"``)."""

    @asynccontextmanager
    async def _connect(mode: str, *, query: str = "", **options: Any) -> AsyncIterator[Client]:
        # The SDK's own timeouts: an event stream may stay quiet for minutes (httpx's 5 s
        # would drop a quiet GET stream, and with it every notification, after two tries).
        timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
        headers = {"Authorization": f"token {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            url = f"{mcp_url}?{query}" if query else mcp_url
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode, **options) as client:
                yield client

    return _connect


@pytest.fixture
def no_kernels_left(jp_serverapp: Any, jp_asyncio_loop: Any) -> Iterator[None]:
    """After the test, end every kernel session it left (and their kernels)."""
    yield

    async def end_sessions() -> None:
        for session in await jp_serverapp.session_manager.list_sessions():
            await jp_serverapp.session_manager.delete_session(session["id"])

    jp_asyncio_loop.run_until_complete(end_sessions())


Caller = Callable[..., Awaitable[dict[str, Any]]]


@pytest.fixture
def call(jp_fetch: Any) -> Caller:
    """``await call(tool, **arguments)`` → the parsed ``{"status", "error"}`` of seed REST."""

    async def _call(tool: str, _surface: str = "mcp", **arguments: Any) -> dict[str, Any]:
        parts = ["api", "mcp", tool] if _surface == "api" else ["mcp", tool]
        # Some calls wait on purpose (waitMs, wait, timeouts of up to two minutes): the HTTP
        # client must outwait them, beyond pytest-jupyter's 20 s default.
        response = await jp_fetch(
            *parts, method="POST", body=json.dumps(arguments), request_timeout=180
        )
        assert response.code == 200
        return json.loads(response.body)

    return _call


@pytest.fixture
def ok(call: Caller) -> Callable[..., Awaitable[Any]]:
    """``await ok(tool, **arguments)`` → the call's ``status``, failing the test on an error."""

    async def _ok(tool: str, **arguments: Any) -> Any:
        answer = await call(tool, **arguments)
        assert answer["error"] is None, answer["error"]
        return answer["status"]

    return _ok


@pytest.fixture
def fails(call: Caller) -> Callable[..., Awaitable[str]]:
    """``await fails(tool, **arguments)`` → the error message, failing the test on success."""

    async def _fails(tool: str, **arguments: Any) -> str:
        answer = await call(tool, **arguments)
        assert answer["status"] is None, answer
        assert isinstance(answer["error"], str) and answer["error"]
        return answer["error"]

    return _fails
