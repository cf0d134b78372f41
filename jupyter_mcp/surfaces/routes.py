"""The route table: every URL the extension serves, under the server's ``base_url``.

The only list of routes in the package. The extension app registers it in
``initialize_handlers``; the seed port listener serves the same web application, so it answers
these very routes too.
"""

from __future__ import annotations

from typing import Any

from .asgi import StreamableHTTPHandler
from .lab_socket import LabSocketHandler
from .rest import InitializeHandler, ListToolsHandler, ProxyToolHandler, StatusHandler, ToolHandler

TOOL_NAME = r"(?P<tool>[A-Za-z0-9_\-]{1,128})"


def default_handlers() -> list[tuple[str, type[Any]]]:
    """Routes of standard MCP, the JupyterLab socket and the seed and proxy REST surfaces."""
    return [
        # Standard MCP (Streamable HTTP) at exactly {base_url}mcp.
        (r"/mcp", StreamableHTTPHandler),
        # Before the tool route, which would otherwise take "bridge" for a tool name.
        (r"/mcp/bridge", LabSocketHandler),
        (r"/mcp/initialize", InitializeHandler),
        (r"/mcp/status", StatusHandler),
        (r"/mcp/list_tools", ListToolsHandler),
        (rf"/mcp/{TOOL_NAME}", ToolHandler),
        (r"/api/mcp/list_tools", ListToolsHandler),
        (rf"/api/mcp/{TOOL_NAME}", ProxyToolHandler),
    ]
