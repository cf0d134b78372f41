"""``/mcp``: the SDK's Streamable HTTP endpoint, served by a Tornado handler.

Jupyter (Tornado) does auth, the Host check and our ``Origin`` check; then the request is handed
to the SDK's ASGI session manager (:class:`~jupyter_mcp.surfaces.mcp.MCPSurface`) through a small
Tornado-to-ASGI adapter that streams SSE responses chunk by chunk and reports a client that went
away as ``http.disconnect`` (which is how the SDK cancels a modern-era call).

Clients that cannot take SSE (``Accept: application/json`` only) get the one JSON-RPC answer as
``application/json`` instead of a 406.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web
from tornado.iostream import StreamClosedError

from .base import MCPBaseHandler
from .mcp import STOPPED_WHEN_LEFT, MCPSurface

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Any], Awaitable[None]]

# Hop-by-hop or length headers that Tornado sets itself.
_SKIPPED_HEADERS = {"content-length", "transfer-encoding", "connection"}


def accepts(accept: str) -> tuple[bool, bool]:
    """``(json, sse)``: whether an ``Accept`` header takes JSON and Server-Sent Events."""
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",") if part.strip()}
    anything = not kinds or "*/*" in kinds
    return (
        anything or bool(kinds & {"application/json", "application/*"}),
        anything or bool(kinds & {"text/event-stream", "text/*"}),
    )


class SSECollapser:
    """Turns an SSE response into the single JSON-RPC answer it carries.

    Used for clients that asked for JSON only: notifications on the stream are dropped (the
    client could not have read them) and the response message becomes an ``application/json``
    body.
    """

    def __init__(self) -> None:
        self._buffer = ""
        self.answer: dict[str, Any] | None = None

    def feed(self, chunk: bytes) -> None:
        """Consume a piece of the event stream."""
        self._buffer += chunk.decode("utf-8").replace("\r\n", "\n")
        while "\n\n" in self._buffer:
            event, self._buffer = self._buffer.split("\n\n", 1)
            data = "\n".join(
                line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")
            )
            if not data:
                continue
            try:
                message = json.loads(data)
            except ValueError:
                continue
            if (
                isinstance(message, dict)
                and "id" in message
                and ("result" in message or "error" in message)
            ):
                self.answer = message


async def serve_asgi(
    handler: APIHandler,
    app: ASGIApp,
    *,
    headers: list[tuple[bytes, bytes]],
    disconnected: asyncio.Event,
    json_only: bool = False,
    user: Any = None,
) -> None:
    """Run one Tornado request through the ASGI ``app`` and write its response."""
    request = handler.request
    path = request.path
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": request.version.removeprefix("HTTP/") or "1.1",
        "method": request.method,
        "scheme": request.protocol,
        "path": path,
        "raw_path": path.encode("utf-8"),
        "root_path": "",
        "query_string": (request.query or "").encode("latin-1"),
        "headers": headers,
        "client": (request.remote_ip, 0),
        "server": None,
    }
    if user is not None:
        scope["user"] = user
    body_given = False

    async def receive() -> dict[str, Any]:
        nonlocal body_given
        if not body_given:
            body_given = True
            return {"type": "http.request", "body": request.body or b"", "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    content_type = "application/json"
    status = 200
    collapse: SSECollapser | None = None

    async def send(message: dict[str, Any]) -> None:
        nonlocal content_type, status, collapse
        if message["type"] == "http.response.start":
            status = message["status"]
            response_headers = [
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
            ]
            for name, value in response_headers:
                if name.lower() == "content-type":
                    content_type = value
            sse = content_type.startswith("text/event-stream")
            if json_only and sse:
                collapse = SSECollapser()
            handler.set_status(status)
            handler.clear_header("Content-Type")
            for name, value in response_headers:
                lower = name.lower()
                if lower in _SKIPPED_HEADERS or (collapse is not None and lower == "content-type"):
                    continue
                if lower == "set-cookie":
                    handler.add_header(name, value)
                else:
                    handler.set_header(name, value)  # replaces Jupyter's default, if any
            if sse and collapse is None:
                # Send the headers now: an event stream may stay quiet for a long while.
                await _flush(handler, disconnected)
            return
        if message["type"] != "http.response.body" or disconnected.is_set():
            return
        body = message.get("body", b"")
        if collapse is not None:
            collapse.feed(body)
            return
        if body:
            handler.write(body)
        if message.get("more_body", False):
            await _flush(handler, disconnected)

    await app(scope, receive, send)
    if handler._finished or disconnected.is_set():
        return
    if collapse is not None:
        handler.set_header("Cache-Control", "no-store")
        if collapse.answer is None:
            handler.set_status(500)
            collapse.answer = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32603, "message": "The server sent no response"},
            }
        handler.finish(json.dumps(collapse.answer), set_content_type="application/json")
        return
    try:
        handler.finish(set_content_type=content_type)
    except StreamClosedError:
        disconnected.set()


async def _flush(handler: web.RequestHandler, disconnected: asyncio.Event) -> None:
    try:
        await handler.flush()
    except StreamClosedError:
        disconnected.set()


class StreamableHTTPHandler(MCPBaseHandler):
    """``POST/GET/DELETE {base_url}mcp``: standard MCP (Streamable HTTP, both protocol eras)."""

    _disconnected: asyncio.Event | None = None
    # The legacy-session call this POST carries, stopped if its client leaves (see _serve).
    _call: tuple[MCPSurface, str, Any, Any] | None = None

    @property
    def surface(self) -> MCPSurface:
        surface = self.ctx.services.mcp_surface
        if surface is None:  # the app always makes one; a bare app has no MCP to serve
            raise web.HTTPError(503, "This server has no MCP surface")
        return surface

    def on_connection_close(self) -> None:
        """The client went away: tell the SDK, which cancels a call still running for it."""
        if self._disconnected is not None:
            self._disconnected.set()
        if self._call is not None:
            surface, session_id, request_id, owner = self._call
            self._call = None
            surface.cancel_call(session_id, request_id, owner)

    async def _serve(self) -> None:
        # The SDK reads the choice again per message (MCPSurface); refuse a bad one here, as an
        # HTTP 400 with a JSON-RPC error, before any session starts.
        _ = self.toolsets
        self._disconnected = asyncio.Event()
        headers: list[tuple[bytes, bytes]] = []
        json_only = False
        for name, value in self.request.headers.get_all():
            lower = name.lower()
            if lower == "origin":
                # Checked in prepare() against the server's own origin and the configured ones.
                continue
            if lower == "accept":
                continue
            headers.append((lower.encode("latin-1"), value.encode("latin-1")))
        wants_json, wants_sse = accepts(self.request.headers.get("Accept", ""))
        if self.request.method == "POST" and not wants_sse:
            # Lenient Accept: answer JSON to clients that cannot take SSE.
            json_only = True
            headers.append((b"accept", b"application/json, text/event-stream"))
        elif self.request.method == "POST" and not wants_json:
            headers.append((b"accept", b"application/json, text/event-stream"))
        elif "Accept" in self.request.headers:
            headers.append((b"accept", self.request.headers["Accept"].encode("latin-1")))
        surface = self.surface
        app: ASGIApp = surface.handle
        owner = session_owner(self)
        session_id = self.request.headers.get("Mcp-Session-Id")
        if self.request.method == "POST" and session_id is not None:
            message = _parsed(self.request.body)
            if surface.answers_as_json(message, session_id):
                # A request in a legacy session that streams nothing: one JSON body.
                # (2026-07-28 requests have no session; the SDK answers those that stream
                # nothing as JSON itself, and watches their connection to cancel them.)
                app = functools.partial(surface.handle, json_answer=True)
            if isinstance(message, dict) and message.get("method") in STOPPED_WHEN_LEFT:
                # The SDK does not stop a legacy call whose client left: on_connection_close
                # does (a callback, not a task per call watching the connection).
                self._call = (surface, session_id, message.get("id"), owner)
        try:
            await serve_asgi(
                self,
                app,
                headers=headers,
                disconnected=self._disconnected,
                json_only=json_only,
                user=owner,
            )
        finally:
            self._call = None

    @web.authenticated
    @authorized("execute")  # a message may call a tool, which runs commands and kernels
    async def post(self) -> None:
        """A client message (request, notification or response)."""
        await self._serve()

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """The server-to-client SSE stream of a legacy session."""
        await self._serve()

    @web.authenticated
    @authorized("execute")
    async def delete(self) -> None:
        """End a legacy session."""
        await self._serve()

    def error_payload(self, reason: str) -> dict[str, Any]:
        """HTTP-level refusals (auth, origin) as a JSON-RPC error without id."""
        return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": reason}}


def _parsed(body: bytes | None) -> Any:
    """The JSON of a request body; None when it is not JSON (the SDK answers that one)."""
    try:
        return json.loads(body or b"")
    except (ValueError, RecursionError):
        return None


def session_owner(handler: web.RequestHandler) -> Any:
    """Who may use a session, as the SDK's principal: a session answers only its opener.

    A request carrying the server's token acts for whoever holds the token (Jupyter gives such
    requests a fresh anonymous name each time when no cookie comes back); a cookie login acts
    for its user. None when the server runs without auth.
    """
    provider = getattr(handler, "identity_provider", None)
    user = getattr(handler, "current_user", None)
    if provider is None or not getattr(provider, "auth_enabled", False) or user is None:
        return None
    if getattr(handler, "token_authenticated", False):
        principal = "jupyter-token"
    else:
        principal = "user:" + (getattr(user, "username", None) or str(user))
    return _principal(principal)


@functools.lru_cache(maxsize=1024)
def _principal(client_id: str) -> Any:
    """The SDK's user for ``client_id``, made once (it is only compared, never changed)."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="jupyter", client_id=client_id, scopes=[]))
