"""Project tools: what kind of project this is, and what it depends on."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

tools = ToolSet()

#: Marker files (or glob patterns) at the project root, and the type they reveal.
MARKERS: list[tuple[str, str]] = [
    ("pyproject.toml", "python"),
    ("setup.py", "python"),
    ("setup.cfg", "python"),
    ("requirements*.txt", "python"),
    ("Pipfile", "python"),
    ("environment.yml", "conda"),
    ("environment.yaml", "conda"),
    ("package.json", "node"),
    ("go.mod", "go"),
    ("Cargo.toml", "rust"),
    ("pom.xml", "java"),
    ("build.gradle", "java"),
    ("build.gradle.kts", "kotlin"),
    ("Gemfile", "ruby"),
    ("composer.json", "php"),
    ("*.csproj", "dotnet"),
    ("*.sln", "dotnet"),
    ("CMakeLists.txt", "cpp"),
    ("DESCRIPTION", "r"),
    ("Project.toml", "julia"),
    ("*.ipynb", "jupyter"),
]


def project_types(root: Path) -> list[str]:
    """Types whose marker files sit at the project root, in a fixed order."""
    found: list[str] = []
    for pattern, kind in MARKERS:
        if kind not in found and any(p.is_file() for p in root.glob(pattern)):
            found.append(kind)
    return found


def enabled_extensions(ctx: ToolContext) -> list[str]:
    """Enabled JupyterLab extensions and server extensions, sorted by name."""
    names: set[str] = set()
    serverapp = ctx.serverapp
    if serverapp is not None:
        manager = getattr(serverapp, "extension_manager", None)
        for name, ext in getattr(manager, "extensions", {}).items():
            if getattr(ext, "enabled", True):
                names.add(name)
    names.update(_lab_extensions())
    return sorted(names)


def _lab_extensions() -> set[str]:
    try:
        from jupyter_core.paths import jupyter_config_path, jupyter_path
        from jupyterlab_server.config import get_federated_extensions, get_page_config
    except ImportError:  # JupyterLab not installed: only server extensions exist
        return set()
    labextensions_path = jupyter_path("labextensions")
    federated = get_federated_extensions(labextensions_path)
    disabled: dict[str, bool] = {}
    for config_dir in jupyter_config_path():
        page = get_page_config([], str(Path(config_dir) / "labconfig"))
        disabled.update(page.get("disabledExtensions", {}))
    return {name for name in federated if not disabled.get(name)}


@tools.tool(
    "get_project_modules",
    "Detect the project's types from marker files at its root (python, node, go, rust, java, "
    "jupyter, …) and list the enabled JupyterLab and Jupyter server extensions.",
    read_only=True,
    idempotent=True,
    title="Project types and extensions",
)
def get_project_modules(ctx: ToolContext) -> dict[str, Any]:
    """``{"types": [...], "extensions": [...]}``."""
    return {"types": project_types(ctx.root_dir), "extensions": enabled_extensions(ctx)}


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ToolError(f"Cannot read {path.name}: {e}") from e
    if not isinstance(data, dict):
        raise ToolError(f"{path.name} does not hold a JSON object")
    return data


def _requirement(line: str) -> tuple[str, str] | None:
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return None
    spec = str(req.specifier) or (f"@ {req.url}" if req.url else "*")
    return req.name, spec


def _requirements_file(path: Path) -> dict[str, str]:
    deps: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line or line.startswith("-"):
            continue  # options such as -r, -e, --index-url
        parsed = _requirement(line)
        if parsed:
            deps[parsed[0]] = parsed[1]
    return deps


def node_dependencies(root: Path) -> dict[str, Any] | None:
    """Dependencies of ``package.json``, or None without one."""
    path = root / "package.json"
    if not path.is_file():
        return None
    data = _load_json(path)
    return {
        "type": "node",
        "dependencies": dict(data.get("dependencies") or {}),
        "devDependencies": dict(data.get("devDependencies") or {}),
        "sources": ["package.json"],
    }


def python_dependencies(root: Path) -> dict[str, Any] | None:
    """Dependencies from pyproject.toml and requirements*.txt, or None without either."""
    deps: dict[str, str] = {}
    dev: dict[str, str] = {}
    sources: list[str] = []
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ToolError(f"Cannot read pyproject.toml: {e}") from e
        sources.append("pyproject.toml")
        project = data.get("project") or {}
        for line in project.get("dependencies") or []:
            if parsed := _requirement(line):
                deps[parsed[0]] = parsed[1]
        groups = dict(project.get("optional-dependencies") or {})
        groups.update(data.get("dependency-groups") or {})
        for entries in groups.values():
            for line in entries:
                if isinstance(line, str) and (parsed := _requirement(line)):
                    dev.setdefault(parsed[0], parsed[1])
        poetry = (data.get("tool") or {}).get("poetry") or {}
        for name, spec in (poetry.get("dependencies") or {}).items():
            if name.lower() != "python":
                deps[name] = spec if isinstance(spec, str) else json.dumps(spec)
    for path in sorted(root.glob("requirements*.txt")):
        sources.append(path.name)
        target = deps if path.name == "requirements.txt" else dev
        for name, spec in _requirements_file(path).items():
            target.setdefault(name, spec)
    if not sources:
        return None
    return {"type": "python", "dependencies": deps, "devDependencies": dev, "sources": sources}


@tools.tool(
    "get_project_dependencies",
    "Read the project's dependencies from package.json (node) and from pyproject.toml and "
    "requirements*.txt (python). The top level describes the first ecosystem found (python, "
    "then node); further ones are under 'others'.",
    read_only=True,
    idempotent=True,
    title="Project dependencies",
)
def get_project_dependencies(ctx: ToolContext) -> dict[str, Any]:
    """``{"type", "dependencies", "devDependencies", "sources", "others"}``."""
    found = [d for d in (python_dependencies(ctx.root_dir), node_dependencies(ctx.root_dir)) if d]
    if not found:
        raise ToolError(
            "No dependency files found at the project root "
            "(looked for pyproject.toml, requirements*.txt and package.json)"
        )
    first, *others = found
    return {**first, "others": others}
