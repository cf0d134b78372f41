"""What every HTTP surface shares: Jupyter auth on the ``mcp`` resource, the origin check, JSON.

Auth is Jupyter's; on top of it every route refuses a browser ``Origin`` that is not allowed,
since token-authenticated requests skip jupyter_server's own origin check and these routes run
code. Refusals of the HTTP layer (auth, origin, a bad ``toolsets`` choice) are answered as JSON
in the shape of the surface they hit: :meth:`MCPBaseHandler.error_payload`.

A connection chooses its tool sets with the ``toolsets`` query parameter (``?toolsets=files,git``)
or the ``X-MCP-Toolsets`` header (both given: a tool must be in both), read the same way for
every surface by :func:`~jupyter_mcp.core.registry.request_toolsets`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlparse

from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from ..core.errors import ToolError
from ..core.registry import TOOLSETS_HEADER, request_toolsets

if TYPE_CHECKING:
    from ..app import JupyterMCP
    from ..core.context import ToolContext
    from ..core.registry import Registry

#: The Jupyter authorization resource of every route: ``mcp`` (``execute`` to call tools).
AUTH_RESOURCE = "mcp"


class MCPAppMixin(ExtensionHandlerMixin):
    """What every handler of the extension is given by the route table (``initialize``
    keyword arguments, the jupyter_server way): the tool context and the registry."""

    ctx: ToolContext
    registry: Registry

    def initialize(
        self, name: str, *args: Any, ctx: ToolContext, registry: Registry, **kwargs: Any
    ) -> None:
        self.ctx = ctx
        self.registry = registry
        super().initialize(name, *args, **kwargs)

    @property
    def mcp_app(self) -> JupyterMCP:
        """The extension app these routes belong to."""
        return cast("JupyterMCP", self.extensionapp)


class MCPBaseHandler(MCPAppMixin, APIHandler):
    """Common ground: origin validation, JSON answers and errors, the tool context."""

    auth_resource = AUTH_RESOURCE

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        """Refuse disallowed browser origins before anything else happens."""
        await super().prepare(*args, **kwargs)
        if not origin_allowed(self, self.mcp_app.allowed_origins):
            raise web.HTTPError(403, "Origin not allowed: %s", self.request.headers.get("Origin"))

    @property
    def toolsets(self) -> frozenset[str] | None:
        """The tool sets this request chose (None: all the server serves); a bad choice is a
        400 answer. Read by the route methods, so only after authentication."""
        try:
            return request_toolsets(
                self.get_query_argument("toolsets", None), self.request.headers.get(TOOLSETS_HEADER)
            )
        except ToolError as e:
            raise web.HTTPError(400, "%s", str(e)) from e

    def send_json(self, payload: Any, status: int = 200) -> None:
        """Finish with a JSON body (UTF-8, no ASCII escaping)."""
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        text = json.dumps(payload, ensure_ascii=False)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            # Lone surrogates (a JSON "\udcff" sent back in an error, a file name that is not
            # UTF-8) cannot be UTF-8 encoded: send them as JSON escapes instead of failing.
            data = json.dumps(payload).encode("ascii")
        self.finish(data)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """An HTTP-level refusal (auth, origin) as JSON: the reason in the surface's own shape."""
        reason = self._reason
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, web.HTTPError) and exc.log_message:
            reason = exc.log_message % exc.args if exc.args else exc.log_message
        elif status_code == 403:
            # Jupyter refuses a request that no credential authenticates with a bare 403:
            # say what the server wants (under JupyterHub, which token).
            reason = not_authenticated_reason()
        challenge = getattr(self, "_www_authenticate", None)
        if status_code == 401 and challenge:
            self.set_header("WWW-Authenticate", challenge)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(self.error_payload(reason)))

    def error_payload(self, reason: str) -> dict[str, Any]:
        """The body of an HTTP-level error: the seed shape, which scripts read."""
        return {"status": None, "error": reason}


def not_authenticated_reason(env: Mapping[str, str] | None = None, *, oauth: bool = False) -> str:
    """Why a request without an accepted credential is refused, and what to send instead
    (``oauth``: the answer is the OAuth challenge of the MCP endpoint)."""
    env = os.environ if env is None else env
    if oauth:
        reason = (
            "Unauthorized: no credential; sign in with OAuth (this server is its own "
            "authorization server: the WWW-Authenticate header says where), or send "
            "'Authorization: token <token>'"
        )
    else:
        reason = "Forbidden: no credential this server accepts; send 'Authorization: token <token>'"
    user = env.get("JUPYTERHUB_USER")
    if user and env.get("JUPYTERHUB_SERVICE_PREFIX"):
        # Inside a JupyterHub single-user server: only a hub token of its user gets in.
        reason += (
            f" with a JupyterHub token of {user}'s (scope access:servers!user={user}, "
            "from the hub's Token page)"
        )
    return reason


def origin_allowed(handler: web.RequestHandler, allowed_origins: Iterable[str]) -> bool:
    """True without an ``Origin`` header, or when it is the server's own or an allowed one
    (``allowed_origins``, then the server's ``allow_origin`` and ``allow_origin_pat``)."""
    origin = handler.request.headers.get("Origin")
    if origin is None:
        return True
    parsed = urlparse(origin)
    if parsed.scheme in ("http", "https") and parsed.netloc == handler.request.host:
        return True
    if origin in allowed_origins:
        return True
    allow_origin = handler.settings.get("allow_origin", "")
    if allow_origin == "*" or (allow_origin and origin == allow_origin):
        return True
    pattern = handler.settings.get("allow_origin_pat")
    return bool(pattern and re.match(pattern, origin))
