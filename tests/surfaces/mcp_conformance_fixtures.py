"""The tools the conformance suite's tasks scenarios call, as a test-only server extension.

The suite's ``tasks-*`` scenarios expect fixture tools of its reference server: ``greet``
(answers at once, never a task), ``slow_compute`` (sleeps ``seconds``, runs as a task) and
``failing_job`` (a tool error after about a second, as a task). This extension adds them to
jupyter_mcp's registry (it loads after jupyter_mcp: extensions load in name order), so the
scenarios drive the server's real task machinery. The conformance server of
``test_mcp_clients.py`` enables it; nothing else does.
"""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.core.registry import Tool


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "mcp_conformance_fixtures"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    [app] = serverapp.extension_manager.extension_apps["jupyter_mcp"]

    def greet(ctx: Any, name: str = "World") -> str:
        return f"Hello, {name}!"

    async def slow_compute(ctx: Any, seconds: float = 1, label: str = "") -> str:
        await asyncio.sleep(seconds)
        return f"computed {label} in {seconds} s"

    async def failing_job(ctx: Any) -> str:
        await asyncio.sleep(1)
        raise ToolError("the job failed")

    for tool in (
        Tool(
            name="greet",
            description="Greets.",
            properties={"name": {"type": "string"}},
            fn=greet,
            read_only=True,
        ),
        Tool(
            name="slow_compute",
            description="Sleeps, then answers.",
            properties={"seconds": {"type": "number"}, "label": {"type": "string"}},
            fn=slow_compute,
            read_only=True,
            task_support=True,
        ),
        Tool(
            name="failing_job",
            description="Fails after a second.",
            properties={},
            fn=failing_job,
            read_only=True,
            task_support=True,
        ),
    ):
        app.registry.add(tool)
