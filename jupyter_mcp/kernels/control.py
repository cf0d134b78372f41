"""The server's kernels as the kernel tools show and control them.

A kernel is listed with its id, kernelspec name, state, last activity, execution count and
the notebooks whose sessions use it; never its environment, command line or connection
details. Start, restart, interrupt, shut down and change act on a notebook's kernel (its
session's): shutting down ends the session as JupyterLab's "Shut Down Kernel" does, and
changing starts a kernel of the new kernelspec for the session (as JupyterLab's "Change
Kernel" does) and shuts the old one down.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

from ..core.context import ToolContext, outside_the_call
from ..core.errors import ToolError
from . import managers
from .clients import KernelClients
from .introspection import execution_count
from .sessions import NotebookKernel, find_notebook_kernel, notebook_kernel

#: Seconds a restarted kernel has to answer again.
RESTART_READY = 60.0


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


async def check_kernel_name(ctx: ToolContext, name: str) -> dict[str, Any]:
    """Refuse a kernelspec the server does not have, naming those it has; its ``spec``."""
    specs = await managers.kernel_specs(ctx.serverapp)
    if name not in specs:
        raise ToolError(f"No kernel named {name!r}; the server has: {', '.join(sorted(specs))}")
    return managers.spec_of(specs, name)


async def _state(ctx: ToolContext, kernel_id: str) -> dict[str, Any]:
    manager = managers.kernel(ctx.serverapp, kernel_id)
    return {
        "kernelId": kernel_id,
        "name": manager.kernel_name,
        "state": await managers.state(manager),
    }


async def list_kernels(ctx: ToolContext, clients: KernelClients) -> list[dict[str, Any]]:
    """Every running kernel of the server (see the module docstring)."""
    kernels = managers.kernel_manager(ctx.serverapp)
    await managers.refresh(ctx.serverapp)
    notebooks: dict[str, list[str]] = {}
    for session in await ctx.serverapp.session_manager.list_sessions():
        kernel = session.get("kernel") or {}
        if kernel.get("id") and session.get("path"):
            notebooks.setdefault(kernel["id"], []).append(_shown(ctx, session["path"]))
    running = {}
    for kernel_id in list(kernels.list_kernel_ids()):
        try:
            running[kernel_id] = managers.kernel(ctx.serverapp, kernel_id)
        except KeyError:  # shut down while listing
            continue
    # A kernel that answers the silent probe is idle now, whatever the server's state (which
    # follows the kernel's status messages a moment late) says.
    counts = await asyncio.gather(*(execution_count(clients, k) for k in running))
    listed = []
    for (kernel_id, manager), count in zip(running.items(), counts, strict=True):
        state = getattr(manager, "execution_state", None) or "unknown"
        listed.append(
            {
                "kernelId": kernel_id,
                "name": manager.kernel_name,
                "state": "idle" if count is not None else state,
                "executionCount": count,
                "lastActivity": _iso(getattr(manager, "last_activity", None)),
                "notebooks": sorted(notebooks.get(kernel_id, [])),
            }
        )
    return listed


def _shown(ctx: ToolContext, api_path: str) -> str:
    """A session's path (relative to the server's root) as the project names it."""
    root = Path(getattr(ctx.serverapp.contents_manager, "root_dir", None) or ctx.root_dir)
    try:
        return ctx.relative((root / api_path).resolve())
    except Exception:  # a session outside the project: the server's own name for it
        return api_path


async def _existing(ctx: ToolContext, path: Path, shown: str) -> NotebookKernel:
    found = await find_notebook_kernel(ctx, path)
    if found is None:
        raise ToolError(
            f"{shown} has no kernel; start one with kernel_action action=start "
            "(running a cell starts one too)"
        )
    return found


async def start(
    ctx: ToolContext, path: Path, shown: str, kernel_name: str | None
) -> dict[str, Any]:
    """The notebook's kernel, started with a session when it has none."""
    if kernel_name is not None:
        await check_kernel_name(ctx, kernel_name)
    found = await find_notebook_kernel(ctx, path)
    if found is not None:
        current = await _state(ctx, found.kernel_id)
        if kernel_name is not None and current["name"] != kernel_name:
            raise ToolError(
                f"{shown} already has a {current['name']} kernel; use action=change to "
                f"switch it to {kernel_name}"
            )
        return current
    kernel = await notebook_kernel(ctx, path, kernel_name=kernel_name)
    return await _state(ctx, kernel.kernel_id)


async def restart(
    ctx: ToolContext, clients: KernelClients, path: Path, shown: str
) -> dict[str, Any]:
    """Restart the notebook's kernel (its variables are gone; the session stays)."""
    kernel = await _existing(ctx, path, shown)
    try:
        await managers.restart_kernel(ctx.serverapp, kernel.kernel_id)
    except Exception as e:
        raise ToolError(f"Could not restart the kernel of {shown}: {managers.describe(e)}") from e
    # Answer once it answers again (a new client: the old one was of the old process).
    async with clients.use(kernel.kernel_id, wait=RESTART_READY):
        pass
    return await _state(ctx, kernel.kernel_id)


async def interrupt(ctx: ToolContext, path: Path, shown: str) -> dict[str, Any]:
    """Interrupt what the notebook's kernel is running (KeyboardInterrupt in the cell)."""
    kernel = await _existing(ctx, path, shown)
    try:
        await managers.interrupt_kernel(ctx.serverapp, kernel.kernel_id)
    except Exception as e:
        raise ToolError(f"Could not interrupt the kernel of {shown}: {managers.describe(e)}") from e
    return await _state(ctx, kernel.kernel_id)


async def shutdown(
    ctx: ToolContext, clients: KernelClients, path: Path, shown: str
) -> dict[str, Any]:
    """Shut the notebook's kernel down and end its session."""
    kernel = await _existing(ctx, path, shown)
    answer = await _state(ctx, kernel.kernel_id)
    clients.forget(kernel.kernel_id)
    await ctx.serverapp.session_manager.delete_session(kernel.session_id)
    answer["state"] = "dead"
    return answer


async def change(
    ctx: ToolContext, clients: KernelClients, path: Path, shown: str, kernel_name: str
) -> dict[str, Any]:
    """Give the notebook's session a new kernel of ``kernel_name``; the old one is shut down.

    A notebook without a kernel gets one of ``kernel_name``.
    """
    await check_kernel_name(ctx, kernel_name)
    found = await find_notebook_kernel(ctx, path)
    if found is None:
        kernel = await notebook_kernel(ctx, path, kernel_name=kernel_name)
        return await _state(ctx, kernel.kernel_id)
    sessions = ctx.serverapp.session_manager
    before = await sessions.get_session(session_id=found.session_id)
    try:
        kernel_id = await outside_the_call(
            sessions.start_kernel_for_session(
                found.session_id,
                path=before["path"],
                name=before["name"],
                type=before["type"],
                kernel_name=kernel_name,
            )
        )
    except Exception as e:
        raise ToolError(
            f"The {kernel_name!r} kernel could not be started: {managers.describe(e)}"
        ) from e
    await sessions.update_session(found.session_id, kernel_id=kernel_id)
    clients.forget(found.kernel_id)
    if found.kernel_id in managers.kernel_manager(ctx.serverapp):
        await asyncio.shield(managers.shutdown_kernel(ctx.serverapp, found.kernel_id))
    return await _state(ctx, kernel_id)


async def kernelspec_metadata(ctx: ToolContext, kernel_name: str) -> dict[str, Any]:
    """The ``metadata.kernelspec`` a notebook gets for ``kernel_name`` (as JupyterLab writes)."""
    spec = managers.spec_of(await managers.kernel_specs(ctx.serverapp), kernel_name)
    return {
        "name": kernel_name,
        "display_name": spec.get("display_name", kernel_name),
        "language": spec.get("language", ""),
    }
