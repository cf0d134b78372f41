"""Tool sets on every surface: the server's ``toolsets`` and each connection's choice.

A connection chooses with ``?toolsets=`` or the ``X-MCP-Toolsets`` header; seed REST, proxy
REST and standard MCP (both eras) list the same tools for the same choice and refuse the others
like disabled ones. The stdio relay's ``--toolsets`` is tested in tests/cli/test_relay.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_messages import initialize
from tornado.httpclient import HTTPClientError

from jupyter_mcp.core.toolsets import TOOLSETS

MODES = ["legacy", "auto"]


@pytest.fixture
def connect(mcp_url: str, jp_serverapp: Any):  # type: ignore[no-untyped-def]
    """``async with connect(mode, query="", headers={}) as client``: an SDK client on /mcp."""
    token = jp_serverapp.identity_provider.token

    @asynccontextmanager
    async def _connect(
        mode: str, query: str = "", headers: dict[str, str] | None = None, **options: Any
    ) -> AsyncIterator[Client]:
        all_headers = {"Authorization": f"token {token}", **(headers or {})}
        async with httpx2.AsyncClient(headers=all_headers) as http:
            transport = streamable_http_client(mcp_url + query, http_client=http)
            async with Client(transport, mode=mode, **options) as client:
                yield client

    return _connect


async def mcp_names(client: Client) -> list[str]:
    names, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        names.extend(t.name for t in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return names


async def rest_names(jp_fetch: Any, prefix: str, **params: str) -> list[str]:
    headers = params.pop("headers", None)
    response = await jp_fetch(
        *prefix.split("/"), "list_tools", method="GET", params=params, headers=headers or {}
    )
    return [t["name"] for t in json.loads(response.body)]


def members(app: Any, *sets: str) -> list[str]:
    """The registry's tools of ``sets``, in registry order (as every listing gives them)."""
    return [t.name for t in app.registry.all() if t.toolset in sets]


async def test_every_surface_lists_the_same_tools_for_a_choice(connect, jp_fetch, mcp_app):
    expected = members(mcp_app, "git", "search")
    assert len(expected) == 13  # eleven git tools, two search tools

    seed = await rest_names(jp_fetch, "mcp", toolsets="git,search")
    proxy = await rest_names(jp_fetch, "api/mcp", toolsets="search git")
    header = await rest_names(jp_fetch, "mcp", headers={"X-MCP-Toolsets": "search,git"})
    listed = {}
    for mode in MODES:
        async with connect(mode, query="?toolsets=git,search") as client:
            listed[mode] = await mcp_names(client)
    async with connect("legacy", headers={"X-MCP-Toolsets": "git,search"}) as client:
        listed["header"] = await mcp_names(client)

    assert seed == proxy == header == expected
    assert listed == {"legacy": expected, "auto": expected, "header": expected}
    # Without a choice, everything the server serves.
    assert await rest_names(jp_fetch, "mcp") == [t.name for t in mcp_app.registry.all()]


async def test_query_and_header_together_narrow_to_both(jp_fetch, mcp_app):
    names = await rest_names(
        jp_fetch, "mcp", toolsets="git,files", headers={"X-MCP-Toolsets": "files,search"}
    )
    assert names == members(mcp_app, "files")


@pytest.mark.parametrize("surface", ["mcp", "api"])
async def test_a_tool_outside_the_choice_is_refused_on_rest(surface, jp_fetch, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("hello\n")
    parts = ["api", "mcp"] if surface == "api" else ["mcp"]

    async def call(tool: str, arguments: dict[str, Any], toolsets: str) -> dict[str, Any]:
        response = await jp_fetch(
            *parts, tool, method="POST", body=json.dumps(arguments), params={"toolsets": toolsets}
        )
        return json.loads(response.body)

    allowed = await call("get_file_text_by_path", {"pathInProject": "a.txt"}, "files")
    refused = await call("get_file_text_by_path", {"pathInProject": "a.txt"}, "git,search")

    assert allowed["error"] is None and "hello" in json.dumps(allowed["status"])
    assert refused["status"] is None
    assert refused["error"] == (
        "Tool get_file_text_by_path is not available on this connection: its tool set files "
        "is not among the chosen toolsets (git, search)"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_outside_the_choice_is_refused_on_mcp(mode, connect, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("hello\n")
    async with connect(mode, query="?toolsets=git") as client:
        refused = await client.call_tool("get_file_text_by_path", {"pathInProject": "a.txt"})
    async with connect(mode, query="?toolsets=files") as client:
        allowed = await client.call_tool("get_file_text_by_path", {"pathInProject": "a.txt"})

    assert refused.is_error is True
    assert "its tool set files is not among the chosen toolsets (git)" in refused.content[0].text
    assert allowed.is_error is False and "hello" in allowed.content[0].text


async def test_an_unknown_set_is_a_400_naming_it_on_every_surface(jp_fetch, mcp_url, jp_serverapp):
    for parts in (["mcp", "list_tools"], ["api", "mcp", "list_tools"]):
        with pytest.raises(HTTPClientError) as raised:
            await jp_fetch(*parts, method="GET", params={"toolsets": "files,gti"})
        assert raised.value.code == 400
        body = json.loads(raised.value.response.body)
        assert body["status"] is None
        assert body["error"].startswith("Unknown tool set 'gti' in toolsets; the tool sets are")
    with pytest.raises(HTTPClientError) as raised:
        await jp_fetch(
            "mcp", "get_file_text_by_path", method="POST", body="{}", params={"toolsets": ""}
        )
    assert raised.value.code == 400

    token = jp_serverapp.identity_provider.token
    headers = {
        "Authorization": f"token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    async with httpx2.AsyncClient() as http:
        answer = await http.post(
            mcp_url + "?toolsets=nope",
            content=json.dumps(initialize("2025-06-18")),
            headers=headers,
        )
    assert answer.status_code == 400
    assert "Unknown tool set 'nope'" in answer.json()["error"]["message"]


async def test_the_server_toolsets_apply_everywhere_and_are_announced(
    connect, jp_fetch, mcp_app, jp_root_dir
):
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    (jp_root_dir / "a.txt").write_text("hello\n")
    async with connect("legacy", message_handler=on_message) as client:
        before = await mcp_names(client)
        await asyncio.sleep(0.3)  # let the client open its GET stream
        mcp_app.toolsets = ["files", "search"]
        await asyncio.wait_for(changed.wait(), 10)
        after = await mcp_names(client)
        refused = await client.call_tool("get_project_vcs_status", {})

    assert before == [t.name for t in mcp_app.registry.all()]
    assert after == members(mcp_app, "files", "search")
    assert refused.is_error is True
    assert refused.content[0].text == (
        "Tool get_project_vcs_status is disabled on this server (its tool set git is not in "
        "c.JupyterMCP.toolsets)"
    )
    assert await rest_names(jp_fetch, "mcp") == after
    assert await rest_names(jp_fetch, "api/mcp") == after
    # A connection narrows what the server serves; it cannot widen it.
    assert await rest_names(jp_fetch, "mcp", toolsets="git,search") == members(mcp_app, "search")
    response = await jp_fetch(
        "mcp",
        "get_project_vcs_status",
        method="POST",
        body="{}",
        params={"toolsets": "git"},
    )
    assert "is disabled on this server" in json.loads(response.body)["error"]


def test_the_server_setting_takes_comma_lists_and_refuses_unknown_names():
    from traitlets import TraitError

    from jupyter_mcp.app import JupyterMCP

    app = JupyterMCP()
    assert sorted(app.settings_snapshot().toolsets) == sorted(TOOLSETS)
    app.toolsets = ["files,git", "search"]
    assert app.toolsets == ["files", "git", "search"]
    assert app.settings_snapshot().toolsets == frozenset({"files", "git", "search"})
    with pytest.raises(TraitError) as raised:
        app.toolsets = ["files", "gti", "notebook"]
    assert str(raised.value) == (
        "JupyterMCP.toolsets: unknown tool sets 'gti', 'notebook'; the tool sets are "
        + ", ".join(TOOLSETS)
    )


def test_an_unknown_set_in_the_configuration_stops_the_server(tmp_path):
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "PYTHONPATH": os.pathsep.join(
            os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
        ),
    }
    argv = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--port=0",
        f"--ServerApp.root_dir={tmp_path}",
        "--ServerApp.jpserver_extensions={'jupyter_mcp': True}",
        "--JupyterMCP.read_only=True",
        "--JupyterMCP.toolsets=files,gti",
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        argv.append("--allow-root")
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    assert done.returncode != 0
    assert (
        "jupyter_mcp: invalid configuration, not starting: JupyterMCP.toolsets: unknown tool set "
        "'gti'; the tool sets are files, editor," in done.stderr
    )
