"""What every tool's declaration must tell an agent, however short its description.

An agent knows a tool by its name, description and input schema, and pays for the whole
listing in every conversation: descriptions say what they must in as few words as will do.
What they must say, checked here over each declaration as an agent reads it (the description,
then every argument with its schema):

- **Positions say their base.** An integer that counts lines, characters or cells says
  whether it is 0-based or 1-based, and so does a tool whose answer carries positions.
- **Defaults are stated.** An optional argument whose function has a default has it as the
  schema's ``default`` (``test_tool_defaults`` ties the two) or says it; one whose default is
  worked out (the focused notebook, the upstream branch) says what it is.
- **Limits are stated.** A wait or timeout says its maximum; caps on an answer are said.
- **What it works on, what it refuses, how to read the answer**: per tool, the facts in
  :data:`FACTS` (for example the percent-format view of notebooks, a refusal to overwrite, the
  approval a merge needs, the id a background run is followed with).

The server's instructions say once what holds for every tool (paths relative to the project
root, absolute ones inside it accepted; the result window), so declarations need not repeat it.
"""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest

from jupyter_mcp.core.context import Settings
from jupyter_mcp.core.registry import Tool
from jupyter_mcp.surfaces.mcp import INSTRUCTIONS
from jupyter_mcp.tools import builtin_tools

TOOLS = builtin_tools()
WINDOW = Settings().result_window

NOTEBOOK_DEFAULT = r"default:? the (one|notebook)? ?focused"
PERCENT = r"percent-format"

#: Per tool, what its declaration must say (regular expressions, case-insensitive), beyond the
#: rules every tool is held to. ``name: pattern`` is looked for in that argument's own line.
FACTS: dict[str, list[str]] = {
    "get_file_text_by_path": [PERCENT, r"binary files are refused"],
    "rewrite_file_content": [r"existing file", PERCENT, r"unchanged keep their outputs"],
    "create_new_file_with_text": [r"refuses to overwrite", r"parent folders", PERCENT],
    "list_files_in_folder": [r"directly", r'pathInProject:.*"/" is the root'],
    "replace_file_content_at_position": [
        r"startLine:.*1-based",
        r"endLine:.*1-based, inclusive",
        r"offset:.*0-based",
        r"line break after endLine stays",
        PERCENT,
    ],
    "append_file_content": [r"existing file", r"'# %%' to add a cell"],
    "replace_specific_text": [
        r"searchText:.*literal, case-sensitive",
        r"first occurrence.*replaceAll",
        r"fails, changing nothing",
    ],
    "get_project_modules": [r"marker files", r"extensions"],
    "get_project_dependencies": [r"pyproject\.toml", r"package\.json", r"'others'"],
    "get_project_vcs_status": [r"UNVERSIONED", r"staged and unstaged", r"ignored files"],
    "find_commit_by_message": [r"every word", r"case-insensitive", r"newest first"],
    "get_file_history": [r"newest first", r"following renames", r"maxEntries:.*default"],
    "get_file_diff": [
        r"commit1:.*default HEAD",
        r"commit2:.*default the working tree",
        PERCENT,
        r"empty string means no difference",
    ],
    "get_branch_info": [r"null when HEAD is detached", r"mainBranch"],
    "get_commit_details": [r"commitHash:.*short hash"],
    "commit_changes": [
        r"with files, exactly those",
        r"without, what is staged",
        r"refused when there is nothing to commit",
    ],
    "pull_changes": [
        r"refused when local changes would be overwritten",
        r"aborted, nothing changed",
        r"never prompts for credentials",
        r"remote:.*default",
        r"branch:.*default the upstream",
    ],
    "switch_branch": [r"refused when local changes would be overwritten"],
    "create_branch": [r"checkout"],
    "branch_action": [
        r"create: branchName \(1-80 characters\)",
        r"switchToBranch \(default true\)",
        r"switch: branchId",
        r"sourceBranch \(default the current branch\)",
        r"targetBranch \(default main",
        r"switchToTarget \(default false\)",
        r"approval",
        r"refused, nothing changed",
    ],
    "get_open_in_editor_file_text": [r"unsaved edits", PERCENT, r"empty string when none"],
    "get_open_in_editor_file_path": [r"absolute path", r"empty string when none"],
    "replace_selected_text": [r"insert it at the cursor", r"not saved"],
    "replace_current_file_text": [PERCENT, r"not saved"],
    "open_file_in_editor": [r"active editor"],
    "list_available_actions": [r"\[\{id, text\}\]"],
    "execute_action_by_id": [r"list_available_actions", r"approval", r"without waiting"],
    "search_in_files_content": [
        r"\.gitignore",
        PERCENT,
        r"line \(1-based\)",
        r"column \(0-based\)",
        r"truncated: true",
        r"searchText:.*literal",
        r"regex:.*\^ and \$ match at line breaks",
        r"caseSensitive:.*\"default\": true",
    ],
    "find_files_by_name_substring": [r"not folders", r"case-insensitive", r"truncated: true"],
    "execute_terminal_command": [r"read_terminal_output", r"waitForOutput", r"user sees"],
    "read_terminal_output": [r"escape sequences removed", r"offset:.*nextOffset", r"running"],
    "run_command_on_background": [
        r"capped at \d+ bytes",
        r"every process it started are killed",
        r"cwd:.*default the root",
    ],
    "wait": [r"milliseconds"],
    "get_terminal_info": [r"operating system", r"shell"],
    "execute_os_specific_command": [r"windowsCommand", r"unixCommand", r"macCommand", r"which ran"],
    "get_run_configurations": [r"launch\.json", r"tasks\.json", r"package\.json", r"pytest"],
    "run_configuration": [r"new kernel", r"get_run_output", r"stop_run_configuration"],
    "get_run_output": [r"without configName", r"offset:.*nextOffset", r"stdout and stderr"],
    "stop_run_configuration": [r"shut down"],
    "toggle_debugger_breakpoint": [r"line:.*1-based", PERCENT],
    "get_debugger_breakpoints": [r"line \(1-based\)"],
    "debug_session": [
        r"toggle_debugger_breakpoint",
        r"line 0-based in the cell",
        r"viewLine 1-based",
        r"timeoutMs",
        r"nothing stays paused",
        r"index:.*0-based.*cellId wins",
        r"frameId:.*default the innermost",
        r"exceptions:.*default none",
        "pathInProject:.*" + NOTEBOOK_DEFAULT,
    ],
    "get_progress_indicators": [r"background commands", r"busy kernels", r"\[\] when nothing"],
    "get_symbols_in_file": [r"SymbolKind", r"0-based ranges", r"pathInProject:.*" + PERCENT],
    "find_references": [r"definition included", r"0-based", r"pathInProject:.*" + PERCENT],
    "refactor_code_at_location": [
        r"0-based position",
        r"rename",
        r"extract_variable",
        r"extract_function",
        r"inline",
        r"every changed file is written, or none",
        r"endLine.*0-based",
        r"endCharacter.*0-based, exclusive",
    ],
    "get_file_problems": [
        r"without running it",
        r"0-based",
        r"cellId and cellLine",
        r"DefinedInLaterCell",
        r"maxFiles:.*default \d+",
    ],
    "get_notebook_cells": [r"unsaved edits", r"long text cut", r"start:.*0-based"],
    "get_notebook_cell": [r"uncut"],
    "insert_notebook_cell": [r"afterCellId", r"at the end", r"index:.*0-based"],
    "edit_notebook_cell": [
        r"must occur once, or replaceAll",
        r"expectedSource:.*nothing is changed and the error gives the current source",
        r"expectedSource:.*sha256",
        r"unified diff",
    ],
    "delete_notebook_cells": [r"if one id is unknown, none is deleted"],
    "move_notebook_cell": [r"toIndex:.*0-based, after the move"],
    "clear_notebook_outputs": [r"cellIds", r"all"],
    "execute_notebook_cells": [
        r"own kernel",
        r"stops at the first error",
        r"fromIndex:.*0-based",
        r"toIndex:.*0-based.*inclusive",
        r"executionId",
        r"get_execution",
        r"timeoutMs:.*interrupted",
    ],
    "get_execution": [r"execute_notebook_cells", r"waitMs"],
    "execute_code_in_kernel": [r"without changing the notebook", r"interrupt"],
    "kernel_action": [
        r"restart \(variables gone\)",
        r"change",
        r"metadata",
        r"pathInProject:.*list: only its kernels",
    ],
    "get_kernel_variables": [r"silent", r"names:.*undefined one is an error"],
    "get_kernel_completions": [r"runs no code", r"line:.*0-based", r"character:.*0-based"],
}

#: Integer arguments that count positions: each says its base.
POSITION = re.compile(r"(^|[a-z])(line|character|index|start)$", re.IGNORECASE)
#: Arguments counted in milliseconds: each says its maximum.
DURATION = re.compile(r"(ms|timeout|milliseconds)$", re.IGNORECASE)


def _properties(schema: dict[str, Any], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every argument of a schema with its dotted name, nested objects' fields included."""
    found = []
    for name, prop in schema.get("properties", {}).items():
        found.append((prefix + name, prop))
        if prop.get("type") == "object" and "properties" in prop:
            found += _properties(prop, f"{prefix}{name}.")
    return found


def card(tool: Tool) -> str:
    """The declaration as an agent reads it: the description, then one line per argument
    (``name: <its description> <the rest of its schema>``)."""
    lines = [tool.description]
    for name, prop in _properties(tool.advertised_schema(WINDOW)):
        shown = {k: v for k, v in prop.items() if k not in ("properties", "description")}
        lines.append(f"{name}: {prop.get('description', '')} {json.dumps(shown)}")
    return "\n".join(lines)


def _says(tool: Tool, name: str, pattern: str) -> bool:
    """Whether argument ``name``'s line, or the description, matches ``pattern``."""
    own = next(line for line in card(tool).splitlines()[1:] if line.startswith(name + ":"))
    return bool(re.search(pattern, own, re.IGNORECASE)) or bool(
        re.search(pattern, tool.description, re.IGNORECASE)
    )


def test_every_tool_has_its_facts_listed() -> None:
    # A tool added without saying what its declaration must keep is caught here.
    assert sorted(FACTS) == sorted(t.name for t in TOOLS)


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_the_declaration_keeps_its_facts(tool: Tool) -> None:
    text = card(tool)
    missing = [fact for fact in FACTS[tool.name] if not re.search(fact, text, re.IGNORECASE)]
    assert not missing, f"{tool.name} no longer says {missing}:\n{text}"


def _numbers_unsaid(tool: Tool, names: re.Pattern[str], pattern: str, key: str = "") -> list[str]:
    """The numeric arguments whose (last) name matches ``names`` and whose declaration says
    nothing matching ``pattern`` (nor has ``key`` in its schema, when one is given)."""
    return [
        name
        for name, prop in _properties(tool.input_schema)
        if prop.get("type") in ("integer", "number")
        and names.search(name.rsplit(".", 1)[-1])
        and not (key and key in prop)
        and not _says(tool, name, pattern)
    ]


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_every_position_says_its_base(tool: Tool) -> None:
    unsaid = _numbers_unsaid(tool, POSITION, r"[01]-based")
    assert not unsaid, f"{tool.name}: {unsaid} do not say 0-based or 1-based"


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_every_default_is_stated(tool: Tool) -> None:
    parameters = dict(list(inspect.signature(tool.fn).parameters.items())[1:])
    unsaid = []
    for name, prop in tool.properties.items():
        parameter = parameters.get(name)
        if parameter is None or parameter.default is inspect.Parameter.empty:
            continue
        if parameter.default is None:
            # Worked out when left out: the declaration says how, unless leaving it out
            # simply means "none" (no filter, no environment, every cell).
            continue
        if "default" not in prop and not _says(tool, name, r"default"):
            unsaid.append(name)
    assert not unsaid, f"{tool.name}: the defaults of {unsaid} are not stated"


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_every_wait_says_its_maximum(tool: Tool) -> None:
    unsaid = _numbers_unsaid(tool, DURATION, r"\b(max|at most) \d+", key="maximum")
    assert not unsaid, f"{tool.name}: {unsaid} do not say their maximum"


def test_the_result_window_is_said_on_every_tool_and_once_in_the_instructions() -> None:
    for tool in TOOLS:
        end = tool.advertised_schema(WINDOW)["properties"]["resultEnd"]
        assert end["default"] == WINDOW
        assert f"at most resultStart+{WINDOW}" in end["description"]
        assert "exclusive" in end["description"].lower()
    instructions = INSTRUCTIONS.format(window=WINDOW)
    assert "resultStart" in instructions and "relative to the project root" in instructions
    assert "absolute paths inside the root also work" in instructions
