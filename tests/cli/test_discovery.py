"""Finding the running server that serves a folder, and its MCP endpoint."""

from __future__ import annotations

from jupyter_mcp.cli.discovery import find_server, mcp_url_of


def test_find_server_prefers_the_deepest_root_that_contains_the_folder(tmp_path):
    outer, inner = tmp_path / "work", tmp_path / "work" / "project"
    (inner / "src").mkdir(parents=True)
    servers = [
        {"url": "http://localhost:1/", "root_dir": str(outer), "token": "a"},
        {"url": "http://localhost:2/", "root_dir": str(inner), "token": "b"},
        {"url": "http://localhost:3/", "root_dir": str(tmp_path / "other"), "token": "c"},
    ]

    assert find_server(inner / "src", servers)["token"] == "b"
    assert find_server(outer, servers)["token"] == "a"
    assert find_server(tmp_path, servers) is None


def test_mcp_url_keeps_the_base_url():
    assert mcp_url_of("http://localhost:8888/a%40b/") == "http://localhost:8888/a%40b/mcp"
    assert mcp_url_of("http://localhost:8888/?token=x") == "http://localhost:8888/mcp"
    assert mcp_url_of("http://localhost:8888/mcp") == "http://localhost:8888/mcp"
