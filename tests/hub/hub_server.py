"""A real local JupyterHub for the hub tests: two users whose servers run the extension.

The hub (``jupyterhub`` from PyPI) runs as a subprocess on 127.0.0.1 with temporary state (its
database, cookie secret and pid files in a tmp folder), behind ``configurable-http-proxy`` from
npm (``make npm-tools``, which ``make test`` runs; installed here when it is missing). Users log
in with a shared password; ``SimpleLocalProcessSpawner`` runs each single-user server
(``jupyterhub.singleuser`` of this Python) as the current unix user, with a home folder of its
own under the tmp folder. The extension is on in those servers because this venv's Jupyter
config enables it, as ``pip install`` does in a single-user image.

A service token with admin scopes starts and stops servers and makes the users' API tokens
through the hub's REST API, the way an admin or a user's token page would.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from local_servers import Response, request, wait_for
from npm_tools import BIN, npm_tools

REPO = Path(__file__).resolve().parents[2]
PROXY = BIN / "configurable-http-proxy"
USERS = ("alice", "bob")
PASSWORD = "hub-test-password"
# Spawning a single-user server imports JupyterLab and the extension: slow on a loaded machine.
SPAWN_TIMEOUT = 240.0


def configurable_http_proxy() -> Path:
    """The proxy from the tests' npm tools, installing them when it is missing; skip without npm."""
    npm_tools("the JupyterHub tests need configurable-http-proxy")
    assert PROXY.exists(), f"npm install did not provide {PROXY}"
    return PROXY


@dataclass
class Hub:
    """A running JupyterHub: its public URL, the admin service token, the users' homes."""

    url: str
    admin_token: str
    homes: Path
    log_file: Path
    process: subprocess.Popen[bytes]
    tokens: dict[str, str] = field(default_factory=dict)

    def api(self, path: str, *, method: str = "GET", body: Any = None) -> Response:
        return request(
            f"{self.url}hub/api/{path}", method=method, token=self.admin_token, body=body
        )

    def home(self, user: str) -> Path:
        return self.homes / user

    def server_url(self, user: str) -> str:
        return f"{self.url}user/{user}/"

    def user_model(self, user: str) -> dict[str, Any]:
        answer = self.api(f"users/{user}")
        assert answer.status == 200, answer
        return dict(answer.json())

    def start_server(self, user: str) -> None:
        """Ask the hub to spawn ``user``'s server (returns at once; see :meth:`wait_ready`)."""
        answer = self.api(f"users/{user}/server", method="POST")
        assert answer.status in (201, 202), f"spawning {user}'s server: {answer}\n{self.log()}"

    def wait_ready(self, user: str) -> None:
        def ready() -> bool:
            self.check_alive()
            server = self.user_model(user).get("servers", {}).get("")
            return bool(server and server.get("ready"))

        wait_for(ready, SPAWN_TIMEOUT, f"{user}'s single-user server to be ready")
        # Ready for the hub means its API answered; make sure ours does too, through the proxy.
        status = request(f"{self.server_url(user)}mcp/status", token=self.admin_token)
        assert status.status != 404, (
            f"{user}'s single-user server has no /mcp routes: the jupyter_mcp server extension "
            "is not enabled in this environment (jupyter server extension enable jupyter_mcp)"
        )

    def stop_server(self, user: str) -> None:
        answer = self.api(f"users/{user}/server", method="DELETE")
        assert answer.status in (202, 204), f"stopping {user}'s server: {answer}"
        wait_for(
            lambda: not self.user_model(user).get("servers"),
            SPAWN_TIMEOUT,
            f"{user}'s server to stop",
        )

    def new_token(self, user: str, scopes: list[str], note: str = "mcp agent") -> str:
        """A hub API token of ``user`` with ``scopes``, as the hub's token page makes one."""
        answer = self.api(
            f"users/{user}/tokens", method="POST", body={"scopes": scopes, "note": note}
        )
        assert answer.status == 201, f"making a token for {user}: {answer}"
        return str(answer.json()["token"])

    def check_alive(self) -> None:
        if self.process.poll() is not None:
            raise AssertionError(f"jupyterhub exited with {self.process.returncode}\n{self.log()}")

    def log(self) -> str:
        return self.log_file.read_text(errors="replace")[-6000:]


def _config(
    state: Path, homes: Path, policies: Path, admin_token: str, ports: dict[str, int]
) -> str:
    """The hub's ``jupyterhub_config.py``: loopback ports, temp state, two users, local spawns.

    Each server also reads the admin's config folder ``policies/<user>`` (``JUPYTER_CONFIG_PATH``,
    as a config folder of the single-user image would be).
    """
    settings: dict[str, Any] = {
        "JupyterHub": {
            "bind_url": f"http://127.0.0.1:{ports['public']}",
            # Tells the servers the address users reach them at (JUPYTERHUB_PUBLIC_URL).
            "public_url": f"http://127.0.0.1:{ports['public']}/",
            "hub_bind_url": f"http://127.0.0.1:{ports['hub']}",
            "db_url": f"sqlite:///{state / 'jupyterhub.sqlite'}",
            "cookie_secret_file": str(state / "jupyterhub_cookie_secret"),
            "pid_file": str(state / "jupyterhub.pid"),
            "authenticator_class": "shared-password",
            "spawner_class": "simple",
            "services": [{"name": "mcp-tests", "api_token": admin_token}],
            "load_roles": [
                {
                    "name": "mcp-tests",
                    # shares: the tests share alice's server with bob.
                    "scopes": ["admin:users", "admin:servers", "tokens", "shares"],
                    "services": ["mcp-tests"],
                }
            ],
            # A respawned server gets a new port; make the hub find out at once.
            "last_activity_interval": 30,
        },
        "ConfigurableHTTPProxy": {
            "api_url": f"http://127.0.0.1:{ports['proxy_api']}",
            "command": [str(configurable_http_proxy())],
            "pid_file": str(state / "proxy.pid"),
        },
        "SharedPasswordAuthenticator": {"user_password": PASSWORD},
        "Authenticator": {"allowed_users": list(USERS)},
        "SimpleLocalProcessSpawner": {"home_dir_template": str(homes / "{username}")},
        "Spawner": {
            # The single-user server of this very Python (this venv), whatever PATH says.
            "cmd": [sys.executable, "-m", "jupyterhub.singleuser"],
            # CI runs as root; jupyter_server refuses root without this.
            "args": ["--allow-root"],
            "default_url": "/lab",
            "start_timeout": int(SPAWN_TIMEOUT),
            "http_timeout": int(SPAWN_TIMEOUT),
        },
    }
    lines = ["c = get_config()  # noqa"]
    for section, values in settings.items():
        for key, value in values.items():
            lines.append(f"c.{section}.{key} = {value!r}")
    # Per user, so a callable of the spawner (which JupyterHub calls for each spawn).
    lines += [
        f"POLICIES = {str(policies)!r}",
        "c.Spawner.environment = {",
        '    "JUPYTER_CONFIG_PATH": lambda spawner: f"{POLICIES}/{spawner.user.name}",',
        "}",
    ]
    return "\n".join(lines) + "\n"


def _quiet_lab(home: Path) -> None:
    """No news or update checks from JupyterLab (the tests have no network)."""
    settings = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
