"""HTTP surfaces of the tool registry: seed REST (``/mcp/...``) and proxy REST (``/api/mcp/...``).

Both answer ``{"status": <value>, "error": null}`` or ``{"status": null, "error": "<message>"}``
with HTTP 200 for anything a tool or its arguments got wrong; proxy REST always sends
``status`` as a string because JetBrains-style proxies copy it into a text block. Auth, the
origin check and HTTP-level errors are :class:`~jupyter_mcp.surfaces.base.MCPBaseHandler`'s;
the routes are in :mod:`jupyter_mcp.surfaces.routes`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from ..core.context import current_principal
from ..core.errors import ToolError
from ..core.registry import CallResult, result_text
from ..core.version import __version__
from .asgi import principal_id
from .base import MCPBaseHandler


def environment(handler: MCPBaseHandler) -> dict[str, Any]:
    """What the seed ``initialize``/``status`` answers tell about the workspace."""
    ctx = handler.ctx
    editor = ctx.services.editor
    active = editor.state() if editor is not None else {}
    return {
        "workspaceRoot": str(ctx.root_dir),
        "activeFile": active.get("activeFile", ""),
        "currentDirectory": os.getcwd(),
        "openFiles": active.get("openFiles", []),
    }


def seed_answer(result: dict[str, Any]) -> dict[str, Any]:
    """The seed REST form of an information route: ``{"jsonrpc", "id": 0, "result"}``."""
    return {"jsonrpc": "2.0", "id": 0, "result": result}


class InitializeHandler(MCPBaseHandler):
    """``GET`` or ``POST /mcp/initialize``: server information."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.send_json(
            seed_answer(
                {
                    "protocolVersion": "2024-11-05",
                    "capabilities": {"tools": {"listChanged": True}, "resources": {}},
                    "serverInfo": {"name": "jupyter-mcp", "version": __version__},
                    "environment": environment(self),
                }
            )
        )

    post = get


class StatusHandler(MCPBaseHandler):
    """``GET`` or ``POST /mcp/status``: running state and workspace."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        result: dict[str, Any] = {"status": "running", "environment": environment(self)}
        seed_port = self.ctx.services.seed_port
        if seed_port is not None:
            result.update(seed_port.status())
        self.send_json(seed_answer(result))

    post = get


class ListToolsHandler(MCPBaseHandler):
    """``list_tools``: a bare JSON array, byte-stable while nothing changes."""

    @web.authenticated
    @authorized
    def get(self) -> None:
        self.send_json(self.registry.listing(self.ctx, self.toolsets))


class ToolHandler(MCPBaseHandler):
    """``POST /mcp/{tool}``: one call, arguments plain or in a JSON-RPC wrapper."""

    stringify_status = False
    _call: asyncio.Future[CallResult] | None = None

    def on_connection_close(self) -> None:
        """The client went away: stop its call (a command it started ends with it)."""
        if self._call is not None:
            self._call.cancel()

    @web.authenticated
    @authorized("execute")  # tools run commands and kernels: more than a write
    async def post(self, tool: str) -> None:
        started = time.perf_counter()
        toolsets = self.toolsets  # a bad choice is an HTTP 400, not a tool's answer
        try:
            arguments = parse_arguments(self.request.body, self.ctx.settings.max_body_bytes)
            # The call's context is copied when its future is made: the runs it starts are
            # this principal's, as over MCP (get_execution finds them for it alone).
            principal = current_principal.set(principal_id(self))
            try:
                self._call = asyncio.ensure_future(
                    self.registry.call(tool, arguments, self.ctx, toolsets=toolsets)
                )
            finally:
                current_principal.reset(principal)
            result = await self._call
        except asyncio.CancelledError:
            if self._call is not None and self._call.cancelled():
                self.log.info("jupyter_mcp: %s stopped: the client went away", tool)
                return  # nobody left to answer
            raise
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
