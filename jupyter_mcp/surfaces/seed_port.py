"""The opt-in seed port-range listener: the server's web app also on a port clients scan for.

Clients of seed REST look for an IDE by trying the ports 9960–9990 on the loopback
interface. With ``c.JupyterMCP.port_range`` set, the extension listens on the first free port of
that range too, on 127.0.0.1 only, serving the very same web application: the same routes
(:mod:`jupyter_mcp.surfaces.routes`), ``base_url`` and Jupyter auth as the main port.
"""

from __future__ import annotations

import errno
import logging
import re
import socket
from typing import Any

from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

DEFAULT_RANGE = (9960, 9990)
LOOPBACK = "127.0.0.1"


def parse_port_range(value: Any) -> tuple[int, int] | None:
    """The range a ``port_range`` setting means, or None when the listener is off.

    ``False``/``""``/``"off"`` → off; ``True``/``"on"``/``"default"`` → 9960–9990;
    ``"9000-9010"`` → that range; ``"9000"`` → that one port. Raises ValueError otherwise.
    """
    if value is None or value is False:
        return None
    if value is True:
        return DEFAULT_RANGE
    if not isinstance(value, str):
        raise ValueError(f"port_range must be a boolean or a string, got {value!r}")
    text = value.strip().lower()
    if text in ("", "off", "false", "no", "0"):
        return None
    if text in ("on", "true", "yes", "default"):
        return DEFAULT_RANGE
    match = re.fullmatch(r"(\d{1,5})(?:\s*[-–]\s*(\d{1,5}))?", text)
    if not match:
        raise ValueError(f"port_range {value!r} is not 'FIRST-LAST', a port, 'on' or 'off'")
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if not 1 <= first <= last <= 65535:
        raise ValueError(f"port_range {value!r} must be ports 1-65535, first <= last")
    return first, last


def bind_first_free(first: int, last: int) -> tuple[int, list[socket.socket]]:
    """Bind the first port of ``first..last`` that is free on the loopback interface."""
    for port in range(first, last + 1):
        try:
            return port, bind_sockets(port, address=LOOPBACK, family=socket.AF_INET)
        except OSError as e:
            if e.errno in (errno.EADDRINUSE, errno.EACCES):
                continue
            raise
    raise OSError(errno.EADDRINUSE, f"no free port in {first}-{last} on {LOOPBACK}")


class SeedPortListener:
    """An extra HTTP server for the Jupyter web app on the first free port of a range."""

    def __init__(self, serverapp: Any, first: int, last: int, log: logging.Logger) -> None:
        self.serverapp = serverapp
        self.first = first
        self.last = last
        self.log = log
        self.port: int | None = None
        self._server: HTTPServer | None = None

    def start(self) -> int | None:
        """Listen on the first free port; log and return it (None when the range is full)."""
        try:
            port, sockets = bind_first_free(self.first, self.last)
        except OSError as e:
            self.log.error("jupyter_mcp: seed port range %s-%s: %s", self.first, self.last, e)
            return None
        app = self.serverapp
        self._server = HTTPServer(
            app.web_app,
            ssl_options=getattr(app, "ssl_options", None),
            xheaders=getattr(app, "trust_xheaders", False),
            max_body_size=getattr(app, "max_body_size", None),
            max_buffer_size=getattr(app, "max_buffer_size", None),
        )
        self._server.add_sockets(sockets)
        self.port = port
        scheme = "https" if getattr(app, "ssl_options", None) else "http"
        self.log.info(
            "jupyter_mcp: seed port %s listening at %s://%s:%s%s",
            port,
            scheme,
            LOOPBACK,
            port,
            app.base_url,
        )
        return port

    async def stop(self) -> None:
        """Stop listening and close the connections still open."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()
            await server.close_all_connections()
            self.log.info("jupyter_mcp: seed port %s closed", self.port)
        self.port = None

    def status(self) -> dict[str, Any]:
        """What ``/mcp/status`` tells about the listener."""
        return {"seedPort": self.port}
