"""Import roots read from project declarations, and the check that a rename or an inline leaves
no importer of the old name behind.

Roots are checked by what jedi then resolves: a package in a declared root must win over a
copy of the same name earlier on the interpreter's path. The rename check is exercised through
the server where jedi itself does not change a place that breaks the project (``__all__``
entries, an import that cannot be resolved), and on an engine whose jedi search is made to miss
importers the way it used to (the installed copy of a ``src/`` package answering its imports).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jedi
import pytest

from jupyter_mcp.code import engine as engine_module
from jupyter_mcp.code.client import ProjectFiles
from jupyter_mcp.code.engine import Engine, Source
from jupyter_mcp.code.roots import import_roots
from jupyter_mcp.core.errors import ToolError


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


# ------------------------------------------------------------------------------------------
# Import roots


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"src/pkg/__init__.py": ""}, ["src", "."]),  # nothing declared: src/ fallback
        ({"pkg/__init__.py": "", "pyproject.toml": "[project]\nname = 'pkg'\n"}, ["."]),
        (
            {
                "lib/pkg/__init__.py": "",
                "pyproject.toml": '[tool.setuptools]\npackage-dir = {"" = "lib"}\n',
            },
            ["lib", "."],
        ),
        (
            {
                "code/pkg/__init__.py": "",
                "pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["code"]\n',
            },
            ["code", "."],
        ),
        (
            {
                "python/pkg/__init__.py": "",
                "pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["python/pkg"]\n',
            },
            ["python", "."],
        ),
        (
            {
                "source/pkg/__init__.py": "",
                "pyproject.toml": '[tool.hatch.build.targets.wheel.sources]\n"source" = ""\n',
            },
            ["source", "."],
        ),
        (
            {
                "lib/pkg/__init__.py": "",
                "pyproject.toml": '[tool.poetry]\npackages = [{include = "pkg", from = "lib"}]\n',
            },
            ["lib", "."],
        ),
        (
            {
                "src/pkg/__init__.py": "",
                "pyproject.toml": "[build-system]\nrequires = ['flit_core']\n"
                "build-backend = 'flit_core.buildapi'\n[project]\nname = 'pkg'\n",
            },
            ["src", "."],
        ),
        (
            {"lib/pkg/__init__.py": "", "setup.cfg": "[options]\npackage_dir =\n    =lib\n"},
            ["lib", "."],
        ),
        (
            {
                "packages/a/src/a/__init__.py": "",
                "packages/a/pyproject.toml": "[project]\nname = 'a'\n",
                "packages/b/b/__init__.py": "",
                "packages/b/pyproject.toml": "[project]\nname = 'b'\n",
            },
            ["packages/a/src", ".", "packages/a", "packages/b"],
        ),
        ({"pkg/__init__.py": "", "pyproject.toml": "not = [valid"}, ["."]),
    ],
    ids=[
        "src-fallback",
        "flat",
        "setuptools-package-dir",
        "setuptools-find-where",
        "hatch-packages",
        "hatch-sources",
        "poetry",
        "flit",
        "setup-cfg",
        "several-projects",
        "unreadable-pyproject",
    ],
)
def test_import_roots_follow_what_the_project_declares(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    _write(tmp_path, files)
    roots = [p.relative_to(tmp_path).as_posix() for p in import_roots(tmp_path)]
    assert roots == expected


def test_a_declared_root_wins_over_an_installed_copy(tmp_path: Path) -> None:
    # Given a namespace package in lib/ (no __init__.py) and a same-named module earlier on
    # the path the analysis's interpreter uses
    project = tmp_path / "project"
    _write(
        project,
        {
            "pyproject.toml": '[tool.setuptools.packages.find]\nwhere = ["lib"]\n',
            "lib/nspkg/tools.py": "def shared():\n    return 1\n",
            "scripts/run.py": "from nspkg.tools import shared\nshared()\n",
        },
    )
    shadow = tmp_path / "site"
    _write(shadow, {"nspkg/tools.py": "def shared():\n    return 2\n"})
    sys.path.insert(0, str(shadow))
    try:
        engine = Engine(project.resolve())
    finally:
        sys.path.remove(str(shadow))
    code = (project / "scripts/run.py").read_text()
    source = Source.of(project / "scripts/run.py", "scripts/run.py", code, notebook=False)

    # When the import is followed, it leads to the project's file
    [target] = engine.script(source).goto(2, 1, follow_imports=True)
    assert target.module_path == (project / "lib/nspkg/tools.py").resolve()


def test_import_roots_follow_a_changed_declaration(tmp_path: Path) -> None:
    _write(tmp_path, {"lib/pkg/__init__.py": "", "pyproject.toml": "[project]\nname = 'pkg'\n"})
    engine = Engine(tmp_path)
    assert engine.roots == [tmp_path]
    engine.refresh_roots()
    assert engine.roots == [tmp_path]
    (tmp_path / "pyproject.toml").write_text("[tool.setuptools]\npackage-dir = {'' = 'lib'}\n")
    engine.refresh_roots()
    assert engine.roots == [tmp_path / "lib", tmp_path]
    assert str(tmp_path / "lib") in engine.project._sys_path


# ------------------------------------------------------------------------------------------
# Renames through the server


@pytest.fixture
def root(jp_root_dir: Path, mcp_app: Any) -> Iterator[Path]:
    """The server's root; the server's jedi worker is stopped when the test ends."""
    yield jp_root_dir
    mcp_app.tool_context.services.code.close()


PACKAGE = {
    "pyproject.toml": "[project]\nname = 'pkg'\n",
    "src/pkg/__init__.py": "from .helpers import *\n",
    "src/pkg/helpers.py": """\
        __all__ = ["tidy", "LIMIT"]

        LIMIT = 3


        def tidy(text):
            return text.strip()[:LIMIT]
        """,
    "src/pkg/report.py": """\
        import pkg
        from .helpers import LIMIT


        def show(text):
            return pkg.tidy(text), LIMIT
        """,
}


async def test_a_rename_updates_all_entries_so_star_imports_keep_working(root: Path, ok) -> None:
    # Given a module that exports tidy through __all__ and a package that star-imports it
    _write(root, PACKAGE)

    # When tidy is renamed
    result = await ok(
        "refactor_code_at_location",
        pathInProject="src/pkg/helpers.py",
        line=5,
        character=4,
        refactorType="rename",
        options={"newName": "clean"},
    )

    # Then the __all__ entry changed with it, and the package still works
    assert result["changedFiles"] == ["src/pkg/helpers.py", "src/pkg/report.py"]
    assert '__all__ = ["clean", "LIMIT"]' in (root / "src/pkg/helpers.py").read_text()
    done = subprocess.run(
        [sys.executable, "-c", "import pkg.report as r; print(r.show('  abcdef '))"],
        cwd=root,
        env={"PYTHONPATH": str(root / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "('abc', 3)", done.stderr


async def test_a_rename_refuses_an_import_it_cannot_resolve(root: Path, fails) -> None:
    # Given a script importing tidy from a module named like its own that cannot be found
    _write(root, {**PACKAGE, "tools/fix.py": "from helpers import tidy\ntidy(' x ')\n"})
    before = _snapshot(root)

    # When tidy is renamed, the rename is refused, naming the import, and nothing is written
    error = await fails(
        "refactor_code_at_location",
        pathInProject="src/pkg/helpers.py",
        line=5,
        character=4,
        refactorType="rename",
        options={"newName": "clean"},
    )
    assert "Cannot rename tidy safely" in error
    assert "tools/fix.py line 0: from helpers import tidy" in error
    assert _snapshot(root) == before


SETTINGS = {
    "pkg/__init__.py": "",
    "pkg/settings.py": "LIMIT = 3\nHALF = LIMIT // 2\n",
    "pkg/use.py": "from . import settings\n\nprint(settings.LIMIT, settings.HALF)\n",
}


async def test_an_inline_reaches_attribute_uses_in_other_modules(root: Path, ok) -> None:
    # Given a module-level variable another module reaches as an attribute of its module
    _write(root, SETTINGS)

    # When it is inlined where it is defined
    result = await ok(
        "refactor_code_at_location",
        pathInProject="pkg/settings.py",
        line=0,
        character=0,
        refactorType="inline",
    )

    # Then both modules changed and the package prints what it printed before
    assert result["changedFiles"] == ["pkg/settings.py", "pkg/use.py"]
    done = subprocess.run(
        [sys.executable, "-c", "import pkg.use"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "3 1", done.stderr


async def test_an_inline_refuses_a_variable_its_module_still_exports(root: Path, fails) -> None:
    # Given the variable listed in its module's __all__ (a star import would then fail)
    _write(
        root, {**SETTINGS, "pkg/settings.py": '__all__ = ["LIMIT"]\n' + SETTINGS["pkg/settings.py"]}
    )
    before = _snapshot(root)

    # When it is inlined, the inline is refused, naming the entry, and nothing is written
    error = await fails(
        "refactor_code_at_location",
        pathInProject="pkg/settings.py",
        line=1,
        character=0,
        refactorType="inline",
    )
    assert error == (
        "Cannot inline LIMIT: it is still imported or used from its module at "
        "pkg/settings.py line 0 (an __all__ entry); nothing was changed"
    )
    assert _snapshot(root) == before


async def test_an_inline_reaches_uses_through_a_star_import(root: Path, ok) -> None:
    _write(root, {**SETTINGS, "pkg/star.py": "from .settings import *\n\nprint(LIMIT)\n"})
    result = await ok(
        "refactor_code_at_location",
        pathInProject="pkg/settings.py",
        line=0,
        character=0,
        refactorType="inline",
    )
    assert result["changedFiles"] == ["pkg/settings.py", "pkg/star.py", "pkg/use.py"]
    done = subprocess.run(
        [sys.executable, "-c", "import pkg.star"], cwd=root, capture_output=True, text=True
    )
    assert done.stdout.strip() == "3", done.stderr


# ------------------------------------------------------------------------------------------
# When jedi's own search misses importers


def test_the_check_completes_a_rename_jedi_alone_gets_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a src/ layout whose package is also installed where jedi looks first, and an engine
    # whose jedi project is made as it was before import roots (src/ after site-packages)
    project = tmp_path / "project"
    _write(
        project,
        {
            "src/mcp/__init__.py": "from .helpers import tidy as tidy\n",
            "src/mcp/helpers.py": "def tidy(text):\n    return text.strip()\n",
            "src/mcp/report.py": "from .helpers import tidy\n\ndef show(t):\n    return tidy(t)\n",
            "tests/test_report.py": "import mcp\n\ndef test_tidy():\n    assert mcp.tidy(' a ')\n",
            # Searched before src/ (sorted), so jedi resolves mcp to the installed SDK here
            "app/cli.py": "from mcp.helpers import tidy\n\nprint(tidy(' b '))\n",
        },
    )
    import mcp  # the MCP SDK: installed, and named like the project's package

    assert "site-packages" in mcp.__file__
    monkeypatch.setattr(
        engine_module.Engine,
        "_project_with",
        lambda self, _env: jedi.Project(
            self.root, added_sys_path=[str(self.root)], smart_sys_path=True
        ),
    )
    root = project.resolve()
    engine = Engine(root)
    engine.index.apply(ProjectFiles(root, 10**7).delta(reset=True))
    helpers = root / "src/mcp/helpers.py"
    source = Source.of(helpers, "src/mcp/helpers.py", helpers.read_text(), notebook=False)
    jedi_alone = {r["path"] for r in engine.references(source, 0, 4)}
    # what the rename used to leave broken
    assert "tests/test_report.py" not in jedi_alone and "app/cli.py" not in jedi_alone

    # When tidy is renamed, every importer and use changes all the same
    changes, edits, _ = engine.rename(source, 0, 4, "clean")
    assert sorted(shown for shown, _, _ in changes.values()) == [
        "app/cli.py",
        "src/mcp/__init__.py",
        "src/mcp/helpers.py",
        "src/mcp/report.py",
        "tests/test_report.py",
    ]
    assert changes[root / "src/mcp/__init__.py"][2] == "from .helpers import clean as clean\n"
    assert "mcp.clean(' a ')" in changes[root / "tests/test_report.py"][2]
    assert "return clean(t)" in changes[root / "src/mcp/report.py"][2]
    assert (
        changes[root / "app/cli.py"][2] == "from mcp.helpers import clean\n\nprint(clean(' b '))\n"
    )
    assert edits == 8


def test_a_refactoring_that_breaks_the_syntax_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    with pytest.raises(ToolError, match=r"syntax error in m.py \(line 0"):
        engine_module._check_syntax({path: ("m.py", "x = 1\n", "x = = 1\n")})
    # A file already broken before is not the refactoring's doing
    engine_module._check_syntax({path: ("m.py", "x = = 1\n", "y = = 1\n")})


def test_the_inline_check_refuses_a_use_jedi_left_behind(tmp_path: Path) -> None:
    # Given the inline of LIMIT as jedi would compute it if it missed the star-imported use
    _write(tmp_path, {**SETTINGS, "pkg/star.py": "from .settings import *\n\nprint(LIMIT)\n"})
    engine = Engine(tmp_path)
    engine.index.apply(ProjectFiles(tmp_path, 10**7).delta(reset=True))
    settings = tmp_path / "pkg/settings.py"
    text = settings.read_text()
    source = Source.of(settings, "pkg/settings.py", text, notebook=False)
    changes = {settings: ("pkg/settings.py", text, "HALF = (3) // 2\n")}

    # Then the check refuses, naming the use that would be left without its variable
    with pytest.raises(ToolError) as refused:
        engine._check_inline_leaves_no_importer(engine.script(source), source, 0, 0, changes)
    assert refused.value.message == (
        "Cannot inline LIMIT: it is still imported or used from its module at "
        "pkg/star.py line 2 (a use); pkg/use.py line 2 (an attribute use); nothing was changed"
    )
