"""Grants outlive a restart, and ``jupyter-mcp-ide clients`` lists and revokes them.

A ``jupyter server`` process with the extension (its own data directory, so its own grants
file) on a fixed loopback port, stopped and started again on the same port as a user's lab
would be; the command line program run as users run it, beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from oauth_client import ClientSite, free_port, grant_by_hand
from server_configs import COLLABORATION_EXTENSIONS

from jupyter_mcp.cli.launcher import relay_launcher

TOKEN = "clients-command-test-token"


@dataclass
class ServerProcess:
    """A ``jupyter server`` started, stopped and started again by the test."""

    home: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(self.home / "config"),
            "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
            "JUPYTER_DATA_DIR": str(self.home / "data"),
        }

    def start(self) -> None:
        config = {
            "ServerApp": {
                "jpserver_extensions": {
                    "jupyter_mcp": True,
                    **{name: False for name in COLLABORATION_EXTENSIONS},
                },
                "ip": "127.0.0.1",
                "port": self.port,
                "port_retries": 0,
                "open_browser": False,
                "root_dir": str(self.home / "root"),
            },
            "IdentityProvider": {"token": TOKEN},
            "JupyterMCP": {"oauth_allow_insecure_client_metadata": True, "warm_start": False},
        }
        (self.home / "root").mkdir(exist_ok=True)
        (self.home / "config.json").write_text(json.dumps(config))
        log = open(self.home / "server.log", "ab")  # noqa: SIM115 - the process keeps it
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", f"--config={self.home / 'config.json'}"]
            + ["--allow-root"],
            cwd=self.home,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{self.base}api/status?token={TOKEN}", timeout=2).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        "jupyter server did not start:\n" + (self.home / "server.log").read_text()
                    ) from None
                time.sleep(0.3)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()  # a clean stop: the extension writes the last uses
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "server", free_port())
    server.home.mkdir()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def jp_server_cleanup() -> None:
    """No in-process ServerApp here: the server is a process of its own."""


def clients(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """``jupyter-mcp-ide clients …`` as the server's user runs it (its data directory)."""
    return subprocess.run(
        [*relay_launcher(), "clients", *args],
        env=server.env,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def grant_tokens(server: ServerProcess, site: ClientSite) -> dict[str, Any]:
    return await grant_by_hand(
        server.base, TOKEN, site, client_id=site.publish(), scope="mcp mcp:toolsets:files"
    )


async def list_tools(server: ServerProcess, access_token: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=60) as http:
        return await http.post(
            f"{server.base}mcp",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/list",
                "params": {
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
                        "io.modelcontextprotocol/clientCapabilities": {},
                    }
                },
            },
            headers={
                "Authorization": f"Bearer {access_token}",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/list",
            },
        )


async def test_grants_outlive_a_restart_and_the_command_lists_and_revokes_them(
    server_process: ServerProcess, client_site: ClientSite
) -> None:
    server = server_process
    tokens = await grant_tokens(server, client_site)
    before = await list_tools(server, tokens["access_token"])
    grants_file = server.home / "data" / "jupyter_mcp" / "oauth.json"

    server.stop()  # writes the last use
    listed_stopped = clients(server)
    server.start()
    after_restart = await list_tools(server, tokens["access_token"])
    as_json = json.loads(clients(server, "--json").stdout)
    [grant] = as_json
    revoked = clients(server, "revoke", grant["id"])
    after_revoke = await list_tools(server, tokens["access_token"])
    again = clients(server, "revoke", grant["id"])
    listed_after = clients(server)

    assert before.status_code == 200, before.text
    tools = {t["name"] for t in before.json()["result"]["tools"]}
    assert "get_file_text_by_path" in tools and "get_project_modules" not in tools
    assert grants_file.stat().st_mode & 0o777 == 0o600
    assert listed_stopped.returncode == 0
    out = listed_stopped.stdout
    assert "Test Connector" in out
    assert f"metadata document {client_site.url}/client.json" in out
    assert "may use:   every tool of the tool sets files (scopes mcp mcp:toolsets:files)" in out
    assert f"for:       {server.base}mcp" in out
    assert "last used: never" not in out  # the stop wrote it
    assert after_restart.status_code == 200
    assert grant["clientName"] == "Test Connector" and grant["lastUsed"] >= grant["created"]
    assert revoked.returncode == 0 and f"revoked {grant['id']}" in revoked.stdout
    assert after_revoke.status_code == 401
    assert again.returncode == 1 and "no grant" in again.stderr
    assert listed_after.stdout.strip() == "No MCP client has an OAuth grant."
