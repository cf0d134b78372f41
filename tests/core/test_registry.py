"""The registry without a server: validation, policies, approval, windows, threads."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from jupyter_mcp.core.context import Settings, ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.core.registry import Registry, ToolSet, current_call_id
from jupyter_mcp.core.toolsets import TOOLSETS, parse_toolsets, request_toolsets
from jupyter_mcp.services import build_services


def make_registry() -> tuple[Registry, dict[str, object]]:
    seen: dict[str, object] = {}
    tools = ToolSet("files")

    @tools.tool(
        "echo",
        "Echo the text.",
        {"text": {"type": "string"}, "times": {"type": "integer", "minimum": 1}},
        required=["text"],
        read_only=True,
    )
    def echo(ctx: ToolContext, text: str, times: int = 1) -> str:
        seen["thread"] = threading.current_thread().name
        return text * times

    @tools.tool("shout", "Write something.", {"mode": {"type": "string", "enum": ["a", "b"]}})
    async def shout(ctx: ToolContext, mode: str = "a") -> dict[str, str]:
        seen["loop"] = asyncio.get_running_loop()
        return {"mode": mode}

    @tools.tool("merge", "Needs approval.", needs_approval=True, destructive=True)
    def merge(ctx: ToolContext) -> str:
        seen["merged"] = True
        return "merged"

    return Registry(tools), seen


@pytest.fixture
def ctx(tmp_path) -> ToolContext:
    # Services (which start nothing until used) hold the approver of destructive calls.
    context = ToolContext(root_dir=tmp_path)
    context.services = build_services(context)
    return context


def run(coro):
    return asyncio.run(coro)


def test_sync_tools_run_in_a_worker_thread(ctx):
    registry, seen = make_registry()
    result = run(registry.call("echo", {"text": "ab", "times": 2}, ctx))
    assert result.value == "abab"
    assert seen["thread"] != threading.main_thread().name


def test_async_tools_run_on_the_loop(ctx):
    registry, seen = make_registry()
    assert run(registry.call("shout", {"mode": "b"}, ctx)).value == {"mode": "b"}
    assert "loop" in seen


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Invalid arguments for echo: missing required field 'text'"),
        ({"text": 1}, "field 'text' must be a string, got number"),
        ({"text": "a", "times": 0}, "field 'times'"),
        ({"text": "a", "times": True}, "field 'times' must be an integer, got boolean"),
        ({"text": "a", "extra": 1}, "unknown field 'extra'"),
        ([1], "expected a JSON object, got array"),
    ],
)
def test_validation_errors_name_the_field(ctx, arguments, message):
    registry, _ = make_registry()
    with pytest.raises(ToolError) as e:
        run(registry.call("echo", arguments, ctx))
    assert message in str(e.value)


def test_enum_error_lists_options(ctx):
    registry, _ = make_registry()
    with pytest.raises(ToolError, match='must be one of "a", "b"'):
        run(registry.call("shout", {"mode": "c"}, ctx))


def test_approval_without_a_window_fails_and_does_nothing(ctx):
    registry, seen = make_registry()
    with pytest.raises(ToolError, match="no JupyterLab window"):
        run(registry.call("merge", {}, ctx))
    assert "merged" not in seen


@pytest.mark.parametrize(("answer", "ran"), [(True, True), (False, False)])
def test_approval_answer_decides(ctx, answer, ran):
    registry, seen = make_registry()

    async def approver(tool, arguments):
        return answer

    ctx.services.approver = approver
    if ran:
        assert run(registry.call("merge", {}, ctx)).value == "merged"
    else:
        with pytest.raises(ToolError, match="did not approve"):
            run(registry.call("merge", {}, ctx))
    assert ("merged" in seen) is ran


def test_read_only_and_disabled_policies(ctx):
    registry, _ = make_registry()
    ctx.settings = Settings(read_only=True)
    assert [t.name for t in registry.visible(ctx)] == ["echo"]
    with pytest.raises(ToolError, match="read-only mode"):
        run(registry.call("shout", {}, ctx))
    ctx.settings = Settings(disabled_tools=frozenset({"echo"}))
    assert [t.name for t in registry.visible(ctx)] == ["shout", "merge"]
    with pytest.raises(ToolError, match="disabled"):
        run(registry.call("echo", {"text": "x"}, ctx))


def test_window_always_applies_when_asked_by_the_surface(ctx):
    registry, _ = make_registry()
    result = run(registry.call("echo", {"text": "x", "times": 20000}, ctx, always_window=True))
    assert result.text == "x" * 8000
    assert result.total_length == 20000 and result.more
    last = run(registry.call("echo", {"text": "x", "times": 20000, "resultStart": 16000}, ctx))
    assert last.text == "x" * 4000 and not last.more


def test_annotations_spell_out_every_hint():
    registry, _ = make_registry()
    merge = next(t for t in registry.all() if t.name == "merge")
    assert merge.annotations == {
        "title": "Merge",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }


def test_tool_names_are_unique():
    registry, _ = make_registry()
    with pytest.raises(ValueError):
        registry.add(registry.all()[0])


def test_unexpected_exceptions_become_tool_errors(ctx):
    tools = ToolSet("files")

    @tools.tool("broken", "Always raises.")
    def broken(ctx: ToolContext) -> str:
        raise KeyError("boom")

    with pytest.raises(ToolError, match="broken failed unexpectedly: KeyError"):
        run(Registry(tools).call("broken", {}, ctx))


def test_writing_tools_are_destructive_unless_they_only_add():
    from jupyter_mcp.tools import builtin_tools

    hints = {t.name: t.annotations["destructiveHint"] for t in builtin_tools()}
    for name in (
        "rewrite_file_content",
        "replace_specific_text",
        "run_command_on_background",
        "execute_terminal_command",
        "pull_changes",
        "switch_branch",
    ):
        assert hints[name] is True, name
    for name in (
        "create_new_file_with_text",
        "append_file_content",
        "commit_changes",
        "get_file_text_by_path",
        "toggle_debugger_breakpoint",
    ):
        assert hints[name] is False, name


def test_every_setting_is_a_trait_and_reaches_the_snapshot():
    from dataclasses import fields

    from jupyter_mcp.app import JupyterMCP

    app = JupyterMCP()
    for f in fields(Settings):
        assert app.has_trait(f.name), f.name
    app.disabled_tools = ["wait"]
    app.action_approval_patterns = ["x:*"]
    app.code_timeout = 3.0
    snapshot = app.settings_snapshot()
    assert snapshot.disabled_tools == frozenset({"wait"})
    assert snapshot.action_approval_patterns == ("x:*",)
    assert snapshot.code_timeout == 3.0


def test_the_settings_defaults_are_the_traits_defaults():
    from jupyter_mcp.app import JupyterMCP

    # A fresh app's snapshot is exactly Settings(): a default changed in one place only would
    # show here.
    assert JupyterMCP().settings_snapshot() == Settings()


def test_pictures_go_with_the_value_and_with_the_first_window_only(ctx):
    from jupyter_mcp.core.registry import Image, WithImages
    from jupyter_mcp.surfaces.mcp import call_tool_result

    tools = ToolSet("files")
    picture = Image(mime_type="image/png", data="iVBORw0K")

    @tools.tool("plot", "Draw.", read_only=True)
    def plot(ctx: ToolContext) -> WithImages:
        return WithImages({"text": "x" * 50}, [picture])

    registry = Registry(tools)
    whole = asyncio.run(registry.call("plot", {}, ctx))
    assert whole.value == {"text": "x" * 50} and whole.images == [picture]
    first = asyncio.run(registry.call("plot", {"resultStart": 0, "resultEnd": 20}, ctx))
    rest = asyncio.run(registry.call("plot", {"resultStart": 20}, ctx))
    assert first.images == [picture] and rest.images == []
    blocks = call_tool_result(whole, "2025-06-18")["content"]
    assert [b["type"] for b in blocks] == ["text", "image"]
    assert blocks[1] == {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"}


def test_a_tool_set_name_must_be_known():
    with pytest.raises(ValueError, match="Unknown tool set 'notebook'; the tool sets are files,"):
        ToolSet("notebook")


def test_each_builtin_module_declares_its_tools_set():
    from importlib import import_module

    from jupyter_mcp.tools import TOOL_MODULES

    for module in TOOL_MODULES:
        declared = import_module(f"jupyter_mcp.tools.{module}").tools
        assert declared.name in TOOLSETS and declared.tools, module
        assert {tool.toolset for tool in declared} == {declared.name}, module


def test_parse_toolsets_names_what_is_wrong():
    assert parse_toolsets("files, git  search") == frozenset({"files", "git", "search"})
    with pytest.raises(ToolError, match="^toolsets names no tool set; choose from files, editor"):
        parse_toolsets(" , ")
    with pytest.raises(ToolError, match="^Unknown tool sets 'gti', 'x' in toolsets"):
        parse_toolsets("gti,files,x")
    assert request_toolsets(None, None) is None
    assert request_toolsets("files,git", "git,search") == frozenset({"git"})


def test_server_and_connection_tool_sets_hide_and_refuse(ctx):
    registry, _ = make_registry()
    git = ToolSet("git")

    @git.tool("status", "Git status.", read_only=True)
    def status(ctx: ToolContext) -> str:
        return "clean"

    for tool in git:
        registry.add(tool)
    files_only = frozenset({"files"})
    assert [t.name for t in registry.visible(ctx, files_only)] == ["echo", "shout", "merge"]
    with pytest.raises(ToolError) as refused:
        run(registry.call("status", {}, ctx, toolsets=files_only))
    assert str(refused.value) == (
        "Tool status is not available on this connection: its tool set git is not among the "
        "chosen toolsets (files)"
    )
    assert run(registry.call("status", {}, ctx, toolsets=frozenset({"git"}))).value == "clean"

    ctx.settings = Settings(toolsets=frozenset({"git"}))
    assert [t.name for t in registry.visible(ctx)] == ["status"]
    assert registry.visible(ctx, files_only) == []
    with pytest.raises(ToolError, match="echo is disabled on this server .its tool set files"):
        run(registry.call("echo", {"text": "a"}, ctx))


def test_start_and_end_of_a_call_share_its_id(ctx):
    registry, _ = make_registry()
    events: list[tuple[object, ...]] = []
    registry.start_observers.append(lambda call_id, name, args: events.append(("start", call_id)))
    registry.observers.append(
        lambda name, args, ok, error, ms: events.append(("end", current_call_id.get(), ok))
    )
    run(registry.call("echo", {"text": "a"}, ctx))
    with pytest.raises(ToolError):
        run(registry.call("no_such_tool", {}, ctx))

    assert events == [("start", 1), ("end", 1, True), ("start", 2), ("end", 2, False)]
    assert current_call_id.get() is None  # outside a call


def _versioned_registry() -> tuple[Registry, dict[str, int]]:
    """A read-only tool over a ``state`` whose version says when it changed."""
    state = {"version": 1, "computed": 0}
    tools = ToolSet("files")

    async def version(ctx: ToolContext, arguments: dict[str, object]) -> int:
        return state["version"]

    @tools.tool(
        "long",
        "A long answer.",
        {"n": {"type": "integer"}},
        read_only=True,
        result_version=version,
    )
    def long(ctx: ToolContext, n: int = 0) -> dict[str, object]:
        state["computed"] += 1
        return {"version": state["version"], "n": n, "text": "v" * 100}

    return Registry(tools), state


def _page(registry: Registry, ctx: ToolContext, caller: object, start: int, **args: object):
    window = {"resultStart": start, "resultEnd": start + 40}
    return asyncio.run(
        registry.call("long", {**args, **window}, ctx, always_window=True, caller=caller)
    )


def test_later_windows_are_cut_from_the_first_while_unchanged(ctx):
    registry, state = _versioned_registry()
    texts, start = [], 0
    while True:
        result = _page(registry, ctx, "me", start)
        texts.append(result.text)
        start += len(result.text)
        if not result.more:
            break
    assert len(texts) > 2 and state["computed"] == 1  # the first window computed it, once
    assert json.loads("".join(texts))["version"] == 1
    # The first window is always computed afresh; other arguments are another answer.
    _page(registry, ctx, "me", 0)
    _page(registry, ctx, "me", 40, n=2)
    assert state["computed"] == 3
    # Without a caller (a surface that cannot say who pages) nothing is reused.
    for _ in range(2):
        asyncio.run(registry.call("long", {"resultStart": 40}, ctx, always_window=True))
    assert state["computed"] == 5


def test_a_change_between_windows_is_said_never_answered_from_the_old_text(ctx):
    registry, state = _versioned_registry()
    first = _page(registry, ctx, "me", 0)
    other = _page(registry, ctx, "someone else", 0)
    state["version"] = 2
    with pytest.raises(ToolError, match="changed since its first window.*resultStart 0"):
        _page(registry, ctx, "me", len(first.text))
    with pytest.raises(ToolError, match="changed since its first window"):
        _page(registry, ctx, "someone else", len(other.text))
    # Going on anyway is refused once only: the window is then one of the new answer.
    computed = state["computed"]
    new = json.dumps({"version": 2, "n": 0, "text": "v" * 100}, ensure_ascii=False)
    assert _page(registry, ctx, "me", 40).text == new[40:80]
    assert state["computed"] == computed + 1
    texts, start = [], 0
    while True:
        result = _page(registry, ctx, "me", start)
        texts.append(result.text)
        start += len(result.text)
        if not result.more:
            break
    assert json.loads("".join(texts))["version"] == 2


def test_reading_on_never_runs_a_tool_without_a_version_again(ctx):
    """A long answer of a tool that does things (runs cells, commands) is read in windows from
    its first run: the later windows neither run it again nor show another answer."""
    runs = {"count": 0}
    tools = ToolSet("files")

    @tools.tool("run", "Does something, answers long.", {})
    def run_it(ctx: ToolContext) -> dict[str, object]:
        runs["count"] += 1
        return {"run": runs["count"], "text": "r" * 100}

    registry = Registry(tools)

    def page(caller: object, start: int):
        window = {"resultStart": start, "resultEnd": start + 40}
        return asyncio.run(registry.call("run", window, ctx, always_window=True, caller=caller))

    texts, start = [], 0
    while True:
        result = page("me", start)
        texts.append(result.text)
        start += len(result.text)
        if not result.more:
            break
    assert len(texts) > 2 and runs["count"] == 1
    assert json.loads("".join(texts))["run"] == 1
    # A new first window is a new run; without a caller every window runs it (nothing to key).
    page("me", 0)
    assert runs["count"] == 2
    asyncio.run(registry.call("run", {"resultStart": 40}, ctx, always_window=True))
    assert runs["count"] == 3
    # A short answer is not kept.
    assert not registry.windows._texts or all(
        len(text) > 40 for _, text, _ in registry.windows._texts.values()
    )


def test_the_window_cache_is_bounded():
    from jupyter_mcp.core.registry import ResultWindows

    windows = ResultWindows(entries=2, chars=10)
    windows.put("a", 1, "aaaa", None)
    windows.put("b", 1, "bbbb", None)
    assert windows.get("a") is not None  # a is now the most recently used
    windows.put("c", 1, "cccc", None)
    assert windows.get("b") is None and windows.get("a") is not None
    windows.put("d", 1, "dddddddd", None)  # over the characters: the oldest go
    assert windows.get("a") is None and windows.get("c") is None and windows.get("d")
    windows.put("e", 1, "e" * 11, None)  # larger than the whole cache: not kept
    assert windows.get("e") is None
