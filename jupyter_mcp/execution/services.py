"""The execution services the server keeps in ``ctx.services``, started and stopped.

- ``breakpoints``: :class:`~jupyter_mcp.execution.breakpoints.BreakpointStore` (subscribe
  for changes);
- ``background_commands``: :class:`~jupyter_mcp.execution.processes.BackgroundCommands`;
- ``project_terminal``: :class:`~jupyter_mcp.execution.terminal.ProjectTerminal`;
- ``runs``: :class:`~jupyter_mcp.execution.run_configs.RunManager`;
- ``busy_kernels``: :class:`~jupyter_mcp.tools.progress.BusyKernels`.

Tools create any of them lazily when missing (a bare :class:`ToolContext` in unit tests).
"""

from __future__ import annotations

from pathlib import Path

from ..core.context import ToolContext
from ..tools.progress import BusyKernels
from .breakpoints import BreakpointStore
from .processes import BackgroundCommands
from .run_configs import RunManager
from .terminal import ProjectTerminal


def install_execution_services(ctx: ToolContext, *, breakpoints_file: str = "") -> None:
    """Create the services; ``breakpoints_file`` overrides the default location when set."""
    services = ctx.services
    services["breakpoints"] = BreakpointStore(
        ctx.root_dir, Path(breakpoints_file) if breakpoints_file else None
    )
    services["background_commands"] = BackgroundCommands()
    services["project_terminal"] = ProjectTerminal(ctx.serverapp, ctx.root_dir)
    services["runs"] = RunManager(ctx.serverapp, ctx.root_dir, ctx.log)
    services["busy_kernels"] = BusyKernels(ctx.serverapp)


async def stop_execution_services(ctx: ToolContext) -> None:
    """Stop runs (and their kernels), kill background commands, stop watching."""
    services = ctx.services
    for key in ("runs", "background_commands", "project_terminal", "busy_kernels"):
        service = services.get(key)
        if service is not None:
            try:
                await service.shutdown()
            except Exception:  # one failing service must not keep the others running
                ctx.log.exception("Stopping %s failed", key)
