"""The stdio relay: MCP between a client's stdin/stdout and a running server's ``/mcp``.

``jupyter mcp-ide stdio`` lets clients that only spawn processes (Claude Desktop, any stdio MCP
client) talk to a running Jupyter server (found by :mod:`jupyter_mcp.cli.discovery`). The relay
is transparent: each JSON-RPC line from stdin is POSTed with the headers its protocol era needs
(session id and version for the legacy handshake era; ``MCP-Protocol-Version``, ``Mcp-Method``
and ``Mcp-Name`` from the message itself for 2026-07-28), and every message the server answers
with, as JSON or as an SSE stream, goes to stdout as one line. Logs go to stderr only.

A server that restarts (a JupyterHub respawn, ``jupyter lab`` started again) forgets the
legacy sessions it had; it answers 404 to their id. The client on stdin cannot see that, so
the relay opens a new session with the client's own ``initialize`` and sends the request
again: the client keeps working without a restart of its own (state kept per session on the
server, such as the log level, starts afresh; the tasks of the server that stopped are gone, and
asking for one says so).

MCP tasks pass through as any request does: their ``tasks/*`` requests, and the notifications
about them on the session's stream.

The relay exits as soon as stdin ends or SIGTERM comes (what a client that quits does): what is
still in flight is cancelled and the open streams are closed, so the server sees the client go
(:meth:`Relay.close`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import PROGRAM
from .discovery import ServerTarget

log = logging.getLogger("jupyter_mcp.cli.relay")

#: How long, once the client is gone, its last notifications and the session's DELETE may
#: take (seconds): a server that does not answer must not hold the relay's exit.
CLOSE_TIMEOUT = 5.0
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
#: The params field each method's ``Mcp-Name`` header carries (2026-07-28); the tasks
#: extension names ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` by their task.
NAME_BEARING_METHODS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}


def _modern_version(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and isinstance(meta.get(PROTOCOL_VERSION_META_KEY), str):
            return meta[PROTOCOL_VERSION_META_KEY]
    return None


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def sse_messages(buffer: str) -> tuple[list[str], str]:
    """Split complete SSE events off ``buffer``: their ``data`` payloads and what remains."""
    buffer = buffer.replace("\r\n", "\n")
    payloads = []
    while "\n\n" in buffer:
        event, buffer = buffer.split("\n\n", 1)
        data = "\n".join(
            line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")
        )
        if data:
            payloads.append(data)
    return payloads, buffer


class ClientGone(Exception):
    """Stdout cannot be written any more: the client closed it (the relay then stops)."""


class Relay:
    """Relays JSON-RPC lines between stdio and the server's Streamable HTTP endpoint."""

    def __init__(
        self,
        target: ServerTarget,
        write: Callable[[bytes], None],
        *,
        http_client: Any = None,
    ) -> None:
        import httpx2

        self.target = target
        self._write = write
        self._write_lock = threading.Lock()
        headers = {"Authorization": f"token {target.token}"} if target.token else {}
        self.http = http_client or httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(30.0, read=None)
        )
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._in_flight: dict[Any, tuple[asyncio.Task[None], bool]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        # The client's initialize request: what opens a new session when the server lost ours.
        self._initialize: dict[str, Any] | None = None
        self._reopen_lock = asyncio.Lock()
        self._reopened = 0
        # The client's resource subscriptions on its legacy session, made again on a new one.
        self._subscriptions: dict[str, None] = {}

    def emit(self, message: Any) -> None:
        """Write one message to stdout as a single line."""
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        with self._write_lock:
            self._write(data + b"\n")

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        from mcp.shared.inbound import encode_header_value

        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        modern = _modern_version(message)
        if modern is not None:
            headers["MCP-Protocol-Version"] = modern
            method = message.get("method")
            if isinstance(method, str):
                headers["Mcp-Method"] = method
                key = NAME_BEARING_METHODS.get(method)
                params = message.get("params") or {}
                if key and isinstance(params.get(key), str):
                    headers["Mcp-Name"] = encode_header_value(params[key])
            return headers
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def handle_line(self, line: bytes) -> None:
        """Relay one line from stdin (a request, notification or response)."""
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            self.emit(_error(None, -32700, "Parse error: a line on stdin is not JSON"))
            return
        if not isinstance(message, dict):
            self.emit(
                _error(None, -32600, "Invalid request: expected one JSON-RPC object per line")
            )
            return
        if message.get("method") == "notifications/cancelled":
            cancelled = (message.get("params") or {}).get("requestId")
            entry = self._in_flight.get(cancelled)
            if entry is not None and entry[1]:
                # 2026-07-28: closing the response stream is what cancels the call.
                entry[0].cancel()
                return
        modern = _modern_version(message) is not None
        self._note_subscription(message)
        task = asyncio.get_running_loop().create_task(self._post(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if "method" in message and "id" in message:
            request_id = message["id"]
            self._in_flight[request_id] = (task, modern)
            task.add_done_callback(functools.partial(self._settled, request_id))
        if message.get("method") == "initialize":
            self._initialize = message
            # Later messages need the session id that this answer brings.
            await asyncio.shield(task)

    def _note_subscription(self, message: dict[str, Any]) -> None:
        """Remember the resources the client subscribes to on its legacy session."""
        method = message.get("method")
        uri = (message.get("params") or {}).get("uri")
        if not isinstance(uri, str) or _modern_version(message) is not None:
            return
        if method == "resources/subscribe":
            self._subscriptions[uri] = None
        elif method == "resources/unsubscribe":
            self._subscriptions.pop(uri, None)

    def _settled(self, request_id: Any, _task: asyncio.Task[None]) -> None:
        self._in_flight.pop(request_id, None)

    async def _post(self, message: dict[str, Any]) -> None:
        request_id = message.get("id") if "method" in message else None
        body = json.dumps(message).encode("utf-8")
        try:
            for attempt in range(2):
                headers = self._headers(message)
                async with self.http.stream(
                    "POST", self.target.mcp_url, content=body, headers=headers
                ) as response:
                    stale = headers.get("Mcp-Session-Id")
                    if (
                        attempt == 0
                        and stale is not None
                        and response.status_code == 404
                        and message.get("method") != "initialize"
                    ):
                        await response.aread()
                        if await self._reopen(stale):
                            continue  # the same message again, in the new session
                    await self._read_response(message, request_id, response)
                return
        except asyncio.CancelledError:
            raise
        except ClientGone:
            return  # no one to answer: the relay is stopping
        except Exception as e:
            log.warning("%s: request to %s failed: %s", PROGRAM, self.target.mcp_url, e)
            if request_id is not None:
                self.emit(_error(request_id, -32603, f"Jupyter server unreachable: {e}"))

    async def _read_response(self, message: dict[str, Any], request_id: Any, response: Any) -> None:
        session = response.headers.get("mcp-session-id")
        if session and message.get("method") == "initialize":
            self.session_id = session
        content_type = response.headers.get("content-type", "")
        if response.status_code == 202 or request_id is None and response.status_code < 400:
            await response.aread()
            return
        if content_type.startswith("text/event-stream"):
            buffer = ""
            async for chunk in response.aiter_text():
                payloads, buffer = sse_messages(buffer + chunk)
                for payload in payloads:
                    self._forward(payload, message)
            return
        data = await response.aread()
        try:
            answer = json.loads(data) if data else None
        except ValueError:
            answer = None
        if isinstance(answer, dict) and answer.get("jsonrpc") == "2.0":
            if request_id is not None and answer.get("id") is None and "error" in answer:
                answer["id"] = request_id  # let the client match the refusal to its request
            self._note(answer, message)
            if request_id is not None or answer.get("id") is not None:
                self.emit(answer)
            return
        if request_id is not None:
            text = data.decode("utf-8", "replace").strip()[:500]
            self.emit(
                _error(
                    request_id,
                    -32603,
                    f"Jupyter server answered HTTP {response.status_code}: "
                    f"{text or response.reason_phrase}",
                )
            )

    def _forward(self, payload: str, message: dict[str, Any]) -> None:
        try:
            answer = json.loads(payload)
        except ValueError:
            log.warning("%s: dropped a malformed event from the server", PROGRAM)
            return
        if isinstance(answer, dict):
            self._note(answer, message)
        self.emit(answer)

    def _note(self, answer: dict[str, Any], message: dict[str, Any]) -> None:
        if message.get("method") == "initialize" and isinstance(answer.get("result"), dict):
            version = answer["result"].get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version
            if self.session_id and self._listener is None:
                self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        """The legacy session's GET stream: server-initiated notifications and requests."""
        delay = 1.0
        while self.session_id:
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": self.session_id}
            if self.protocol_version:
                headers["MCP-Protocol-Version"] = self.protocol_version
            try:
                async with self.http.stream(
                    "GET", self.target.mcp_url, headers=headers
                ) as response:
                    if response.status_code == 404 and await self._reopen(
                        headers["Mcp-Session-Id"]
                    ):
                        continue  # the server restarted: listen on the new session
                    if response.status_code in (404, 405, 406):
                        return  # no stream offered, or the session is gone
                    if response.status_code >= 400:
                        raise RuntimeError(f"HTTP {response.status_code}")
                    delay = 1.0
                    buffer = ""
                    async for chunk in response.aiter_text():
                        payloads, buffer = sse_messages(buffer + chunk)
                        for payload in payloads:
                            self._forward(payload, {})
            except asyncio.CancelledError:
                raise
            except ClientGone:
                return  # no one to tell: the relay is stopping
            except Exception as e:
                log.info("%s: notification stream interrupted (%s); reconnecting", PROGRAM, e)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    async def _reopen(self, stale: str) -> bool:
        """Open a new legacy session after the server answered 404 to ``stale``.

        Replays the client's ``initialize`` (under an id of the relay's, its answer is not
        forwarded: the client had it already) and ``notifications/initialized``. Requests that
        fail at the same time wait for one reopening. False when there is nothing to replay or
        the server refuses it; the caller then passes the 404 on.
        """
        async with self._reopen_lock:
            if self.session_id != stale:
                return self.session_id is not None  # another request reopened it meanwhile
            if self._initialize is None:
                return False
            self._reopened += 1
            log.info("jupyter-mcp: the server lost session %s; opening a new one", stale)
            self.session_id = None
            initialize = {**self._initialize, "id": f"jupyter-mcp-reopen-{self._reopened}"}
            accept = {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
            }
            try:
                response = await self.http.post(
                    self.target.mcp_url, content=json.dumps(initialize).encode(), headers=accept
                )
                session = response.headers.get("mcp-session-id")
                answers, _ = sse_messages(response.text + "\n\n")
                if not response.headers.get("content-type", "").startswith("text/event-stream"):
                    answers = [response.text]
                result = next(
                    (
                        answer["result"]
                        for answer in map(json.loads, answers)
                        if isinstance(answer, dict) and isinstance(answer.get("result"), dict)
                    ),
                    None,
                )
                if response.status_code != 200 or not session or result is None:
                    log.warning("jupyter-mcp: the server refused a new session: %s", response)
                    return False
                self.session_id = session
                version = result.get("protocolVersion")
                if isinstance(version, str):
                    self.protocol_version = version
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await self.http.post(
                    self.target.mcp_url,
                    content=json.dumps(initialized).encode(),
                    headers=self._headers(initialized),
                )
                # The client's subscriptions belonged to the lost session: make them again
                # (their answers are the relay's own, not forwarded).
                for n, uri in enumerate(list(self._subscriptions)):
                    subscribe = {
                        "jsonrpc": "2.0",
                        "id": f"jupyter-mcp-resubscribe-{self._reopened}-{n}",
                        "method": "resources/subscribe",
                        "params": {"uri": uri},
                    }
                    await self.http.post(
                        self.target.mcp_url,
                        content=json.dumps(subscribe).encode(),
                        headers=self._headers(subscribe),
                    )
            except Exception as e:  # unreachable, or an answer that is not JSON-RPC
                log.warning("jupyter-mcp: opening a new session failed: %s", e)
                return False
            if self._listener is not None and self._listener.done():
                self._listener = asyncio.get_running_loop().create_task(self._listen())
            return True

    async def close(self) -> None:
        """The client is gone (stdin closed, or SIGTERM): stop at once, leaving nothing open.

        The client's requests still in flight are cancelled, and the open streams with them
        (a ``subscriptions/listen``, a long ``tools/call``, the legacy session's GET stream):
        no one is left to read their answers, and a stream left open would hold the exit for
        as long as the server keeps it (forever, for a listen stream). Closing a 2026-07-28
        request's stream is what cancels it on the server; a legacy session ends with its
        DELETE, which cancels its calls. Notifications and answers to the server's requests
        the client sent last are still delivered (a moment, bounded).
        """
        requests = {task for task, _modern in self._in_flight.values()}
        if self._listener is not None:
            requests.add(self._listener)
        for task in requests:
            task.cancel()
        pending = [t for t in (*self._tasks, *requests) if not t.done()]
        if pending:
            _done, late = await asyncio.wait(pending, timeout=CLOSE_TIMEOUT)
            for task in late:
                task.cancel()
        if self.session_id:
            try:
                await self.http.delete(
                    self.target.mcp_url,
                    headers={
                        "Mcp-Session-Id": self.session_id,
                        **(
                            {"MCP-Protocol-Version": self.protocol_version}
                            if self.protocol_version
                            else {}
                        ),
                    },
                    timeout=CLOSE_TIMEOUT,
                )
            except Exception as e:
                log.debug("%s: ending the session failed: %s", PROGRAM, e)
        await self.http.aclose()


def _read_stdin(loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[bytes]) -> None:
    """Hand stdin's lines to the loop, then ``b""`` at its end (a daemon thread's work).

    ``os.read`` on the descriptor, not ``sys.stdin.buffer``: the thread may still be blocked
    in it when the relay exits (SIGTERM with stdin open), and a daemon thread holding the
    buffered reader's lock makes the interpreter abort at shutdown.
    """
    fd = sys.stdin.fileno()
    pending = b""
    try:
        while chunk := os.read(fd, 65536):
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                loop.call_soon_threadsafe(lines.put_nowait, line + b"\n")
    except OSError:
        pass  # stdin closed under the thread: its end
    finally:
        with contextlib.suppress(RuntimeError):  # the loop closed already
            if pending:
                loop.call_soon_threadsafe(lines.put_nowait, pending)
            loop.call_soon_threadsafe(lines.put_nowait, b"")


async def relay_stdio(target: ServerTarget) -> None:
    """Relay stdin to the server and the server's messages to stdout until stdin closes.

    SIGTERM (and SIGHUP) end the relay as stdin's end does (a client that quits sends it when
    the relay does not exit at once): the session ended, the streams closed, exit status 0.
    """
    stdout = sys.stdout.buffer
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()

    def write(data: bytes) -> None:
        try:
            stdout.write(data)
            stdout.flush()
        except (OSError, ValueError) as e:
            # The client closed its end of stdout: it is gone. What stays in the buffer goes
            # to nowhere (else flushing it at exit fails once more, exit status 120).
            stopped.set()
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stdout.fileno())
                os.close(devnull)
            raise ClientGone from e

    relay = Relay(target, write)
    lines: asyncio.Queue[bytes] = asyncio.Queue()
    threading.Thread(target=_read_stdin, args=(loop, lines), name="stdin", daemon=True).start()
    signals = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    for signum in signals:
        with contextlib.suppress(NotImplementedError, RuntimeError):  # Windows: no handlers
            loop.add_signal_handler(signum, stopped.set)

    async def pump() -> None:
        while line := await lines.get():
            await relay.handle_line(line)

    pumping = loop.create_task(pump())
    stopping = loop.create_task(stopped.wait())
    try:
        await asyncio.wait({pumping, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pumping, stopping):
            task.cancel()
        for signum in signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)
        await relay.close()
    error = pumping.exception() if pumping.done() and not pumping.cancelled() else None
    if error is not None:
        raise error
