"""Plugin tools from other packages, the testing harness and the seed port-range listener.

The example plugin (examples/jupyter-mcp-example-plugin) is installed with pip into a temporary
site directory once per session, and test-only plugins come from a temporary distribution
(a ``*.dist-info`` with ``entry_points.txt``); both are put on ``sys.path`` for each test, so the
server finds them through the real entry-point discovery and other test files never see them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.plugins.host import (
    MAX_ARGUMENT_BYTES,
    MAX_OVERDUE_CALLS,
    MAX_RESULT_BYTES,
    PluginError,
    normalise_plugin_id,
    registered_name,
)
from jupyter_mcp.surfaces.seed_port import DEFAULT_RANGE, parse_port_range
from jupyter_mcp.testing import PluginHarness

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jupyter-mcp-example-plugin"

TEST_PLUGINS = '''
"""Plugins for the tests: invalid declarations, clashing names, objects, broken ones."""

from types import SimpleNamespace


def _tool(name, **fields):
    declaration = {
        "name": name,
        "description": f"The {name} tool.",
        "inputSchema": {"type": "object"},
        "readOnly": True,
        "destructive": False,
    }
    declaration.update(fields)
    return declaration


class Bad:
    """One valid tool among invalid declarations."""

    tools = [
        _tool("Bad-Name"),
        _tool("long_description", description="x" * 4097),
        _tool("empty_description", description=""),
        _tool("not_object", inputSchema={"type": "string"}),
        _tool(
            "remote_ref",
            inputSchema={
                "type": "object",
                "properties": {"a": {"$ref": "https://example.org/a.json"}},
            },
        ),
        _tool(
            "dangling_ref",
            inputSchema={"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}},
        ),
        _tool("not_a_schema", inputSchema={"type": "object", "properties": {"a": {"type": 5}}}),
        _tool("missing_file", inputSchema="schemas/nope.json"),
        _tool("escaping_path", inputSchema="../outside.json"),
        _tool("huge_schema", inputSchema={"type": "object", "description": "x" * (256 * 1024)}),
        {k: v for k, v in _tool("no_read_only").items() if k != "readOnly"},
        _tool("string_destructive", destructive="no"),
        _tool("string_task_support", taskSupport="yes"),
        _tool(
            "ok",
            description="A valid tool next to invalid ones.",
            inputSchema={
                "type": "object",
                "properties": {"word": {"type": "string"}},
                "required": ["word"],
                "additionalProperties": False,
            },
        ),
    ]

    def call(self, tool, arguments, ctx):
        return arguments["word"].upper()


class ClashDot:
    tools = [_tool("same"), _tool("only_dot")]

    def call(self, tool, arguments, ctx):
        return "dot"


class ClashUnder:
    tools = [_tool("same"), _tool("only_under")]

    def call(self, tool, arguments, ctx):
        return "under"


class NoCall:
    tools = [_tool("orphan")]


class FailsToStart:
    def __init__(self):
        raise OSError("the licence server is down")


class StrangeDeclaration:
    """A declaration object whose attributes raise."""

    class _Weird:
        @property
        def name(self):
            raise KeyError("name")

    tools = [_Weird(), _tool("fine")]

    def call(self, tool, arguments, ctx):
        return "fine"


class LongName:
    tools = [_tool("a_tool_name_of_exactly_forty_characters_")]

    def call(self, tool, arguments, ctx):
        return "long"


class Objects:
    """Declarations as objects, a tool that answers something that is not text."""

    tools = [
        SimpleNamespace(
            name="where",
            description="The project root and the plugin's logger.",
            inputSchema={"type": "object", "properties": {}},
            readOnly=True,
            destructive=False,
        ),
        SimpleNamespace(
            name="not_text",
            description="Answers a number.",
            input_schema={"type": "object"},
            read_only=True,
            destructive=False,
        ),
        SimpleNamespace(
            name="escape",
            description="Tries to read outside the project.",
            inputSchema={"type": "object"},
            readOnly=True,
            destructive=False,
        ),
        SimpleNamespace(
            name="long_job",
            description="Work that may outlast a request: clients may run it as a task.",
            inputSchema={"type": "object"},
            readOnly=True,
            destructive=False,
            taskSupport=True,
        ),
    ]

    def call(self, tool, arguments, ctx):
        if tool == "long_job":
            return "done at length"
        if tool == "where":
            return f"{ctx.root_dir}|{ctx.log.name}|{ctx.plugin_id}"
        if tool == "escape":
            return str(ctx.resolve("../outside.txt"))
        return 42
'''

ENTRY_POINTS = """
[jupyter_mcp.tools]
bad.plugin = mcp_test_plugins:Bad
clash.a = mcp_test_plugins:ClashDot
clash_a = mcp_test_plugins:ClashUnder
no.call = mcp_test_plugins:NoCall
fails.to.start = mcp_test_plugins:FailsToStart
strange = mcp_test_plugins:StrangeDeclaration
broken.plugin = mcp_test_plugins:missing_attribute
long_plugin_id_of_thirty_chars = mcp_test_plugins:LongName
objects = mcp_test_plugins:Objects
"""


@pytest.fixture(scope="session")
def example_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example plugin installed by pip (its own pyproject.toml) into a site directory."""
    site = tmp_path_factory.mktemp("example-site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(EXAMPLE),
        ],
        check=True,
        capture_output=True,
    )
    return site


@pytest.fixture(scope="session")
def test_plugins_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary distribution holding the test-only plugins."""
    site = tmp_path_factory.mktemp("test-plugins-site")
    (site / "mcp_test_plugins").mkdir()
    (site / "mcp_test_plugins" / "__init__.py").write_text(textwrap.dedent(TEST_PLUGINS))
    info = site / "mcp_test_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mcp-test-plugins\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return site


@pytest.fixture
def plugin_paths(
    example_site: Path, test_plugins_site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both sites on sys.path for this test only."""
    monkeypatch.syspath_prepend(str(example_site))
    monkeypatch.syspath_prepend(str(test_plugins_site))


@pytest.fixture
def mcp_config() -> dict[str, Any]:
    """``c.JupyterMCP`` traits of the test's server (tests parametrize it)."""
    return {}


@pytest.fixture
def jp_server_config(plugin_paths: None, mcp_config: dict[str, Any]) -> dict[str, Any]:
    """The shared server configuration, with the plugins installed and ``mcp_config``."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_mcp": True},
            "allow_unauthenticated_access": False,
        },
        "JupyterMCP": mcp_config,
    }


async def listing(jp_fetch: Any) -> list[dict[str, Any]]:
    response = await jp_fetch("mcp", "list_tools", method="GET")
    return json.loads(response.body)


async def names(jp_fetch: Any) -> list[str]:
    return [tool["name"] for tool in await listing(jp_fetch)]


def log_text(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(record.getMessage() for record in caplog.records)


# --- names -----------------------------------------------------------------------------------


def test_registered_names_normalise_the_plugin_id() -> None:
    assert normalise_plugin_id("acme.notes") == "acme_notes"
    assert normalise_plugin_id("Acme-Notes 2") == "_cme__otes_2"
    assert registered_name("acme.notes", "find_notes") == "acme_notes__find_notes"


# --- the server ------------------------------------------------------------------------------


async def test_listing_names_the_plugin_and_uses_its_schema(jp_fetch: Any) -> None:
    tools = {tool["name"]: tool for tool in await listing(jp_fetch)}
    example = sorted(name for name in tools if name.startswith("example_notes__"))
    assert example == [
        "example_notes__add_note",
        "example_notes__append_note",
        "example_notes__delete_note",
        "example_notes__fail",
        "example_notes__find_notes",
        "example_notes__list_notebooks",
        "example_notes__repeat",
        "example_notes__wait",
    ]
    find = tools["example_notes__find_notes"]
    assert find["description"].endswith("(from plugin example.notes)")
    schema = find["inputSchema"]
    # The plugin's own schema file, $defs and all, plus the result window.
    assert schema["$defs"]["limit"]["maximum"] == 1000
    assert schema["properties"]["limit"] == {"$ref": "#/$defs/limit"}
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["text"]
    assert {"resultStart", "resultEnd"} <= set(schema["properties"])
    # Built-in tools are still there.
    assert "get_file_text_by_path" in tools
    # Plugin tools are the "plugins" tool set, built-in ones never.
    chosen = await jp_fetch("mcp", "list_tools", method="GET", params={"toolsets": "plugins"})
    assert sorted(t["name"] for t in json.loads(chosen.body)) == sorted(
        name for name in tools if "__" in name
    )
    # The listing is stable byte for byte.
    first = await jp_fetch("mcp", "list_tools", method="GET")
    second = await jp_fetch("mcp", "list_tools", method="GET")
    assert first.body == second.body


async def test_plugin_tools_read_and_write_in_the_project(
    ok: Any, jp_root_dir: Path, jp_fetch: Any
) -> None:
    created = await ok("example_notes__add_note", title="groceries", body="Buy milk\nBuy bread\n")
    assert created == "Created notes/groceries.md"
    assert (jp_root_dir / "notes" / "groceries.md").read_text() == "Buy milk\nBuy bread\n"
    found = await ok("example_notes__find_notes", text="BREAD")
    assert json.loads(found) == [{"path": "notes/groceries.md", "line": 2, "text": "Buy bread"}]
    # The proxy surface gets the same text.
    response = await jp_fetch(
        "api", "mcp", "example_notes__find_notes", method="POST", body=json.dumps({"text": "milk"})
    )
    assert json.loads(json.loads(response.body)["status"])[0]["line"] == 1


async def test_plugin_writes_go_through_the_guard_lock_and_reload(
    ok: Any, fails: Any, jp_root_dir: Path, mcp_app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = mcp_app.tool_context.services
    written: list[str] = []
    unsaved: set[str] = set()

    def guard(path: Path) -> None:
        if Path(path).name in unsaved:
            raise ToolError(f"{Path(path).name} has unsaved changes in JupyterLab")

    monkeypatch.setattr(services, "on_file_written", lambda p: written.append(Path(p).name))
    monkeypatch.setattr(services, "before_file_write", guard)

    assert await ok("example_notes__add_note", title="todo", body="- one\n") == (
        "Created notes/todo.md"
    )
    assert written == ["todo.md"]  # editors showing the file reload it
    assert await ok("example_notes__append_note", title="todo", text="- two\n") == (
        "Appended to notes/todo.md"
    )
    assert (jp_root_dir / "notes" / "todo.md").read_text() == "- one\n- two\n"
    assert written == ["todo.md", "todo.md"]

    # A file with unsaved edits in JupyterLab is not overwritten by a plugin either.
    unsaved.add("todo.md")
    error = await fails("example_notes__append_note", title="todo", text="- three\n")
    assert "unsaved changes" in error
    assert (jp_root_dir / "notes" / "todo.md").read_text() == "- one\n- two\n"
    unsaved.add("new.md")
    assert "unsaved changes" in await fails("example_notes__add_note", title="new", body="x")
    assert not (jp_root_dir / "notes" / "new.md").exists()
    assert written == ["todo.md", "todo.md"]

    # The read-modify-write holds the per-file lock: it waits while another writer has it.
    unsaved.clear()
    lock = mcp_app.tool_context.locks((jp_root_dir / "notes" / "todo.md").resolve())
    lock.acquire()
    try:
        pending = asyncio.ensure_future(
            ok("example_notes__append_note", title="todo", text="- four\n")
        )
        await asyncio.sleep(0.5)
        assert not pending.done()
        assert (jp_root_dir / "notes" / "todo.md").read_text() == "- one\n- two\n"
    finally:
        lock.release()
    assert await pending == "Appended to notes/todo.md"
    assert (jp_root_dir / "notes" / "todo.md").read_text() == "- one\n- two\n- four\n"


async def test_plugin_context_offers_the_contents_manager(ok: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "b.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    (jp_root_dir / "a.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    (jp_root_dir / "c.txt").write_text("not a notebook")
    assert json.loads(await ok("example_notes__list_notebooks")) == ["a.ipynb", "b.ipynb"]


async def test_plugin_context_root_logger_and_jail(ok: Any, fails: Any, jp_root_dir: Path) -> None:
    root, logger, plugin_id = (await ok("objects__where")).split("|")
    assert Path(root) == jp_root_dir.resolve()
    assert logger == "jupyter_mcp.plugins.objects"
    assert plugin_id == "objects"
    assert "outside" in (await fails("objects__escape")).lower()


async def test_arguments_are_validated_before_the_plugin_runs(
    fails: Any, jp_root_dir: Path
) -> None:
    missing = await fails("example_notes__add_note", title="x")
    assert "missing required field 'body'" in missing
    wrong = await fails("example_notes__add_note", title="x", body=3)
    assert "field 'body' must be a string, got number" in wrong
    extra = await fails("example_notes__add_note", title="x", body="y", colour="red")
    assert "unknown field 'colour'" in extra
    pattern = await fails("example_notes__add_note", title="../escape", body="y")
    assert "title" in pattern
    # A $ref'd property of the schema file is checked too.
    limit = await fails("example_notes__find_notes", text="x", limit=0)
    assert "limit" in limit
    assert not (jp_root_dir / "notes").exists()


@pytest.mark.parametrize("mcp_config", [{"plugin_timeout": 2.0}])
async def test_slow_tool_neither_blocks_the_server_nor_holds_the_client(call: Any, ok: Any) -> None:
    started = time.monotonic()
    slow = asyncio.ensure_future(call("example_notes__wait", seconds=10))
    # Wait until the plugin is running in its thread, then use the server meanwhile.
    for _ in range(200):
        if any(t.name == "jupyter_mcp-plugin-example.notes" for t in threading.enumerate()):
            break
        await asyncio.sleep(0.01)
    else:
        pytest.fail("the slow call never started")
    assert json.loads(await ok("example_notes__find_notes", text="x")) == []
    assert not slow.done()
    answer = await slow
    assert answer["status"] is None
    assert "did not finish within its time budget of 2 s" in answer["error"]
    # Released at the budget, long before the plugin's ten seconds.
    assert time.monotonic() - started < 9


async def test_exceptions_become_tool_errors(fails: Any) -> None:
    error = await fails("example_notes__fail", message="the database is on fire")
    assert error == "Plugin example.notes failed in fail: the database is on fire"
    not_text = await fails("objects__not_text")
    assert "returned int, not text" in not_text


async def test_clashing_names_are_withheld(
    jp_fetch: Any, ok: Any, fails: Any, caplog: pytest.LogCaptureFixture
) -> None:
    listed = await names(jp_fetch)
    assert "clash_a__same" not in listed
    # Their other tools, whose names do not clash, are there.
    assert await ok("clash_a__only_dot") == "dot"
    assert await ok("clash_a__only_under") == "under"
    assert "Unknown tool" in await fails("clash_a__same")


async def test_invalid_declarations_are_refused_and_the_rest_works(
    jp_fetch: Any, ok: Any, caplog: pytest.LogCaptureFixture, jp_serverapp: Any
) -> None:
    listed = await names(jp_fetch)
    assert [n for n in listed if n.startswith("bad_plugin__")] == ["bad_plugin__ok"]
    assert await ok("bad_plugin__ok", word="fine") == "FINE"
    assert not [n for n in listed if n.startswith(("no_call__", "broken_plugin__"))]
    assert not [n for n in listed if n.startswith("long_plugin_id")]
    # The other plugins and the built-in tools are there.
    assert "example_notes__find_notes" in listed
    assert "get_file_text_by_path" in listed


def test_invalid_declarations_are_logged_with_the_plugin_and_reason(
    plugin_paths: None, caplog: pytest.LogCaptureFixture
) -> None:
    from jupyter_mcp.core.registry import Registry
    from jupyter_mcp.plugins.host import load_plugins

    registry = Registry()
    with caplog.at_level(logging.INFO, logger="jupyter_mcp"):
        load_plugins(registry, log=logging.getLogger("jupyter_mcp"))
    text = log_text(caplog)
    for expected in (
        "plugin bad.plugin: declaration Bad-Name refused: tool name 'Bad-Name' does not match",
        "declaration long_description refused: tool long_description: description is 4097 bytes",
        "declaration empty_description refused: tool empty_description: description is 0 bytes",
        "declaration not_object refused: tool not_object: inputSchema must describe an object",
        "declaration remote_ref refused: tool remote_ref: inputSchema refers to "
        "'https://example.org/a.json'; only local references",
        "reference '#/$defs/x' does not resolve",
        "declaration not_a_schema refused: tool not_a_schema: inputSchema is not a valid JSON "
        "Schema",
        "declaration missing_file refused: tool missing_file: inputSchema file "
        "'schemas/nope.json' cannot be read",
        "inputSchema path '../outside.json' must be a relative path inside the package",
        "huge_schema: inputSchema is over 262144 bytes",
        "declaration no_read_only refused: tool no_read_only: 'readOnly' is required",
        "tool string_destructive: 'destructive' must be true or false",
        "tool string_task_support: 'taskSupport' must be true or false, got 'yes'",
        "plugin no.call refused: the plugin object has no call(tool, arguments, ctx) function",
        "plugin broken.plugin refused: cannot import mcp_test_plugins:missing_attribute",
        "plugin fails.to.start refused: cannot be set up: OSError: the licence server is down",
        "plugin strange: declaration #0 refused: KeyError",
        "plugin long_plugin_id_of_thirty_chars: declaration a_tool_name_of_exactly_forty_"
        "characters_ refused: registered name",
        "tool clash_a__same withheld: declared by more than one tool (plugins clash.a, clash_a)",
    ):
        assert expected in text, expected
    names_ = {tool.name for tool in registry.all()}
    assert "bad_plugin__ok" in names_ and "clash_a__same" not in names_
    assert "strange__fine" in names_
    # A plugin tool runs as a task only when it says so.
    tools = {tool.name: tool for tool in registry.all()}
    assert tools["objects__long_job"].task_support is True
    assert tools["objects__where"].task_support is False


@pytest.mark.parametrize("mcp_config", [{"read_only": True}])
async def test_read_only_mode_hides_plugin_tools_that_write(
    jp_fetch: Any, fails: Any, ok: Any, jp_root_dir: Path
) -> None:
    listed = await names(jp_fetch)
    assert "example_notes__find_notes" in listed
    assert "example_notes__add_note" not in listed
    assert "example_notes__delete_note" not in listed
    error = await fails("example_notes__add_note", title="x", body="y")
    assert "read-only" in error
    assert not (jp_root_dir / "notes").exists()
    assert await ok("example_notes__find_notes", text="x") == "[]"


async def test_disabling_a_plugin_at_runtime_withdraws_its_tools_at_once(
    jp_fetch: Any, fails: Any, ok: Any, mcp_app: Any
) -> None:
    assert "example_notes__find_notes" in await names(jp_fetch)
    mcp_app.disabled_plugins = ["example.notes"]
    listed = await names(jp_fetch)
    assert not [n for n in listed if n.startswith("example_notes__")]
    assert "bad_plugin__ok" in listed
    error = await fails("example_notes__find_notes", text="x")
    assert "plugin example.notes is disabled" in error
    mcp_app.disabled_plugins = []
    assert "example_notes__find_notes" in await names(jp_fetch)
    assert await ok("example_notes__find_notes", text="x") == "[]"


async def test_disabling_one_of_two_clashing_plugins_releases_the_name(
    jp_fetch: Any, ok: Any, mcp_app: Any
) -> None:
    mcp_app.disabled_plugins = ["clash.a"]
    assert "clash_a__same" in await names(jp_fetch)
    assert await ok("clash_a__same") == "under"
    mcp_app.disabled_plugins = []
    assert "clash_a__same" not in await names(jp_fetch)


@pytest.mark.parametrize("mcp_config", [{"disabled_plugins": ["example.notes"]}])
async def test_a_plugin_disabled_in_the_config_is_not_listed(jp_fetch: Any, mcp_app: Any) -> None:
    assert not [n for n in await names(jp_fetch) if n.startswith("example_notes__")]
    mcp_app.disabled_plugins = []
    assert "example_notes__wait" in await names(jp_fetch)


async def test_disabling_a_single_plugin_tool(jp_fetch: Any, fails: Any, mcp_app: Any) -> None:
    mcp_app.disabled_tools = ["example_notes__add_note"]
    listed = await names(jp_fetch)
    assert "example_notes__add_note" not in listed and "example_notes__find_notes" in listed
    assert "disabled" in await fails("example_notes__add_note", title="x", body="y")


async def test_destructive_tool_without_a_window_fails_and_does_nothing(
    fails: Any, ok: Any, jp_root_dir: Path
) -> None:
    await ok("example_notes__add_note", title="keep", body="precious")
    error = await fails("example_notes__delete_note", title="keep")
    assert "approval" in error and "no JupyterLab window" in error
    assert "nothing was done" in error
    assert (jp_root_dir / "notes" / "keep.md").read_text() == "precious"


async def test_destructive_tool_runs_only_when_approved(
    fails: Any, ok: Any, jp_root_dir: Path, mcp_app: Any
) -> None:
    await ok("example_notes__add_note", title="old", body="x")
    asked: list[tuple[str, dict[str, Any]]] = []
    answer = {"value": False}

    async def approver(tool: Any, arguments: dict[str, Any]) -> bool:
        asked.append((tool.name, arguments))
        return answer["value"]

    mcp_app.tool_context.services.approver = approver
    assert "did not approve" in await fails("example_notes__delete_note", title="old")
    assert (jp_root_dir / "notes" / "old.md").exists()
    answer["value"] = True
    assert await ok("example_notes__delete_note", title="old") == "Deleted notes/old.md"
    assert not (jp_root_dir / "notes" / "old.md").exists()
    assert asked == [("example_notes__delete_note", {"title": "old"})] * 2


async def test_size_limits_of_arguments_and_results(fails: Any, ok: Any, jp_root_dir: Path) -> None:
    body = "x" * MAX_ARGUMENT_BYTES
    error = await fails("example_notes__add_note", title="big", body=body)
    assert f"over the limit of {MAX_ARGUMENT_BYTES} bytes" in error
    assert not (jp_root_dir / "notes").exists()
    # Just under the limit is fine.
    await ok("example_notes__add_note", title="big", body="x" * (MAX_ARGUMENT_BYTES - 100))
    error = await fails("example_notes__repeat", text="y" * 1024, times=4 * 1024 + 1)
    assert f"over the limit of {MAX_RESULT_BYTES} bytes" in error
    result = await ok("example_notes__repeat", text="y" * 1024, times=4 * 1024 - 1)
    assert json.loads(result)["length"] == 1024 * (4 * 1024 - 1)


async def test_result_window_applies_to_plugin_results(ok: Any) -> None:
    window = await ok("example_notes__repeat", text="ab", times=10, resultStart=1, resultEnd=5)
    assert window == '"tex'


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_plugin_tools_on_standard_mcp(
    http_server: Any,
    http_server_port: tuple[Any, int],
    jp_base_url: str,
    jp_serverapp: Any,
    mode: str,
) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    token = jp_serverapp.identity_provider.token
    async with httpx2.AsyncClient(headers={"Authorization": f"token {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    break
            found = await client.call_tool("example_notes__find_notes", {"text": "x"})
            failed = await client.call_tool("example_notes__fail", {"message": "no luck"})
            invalid = await client.call_tool("example_notes__find_notes", {"text": 1})
    by_name = {tool.name: tool for tool in tools}
    delete = by_name["example_notes__delete_note"]
    assert delete.annotations.destructive_hint is True
    assert delete.annotations.read_only_hint is False
    assert "(from plugin example.notes)" in delete.description
    assert by_name["example_notes__find_notes"].annotations.read_only_hint is True
    assert by_name["example_notes__find_notes"].input_schema["$defs"]["limit"]["minimum"] == 1
    # Declared taskSupport: a 2025-11-25 client may run it as a task (2026-07-28 lists no
    # such field: the server decides).
    long_job = by_name["objects__long_job"].execution
    if mode == "legacy":
        assert long_job is not None and long_job.task_support == "optional"
    assert by_name["example_notes__find_notes"].execution is None
    if mode == "legacy":
        assert by_name["example_notes__wait"].execution.task_support == "optional"
    assert found.is_error is False and found.content[0].text == "[]"
    assert failed.is_error is True
    assert failed.content[0].text == "Plugin example.notes failed in fail: no luck"
    assert invalid.is_error is True and "'text' must be a string" in invalid.content[0].text


# --- the testing harness ---------------------------------------------------------------------


def test_harness_loads_by_entry_point_and_calls(plugin_paths: None, tmp_path: Path) -> None:
    harness = PluginHarness("example.notes", root_dir=tmp_path)
    assert "example_notes__find_notes" in harness.tools
    assert harness.call("add_note", {"title": "a", "body": "milk"}) == "Created notes/a.md"
    assert json.loads(harness.call("example_notes__find_notes", text="MILK"))[0]["line"] == 1
    with pytest.raises(ToolError, match="unknown field 'x'"):
        harness.call("find_notes", text="a", x=1)
    with pytest.raises(ToolError, match="failed in fail: oops"):
        harness.call("fail", message="oops")


def test_harness_applies_limits_budget_and_approval(plugin_paths: None, tmp_path: Path) -> None:
    harness = PluginHarness("example.notes", root_dir=tmp_path, timeout=0.3)
    with pytest.raises(ToolError, match="time budget of 0.3 s"):
        harness.call("wait", seconds=3)
    with pytest.raises(ToolError, match="over the limit of 4194304 bytes"):
        harness.call("repeat", text="z" * 4096, times=1025)
    with pytest.raises(ToolError, match="over the limit of 1048576 bytes"):
        harness.call("add_note", title="a", body="z" * MAX_ARGUMENT_BYTES)
    harness.call("add_note", title="a", body="b")
    with pytest.raises(ToolError, match="no JupyterLab window"):
        harness.call("delete_note", title="a")
    assert (tmp_path / "notes" / "a.md").exists()

    refusing = PluginHarness("example.notes", root_dir=tmp_path, approve=False)
    with pytest.raises(ToolError, match="did not approve"):
        refusing.call("delete_note", title="a")
    approving = PluginHarness("example.notes", root_dir=tmp_path, approve=True)
    assert approving.call("delete_note", title="a") == "Deleted notes/a.md"
    assert approving.approvals == [("example_notes__delete_note", {"title": "a"})]

    read_only = PluginHarness("example.notes", root_dir=tmp_path, read_only=True)
    assert "example_notes__add_note" not in read_only.tools
    with pytest.raises(ToolError, match="read-only"):
        read_only.call("add_note", title="c", body="d")


def test_harness_lists_notebooks_through_a_contents_manager(
    plugin_paths: None, tmp_path: Path
) -> None:
    (tmp_path / "n.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    harness = PluginHarness("example.notes", root_dir=tmp_path)
    assert harness.call("list_notebooks") == '["n.ipynb"]'


def test_harness_with_an_object_refuses_invalid_declarations(tmp_path: Path) -> None:
    class Notes:
        tools = [
            {
                "name": "shout",
                "description": "Upper-case a word.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"word": {"$ref": "#/$defs/word"}},
                    "required": ["word"],
                    "$defs": {"word": {"type": "string", "maxLength": 5}},
                },
                "readOnly": True,
                "destructive": False,
            },
            {"name": "broken", "description": "No flags.", "inputSchema": {"type": "object"}},
        ]

        def call(self, tool: str, arguments: dict[str, Any], ctx: Any) -> str:
            return arguments["word"].upper()

    with pytest.raises(PluginError, match="broken: tool broken: 'readOnly' is required"):
        PluginHarness(Notes(), plugin_id="acme.notes", root_dir=tmp_path)
    harness = PluginHarness(Notes(), plugin_id="acme.notes", root_dir=tmp_path, strict=False)
    assert harness.tools == ["acme_notes__shout"]
    assert list(harness.refused) == ["broken"]
    assert harness.call("shout", word="hey") == "HEY"
    with pytest.raises(ToolError, match="word"):
        harness.call("shout", word="toolong")
    assert harness.listing()[0]["description"] == "Upper-case a word. (from plugin acme.notes)"
    # Calls one after the other reuse the plugin's worker thread.
    for word in ("a", "b", "c", "d", "e", "f"):
        assert harness.call("shout", word=word) == word.upper()
    workers = [t for t in threading.enumerate() if t.name == "jupyter_mcp-plugin-acme.notes"]
    assert len(workers) == 1


async def test_harness_in_async_tests_and_overdue_calls(plugin_paths: None, tmp_path: Path) -> None:
    harness = PluginHarness("example.notes", root_dir=tmp_path, timeout=0.2)
    with pytest.raises(RuntimeError, match="acall"):
        harness.call("find_notes", text="x")
    assert await harness.acall("find_notes", text="x") == "[]"
    # Calls stuck past their budget are counted; beyond a few, new calls are refused at once.
    results = await asyncio.gather(
        *(harness.acall("wait", seconds=3) for _ in range(MAX_OVERDUE_CALLS)),
        return_exceptions=True,
    )
    assert all(isinstance(r, ToolError) for r in results)
    with pytest.raises(ToolError, match="still running past their time budget"):
        await harness.acall("find_notes", text="x")


# --- the seed port-range listener ------------------------------------------------------------


def test_port_range_setting() -> None:
    assert parse_port_range(False) is None
    assert parse_port_range("") is None
    assert parse_port_range(True) == DEFAULT_RANGE == (9960, 9990)
    assert parse_port_range("on") == DEFAULT_RANGE
    assert parse_port_range("9000-9010") == (9000, 9010)
    assert parse_port_range("9000") == (9000, 9000)
    for bad in ("9010-9000", "abc", "0-5", "70000"):
        with pytest.raises(ValueError):
            parse_port_range(bad)


def test_bad_settings_are_refused_when_configured() -> None:
    from traitlets import TraitError

    from jupyter_mcp.app import JupyterMCP

    with pytest.raises(TraitError, match="not 'FIRST-LAST'"):
        JupyterMCP(port_range="ninety")
    with pytest.raises(TraitError):
        JupyterMCP(plugin_timeout=0)
    assert JupyterMCP(port_range=True).port_range is True


def _free_range(size: int) -> int:
    """The first port of ``size`` consecutive ports that are free now."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        if first + size > 65535:
            continue
        try:
            for port in range(first, first + size):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError("no free port range")


@pytest.fixture
def occupied_range() -> Any:
    """A small range whose first port is taken by another program."""
    first = _free_range(5)
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", first))
    blocker.listen()
    yield first, first + 4
    blocker.close()


async def _scan(first: int, last: int, path: str, headers: dict[str, str]) -> dict[int, Any]:
    client = AsyncHTTPClient()
    found: dict[int, Any] = {}
    for port in range(first, last + 1):
        try:
            response = await client.fetch(
                f"http://127.0.0.1:{port}{path}",
                headers=headers,
                raise_error=False,
                request_timeout=2,
            )
        except (OSError, HTTPClientError):  # closed, or a program that never answers
            continue
        found[port] = response
    return found


async def test_seed_port_listener_is_found_by_scanning(
    occupied_range: tuple[int, int],
    jp_configurable_serverapp: Any,
    plugin_paths: None,
    jp_base_url: str,
) -> None:
    first, last = occupied_range
    # The extension logs through its own "JupyterMCP" logger, whose handlers the app's logging
    # configuration replaces while the server starts: record what it is asked to log instead.
    logger = logging.getLogger("JupyterMCP")
    logged: list[str] = []
    info = logger.info

    def recording_info(msg: str, *args: Any, **kwargs: Any) -> None:
        logged.append(msg % args)
        info(msg, *args, **kwargs)

    logger.info = recording_info  # type: ignore[method-assign]
    try:
        serverapp = jp_configurable_serverapp(
            config={
                "ServerApp": {
                    "jpserver_extensions": {"jupyter_mcp": True},
                    "allow_unauthenticated_access": False,
                },
                "JupyterMCP": {"port_range": f"{first}-{last}"},
            }
        )
    finally:
        del logger.info
    app = serverapp.extension_manager.extension_apps["jupyter_mcp"].copy().pop()
    token = serverapp.identity_provider.token
    auth = {"Authorization": f"token {token}"}
    try:
        answers = await _scan(first, last, f"{jp_base_url}mcp/status", auth)
        running = {
            port: json.loads(r.body)["result"]
            for port, r in answers.items()
            if r.code == 200 and r.body.startswith(b"{")
        }
        assert len(running) == 1, answers
        port, status = next(iter(running.items()))
        assert status["status"] == "running"
        assert status["seedPort"] == port
        # The first free port: the taken first port was skipped, and nothing below it was free.
        assert first < port <= last
        for below in range(first + 1, port):
            with pytest.raises(OSError), socket.socket() as s:
                s.bind(("127.0.0.1", below))
        # Loopback only.
        sockets = app.tool_context.services.seed_port._server._sockets.values()
        assert {s.getsockname()[0] for s in sockets} == {"127.0.0.1"}
        assert any(f"seed port {port} listening at http://127.0.0.1:{port}/" in m for m in logged)
        # The same handlers and auth: tools answer with a token, and nothing without one.
        client = AsyncHTTPClient()
        listed = await client.fetch(
            f"http://127.0.0.1:{port}{jp_base_url}mcp/list_tools", headers=auth
        )
        assert "example_notes__find_notes" in [t["name"] for t in json.loads(listed.body)]
        anonymous = await client.fetch(
            f"http://127.0.0.1:{port}{jp_base_url}mcp/list_tools", raise_error=False
        )
        assert anonymous.code in (401, 403)
        called = await client.fetch(
            f"http://127.0.0.1:{port}{jp_base_url}mcp/example_notes__repeat",
            method="POST",
            headers=auth,
            body=json.dumps({"text": "ab", "times": 2}),
        )
        assert json.loads(json.loads(called.body)["status"]) == {"text": "abab", "length": 4}
    finally:
        await app.stop_extension()
    # Stopped with the extension: nothing listens there any more.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


async def test_seed_port_is_off_by_default(mcp_app: Any, jp_fetch: Any) -> None:
    assert mcp_app.tool_context.services.seed_port is None
    response = await jp_fetch("mcp", "status", method="GET")
    assert "seedPort" not in json.loads(response.body)["result"]
