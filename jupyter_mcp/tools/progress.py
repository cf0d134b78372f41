"""Progress indicators: what is running now on the server.

Running run configurations, background commands, a command still running in the project
terminal, and kernels that are busy (execution state from the server's kernel manager), each
with ``title``, ``kind``, ``startTime`` (ISO 8601) and ``elapsedMs``.
"""

from __future__ import annotations

import time
from typing import Any

from ..core.context import ToolContext
from ..core.registry import ToolSet
from ..execution.processes import Activity

tools = ToolSet("runs")  # what runs: run configurations, commands, busy kernels


async def _kernel_paths(ctx: ToolContext) -> dict[str, str]:
    """Kernel id → the path of the notebook or console session using it."""
    sessions = getattr(ctx.serverapp, "session_manager", None)
    if sessions is None:
        return {}
    try:
        listed = await sessions.list_sessions()
    except Exception:  # sessions are decoration only
        return {}
    return {
        s["kernel"]["id"]: s.get("path") or s.get("name") or "" for s in listed if s.get("kernel")
    }


@tools.tool(
    "get_progress_indicators",
    "What runs now: run configurations, background commands, the terminal's command, busy "
    "kernels, each with title, kind, startTime and elapsedMs; [] when nothing runs.",
    read_only=True,
    title="Progress indicators",
)
async def get_progress_indicators(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every running activity, runs first, then background commands, terminal, kernels."""
    indicators: list[dict[str, Any]] = []
    run_kernels: set[str] = set()
    for run in ctx.services.runs.running():
        indicator = run.activity().as_indicator()
        indicator.update(id=f"run-{run.id}", configName=run.config.name, kernelId=run.kernel_id)
        indicators.append(indicator)
        if run.kernel_id:
            run_kernels.add(run.kernel_id)
    for indicator in ctx.services.background_commands.indicators():
        indicator["id"] = f"background-{indicator['id']}"
        indicators.append(indicator)
    terminal = ctx.services.terminal
    if terminal.last_command and terminal.busy():
        activity = Activity(
            0,
            f"Terminal {terminal.name}: {terminal.last_command[:120]}",
            "terminalCommand",
            terminal.command_started or time.time(),
        )
        indicator = activity.as_indicator()
        indicator["id"] = f"terminal-{terminal.name}"
        indicators.append(indicator)
    if getattr(ctx.serverapp, "kernel_manager", None) is not None:
        watcher = ctx.services.busy_kernels
        watcher.ensure_watching()  # from now on it also sees kernels busy between two calls
        busy = watcher.busy()
        paths = await _kernel_paths(ctx) if busy else {}
        for kernel_id, kernel in busy.items():
            if kernel_id in run_kernels:
                continue
            where = paths.get(kernel_id)
            name = getattr(kernel, "kernel_name", "") or "kernel"
            title = f"Kernel {name} busy" + (f" ({where})" if where else "")
            indicator = Activity(0, title, "kernel", watcher.busy_since[kernel_id]).as_indicator()
            indicator.update(id=f"kernel-{kernel_id}", kernelId=kernel_id)
            indicators.append(indicator)
    return indicators
