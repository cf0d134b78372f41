"""Building the :class:`~jupyter_mcp.core.context.Services` a tool context works with.

One place makes them, for the server (:class:`~jupyter_mcp.app.JupyterMCP`) and for a bare
folder (the unit tests, :class:`~jupyter_mcp.testing.PluginHarness`), so no tool ever makes its
own. It imports the folders whose services every context has (execution/, search/, code/),
none that needs a server. The app adds what only a server has (the editor link and its write
hooks and approver, plugins, the seed port listener, the MCP surface), in
``JupyterMCP.initialize_settings``; :meth:`Services.aclose` stops them all.

Building starts no process and no task. A server then calls :func:`warm_up` in the
background, so that the first calls find the worker processes running and the project indexed;
without it (a bare folder, or ``warm_start`` off) the search and code services start their
workers on first use and the busy-kernel watcher starts on the first progress call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .code.client import CodeService
from .core.context import Services, ToolContext
from .documents.notebook_file import FileNotebooks
from .documents.notebook_view import notebook_view
from .execution.breakpoints import BreakpointStore
from .execution.busy import BusyKernels
from .execution.processes import BackgroundCommands
from .execution.run_configs import RunManager
from .execution.terminal import ProjectTerminal
from .kernels.debugger import KernelDebuggers
from .kernels.managers import behind_gateway
from .kernels.runner import Executions
from .search.backend import ProjectSearch

if TYPE_CHECKING:
    from .core.registry import Tool

__all__ = ["Services", "build_services", "warm_up"]


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
        code=CodeService(ctx, local_kernels=not behind_gateway(serverapp)),
        debugger=KernelDebuggers(),
        executions=Executions(serverapp, ctx.log),
        contents_manager=(
            contents_manager
            if contents_manager is not None
            else getattr(serverapp, "contents_manager", None)
        ),
        approver=approver,
        # Notebooks in their files; the app puts live documents (windows, collaboration) first.
        notebooks=FileNotebooks(ctx),
    )


def _warm_notebook_views() -> None:
    """Import jupytext and convert one notebook: the first notebook read pays this otherwise."""
    import nbformat

    notebook_view(nbformat.v4.new_notebook())


#: Seconds after start-up before the code worker starts and jupytext is imported: the server's
#: own start-up, and requests that come at once, go first (a call that needs a helper before
#: then starts it itself). The search worker, the slowest to become ready, does not wait.
WARM_DELAY = 0.5


async def warm_up(services: Services, log: logging.Logger, *, delay: float = WARM_DELAY) -> None:
    """Start, in the background, what the first tool calls would otherwise wait for.

    At once: the busy-kernel watcher, and the search worker, which indexes the project (its
    process has the most to import and read, so a search that comes with the server's first
    requests finds it part-way up instead of starting it). ``delay`` seconds later: the code
    worker, which starts jedi and takes the project's files, and then, in this process,
    jupytext. Started at once too, the code worker would compete with the search worker and
    the server's own start-up for the cores (on two, a first call at start-up was then slower,
    not faster).

    Each blocking step runs in a thread, so neither the event loop nor the server's start-up
    waits for it; a call arriving meanwhile waits for the step it needs (the services' locks)
    rather than starting a second worker. A step that fails is logged, and the first call that
    needs it starts it as it would have without a warm-up.
    """

    async def run(what: str, step: Callable[[], object]) -> None:
        started = time.monotonic()
        try:
            await asyncio.to_thread(step)
        except Exception as e:  # the first call that needs it tries again, and says why
            log.warning("jupyter_mcp: warming up %s failed: %s", what, e)
        else:
            log.debug("jupyter_mcp: %s ready in %.2f s", what, time.monotonic() - started)

    services.busy_kernels.ensure_watching()
    search = asyncio.ensure_future(run("the search index", services.search.warm))
    try:
        await asyncio.sleep(delay)
        await asyncio.gather(search, run("code analysis", services.code.warm))
    finally:
        search.cancel()  # when the warm-up itself is cancelled (a no-op once it is done)
    # In this process, and holding its interpreter while it imports: after the workers.
    await run("notebook views", _warm_notebook_views)
