"""Which Jupyter server a kernel talks to, found without a token being typed or shown.

In order:

1. ``JUPYTER_MCP_URL`` (with ``JUPYTER_MCP_TOKEN``, else ``JUPYTER_TOKEN``, else the token of
   the running server at that URL): what a kernel started elsewhere is told.
2. The server that started this kernel: an ancestor process of the kernel whose runtime file
   ``jpserver-<pid>.json`` is in Jupyter's runtime folder (or in the folder of the kernel's
   connection file, which that server wrote).
3. The running server whose root folder holds the kernel's working folder (the deepest one),
   as ``jupyter mcp-ide stdio`` finds it.

A kernel behind a gateway, or started by hand outside any served folder, finds none; the
message says how to connect (``%mcp connect URL``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cli.discovery import find_server, hub_server, mcp_url_of, running_servers


class NoServerError(Exception):
    """No server could be found (or reached) for this kernel; the message says what to do."""


HOW_TO_CONNECT = (
    "Connect with %mcp connect URL (the token is taken from $JUPYTER_MCP_TOKEN or "
    "$JUPYTER_TOKEN, or asked for), or set JUPYTER_MCP_URL and JUPYTER_MCP_TOKEN before the "
    "kernel starts."
)


@dataclass(frozen=True)
class ServerAddress:
    """Where the server is: its base URL, the token (never shown) and how it was found."""

    url: str
    token: str = field(repr=False)
    found: str = ""

    @property
    def mcp_url(self) -> str:
        """The server's standard MCP endpoint."""
        return mcp_url_of(self.url)

    def describe(self) -> str:
        """The server, as messages name it (no token)."""
        return f"{self.url} ({self.found})" if self.found else self.url


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"


def _ancestors(pid: int, depth: int = 12) -> list[int]:
    """The parent, grandparent … of process ``pid`` (closest first)."""
    try:
        import psutil

        return [p.pid for p in psutil.Process(pid).parents()][:depth]
    except ImportError:
        pass
    except Exception:  # the process went away, or we may not look
        return []
    found: list[int] = []
    current = pid
    for _ in range(depth):
        try:
            stat = Path(f"/proc/{current}/stat").read_text()
        except OSError:
            break
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent <= 1:
            break
        found.append(parent)
        current = parent
    return found


def _runtime_folders() -> list[Path]:
    """Jupyter's runtime folder, and the folder of this kernel's connection file."""
    from jupyter_core.paths import jupyter_runtime_dir

    folders = [Path(jupyter_runtime_dir())]
    try:
        from ipykernel.connect import get_connection_file

        folders.append(Path(get_connection_file()).resolve().parent)
    except Exception:  # not in a kernel (a plain Python process)
        pass
    return list(dict.fromkeys(folders))


def _read(path: Path) -> dict[str, Any] | None:
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("url") else None


def _token(info: dict[str, Any]) -> str:
    """The token to reach a server: its own, or under JupyterHub the hub's token of it."""
    token = str(info.get("token") or "")
    if not token and hub_server() is not None:
        token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
    return token


def parent_server() -> dict[str, Any] | None:
    """The runtime file of the server that started this process, if one did."""
    folders = _runtime_folders()
    for pid in _ancestors(os.getpid()):
        for folder in folders:
            info = _read(folder / f"jpserver-{pid}.json")
            if info is not None:
                return info
    return None


def _server_at(url: str) -> dict[str, Any] | None:
    """The running server (of this machine's runtime files) whose URL is ``url``."""
    wanted = _with_slash(url.split("?", 1)[0])
    for info in running_servers():
        if _with_slash(str(info.get("url", ""))) == wanted:
            return info
    return None


def address_for(url: str, token: str | None = None) -> ServerAddress:
    """The server at ``url``, with ``token`` or one from the environment or its runtime file."""
    url = _with_slash(url.split("?", 1)[0])
    if url.rstrip("/").endswith("/mcp"):
        url = url.rstrip("/")[: -len("mcp")]
    if token is None:
        token = os.environ.get("JUPYTER_MCP_TOKEN") or os.environ.get("JUPYTER_TOKEN")
    if token is None:
        info = _server_at(url)
        token = _token(info) if info is not None else None
    if token is None:
        raise NoServerError(f"No token for {url}: give it with %mcp connect {url} --token")
    return ServerAddress(url=url, token=token, found="given")


def find_address(folder: Path | None = None) -> ServerAddress:
    """The server this kernel talks to (see the module docstring), or :class:`NoServerError`."""
    url = os.environ.get("JUPYTER_MCP_URL")
    if url:
        token = os.environ.get("JUPYTER_MCP_TOKEN") or os.environ.get("JUPYTER_TOKEN")
        found = address_for(url, token)
        return ServerAddress(url=found.url, token=found.token, found="JUPYTER_MCP_URL")
    info = parent_server()
    if info is not None:
        return ServerAddress(
            url=_with_slash(str(info["url"])),
            token=_token(info),
            found="the server that started this kernel",
        )
    folder = (folder or Path.cwd()).resolve()
    info = find_server(folder, running_servers())
    if info is not None:
        return ServerAddress(
            url=_with_slash(str(info["url"])),
            token=_token(info),
            found=f"the running server that serves {folder}",
        )
    raise NoServerError(
        "No Jupyter server found for this kernel: it was not started by a Jupyter server of "
        f"this machine (a kernel behind a gateway, or one started by hand), and no running "
        f"server serves {folder}. " + HOW_TO_CONNECT
    )
