"""Notebooks nobody here wrote: those of nbformat's, nbdime's, JupyterLab's and jupytext's own
tests and examples, from their pinned sdists (``tests/sdists.py``).

nbformat's test notebooks are the cases a notebook tool meets where users leave the happy path:
every format version nbformat reads (v2, v3, v4.0 to 4.5, a 4.99 one with a cell type and an
output type from the future), a file without a minor version, invalid metadata, cells without
ids, two cells sharing an id, an invalid id, and notebooks nbformat cannot read at all.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sdists import fetch_sdist

#: The projects whose notebooks are used, each by its sdist name.
PROJECTS = ("nbformat", "nbdime", "jupyterlab", "jupytext")

#: nbformat's test notebooks by what they are.
NBFORMAT = {
    "v2": "test2.ipynb",
    "v3": "test3.ipynb",
    "v3 without a minor version": "test3_no_min_version.ipynb",
    "v4.0": "test4.ipynb",
    "v4.2": "test4custom.ipynb",
    "v4.4": "test4jupyter_metadata_timings.ipynb",
    "v4 without a minor version": "no_min_version.ipynb",
    "v4.5": "test4.5.ipynb",
    "v4.5 without ids": "v4_5_no_cell_id.ipynb",
    "v4.5 with two cells sharing an id": "invalid_unique_cell_id.ipynb",
    "v4.5 with an invalid id": "invalid_cell_id.ipynb",
    "v4.5 with invalid metadata": "v4_5_invalid_metadata.ipynb",
    "v4.99 with a cell type from the future": "test4plus.ipynb",
}
#: nbformat's test notebooks that are no notebook the tools can work with.
NBFORMAT_UNUSABLE = {
    "a markdown cell without a source": "invalid.ipynb",
    "v3 without metadata": "test3_no_metadata.ipynb",
    "v3 without worksheets": "test3_no_worksheets.ipynb",
    "v3 with a worksheet without cells": "test3_worksheet_with_no_cells.ipynb",
}
#: Public notebooks of the other projects that show a case nbformat's do not.
OTHERS = {
    "v4.5 with one cell lacking an id": "nbdime/nbdime/tests/files/cellids--base.ipynb",
    "v4.5 without ids, several cells": "jupytext/tests/data/notebooks/inputs/ipynb_jenner/"
    "jenner_test.ipynb",
}


def nbformat_notebook(name: str) -> Path:
    """One of nbformat's test notebooks (in the unpacked sdist: copy it before changing it)."""
    return fetch_sdist("nbformat") / "tests" / name


def public_notebook(relative: str) -> Path:
    """A notebook by ``<project>/<path in its sdist>``."""
    project, _, inside = relative.partition("/")
    return fetch_sdist(project) / inside


def all_public_notebooks() -> dict[str, Path]:
    """Every notebook of the four projects' sdists, by ``<project>/<path in its sdist>``."""
    found = {}
    for project in PROJECTS:
        root = fetch_sdist(project)
        for path in sorted(root.rglob("*.ipynb")):
            found[f"{project}/{path.relative_to(root).as_posix()}"] = path
    return found


def copy_into(source: Path, root: Path, name: str | None = None) -> Path:
    """Copy a notebook into the server's root (as ``name``, default its own); its path."""
    target = root / (name or source.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target
