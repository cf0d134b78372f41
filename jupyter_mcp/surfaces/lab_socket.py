"""The WebSocket at ``{base_url}mcp/bridge`` that each JupyterLab window keeps open.

Thin: authentication, authorization and the origin check happen here, as jupyter_server does
them for kernel websockets; everything else is :class:`~jupyter_mcp.lab.editor.EditorBridge`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from ..lab.editor import EditorBridge
from .base import AUTH_RESOURCE, MCPAppMixin, origin_allowed

_WINDOW_ID = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


class LabSocketHandler(MCPAppMixin, WebSocketMixin, WebSocketHandler, JupyterHandler):
    """One JupyterLab window's link: state reports in, requests out."""

    auth_resource = AUTH_RESOURCE

    window_id: str | None = None

    @property
    def bridge(self) -> EditorBridge:
        bridge = self.ctx.services.editor
        if bridge is None:  # the app always makes one; a bare app would have none to link to
            raise web.HTTPError(503, "This server has no JupyterLab editor link")
        return bridge

    def set_default_headers(self) -> None:
        """No CSP/cache headers on a websocket upgrade (as jupyter_server's kernel socket)."""

    def check_origin(self, origin: str | None = None) -> bool:
        """The same origin rule as every tool route, applied even to token requests."""
        return origin_allowed(self, self.mcp_app.allowed_origins)

    async def pre_get(self) -> None:
        """Authorize the user: a window answers tool calls, so it needs ``execute`` on mcp."""
        user = self.current_user
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, user, "execute", AUTH_RESOURCE)
        )
        if not allowed:
            raise web.HTTPError(403)
        window = self.get_argument("window", "")
        if not _WINDOW_ID.match(window):
            raise web.HTTPError(400, "Query argument 'window' must be an id of 1-64 letters")
        self.window_id = window

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Upgrade to a websocket after authorizing."""
        await self.pre_get()
        result = super().get(*args, **kwargs)
        if result is not None:
            await result

    def open(self, *args: Any, **kwargs: Any) -> None:
        """Register the window with the EditorBridge."""
        super().open(*args, **kwargs)
        # Requests are small and awaited one by one: without this, Nagle's algorithm and the
        # peer's delayed ACK add ~40 ms to every round trip.
        self.set_nodelay(True)
        try:
            focus_age: float | None = float(self.get_argument("focusAge", ""))
        except ValueError:
            focus_age = None
        assert self.window_id is not None
        self.bridge.connect(self.window_id, self.send, focus_age=focus_age)

    def send(self, message: dict[str, Any]) -> None:
        """Write one message; a closed socket just drops it (the window is leaving)."""
        try:
            self.write_message(json.dumps(message, ensure_ascii=False))
        except WebSocketClosedError:
            self.log.debug("jupyter_mcp: JupyterLab window %s is gone", self.window_id)

    def on_message(self, message: str | bytes) -> None:
        """A state report or an answer from the window."""
        try:
            data = json.loads(message)
        except (ValueError, UnicodeDecodeError):
            self.log.warning("jupyter_mcp: malformed lab socket message from %s", self.window_id)
            return
        if self.window_id is not None:
            self.bridge.receive(self.window_id, data)

    def on_close(self) -> None:
        """Forget the window and fail what it still had to answer."""
        if self.window_id is not None:
            self.bridge.disconnect(self.window_id, self.send)
