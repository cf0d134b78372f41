"""The tool sets: every tool is in exactly one, and a server or a connection serves some.

A module of its own, importing nothing heavy, so that the relay and the IPython extension can
name the sets without the registry (whose schema validation takes seconds to import).
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import ToolError

#: The tool sets, in the order they are documented: every tool is in exactly one.
TOOLSETS: tuple[str, ...] = (
    "files",
    "editor",
    "search",
    "code",
    "git",
    "terminal",
    "runs",
    "debug",
    "project",
    "actions",
    "notebooks",
    "kernels",
    "plugins",
)


def unknown_toolsets(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that are not tool sets, in their given order."""
    return [name for name in names if name not in TOOLSETS]


def parse_toolsets(value: str) -> frozenset[str]:
    """The tool sets a connection asked for, from ``"files,notebooks"`` (commas or spaces).

    A :class:`ToolError` names an unknown set (and lists the known ones) or says none was given.
    """
    names = [part for part in value.replace(",", " ").split() if part]
    if not names:
        raise ToolError(f"toolsets names no tool set; choose from {', '.join(TOOLSETS)}")
    unknown = unknown_toolsets(names)
    if unknown:
        raise ToolError(
            f"Unknown tool set{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
            f"in toolsets; the tool sets are {', '.join(TOOLSETS)}"
        )
    return frozenset(names)


#: The header that chooses a connection's tool sets, as the ``toolsets`` query parameter does.
TOOLSETS_HEADER = "X-MCP-Toolsets"


def request_toolsets(query: str | None, header: str | None) -> frozenset[str] | None:
    """The tool sets a request chose with its ``toolsets`` parameter and its
    :data:`TOOLSETS_HEADER` (both given: a tool must be in both); None when it chose none.

    A :class:`ToolError` names an unknown set.
    """
    chosen: frozenset[str] | None = None
    for value in (query, header):
        if value is not None:
            names = parse_toolsets(value)
            chosen = names if chosen is None else chosen & names
    return chosen
