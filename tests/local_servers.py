"""Helpers of the tests that run real servers as subprocesses (JupyterHub, Kernel Gateway): a
free loopback port, polling for a condition, plain HTTP requests, and stopping a server with
everything it started."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from process_table import descendants


def free_port() -> int:
    """A loopback port no server listens on now (the OS's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ephemeral_ports() -> range:
    """The ports the OS hands out by itself (to ``bind(0)`` and to connections' own ends)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):  # not Linux: IANA's dynamic range, the usual default
        low, high = 49152, 65535
    return range(low, high + 1)


def restartable_port() -> int:
    """A free loopback port outside the OS's ephemeral range, for a server stopped and started
    again on the same address.

    A port from :func:`free_port` is one the OS hands out itself: between the stop and the
    restart, any connection's own end can take it (another test's client, a kernel's, or a
    client connecting to the stopped server, which on Linux can connect to itself), and the
    restart fails with "port is not available" (seen once under load). Below that range only
    servers told a port take one.
    """
    ephemeral = _ephemeral_ports()
    low, high = (10_000, ephemeral.start - 1) if ephemeral.start > 11_000 else (1_024, 9_999)
    for _ in range(200):
        port = random.randint(low, high)
        if port in ephemeral:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # someone listens there: another try
                continue
            return port
    raise AssertionError(f"no free loopback port in {low}-{high}")


def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``condition`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


@dataclass
class Response:
    """An HTTP answer: status, body and headers."""

    status: int
    body: bytes
    headers: dict[str, str]

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    url: str,
    *,
    method: str = "GET",
    token: str | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> Response:
    """One HTTP request without following redirects: status, body and headers, never raising."""
    sent = dict(headers or {})
    if token:
        sent["Authorization"] = f"token {token}"
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(
            urllib.request.Request(url, data=data, headers=sent, method=method), timeout=timeout
        ) as answer:
            return Response(answer.status, answer.read(), dict(answer.headers))
    except urllib.error.HTTPError as e:
        return Response(e.code, e.read(), dict(e.headers))


def stop_process(process: subprocess.Popen[bytes], *, timeout: float = 60) -> None:
    """Stop a server with SIGTERM (it stops what it started), then kill any straggler it left."""
    left = descendants(process.pid)
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
