"""Code tools: symbols of a file, references of a symbol, refactorings, a file's problems.

The work is jedi's (see :mod:`jupyter_mcp.code.engine`); positions are 0-based lines and
characters of the file's text view, so a notebook's positions are those of the percent-format
script ``get_file_text_by_path`` returns.
"""

from __future__ import annotations

from typing import Any

from ..code.client import (
    apply_changes,
    load_source,
    problem_input,
    python_files_under,
    timeout,
)
from ..code.engine import REFACTOR_TYPES, Source, check_identifier, check_position
from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet

tools = ToolSet("code")

PATH = {
    "type": "string",
    "description": (
        "A .py file or notebook, relative to the project root; a notebook's positions are "
        "those of its percent-format text."
    ),
}
LINE = {"type": "integer", "minimum": 0, "description": "0-based line."}
CHARACTER = {"type": "integer", "minimum": 0, "description": "0-based character in the line."}


@tools.tool(
    "get_symbols_in_file",
    "The symbols a Python file or notebook defines (classes, functions, methods, variables, "
    "imports …): VS Code SymbolKind names as kind, 0-based ranges of each definition, a "
    "signature-like detail, class members as children.",
    {"pathInProject": PATH},
    required=["pathInProject"],
    read_only=True,
    idempotent=True,
    title="Get file symbols",
)
def get_symbols_in_file(ctx: ToolContext, pathInProject: str) -> dict[str, Any]:
    """The symbols of a file: name, kind, ranges and detail, class members as children."""
    source = load_source(ctx, pathInProject, tool="get_symbols_in_file")
    intel = ctx.services.code.intel()
    symbols = intel.call(
        "symbols", source, timeout=timeout(ctx), what=f"Listing the symbols of {source.shown}"
    )
    return {"symbols": symbols}


@tools.tool(
    "find_references",
    "Find every reference of the symbol at a position in the project's Python files and "
    "notebooks, the definition included. Positions in and out are 0-based; .gitignored files "
    "and virtual environments are left out.",
    {"pathInProject": PATH, "line": LINE, "character": CHARACTER},
    required=["pathInProject", "line", "character"],
    read_only=True,
    idempotent=True,
    title="Find symbol references",
    task_support=True,
)
def find_references(
    ctx: ToolContext, pathInProject: str, line: int, character: int
) -> dict[str, Any]:
    """Every reference of the symbol at (line, character), sorted by path and position."""
    source = load_source(ctx, pathInProject, tool="find_references")
    check_position(source, line, character)
    intel = ctx.services.code.intel()
    found = intel.call(
        "references",
        source,
        line,
        character,
        timeout=timeout(ctx),
        what=f"Finding references from {source.shown}",
    )
    return {"references": found}


@tools.tool(
    "refactor_code_at_location",
    "Refactor Python code at a 0-based position: rename the symbol there project-wide, "
    "notebooks included; extract_variable or extract_function the code from (line, "
    "character) to (options.endLine, options.endCharacter); inline the variable there. Every "
    "changed file is written, or none.",
    {
        "pathInProject": PATH,
        "line": LINE,
        "character": CHARACTER,
        "refactorType": {
            "type": "string",
            "description": " | ".join(REFACTOR_TYPES),
        },
        "options": {
            "type": "object",
            "properties": {
                "newName": {
                    "type": "string",
                    "description": "The new name: of the symbol, variable or function.",
                },
                "endLine": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "extract: end line (0-based).",
                },
                "endCharacter": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "extract: end character (0-based, exclusive).",
                },
            },
            "additionalProperties": False,
        },
    },
    required=["pathInProject", "line", "character", "refactorType"],
    destructive=True,
    title="Refactor code",
    task_support=True,
)
def refactor_code_at_location(
    ctx: ToolContext,
    pathInProject: str,
    line: int,
    character: int,
    refactorType: str,
    options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Compute the refactoring with jedi, then write all changed files atomically."""
    if refactorType not in REFACTOR_TYPES:
        raise ToolError(
            f"Unknown refactorType {refactorType!r}; supported: " + ", ".join(REFACTOR_TYPES)
        )
    options = options or {}
    new_name = check_identifier(options.get("newName")) if refactorType != "inline" else None
    source = load_source(ctx, pathInProject, tool="refactor_code_at_location")
    check_position(source, line, character)
    what = f"{refactorType} in {source.shown}"
    intel = ctx.services.code.intel()
    if refactorType == "rename":
        changes, edits, untouched = intel.call(
            "rename", source, line, character, new_name, timeout=timeout(ctx), what=what
        )
    else:
        until = _until(source, line, character, options) if refactorType != "inline" else None
        changes, edits, untouched = intel.call(
            "refactor",
            source,
            refactorType,
            line,
            character,
            new_name,
            until,
            timeout=timeout(ctx),
            what=what,
        )
    if not changes:
        raise ToolError(f"{refactorType} at line {line}, character {character} changes nothing")
    try:
        apply_changes(ctx, changes)
    finally:
        intel.forget(list(changes))  # written (or restored): send them again
    changed = sorted(shown for shown, _, _ in changes.values())
    message = _message(refactorType, new_name, edits, changed)
    result: dict[str, Any] = {"success": True, "message": message, "changedFiles": changed}
    result["edits"] = edits
    if untouched:
        result["message"] += (
            ". Not changed (IPython magic or shell lines, which the analysis cannot see into): "
            + "; ".join(untouched)
        )
        result["notChanged"] = untouched
    return result


def _until(
    source: Source, line: int, character: int, options: dict[str, Any]
) -> tuple[int, int] | None:
    end_line = options.get("endLine")
    end_character = options.get("endCharacter")
    if end_line is None and end_character is None:
        return None  # jedi takes the expression at the position
    if end_line is None or end_character is None:
        raise ToolError("options.endLine and options.endCharacter must be given together")
    check_position(source, end_line, end_character)
    if (end_line, end_character) <= (line, character):
        raise ToolError(
            f"The range ends (line {end_line}, character {end_character}) before it starts "
            f"(line {line}, character {character})"
        )
    return end_line, end_character


def _message(kind: str, new_name: str | None, edits: int, changed: list[str]) -> str:
    files = f"{len(changed)} file" + ("" if len(changed) == 1 else "s")
    edit_word = "edit" if edits == 1 else "edits"
    if kind == "rename":
        return f"Successfully renamed to {new_name}: {edits} {edit_word} in {files}"
    if kind == "extract_variable":
        return f"Successfully extracted variable {new_name} ({edits} {edit_word} in {files})"
    if kind == "extract_function":
        return f"Successfully extracted function {new_name} ({edits} {edit_word} in {files})"
    return f"Successfully inlined the variable ({edits} {edit_word} in {files})"


#: How many files ``get_file_problems`` checks in a folder when ``maxFiles`` is not given.
MAX_PROBLEM_FILES = 200


@tools.tool(
    "get_file_problems",
    "Problems pyflakes finds in a Python file or notebook (syntax errors, undefined names, "
    "unused imports …), without running it. Lines and characters are 0-based in its text "
    "view; a notebook's problems add cellId and cellLine. A notebook is checked as run top "
    "to bottom (DefinedInLaterCell, ExecutedOutOfOrder). A folder ('.' is the project) "
    "checks its files, at most maxFiles.",
    {
        "pathInProject": {
            "type": "string",
            "description": "A .py file, notebook or folder, relative to the project root.",
        },
        "maxFiles": {
            "type": "integer",
            "minimum": 1,
            "description": f"Folders: files at most (default {MAX_PROBLEM_FILES}).",
        },
    },
    required=["pathInProject"],
    read_only=True,
    idempotent=True,
    title="Get file problems",
    task_support=True,
)
def get_file_problems(
    ctx: ToolContext, pathInProject: str, maxFiles: int | None = None
) -> dict[str, Any]:
    """The problems of a file, or of the files of a folder (each problem with its path)."""
    path = ctx.resolve(pathInProject, must_exist=True)
    intel = ctx.services.code.intel()
    if not path.is_dir():
        found = intel.call(
            "problems",
            [problem_input(ctx, pathInProject)],
            timeout=timeout(ctx),
            what=f"Checking {ctx.relative(path)}",
        )
        return {"problems": found[0]}
    if maxFiles is not None and (not isinstance(maxFiles, int) or maxFiles < 1):
        raise ToolError("maxFiles must be a positive integer")
    limit = maxFiles or MAX_PROBLEM_FILES
    files = python_files_under(ctx, path)
    inputs = []
    skipped = []
    for file in files[:limit]:
        try:
            inputs.append(problem_input(ctx, ctx.relative(file)))
        except ToolError as e:  # another language's notebook, an unreadable file
            skipped.append({"path": ctx.relative(file), "reason": e.message})
    found = intel.call(
        "problems", inputs, timeout=timeout(ctx), what=f"Checking the files of {ctx.relative(path)}"
    )
    problems = [
        {"path": source.shown, **problem}
        for (source, _, _), file_problems in zip(inputs, found, strict=True)
        for problem in file_problems
    ]
    result: dict[str, Any] = {
        "problems": problems,
        "filesChecked": len(inputs),
        "truncated": len(files) > limit,
    }
    if skipped:
        result["skipped"] = skipped
    if len(files) > limit:
        result["message"] = (
            f"Checked the first {limit} of {len(files)} files (by path); raise maxFiles or "
            "name a subfolder for the others"
        )
    return result
