"""What an OAuth access token can and cannot do, on a real server, with the official SDK client.

It opens ``/mcp`` (both protocol eras) with the tools its scopes allow, and nothing else of the
server: not Jupyter's contents, kernels, sessions or terminals, not the seed REST routes, the
lab socket or the list of grants. Expired, revoked, or another server's: 401 ``invalid_token``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from oauth_fixtures import Server, post_initialize
from tornado.httpclient import HTTPClientError
from tornado.websocket import websocket_connect

MODES = ["legacy", "auto"]


@pytest.fixture
def issue(server: Server, authorize: Any) -> Any:
    """``await issue(scope=..., consent=...)``: the token answer of one grant."""

    async def _issue(**options: Any) -> dict[str, Any]:
        grant = await authorize(**options)
        async with httpx2.AsyncClient() as http:
            answer = await http.post(
                server.endpoint("token"),
                data={
                    "grant_type": "authorization_code",
                    "code": grant.code,
                    "redirect_uri": grant.redirect_uri,
                    "client_id": grant.client_id,
                    "code_verifier": grant.verifier,
                    "resource": server.mcp,
                },
            )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    return _issue


@asynccontextmanager
async def mcp_client(url: str, access_token: str, mode: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {access_token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


async def names(client: Client) -> list[str]:
    tools, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools += [t.name for t in page.tools]
        if (cursor := page.next_cursor) is None:
            return tools


async def raw_mcp(
    server: Server, headers: dict[str, str], url: str | None = None
) -> httpx2.Response:
    return await post_initialize(url or server.mcp, headers)


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_lists_and_calls_every_tool(
    server: Server, issue: Any, jp_root_dir: Any, mode: str
) -> None:
    tokens = await issue()

    async with mcp_client(server.mcp, tokens["access_token"], mode) as client:
        listed = await names(client)
        made = await client.call_tool(
            "create_new_file_with_text", {"pathInProject": "by-oauth.txt", "text": "hello\n"}
        )

    assert len(listed) == len(server.app.registry.visible(server.app.tool_context))
    assert made.is_error is False, made.content
    assert (jp_root_dir / "by-oauth.txt").read_text() == "hello\n"


@pytest.mark.parametrize("mode", MODES)
async def test_a_read_only_grant_sees_and_runs_only_read_only_tools(
    server: Server, issue: Any, jp_root_dir: Any, mode: str
) -> None:
    (jp_root_dir / "notes.md").write_text("kept\n")
    tokens = await issue(consent={"read_only": True})

    async with mcp_client(server.mcp, tokens["access_token"], mode) as client:
        listed = await names(client)
        read = await client.call_tool("get_file_text_by_path", {"pathInProject": "notes.md"})
        write = await client.call_tool(
            "rewrite_file_content", {"pathInProject": "notes.md", "text": "overwritten\n"}
        )

    read_only = {t.name for t in server.app.registry.all() if t.read_only}
    assert set(listed) <= read_only and "get_file_text_by_path" in listed
    assert "rewrite_file_content" not in listed
    assert read.is_error is False and "kept" in read.content[0].text
    assert write.is_error is True
    assert "read-only tools only" in write.content[0].text
    assert (jp_root_dir / "notes.md").read_text() == "kept\n"


async def test_a_tool_set_grant_sees_its_sets_and_a_url_narrows_it_further(
    server: Server, issue: Any
) -> None:
    tokens = await issue(scope="mcp:toolsets:files,search")
    registry = server.app.registry
    in_sets = {t.name for t in registry.all() if t.toolset in ("files", "search")}

    async with mcp_client(server.mcp, tokens["access_token"], "auto") as client:
        listed = set(await names(client))
        page = await client.list_tools(cache_mode="refresh")
        refused = await client.call_tool("get_project_modules", {})
    async with mcp_client(f"{server.mcp}?toolsets=files,git", tokens["access_token"], "auto") as c:
        narrowed = set(await names(c))

    assert listed == in_sets
    # The answer depends on the token: never for a shared cache (2026-07-28's cacheScope).
    assert page.cache_scope == "private"
    assert refused.is_error is True and "toolsets" in refused.content[0].text
    assert narrowed == {t.name for t in registry.all() if t.toolset == "files"}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "api/contents", None),
        ("POST", "api/contents", {"type": "file", "ext": ".txt"}),
        ("GET", "api/kernels", None),
        ("POST", "api/kernels", {}),
        ("GET", "api/sessions", None),
        ("GET", "api/terminals", None),
        ("POST", "api/terminals", {}),
        ("GET", "mcp/list_tools", None),
        ("POST", "mcp/create_new_file_with_text", {"pathInProject": "x.txt", "text": "x"}),
        ("POST", "api/mcp/create_new_file_with_text", {"pathInProject": "x.txt", "text": "x"}),
        ("GET", "mcp/oauth/grants", None),
        ("GET", "api/status", None),
    ],
)
async def test_a_token_is_no_jupyter_credential(
    server: Server, issue: Any, jp_root_dir: Any, method: str, path: str, body: Any
) -> None:
    tokens = await issue()
    before = sorted(p.name for p in jp_root_dir.iterdir())
    async with httpx2.AsyncClient() as http:
        answer = await http.request(
            method,
            f"{server.base}{path}",
            content=None if body is None else json.dumps(body),
            headers={"Authorization": f"Bearer {tokens['access_token']}"},
        )

    assert answer.status_code == 403, (answer.status_code, answer.text[:200])
    assert sorted(p.name for p in jp_root_dir.iterdir()) == before
    assert server.app.serverapp.kernel_manager.list_kernel_ids() == []


async def test_a_token_does_not_open_the_lab_socket(server: Server, issue: Any) -> None:
    tokens = await issue()
    url = server.base.replace("http://", "ws://") + "mcp/bridge?window=w1"

    with pytest.raises(HTTPClientError) as refused:
        await websocket_connect(
            httpx_request(url, {"Authorization": f"Bearer {tokens['access_token']}"})
        )

    assert refused.value.code == 403


def httpx_request(url: str, headers: dict[str, str]) -> Any:
    from tornado.httpclient import HTTPRequest

    return HTTPRequest(url, headers=headers)


async def test_an_expired_token_is_invalid_token(server: Server, issue: Any) -> None:
    tokens = await issue()
    server.oauth.clock = lambda: time.time() + 3601

    answer = await raw_mcp(server, {"Authorization": f"Bearer {tokens['access_token']}"})

    assert answer.status_code == 401
    challenge = answer.headers["WWW-Authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", error_description="The access ')
    assert "expired" in challenge and "resource_metadata=" in challenge


async def test_a_refresh_token_is_not_an_access_token(server: Server, issue: Any) -> None:
    tokens = await issue()

    answer = await raw_mcp(server, {"Authorization": f"Bearer {tokens['refresh_token']}"})

    assert answer.status_code == 401
    assert "refresh token" in answer.headers["WWW-Authenticate"]


async def test_the_user_sees_the_grant_and_revokes_it_and_the_next_request_fails(
    server: Server, issue: Any
) -> None:
    tokens = await issue(scope="mcp mcp:read")
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    jupyter = {"Authorization": f"token {server.token}"}
    used = await raw_mcp(server, bearer)
    async with httpx2.AsyncClient() as http:
        listed = (await http.get(server.endpoint("grants"), headers=jupyter)).json()["grants"]
        [grant] = listed
        deleted = await http.delete(f"{server.endpoint('grants')}/{grant['id']}", headers=jupyter)
        missing = await http.delete(f"{server.endpoint('grants')}/{grant['id']}", headers=jupyter)
    after = await raw_mcp(server, bearer)

    assert used.status_code == 200
    assert grant["clientName"] == "Test Connector" and grant["registration"] == "metadata"
    assert grant["scopes"] == ["mcp", "mcp:read"]
    assert grant["access"] == "read-only tools of every tool set"
    assert grant["created"] <= time.time() and grant["lastUsed"] >= grant["created"]
    assert deleted.status_code == 204 and missing.status_code == 404
    assert after.status_code == 401
    assert "unknown here, or was revoked" in after.headers["WWW-Authenticate"]


async def test_a_token_for_this_url_sent_to_another_address_is_refused(
    server: Server, issue: Any
) -> None:
    tokens = await issue()

    # The same server reached by another name is another resource (RFC 8707 audience).
    answer = await raw_mcp(
        server,
        {"Authorization": f"Bearer {tokens['access_token']}"},
        url=server.mcp.replace("127.0.0.1", "localhost"),
    )

    assert answer.status_code == 401
    assert f"is for {server.mcp}" in answer.headers["WWW-Authenticate"]


async def test_a_token_of_another_jupyter_server_is_refused(server: Server, issue: Any) -> None:
    tokens = await issue()
    # Another server of the same user shares the grants file: its grants carry its id.
    data = server.stored()
    for grant in data["grants"].values():
        grant["server"] = "port 8888 / root /elsewhere"
    server.file.write_text(json.dumps(data))

    answer = await raw_mcp(server, {"Authorization": f"Bearer {tokens['access_token']}"})

    assert answer.status_code == 401
    assert "another Jupyter server" in answer.headers["WWW-Authenticate"]


async def test_a_session_opened_with_a_token_belongs_to_its_grant(
    server: Server, issue: Any
) -> None:
    tokens = await issue()
    opened = await raw_mcp(server, {"Authorization": f"Bearer {tokens['access_token']}"})
    session = opened.headers["Mcp-Session-Id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}

    async with httpx2.AsyncClient() as http:
        other = await http.post(
            server.mcp,
            content=json.dumps(listing),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Authorization": f"token {server.token}",
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": "2025-11-25",
            },
        )

    assert opened.status_code == 200
    assert other.status_code in (403, 404)  # the session answers its opener only


async def test_a_task_started_with_a_read_only_token_runs_nothing_and_is_its_grants(
    server: Server, issue: Any, jp_root_dir: Any
) -> None:
    from task_clients import LegacySession

    tokens = await issue(consent={"read_only": True})
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    async with httpx2.AsyncClient(headers=bearer, timeout=60) as http:
        session = await LegacySession(http, server.mcp).open(listen=False)
        try:
            created = await session.call_as_task(
                "run_command_on_background", {"command": "touch made-by-a-task"}
            )
            task_id = created["task"]["taskId"]
            result = await session.result("tasks/result", {"taskId": task_id})
        finally:
            await session.close()
    async with httpx2.AsyncClient(
        headers={"Authorization": f"token {server.token}"}, timeout=60
    ) as http:
        other = await LegacySession(http, server.mcp).open(listen=False)
        try:
            unknown = await other.error("tasks/get", {"taskId": task_id})
        finally:
            await other.close()

    assert result["isError"] is True
    assert "read-only tools only" in result["content"][0]["text"]
    assert not (jp_root_dir / "made-by-a-task").exists()
    assert unknown["code"] != 0  # the Jupyter token's principal does not see the grant's task
