"""A real Jupyter Kernel Gateway for the tests of kernels behind a gateway.

The gateway (``jupyter_kernel_gateway`` from PyPI, the test extra) runs as a subprocess of this
Python on a free loopback port, with its Jupyter folders (runtime, data, config) in a tmp
folder of its own, so it launches the kernelspecs of this environment (ipykernel's
``python3``, and those ``make test`` installs into the venv) and touches nothing of the user's.
With a token it refuses every request, websockets included, that does not carry
``Authorization: token <token>``.

A test server is pointed at it with :func:`gateway_config` (``c.GatewayClient``), as a user's
``jupyter lab --gateway-url=… --GatewayClient.auth_token=…`` would.

The gateway is configured through its environment (``KG_IP``, ``KG_PORT``, ``KG_AUTH_TOKEN`` …),
which Enterprise Gateway reads too: ``JUPYTER_MCP_TEST_GATEWAY`` names another command that
starts one, such as ``/opt/eg/bin/python -m enterprise_gateway`` for an Enterprise Gateway
installed in an environment of its own (Enterprise Gateway 3.3 needs jupyter_server < 2, so it
cannot share this one).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import subprocess
import sys
import urllib.error
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local_servers import free_port, request, stop_process, wait_for

#: Seconds the gateway has to answer after it was started (it imports jupyter_server).
START_TIMEOUT = 90.0


@dataclass
class KernelGateway:
    """A running Kernel Gateway: its URL, the token it requires (or None), its process."""

    url: str
    token: str | None
    process: subprocess.Popen[bytes]
    log_file: Path

    @property
    def pid(self) -> int:
        """The gateway's process id: the parent of every kernel it launches."""
        return self.process.pid

    def api(self, path: str) -> Any:
        """``GET /api/<path>`` of the gateway, as JSON (with its token)."""
        answer = request(f"{self.url}/api/{path}", token=self.token, timeout=30)
        assert answer.status == 200, (answer.status, answer.body[:500])
        return answer.json()

    def kernel_ids(self) -> set[str]:
        """The ids of the kernels the gateway runs now."""
        return {kernel["id"] for kernel in self.api("kernels")}

    def log(self) -> str:
        """What the gateway logged so far."""
        return self.log_file.read_text(errors="replace")


def _answers(gateway: KernelGateway) -> bool:
    if gateway.process.poll() is not None:
        raise AssertionError(f"the kernel gateway exited at start:\n{gateway.log()}")
    try:
        answer = request(f"{gateway.url}/api/kernelspecs", token=gateway.token, timeout=5)
    except (urllib.error.URLError, OSError):  # not listening yet
        return False
    return answer.status == 200


@contextlib.contextmanager
def kernel_gateway(folder: Path, *, token: str | None) -> Iterator[KernelGateway]:
    """A Kernel Gateway running in ``folder`` until the block ends (then it and its kernels
    are stopped)."""
    command = shlex.split(os.environ.get("JUPYTER_MCP_TEST_GATEWAY", ""))
    if not command:
        if importlib.util.find_spec("kernel_gateway") is None:
            raise AssertionError(
                "jupyter-kernel-gateway is not installed: pip install -e '.[test]' "
                "(make test does it)"
            )
        command = [sys.executable, "-m", "kernel_gateway"]
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KG_", "EG_"))}
    for name in ("runtime", "data", "config"):
        (folder / name).mkdir(parents=True, exist_ok=True)
        env[f"JUPYTER_{name.upper()}_DIR"] = str(folder / name)
    env["JUPYTER_CONFIG_PATH"] = str(folder / "config")
    env.update(KG_IP="127.0.0.1", KG_PORT=str(port), KG_PORT_RETRIES="0")
    # jupyter_server lists the gateway's kernels to refresh their states.
    env["KG_LIST_KERNELS"] = "True"
    if token:
        env["KG_AUTH_TOKEN"] = token  # as its documentation says to pass it: not on argv
    log_file = folder / "gateway.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    gateway = KernelGateway(f"http://127.0.0.1:{port}", token, process, log_file)
    try:
        wait_for(lambda: _answers(gateway), START_TIMEOUT, "the kernel gateway to answer")
        yield gateway
    finally:
        stop_process(process, timeout=30)


def gateway_config(url: str, token: str | None = None) -> dict[str, Any]:
    """The ``GatewayClient`` section of a Jupyter server's config that sends its kernels to
    the gateway at ``url``."""
    config: dict[str, Any] = {"url": url}
    if token is not None:
        config["auth_token"] = token
    return {"GatewayClient": config}
