"""How to add a running server to MCP clients: the lines users paste.

:func:`client_snippets` is what ``jupyter mcp-ide config`` and ``make run`` print: Claude Code over
HTTP (with the token header) and over stdio, and the ``mcpServers`` JSON for Claude Desktop and
Cursor. The stdio forms run the relay, which finds the server serving the project folder
through Jupyter's runtime files, so no token ends up in a config file.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from ..core.registry import TOOLSETS
from .discovery import with_toolsets
from .launcher import relay_launcher, toolsets_arguments


def relay_command(root_dir: str | None = None, toolsets: str | None = None) -> list[str]:
    """The command line that starts the stdio relay for ``root_dir``, with absolute paths.

    Desktop apps start servers with a bare environment, so the executable is spelled out.
    """
    command = relay_launcher()
    command.append("stdio")
    if root_dir:
        command += ["--root", root_dir]
    return command + toolsets_arguments(toolsets)


def stdio_entry(root_dir: str | None = None, toolsets: str | None = None) -> dict[str, Any]:
    """An ``mcpServers`` entry (Claude Desktop, Cursor) that runs the stdio relay."""
    command = relay_command(root_dir, toolsets)
    return {"command": command[0], "args": command[1:]}


def http_entry(mcp_url: str, token: str) -> dict[str, Any]:
    """An ``mcpServers`` entry for clients that speak Streamable HTTP themselves (Cursor)."""
    entry: dict[str, Any] = {"url": mcp_url}
    if token:
        entry["headers"] = {"Authorization": f"token {token}"}
    return entry


def client_snippets(
    mcp_url: str,
    token: str,
    *,
    root_dir: str | None = None,
    name: str = "jupyter",
    toolsets: str | None = None,
) -> str:
    """The configuration lines for Claude Code, Claude Desktop and Cursor, as printable text.

    ``toolsets`` (``"files,git"``) makes every line connect with only those tool sets.
    """
    mcp_url = with_toolsets(mcp_url, toolsets)
    header = f' --header "Authorization: token {token}"' if token else ""
    stdio = shlex.join(relay_command(root_dir, toolsets))
    desktop = json.dumps({"mcpServers": {name: stdio_entry(root_dir, toolsets)}}, indent=2)
    cursor_http = json.dumps({"mcpServers": {name: http_entry(mcp_url, token)}}, indent=2)
    chosen = "only " + mcp_url.split("toolsets=", 1)[1] if toolsets else "all"
    return "\n".join(
        [
            f"MCP endpoint: {mcp_url}",
            f"Tool sets: {chosen} (of {', '.join(TOOLSETS)}; choose with --toolsets,"
            " or ?toolsets= on the URL)",
            "",
            "Claude Code (HTTP):",
            f"  claude mcp add --transport http {name} {shlex.quote(mcp_url)}{header}",
            "Claude Code (stdio, no token stored):",
            f"  claude mcp add {name} -- {stdio}",
            "",
            "Claude Desktop (claude_desktop_config.json) and Cursor (.cursor/mcp.json), stdio:",
            desktop,
            "",
            "Cursor over HTTP instead (.cursor/mcp.json):",
            cursor_http,
            "",
            "MCP Inspector:",
            "  npx @modelcontextprotocol/inspector --cli --transport http --server-url "
            f"{shlex.quote(mcp_url)}{header} --method tools/list",
        ]
    )
