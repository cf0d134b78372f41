"""The server's own credentials are out of every tool's reach, whoever calls.

Under JupyterHub the project root is often ``$HOME``, which holds Jupyter's runtime folder (the
server's ``jpserver-<pid>.json``, with its token), its configuration folder and the grants
file. Here the test server is set up that way (those folders inside its root), and an
``mcp:read`` OAuth token and the server's own token each try to read, list, search and open
them as resources: every way is refused or leaves them out, while a project file with the same
text is found (so the searches did search).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from oauth_fixtures import Server
from test_tokens import issue, mcp_client  # noqa: F401  (``issue`` is a fixture)

RUNTIME = ".local/share/jupyter/runtime"
CONFIG = ".jupyter"
GRANTS = ".local/share/jupyter/jupyter_mcp"


@pytest.fixture
def jp_runtime_dir(jp_root_dir: Path) -> Path:
    path = jp_root_dir / RUNTIME
    path.mkdir(parents=True)
    return path


@pytest.fixture
def jp_config_dir(jp_root_dir: Path) -> Path:
    path = jp_root_dir / CONFIG
    path.mkdir(parents=True)
    return path


@pytest.fixture
def oauth_file(jp_root_dir: Path) -> Path:
    return jp_root_dir / GRANTS / "oauth.json"


@pytest.fixture
def token_file(server: Server, jp_root_dir: Path, jp_config_dir: Path) -> str:
    """The server's real connection file (its token inside), and a config file beside a
    project file that both hold the token too; the file's path in the project."""
    serverapp = server.app.serverapp
    serverapp.write_server_info_file()
    info = Path(serverapp.info_file)
    assert info.parent == jp_root_dir / RUNTIME and server.token in info.read_text()
    (jp_config_dir / "jupyter_server_config.py").write_text(f"# token {server.token}\n")
    (jp_root_dir / "notes.txt").write_text(f"token {server.token}\n")
    return info.relative_to(jp_root_dir).as_posix()


async def principals(server: Server, issue: Any) -> list[tuple[str, str]]:  # noqa: F811
    tokens = await issue(scope="mcp:read")
    return [("mcp:read", tokens["access_token"]), ("jupyter", server.token)]


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def sealed_attempts(client: Client, token_file: str, secret: str) -> dict[str, Any]:
    read = await client.call_tool("get_file_text_by_path", {"pathInProject": token_file})
    config = await client.call_tool(
        "get_file_text_by_path", {"pathInProject": f"{CONFIG}/jupyter_server_config.py"}
    )
    grants = await client.call_tool(
        "get_file_text_by_path", {"pathInProject": f"{GRANTS}/oauth.json"}
    )
    listed = await client.call_tool("list_files_in_folder", {"pathInProject": RUNTIME})
    above = await client.call_tool(
        "list_files_in_folder", {"pathInProject": ".local/share/jupyter"}
    )
    root = await client.call_tool("list_files_in_folder", {"pathInProject": "/"})
    found = await client.call_tool("find_files_by_name_substring", {"nameSubstring": "json"})
    config_found = await client.call_tool(
        "find_files_by_name_substring", {"nameSubstring": "server_config"}
    )
    searched = await client.call_tool("search_in_files_content", {"searchText": secret})
    written = await client.call_tool(
        "create_new_file_with_text", {"pathInProject": f"{CONFIG}/added_config.py", "text": "x"}
    )
    try:
        resource: Any = await client.read_resource(f"jupyter-mcp://file/{token_file}")
    except Exception as e:  # the SDK raises the JSON-RPC error
        resource = e
    uris, cursor = [], None
    while True:
        page = await client.list_resources(cursor=cursor)
        uris += [str(r.uri) for r in page.resources]
        if (cursor := page.next_cursor) is None:
            break
    return {
        "uris": uris,
        "read": read,
        "config": config,
        "grants": grants,
        "listed": listed,
        "above": above,
        "root": root,
        "found": found,
        "config_found": config_found,
        "searched": searched,
        "resource": resource,
        "written": written,
    }


@pytest.mark.parametrize("who", ["mcp:read", "jupyter"])
async def test_no_principal_reaches_the_servers_credentials(
    server: Server,
    issue: Any,  # noqa: F811
    token_file: str,
    jp_config_dir: Path,
    who: str,
) -> None:
    token = dict(await principals(server, issue))[who]
    async with mcp_client(server.mcp, token, "auto") as client:
        got = await sealed_attempts(client, token_file, server.token)

    for name in ("read", "config", "grants", "listed"):
        assert got[name].is_error is True, (name, text_of(got[name]))
        assert "runtime, configuration or credentials folder" in text_of(got[name]), name
        assert server.token not in text_of(got[name]), name
    above = [entry["name"] for entry in json.loads(text_of(got["above"]))]
    assert "runtime" not in above and "jupyter_mcp" not in above, above
    root = [entry["name"] for entry in json.loads(text_of(got["root"]))]
    assert CONFIG not in root and "notes.txt" in root, root
    found = text_of(got["found"])
    assert "jpserver-" not in found and "oauth.json" not in found, found
    assert "jupyter_server_config" not in text_of(got["config_found"])
    searched = text_of(got["searched"])
    assert "notes.txt" in searched, searched  # the search did search
    assert "jpserver-" not in searched and CONFIG not in searched, searched
    assert any(u.endswith("/notes.txt") for u in got["uris"]), got["uris"]  # files are listed
    assert not [u for u in got["uris"] if CONFIG in u or ".local/share" in u], got["uris"]
    assert got["written"].is_error is True, text_of(got["written"])
    assert not (jp_config_dir / "added_config.py").exists()
    assert isinstance(got["resource"], Exception), got["resource"]
    assert server.token not in str(got["resource"])


async def test_git_shows_nothing_of_them(
    server: Server, token_file: str, jp_root_dir: Path, jp_config_dir: Path
) -> None:
    # A home folder that is a git repository, with the config folder committed.
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=jp_root_dir, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "home")
    config = f"{CONFIG}/jupyter_server_config.py"
    (jp_config_dir / "jupyter_server_config.py").write_text(f"# token {server.token} again\n")
    (jp_root_dir / "notes.txt").write_text("changed\n")

    async with mcp_client(server.mcp, server.token, "auto") as client:
        status = await client.call_tool("get_project_vcs_status", {})
        diff = await client.call_tool("get_file_diff", {"pathInProject": config})
        history = await client.call_tool("get_file_history", {"pathInProject": token_file})

    assert "notes.txt" in text_of(status)  # the status did list changes
    assert CONFIG not in text_of(status) and "jpserver-" not in text_of(status)
    for refused in (diff, history):
        assert refused.is_error is True, text_of(refused)
        assert "credentials folder" in text_of(refused)
        assert server.token not in text_of(refused)
