"""Legacy-session tool calls answered as one JSON body, run in the POST that carries them.

The SDK serves every request of a legacy (initialize-era) session the same way: the session
manager finds the session's transport, which checks the request and hands the message to the
session's dispatcher over a memory stream; the dispatcher's read loop starts a task for it in the
session's task group, and the answer travels back over a second stream and the transport's
router to the waiting POST, which the transport answers. For a call whose answer is one JSON
body and that streams nothing (no progress token, no log level asked for:
:meth:`MCPSurface.answers_as_json`), that machinery carries nothing but the request and its
answer, and costs more of the server's CPU than the rest of the call's protocol handling.

:class:`InlineCalls` answers such a call in the POST's own task. What the SDK decides about the
request it still decides, with its own code: the session and its owner (the manager's tables),
Host, Origin and Content-Type (the transport's checks), the message (the SDK's JSON-RPC
validation), the call itself (the SDK's server kernel, ``ServerRunner``: middleware, params
validation, the handler, the result's serialization) and the answer's wire form (the
transport's JSON response). What it would do between those steps is done here as its dispatcher
does it: the call is registered in the dispatcher's in-flight table, so
``notifications/cancelled`` stops it as any other; errors are shaped by the dispatcher's own
ladder; a cancelled call is answered ``Request cancelled`` as the transport answers it; the
session's end stops it (the dispatcher's own tasks are stopped by its task group) and its POST
gets the transport's answer for a session ended under a request; the request counts as in
flight for the session's idle timeout, as the transport counts it. Anything the checks here do
not pass goes the SDK's way, which answers it as before.

It reaches into SDK internals (the manager's session tables, the transport's checks and
response builders, the dispatcher's in-flight table and context class): :func:`supported` and
:meth:`InlineCalls.attach` check they are there, and without them every request goes the SDK's
way.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

import anyio
from pydantic import ValidationError

log = logging.getLogger(__name__)
# Where the SDK's dispatcher logs a handler that raised: the same record, in the same place.
_dispatcher_log = logging.getLogger("mcp.shared.jsonrpc_dispatcher")

#: Methods answered inline: the costly one that streams nothing when answered as JSON.
INLINE_METHODS = frozenset({"tools/call"})

#: The transport's answers to a call it could not answer (see ``streamable_http``).
_CANCELLED_CODE = -32800  # REQUEST_CANCELLED: a cancelled request of this era
_ENDED_MESSAGE = "Session terminated before the request completed"

try:  # the SDK internals this needs; without them nothing runs inline
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
    from mcp.server.runner import ServerRunner
    from mcp.shared.dispatcher import coerce_request_id
    from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
    from mcp.shared.jsonrpc_dispatcher import (
        JSONRPCDispatcher,
        _InFlight,
        _JSONRPCDispatchContext,
        handler_exception_to_error_data,
        progress_token_from_params,
    )
    from mcp_types import (
        INTERNAL_ERROR,
        ErrorData,
        JSONRPCError,
        JSONRPCRequest,
        JSONRPCResponse,
        jsonrpc_message_adapter,
    )
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
    from starlette.requests import Request

    _IMPORTED = True
except ImportError:  # pragma: no cover - another SDK layout
    _IMPORTED = False

#: What must be there on the SDK's objects (checked once per session, see ``attach``).
_DISPATCHER_ATTRIBUTES = ("_in_flight", "_transport_builder", "_running", "_closed")
_TRANSPORT_ATTRIBUTES = (
    "_security",
    "_event_store",
    "_check_content_type",
    "_message_metadata",
    "_create_json_response",
    "_create_error_response",
    "_requests_in_flight",
    "_idle_timeout",
    "idle_scope",
    "is_terminated",
    "mcp_session_id",
)
_MANAGER_ATTRIBUTES = ("_server_instances", "_session_owners", "max_request_body_size")


def supported() -> bool:
    """Whether this SDK has the pieces calls run inline with (else all go the SDK's way)."""
    return _IMPORTED


class InlineCalls:
    """Answers the eligible calls of one legacy session in the POST that carries them."""

    def __init__(
        self, manager: Any, transport: Any, dispatcher: Any, connection: Any, server: Any
    ) -> None:
        self._manager = manager
        self._transport = transport
        self._dispatcher = dispatcher
        self._connection = connection
        self._runner = ServerRunner(server, connection, getattr(manager, "_lifespan_state", None))
        # The calls running inline, stopped when the session ends.
        self._running: set[anyio.CancelScope] = set()

    @classmethod
    def attach(
        cls, manager: Any, session_id: str, session: Any, server: Any, forget: Callable[[], Any]
    ) -> InlineCalls | None:
        """The inline calls of legacy session ``session_id``, or None when this SDK's objects are
        not laid out as expected (then its calls go the SDK's way).

        ``session`` is the SDK's :class:`ServerSession` of one of its requests (its dispatcher
        and connection are read off it); ``forget`` is called once the session ended.
        """
        if not supported() or not all(hasattr(manager, a) for a in _MANAGER_ATTRIBUTES):
            return None
        transport = manager._server_instances.get(session_id)
        connection = getattr(session, "_connection", None)
        dispatcher = getattr(getattr(session, "_request_outbound", None), "_dispatcher", None)
        if (
            transport is None
            or not isinstance(dispatcher, JSONRPCDispatcher)
            or connection is None
            or getattr(connection, "exit_stack", None) is None
            or not all(hasattr(dispatcher, a) for a in _DISPATCHER_ATTRIBUTES)
            or not all(hasattr(transport, a) for a in _TRANSPORT_ATTRIBUTES)
            or transport.mcp_session_id != session_id
            or transport._event_store is not None  # a stored stream to replay: the SDK's way
        ):
            return None
        inline = cls(manager, transport, dispatcher, connection, server)

        def ended() -> None:
            # As the dispatcher's task group stops its tasks when the session's loop ends.
            for scope in list(inline._running):
                scope.cancel()
            forget()

        connection.exit_stack.callback(ended)
        return inline

    async def answer(self, scope: dict[str, Any], message: Any, body: bytes) -> Any:
        """The SDK's response (a Starlette ``Response``) to the POST of ``scope``, whose body
        ``body`` parsed as ``message``; None when it is not one to answer here."""
        transport, manager = self._transport, self._manager
        session_id = transport.mcp_session_id
        if (
            transport.is_terminated
            or manager._server_instances.get(session_id) is not transport
            or (transport.idle_scope is not None and transport.idle_scope.cancel_called)
            or len(body) > manager.max_request_body_size
            or not self._dispatcher._running
            or self._dispatcher._closed
            # Before the handshake the dispatcher may still be running ``initialize``.
            or not self._connection.initialize_accepted
        ):
            return None
        user = scope.get("user")
        requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
        if requestor != manager._session_owners.get(session_id):
            return None
        request = Request(scope)
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None  # the manager serves it as 2026-07-28
        refused = await transport._security.validate_request(request, is_post=True)
        if refused is not None or not transport._check_content_type(request):
            return None
        try:
            parsed = jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValidationError:
            return None
        if (
            not isinstance(parsed, JSONRPCRequest)
            or parsed.method not in INLINE_METHODS
            or progress_token_from_params(parsed.params) is not None
        ):
            return None
        # Counted in flight as the transport counts a request: the idle countdown waits.
        timeout = transport._idle_timeout
        idle = transport.idle_scope if timeout is not None else None
        if idle is not None:
            transport._requests_in_flight += 1
            idle.deadline = math.inf
        try:
            return await self._call(parsed, request)
        finally:
            if idle is not None:
                transport._requests_in_flight -= 1
                if not transport._requests_in_flight:
                    idle.deadline = anyio.current_time() + timeout

    async def _call(self, request: Any, http_request: Any) -> Any:
        """What the dispatcher does for a request (``_dispatch_request``, ``_handle_request``),
        its answer handed back rather than written to the transport's router."""
        dispatcher, transport = self._dispatcher, self._transport
        metadata = transport._message_metadata(http_request)
        dctx = _JSONRPCDispatchContext(
            transport=dispatcher._transport_builder(metadata),
            _dispatcher=dispatcher,
            _request_id=request.id,
            message_metadata=metadata,
            _progress_token=None,
        )
        scope = anyio.CancelScope()
        key = coerce_request_id(request.id)
        # Registered before any await, as the read loop does: a cancel sent right after the
        # call finds it.
        dispatcher._in_flight[key] = _InFlight(scope=scope, dctx=dctx)
        self._running.add(scope)
        answer: Any = None
        try:
            with scope:
                try:
                    result = await self._runner.on_request(dctx, request.method, request.params)
                except Exception as e:  # the dispatcher's ladder (``_handle_request``)
                    error = handler_exception_to_error_data(e)
                    if error is None:
                        _dispatcher_log.exception("handler for %r raised", request.method)
                        error = ErrorData(code=0, message=str(e))
                    answer = JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
                else:
                    answer = JSONRPCResponse(jsonrpc="2.0", id=request.id, result=result)
                finally:
                    dctx.close()
                    entry = dispatcher._in_flight.get(key)
                    if entry is not None and entry.dctx is dctx:
                        del dispatcher._in_flight[key]
        finally:
            self._running.discard(scope)
        if transport.is_terminated or (answer is None and not dctx.cancel_requested.is_set()):
            # The session ended under the call (its end stopped it, or it ended meanwhile).
            return transport._create_error_response(_ENDED_MESSAGE, 500, INTERNAL_ERROR)
        if dctx.cancel_requested.is_set():
            # A cancelled request is never answered by the dispatcher; this era's transport
            # ends its POST with this error instead.
            error = ErrorData(code=_CANCELLED_CODE, message="Request cancelled")
            answer = JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        return transport._create_json_response(answer)


def eligible_message(message: Any) -> bool:
    """Whether a POST's parsed body may be a call :class:`InlineCalls` answers (the session
    and the SDK's checks decide the rest)."""
    return isinstance(message, dict) and message.get("method") in INLINE_METHODS
