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
