"""Code tools on real projects nobody here wrote, fetched from PyPI as pinned sdists.

* click 8.1.7, a ``src/`` layout (``src/click``, tests importing ``click`` by name). The
  interpreter running the tests has its own, newer click installed: exactly the situation in
  which the project's imports used to be answered by the installed copy.
* toolz 1.0.0, a flat layout with sub-packages and its tests inside the package.
* this project's own ``jupyter_mcp/`` tree (copied).

References are compared with a token scan (every name token in the project's Python files,
strings and comments left out, no resolution at all); renames are checked by running the
project's own test suite in the copy before and after. The sdists come pinned and hash-checked
from PyPI through ``tests/sdists.py``.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import parso
import pytest
from sdists import fetch_sdist

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _stop_worker(mcp_app: Any) -> Iterator[None]:
    # These tests check what the analysis finds in real projects, not how fast: a first call
    # on click's 3,000-line core.py outlasted the default 30 s on a fresh clone with both
    # cores busy (load 14-16), so the limit here is a generous one.
    mcp_app.code_timeout = 180.0
    yield
    mcp_app.tool_context.services.code.close()


@pytest.fixture
def click_project(jp_root_dir: Path) -> Path:
    """click's sdist, unpacked as the server's root."""
    return _copy_into(fetch_sdist("click"), jp_root_dir)


@pytest.fixture
def toolz_project(jp_root_dir: Path) -> Path:
    """toolz's sdist, unpacked as the server's root."""
    return _copy_into(fetch_sdist("toolz"), jp_root_dir)


def _copy_into(source: Path, root: Path) -> Path:
    shutil.copytree(source, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".complete"))
    return root


def _python_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" not in path.parts and ".ipynb_checkpoints" not in path.parts:
            yield path


def _token_scan(root: Path, name: str) -> list[dict[str, Any]]:
    """Every name token ``name`` in the project's Python files (f-string code included,
    strings and comments not), as reference ranges; no resolution of any kind."""
    found = []
    for path in _python_files(root):
        code = path.read_text(encoding="utf-8")
        if not re.search(rf"\b{re.escape(name)}\b", code):
            continue
        for leaf in parso.parse(code).get_used_names().get(name, []):
            line, character = leaf.start_pos[0] - 1, leaf.start_pos[1]
            found.append(
                {
                    "path": path.relative_to(root).as_posix(),
                    "line": line,
                    "character": character,
                    "endLine": line,
                    "endCharacter": character + len(name),
                }
            )
    return sorted(found, key=lambda r: (r["path"], r["line"], r["character"]))


def _definition(root: Path, path: str, name: str) -> tuple[int, int]:
    """0-based position of ``def name`` in ``path``."""
    for number, line in enumerate((root / path).read_text().split("\n")):
        if line.startswith(f"def {name}("):
            return number, len("def ")
    raise AssertionError(f"def {name} not found in {path}")


def _run_suite(root: Path, tests: str, pythonpath: str) -> dict[str, int]:
    """Run the project's own tests in ``root``; the counts pytest reports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = str(root / pythonpath)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            # The projects turn warnings into errors; a newer pytest than theirs warns.
            "-o",
            "filterwarnings=",
            tests,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return counts


def _imported_from(root: Path, package: str, pythonpath: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", f"import {package}; print({package}.__file__)"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root / pythonpath)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# ------------------------------------------------------------------------------------------
# click: a src/ layout, with a newer click installed in the interpreter


async def test_click_references_match_a_token_scan(click_project: Path, ok) -> None:
    # Given click's src/ layout, and (through the MCP SDK's dependencies) another click
    # installed where the analysis runs
    installed = importlib.util.find_spec("click")
    assert installed is not None and installed.origin is not None
    assert not Path(installed.origin).is_relative_to(click_project)
    line, character = _definition(click_project, "src/click/utils.py", "format_filename")

    # When the references of format_filename are asked for
    found = await ok(
        "find_references", pathInProject="src/click/utils.py", line=line, character=character
    )

    # Then they are every name token format_filename of the project: src/, tests/, examples/
    expected = _token_scan(click_project, "format_filename")
    assert len(expected) == 20
    assert found["references"] == expected


async def test_click_rename_keeps_its_test_suite_green(click_project: Path, ok) -> None:
    # Given click's own test suite, green on the unchanged sdist (and run on the copy's click)
    assert _imported_from(click_project, "click", "src").startswith(str(click_project / "src"))
    before = _run_suite(click_project, "tests", "src")
    assert before["passed"] > 500 and "failed" not in before
    line, character = _definition(click_project, "src/click/utils.py", "format_filename")

    # When format_filename is renamed from its definition
    result = await ok(
        "refactor_code_at_location",
        pathInProject="src/click/utils.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "format_path"},
    )

    # Then every module, test and example using it changed, and no use of the old name is left
    assert result["changedFiles"] == [
        "examples/complex/complex/commands/cmd_init.py",
        "src/click/__init__.py",
        "src/click/exceptions.py",
        "src/click/types.py",
        "src/click/utils.py",
        "tests/test_utils.py",
    ]
    assert result["edits"] == 20
    assert _token_scan(click_project, "format_filename") == []
    assert len(_token_scan(click_project, "format_path")) == 20
    # And the project's own test suite is as green as before
    assert _run_suite(click_project, "tests", "src") == before


async def test_click_symbols_of_its_largest_module(click_project: Path, ok) -> None:
    # Given click's largest module
    largest = max((click_project / "src/click").glob("*.py"), key=lambda p: p.stat().st_size)
    assert largest.name == "core.py"
    tree = ast.parse(largest.read_text())

    # When its symbols are asked for
    found = await ok("get_symbols_in_file", pathInProject="src/click/core.py")
    symbols = {s["name"]: s for s in found["symbols"]}

    # Then every top-level class and function is there with its kind and line, classes with
    # their methods
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            symbol = symbols[node.name]
            assert symbol["kind"] == "Class"
            assert symbol["selectionRange"]["startLine"] == node.lineno - 1
            methods = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            assert methods <= {c["name"] for c in symbol["children"]}
        elif isinstance(node, ast.FunctionDef):
            assert symbols[node.name]["kind"] == "Function"
            assert symbols[node.name]["selectionRange"]["startLine"] == node.lineno - 1
    assert symbols["Command"]["children"] and symbols["Context"]["detail"] == "class Context"


# ------------------------------------------------------------------------------------------
# toolz: a flat layout


async def test_toolz_references_match_a_token_scan(toolz_project: Path, ok) -> None:
    line, character = _definition(toolz_project, "toolz/itertoolz.py", "getter")
    found = await ok(
        "find_references", pathInProject="toolz/itertoolz.py", line=line, character=character
    )
    expected = _token_scan(toolz_project, "getter")
    assert {r["path"] for r in expected} == {
        "toolz/itertoolz.py",
        "toolz/recipes.py",
        "toolz/sandbox/core.py",
        "toolz/tests/test_itertoolz.py",
    }
    assert found["references"] == expected


async def test_toolz_rename_keeps_its_test_suite_green(toolz_project: Path, ok) -> None:
    assert _imported_from(toolz_project, "toolz", ".").startswith(str(toolz_project / "toolz"))
    before = _run_suite(toolz_project, "toolz/tests", ".")
    assert before["passed"] > 150 and "failed" not in before
    line, character = _definition(toolz_project, "toolz/itertoolz.py", "getter")

    result = await ok(
        "refactor_code_at_location",
        pathInProject="toolz/itertoolz.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "item_getter"},
    )

    assert result["changedFiles"] == [
        "toolz/itertoolz.py",
        "toolz/recipes.py",
        "toolz/sandbox/core.py",
        "toolz/tests/test_itertoolz.py",
    ]
    assert _token_scan(toolz_project, "getter") == []
    assert _run_suite(toolz_project, "toolz/tests", ".") == before


async def test_toolz_symbols_of_its_largest_module(toolz_project: Path, ok) -> None:
    largest = max((toolz_project / "toolz").glob("*.py"), key=lambda p: p.stat().st_size)
    tree = ast.parse(largest.read_text())
    found = await ok(
        "get_symbols_in_file", pathInProject=largest.relative_to(toolz_project).as_posix()
    )
    names = {s["name"]: s["kind"] for s in found["symbols"]}
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    assert len(functions) > 20
    assert all(names[f] == "Function" for f in functions)
    assert all(names[c] == "Class" for c in classes)


# ------------------------------------------------------------------------------------------
# This project's own source tree


@pytest.fixture
def own_tree(jp_root_dir: Path) -> Path:
    """A copy of this repository's ``jupyter_mcp`` package (without the built labextension)."""
    shutil.copytree(
        REPO / "jupyter_mcp",
        jp_root_dir / "jupyter_mcp",
        ignore=shutil.ignore_patterns("__pycache__", "labextension"),
    )
    (jp_root_dir / "pyproject.toml").write_text(
        '[tool.hatch.build.targets.wheel]\npackages = ["jupyter_mcp"]\n'
    )
    return jp_root_dir


async def test_own_tree_references_and_rename_match_a_token_scan(own_tree: Path, ok) -> None:
    # Given a function of this project used in several of its modules
    path = "jupyter_mcp/core/paths.py"
    line, character = _definition(own_tree, path, "is_inside")
    expected = _token_scan(own_tree, "is_inside")
    assert len({r["path"] for r in expected}) >= 4

    # When its references are asked for, they are the token scan's
    found = await ok("find_references", pathInProject=path, line=line, character=character)
    assert found["references"] == expected

    # And when it is renamed, every one of them and nothing else changed
    result = await ok(
        "refactor_code_at_location",
        pathInProject=path,
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "lies_within"},
    )
    assert result["edits"] == len(expected)
    assert _token_scan(own_tree, "is_inside") == []
    assert [
        (r["path"], r["line"], r["character"]) for r in _token_scan(own_tree, "lies_within")
    ] == [(r["path"], r["line"], r["character"]) for r in expected]
    # And every module of the copy still imports
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, pkgutil, jupyter_mcp\n"
            f"assert jupyter_mcp.__file__.startswith({str(own_tree)!r})\n"
            "for m in pkgutil.walk_packages(jupyter_mcp.__path__, 'jupyter_mcp.'):\n"
            "    if not m.name.endswith('__main__'):\n"
            "        importlib.import_module(m.name)\n",
        ],
        cwd=own_tree,
        env={**os.environ, "PYTHONPATH": str(own_tree)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
