"""The example plugin's own tests: its tools called through jupyter_mcp.testing, no server.

Run them after installing the plugin (``pip install -e .`` in this folder) with ``pytest tests``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_mcp.testing import PluginHarness, ToolError


@pytest.fixture
def notes(tmp_path: Path) -> PluginHarness:
    """The installed plugin, found by its entry point name, on an empty project."""
    return PluginHarness("example.notes", root_dir=tmp_path)


def test_add_then_find(notes: PluginHarness, tmp_path: Path) -> None:
    assert notes.call("add_note", title="shopping", body="Milk\nBread\n") == (
        "Created notes/shopping.md"
    )
    assert (tmp_path / "notes" / "shopping.md").read_text() == "Milk\nBread\n"
    found = json.loads(notes.call("find_notes", text="bread"))
    assert found == [{"path": "notes/shopping.md", "line": 2, "text": "Bread"}]


def test_schema_is_enforced(notes: PluginHarness) -> None:
    with pytest.raises(ToolError, match="missing required field 'text'"):
        notes.call("find_notes")
    with pytest.raises(ToolError, match="unknown field 'colour'"):
        notes.call("add_note", title="a", body="b", colour="red")


def test_delete_asks_first(tmp_path: Path) -> None:
    PluginHarness("example.notes", root_dir=tmp_path).call("add_note", title="a", body="b")
    with pytest.raises(ToolError, match="did not approve"):
        PluginHarness("example.notes", root_dir=tmp_path, approve=False).call(
            "delete_note", title="a"
        )
    approving = PluginHarness("example.notes", root_dir=tmp_path, approve=True)
    assert approving.call("delete_note", title="a") == "Deleted notes/a.md"


def test_slow_calls_stop_at_the_budget(tmp_path: Path) -> None:
    quick = PluginHarness("example.notes", root_dir=tmp_path, timeout=0.2)
    with pytest.raises(ToolError, match="time budget"):
        quick.call("wait", seconds=2)
