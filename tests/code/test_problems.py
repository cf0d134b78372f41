"""get_file_problems through a real Jupyter server: Python files, notebooks, folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.documents.notebook_view import notebook_view

MODULE = """\
import os
import sys


def area(r):
    return math.pi * r * r


def area(r):
    return r
"""


@pytest.fixture
def root(jp_root_dir: Path, mcp_app: Any) -> Iterator[Path]:
    yield jp_root_dir
    mcp_app.tool_context.services.code.close()


def _notebook(cells: list[tuple[str, str, int | None]]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    for kind, source, count in cells:
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(source))
        else:
            nb.cells.append(nbformat.v4.new_code_cell(source, execution_count=count))
    return nb


def _brief(problems: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(p["line"], p["character"], p["severity"], p["code"]) for p in problems]


async def test_problems_of_a_python_file(root: Path, ok) -> None:
    (root / "m.py").write_text(MODULE)
    found = (await ok("get_file_problems", pathInProject="m.py"))["problems"]
    assert _brief(found) == [
        (0, 0, "warning", "UnusedImport"),
        (1, 0, "warning", "UnusedImport"),
        (5, 11, "error", "UndefinedName"),
        (8, 0, "warning", "RedefinedWhileUnused"),
    ]
    assert found[2]["message"] == "undefined name 'math'"
    assert found[0]["message"] == "'os' imported but unused"


async def test_a_syntax_error_has_its_position(root: Path, ok) -> None:
    (root / "bad.py").write_text("x = 1\nif x\n    pass\n")
    [problem] = (await ok("get_file_problems", pathInProject="bad.py"))["problems"]
    assert (problem["line"], problem["severity"], problem["code"]) == (1, "error", "SyntaxError")
    assert problem["message"].startswith("syntax error: ")


async def test_a_clean_file_has_no_problems(root: Path, ok) -> None:
    (root / "ok.py").write_text("import math\n\nprint(math.pi)\n")
    assert (await ok("get_file_problems", pathInProject="ok.py"))["problems"] == []


async def test_a_notebook_is_checked_as_run_from_the_top(root: Path, ok) -> None:
    # Given a notebook with magics and shell lines, names from earlier cells, a name used
    # before the cell defining it, an unused import, and cells that ran out of order
    nb = _notebook(
        [
            ("markdown", "# Title", None),
            ("code", "%matplotlib inline\nimport json\nimport os\n!ls -l", 1),
            ("code", "data = json.loads('[1, 2]')\nprint(total)", 3),
            ("code", "total = sum(data)\nlen?", 2),
            ("code", "%%bash\necho this is not python", None),
        ]
    )
    nbformat.write(nb, root / "nb.ipynb")
    view = notebook_view(nbformat.read(root / "nb.ipynb", as_version=4)).split("\n")
    ids = [c.id for c in nbformat.read(root / "nb.ipynb", as_version=4).cells]

    found = (await ok("get_file_problems", pathInProject="nb.ipynb"))["problems"]

    # Then magics, shell lines and the cell magic are no syntax errors, json counts as used,
    # and each problem is placed in the view and in its cell
    by_code = {p["code"]: p for p in found}
    assert sorted(by_code) == ["DefinedInLaterCell", "ExecutedOutOfOrder", "UnusedImport"]
    unused = by_code["UnusedImport"]
    assert unused["message"] == "'os' imported but unused"
    assert (unused["cellId"], unused["cellLine"]) == (ids[1], 2)
    assert view[unused["line"]] == "import os"
    later = by_code["DefinedInLaterCell"]
    assert later["severity"] == "error"
    assert (later["cellId"], later["cellLine"], later["character"]) == (ids[2], 1, 6)
    assert view[later["line"]] == "print(total)"
    assert f"defined only in a later cell (cell 3, id {ids[3]})" in later["message"]
    order = by_code["ExecutedOutOfOrder"]
    assert (order["cellId"], order["severity"]) == (ids[3], "warning")
    assert "execution count 2) before cell 2" in order["message"]


async def test_a_syntax_error_in_a_cell_does_not_hide_the_others(root: Path, ok) -> None:
    nb = _notebook([("code", "x = (", None), ("code", "import os", None)])
    nbformat.write(nb, root / "nb.ipynb")
    ids = [c.id for c in nbformat.read(root / "nb.ipynb", as_version=4).cells]
    found = (await ok("get_file_problems", pathInProject="nb.ipynb"))["problems"]
    assert [(p["code"], p["cellId"]) for p in found] == [
        ("SyntaxError", ids[0]),
        ("UnusedImport", ids[1]),
    ]


async def test_problems_of_a_folder_with_a_cap(root: Path, ok, fails) -> None:
    (root / "pkg").mkdir()
    (root / "pkg/a.py").write_text("import os\n")
    (root / "pkg/b.py").write_text("print(undefined)\n")
    (root / "pkg/c.py").write_text("print('fine')\n")
    (root / "pkg/notes.txt").write_text("import nothing\n")

    found = await ok("get_file_problems", pathInProject="pkg")
    assert [(p["path"], p["code"]) for p in found["problems"]] == [
        ("pkg/a.py", "UnusedImport"),
        ("pkg/b.py", "UndefinedName"),
    ]
    assert (found["filesChecked"], found["truncated"]) == (3, False)

    capped = await ok("get_file_problems", pathInProject=".", maxFiles=1)
    assert capped["filesChecked"] == 1 and capped["truncated"] is True
    assert "first 1 of 3 files" in capped["message"]
    assert [p["path"] for p in capped["problems"]] == ["pkg/a.py"]


async def test_problems_refuse_other_files(root: Path, fails) -> None:
    (root / "notes.txt").write_text("x")
    assert "supports Python files" in await fails("get_file_problems", pathInProject="notes.txt")
    missing = await fails("get_file_problems", pathInProject="nope.py")
    assert missing == "File not found: nope.py"


async def test_a_binary_file_is_refused_alone_and_skipped_in_a_folder(
    root: Path, ok, fails
) -> None:
    (root / "src").mkdir()
    (root / "src/blob.py").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "src/fine.py").write_text("import os\n")
    error = await fails("get_file_problems", pathInProject="src/blob.py")
    assert "binary" in error.lower()
    found = await ok("get_file_problems", pathInProject="src")
    assert [p["path"] for p in found["problems"]] == ["src/fine.py"]
    assert [s["path"] for s in found["skipped"]] == ["src/blob.py"]
    assert found["filesChecked"] == 1


async def test_a_future_import_in_a_later_cell_is_an_error(root: Path, ok) -> None:
    nb = _notebook([("code", "x = 1", None), ("code", "from __future__ import annotations", None)])
    nbformat.write(nb, root / "nb.ipynb")
    ids = [c.id for c in nbformat.read(root / "nb.ipynb", as_version=4).cells]
    [problem] = (await ok("get_file_problems", pathInProject="nb.ipynb"))["problems"]
    assert (problem["code"], problem["cellId"], problem["cellLine"]) == (
        "LateFutureImport",
        ids[1],
        0,
    )
    assert problem["severity"] == "error"
    assert "__future__" in problem["message"]
