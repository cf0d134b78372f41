"""The built-in tools, one module per area (files, editor, search, code, git, terminal …)."""

from __future__ import annotations

import importlib

from ..core.registry import Tool

#: Modules under ``jupyter_mcp.tools`` that declare ``tools = ToolSet("<tool set>")``; the
#: tool set named there (one of ``core.registry.TOOLSETS``) is each of their tools' set.
TOOL_MODULES = [
    "files",
    "project",
    "git",
    "editor",
    "actions",
    "search",
    "terminal",
    "runs",
    "debug",
    "progress",
    "code",
    "notebooks",
    "kernels",
]


def builtin_tools() -> list[Tool]:
    """Every built-in tool, in module order."""
    found: list[Tool] = []
    for name in TOOL_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        found.extend(module.tools)
    return found
