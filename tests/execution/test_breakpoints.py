"""Breakpoint tools through a real Jupyter server; persistence through a second store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.execution.breakpoints import BreakpointStore


@pytest.fixture
def breakpoints_file(tmp_path: Path) -> Path:
    return tmp_path / "data" / "breakpoints.json"


@pytest.fixture
def jp_server_config(jp_server_config: dict[str, Any], breakpoints_file: Path) -> dict[str, Any]:
    return {**jp_server_config, "JupyterMCP": {"breakpoints_file": str(breakpoints_file)}}


@pytest.fixture
def source(jp_root_dir: Path) -> Path:
    path = jp_root_dir / "src" / "helper.py"
    path.parent.mkdir()
    path.write_text("def helper():\n    x = 1\n    return x\n")
    return path


async def test_toggle_adds_then_removes(ok: Any, source: Path, breakpoints_file: Path) -> None:
    assert await ok("get_debugger_breakpoints") == []
    assert await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=2) == (
        "Breakpoint added"
    )
    assert await ok("toggle_debugger_breakpoint", pathInProject=str(source), line=3) == (
        "Breakpoint added"
    )
    expected = [
        {"path": str(source.resolve()), "line": 2},
        {"path": str(source.resolve()), "line": 3},
    ]
    assert await ok("get_debugger_breakpoints") == expected
    assert await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=2) == (
        "Breakpoint removed"
    )
    assert await ok("get_debugger_breakpoints") == expected[1:]
    # Written to the configured file, keyed by the project root.
    stored = json.loads(breakpoints_file.read_text())
    assert list(stored.values()) == [expected[1:]]


async def test_validation(fails: Any, ok: Any, source: Path, jp_root_dir: Path) -> None:
    assert "File not found: src/missing.py" in await fails(
        "toggle_debugger_breakpoint", pathInProject="src/missing.py", line=1
    )
    assert "Line 4 is out of range: src/helper.py has 3 lines" in await fails(
        "toggle_debugger_breakpoint", pathInProject="src/helper.py", line=4
    )
    assert "minimum" in await fails(
        "toggle_debugger_breakpoint", pathInProject="src/helper.py", line=0
    )
    assert "outside the project root" in await fails(
        "toggle_debugger_breakpoint", pathInProject="../elsewhere.py", line=1
    )
    assert "directory" in await fails("toggle_debugger_breakpoint", pathInProject="src", line=1)
    (jp_root_dir / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert "binary" in await fails("toggle_debugger_breakpoint", pathInProject="blob.bin", line=1)
    assert await ok("get_debugger_breakpoints") == []


async def test_breakpoint_on_a_removed_line_can_still_be_removed(ok: Any, source: Path) -> None:
    await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=3)
    source.write_text("x = 1\n")
    assert await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=3) == (
        "Breakpoint removed"
    )


async def test_notebook_lines_are_lines_of_the_text_view(
    ok: Any, fails: Any, jp_root_dir: Path
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("a = 1\nb = 2"),
        nbformat.v4.new_code_cell("print(a + b)"),
    ]
    (jp_root_dir / "nb.ipynb").write_text(nbformat.writes(nb))
    view = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]
    lines = view.splitlines()
    target = lines.index("print(a + b)") + 1
    assert await ok("toggle_debugger_breakpoint", pathInProject="nb.ipynb", line=target) == (
        "Breakpoint added"
    )
    assert "out of range" in await fails(
        "toggle_debugger_breakpoint", pathInProject="nb.ipynb", line=len(lines) + 1
    )


async def test_persisted_across_restarts(
    ok: Any, source: Path, jp_root_dir: Path, breakpoints_file: Path
) -> None:
    await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=1)
    # A new store (as a restarted server builds) reads the same breakpoints back.
    again = BreakpointStore(jp_root_dir, breakpoints_file)
    assert again.list() == [{"path": str(source.resolve()), "line": 1}]
    # Another project's breakpoints in the same file are left alone.
    other = BreakpointStore(jp_root_dir / "src", breakpoints_file)
    other.toggle(source.resolve(), 2)
    assert again.list() == [{"path": str(source.resolve()), "line": 1}]
    await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=1)
    assert BreakpointStore(jp_root_dir / "src", breakpoints_file).list() == [
        {"path": str(source.resolve()), "line": 2}
    ]
    assert BreakpointStore(jp_root_dir, breakpoints_file).list() == []


async def test_listeners_hear_changes(ok: Any, source: Path, mcp_app: Any) -> None:
    store = mcp_app.tool_context.services.breakpoints
    heard: list[dict[str, Any]] = []
    unsubscribe = store.subscribe(heard.append)
    await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=2)
    await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=2)
    unsubscribe()
    await ok("toggle_debugger_breakpoint", pathInProject="src/helper.py", line=1)
    path = str(source.resolve())
    assert heard == [
        {"action": "added", "path": path, "line": 2},
        {"action": "removed", "path": path, "line": 2},
    ]


def test_unreadable_file_is_ignored(tmp_path: Path) -> None:
    file = tmp_path / "bp.json"
    file.write_text("{not json")
    store = BreakpointStore(tmp_path, file)
    assert store.list() == []
    target = tmp_path / "a.py"
    target.write_text("x\n")
    assert store.toggle(target, 1) is True
    assert json.loads(file.read_text()) == {
        str(tmp_path.resolve()): [{"path": str(target), "line": 1}]
    }
