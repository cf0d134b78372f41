"""Views over standard MCP: declared, linked and fed only to clients that show them.

A client that declares the MCP Apps extension (``io.modelcontextprotocol/ui`` with the views'
MIME type) sees the three ``ui://jupyter-mcp/...`` pages, the tools that link them, and results
that carry their data; any other client gets exactly what it got before views existed. Both
protocol eras; real kernels run the outputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import git
import pytest
from mcp_lists import list_all
from outputs_notebook import PNG, write_outputs_notebook

from jupyter_mcp.views.catalog import (
    APP_MIME_TYPE,
    EXTENSION_ID,
    VIEW_DATA_KEY,
    VIEWS,
    shows_views,
)
from jupyter_mcp.views.data import OUTPUT_LIMIT

MODES = ["legacy", "auto"]
LINKED = {tool: view.uri for view in VIEWS for tool in view.tools}


def view_data(result: Any) -> dict[str, Any] | None:
    meta = result.meta or {}
    return meta.get(VIEW_DATA_KEY)


def value(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_the_sdk_names_the_extension_as_we_do():
    from mcp.server import apps

    assert (EXTENSION_ID, APP_MIME_TYPE) == (apps.EXTENSION_ID, apps.APP_MIME_TYPE)


@pytest.mark.parametrize(
    ("capabilities", "shown"),
    [
        ({"extensions": {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}}, True),
        ({"experimental": {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}}, True),
        ({"extensions": {EXTENSION_ID: {}}}, False),  # the extension requires its MIME types
        ({"extensions": {EXTENSION_ID: {"mimeTypes": ["text/html"]}}}, False),
        ({"extensions": {"io.other/ext": {"mimeTypes": [APP_MIME_TYPE]}}}, False),
        ({}, False),
        (None, False),
    ],
)
def test_who_shows_views(capabilities, shown):
    assert shows_views(capabilities) is shown


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_without_the_extension_gets_no_view(connect, mode):
    async with connect(mode, views=False) as client:
        capabilities = client.server_capabilities
        tools = await list_all(client)
        missing = await client.call_tool("get_file_text_by_path", {"pathInProject": "x"})
    # The server says it has the extension; nothing else changes for this client.
    declared = capabilities.extensions or {}
    if mode == "legacy":
        declared = capabilities.experimental or {}
    assert EXTENSION_ID in declared
    assert not [t.name for t in tools if (t.meta or {}).get("ui")]
    assert missing.is_error and view_data(missing) is None


@pytest.mark.parametrize("mode", MODES)
async def test_a_client_with_the_extension_sees_the_views_and_their_links(connect, mode):
    async with connect(mode, views=True) as client:
        tools = await list_all(client)
        pages = {view.uri: await client.read_resource(view.uri) for view in VIEWS}
    links = {t.name: t.meta["ui"]["resourceUri"] for t in tools if (t.meta or {}).get("ui")}
    assert links == LINKED
    for uri, page in pages.items():
        (content,) = page.contents
        assert str(content.uri) == uri and content.mime_type == APP_MIME_TYPE
        assert content.meta["ui"]["csp"] == {
            "connectDomains": [],
            "resourceDomains": [],
            "frameDomains": [],
            "baseUriDomains": [],
        }
        html = content.text
        assert html.startswith("<!DOCTYPE html>")
        policy = html.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"')[0]
        assert "default-src 'none'" in policy and "connect-src 'none'" in policy
        assert "script-src 'sha256-" in policy and "unsafe-eval" not in policy


@pytest.mark.parametrize("views", [True, False])
async def test_the_pages_are_read_not_listed(connect, views):
    """Hosts find the pages through the tools' links; the resource list is the same for every
    client (the Apps extension lets a server leave its ui:// pages out of it)."""
    async with connect("legacy", views=views) as client:
        listed = await client.list_resources()
        page = await client.read_resource("ui://jupyter-mcp/diff")
    assert not [r for r in listed.resources if str(r.uri).startswith("ui://")]
    assert page.contents[0].mime_type == APP_MIME_TYPE


async def test_an_unknown_view_is_not_found(connect):
    from mcp import MCPError

    async with connect("legacy", views=True) as client:
        with pytest.raises(MCPError, match="not found"):
            await client.read_resource("ui://jupyter-mcp/nope")


@pytest.mark.parametrize("mode", MODES)
async def test_a_run_carries_its_outputs_rich_data_for_the_view(connect, jp_root_dir, mode):
    write_outputs_notebook(jp_root_dir / "outputs.ipynb")
    arguments = {"pathInProject": "outputs.ipynb", "timeoutMs": 120000}
    async with connect(mode, views=True) as client:
        run = await client.call_tool("execute_notebook_cells", arguments)
        cell = await client.call_tool(
            "get_notebook_cell", {"pathInProject": "outputs.ipynb", "index": 1}
        )
    answer = value(run)
    assert answer["status"] == "error"  # the last cell divides by zero
    data = view_data(run)
    assert data["view"] == "cell-outputs" and data["path"] == "outputs.ipynb"
    cells = data["cells"]
    assert [c["cellId"] for c in cells] == [c["cellId"] for c in answer["cells"]]

    table = cells[0]["outputs"][0]
    assert table["outputType"] == "execute_result"
    assert "<table" in table["data"]["text/html"] and "name" in table["data"]["text/plain"]

    # The picture is the result's first image block, not sent a second time.
    picture = cells[1]["outputs"][0]
    images = [block for block in run.content if block.type == "image"]
    assert picture["contentImage"] == 0 and "image/png" not in picture["data"]
    assert images[0].data == PNG

    hostile = cells[2]["outputs"][0]["data"]["text/html"]
    assert "<script>" in hostile  # as the kernel sent it: the page sanitizes

    shown = cells[3]["outputs"]
    assert "**Markdown**" in shown[0]["data"]["text/markdown"]
    assert shown[1]["data"]["image/svg+xml"].startswith("<svg")
    assert shown[2]["data"]["text/latex"] == "$\\alpha^2 + \\beta$"

    stream = cells[4]["outputs"][0]
    assert stream == {
        "outputType": "stream",
        "name": "stdout",
        "text": "\x1b[31mred\x1b[0m and plain\n",
    }
    assert cells[5]["outputs"][0]["data"]["application/vnd.vegalite.v5+json"]["mark"] == "bar"
    assert cells[6]["outputs"][0]["data"]["application/vnd.plotly.v1+json"]["data"][0]["y"] == [
        2,
        1,
        3,
    ]
    error = cells[7]["outputs"][0]
    assert cells[7]["status"] == "error"
    assert error["ename"] == "ZeroDivisionError" and error["evalue"] == "division by zero"
    assert any("\x1b[" in line for line in error["traceback"])  # colours kept for the page

    # A cell read back from the notebook carries the same data.
    one = view_data(cell)
    assert one["cells"][0]["outputs"][0]["contentImage"] == 0
    assert one["cells"][0]["cellId"] == answer["cells"][1]["cellId"]


async def test_the_same_run_without_the_extension_is_as_before(connect, jp_root_dir):
    write_outputs_notebook(jp_root_dir / "outputs.ipynb")
    async with connect("legacy", views=False) as client:
        run = await client.call_tool("execute_notebook_cells", {"pathInProject": "outputs.ipynb"})
    assert view_data(run) is None
    assert value(run)["cells"][0]["outputs"][0]["text"].startswith("   n name")


async def test_output_data_over_the_bound_is_said_and_left_out(connect, jp_root_dir):
    import nbformat

    nb = nbformat.v4.new_notebook()
    big = "<div>" + "x" * (OUTPUT_LIMIT + 10) + "</div>"
    nb.cells = [
        nbformat.v4.new_code_cell(
            f"from IPython.display import HTML, display\ndisplay(HTML({big!r}))"
        )
    ]
    (jp_root_dir / "big.ipynb").write_text(nbformat.writes(nb))
    async with connect("legacy", views=True) as client:
        run = await client.call_tool("execute_notebook_cells", {"pathInProject": "big.ipynb"})
    output = view_data(run)["cells"][0]["outputs"][0]
    assert "text/html" not in output["data"]
    assert output["data"]["text/plain"] == "<IPython.core.display.HTML object>"
    assert "more than a view is sent" in output["omitted"]


async def test_variables_and_diffs_carry_their_views_data(connect, jp_root_dir):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("numbers = [1, 2, 3]\nlabel = 'x'")]
    (jp_root_dir / "vars.ipynb").write_text(nbformat.writes(nb))
    async with connect("legacy", views=True) as client:
        await client.call_tool("execute_notebook_cells", {"pathInProject": "vars.ipynb"})
        listed = await client.call_tool("get_kernel_variables", {"pathInProject": "vars.ipynb"})
        cell_id = value(
            await client.call_tool("get_notebook_cells", {"pathInProject": "vars.ipynb"})
        )["cells"][0]["cellId"]
        edit = await client.call_tool(
            "edit_notebook_cell",
            {
                "pathInProject": "vars.ipynb",
                "cellId": cell_id,
                "searchText": "label = 'x'",
                "replaceText": "label = 'y'",
            },
        )
    variables = view_data(listed)
    assert variables["view"] == "variables" and variables["path"] == "vars.ipynb"
    assert {v["name"]: v["length"] for v in variables["variables"] if "length" in v}["numbers"] == 3
    diff = view_data(edit)
    assert diff == {
        "view": "diff",
        "files": [
            {
                "path": f"vars.ipynb · cell {cell_id}",
                "before": "numbers = [1, 2, 3]\nlabel = 'x'",
                "after": "numbers = [1, 2, 3]\nlabel = 'y'",
            }
        ],
    }


async def test_git_diffs_and_refactorings_carry_their_views_data(connect, jp_root_dir: Path):
    repo = git.Repo.init(jp_root_dir)
    module = jp_root_dir / "module.py"
    module.write_text("def area(width, height):\n    return width * height\n")
    repo.index.add(["module.py"])
    repo.index.commit("a module")
    module.write_text("def area(width, height):\n    return width * height * 1\n")
    async with connect("auto", views=True) as client:
        diff = await client.call_tool("get_file_diff", {"pathInProject": "module.py"})
        renamed = await client.call_tool(
            "refactor_code_at_location",
            {
                "pathInProject": "module.py",
                "line": 0,
                "character": 9,
                "refactorType": "rename",
                "options": {"newName": "w"},
            },
        )
    patch = view_data(diff)["files"][0]["patch"]
    assert patch == diff.content[0].text and "+    return width * height * 1" in patch
    files = view_data(renamed)["files"]
    assert files == [
        {
            "path": "module.py",
            "before": "def area(width, height):\n    return width * height * 1\n",
            "after": "def area(w, height):\n    return w * height * 1\n",
        }
    ]


async def test_a_run_as_a_task_answers_with_its_views_data_as_the_call_would(
    http_server, http_server_port, jp_base_url, jp_serverapp, jp_root_dir
):
    from task_clients import legacy_session

    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    write_outputs_notebook(jp_root_dir / "outputs.ipynb")
    capabilities = {"experimental": {EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}}
    token = jp_serverapp.identity_provider.token
    async with legacy_session(url, token, capabilities=capabilities) as session:
        tools = await session.result("tools/list")
        created = await session.call_as_task(
            "execute_notebook_cells", {"pathInProject": "outputs.ipynb"}, ttl=600_000
        )
        result = await session.result("tasks/result", {"taskId": created["task"]["taskId"]})
    linked = {t["name"] for t in tools["tools"] if (t.get("_meta") or {}).get("ui")}
    assert linked == set(LINKED)  # declared under experimental, as this era allows
    data = result["_meta"][VIEW_DATA_KEY]
    assert data["view"] == "cell-outputs" and len(data["cells"]) == 8
    assert "<table" in data["cells"][0]["outputs"][0]["data"]["text/html"]
