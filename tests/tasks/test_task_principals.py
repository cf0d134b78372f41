"""Tasks belong to their principal: another user of the same server cannot see or touch them.

The server here has two users, each with a token of their own (as a JupyterHub single-user
server shared with a second user has): an identity provider of Jupyter's that tells them apart.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from code_notebook import write_code_notebook
from jupyter_server.auth.identity import IdentityProvider, User
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from server_configs import server_config
from task_clients import (
    TasksExtension,
    cancel_task,
    get_task,
    legacy_session,
    listen_stream,
    modern_client,
)

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


@asynccontextmanager
async def sdk_client(url: str, token: str, mode: str) -> AsyncIterator[Client]:
    """An official SDK client of one era (``legacy``: the 2025-11-25 handshake)."""
    async with httpx2.AsyncClient(headers={"Authorization": f"token {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


def _text(result: Any) -> str:
    return str(result.content[0].text)


@pytest.mark.usefixtures("no_kernels_left")
async def test_a_run_is_found_by_its_id_only_by_its_principal(mcp_url, jp_root_dir):
    slow = "import time\nprint('running', flush=True)\ntime.sleep(3)\n'done'"
    write_code_notebook(jp_root_dir, "bg.ipynb", slow, ids=True)
    write_code_notebook(jp_root_dir, "task.ipynb", slow, ids=True)
    async with sdk_client(mcp_url, "alice-token", "legacy") as alice:
        started = await alice.call_tool(
            "execute_notebook_cells", {"pathInProject": "bg.ipynb", "background": True}
        )
        background = json.loads(_text(started))["executionId"]
        async with legacy_session(mcp_url, "alice-token", listen=False) as raw:
            created = await raw.call_as_task(
                "execute_notebook_cells", {"pathInProject": "task.ipynb"}
            )
        tasked = created["task"]["taskId"]

        theirs, unknown = {}, {}
        for mode in ("legacy", "2026-07-28"):
            async with sdk_client(mcp_url, "bob-token", mode) as bob:
                for run_id in (background, tasked):
                    got = await bob.call_tool("get_execution", {"executionId": run_id})
                    theirs[mode, run_id] = (got.is_error, _text(got).replace(run_id, "ID"))
                got = await bob.call_tool("get_execution", {"executionId": "0" * 32})
                unknown[mode] = (got.is_error, _text(got).replace("0" * 32, "ID"))
        # The REST routes take the same principal from the same login.
        async with httpx2.AsyncClient(timeout=60) as http:
            rest = await http.post(
                f"{mcp_url}/get_execution",
                json={"executionId": background},
                headers={"Authorization": "token bob-token"},
            )
            own_rest = await http.post(
                f"{mcp_url}/get_execution",
                json={"executionId": background},
                headers={"Authorization": "token alice-token"},
            )
        mine = [
            json.loads(
                _text(
                    await alice.call_tool("get_execution", {"executionId": run_id, "waitMs": 60000})
                )
            )
            for run_id in (background, tasked)
        ]

    # Bob is told what he is told of a run that never existed, in both eras, over REST too.
    for (mode, _), answer in theirs.items():
        assert answer == unknown[mode] and answer[0] is True
    assert "No execution 'ID'" in unknown["legacy"][1]
    assert rest.json()["status"] is None and "No execution" in rest.json()["error"]
    assert own_rest.json()["error"] is None
    assert own_rest.json()["status"]["executionId"] == background
    # Alice's runs went on to their end, untouched.
    assert [m["executionId"] for m in mine] == [background, tasked]
    assert [m["status"] for m in mine] == ["ok", "ok"]


async def test_a_listen_stream_is_told_only_of_its_principals_tasks(mcp_url):
    async with modern_client(mcp_url, "alice-token", tasks=TasksExtension()) as alice:
        started = await alice.session.call_tool("wait", {"milliseconds": 2500}, allow_claimed=True)
        task_id = started.task_id
        async with (
            listen_stream(mcp_url, "bob-token", {"taskIds": [task_id]}) as bobs,
            listen_stream(mcp_url, "alice-token", {"taskIds": [task_id]}) as alices,
        ):
            await alices.until(
                lambda s: any(t["status"] == "completed" for t in s.of("notifications/tasks")),
                timeout=120,
                what="Alice told of her task's end",
            )
            await asyncio.sleep(0.5)

    [bobs_ack] = bobs.of("notifications/subscriptions/acknowledged")
    [alices_ack] = alices.of("notifications/subscriptions/acknowledged")
    # Bob's stream honors nothing and is told nothing: as for a task that never existed.
    assert bobs_ack["notifications"]["taskIds"] == []
    assert bobs.of("notifications/tasks") == []
    assert alices_ack["notifications"]["taskIds"] == [task_id]
