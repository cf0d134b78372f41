"""Progress indicators: what is running now on the server.

Running run configurations, background commands, a command still running in the project
terminal, and kernels that are busy (execution state from the server's kernel manager), each
with ``title``, ``kind``, ``startTime`` (ISO 8601) and ``elapsedMs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from ..core.context import ToolContext
from ..core.registry import ToolSet
from ..execution.processes import Activity

tools = ToolSet()

#: How often the busy-kernel watcher looks at execution states (seconds).
POLL_SECONDS = 0.5


class BusyKernels:
    """Remembers since when each kernel has been busy, by watching execution states."""

    def __init__(self, serverapp: Any) -> None:
        self.serverapp = serverapp
        self.busy_since: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    def busy(self) -> dict[str, Any]:
        """The busy kernels now, by id; updates ``busy_since``."""
        manager = getattr(self.serverapp, "kernel_manager", None)
        found: dict[str, Any] = {}
        if manager is not None:
            for kernel_id in list(manager.list_kernel_ids()):
                with contextlib.suppress(KeyError):
                    kernel = manager.get_kernel(kernel_id)
                    if getattr(kernel, "execution_state", None) == "busy":
                        found[kernel_id] = kernel
        now = time.time()
        for kernel_id in found:
            self.busy_since.setdefault(kernel_id, now)
        for kernel_id in list(self.busy_since):
            if kernel_id not in found:
                del self.busy_since[kernel_id]
        return found

    def ensure_watching(self) -> None:
        """Start polling execution states (on the running event loop), once."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            self.busy()
            await asyncio.sleep(POLL_SECONDS)

    async def shutdown(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def busy_kernels(ctx: ToolContext) -> BusyKernels:
    """The busy-kernel watcher of the server, created and started on first use."""
    watcher = ctx.services.get("busy_kernels")
    if watcher is None:
        watcher = ctx.services["busy_kernels"] = BusyKernels(ctx.serverapp)
    watcher.ensure_watching()
    return watcher


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
    "Retrieve what is running now: run configurations, background commands, a command running "
    "in the project terminal, and busy kernels. Each has title, kind, startTime (ISO 8601) and "
    "elapsedMs. Returns an empty array when nothing runs.",
    read_only=True,
    title="Progress indicators",
)
async def get_progress_indicators(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every running activity, runs first, then background commands, terminal, kernels."""
    indicators: list[dict[str, Any]] = []
    run_kernels: set[str] = set()
    runs = ctx.services.get("runs")
    if runs is not None:
        for run in runs.running():
            indicator = run.activity().as_indicator()
            indicator.update(id=f"run-{run.id}", configName=run.config.name, kernelId=run.kernel_id)
            indicators.append(indicator)
            if run.kernel_id:
                run_kernels.add(run.kernel_id)
    commands = ctx.services.get("background_commands")
    if commands is not None:
        for indicator in commands.indicators():
            indicator["id"] = f"background-{indicator['id']}"
            indicators.append(indicator)
    terminal = ctx.services.get("project_terminal")
    if terminal is not None and terminal.last_command and terminal.busy():
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
        watcher = busy_kernels(ctx)
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
