"""The tests' npm tools (``tests/npm-tools``: the MCP Inspector, the conformance suite, Node 22,
configurable-http-proxy), installed once into ``.cache/npm-tools``."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NPM_TOOLS = REPO / ".cache" / "npm-tools"
NPM_SPEC = REPO / "tests" / "npm-tools"
BIN = NPM_TOOLS / "node_modules" / ".bin"


def npm_tools(needed_for: str) -> Path:
    """The installed npm tools, installing them on first use; skip only without npm.

    ``needed_for`` completes the skip reason: "npm is not installed: <needed_for>".
    """
    if (NPM_TOOLS / ".installed").exists():
        return NPM_TOOLS
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed: {needed_for}")
    NPM_TOOLS.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(NPM_SPEC / name, NPM_TOOLS / name)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund"],
        cwd=NPM_TOOLS,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"npm install failed:\n{done.stdout}\n{done.stderr}"
    (NPM_TOOLS / ".installed").touch()
    return NPM_TOOLS
