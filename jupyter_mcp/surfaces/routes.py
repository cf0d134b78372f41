"""The route table: every URL the extension serves, under the server's ``base_url``.

The only list of routes in the package. The extension app registers it in
``initialize_handlers``; the seed port listener serves the same web application, so it answers
these very routes too.
"""

from __future__ import annotations

from typing import Any

from ..auth.handlers import oauth_handlers
from ..core.context import ToolContext
from ..core.registry import Registry
from .asgi import StreamableHTTPHandler
from .lab_socket import LabSocketHandler
from .rest import InitializeHandler, ListToolsHandler, ProxyToolHandler, StatusHandler, ToolHandler

TOOL_NAME = r"(?P<tool>[A-Za-z0-9_\-]{1,128})"


def default_handlers(
    ctx: ToolContext, registry: Registry
) -> list[tuple[str, type[Any], dict[str, Any]]]:
    """Routes of standard MCP, the JupyterLab socket, the seed and proxy REST surfaces and
    (unless ``c.JupyterMCP.oauth = False``) the OAuth authorization server.

    Each handler is given its collaborators as ``initialize`` keyword arguments: the tool
    context (whose services hold the MCP surface and the editor link) and the registry.
    """
    shared: dict[str, Any] = {"ctx": ctx, "registry": registry}
    oauth = ctx.services.oauth
    # The OAuth authorization server's routes, when it is on (auth/handlers.py).
    routes = [] if oauth is None else oauth_handlers(oauth)
    return routes + [
        # Standard MCP (Streamable HTTP) at exactly {base_url}mcp.
        (r"/mcp", StreamableHTTPHandler, shared),
        # Before the tool route, which would otherwise take "bridge" for a tool name.
        (r"/mcp/bridge", LabSocketHandler, shared),
        (r"/mcp/initialize", InitializeHandler, shared),
        (r"/mcp/status", StatusHandler, shared),
        (r"/mcp/list_tools", ListToolsHandler, shared),
        (rf"/mcp/{TOOL_NAME}", ToolHandler, shared),
        (r"/api/mcp/list_tools", ListToolsHandler, shared),
        (rf"/api/mcp/{TOOL_NAME}", ProxyToolHandler, shared),
    ]
