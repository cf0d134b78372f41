"""One connected client per kernel of the server, kept between calls.

Connecting a client costs channels and a ``kernel_info`` round trip; a warm kernel answers
``1+1`` in a few milliseconds, so the notebook and kernel tools keep one client per kernel and
take turns on it. A client reads every iopub message of its kernel, so two requests on one
client at once would steal each other's messages: :meth:`KernelClients.use` hands the client
to one caller at a time (the kernel runs one request at a time anyway).

A client is dropped when its kernel dies, restarts (a new process) or is shut down, and the
next use connects afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..core.context import outside_the_call
from ..core.errors import ToolError
from . import managers

#: Seconds a dead kernel has to be restarted by the server before it is restarted here.
AUTORESTART_WAIT = 15.0


@dataclass(eq=False)
class KernelClient:
    """A connected client of one kernel and what it was connected to."""

    kernel_id: str
    client: Any
    #: The server's KernelManager of the kernel (the same object across restarts).
    manager: Any
    #: The kernel process the client was connected to (see managers.incarnation).
    incarnation: tuple[Any, int]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: The kernel's ``kernel_info`` reply, asked right after connecting ({} if it did not
    #: answer): its ``language_info`` is what a run writes into the notebook's metadata.
    info: dict[str, Any] = field(default_factory=dict)

    #: The kernel's state as the status messages this client has read say; a new client's
    #: kernel has just answered ``kernel_info``, which it does only between cells.
    state: str = "idle"

    async def busy_elsewhere(self) -> bool:
        """Whether the kernel is running another client's request (the user's cell, say).

        Reads the status messages that came in since this client last listened. The
        server's own ``execution_state`` would do, but it is not reset when a kernel dies
        while busy and comes back.
        """
        while True:
            try:
                msg = await self.client.get_iopub_msg(timeout=0)
            except queue.Empty:
                return self.state == "busy"
            if msg.get("msg_type") == "status":
                self.state = msg.get("content", {}).get("execution_state", self.state)

    async def is_alive(self) -> bool:
        """Whether the kernel this client talks to still runs (a restarted one does not)."""
        return await managers.client_alive(self.client, self.manager, self.incarnation)

    @property
    def current(self) -> bool:
        """Whether this client is still one of its kernel as it runs now: not of a process
        that restarted since, nor of a connection that closed."""
        return self.incarnation == managers.incarnation(
            self.manager
        ) and not managers.connection_lost(self.client)

    def close(self) -> None:
        """Stop the client's channels."""
        managers.disconnect(self.client)


class KernelClients:
    """The kept clients of a server's kernels (see the module docstring)."""

    def __init__(self, serverapp: Any) -> None:
        self._serverapp = serverapp
        self._clients: dict[str, KernelClient] = {}
        self._connecting: dict[str, asyncio.Lock] = {}

    @property
    def serverapp(self) -> Any:
        """The server whose kernels these are."""
        return self._serverapp

    def _kernel_manager(self, kernel_id: str) -> Any:
        try:
            return managers.kernel(self._serverapp, kernel_id)
        except KeyError:
            self.drop(kernel_id)
            raise ToolError(f"No running kernel {kernel_id} (it was shut down)") from None

    async def _client(self, kernel_id: str) -> KernelClient:
        manager = self._kernel_manager(kernel_id)
        lock = self._connecting.setdefault(kernel_id, asyncio.Lock())
        async with lock:
            kept = self._clients.get(kernel_id)
            if kept is not None and kept.manager is manager and kept.current:
                return kept
            if kept is not None:
                self.drop(kernel_id)
            await self._alive(kernel_id, manager)
            client = managers.new_client(manager)
            try:
                # Its channels outlive the call that connects it (see outside_the_call).
                await outside_the_call(managers.connect(client))
            except Exception as e:  # a cancelled wait leaves no channels open either
                raise ToolError(
                    f"The kernel {kernel_id} does not answer: {managers.describe(e)}"
                ) from e
            kept = KernelClient(kernel_id, client, manager, managers.incarnation(manager))
            # Just ready, the kernel is idle: its kernel_info answers at once.
            kept.info = await outside_the_call(managers.kernel_info(client))
            self._clients[kernel_id] = kept
            return kept

    async def _alive(self, kernel_id: str, manager: Any) -> None:
        """Wait for a dead kernel to come back: the server restarts a kernel that died (a few
        seconds later); if it does not, restart it here. A gateway's kernel that is not alive
        is one the gateway lost or cannot be asked about: a clear error at once."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + AUTORESTART_WAIT
        while (why := await managers.not_alive(manager)) is not None:
            if not managers.restarts_itself(manager):
                raise ToolError(f"The kernel {kernel_id} cannot be reached: {why}")
            if loop.time() > deadline:
                try:
                    await managers.restart_kernel(self._serverapp, kernel_id)
                except Exception as e:
                    raise ToolError(
                        f"The kernel {kernel_id} died and could not be restarted: "
                        f"{managers.describe(e)}"
                    ) from e
                return
            await asyncio.sleep(0.2)

    @contextlib.asynccontextmanager
    async def use(
        self, kernel_id: str, *, wait: float | None = None
    ) -> AsyncIterator[KernelClient]:
        """The kernel's client, for this caller alone until the block ends.

        With ``wait``, a caller that cannot have it within ``wait`` seconds (a run holds it)
        gets a :class:`ToolError` saying the kernel is busy.
        """
        while True:
            kept = await self._client(kernel_id)
            try:
                await asyncio.wait_for(kept.lock.acquire(), wait)
            except TimeoutError:
                raise ToolError(
                    f"The kernel {kernel_id} is busy running cells for another call; try again "
                    "when it is idle (or interrupt it with kernel_action)"
                ) from None
            if self._clients.get(kernel_id) is kept:
                break
            # The kernel restarted or died while this caller waited: connect afresh.
            kept.lock.release()
        try:
            yield kept
        finally:
            kept.lock.release()

    def drop(self, kernel_id: str) -> None:
        """Forget the kernel's client (its kernel died, restarted or was shut down)."""
        kept = self._clients.pop(kernel_id, None)
        if kept is not None:
            kept.close()

    def forget(self, kernel_id: str) -> None:
        """Drop the kernel's client unless a call is using it (that call notices the end)."""
        kept = self._clients.get(kernel_id)
        if kept is not None and not kept.lock.locked():
            self.drop(kernel_id)

    def close(self) -> None:
        """Close every kept client."""
        for kernel_id in list(self._clients):
            self.drop(kernel_id)
