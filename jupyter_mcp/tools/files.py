"""File tools: read, rewrite, create, list, edit at a position, append, replace.

Notebooks are read and written through their percent-format text view, so an agent edits a
``.ipynb`` as a script while outputs and metadata of untouched cells stay in place.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.paths import is_inside, is_sealed
from ..core.registry import ToolSet
from ..documents.files import edit_text, read_text, transaction

tools = ToolSet("files")

PATH = {
    "type": "string",
    "description": "File path relative to the project root.",
}


def _elapsed_ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _where(ctx: ToolContext, path: Path) -> dict[str, Any]:
    return {"path": str(path), "relativePath": ctx.relative(path)}


@tools.tool(
    "get_file_text_by_path",
    "Read a project file's text. A notebook (.ipynb) reads as its percent-format script "
    "(# %% cells), the view every text tool uses. Binary files are refused.",
    {"pathInProject": PATH},
    required=["pathInProject"],
    read_only=True,
    idempotent=True,
    title="Read file",
)
def get_file_text_by_path(ctx: ToolContext, pathInProject: str) -> dict[str, Any]:
    """The file's text with its absolute and project-relative paths."""
    path = ctx.resolve(pathInProject)
    return {"content": read_text(ctx, path, pathInProject), **_where(ctx, path)}


@tools.tool(
    "rewrite_file_content",
    "Replace the whole text of an existing file. For a notebook give percent-format text: "
    "cells whose text is unchanged keep their outputs and metadata.",
    {"pathInProject": PATH, "text": {"type": "string", "description": "The new content."}},
    required=["pathInProject", "text"],
    idempotent=True,
    title="Rewrite file",
)
def rewrite_file_content(ctx: ToolContext, pathInProject: str, text: str) -> dict[str, Any]:
    """Replace the file's text view with ``text``."""
    started = time.perf_counter()
    path = ctx.resolve(pathInProject)
    with transaction(ctx, [path]) as tx:
        if not path.exists():
            raise ToolError(
                f"File not found: {pathInProject} (use create_new_file_with_text to create it)"
            )
        tx.read(path, pathInProject)  # refuses directories, binary and oversized files
        tx.write(path, pathInProject, text)
    return {
        **_where(ctx, path),
        "size": path.stat().st_size,
        "operationTimeMs": _elapsed_ms(started),
        **tx.notes.get(path, {}),
    }


@tools.tool(
    "create_new_file_with_text",
    "Create a file (and missing parent folders) with the text; refuses to overwrite an "
    "existing file. A .ipynb path takes percent-format text and becomes a Python 3 notebook.",
    {"pathInProject": PATH, "text": {"type": "string", "description": "The file's content."}},
    required=["pathInProject", "text"],
    title="Create file",
    destructive=False,  # adds, never overwrites
)
def create_new_file_with_text(ctx: ToolContext, pathInProject: str, text: str) -> dict[str, Any]:
    """Create the file; an existing file is an error."""
    started = time.perf_counter()
    path = ctx.resolve(pathInProject)
    if path == ctx.root_dir or pathInProject.rstrip().endswith(("/", "\\")):
        raise ToolError(f"Not a file path: {pathInProject!r}")
    with transaction(ctx, [path]) as tx:
        if path.exists() or path.is_symlink():
            raise ToolError(f"File already exists: {pathInProject}")
        for parent in path.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise ToolError(f"{ctx.relative(parent)} is a file, not a folder")
                break
        tx.write(path, pathInProject, text, create=True)
    return {**_where(ctx, path), "operationTimeMs": _elapsed_ms(started)}


@tools.tool(
    "list_files_in_folder",
    "List the files and folders directly in a project folder, sorted by name, with "
    "project-relative paths.",
    {
        "pathInProject": {
            **PATH,
            "description": 'Folder relative to the project root; "/" is the root.',
        }
    },
    required=["pathInProject"],
    read_only=True,
    idempotent=True,
    title="List folder",
)
def list_files_in_folder(ctx: ToolContext, pathInProject: str) -> list[dict[str, str]]:
    """Name, type (file or directory) and project path of each entry."""
    folder = ctx.resolve(pathInProject)
    if not folder.exists():
        raise ToolError(f"Folder not found: {pathInProject}")
    if not folder.is_dir():
        raise ToolError(f"{pathInProject} is a file, not a folder")
    entries = []
    with os.scandir(folder) as it:
        for entry in it:
            target = Path(os.path.realpath(entry.path))
            if not is_inside(ctx.root_dir, target):
                continue  # a link out of the project is not part of it
            if is_sealed(ctx.root_dir, target):
                continue  # the server's own credentials (see core/paths.py)
            kind = "directory" if target.is_dir() else "file"
            entries.append(
                {"name": entry.name, "type": kind, "path": ctx.relative(folder / entry.name)}
            )
    return sorted(entries, key=lambda e: e["name"])


def _split_lines(text: str) -> list[str]:
    """Lines with their terminators; an empty text, or one ending in a newline, has a last
    empty line, as editors count them."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[-1].endswith(("\n", "\r")):
        lines.append("")
    return lines


def _terminator(line: str) -> str:
    return line[len(line.rstrip("\r\n")) :]


@tools.tool(
    "replace_file_content_at_position",
    "Replace lines startLine..endLine of a file with content; the line break after endLine "
    "stays. A notebook's lines are those of its percent-format text.",
    {
        "pathInProject": PATH,
        "startLine": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
        "endLine": {
            "type": "integer",
            "minimum": 1,
            "description": "Last line (1-based, inclusive).",
        },
        "content": {"type": "string", "description": "The new text for those lines."},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Start at this character of startLine (0-based), keeping those before.",
        },
    },
    required=["pathInProject", "startLine", "endLine", "content"],
    title="Replace lines",
)
def replace_file_content_at_position(
    ctx: ToolContext,
    pathInProject: str,
    startLine: int,
    endLine: int,
    content: str,
    offset: int = 0,
) -> str:
    """Replace a line range (optionally from a column) with ``content``."""

    def change(text: str) -> tuple[str, None]:
        lines = _split_lines(text)
        if endLine < startLine:
            raise ToolError(f"endLine ({endLine}) is before startLine ({startLine})")
        if endLine > len(lines):
            raise ToolError(
                f"Line {endLine} is past the end of {pathInProject}, which has {len(lines)} lines"
            )
        first = lines[startLine - 1]
        first_body = first[: len(first) - len(_terminator(first))]
        if offset > len(first_body):
            raise ToolError(
                f"offset {offset} is past the end of line {startLine} "
                f"({len(first_body)} characters)"
            )
        last = lines[endLine - 1]
        before = "".join(lines[: startLine - 1]) + first_body[:offset]
        after = _terminator(last) + "".join(lines[endLine:])
        return before + content + after, None

    edit = edit_text(ctx, pathInProject, change)
    # The answer is "ok"; a notebook this write upgraded says so after it.
    return "; ".join(["ok", *edit.notes.values()])


@tools.tool(
    "append_file_content",
    "Append text to the end of an existing file. A notebook's percent-format script grows: "
    "start the text with '# %%' to add a cell.",
    {"pathInProject": PATH, "text": {"type": "string", "description": "Text to append."}},
    required=["pathInProject", "text"],
    title="Append to file",
    destructive=False,  # adds, never overwrites
)
def append_file_content(ctx: ToolContext, pathInProject: str, text: str) -> dict[str, Any]:
    """Append ``text`` under the file's lock, so concurrent appends all land."""
    started = time.perf_counter()
    edit = edit_text(ctx, pathInProject, lambda old: (old + text, None))
    return {**_where(ctx, edit.path), "operationTimeMs": _elapsed_ms(started), **edit.notes}


@tools.tool(
    "replace_specific_text",
    "Replace searchText with replaceText in a file: the first occurrence, or every one with "
    "replaceAll. Fails, changing nothing, when searchText does not occur.",
    {
        "pathInProject": PATH,
        "searchText": {
            "type": "string",
            "minLength": 1,
            "description": "Literal, case-sensitive text to find.",
        },
        "replaceText": {"type": "string"},
        "replaceAll": {
            "type": "boolean",
            "default": False,
            "description": "Replace every occurrence.",
        },
    },
    required=["pathInProject", "searchText", "replaceText"],
    title="Replace text",
)
def replace_specific_text(
    ctx: ToolContext,
    pathInProject: str,
    searchText: str,
    replaceText: str,
    replaceAll: bool = False,
) -> dict[str, Any]:
    """Literal replacement; the count of replacements made is returned."""
    started = time.perf_counter()

    def change(text: str) -> tuple[str, int]:
        count = text.count(searchText)
        if count == 0:
            raise ToolError(f"Text not found in {pathInProject}; the file was not changed")
        if replaceAll:
            return text.replace(searchText, replaceText), count
        return text.replace(searchText, replaceText, 1), 1

    edit = edit_text(ctx, pathInProject, change)
    return {
        "path": str(edit.path),
        "relativePath": ctx.relative(edit.path),
        "replacements": edit.result,
        "operationTimeMs": _elapsed_ms(started),
        **edit.notes,
    }
