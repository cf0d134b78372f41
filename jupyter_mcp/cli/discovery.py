"""Finding the running Jupyter server that serves a folder, through Jupyter's runtime files.

Each running server writes a ``jpserver-*.json`` runtime file with its URL, token and root; the
relay and ``jupyter mcp-ide config`` read them (or take ``--url``/``--token``) so that no token has
to be written into a client's configuration.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from ..core.paths import is_inside
from ..core.toolsets import TOOLSETS, parse_toolsets


class NoServerError(Exception):
    """No running server serves the folder: the user has to start one or say which (exit 1)."""


@dataclass
class ServerTarget:
    """Where the relay sends MCP: the server's ``/mcp`` URL and its token."""

    mcp_url: str
    token: str
    root_dir: str | None = None


@dataclass
class HubServer:
    """This process runs inside a JupyterHub single-user server (the hub set its environment).

    ``server_url`` and ``hub_url`` are the public addresses when the hub told them (its
    ``public_url`` or ``JUPYTERHUB_HOST``), else None: behind a proxy only the user's browser
    knows them.
    """

    user: str
    prefix: str
    server_url: str | None
    hub_url: str | None

    @property
    def scope(self) -> str:
        """The hub scope an agent's token needs for this user's servers, and nothing more."""
        return f"access:servers!user={self.user}"


def hub_server(env: Mapping[str, str] | None = None) -> HubServer | None:
    """The JupyterHub server this process runs in, from the variables the hub's spawner sets."""
    env = os.environ if env is None else env
    prefix = env.get("JUPYTERHUB_SERVICE_PREFIX", "")
    if not (env.get("JUPYTERHUB_API_TOKEN") and prefix):
        return None
    prefix = prefix if prefix.endswith("/") else prefix + "/"
    host = env.get("JUPYTERHUB_HOST", "").rstrip("/")
    base = env.get("JUPYTERHUB_BASE_URL", "/")
    base = base if base.endswith("/") else base + "/"
    server_url = env.get("JUPYTERHUB_PUBLIC_URL") or (host + prefix if host else None)
    hub_url = env.get("JUPYTERHUB_PUBLIC_HUB_URL") or (f"{host}{base}hub/" if host else None)
    user = env.get("JUPYTERHUB_USER") or prefix.rstrip("/").rsplit("/", 1)[-1]
    return HubServer(
        user=user,
        prefix=prefix,
        server_url=_with_slash(server_url) if server_url else None,
        hub_url=_with_slash(hub_url) if hub_url else None,
    )


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_HUB_USER_PATH = re.compile(r"/user/[^/]+/?(mcp/?)?$")


def relay_needs_url(server_url: str) -> bool:
    """Whether a relay must be told ``server_url``: it cannot find that server in this
    machine's runtime files (another host, or a JupyterHub user's server, whose runtime files
    live in that user's home)."""
    parsed = urlparse(server_url)
    return (parsed.hostname or "") not in _LOOPBACK or bool(_HUB_USER_PATH.search(parsed.path))


def mcp_url_of(server_url: str) -> str:
    """The Streamable HTTP endpoint of a server whose base URL is ``server_url``."""
    base = server_url.split("?", 1)[0]
    if base.rstrip("/").endswith("/mcp"):
        return base.rstrip("/")
    return base.rstrip("/") + "/mcp"


def with_toolsets(mcp_url: str, toolsets: str | None) -> str:
    """``mcp_url`` choosing the tool sets ``toolsets`` (``"files,git"``; None: all of them)."""
    if not toolsets:
        return mcp_url
    names = ",".join(sorted(parse_toolsets(toolsets), key=TOOLSETS.index))
    return f"{mcp_url}{'&' if '?' in mcp_url else '?'}toolsets={names}"


def find_server(folder: Path, servers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The running server whose ``root_dir`` contains ``folder``; the deepest root wins."""
    folder = folder.resolve()
    best: tuple[int, dict[str, Any]] | None = None
    for info in servers:
        root_text = info.get("root_dir") or info.get("notebook_dir")
        if not root_text or info.get("sock"):
            continue
        root = Path(root_text).expanduser().resolve()
        if is_inside(root, folder):
            depth = len(root.parts)
            if best is None or depth > best[0]:
                best = (depth, info)
    return best[1] if best else None


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if os.name == "nt":
        return True  # no cheap check there; a dead server fails to answer instead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_servers(runtime_dir: str | None = None) -> list[dict[str, Any]]:
    """Every running Jupyter server that wrote a runtime file (``jpserver-*.json``).

    What ``jupyter_server.serverapp.list_running_servers`` reads, without importing the whole
    server (seconds on a busy machine) into a relay that a client starts on every launch.
    """
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(runtime_dir or jupyter_runtime_dir())
    servers = []
    for file in sorted(folder.glob("jpserver-*.json")):
        try:
            info = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written, or not ours to read
        if isinstance(info, dict) and _alive(info.get("pid")):
            servers.append(info)
    return servers


def resolve_target(url: str | None, token: str | None, root: str | None) -> ServerTarget:
    """``--url``/``--token`` when given, else the running server that serves ``root``."""
    if url:
        return ServerTarget(
            mcp_url=mcp_url_of(url), token=token or os.environ.get("JUPYTER_TOKEN", "")
        )
    folder = Path(root or os.getcwd())
    servers = running_servers()
    info = find_server(folder, servers)
    if info is None:
        if servers:
            roots = ", ".join(sorted(str(s.get("root_dir")) for s in servers))
            raise NoServerError(
                f"No running Jupyter server serves {folder.resolve()} (running servers serve: "
                f"{roots}). Start one there with 'jupyter lab', pass --root DIR, or give "
                "--url and --token."
            )
        raise NoServerError(
            f"No running Jupyter server found for {folder.resolve()}. Start one with "
            "'jupyter lab' in your project folder, or give --url and --token."
        )
    return ServerTarget(
        mcp_url=mcp_url_of(info["url"]),
        token=token if token is not None else info.get("token", ""),
        root_dir=info.get("root_dir"),
    )
