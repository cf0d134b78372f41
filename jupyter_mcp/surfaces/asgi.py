"""``/mcp``: the SDK's Streamable HTTP endpoint, served by a Tornado handler.

Jupyter (Tornado) does auth, the Host check and our ``Origin`` check; then the request is handed
to the SDK's ASGI session manager (:class:`~jupyter_mcp.surfaces.mcp.MCPSurface`) through a small
Tornado-to-ASGI adapter that streams SSE responses chunk by chunk and reports a client that went
away as ``http.disconnect`` (which is how the SDK cancels a modern-era call).

Clients that cannot take SSE (``Accept: application/json`` only) get the one JSON-RPC answer as
``application/json`` instead of a 406.

Besides Jupyter's token and cookie, this endpoint takes the server's own OAuth access tokens
(:mod:`jupyter_mcp.auth.identity`): a request with no credential at all is answered ``401`` with
``WWW-Authenticate: Bearer resource_metadata=…``, where an MCP client starts the OAuth flow.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from tornado import web
from tornado.iostream import StreamClosedError

from ..auth.identity import OAuthAuthorizer, OAuthIdentity, oauth_bearer, principal_of, site_of
from ..auth.provider import OAuthUnavailable, Site
from ..auth.scopes import BASE
from .base import MCPBaseHandler, not_authenticated_reason
from .inline_calls import eligible_message
from .mcp import REQUEST_FACTS, STOPPED_WHEN_LEFT, MCPSurface, RequestFacts, user_principal

ASGIApp = Callable[[dict[str, Any], Callable[[], Awaitable[dict[str, Any]]], Any], Awaitable[None]]

#: Request headers not handed to the SDK as they came, in Tornado's spelling of header names.
_NOT_PASSED = frozenset({"Origin", "Accept"})

# Hop-by-hop or length headers that Tornado sets itself.
_SKIPPED_HEADERS = {"content-length", "transfer-encoding", "connection"}

try:  # the SDK's own figures for a 2026-07-28 event stream (private: else its documented ones)
    from mcp.server._streamable_http_modern import _SSE_HEADERS as _SDK_SSE_HEADERS

    _SSE_HEADERS = [
        (k.decode("latin-1"), v.decode("latin-1"))
        for k, v in _SDK_SSE_HEADERS
        if k.decode("latin-1").lower() not in _SKIPPED_HEADERS
    ]
except ImportError:  # pragma: no cover - another SDK layout
    _SSE_HEADERS = [
        ("Content-Type", "text/event-stream"),
        ("Cache-Control", "no-cache, no-transform"),
        ("X-Accel-Buffering", "no"),
    ]


def modern_ping_interval() -> float:
    """Seconds a 2026-07-28 call may run silent before the SDK starts its event stream and
    pings it (its private figure, read per request; 15 s, its documented one, without it)."""
    try:
        from mcp.server import _streamable_http_modern
    except ImportError:  # pragma: no cover - another SDK layout
        return 15.0
    value = getattr(_streamable_http_modern, "_SSE_PING_INTERVAL", 15.0)
    return float(value) if isinstance(value, int | float) else 15.0


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
    keepalive: float | None = None,
    facts: RequestFacts | None = None,
) -> None:
    """Run one Tornado request through the ASGI ``app`` and write its response.

    ``keepalive``: seconds after which a response not yet started is started as an event
    stream that carries a ping comment every ``keepalive`` seconds, its JSON answer then sent
    as the stream's one ``message`` event: what the SDK's 2026-07-28 event stream does for a
    call that runs silent that long (a proxy's idle-read timeout would cut a silent response),
    kept for the calls it answers as JSON here (``MCPSurface.answers_modern_inline``).
    ``facts``: what the handler read off the request, left in the scope for the SDK's handlers.
    """
    request = handler.request
    scope = asgi_scope(handler, headers, user, facts)
    body_given = False
    # Set once the keepalive started an event stream; the answer's bytes collect here.
    streaming: bytearray | None = None
    pinger: asyncio.TimerHandle | None = None

    def ping() -> None:
        nonlocal streaming, pinger
        if handler._finished or disconnected.is_set():
            return
        if streaming is None:
            streaming = bytearray()
            handler.set_status(200)
            handler.clear_header("Content-Type")
            for name, value in _SSE_HEADERS:
                handler.set_header(name, value)
        handler.write(b": ping\r\n\r\n")
        handler.flush().add_done_callback(_left_if_failed(disconnected))
        pinger = asyncio.get_running_loop().call_later(cast(float, keepalive), ping)

    if keepalive is not None and not json_only:
        pinger = asyncio.get_running_loop().call_later(keepalive, ping)

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
        if pinger is not None and message["type"] == "http.response.start":
            pinger.cancel()  # the answer is here: no ping after it
        if streaming is not None:
            # The event stream is under way: the answer's body becomes its message event.
            if message["type"] == "http.response.body":
                streaming.extend(message.get("body", b""))
            return
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

    try:
        await app(scope, receive, send)
    finally:
        if pinger is not None:
            pinger.cancel()
    if handler._finished or disconnected.is_set():
        return
    if streaming is not None:
        # As the SDK's stream ends: the answer as one ``message`` event (the JSON as the SDK
        # wrote it, compact, one line).
        handler.write(b"event: message\r\ndata: " + bytes(streaming) + b"\r\n\r\n")
        content_type = "text/event-stream"
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


def asgi_scope(
    handler: web.RequestHandler,
    headers: list[tuple[bytes, bytes]],
    user: Any = None,
    facts: RequestFacts | None = None,
) -> dict[str, Any]:
    """The ASGI ``http`` scope of the handler's request (``headers`` as given to the app), with
    the request's ``facts`` under :data:`~jupyter_mcp.surfaces.mcp.REQUEST_FACTS`."""
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
    if facts is not None:
        scope[REQUEST_FACTS] = facts
    return scope


def write_response(handler: web.RequestHandler, response: Any) -> None:
    """Finish the request with a Starlette ``Response`` that has its whole body (the SDK's
    JSON answers), as :func:`serve_asgi` would write it."""
    handler.set_status(response.status_code)
    handler.clear_header("Content-Type")
    for raw_name, raw_value in response.raw_headers:
        name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
        if name.lower() in _SKIPPED_HEADERS:
            continue
        handler.set_header(name, value)
    try:
        handler.finish(response.body)
    except StreamClosedError:
        pass  # the client left: nobody to answer


def _left_if_failed(disconnected: asyncio.Event) -> Callable[[Any], None]:
    """A done-callback for a write's future: a failed write means the client left."""

    def done(future: Any) -> None:
        if future.cancelled() or future.exception() is not None:
            disconnected.set()

    return done


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
    # Stops the 2026-07-28 call this POST answers as JSON if its client leaves (see _serve).
    _stop: Callable[[], None] | None = None
    _identity: OAuthIdentity | None = None

    @property
    def identity_provider(self) -> Any:
        """Jupyter's, with the server's OAuth access tokens checked first (when OAuth is on)."""
        if self._identity is not None:  # asked several times per request: made once
            return self._identity
        oauth = self.ctx.services.oauth
        inner = super().identity_provider
        if oauth is None:
            return inner
        # Given the handler per call rather than holding this one's bound method: that made a
        # cycle (handler -> identity -> handler) that kept every request's handler, its request
        # and connection until a garbage collection.
        self._identity = OAuthIdentity(inner, oauth, functools.partial(site_of, oauth=oauth))
        return self._identity

    @property
    def authorizer(self) -> Any:
        """Jupyter's, letting an OAuth principal use this endpoint (and nothing else)."""
        inner = super().authorizer
        return inner if self.ctx.services.oauth is None else OAuthAuthorizer(inner)

    def check_xsrf_cookie(self) -> None:
        """No XSRF check for an OAuth request (a bearer token, never a cookie), as for Jupyter's
        own token requests; said here because JupyterHub replaces Jupyter's check with one
        that knows only the hub's tokens."""
        if principal_of(self) is None:
            super().check_xsrf_cookie()

    def _site(self, handler: Any) -> Site:
        oauth = self.ctx.services.oauth
        assert oauth is not None
        return site_of(handler, oauth)

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        """As every tool route, except that a request without credentials gets the OAuth
        challenge (401) rather than a bare 403."""
        try:
            await super().prepare(*args, **kwargs)
        except web.HTTPError as e:
            challenge = self._oauth_challenge(e)
            if challenge is None:
                raise
            raise challenge from None

    def _oauth_challenge(self, refusal: web.HTTPError) -> web.HTTPError | None:
        """The 401 to answer instead of ``refusal``: when OAuth is on here and the request
        brought no credential, or an OAuth token that is refused. None keeps ``refusal``
        (a wrong Jupyter token, a foreign Host or Origin)."""
        oauth = self.ctx.services.oauth
        if oauth is None or refusal.status_code != 403 or principal_of(self) is not None:
            return None
        if getattr(self, "_jupyter_current_user", None) is not None or not self.check_host():
            return None
        authorization = self.request.headers.get("Authorization", "")
        if authorization and not authorization.lower().startswith("bearer "):
            return None
        if self.get_query_argument("token", None) is not None:
            return None
        try:
            site = self._site(self)
        except OAuthUnavailable:
            return None
        metadata = f'resource_metadata="{site.resource_metadata_url}"'
        if authorization:
            reason = getattr(self, "oauth_refusal", None) or (
                "The bearer token is not one this server accepts"
                if oauth_bearer(self.request.headers) is None
                else "The access token is not valid"
            )
            quoted = reason.replace("\\", "").replace('"', "'")  # a quoted-string of RFC 9110
            self._www_authenticate = (
                f'Bearer error="invalid_token", error_description="{quoted}", {metadata}'
            )
            return web.HTTPError(401, "Unauthorized: %s", reason)
        self._www_authenticate = f'Bearer {metadata}, scope="{BASE}"'
        return web.HTTPError(401, "%s", not_authenticated_reason(oauth=True))

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
        if self._stop is not None:
            self._stop()

    async def _serve(self) -> None:
        # A bad choice is refused here, as an HTTP 400 with a JSON-RPC error, before any
        # session starts; the SDK's handlers read the choice from the request's facts.
        toolsets = self.toolsets
        self._disconnected = asyncio.Event()
        # Origin was checked in prepare() against the server's own origin and the configured
        # ones; Accept is given below. (Tornado keeps header names in one spelling.)
        headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in self.request.headers.get_all()
            if name not in _NOT_PASSED
        ]
        json_only = False
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
        # As the SDK reads it (the first such header), for its handlers.
        given = next((v for k, v in headers if k == b"mcp-session-id"), None)
        facts = RequestFacts(
            session_id=None if given is None else given.decode("latin-1"), toolsets=toolsets
        )
        inline = False
        modern_inline = False
        version = self.request.headers.get("MCP-Protocol-Version")
        if self.request.method == "POST" and version in MODERN_PROTOCOL_VERSIONS:
            # The SDK serves this one as 2026-07-28 (whatever session id it carries).
            modern_inline = surface.answers_modern_inline(_parsed(self.request.body), version)
            if modern_inline:
                app = functools.partial(surface.handle, json_answer=True)
        elif self.request.method == "POST" and session_id is not None:
            message = _parsed(self.request.body)
            if surface.answers_as_json(message, session_id):
                # A request in a legacy session that streams nothing: one JSON body.
                # (2026-07-28 requests have no session; the SDK answers those that stream
                # nothing as JSON itself, and watches their connection to cancel them.)
                app = functools.partial(surface.handle, json_answer=True)
                inline = eligible_message(message)
            if isinstance(message, dict) and message.get("method") in STOPPED_WHEN_LEFT:
                # The SDK does not stop a legacy call whose client left: on_connection_close
                # does (a callback, not a task per call watching the connection).
                self._call = (surface, session_id, message.get("id"), owner)
        try:
            if inline:
                assert session_id is not None
                scope = asgi_scope(self, headers, owner, facts)
                body = self.request.body or b""
                answer = await surface.answer_inline(session_id, scope, message, body)
                if answer is not None:
                    if not (self._finished or self._disconnected.is_set()):
                        write_response(self, answer)
                    return
            # A 2026-07-28 call answered in this task: nothing of the SDK watches the
            # connection, so the call stops here when its client leaves (on_connection_close),
            # as the SDK's own watcher stops it on its event stream, and it is pinged as the
            # SDK's stream pings a silent call.
            stop = anyio.CancelScope() if modern_inline else contextlib.nullcontext()
            if isinstance(stop, anyio.CancelScope):
                self._stop = stop.cancel
            with stop:
                await serve_asgi(
                    self,
                    app,
                    headers=headers,
                    disconnected=self._disconnected,
                    json_only=json_only,
                    user=owner,
                    keepalive=modern_ping_interval() if modern_inline else None,
                    facts=facts,
                )
        finally:
            self._call = None
            self._stop = None

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
    for its user; an OAuth token for its grant. None when the server runs without auth.
    """
    principal = principal_of(handler)
    if principal is not None:
        return principal  # one per OAuth grant
    provider = getattr(handler, "identity_provider", None)
    user = getattr(handler, "current_user", None)
    if provider is None or not getattr(provider, "auth_enabled", False) or user is None:
        return None
    if getattr(handler, "token_authenticated", False):
        return _principal("jupyter-token")
    return _principal("user:" + (getattr(user, "username", None) or str(user)))


def principal_id(handler: web.RequestHandler) -> str | None:
    """The principal of a request as the tasks and runs it starts keep it (the ``client_id``
    of :func:`session_owner`): one name for a caller over MCP and over the REST routes."""
    return user_principal(session_owner(handler))


@functools.lru_cache(maxsize=1024)
def _principal(client_id: str) -> Any:
    """The SDK's user for ``client_id``, made once (it is only compared, never changed)."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="jupyter", client_id=client_id, scopes=[]))
