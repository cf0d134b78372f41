"""A notebook of code cells for the python3 kernel, written into a test's project."""

from __future__ import annotations

from pathlib import Path

import nbformat


def write_code_notebook(root: Path, name: str, *sources: str, ids: bool = False) -> Path:
    """``root/name``: one code cell per source (with the ids c0, c1, … when ``ids``)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(source, **({"id": f"c{i}"} if ids else {}))
        for i, source in enumerate(sources)
    ]
    path = root / name
    path.write_text(nbformat.writes(nb))
    return path
