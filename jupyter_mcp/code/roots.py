"""Where a project's packages are imported from: its import roots.

A flat project imports its packages from its root; a ``src/`` layout from ``src/``; a
repository may hold several projects, each with its own. The roots come from what each project
declares (``pyproject.toml`` for setuptools, hatch, poetry, flit, pdm and maturin, ``setup.cfg``),
with ``src/`` as the fallback a project that declares nothing most likely means. They go first
on the analysis's ``sys.path``, before the interpreter's site-packages: a copy of the package
installed there (often another version) must not stand in for the project's own files.
"""

from __future__ import annotations

import configparser
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - older interpreters
    import tomli as tomllib

#: Files that make a folder a Python project.
PROJECT_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
#: How deep below the root sub-projects are looked for (``packages/a/pyproject.toml``: 2).
MAX_DEPTH = 3
_SKIP_DIRS = frozenset(
    {
        "node_modules",
        "__pycache__",
        "site-packages",
        "build",
        "dist",
        "venv",
        "env",
        "htmlcov",
    }
)


def project_dirs(root: Path, max_depth: int = MAX_DEPTH) -> list[Path]:
    """The root and the folders below it (to ``max_depth``) that hold a project file."""
    found = [root]
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth >= max_depth:
            continue
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            sub = Path(entry.path)
            if any((sub / name).is_file() for name in PROJECT_FILES):
                found.append(sub)
            stack.append((sub, depth + 1))
    return found


def config_files(root: Path) -> list[Path]:
    """The project files the roots are read from (their changes change the roots)."""
    return [
        folder / name
        for folder in project_dirs(root)
        for name in PROJECT_FILES
        if (folder / name).is_file()
    ]


def import_roots(root: Path) -> list[Path]:
    """The folders the project's packages are imported from, the most specific first.

    Every project folder counts: its declared roots, or ``src/`` when it declares none and has
    one, and the folder itself (a flat layout, or tests that import by file).
    """
    roots: list[Path] = []
    for folder in project_dirs(root):
        declared = [d for d in declared_roots(folder) if d.is_dir()]
        if not declared and _holds_python(folder / "src"):
            declared = [folder / "src"]
        roots.extend(declared)
    roots.extend(project_dirs(root))
    unique: list[Path] = []
    for path in roots:
        path = Path(os.path.normpath(path))
        if path not in unique and (path == root or root in path.parents):
            unique.append(path)
    return unique


def declared_roots(folder: Path) -> list[Path]:
    """The roots ``folder``'s ``pyproject.toml`` and ``setup.cfg`` declare (unreadable: none)."""
    found: list[Path] = []
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            data = {}
        found.extend(folder / rel for rel in _pyproject_roots(folder, data))
    setup_cfg = folder / "setup.cfg"
    if setup_cfg.is_file():
        found.extend(folder / rel for rel in _setup_cfg_roots(setup_cfg))
    return found


def _pyproject_roots(folder: Path, data: dict[str, Any]) -> Iterator[str]:
    tool = _table(data.get("tool"))
    # setuptools: package-dir {"": "src"} (or {"pkg": "lib/pkg"}), packages.find.where.
    setuptools = _table(tool.get("setuptools"))
    yield from _package_dir_roots(_table(setuptools.get("package-dir")))
    find = _table(_table(setuptools.get("packages")).get("find"))
    yield from _strings(find.get("where"))
    # hatch: packages = ["src/pkg"] (imported from src), sources = ["src"] or {"src" = ""}.
    hatch_build = _table(_table(tool.get("hatch")).get("build"))
    for table in (hatch_build, *_table(hatch_build.get("targets")).values()):
        table = _table(table)
        for package in _strings(table.get("packages")):
            parent = os.path.dirname(package.rstrip("/"))
            if parent:
                yield parent
        sources = table.get("sources")
        if isinstance(sources, dict):
            yield from (src for src, dest in sources.items() if dest in ("", "/"))
        else:
            yield from _strings(sources)
    # poetry: packages = [{include = "pkg", from = "src"}].
    for package in _list(_table(tool.get("poetry")).get("packages")):
        origin = _table(package).get("from")
        if isinstance(origin, str):
            yield origin
    # flit: the module is found at the root or under src/.
    flit_module = _table(_table(tool.get("flit")).get("module")).get("name")
    project_name = _table(data.get("project")).get("name")
    for name in (flit_module, project_name if "flit" in str(data.get("build-system")) else None):
        if isinstance(name, str):
            top = name.split(".")[0].replace("-", "_")
            if (folder / "src" / top).exists() or (folder / "src" / f"{top}.py").exists():
                yield "src"
    # pdm: package-dir = "src"; maturin: python-source = "python".
    pdm_dir = _table(_table(tool.get("pdm")).get("build")).get("package-dir")
    if isinstance(pdm_dir, str):
        yield pdm_dir
    python_source = _table(tool.get("maturin")).get("python-source")
    if isinstance(python_source, str):
        yield python_source


def _setup_cfg_roots(path: Path) -> Iterator[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError):
        return
    if parser.has_option("options", "package_dir"):
        mapping: dict[str, str] = {}
        for line in parser.get("options", "package_dir").splitlines():
            if "=" in line:
                name, _, where = line.partition("=")
                mapping[name.strip()] = where.strip()
        yield from _package_dir_roots(mapping)
    if parser.has_option("options.packages.find", "where"):
        yield from parser.get("options.packages.find", "where").split()


def _package_dir_roots(mapping: dict[str, Any]) -> Iterator[str]:
    for package, where in mapping.items():
        if not isinstance(where, str):
            continue
        if package == "":
            yield where
        elif os.path.basename(where.rstrip("/")) == package.split(".")[-1]:
            # "pkg" = "lib/pkg": pkg is imported from lib.
            yield os.path.dirname(where.rstrip("/")) or "."


def _holds_python(folder: Path) -> bool:
    try:
        return folder.is_dir() and any(
            entry.name.endswith(".py") or (entry.is_dir() and any(Path(entry.path).glob("*.py")))
            for entry in os.scandir(folder)
        )
    except OSError:
        return False


def _table(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in _list(value) if isinstance(v, str)]
