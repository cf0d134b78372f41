"""How to add a running server to MCP clients: the lines users paste.

:func:`client_snippets` is what ``jupyter mcp-ide config`` and ``make run`` print: Claude Code over
HTTP (with the token header) and over stdio, and the ``mcpServers`` JSON for Claude Desktop and
Cursor. For a server on this machine the stdio forms run the relay, which finds the server
serving the project folder through Jupyter's runtime files, so no token ends up in a config
file. A server elsewhere (a JupyterHub user's server at ``<hub>/user/<name>/``) cannot be found
that way: its stdio forms name the URL and pass the token in ``JUPYTER_TOKEN``, outside the
command line.

:func:`hub_token_help` is what ``jupyter mcp-ide config`` says inside a JupyterHub single-user
server: how to get a personal token from the hub, since the server's own token must not leave it.
"""

from __future__ import annotations

import json
import shlex
from typing import Any
from urllib.parse import urlparse

from ..core.registry import TOOLSETS
from . import DISTRIBUTION, PROGRAM
from .discovery import HubServer, with_toolsets
from .launcher import relay_launcher, toolsets_arguments

#: What stands for the token in lines printed before the user has one.
TOKEN_PLACEHOLDER = "<YOUR-HUB-TOKEN>"


def relay_command(
    root_dir: str | None = None,
    server_url: str | None = None,
    launcher: list[str] | None = None,
    toolsets: str | None = None,
) -> list[str]:
    """The command line that starts the stdio relay: for the server that serves ``root_dir``,
    or for the one at ``server_url`` (its token comes from the environment).

    Desktop apps start servers with a bare environment, so the executable of this environment
    is spelled out unless ``launcher`` says how to start it on another machine.
    """
    command = list(launcher) if launcher else relay_launcher()
    command.append("stdio")
    if server_url:
        command += ["--url", server_url]
    elif root_dir:
        command += ["--root", root_dir]
    return command + toolsets_arguments(toolsets)


def stdio_entry(
    root_dir: str | None = None,
    server_url: str | None = None,
    token: str = "",
    launcher: list[str] | None = None,
    toolsets: str | None = None,
) -> dict[str, Any]:
    """An ``mcpServers`` entry (Claude Desktop, Cursor) that runs the stdio relay."""
    command = relay_command(root_dir, server_url, launcher, toolsets)
    entry: dict[str, Any] = {"command": command[0], "args": command[1:]}
    if server_url and token:
        entry["env"] = {"JUPYTER_TOKEN": token}
    return entry


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
    server_url: str | None = None,
    launcher: list[str] | None = None,
    toolsets: str | None = None,
) -> str:
    """The configuration lines for Claude Code, Claude Desktop and Cursor, as printable text.

    ``server_url`` (the server's base URL) makes the stdio forms relay to that URL rather than
    to the local server that serves ``root_dir``: for a server the relay cannot discover.
    ``launcher`` replaces this environment's relay executable (lines for another machine).
    ``toolsets`` (``"files,git"``) makes every line connect with only those tool sets.
    """
    mcp_url = with_toolsets(mcp_url, toolsets)
    header = f' --header "Authorization: token {token}"' if token else ""
    stdio = shlex.join(relay_command(root_dir, server_url, launcher, toolsets))
    entry = stdio_entry(root_dir, server_url, token, launcher, toolsets)
    desktop = json.dumps({"mcpServers": {name: entry}}, indent=2)
    cursor_http = json.dumps({"mcpServers": {name: http_entry(mcp_url, token)}}, indent=2)
    chosen = "only " + mcp_url.split("toolsets=", 1)[1] if toolsets else "all"
    if server_url:
        env = f" -e JUPYTER_TOKEN={shlex.quote(token)}" if token else ""
        stdio_title = "Claude Code (stdio bridge, token in its environment):"
        stdio_line = f"  claude mcp add{env} {name} -- {stdio}"
    else:
        stdio_title = "Claude Code (stdio, no token stored):"
        stdio_line = f"  claude mcp add {name} -- {stdio}"
    return "\n".join(
        [
            f"MCP endpoint: {mcp_url}",
            *connector_lines(mcp_url),
            f"Tool sets: {chosen} (of {', '.join(TOOLSETS)}; choose with --toolsets,"
            " or ?toolsets= on the URL)",
            "",
            "Claude Code (HTTP):",
            f"  claude mcp add --transport http {name} {shlex.quote(mcp_url)}{header}",
            stdio_title,
            stdio_line,
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


def connector_lines(mcp_url: str) -> list[str]:
    """What to give a client that signs in with OAuth itself (claude.ai's and ChatGPT's
    connectors, Claude Desktop's remote servers, VS Code): the URL alone, no token."""
    parsed = urlparse(mcp_url)
    lines = [
        f"Remote connector URL (clients that sign in with OAuth, no token): {mcp_url}",
    ]
    if (parsed.hostname or "") in ("localhost", "127.0.0.1", "::1"):
        lines.append(
            "  reachable from this machine only: for claude.ai or ChatGPT, publish the server "
            "over https (a tunnel) and give https://<its public name>" + (parsed.path or "/mcp")
        )
    elif parsed.scheme != "https":
        lines.append("  OAuth needs https on a network address: put TLS in front of the server")
    return lines


def hub_token_help(hub: HubServer) -> str:
    """How a user inside a JupyterHub single-user server gets a token for an agent elsewhere.

    The server's own token (``JUPYTERHUB_API_TOKEN``) is the server's credential with the hub,
    not the user's: it is never printed. The user makes a personal one on the hub's token page,
    scoped to their own server.
    """
    page = f"{hub.hub_url}token" if hub.hub_url else "<your hub>/hub/token"
    lines = [
        f"This is {hub.user}'s JupyterHub server. An agent outside it needs a token of yours:",
        f"  1. open {page} (the hub's Token page, where you log in with your browser);",
        f"  2. request a new token with the scope {hub.scope}",
        "     (only access to your servers; leave out everything else);",
        f"  3. use it in place of {TOKEN_PLACEHOLDER} below, or run this command again with",
        "     --token TOKEN to have it filled in.",
        f"The stdio bridge ({PROGRAM}) runs where the agent runs: install it there with",
        f"  pip install {DISTRIBUTION}",
        f"(Claude Desktop starts it without your PATH: give its full path, `which {PROGRAM}`.)",
    ]
    if hub.server_url is None:
        lines += [
            "This server does not know the address its users open the hub at: replace",
            "<your hub> below with it (what your browser shows before /user/...).",
        ]
    return "\n".join(lines)
