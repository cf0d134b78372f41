"""``jupyter_mcp.stdio_command()`` and ``jupyter mcp-ide stdio-command``: the relay's argv."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from mcp_messages import initialize

import jupyter_mcp
from jupyter_mcp.cli.main import main


def test_no_server_serves_the_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert jupyter_mcp.stdio_command(tmp_path) is None
    assert main(["stdio-command", "--root", str(tmp_path)]) == 1
    assert f"no running Jupyter server serves {tmp_path.resolve()}" in capsys.readouterr().err


async def test_the_command_starts_a_relay_to_this_server(
    jp_fetch: Any, jp_serverapp: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    # Given a running server (jp_fetch makes it listen) with its runtime file …
    await jp_fetch("mcp", "status", method="GET")
    (jp_root_dir / "sub").mkdir()
    # … the argv is found from inside the server's process, from its root and from a subfolder.
    argv = jupyter_mcp.stdio_command()
    assert argv is not None
    assert argv == jupyter_mcp.stdio_command(jp_root_dir)
    assert argv == jupyter_mcp.stdio_command(jp_root_dir / "sub")
    assert argv[-3:] == ["stdio", "--root", str(jp_root_dir.resolve())]
    # Never the URL or the token.
    assert not [a for a in argv if "http" in a or jp_serverapp.identity_provider.token in a]

    # When a client spawns it somewhere else and speaks MCP on its stdin …
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=tmp_path,
        env=dict(os.environ),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    request = initialize("2025-06-18", client="test")
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(request).encode() + b"\n")
        await process.stdin.drain()
        line = await asyncio.wait_for(process.stdout.readline(), 60)
    finally:
        if process.returncode is None:
            process.kill()
        _, err = await process.communicate()
    # … this server answers.
    assert line, err.decode()
    answer = json.loads(line)
    assert answer["id"] == 1
    assert answer["result"]["serverInfo"]["name"]


async def test_cli_prints_the_argv_as_json(
    jp_fetch: Any, jp_root_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await jp_fetch("mcp", "status", method="GET")
    assert main(["stdio-command", "--root", str(jp_root_dir)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == jupyter_mcp.stdio_command(jp_root_dir)


async def test_the_argv_can_choose_tool_sets(
    jp_fetch: Any, jp_root_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await jp_fetch("mcp", "status", method="GET")
    argv = jupyter_mcp.stdio_command(jp_root_dir, toolsets="git files")
    assert argv is not None
    assert argv[-5:] == ["stdio", "--root", str(jp_root_dir.resolve()), "--toolsets", "files,git"]
    assert main(["stdio-command", "--root", str(jp_root_dir), "--toolsets", "git,files"]) == 0
    assert json.loads(capsys.readouterr().out) == argv
    assert main(["stdio-command", "--root", str(jp_root_dir), "--toolsets", "gits"]) == 2
    assert "Unknown tool set 'gits'" in capsys.readouterr().err
