"""Project tools: what kind of project this is, and what it depends on."""

from __future__ import annotations

from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet
from ..project.detect import (
    enabled_extensions,
    node_dependencies,
    project_types,
    python_dependencies,
)

tools = ToolSet("project")


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
    return {"types": project_types(ctx.root_dir), "extensions": enabled_extensions(ctx.serverapp)}


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
