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
    "The project's types from marker files at its root (python, node, go …) and the enabled "
    "JupyterLab and server extensions.",
    read_only=True,
    idempotent=True,
    title="Project types and extensions",
)
def get_project_modules(ctx: ToolContext) -> dict[str, Any]:
    """``{"types": [...], "extensions": [...]}``."""
    return {"types": project_types(ctx.root_dir), "extensions": enabled_extensions(ctx.serverapp)}


@tools.tool(
    "get_project_dependencies",
    "The project's dependencies from pyproject.toml, requirements*.txt and package.json: "
    "the first ecosystem found (python, then node) at the top level, others under 'others'.",
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
