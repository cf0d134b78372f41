"""HTTP surfaces of the tool registry: seed REST (``/mcp/...``) and proxy REST (``/api/mcp/...``).

Both answer ``{"status": <value>, "error": null}`` or ``{"status": null, "error": "<message>"}``
with HTTP 200 for anything a tool or its arguments got wrong; proxy REST always sends
``status`` as a string because JetBrains-style proxies copy it into a text block. Auth is
Jupyter's; on top of it every route refuses a browser ``Origin`` that is not allowed, since
token-authenticated requests skip jupyter_server's own origin check and these routes run code.
"""

from __future__ import annotations

import json
import os
import re
import time
from abc import abstractmethod
from typing import Any
from urllib.parse import urlparse

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from tornado import web

from .. import __version__
from ..core.errors import ToolError
from ..core.registry import CallResult, result_text

AUTH_RESOURCE = "mcp"
TOOL_NAME = r"(?P<tool>[A-Za-z0-9_\-]{1,128})"


class MCPBaseHandler(ExtensionHandlerMixin, APIHandler):
    """Common ground: origin validation, body parsing, the tool context."""

    auth_resource = AUTH_RESOURCE

    async def prepare(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Refuse disallowed browser origins before anything else happens."""
        await super().prepare(*args, **kwargs)
        if not origin_allowed(self):
            raise web.HTTPError(403, "Origin not allowed: %s", self.request.headers.get("Origin"))

    @property
    def ctx(self):  # type: ignore[no-untyped-def]
        return self.extensionapp.tool_context

    @property
    def registry(self):  # type: ignore[no-untyped-def]
        return self.extensionapp.registry

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
        """Errors of the HTTP layer (auth, origin) keep the seed shape, for scripts."""
        reason = self._reason
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, web.HTTPError) and exc.log_message:
            reason = exc.log_message % exc.args if exc.args else exc.log_message
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps({"status": None, "error": reason}))


def origin_allowed(handler: APIHandler) -> bool:
    """True without an ``Origin`` header, or when it is the server's own or an allowed one."""
    origin = handler.request.headers.get("Origin")
    if origin is None:
        return True
    parsed = urlparse(origin)
    if parsed.scheme in ("http", "https") and parsed.netloc == handler.request.host:
        return True
    app = handler.extensionapp
    if origin in app.allowed_origins:
        return True
    allow_origin = handler.settings.get("allow_origin", "")
    if allow_origin == "*" or (allow_origin and origin == allow_origin):
        return True
    pattern = handler.settings.get("allow_origin_pat")
    return bool(pattern and re.match(pattern, origin))


def environment(handler: MCPBaseHandler) -> dict[str, Any]:
    """What the seed ``initialize``/``status`` answers tell about the workspace."""
    ctx = handler.ctx
    editor = ctx.services.get("editor_state")
    active = editor() if callable(editor) else {}
    return {
        "workspaceRoot": str(ctx.root_dir),
        "activeFile": active.get("activeFile", ""),
        "currentDirectory": os.getcwd(),
        "openFiles": active.get("openFiles", []),
    }


class SeedInfoHandler(MCPBaseHandler):
    """GET or POST answering ``{"jsonrpc": "2.0", "id": 0, "result": ...}`` (the seed REST form)."""

    @abstractmethod
    def result(self) -> dict[str, Any]:
        """The ``result`` member of the answer."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.send_json({"jsonrpc": "2.0", "id": 0, "result": self.result()})

    post = get


class InitializeHandler(SeedInfoHandler):
    """``/mcp/initialize``: server information."""

    def result(self) -> dict[str, Any]:
        return {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {"listChanged": True}, "resources": {}},
            "serverInfo": {"name": "jupyter-mcp", "version": __version__},
            "environment": environment(self),
        }


class StatusHandler(SeedInfoHandler):
    """``/mcp/status``: running state and workspace."""

    def result(self) -> dict[str, Any]:
        result: dict[str, Any] = {"status": "running", "environment": environment(self)}
        extra = self.ctx.services.get("status_extra")
        if callable(extra):
            result.update(extra())
        return result


class ListToolsHandler(MCPBaseHandler):
    """``list_tools``: a bare JSON array, byte-stable while nothing changes."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.send_json(self.registry.listing(self.ctx))


class ToolHandler(MCPBaseHandler):
    """``POST /mcp/{tool}``: one call, arguments plain or in a JSON-RPC wrapper."""

    stringify_status = False

    @web.authenticated
    @authorized("execute")  # tools run commands and kernels: more than a write
    async def post(self, tool: str) -> None:
        started = time.perf_counter()
        try:
            arguments = parse_arguments(self.request.body, self.ctx.settings.max_body_bytes)
            result = await self.registry.call(tool, arguments, self.ctx)
        except ToolError as e:
            self.log.info("jupyter_mcp: %s failed: %s", tool, e)
            self.send_json({"status": None, "error": str(e)})
            return
        self.log.debug("jupyter_mcp: %s took %.1f ms", tool, (time.perf_counter() - started) * 1e3)
        self.send_json({"status": self._status(result), "error": None})

    def _status(self, result: CallResult) -> Any:
        if result.window is not None or self.stringify_status:
            return result.text if result.window is not None else result_text(result.value)
        return result.value


class ProxyToolHandler(ToolHandler):
    """``POST /api/mcp/{tool}``: as the seed route, ``status`` always a string."""

    stringify_status = True


def parse_arguments(body: bytes, limit: int) -> Any:
    """The call's arguments from a request body: ``{}``, a plain object or a JSON-RPC wrapper."""
    if len(body) > limit:
        raise ToolError(f"Request body is {len(body)} bytes, over the server's limit of {limit}")
    if not body.strip():
        return {}
    try:
        data = json.loads(body)
    except UnicodeDecodeError as e:
        raise ToolError("Request body is not UTF-8 JSON") from e
    except json.JSONDecodeError as e:
        raise ToolError(f"Malformed JSON in request body: {e}") from e
    except RecursionError as e:
        # The C decoder gives up on deep nesting (a few thousand levels) with RecursionError.
        raise ToolError("JSON in request body is nested too deeply to decode") from e
    if not isinstance(data, dict):
        raise ToolError("Request body must be a JSON object of arguments")
    if "jsonrpc" in data and "params" in data:
        params = data["params"]
        if not isinstance(params, dict):
            raise ToolError("JSON-RPC params must be an object")
        return params.get("arguments", {})
    return data


def default_handlers() -> list[tuple[str, type[Any]]]:
    """Routes of the seed and proxy REST surfaces (the extension app adds ``base_url``)."""
    from .asgi import StreamableHTTPHandler
    from .lab_socket import EditorBridgeHandler

    return [
        # Standard MCP (Streamable HTTP) at exactly {base_url}mcp.
        (r"/mcp", StreamableHTTPHandler),
        # Before the tool route, which would otherwise take "bridge" for a tool name.
        (r"/mcp/bridge", EditorBridgeHandler),
        (r"/mcp/initialize", InitializeHandler),
        (r"/mcp/status", StatusHandler),
        (r"/mcp/list_tools", ListToolsHandler),
        (rf"/mcp/{TOOL_NAME}", ToolHandler),
        (r"/api/mcp/list_tools", ListToolsHandler),
        (rf"/api/mcp/{TOOL_NAME}", ProxyToolHandler),
    ]
