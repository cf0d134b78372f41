"""The ``hub`` fixture: a real local JupyterHub with alice's and bob's servers (see hub_server)."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from hub_server import USERS, Hub, _config, _quiet_lab, configurable_http_proxy
from local_servers import free_port, request, stop_process, wait_for


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    """The hub with alice's and bob's servers running, and alice's agent token."""
    proxy = configurable_http_proxy()
    if importlib.util.find_spec("jupyterhub") is None:
        pytest.fail("jupyterhub is not installed: pip install -e '.[test]' (make test does it)")
    if shutil.which("node") is None:
        pytest.skip("node is not installed: configurable-http-proxy needs it")
    started = time.monotonic()
    base = tmp_path_factory.mktemp("hub")
    state, homes = base / "state", base / "homes"
    state.mkdir()
    for user in USERS:
        _quiet_lab(homes / user)
    # The admin makes bob's server read-only. alice's fetches OAuth client metadata from
    # loopback over http, where the OAuth tests publish their client's document.
    policies = base / "policies"
    (policies / "bob").mkdir(parents=True)
    (policies / "bob" / "jupyter_server_config.json").write_text(
        json.dumps({"JupyterMCP": {"read_only": True}})
    )
    (policies / "alice").mkdir(parents=True)
    (policies / "alice" / "jupyter_server_config.json").write_text(
        json.dumps({"JupyterMCP": {"oauth_allow_insecure_client_metadata": True}})
    )
    ports = {name: free_port() for name in ("public", "hub", "proxy_api")}
    admin_token = secrets.token_hex(16)
    config = state / "jupyterhub_config.py"
    config.write_text(_config(state, homes, policies, admin_token, ports))
    log_file = base / "jupyterhub.log"
    log = open(log_file, "ab")  # noqa: SIM115 (closed at teardown)
    env = {**os.environ, "PATH": f"{proxy.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(config)],
        cwd=state,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    hub = Hub(
        url=f"http://127.0.0.1:{ports['public']}/",
        admin_token=admin_token,
        homes=homes,
        log_file=log_file,
        process=process,
    )
    try:

        def up() -> bool:
            hub.check_alive()
            try:
                return request(f"{hub.url}hub/api/").status == 200
            except OSError:
                return False

        wait_for(up, 90, "the hub to start")
        for user in USERS:
            hub.start_server(user)
        for user in USERS:
            hub.wait_ready(user)
        hub.tokens["alice"] = hub.new_token("alice", ["access:servers!user=alice"])
        print(f"\nJupyterHub and two servers up in {time.monotonic() - started:.1f} s")
        yield hub
    finally:
        stop_process(process)
        log.close()
