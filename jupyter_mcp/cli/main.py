"""``jupyter-mcp-ide`` (``jupyter mcp-ide``): connect MCP clients to a running Jupyter server.

- ``stdio`` relays MCP between stdin/stdout and the server that serves the current folder
  (:mod:`jupyter_mcp.cli.relay`), found through Jupyter's runtime files
  (:mod:`jupyter_mcp.cli.discovery`) or given by ``--url``/``--token``;
- ``config`` prints the lines that add the server to Claude Code, Claude Desktop and Cursor,
  and the URL for remote connectors that sign in with OAuth (:mod:`jupyter_mcp.cli.clients`);
- ``clients`` lists the MCP clients the user allowed with OAuth, and ``clients revoke ID``
  ends a grant (:mod:`jupyter_mcp.cli.grants`);
- ``stdio-command`` prints the argv that starts the relay (:mod:`jupyter_mcp.cli.launcher`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path

from ..auth.store import GrantStore, StoreError
from ..core.errors import ToolError
from ..core.registry import TOOLSETS
from . import PROGRAM, grants
from .clients import TOKEN_PLACEHOLDER, client_snippets, hub_token_help
from .discovery import (
    NoServerError,
    hub_server,
    mcp_url_of,
    relay_needs_url,
    resolve_target,
    with_toolsets,
)
from .launcher import stdio_command
from .relay import relay_stdio

log = logging.getLogger("jupyter_mcp.cli")


def _add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        help="The Jupyter server's URL (e.g. http://localhost:8888/, or "
        "https://HUB/user/NAME/ for a JupyterHub server); default: the running server that "
        "serves --root.",
    )
    parser.add_argument(
        "--token",
        help="The server's token (for JupyterHub: a token from the hub's Token page); "
        "default: from its runtime file, or $JUPYTER_TOKEN.",
    )
    parser.add_argument(
        "--root",
        help="Find the server that serves this folder (default: the current folder).",
    )


def _add_toolsets_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--toolsets",
        metavar="SETS",
        help="Serve only these tool sets, comma-separated (default: all the server serves): "
        + ", ".join(TOOLSETS)
        + ".",
    )


def run_stdio(args: argparse.Namespace) -> int:
    """``stdio``: relay MCP between stdin/stdout and the running server."""
    target = resolve_target(args.url, args.token, args.root)
    target.mcp_url = with_toolsets(target.mcp_url, args.toolsets)
    log.info("%s: relaying stdio to %s", PROGRAM, target.mcp_url)
    try:
        asyncio.run(relay_stdio(target))
    except KeyboardInterrupt:
        pass
    return 0


def print_config(args: argparse.Namespace) -> int:
    """``config``: print the lines that add the server to MCP clients.

    Inside a JupyterHub single-user server the lines are for an agent elsewhere: the server's
    public URL and a personal token of the user's (without ``--token``, how to get one from the
    hub, and a placeholder: the server's own token never leaves it).
    """
    hub = hub_server()
    if hub is not None:
        server_url = (args.url or hub.server_url or f"<your hub>{hub.prefix}").split("?", 1)[0]
        if not args.token:
            print(hub_token_help(hub))
            print()
        elif server_url.startswith("<your hub>"):
            print("Replace <your hub> below with the address you open JupyterHub at.\n")
        # The bridge runs where the agent does, not here: named by its program, not a path.
        lines = client_snippets(
            mcp_url_of(server_url),
            args.token or TOKEN_PLACEHOLDER,
            server_url=server_url,
            launcher=[PROGRAM],
            toolsets=args.toolsets,
        )
        print(lines)
        return 0
    target = resolve_target(args.url, args.token, args.root)
    root = target.root_dir or args.root or os.getcwd()
    remote = args.url.split("?", 1)[0] if args.url and relay_needs_url(args.url) else None
    print(
        client_snippets(
            target.mcp_url,
            target.token,
            root_dir=root,
            server_url=remote,
            toolsets=args.toolsets,
        )
    )
    return 0


def manage_clients(args: argparse.Namespace) -> int:
    """``clients``: list the OAuth grants; ``clients revoke ID…`` (or ``--all``) ends them."""
    store = GrantStore(args.file or None)
    try:
        if args.action is None:
            found = store.grants()
            print(grants.as_json(found) if args.json else grants.describe(found))
            return 0
        ids = [g.id for g in store.grants()] if args.all else list(args.ids)
        if not ids:
            print(
                f"{PROGRAM}: say which grants to revoke (their ids, from "
                f"'{PROGRAM} clients'), or --all",
                file=sys.stderr,
            )
            return 2
        missing = grants.revoke(store, ids)
    except StoreError as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 1
    for grant_id in ids:
        if grant_id not in missing:
            print(f"revoked {grant_id}: its client's next request fails")
    for grant_id in missing:
        print(f"{PROGRAM}: no grant {grant_id} in {store.path}", file=sys.stderr)
    return 1 if missing else 0


def print_stdio_command(args: argparse.Namespace) -> int:
    """``stdio-command``: print the relay's argv as a JSON array (exit 1 without a server)."""
    root = args.root or os.getcwd()
    argv = stdio_command(root, toolsets=args.toolsets)
    if argv is None:
        print(
            f"{PROGRAM}: no running Jupyter server serves {Path(root).resolve()}",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(argv))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per job."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Connect MCP clients to a running Jupyter server (the jupyter_mcp extension).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Log more (to stderr).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    stdio = commands.add_parser(
        "stdio",
        help="Relay MCP over stdin/stdout to the running server that serves this folder.",
    )
    _add_server_arguments(stdio)
    _add_toolsets_argument(stdio)
    stdio.set_defaults(handler=run_stdio)
    config = commands.add_parser(
        "config",
        help="Print how to add the server to Claude Code, Claude Desktop and Cursor.",
    )
    _add_server_arguments(config)
    _add_toolsets_argument(config)
    config.set_defaults(handler=print_config)
    clients = commands.add_parser(
        "clients",
        help="List the MCP clients you allowed with OAuth (claude.ai, VS Code, ...): what each "
        "may use and when it was last used; 'clients revoke ID' ends a grant.",
    )
    clients.add_argument(
        "action", nargs="?", choices=["revoke"], help="revoke: end the grants given by id"
    )
    clients.add_argument("ids", nargs="*", metavar="ID", help="grant ids to revoke")
    clients.add_argument("--all", action="store_true", help="with revoke: every grant")
    clients.add_argument("--json", action="store_true", help="list as JSON")
    clients.add_argument(
        "--file",
        help="the grants file, if the server sets c.JupyterMCP.oauth_file "
        "(default: <jupyter data dir>/jupyter_mcp/oauth.json)",
    )
    clients.set_defaults(handler=manage_clients)
    stdio_command_parser = commands.add_parser(
        "stdio-command",
        help="Print, as a JSON array, the command that starts the stdio relay for the running "
        "server that serves this folder (no URL or token in it).",
    )
    stdio_command_parser.add_argument(
        "--root", help="The folder whose server to use (default: the current folder)."
    )
    _add_toolsets_argument(stdio_command_parser)
    stdio_command_parser.set_defaults(handler=print_stdio_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script (:data:`~jupyter_mcp.cli.PROGRAM`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(message)s",
    )
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args) or 0)
    except NoServerError as e:
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 1
    except ToolError as e:  # a bad --toolsets
        print(f"{PROGRAM}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
