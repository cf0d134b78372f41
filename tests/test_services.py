"""The services of a tool context: built once for a folder or a server, closed once."""

from __future__ import annotations

import ast
import json
import logging
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

import jupyter_mcp
from jupyter_mcp.core.context import Services, ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.lab.editor import EditorBridge
from jupyter_mcp.search.engine import LocalSearch
from jupyter_mcp.services import build_services
from jupyter_mcp.tools.code import get_symbols_in_file
from jupyter_mcp.tools.search import search_in_files_content


def test_a_context_without_services_says_how_to_get_them(tmp_path: Path) -> None:
    ctx = ToolContext(root_dir=tmp_path)
    with pytest.raises(RuntimeError, match=r"'breakpoints'.*build_services\(ctx\)"):
        ctx.services.breakpoints  # noqa: B018


def test_services_of_a_folder_start_nothing_until_used(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    ctx = ToolContext(root_dir=tmp_path)
    ctx.services = services = build_services(ctx, breakpoints_file=tmp_path / "bp.json")
    # Given services of a bare folder: no search backend, no code worker, nothing of a server
    assert services.search.current is None and services.code.current is None
    assert services.editor is None and services.seed_port is None
    assert services.mcp_surface is None and services.contents_manager is None
    assert services.breakpoints.file == tmp_path / "bp.json"
    try:
        # When searching, the folder is searched in-process
        found = search_in_files_content(ctx, searchText="needle")
        assert [entry["path"] for entry in found] == ["a.txt"]
        assert isinstance(services.search.current, LocalSearch)
    finally:
        services.search.close()
    assert services.search.current is None


async def test_closing_stops_every_service_even_when_one_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ctx = ToolContext(root_dir=tmp_path)
    ctx.services = services = build_services(ctx, breakpoints_file=tmp_path / "bp.json")
    stopped: list[str] = []

    async def failing() -> None:
        raise OSError("no such kernel")

    async def terminal() -> None:
        stopped.append("terminal")

    services.runs.shutdown = failing  # type: ignore[method-assign]
    services.terminal.shutdown = terminal  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR):
        await services.aclose(logging.getLogger("test_services"))
    # The failure is logged, the services after it are stopped all the same
    assert "Stopping runs failed" in caplog.text
    assert stopped == ["terminal"]
    # And the code service stays shut: no worker is started after the server stopped
    (tmp_path / "m.py").write_text("def f():\n    pass\n")
    with pytest.raises(ToolError, match="shut down"):
        get_symbols_in_file(ctx, pathInProject="m.py")


def test_a_server_searches_in_a_worker(mcp_app: Any) -> None:
    services = mcp_app.tool_context.services
    assert services.search.in_worker is True
    assert services.mcp_surface is not None
    assert services.contents_manager is mcp_app.serverapp.contents_manager


async def test_a_server_has_one_editor_link_for_windows_tools_and_file_hooks(
    mcp_app: Any, jp_ws_fetch: Any
) -> None:
    services = mcp_app.tool_context.services
    editor = services.editor
    assert isinstance(editor, EditorBridge)
    # The file tools' write hooks call the editor link's first (it may refuse a write), then
    # the write log's (who wrote what, for resource subscriptions); the approver is the link's
    assert services.before_file_write.hooks == (editor.before_file_write, services.writes.writing)
    assert services.on_file_written.hooks == (editor.on_file_written, services.writes.written)
    assert services.approver == editor.approve
    # And a window that opens the lab socket is a window of that same link
    ws = await jp_ws_fetch("mcp", "bridge", params={"window": "w1"})
    try:
        assert json.loads(await ws.read_message())["type"] == "welcome"
        assert [window.id for window in editor.windows()] == ["w1"]
    finally:
        ws.close()


def test_no_module_but_the_app_sets_a_field_of_services() -> None:
    # One place assembles the services: any other module that sets a field (``x.services.f =``
    # or ``services.f =``) would be a second, hidden one.
    package = Path(jupyter_mcp.__file__).parent
    names = {f.name for f in fields(Services)}
    setters = []
    for module in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(), str(module))):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for target in targets:
                if not isinstance(target, ast.Attribute) or target.attr not in names:
                    continue
                owner = target.value
                owner_name = owner.attr if isinstance(owner, ast.Attribute) else None
                if isinstance(owner, ast.Name):
                    owner_name = owner.id
                if owner_name == "services":
                    setters.append(f"{module.relative_to(package)}:{node.lineno}")
    assert setters, "the check finds nothing: it no longer sees the app's assignments"
    assert {where.split(":")[0] for where in setters} == {"app.py"}, setters
