"""A client of a kernel behind a gateway that behaves as a local kernel's client does.

A server started with ``--gateway-url`` reaches its kernels through jupyter_server's
:class:`~jupyter_server.gateway.managers.GatewayKernelClient`: the kernel's five channels over
one websocket to the gateway (Jupyter Kernel Gateway, Enterprise Gateway). As jupyter_server
2.21 ships it, that client falls short of what the kernel tools need in five ways:

- it opens the websocket without the gateway's headers, so a gateway that requires a token
  (``--GatewayClient.auth_token``) refuses it (401), and it opens it on the event loop, which
  stands still while it connects;
- the messages it sends do not name their channel, so the gateway puts every one on the
  shell channel: a ``debug_request`` never reaches the kernel's debugger, which listens on
  control;
- a reader waiting for a message spins on the event loop (``asyncio.sleep(0)`` in a loop)
  until one comes or its time is up, a core busy for as long as anybody waits;
- a kernel that the gateway restarted after it died is told only by a ``restarting`` status
  that a reader may never look at, and a closed websocket by nothing a reader sees;
- closing it may wait up to 3 s, on the event loop, for the gateway's closing frame, when its
  own router thread read that frame first.

:class:`GatewayKernelConnection` keeps jupyter_server's websocket transport (its router
thread and message encoding) and mends those five: the websocket is opened from a thread with
the headers, cookies and TLS settings jupyter_server's own gateway requests carry
(:meth:`GatewayClient.load_connection_args`), every message says its channel, a waiting reader
sleeps until its message arrives, the client knows when its kernel restarted or its
connection closed (:attr:`GatewayKernelConnection.lost`), and it closes at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import ssl
import threading
from typing import Any

import websocket
from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import ChannelQueue, GatewayKernelClient, HBChannelQueue
from jupyter_server.utils import url_path_join
from tornado.escape import url_escape

#: Messages a channel keeps for a reader that has not come yet; the oldest go first beyond it.
#: A kept client reads its kernel's iopub only while it works, and a chatty cell of another
#: client's (the user's) would otherwise fill memory meanwhile.
MAX_QUEUED = 10_000
#: Longest stretch a waiting reader sleeps before it looks whether the connection closed.
WAKE_CHECK = 0.5
#: Seconds a closed connection's router thread has to end (it ends at once: its read fails).
ROUTER_JOIN = 5.0
#: Kernel states the gateway's websocket announces when the kernel behind it was replaced.
_RESTARTED = frozenset({"restarting", "dead"})


class _Channel(ChannelQueue):
    """One channel of the kernel's websocket: it names itself in what it sends, and a reader
    sleeps until the router thread says a message came, instead of spinning."""

    def __init__(self, name: str, client: GatewayKernelConnection) -> None:
        assert client.channel_socket is not None
        super().__init__(name, client.channel_socket, client.log)
        self._client = client
        self._loop = asyncio.get_running_loop()
        self._waiters: set[asyncio.Future[None]] = set()

    # Called by the router thread, under the queue's lock.
    def _put(self, item: Any) -> None:
        if len(self.queue) >= MAX_QUEUED:
            self.queue.popleft()
        super()._put(item)
        if (
            self.channel_name == "iopub"
            and item.get("msg_type") == "status"
            and (item.get("content") or {}).get("execution_state") in _RESTARTED
        ):
            self._client.restarted = True
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        for waiter in self._waiters:
            _resolve(waiter)

    async def _wait(self, seconds: float) -> None:
        """Until a message arrives or ``seconds`` pass.

        A bare future rather than ``asyncio.wait_for``, which on Python 3.10 and 3.11 can
        swallow the cancellation of a reader whose message came at the same moment (and a
        reader task that is never cancelled keeps its debug session from ending).
        """
        waiter = self._loop.create_future()
        self._waiters.add(waiter)
        timer = self._loop.call_later(seconds, _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiters.discard(waiter)

    async def get_msg(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The next message, waiting up to ``timeout`` seconds (None: as long as it takes);
        :class:`queue.Empty` when none came."""
        timeout = kwargs.get("timeout", args[0] if args else None)
        deadline = None if timeout is None else self._loop.time() + timeout
        while True:
            try:
                msg: dict[str, Any] = self.get_nowait()
                return msg
            except queue.Empty:
                pass
            remaining = WAKE_CHECK if deadline is None else deadline - self._loop.time()
            if remaining <= 0:
                raise queue.Empty
            # A closed connection sends nothing more: the wait runs out its time, as a silent
            # kernel's would, and the caller asks whether the kernel is still there.
            await self._wait(min(remaining, WAKE_CHECK))

    def send(self, msg: dict[str, Any]) -> None:
        """Send ``msg`` on this channel (the gateway reads the channel from the message)."""
        super().send({**msg, "channel": self.channel_name})


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class _HeartbeatChannel(_Channel, HBChannelQueue):
    """The heartbeat channel: beating while the websocket is open."""


class GatewayKernelConnection(GatewayKernelClient):
    """A client of a kernel behind a gateway (see the module docstring)."""

    #: True once the gateway announced that the kernel restarted (or could not be restarted):
    #: the kernel this client connected to is gone, though the websocket may stay open.
    restarted = False

    async def start_channels(  # type: ignore[override]  # awaited, as jupyter_server's is
        self,
        shell: bool = True,
        iopub: bool = True,
        stdin: bool = True,
        hb: bool = True,
        control: bool = True,
    ) -> None:
        """Open the kernel's websocket (with the gateway's auth) and start its channels."""
        gateway = GatewayClient.instance()
        url = url_path_join(
            gateway.ws_url or "",
            gateway.kernels_endpoint,
            url_escape(self.kernel_id),
            "channels",
        )
        headers = dict(gateway.load_connection_args().get("headers") or {})
        sslopt: dict[str, Any] = {
            "ca_certs": gateway.ca_certs,
            "certfile": gateway.client_cert,
            "keyfile": gateway.client_key,
        }
        if not gateway.validate_cert:
            sslopt["cert_reqs"] = ssl.CERT_NONE
        timeout = float(GatewayClient.KERNEL_LAUNCH_TIMEOUT)
        socket = await asyncio.to_thread(
            websocket.create_connection,
            url,
            timeout=timeout,
            header=headers,
            enable_multithread=True,
            sslopt=sslopt,
        )
        # The timeout was for connecting: the router's reads wait for as long as the kernel
        # is quiet (a read that timed out would end the connection).
        socket.settimeout(None)
        self.channel_socket = socket
        # Every channel has its queue before the router starts: a message for a channel
        # without one would end the router.
        for name in ("shell", "iopub", "stdin", "control"):
            self._channel(name)
        self._channel("hb", _HeartbeatChannel)
        AsyncKernelClient.start_channels(
            self, shell=shell, iopub=iopub, stdin=stdin, hb=hb, control=control
        )
        self.response_router = threading.Thread(
            target=self._route_responses, name=f"gateway kernel {self.kernel_id}", daemon=True
        )
        self.response_router.start()

    def stop_channels(self) -> None:
        """Close the websocket, which ends the router thread (nothing to do when it never
        opened)."""
        socket, router = self.channel_socket, self.response_router
        if socket is None or self._channels_stopped:
            return
        self._channels_stopped = True
        # No waiting for the gateway's closing frame: the router thread reads the socket too,
        # and when it takes that frame, websocket-client's close waits its 3 s for it.
        with contextlib.suppress(Exception):
            socket.close(timeout=0)
        if router is not None:
            router.join(timeout=ROUTER_JOIN)

    @property
    def closed(self) -> bool:
        """Whether the websocket closed: the kernel was shut down, or the gateway went away
        (or this client stopped its channels)."""
        router = self.response_router
        return self._channels_stopped or (router is not None and not router.is_alive())

    @property
    def lost(self) -> bool:
        """Whether the kernel this client connected to is gone for it: restarted by the
        gateway, or the websocket closed."""
        return self.restarted or self.closed

    async def _async_is_alive(self) -> bool:
        # jupyter_client asks the kernel manager, whose local check needs a kernel process;
        # behind a gateway the connection says it.
        return not self.lost

    is_alive = _async_is_alive

    def _channel(self, name: str, kind: type[_Channel] = _Channel) -> _Channel:
        queues = self._channel_queues
        assert queues is not None, "the channels of this client were stopped"
        found = queues.get(name)
        if not isinstance(found, _Channel):
            found = queues[name] = kind(name, self)
        return found

    @property
    def shell_channel(self) -> _Channel:
        """The shell channel."""
        return self._channel("shell")

    @property
    def iopub_channel(self) -> _Channel:
        """The iopub channel."""
        return self._channel("iopub")

    @property
    def stdin_channel(self) -> _Channel:
        """The stdin channel."""
        return self._channel("stdin")

    @property
    def hb_channel(self) -> _Channel:
        """The heartbeat channel."""
        return self._channel("hb", _HeartbeatChannel)

    @property
    def control_channel(self) -> _Channel:
        """The control channel."""
        return self._channel("control")


def connection_to(manager: Any, **kwargs: Any) -> GatewayKernelConnection:
    """A client of the gateway kernel ``manager`` manages (a GatewayKernelManager), built as
    the manager's own ``client()`` builds one; its channels are not started."""
    options: dict[str, Any] = dict(manager.get_connection_info(session=True))
    options.update(
        connection_file=manager.connection_file, parent=manager, kernel_id=manager.kernel_id
    )
    options.update(kwargs)
    return GatewayKernelConnection(**options)
