"""The kernel of a notebook: the one jupyter_server's session for that path uses.

That is the kernel JupyterLab shows for the open notebook and the user's cells run in, so the
agent and the user share one state. When the notebook has no session yet, one is created the
way JupyterLab creates it (a ``notebook`` session for the path), so the kernel appears in
JupyterLab's running panel, attached to the notebook, and a window that opens the notebook
later connects to it.
"""

from __future__ import annotations

import asyncio
import functools
import os
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.context import ToolContext, outside_the_call
from ..core.errors import ToolError
from ..core.paths import is_inside, relative_path
from . import managers
from .execute import kernel_name_for

# Two calls that find no session for one notebook must not start two kernels for it: one lock
# per notebook path, per server (a lock belongs to the event loop of the server that made it).
_starting: weakref.WeakKeyDictionary[Any, dict[str, asyncio.Lock]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class NotebookKernel:
    """A notebook's session and kernel, as the server's managers know them."""

    session_id: str
    kernel_id: str
    #: The notebook's path as the server names it (relative to the server's root, ``/``-separated).
    api_path: str

    def manager(self, ctx: ToolContext) -> Any:
        """The server's KernelManager of this kernel (raises when it is gone)."""
        try:
            return managers.kernel(ctx.serverapp, self.kernel_id)
        except KeyError:
            raise ToolError(f"The kernel of {self.api_path} is gone (it was shut down)") from None


def _server(ctx: ToolContext) -> Any:
    serverapp = ctx.serverapp
    if serverapp is None or getattr(serverapp, "session_manager", None) is None:
        raise ToolError("Notebook kernels need a Jupyter server; this context has none")
    return serverapp


def api_path(ctx: ToolContext, path: Path) -> str:
    """``path`` (a real path inside the project, as :meth:`ToolContext.resolve` gives it) as
    the server's contents and sessions name it.

    No file system call: this runs on the event loop in every notebook call, where each
    ``lstat`` of a ``realpath`` hands the interpreter to a busy worker thread. The path is
    real already (the jail resolved it); the server's root is resolved once, as the jail's is
    when the context is made.
    """
    given = getattr(_server(ctx).contents_manager, "root_dir", None) or str(ctx.root_dir)
    root = _real_root(str(given))
    if not is_inside(root, path):
        # Not named from the real root (a caller's own path, a root reached by a link):
        # resolved here, as it once always was.
        path = Path(os.path.realpath(path))
        if not is_inside(root, path):
            raise ToolError(f"{path} is outside the server's root {given}")
    return relative_path(root, path)


@functools.lru_cache(maxsize=8)
def _real_root(root: str) -> Path:
    """The real path of the server's root folder, resolved once (the jail's root,
    ``ToolContext.root_dir``, is fixed the same way when the server starts)."""
    return Path(os.path.realpath(root))


async def find_notebook_kernel(ctx: ToolContext, path: Path) -> NotebookKernel | None:
    """The session of the notebook at ``path`` with a live kernel, or None."""
    sessions = _server(ctx).session_manager
    wanted = api_path(ctx, path)
    for session in await sessions.list_sessions():
        kernel = session.get("kernel") or {}
        if session.get("path") == wanted and kernel.get("id"):
            return NotebookKernel(session["id"], kernel["id"], wanted)
    return None


async def notebook_kernel(
    ctx: ToolContext, path: Path, *, kernel_name: str | None = None
) -> NotebookKernel:
    """The notebook's kernel, started with a session when it has none.

    A new kernel is the one the notebook's metadata asks for (``kernel_name`` overrides it),
    else the server's default; an unknown kernel name, or a notebook asking for a kernel the
    server lacks, is a clear error (see :func:`~jupyter_mcp.kernels.execute.kernel_name_for`).
    """
    serverapp = _server(ctx)
    wanted = api_path(ctx, path)
    lock = _starting.setdefault(serverapp, {}).setdefault(wanted, asyncio.Lock())
    async with lock:
        found = await find_notebook_kernel(ctx, path)
        if found is not None:
            return found
        specs = await managers.kernel_specs(serverapp)
        if kernel_name is not None and kernel_name not in specs:
            raise ToolError(
                f"No kernel named {kernel_name!r}; the server has: {', '.join(sorted(specs))}"
            )
        default = managers.kernel_manager(serverapp).default_kernel_name
        # The notebook's own kernel, or a clear error before anything starts or is written.
        name = kernel_name or await asyncio.to_thread(
            kernel_name_for, path, specs, default, shown=wanted
        )
        try:
            model = await outside_the_call(
                serverapp.session_manager.create_session(
                    path=wanted, name=Path(wanted).name, type="notebook", kernel_name=name
                )
            )
        except Exception as e:  # a kernel that fails to launch: its own message says why
            raise ToolError(f"Could not start a kernel for {wanted}: {managers.describe(e)}") from e
        return NotebookKernel(model["id"], model["kernel"]["id"], wanted)
