"""``config`` for JupyterHub: lines for a hub user's server, and what it says inside one.

A hub server is not found through this machine's runtime files, so its stdio lines name the URL
and carry the token in the bridge's environment. Inside a single-user server (the hub's spawner
set ``JUPYTERHUB_*``), the server's own token must never be printed: the user is told how to
get a personal one from the hub's token page.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_mcp.cli.clients import TOKEN_PLACEHOLDER
from jupyter_mcp.cli.discovery import hub_server, relay_needs_url
from jupyter_mcp.cli.launcher import PROGRAM
from jupyter_mcp.cli.main import main

HUB = "https://hub.example.org/"
SERVER_SECRET = "the-servers-own-token"
RUNTIME_SECRET = "the-runtime-file-token"


def desktop_entry(out: str) -> dict[str, Any]:
    block = (
        out.split("Claude Desktop (claude_desktop_config.json)", 1)[1]
        .split("\n", 1)[1]
        .split("\n\n", 1)[0]
    )
    return dict(json.loads(block)["mcpServers"]["jupyter"])


def config(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["config", *args]) == 0
    return capsys.readouterr().out


@pytest.fixture
def in_single_user_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The environment JupyterHub's spawner gives alice's server, and a runtime file of it."""
    for name, value in {
        "JUPYTERHUB_API_TOKEN": SERVER_SECRET,
        "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/",
        "JUPYTERHUB_USER": "alice",
        "JUPYTERHUB_BASE_URL": "/",
        "JUPYTERHUB_API_URL": "http://127.0.0.1:8081/hub/api",
        "JUPYTERHUB_HOST": "",
    }.items():
        monkeypatch.setenv(name, value)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    root = tmp_path / "home"
    root.mkdir()
    (runtime / "jpserver-1.json").write_text(
        json.dumps(
            {
                "url": "http://127.0.0.1:45678/user/alice/",
                "token": RUNTIME_SECRET,
                "root_dir": str(root),
                "pid": 1,
            }
        )
    )
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.chdir(root)
    return root


def test_a_hub_url_gives_lines_that_name_it(capsys, tmp_path):
    url = f"{HUB}user/alice/"
    out = config(capsys, "--url", url, "--token", "T0K", "--root", str(tmp_path))

    assert (
        f'claude mcp add --transport http jupyter {url}mcp --header "Authorization: token T0K"'
    ) in out
    assert "claude mcp add -e JUPYTER_TOKEN=T0K jupyter -- " in out
    assert out.count(f"stdio --url {url}\n") == 1
    entry = desktop_entry(out)
    assert entry["args"][-3:] == ["stdio", "--url", url]
    assert entry["env"] == {"JUPYTER_TOKEN": "T0K"}
    assert "T0K" not in json.dumps(entry["args"])
    assert f"--server-url {url}mcp --header" in out


def test_a_token_in_the_url_stays_out_of_the_bridge_lines(capsys):
    out = config(capsys, "--url", f"{HUB}user/bob/?token=leaky", "--token", "T0K")

    assert "leaky" not in out
    assert desktop_entry(out)["args"][-3:] == ["stdio", "--url", f"{HUB}user/bob/"]


@pytest.mark.parametrize(
    ("url", "needs"),
    [
        ("http://127.0.0.1:8888/", False),
        ("http://localhost:8888/lab/", False),
        ("http://127.0.0.1:8000/user/alice/", True),
        ("http://127.0.0.1:8000/user/alice/mcp", True),
        ("https://hub.example.org/user/alice/", True),
        ("http://10.0.0.5:8888/", True),
    ],
)
def test_which_servers_the_bridge_cannot_find_by_itself(url, needs):
    assert relay_needs_url(url) is needs


def test_inside_a_single_user_server_it_explains_the_hub_token(
    capsys, monkeypatch, in_single_user_server
):
    monkeypatch.setenv("JUPYTERHUB_PUBLIC_URL", f"{HUB}user/alice/")
    monkeypatch.setenv("JUPYTERHUB_PUBLIC_HUB_URL", f"{HUB}hub/")
    out = config(capsys)

    assert f"open {HUB}hub/token" in out
    assert "access:servers!user=alice" in out
    assert f"{HUB}user/alice/mcp" in out
    assert f'--header "Authorization: token {TOKEN_PLACEHOLDER}"' in out
    assert SERVER_SECRET not in out and RUNTIME_SECRET not in out
    assert "127.0.0.1" not in out  # the server's address inside the hub is no use outside
    entry = desktop_entry(out)
    # The bridge runs on the agent's machine: its program, not this environment's path.
    assert entry["command"] == PROGRAM
    assert entry["args"] == ["stdio", "--url", f"{HUB}user/alice/"]
    assert entry["env"] == {"JUPYTER_TOKEN": TOKEN_PLACEHOLDER}
    assert "pip install " in out


def test_inside_a_hub_that_does_not_know_its_address_it_says_what_to_fill_in(
    capsys, in_single_user_server
):
    out = config(capsys)

    assert "open <your hub>/hub/token" in out
    assert "<your hub>/user/alice/mcp" in out
    assert "replace\n<your hub> below" in out
    assert SERVER_SECRET not in out and RUNTIME_SECRET not in out


def test_inside_a_single_user_server_a_given_token_fills_the_lines(
    capsys, monkeypatch, in_single_user_server
):
    monkeypatch.setenv("JUPYTERHUB_HOST", "https://hub.example.org")
    out = config(capsys, "--token", "personal")

    assert "Token page" not in out
    assert f"claude mcp add --transport http jupyter {HUB}user/alice/mcp" in out
    assert '"Authorization: token personal"' in out
    assert desktop_entry(out)["env"] == {"JUPYTER_TOKEN": "personal"}
    assert SERVER_SECRET not in out and RUNTIME_SECRET not in out


def test_the_hub_is_seen_only_where_its_spawner_set_the_environment():
    assert hub_server({}) is None
    assert hub_server({"JUPYTERHUB_SERVICE_PREFIX": "/user/a/"}) is None
    found = hub_server(
        {
            "JUPYTERHUB_API_TOKEN": "x",
            "JUPYTERHUB_SERVICE_PREFIX": "/hub-base/user/carol/",
            "JUPYTERHUB_BASE_URL": "/hub-base/",
            "JUPYTERHUB_HOST": "https://h.example",
        }
    )
    assert found is not None
    assert found.user == "carol"
    assert found.server_url == "https://h.example/hub-base/user/carol/"
    assert found.hub_url == "https://h.example/hub-base/hub/"
