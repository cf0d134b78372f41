"""The servers benchmarks measure, each started as a subprocess: a real Jupyter server with
jupyter_mcp, and the MCP SDK's own server (the protocol reference of ``bench_mcp``)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A running ``jupyter server`` on loopback with a token; talk to it with keep-alive."""

    def __init__(
        self,
        root: Path,
        port: int,
        token: str,
        proc: subprocess.Popen,
        log: IO[bytes] | None = None,
    ) -> None:
        self.root, self.port, self.token, self.proc = root, port, token, proc
        self.url = f"http://127.0.0.1:{port}"
        self._log = log

    def logged_errors(self, levels: str = "E") -> list[str]:
        """The entries the server logged at error level (or at each of ``levels``: "EW" adds
        the warnings) so far (an ``[E ...]`` line and the lines under it, its traceback),
        oldest first."""
        if self._log is None:
            return []
        # Read at an offset: the server writes to the same open file, and a seek would move
        # where its next line goes.
        fd = self._log.fileno()
        lines = os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace").splitlines()
        entries: list[list[str]] = []
        current: list[str] | None = None
        for line in lines:
            if line.startswith("["):  # a new entry: kept when it is an error
                current = [line] if line[1:2] in levels and line[2:3] == " " else None
                if current is not None:
                    entries.append(current)
            elif current is not None:
                current.append(line)
        return ["\n".join(entry) for entry in entries]

    def connection(self) -> http.client.HTTPConnection:
        """A keep-alive connection (one per client thread)."""
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def request(
        self, conn: http.client.HTTPConnection, method: str, path: str, body: object = None
    ) -> tuple[int, bytes]:
        headers = {"Authorization": f"token {self.token}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()

    def call(self, conn: http.client.HTTPConnection, tool: str, **arguments: object) -> object:
        status, body = self.request(conn, "POST", f"/mcp/{tool}", arguments)
        answer = json.loads(body)
        if status != 200 or answer.get("error"):
            raise RuntimeError(f"{tool} failed: {status} {answer}")
        return answer["status"]


@contextlib.contextmanager
def jupyter_server(
    root: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    extensions: dict[str, bool] | None = None,
) -> Iterator[Server]:
    """Start ``jupyter server`` on ``root`` and stop it afterwards; ``env`` is added to this
    process's environment and ``cwd`` is its working folder (a ``PYTHONPATH`` that serves
    another jupyter_mcp needs one outside this checkout, which ``python -m`` puts first);
    ``extensions`` turns server extensions on or off besides jupyter_mcp.

    By default the server works in a scratch folder of its own: jupyter-collaboration keeps
    its document store in the working folder, which must not be this checkout."""
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, **(env or {}), "JUPYTER_TOKEN": token}
    cmd = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--allow-root",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.jpserver_extensions={ {'jupyter_mcp': True, **(extensions or {})}!r}",
        "--log-level=WARN",
        *extra,
    ]
    scratch = None if cwd is not None else tempfile.TemporaryDirectory(prefix="jupyter-cwd-")
    # The log goes to a file: a pipe nobody reads would fill and stop the server mid-run.
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd if scratch is None else scratch.name,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    server = Server(root, port, token, proc, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                conn = server.connection()
                if server.request(conn, "GET", "/api/status")[0] == 200:
                    conn.close()
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError("jupyter server did not start: " + log.read().decode()[-2000:])
            time.sleep(0.2)
        yield server
    finally:
        _stop(proc)
        if os.environ.get("BENCH_SERVER_LOG"):
            log.seek(0)
            sys.stderr.write(log.read().decode()[-int(os.environ["BENCH_SERVER_LOG"]) :])
        log.close()
        if scratch is not None:
            scratch.cleanup()


@contextlib.contextmanager
def sdk_server(root: Path) -> Iterator[tuple[str, int]]:
    """Start the SDK's own MCP server on ``root`` (``_sdk_server.py``); yield its base URL and
    its process id."""
    port = free_port()
    script = Path(__file__).with_name("_sdk_server.py")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port), str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(proc, port, "the SDK server")
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        _stop(proc)


def wait_for_port(proc: subprocess.Popen[bytes], port: int, what: str, seconds: float = 60) -> None:
    """Wait until ``proc`` listens on loopback ``port``; a RuntimeError with the end of its
    standard error when it exits or ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            error = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"{what} did not start: {error[-2000:]}")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


def percentiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p99 in milliseconds of samples in seconds."""
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return pick(0.50), pick(0.99)
