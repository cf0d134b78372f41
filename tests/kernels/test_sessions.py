"""A notebook's kernel is its jupyter_server session's kernel, started once when missing."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.kernels.sessions import find_notebook_kernel, notebook_kernel


def _notebook(root: Path, name: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(), path)
    return path


async def test_a_notebook_without_a_session_gets_one_and_keeps_it(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    ctx = ToolContext(root_dir=jp_root_dir, serverapp=jp_serverapp)
    path = _notebook(jp_root_dir, "sub/a.ipynb")
    assert await find_notebook_kernel(ctx, path) is None
    # Two first calls at once start one kernel, not two.
    first, second = await asyncio.gather(notebook_kernel(ctx, path), notebook_kernel(ctx, path))
    try:
        assert first == second
        assert first.api_path == "sub/a.ipynb"
        sessions = await jp_serverapp.session_manager.list_sessions()
        assert [(s["path"], s["type"], s["kernel"]["id"]) for s in sessions] == [
            ("sub/a.ipynb", "notebook", first.kernel_id)
        ]
        assert list(jp_serverapp.kernel_manager.list_kernel_ids()) == [first.kernel_id]
        assert await find_notebook_kernel(ctx, path) == first
    finally:
        await jp_serverapp.session_manager.delete_session(first.session_id)


async def test_an_unknown_kernel_name_is_refused_with_the_known_ones(
    jp_serverapp: Any, jp_root_dir: Path
) -> None:
    ctx = ToolContext(root_dir=jp_root_dir, serverapp=jp_serverapp)
    path = _notebook(jp_root_dir, "b.ipynb")
    with pytest.raises(ToolError, match="No kernel named 'nope'.*python3"):
        await notebook_kernel(ctx, path, kernel_name="nope")
    assert await jp_serverapp.session_manager.list_sessions() == []


def test_without_a_server_it_says_so(tmp_path: Path) -> None:
    ctx = ToolContext(root_dir=tmp_path)
    with pytest.raises(ToolError, match="need a Jupyter server"):
        asyncio.run(find_notebook_kernel(ctx, _notebook(tmp_path, "c.ipynb")))
