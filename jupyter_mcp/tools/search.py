"""Search tools (spec 13–14): text in project files, and files by name.

Both read the project through :class:`~jupyter_mcp.search_index.ProjectIndex` (ignore rules,
VCS folders, binary and large files skipped, notebooks as their percent-format view), kept in
``ctx.services["search_index"]`` and refreshed at the start of every call. The functions are
plain (not ``async``), so the registry runs them in a worker thread and the event loop never
waits on the walk.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import pathspec

from ..context import ToolContext
from ..errors import ToolError
from ..registry import ToolSet
from ..search_index import FileEntry, ProjectIndex

tools = ToolSet()

SERVICE = "search_index"
DEFAULT_MAX_RESULTS = 1000
PREVIEW_CHARS = 200
_service_lock = threading.Lock()

GLOBS = {
    "type": ["array", "string"],
    "items": {"type": "string"},
}


def project_index(ctx: ToolContext) -> ProjectIndex:
    """The context's shared index, created on first use (and again if its limit changed)."""
    limit = getattr(ctx.settings, "search_max_file_bytes", 8 * 1024 * 1024)
    with _service_lock:
        index = ctx.services.get(SERVICE)
        if index is None or index.root != ctx.root_dir or index.max_file_bytes != limit:
            if index is not None:
                index.close()
            index = ctx.services[SERVICE] = ProjectIndex(ctx.root_dir, max_file_bytes=limit)
    index.refresh()
    return index


# ------------------------------------------------------------------------------ matching


class Query:
    """A compiled search: a literal (fast path) or a regular expression."""

    def __init__(self, text: str, *, regex: bool = False, case_sensitive: bool = True) -> None:
        self.literal: str | None = None
        self.pattern: re.Pattern[str] | None = None
        #: For a literal, case-insensitive ASCII query: the lower-cased text to look for in
        #: lower-cased ASCII files (exactly what the regex would match there, much faster).
        self.folded: str | None = None
        if not regex and not case_sensitive and text.isascii():
            self.folded = text.lower()
        if not regex and case_sensitive:
            self.literal = text
            return
        flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
        source = text if regex else re.escape(text)
        try:
            self.pattern = re.compile(source, flags)
        except re.error as e:
            raise ToolError(f"Invalid regular expression {text!r}: {e}") from e

    def found_in(self, text: str) -> bool:
        """Whether ``text`` has at least one match."""
        if self.literal is not None:
            return self.literal in text
        assert self.pattern is not None
        return self.pattern.search(text) is not None

    def spans(self, text: str) -> Iterator[int]:
        """Start offsets of the non-overlapping matches in ``text``."""
        if self.literal is not None:
            step = len(self.literal)
            start = text.find(self.literal)
            while start >= 0:
                yield start
                start = text.find(self.literal, start + step)
            return
        assert self.pattern is not None
        for match in self.pattern.finditer(text):
            yield match.start()


def _preview(line: str, column: int) -> str:
    if len(line) <= PREVIEW_CHARS:
        return line
    start = max(0, min(column - PREVIEW_CHARS // 4, len(line) - PREVIEW_CHARS))
    end = start + PREVIEW_CHARS
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def locate(text: str, starts: Iterator[int], limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Line (1-based), column (0-based, characters) and preview of up to ``limit`` matches.

    The second value is True when there were more matches than ``limit``.
    """
    found: list[dict[str, Any]] = []
    line = 1
    line_start = 0
    scanned = 0
    for start in starts:
        if len(found) >= limit:
            return found, True
        newlines = text.count("\n", scanned, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", 0, start) + 1
        scanned = start
        line_end = text.find("\n", start)
        if line_end < 0:
            line_end = len(text)
        body = text[line_start:line_end].rstrip("\r")
        column = start - line_start
        found.append({"line": line, "column": column, "preview": _preview(body, column)})
    return found, False


def _globs(value: str | list[str] | None, field: str) -> pathspec.GitIgnoreSpec | None:
    if value is None:
        return None
    patterns = [value] if isinstance(value, str) else list(value)
    patterns = [p for p in patterns if p.strip()]
    if not patterns:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(patterns)
    except Exception as e:  # pathspec raises several types for malformed patterns
        raise ToolError(f"Invalid glob in {field}: {e}") from e


def _selected(
    entry: FileEntry,
    include: pathspec.GitIgnoreSpec | None,
    exclude: pathspec.GitIgnoreSpec | None,
) -> bool:
    if include is not None and not include.match_file(entry.rel):
        return False
    return exclude is None or not exclude.match_file(entry.rel)


def _truncated(limit: int, what: str) -> dict[str, Any]:
    return {
        "truncated": True,
        "maxResults": limit,
        "message": (
            f"Stopped after {limit} {what}; narrow the search (include/exclude) or raise "
            "maxResults to see more"
        ),
    }


# ------------------------------------------------------------------------------ tools


@tools.tool(
    "search_in_files_content",
    "Search for text in every file of the project (like ripgrep): .gitignore rules (nested "
    "ones, negations and .git/info/exclude included) are honoured; .git and other VCS folders, "
    "binary files and files over the size limit are skipped; symlinks are not followed. "
    "Notebooks (.ipynb) are searched in their percent-format text (# %% cells), not their "
    "JSON. By default searchText is literal and case-sensitive. Returns an array with one "
    "entry per file, sorted by path: {path (relative, '/' separators), absolutePath, matches: "
    "[{line (1-based), column (0-based, characters), preview (the matching line)}]} — for "
    "notebooks, lines of the percent-format text. When maxResults matches were reached, the "
    "array ends with one extra entry {truncated: true, maxResults, message} that has no path.",
    {
        "searchText": {
            "type": "string",
            "minLength": 1,
            "description": "The text to search for (a regular expression when regex is true).",
        },
        "regex": {
            "type": "boolean",
            "default": False,
            "description": "Treat searchText as a Python regular expression (^ and $ match at "
            "line breaks; '.' does not match a line break).",
        },
        "caseSensitive": {
            "type": "boolean",
            "default": True,
            "description": "Match letter case exactly.",
        },
        "include": {
            **GLOBS,
            "description": "Only search files matching one of these gitignore-style globs, "
            "e.g. ['*.py', 'src/**/*.ts'].",
        },
        "exclude": {
            **GLOBS,
            "description": "Skip files matching any of these gitignore-style globs.",
        },
        "maxResults": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100000,
            "default": DEFAULT_MAX_RESULTS,
            "description": "Stop after this many matches (counted over all files).",
        },
    },
    required=["searchText"],
    read_only=True,
    idempotent=True,
    title="Search in files",
)
def search_in_files_content(
    ctx: ToolContext,
    searchText: str,
    regex: bool = False,
    caseSensitive: bool = True,
    include: str | list[str] | None = None,
    exclude: str | list[str] | None = None,
    maxResults: int = DEFAULT_MAX_RESULTS,
) -> list[dict[str, Any]]:
    """Files containing ``searchText``, with the line, column and preview of each match."""
    query = Query(searchText, regex=regex, case_sensitive=caseSensitive)
    include_spec = _globs(include, "include")
    exclude_spec = _globs(exclude, "exclude")
    index = project_index(ctx)
    results: list[dict[str, Any]] = []
    remaining = maxResults
    for entry, text in _candidates(index, query):
        if (include_spec or exclude_spec) and not _selected(entry, include_spec, exclude_spec):
            continue
        if remaining == 0:
            results.append(_truncated(maxResults, "matches"))
            break
        matches, more = locate(text, query.spans(text), remaining)
        results.append({"path": entry.rel, "absolutePath": entry.path, "matches": matches})
        remaining -= len(matches)
        if more:
            results.append(_truncated(maxResults, "matches"))
            break
    return results


def _candidates(index: ProjectIndex, query: Query) -> Iterator[tuple[FileEntry, str]]:
    """The files (with their text) where ``query`` has a match, in path order."""
    if query.folded is not None:
        folded = query.folded
        search = query.found_in
        for entry, text, lowered in index.folded():
            if folded in lowered if lowered is not None else search(text):
                yield entry, text
        return
    if query.literal is not None:
        literal = query.literal
        for entry, text in index.searchable():
            if literal in text:
                yield entry, text
        return
    search = query.found_in
    for entry, text in index.searchable():
        if search(text):
            yield entry, text


@tools.tool(
    "find_files_by_name_substring",
    "Find project files whose name contains nameSubstring (case-insensitive; files only, no "
    "folders). Same files as the content search sees, except that binary and large files are "
    "listed too. Sorted by relevance: exact name first, then names starting with the "
    "substring, then the rest; within each, shorter paths first. Each entry: {path (relative, "
    "'/' separators), name, directory (relative, '' for the root), absolutePath}. When "
    "maxResults files were reached, the array ends with one {truncated: true, maxResults, "
    "message} entry.",
    {
        "nameSubstring": {
            "type": "string",
            "minLength": 1,
            "description": "The substring to look for in file names (not in folder names).",
        },
        "maxResults": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100000,
            "default": DEFAULT_MAX_RESULTS,
            "description": "Return at most this many files.",
        },
    },
    required=["nameSubstring"],
    read_only=True,
    idempotent=True,
    title="Find files by name",
)
def find_files_by_name_substring(
    ctx: ToolContext, nameSubstring: str, maxResults: int = DEFAULT_MAX_RESULTS
) -> list[dict[str, Any]]:
    """Files whose name contains ``nameSubstring``, most relevant first."""
    needle = nameSubstring.casefold()
    ranked: list[tuple[int, int, str, FileEntry]] = []
    for entry in project_index(ctx).files():
        name = entry.name.casefold()
        if needle not in name:
            continue
        rank = 0 if name == needle else 1 if name.startswith(needle) else 2
        ranked.append((rank, len(entry.rel), entry.rel, entry))
    ranked.sort(key=lambda r: r[:3])
    results: list[dict[str, Any]] = [
        {
            "path": entry.rel,
            "name": entry.name,
            "directory": entry.rel.rpartition("/")[0],
            "absolutePath": entry.path,
        }
        for *_, entry in ranked[:maxResults]
    ]
    if len(ranked) > maxResults:
        results.append(_truncated(maxResults, "files"))
    return results
