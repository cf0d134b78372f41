"""Seed REST and proxy REST surfaces: shapes, body formats, auth, origin, policies, windows."""

from __future__ import annotations

import json

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_mcp.surfaces.base import not_authenticated_reason


async def post(jp_fetch, *parts, body, headers=None):
    response = await jp_fetch(*parts, method="POST", body=body, headers=headers or {})
    assert response.code == 200
    return json.loads(response.body)


async def test_list_tools_is_a_bare_array_with_schemas(jp_fetch):
    response = await jp_fetch("mcp", "list_tools")
    tools = json.loads(response.body)
    assert isinstance(tools, list)
    by_name = {t["name"]: t for t in tools}
    read = by_name["get_file_text_by_path"]
    assert set(read) == {"name", "description", "inputSchema"}
    assert read["inputSchema"]["required"] == ["pathInProject"]
    assert {"resultStart", "resultEnd"} <= set(read["inputSchema"]["properties"])


async def test_list_tools_is_byte_stable_and_same_on_proxy(jp_fetch):
    first = (await jp_fetch("mcp", "list_tools")).body
    second = (await jp_fetch("mcp", "list_tools")).body
    proxied = (await jp_fetch("api", "mcp", "list_tools")).body
    assert first == second == proxied


@pytest.mark.parametrize("method", ["GET", "POST"])
async def test_initialize_and_status(jp_fetch, jp_root_dir, method):
    kwargs = {"body": "{}"} if method == "POST" else {}
    init = json.loads((await jp_fetch("mcp", "initialize", method=method, **kwargs)).body)
    assert init["jsonrpc"] == "2.0"
    assert init["result"]["serverInfo"]["name"] == "jupyter-mcp"
    assert init["result"]["capabilities"]["tools"] == {"listChanged": True}
    assert init["result"]["environment"]["workspaceRoot"] == str(jp_root_dir)
    status = json.loads((await jp_fetch("mcp", "status", method=method, **kwargs)).body)
    assert status["result"]["status"] == "running"
    assert status["result"]["environment"]["openFiles"] == []


async def test_jsonrpc_wrapper_body(jp_fetch, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("wrapped")
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "params": {"arguments": {"pathInProject": "a.txt"}}}
    )
    answer = await post(jp_fetch, "mcp", "get_file_text_by_path", body=body)
    assert answer["status"]["content"] == "wrapped"
    assert answer["error"] is None


async def test_proxy_status_is_always_a_string(jp_fetch, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("x")
    answer = await post(
        jp_fetch, "api", "mcp", "list_files_in_folder", body='{"pathInProject": "/"}'
    )
    assert isinstance(answer["status"], str)
    assert json.loads(answer["status"])[0]["name"] == "a.txt"
    text = await post(
        jp_fetch,
        "api",
        "mcp",
        "replace_specific_text",
        body=json.dumps({"pathInProject": "a.txt", "searchText": "x", "replaceText": "y"}),
    )
    assert isinstance(text["status"], str)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "Malformed JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"just a string"', "must be a JSON object"),
        ('{"jsonrpc": "2.0", "params": [1]}', "params must be an object"),
        ('{"jsonrpc": "2.0", "params": {"arguments": 5}}', "expected a JSON object"),
        ("{}", "missing required field 'pathInProject'"),
        ('{"pathInProject": 12}', "field 'pathInProject' must be a string, got number"),
        ('{"pathInProject": "a", "bogus": 1}', "unknown field 'bogus'"),
    ],
)
@pytest.mark.parametrize("surface", [("mcp",), ("api", "mcp")])
async def test_bad_bodies_get_clear_errors(jp_fetch, body, message, surface):
    answer = await post(jp_fetch, *surface, "get_file_text_by_path", body=body)
    assert answer["status"] is None
    assert message in answer["error"]


async def test_non_utf8_body(jp_fetch):
    answer = await post(jp_fetch, "mcp", "get_file_text_by_path", body=b"\xff\xfe{}")
    assert "UTF-8" in answer["error"] or "Malformed" in answer["error"]


async def test_huge_body_is_refused_without_writing(jp_fetch, jp_root_dir, mcp_app):
    (jp_root_dir / "a.txt").write_text("keep")
    mcp_app.max_body_bytes = 1024
    try:
        body = json.dumps({"pathInProject": "a.txt", "text": "x" * 5000})
        answer = await post(jp_fetch, "mcp", "rewrite_file_content", body=body)
    finally:
        mcp_app.max_body_bytes = 16 * 1024 * 1024
    assert "over the server's limit" in answer["error"]
    assert (jp_root_dir / "a.txt").read_text() == "keep"


async def test_unknown_tool(jp_fetch):
    answer = await post(jp_fetch, "mcp", "no_such_tool", body="{}")
    assert answer == {"status": None, "error": "Unknown tool: no_such_tool"}


async def test_empty_body_means_no_arguments(jp_fetch):
    answer = await post(jp_fetch, "mcp", "get_project_modules", body="")
    assert answer["error"] is None


# --- auth and origin ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "parts", [("mcp", "list_tools"), ("mcp", "status"), ("api", "mcp", "list_tools")]
)
async def test_requests_without_token_are_refused(jp_fetch, parts):
    with pytest.raises(HTTPClientError) as e:
        await jp_fetch(*parts, headers={"Authorization": ""})
    assert e.value.code == 403
    # Says what to send, not a bare "Forbidden".
    error = json.loads(e.value.response.body)["error"]
    assert error == not_authenticated_reason({})
    assert "Authorization: token <token>" in error


def test_under_jupyterhub_the_refusal_names_the_token_it_takes():
    hub = {"JUPYTERHUB_USER": "alice", "JUPYTERHUB_SERVICE_PREFIX": "/user/alice/"}

    assert "access:servers!user=alice" in not_authenticated_reason(hub)
    assert "JupyterHub" not in not_authenticated_reason({})


async def test_tool_call_without_token_is_refused(jp_fetch, jp_root_dir):
    with pytest.raises(HTTPClientError) as e:
        await jp_fetch(
            "mcp",
            "create_new_file_with_text",
            method="POST",
            body=json.dumps({"pathInProject": "x.txt", "text": "x"}),
            headers={"Authorization": ""},
        )
    assert e.value.code in (403, 401)
    assert not (jp_root_dir / "x.txt").exists()


@pytest.mark.parametrize("surface", [("mcp",), ("api", "mcp")])
async def test_foreign_origin_is_refused_even_with_token(jp_fetch, jp_root_dir, surface):
    with pytest.raises(HTTPClientError) as e:
        await jp_fetch(
            *surface,
            "create_new_file_with_text",
            method="POST",
            body=json.dumps({"pathInProject": "x.txt", "text": "x"}),
            headers={"Origin": "http://evil.example"},
        )
    assert e.value.code == 403
    # The refusal keeps the seed shape, which scripts read.
    assert json.loads(e.value.response.body) == {
        "status": None,
        "error": "Origin not allowed: http://evil.example",
    }
    assert not (jp_root_dir / "x.txt").exists()


async def test_own_and_configured_origins_are_allowed(jp_fetch, jp_http_port, mcp_app):
    own = {"Origin": f"http://127.0.0.1:{jp_http_port}"}
    assert (await jp_fetch("mcp", "list_tools", headers=own)).code == 200
    mcp_app.allowed_origins = ["https://trusted.example"]
    try:
        trusted = {"Origin": "https://trusted.example"}
        assert (await jp_fetch("mcp", "list_tools", headers=trusted)).code == 200
    finally:
        mcp_app.allowed_origins = []


# --- policies and windows --------------------------------------------------------------


async def test_read_only_mode_hides_and_refuses_writing_tools(jp_fetch, jp_root_dir, mcp_app):
    (jp_root_dir / "a.txt").write_text("keep")
    mcp_app.read_only = True
    try:
        names = {t["name"] for t in json.loads((await jp_fetch("mcp", "list_tools")).body)}
        answer = await post(
            jp_fetch,
            "mcp",
            "rewrite_file_content",
            body=json.dumps({"pathInProject": "a.txt", "text": "gone"}),
        )
        read = await post(
            jp_fetch, "mcp", "get_file_text_by_path", body='{"pathInProject": "a.txt"}'
        )
    finally:
        mcp_app.read_only = False
    assert "get_file_text_by_path" in names
    assert "rewrite_file_content" not in names
    assert "read-only mode" in answer["error"]
    assert read["status"]["content"] == "keep"
    assert (jp_root_dir / "a.txt").read_text() == "keep"


async def test_disabled_tools_are_hidden_and_refused(jp_fetch, mcp_app):
    mcp_app.disabled_tools = ["get_project_modules"]
    try:
        names = {t["name"] for t in json.loads((await jp_fetch("mcp", "list_tools")).body)}
        answer = await post(jp_fetch, "mcp", "get_project_modules", body="{}")
    finally:
        mcp_app.disabled_tools = []
    assert "get_project_modules" not in names
    assert "disabled" in answer["error"]


async def test_result_window_on_seed_rest_only_when_asked(jp_fetch, jp_root_dir):
    text = "".join(f"{i:05d}\n" for i in range(3000))  # 18000 characters
    (jp_root_dir / "long.txt").write_text(text)
    whole = await post(
        jp_fetch, "mcp", "get_file_text_by_path", body='{"pathInProject": "long.txt"}'
    )
    assert whole["status"]["content"] == text
    full_text = json.dumps(whole["status"], ensure_ascii=False)
    first = await post(
        jp_fetch,
        "mcp",
        "get_file_text_by_path",
        body='{"pathInProject": "long.txt", "resultStart": 0}',
    )
    second = await post(
        jp_fetch,
        "mcp",
        "get_file_text_by_path",
        body='{"pathInProject": "long.txt", "resultStart": 8000, "resultEnd": 16000}',
    )
    assert first["status"] == full_text[:8000]
    assert second["status"] == full_text[8000:16000]


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"resultStart": 0, "resultEnd": 9000}, "at most 8000"),
        ({"resultStart": 10, "resultEnd": 5}, "greater than resultStart"),
        ({"resultStart": -1}, "at least 0"),
        ({"resultStart": "0"}, "must be an integer"),
    ],
)
async def test_bad_windows(jp_fetch, jp_root_dir, window, message):
    (jp_root_dir / "a.txt").write_text("x")
    answer = await post(
        jp_fetch,
        "mcp",
        "get_file_text_by_path",
        body=json.dumps({"pathInProject": "a.txt", **window}),
    )
    assert message in answer["error"]


async def test_result_over_limit_asks_for_windows(jp_fetch, jp_root_dir, mcp_app):
    (jp_root_dir / "a.txt").write_text("y" * 3000)
    mcp_app.max_result_bytes = 1000
    try:
        answer = await post(
            jp_fetch, "mcp", "get_file_text_by_path", body='{"pathInProject": "a.txt"}'
        )
        windowed = await post(
            jp_fetch,
            "mcp",
            "get_file_text_by_path",
            body='{"pathInProject": "a.txt", "resultStart": 0, "resultEnd": 500}',
        )
    finally:
        mcp_app.max_result_bytes = 16 * 1024 * 1024
    assert "resultStart" in answer["error"]
    assert len(windowed["status"]) == 500


async def test_tool_calls_need_execute_permission(jp_fetch, jp_serverapp, jp_root_dir):
    from jupyter_server.auth.authorizer import Authorizer

    class NoExecute(Authorizer):
        def is_authorized(self, handler, user, action, resource):
            return not (resource == "mcp" and action == "execute")

    settings = jp_serverapp.web_app.settings
    original = settings["authorizer"]
    settings["authorizer"] = NoExecute(
        parent=jp_serverapp, identity_provider=original.identity_provider
    )
    try:
        listed = await jp_fetch("mcp", "list_tools")
        with pytest.raises(HTTPClientError) as e:
            await jp_fetch(
                "mcp",
                "create_new_file_with_text",
                method="POST",
                body=json.dumps({"pathInProject": "x.txt", "text": "x"}),
            )
    finally:
        settings["authorizer"] = original
    assert listed.code == 200
    assert e.value.code == 403
    assert not (jp_root_dir / "x.txt").exists()
