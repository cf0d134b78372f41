"""Busy kernels: since when each of the server's kernels has been executing.

The kernel manager only knows a kernel's execution state now; the progress indicators also
tell since when it has been busy, so a watcher polls the states while the server runs (a
gateway's kernels' states it asks the gateway for, every few seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from ..core.errors import ToolError
from ..kernels import managers

#: How often the busy-kernel watcher looks at execution states (seconds).
POLL_SECONDS = 0.5
#: How often it asks a gateway for its kernels' states (seconds): the server knows a gateway
#: kernel's state only from the gateway's answers, and one request a poll would be many.
GATEWAY_POLL_SECONDS = 5.0


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
                    kernel = managers.kernel(self.serverapp, kernel_id)
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
        loop = asyncio.get_running_loop()
        asked = -GATEWAY_POLL_SECONDS
        while True:
            if (
                managers.behind_gateway(self.serverapp)
                and loop.time() - asked >= GATEWAY_POLL_SECONDS
            ):
                asked = loop.time()
                with contextlib.suppress(ToolError):  # the gateway is away: states stay as known
                    await managers.refresh(self.serverapp)
            self.busy()
            await asyncio.sleep(POLL_SECONDS)

    async def shutdown(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
