"""Building the :class:`~jupyter_mcp.core.context.Services` a tool context works with.

One place makes them, for the server (:class:`~jupyter_mcp.app.JupyterMCP`) and for a bare
folder (the unit tests, :class:`~jupyter_mcp.testing.PluginHarness`), so no tool ever makes its
own. It imports the folders whose services every context has (execution/, search/, code/),
none that needs a server. The app adds what only a server has (the editor link and its write
hooks and approver, plugins, the seed port listener, the MCP surface), in
``JupyterMCP.initialize_settings``; :meth:`Services.aclose` stops them all.

Nothing here starts a process or a task: the search and code services start their worker
processes on first use, the busy-kernel watcher on the first progress call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .code.client import CodeService
from .core.context import Services, ToolContext
from .documents.notebook_file import FileNotebooks
from .execution.breakpoints import BreakpointStore
from .execution.busy import BusyKernels
from .execution.processes import BackgroundCommands
from .execution.run_configs import RunManager
from .execution.terminal import ProjectTerminal
from .search.backend import ProjectSearch

if TYPE_CHECKING:
    from .core.registry import Tool

__all__ = ["Services", "build_services"]


def build_services(
    ctx: ToolContext,
    *,
    breakpoints_file: str | Path | None = None,
    contents_manager: Any = None,
    approver: Callable[[Tool, dict[str, Any]], Awaitable[bool]] | None = None,
) -> Services:
    """The services of ``ctx``'s root and server (its ``serverapp``, when it has one).

    ``breakpoints_file`` overrides where breakpoints are kept; ``contents_manager`` the
    ContentsManager plugins get (default: the server's, None without a server); ``approver``
    answers approval requests where no JupyterLab window does (a test harness).
    """
    serverapp = ctx.serverapp
    return Services(
        breakpoints=BreakpointStore(
            ctx.root_dir, Path(breakpoints_file) if breakpoints_file else None
        ),
        background_commands=BackgroundCommands(),
        terminal=ProjectTerminal(serverapp, ctx.root_dir),
        runs=RunManager(serverapp, ctx.root_dir, ctx.log),
        busy_kernels=BusyKernels(serverapp),
        # A server keeps its index in a worker process; a bare folder searches in-process.
        search=ProjectSearch(ctx, in_worker=serverapp is not None),
        code=CodeService(ctx),
        contents_manager=(
            contents_manager
            if contents_manager is not None
            else getattr(serverapp, "contents_manager", None)
        ),
        approver=approver,
        # Notebooks in their files; the app puts live documents (windows, collaboration) first.
        notebooks=FileNotebooks(ctx),
    )
