"""A Jupyter server with jupyter_mcp in a subprocess of its own, for tests that run notebooks
against it: its kernels are its own children, with its runtime folder and environment, as when
a user runs JupyterLab."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from local_servers import free_port


@dataclass
class ServerProcess:
    """Where the server listens (``url`` ends with ``/``), its token and its root."""

    url: str
    token: str
    root: Path
    #: The server's process id.
    pid: int = 0


@contextmanager
def server_process(
    home: Path,
    root: Path,
    *,
    extensions: dict[str, bool] | None = None,
    env: dict[str, str] | None = None,
    port: int | None = None,
    token: str | None = None,
) -> Iterator[ServerProcess]:
    """Run ``jupyter server`` on ``root`` until the block ends, its configuration, data and
    runtime folders in ``home``; ``extensions`` are its server extensions (jupyter_mcp on),
    ``env`` its environment (this process's, without JUPYTER_TOKEN, by default). ``port`` and
    ``token`` are chosen unless given (the same ones again: the same server restarted)."""
    config = home / "config"
    config.mkdir(parents=True, exist_ok=True)
    chosen = {"jupyter_mcp": True, **(extensions or {})}
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": chosen}})
    )
    port = free_port() if port is None else port
    token = secrets.token_hex(16) if token is None else token
    environment = dict(os.environ if env is None else env)
    environment.pop("JUPYTER_TOKEN", None)
    environment.update(
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
    )
    argv = [
        sys.executable,
        "-m",
        "jupyter_server",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
    ]
    if hasattr(os, "getuid") and os.getuid() == 0:
        argv.append("--allow-root")
    log = open(home / "server.log", "w+b")  # noqa: SIM115  # closed below
    process = subprocess.Popen(
        argv, env=environment, stdout=log, stderr=subprocess.STDOUT, cwd=home
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                request = urllib.request.Request(
                    url + "mcp/status", headers={"Authorization": f"token {token}"}
                )
                urllib.request.urlopen(request, timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail("the server did not start:\n" + log.read().decode())
                time.sleep(0.25)
        yield ServerProcess(url=url, token=token, root=root, pid=process.pid)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def seed_call(server: ServerProcess, tool: str, **arguments: Any) -> Any:
    """One tool call over seed REST; its ``status`` (the test fails on an ``error``)."""
    request = urllib.request.Request(
        f"{server.url}mcp/{tool}",
        data=json.dumps(arguments).encode(),
        headers={"Authorization": f"token {server.token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        answer = json.loads(response.read())
    assert answer["error"] is None, answer["error"]
    return answer["status"]
