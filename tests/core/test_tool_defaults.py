"""What a tool advertises agrees with what its function does when an argument is left out."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from jupyter_mcp.core.context import Settings, ToolContext
from jupyter_mcp.core.registry import Registry, Tool
from jupyter_mcp.tools import builtin_tools

TOOLS = builtin_tools()


def _arguments(tool: Tool) -> dict[str, inspect.Parameter]:
    """The function's parameters after ``ctx``: the tool's arguments."""
    return dict(list(inspect.signature(tool.fn).parameters.items())[1:])


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_schema_defaults_are_the_function_defaults(tool: Tool) -> None:
    parameters = _arguments(tool)
    takes_extra = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    problems = []
    for name, prop in tool.properties.items():
        parameter = parameters.get(name)
        if parameter is None:
            if not takes_extra:
                problems.append(f"{tool.name}.{name}: in the schema but not a parameter")
            continue
        given = parameter.default
        if "default" in prop:
            said = prop["default"]
            if given is inspect.Parameter.empty:
                problems.append(f"{tool.name}.{name}: schema default {said!r}, function has none")
            elif (type(given), given) != (type(said), said):
                problems.append(f"{tool.name}.{name}: schema default {said!r}, function {given!r}")
        elif name not in tool.required and given is inspect.Parameter.empty:
            # An optional field the caller leaves out would make the call a TypeError.
            problems.append(f"{tool.name}.{name}: optional in the schema, required by the function")
        if name in tool.required and given is not inspect.Parameter.empty:
            problems.append(f"{tool.name}.{name}: required in the schema, optional in the function")
    for name, parameter in parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD or name in tool.properties:
            continue
        problems.append(f"{tool.name}.{name}: a parameter the schema does not declare")
    assert not problems, "\n".join(problems)


def _window_schemas(listing: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t["inputSchema"]["properties"]["resultEnd"] for t in listing]


def test_listed_window_follows_the_result_window_setting(tmp_path: Any) -> None:
    registry = Registry(TOOLS)
    ctx = ToolContext(root_dir=tmp_path, settings=Settings(result_window=1234))
    listing = registry.listing(ctx)
    assert listing
    for end in _window_schemas(listing):
        assert end["default"] == 1234
        assert "at most resultStart+1234." in end["description"]
        assert "8000" not in end["description"]
