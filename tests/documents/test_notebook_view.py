"""The notebook view's one cache, its cell markers, and the facts every module asks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from jupyter_mcp.documents import notebook_view
from jupyter_mcp.documents.facts import is_notebook, looks_binary, stamp_of
from jupyter_mcp.documents.notebook_view import view_of, view_of_notebook


def _notebook(source: str) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    nb.cells = [nbformat.v4.new_code_cell(source)]
    return nbformat.writes(nb)


def test_a_file_view_is_rendered_once_per_stamp(tmp_path: Path) -> None:
    path = tmp_path / "a.ipynb"
    path.write_text(_notebook("x = 1"))
    loads: list[str] = []

    def load() -> str:
        loads.append("read")
        return path.read_text()

    first = stamp_of(path)
    assert first is not None
    assert "x = 1" in view_of(path, first, load, "a.ipynb")
    assert "x = 1" in view_of(path, first, load, "a.ipynb")
    assert loads == ["read"]

    # A write gives the file a new stamp, and the next read sees the new cells.
    path.write_text(_notebook("y = 2"))
    second = stamp_of(path)
    assert second is not None and second != first
    assert "y = 2" in view_of(path, second, load, "a.ipynb")
    assert loads == ["read", "read"]


def test_the_cache_keeps_one_view_per_file_and_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "b.ipynb"
    for n in range(3):
        view_of(path, (n, 0, 0), lambda n=n: _notebook(f"v = {n}"), "b.ipynb")
    assert sum(1 for key in notebook_view._views if key == path) == 1
    for n in range(notebook_view._CACHE_SIZE + 10):
        view_of_notebook(nbformat.reads(_notebook(f"c = {n}"), as_version=4))
    assert len(notebook_view._views) <= notebook_view._CACHE_SIZE


def test_live_cells_are_cached_by_content() -> None:
    nb = nbformat.reads(_notebook("z = 3"), as_version=4)
    assert view_of_notebook(nb) == notebook_view.notebook_view(nb)
    nb.cells[0].source = "z = 4"
    assert "z = 4" in view_of_notebook(nb)


def test_cell_markers_and_magic_lines() -> None:
    assert notebook_view.is_magic_line("# %time f()")
    assert notebook_view.is_magic_line("# !ls")
    assert not notebook_view.is_magic_line("# %%")
    assert not notebook_view.is_magic_line("# %% [markdown]")
    assert not notebook_view.is_magic_line("x = 1  # %")
    nb = nbformat.reads(_notebook("a = 1\nb = 2"), as_version=4)
    assert notebook_view.cell_marker_lines(nb) == [1]


def test_file_facts() -> None:
    assert is_notebook("a/b.ipynb") and is_notebook(Path("B.IPYNB"))
    assert not is_notebook("a.ipynb.py") and not is_notebook(".ipynb")
    assert looks_binary(b"abc\x00") and not looks_binary(b"abc")
    assert not looks_binary(b"a" * 8192 + b"\x00")  # only the first block is sniffed
    assert stamp_of("/nonexistent/file") is None


def test_the_code_worker_imports_the_view_without_jupytext() -> None:
    # The worker process imports the view for its cell markers; jupytext would slow its start.
    code = "import sys, jupyter_mcp.code.engine; print('jupytext' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert out.stdout.strip() == "False"
