"""Run configuration tools, plus following and stopping a run.

Configurations come from the project (see :mod:`jupyter_mcp.execution.run_configs`); a run
executes in a kernel the server manages, and ``get_run_output`` / ``stop_run_configuration``
follow and stop it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet
from ..execution.run_configs import RunConfig, discover

tools = ToolSet("runs")

#: Longest wait ``get_run_output`` accepts (milliseconds).
MAX_WAIT_MS = 300_000


async def _configs(ctx: ToolContext) -> list[RunConfig]:
    return await asyncio.to_thread(discover, ctx.root_dir, ctx.log)


CONFIG_NAME = {
    "type": "string",
    "description": "As get_run_configurations lists it.",
}


@tools.tool(
    "get_run_configurations",
    "The names of the project's run configurations: .vscode/launch.json and tasks.json, "
    "package.json scripts, 'Run notebook <path>' per notebook, 'pytest' when there are tests.",
    read_only=True,
    idempotent=True,
    title="List run configurations",
)
async def get_run_configurations(ctx: ToolContext) -> list[str]:
    """The names of every run configuration."""
    return [c.name for c in await _configs(ctx)]


@tools.tool(
    "run_configuration",
    "Start a run configuration in a new kernel, without waiting for its end: follow it with "
    "get_run_output, stop it with stop_run_configuration.",
    {"configName": CONFIG_NAME},
    required=["configName"],
    open_world=True,
    title="Run configuration",
    task_support=True,
)
async def run_configuration(ctx: ToolContext, configName: str) -> str:
    """Start the configuration called ``configName``."""
    manager = ctx.services.runs
    config = manager.find(configName, await _configs(ctx))
    await manager.start(config)
    return "Run configuration started"


@tools.tool(
    "get_run_output",
    "The latest run of a configuration (of any, without configName): status (running, "
    "succeeded, failed, stopped, error), exit code, times and output (stdout and stderr "
    "merged).",
    {
        "configName": CONFIG_NAME,
        "offset": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Only output from here: a previous answer's nextOffset.",
        },
        "waitMs": {
            "type": "number",
            "minimum": 0,
            "default": 0,
            "description": f"Wait up to this long for its end first (max {MAX_WAIT_MS}).",
        },
    },
    read_only=True,
    title="Run output",
)
async def get_run_output(
    ctx: ToolContext, configName: str | None = None, offset: int = 0, waitMs: float = 0
) -> dict[str, Any]:
    """The report of the latest run of ``configName``."""
    if waitMs > MAX_WAIT_MS:
        raise ToolError(f"waitMs must be at most {MAX_WAIT_MS} milliseconds, got {waitMs:g}")
    run = ctx.services.runs.latest(configName)
    if waitMs and run.running and run.task is not None:
        await asyncio.wait({asyncio.shield(run.task)}, timeout=waitMs / 1000)
    return run.report(offset)


@tools.tool(
    "stop_run_configuration",
    "Stop a configuration's run: its program and kernel are interrupted, then the kernel is "
    "shut down.",
    {"configName": CONFIG_NAME},
    required=["configName"],
    destructive=True,
    title="Stop run configuration",
)
async def stop_run_configuration(ctx: ToolContext, configName: str) -> str:
    """Stop the run of ``configName``."""
    await ctx.services.runs.stop(configName)
    return "Run configuration stopped"
