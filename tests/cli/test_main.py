"""The ``jupyter-mcp-ide`` command line: ``config`` prints what adds the server to clients."""

from __future__ import annotations

import json

from jupyter_mcp.cli.main import main


def test_config_prints_client_snippets(capsys, tmp_path):
    status = main(
        ["config", "--url", "http://127.0.0.1:8888/", "--token", "T0K", "--root", str(tmp_path)]
    )
    out = capsys.readouterr().out

    assert status == 0
    assert (
        "claude mcp add --transport http jupyter http://127.0.0.1:8888/mcp "
        '--header "Authorization: token T0K"'
    ) in out
    block = out.split("Claude Desktop", 1)[1].split("\n", 1)[1].split("\n\n", 1)[0]
    desktop = json.loads(block)
    entry = desktop["mcpServers"]["jupyter"]
    assert entry["args"][-3:] == ["stdio", "--root", str(tmp_path)]
    assert "T0K" not in json.dumps(entry)


def test_config_with_toolsets_puts_the_choice_in_every_line(capsys, tmp_path):
    status = main(
        [
            "config",
            "--url",
            "http://127.0.0.1:8888/",
            "--token",
            "T0K",
            "--root",
            str(tmp_path),
            "--toolsets",
            "git, files",
        ]
    )
    out = capsys.readouterr().out

    assert status == 0
    # Sets in their documented order, whatever order they were given in.
    assert "MCP endpoint: http://127.0.0.1:8888/mcp?toolsets=files,git" in out
    assert "Tool sets: only files,git (of files, editor, search," in out
    assert "jupyter 'http://127.0.0.1:8888/mcp?toolsets=files,git' --header" in out
    block = out.split("Claude Desktop", 1)[1].split("\n", 1)[1].split("\n\n", 1)[0]
    entry = json.loads(block)["mcpServers"]["jupyter"]
    assert entry["args"][-5:] == ["stdio", "--root", str(tmp_path), "--toolsets", "files,git"]
    cursor = json.loads(
        out.split("Cursor over HTTP instead (.cursor/mcp.json):\n", 1)[1].split("\n\n", 1)[0]
    )
    assert cursor["mcpServers"]["jupyter"]["url"] == "http://127.0.0.1:8888/mcp?toolsets=files,git"


def test_config_without_toolsets_says_all_are_served(capsys, tmp_path):
    assert main(["config", "--url", "http://127.0.0.1:8888/", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "MCP endpoint: http://127.0.0.1:8888/mcp\n" in out
    assert "Tool sets: all (of files, editor, search, code, git, terminal, runs, debug," in out


def test_an_unknown_toolset_is_refused_with_the_known_ones(capsys):
    status = main(["config", "--url", "http://127.0.0.1:8888/", "--toolsets", "files,nope"])
    err = capsys.readouterr().err
    assert status == 2
    assert "jupyter-mcp-ide: Unknown tool set 'nope' in toolsets; the tool sets are files," in err


def test_config_prints_the_remote_connector_url(capsys, tmp_path):
    assert main(["config", "--url", "http://127.0.0.1:8888/", "--root", str(tmp_path)]) == 0
    local = capsys.readouterr().out
    assert main(["config", "--url", "https://hub.example.org/user/alice/", "--token", "T"]) == 0
    remote = capsys.readouterr().out

    line = "Remote connector URL (clients that sign in with OAuth, no token): "
    assert f"{line}http://127.0.0.1:8888/mcp\n  reachable from this machine only" in local
    assert "https://<its public name>/mcp" in local
    assert f"{line}https://hub.example.org/user/alice/mcp\nTool sets:" in remote
