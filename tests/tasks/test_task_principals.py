"""Tasks belong to their principal: another user of the same server cannot see or touch them.

The server here has two users, each with a token of their own (as a JupyterHub single-user
server shared with a second user has): an identity provider of Jupyter's that tells them apart.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from jupyter_server.auth.identity import IdentityProvider, User
from mcp import MCPError
from server_configs import server_config
from task_clients import TasksExtension, cancel_task, get_task, legacy_session, modern_client

TOKENS = {"alice-token": "alice", "bob-token": "bob"}


class TwoUsers(IdentityProvider):
    """Alice and Bob, each by the token in their ``Authorization`` header."""

    def get_user(self, handler: Any) -> User | None:
        kind, _, token = handler.request.headers.get("Authorization", "").partition(" ")
        name = TOKENS.get(token) if kind.lower() == "token" else None
        return User(username=name) if name else None


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    config = server_config()
    config["ServerApp"]["identity_provider_class"] = TwoUsers
    # Their requests authenticate as users, not with the server's token: no XSRF cookie.
    config["ServerApp"]["disable_check_xsrf"] = True
    return config


async def test_another_principal_neither_sees_nor_touches_a_task(mcp_url):
    async with legacy_session(mcp_url, "alice-token", listen=False) as alice:
        created = await alice.call_as_task("wait", {"milliseconds": 4000})
        task_id = created["task"]["taskId"]
        async with legacy_session(mcp_url, "bob-token", listen=False) as bob:
            errors = [
                await bob.error(method, {"taskId": task_id})
                for method in ("tasks/get", "tasks/result", "tasks/cancel")
            ]
            unknown = await bob.error("tasks/get", {"taskId": "0" * 32})
            bobs_list = await bob.result("tasks/list")
        async with modern_client(mcp_url, "bob-token", tasks=TasksExtension()) as modern_bob:
            with pytest.raises(MCPError) as modern_error:
                await get_task(modern_bob.session, task_id)
            with pytest.raises(MCPError) as modern_cancel:
                await cancel_task(modern_bob.session, task_id)
        still = await alice.result("tasks/get", {"taskId": task_id})
        alices_list = await alice.result("tasks/list")
        done = await alice.result("tasks/result", {"taskId": task_id})

    # Bob is told what he would be told of a task that never existed.
    assert [e["code"] for e in errors] == [-32602, -32602, -32602]
    strip = task_id, "0" * 32
    assert {e["message"].replace(strip[0], "ID") for e in errors} == {
        unknown["message"].replace(strip[1], "ID")
    }
    assert bobs_list == {"tasks": []}
    assert modern_error.value.code == modern_cancel.value.code == -32602
    # Alice's task ran on, untouched.
    assert still["status"] == "working"
    assert [t["taskId"] for t in alices_list["tasks"]] == [task_id]
    assert "4000 milliseconds" in done["content"][0]["text"]


async def test_each_principal_lists_only_its_own_tasks(mcp_url):
    async with (
        legacy_session(mcp_url, "alice-token", listen=False) as alice,
        legacy_session(mcp_url, "bob-token", listen=False) as bob,
    ):
        mine = (await alice.call_as_task("wait", {"milliseconds": 10}))["task"]["taskId"]
        theirs = (await bob.call_as_task("wait", {"milliseconds": 10}))["task"]["taskId"]
        await asyncio.gather(
            alice.result("tasks/result", {"taskId": mine}),
            bob.result("tasks/result", {"taskId": theirs}),
        )
        alices = await alice.result("tasks/list")
        bobs = await bob.result("tasks/list")

    assert [t["taskId"] for t in alices["tasks"]] == [mine]
    assert [t["taskId"] for t in bobs["tasks"]] == [theirs]
