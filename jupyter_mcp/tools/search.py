"""Search tools: text in project files, and files by name.

The work happens in :mod:`jupyter_mcp.search.engine` over a
:class:`~jupyter_mcp.search.index.ProjectIndex` (ignore rules, VCS folders, binary and large
files skipped, notebooks as their percent-format view), through ``ctx.services.search``
(:class:`~jupyter_mcp.search.backend.ProjectSearch`: in a server the index lives in a worker
process started on the first search; outside one it is in-process). The tool functions are
plain, so the registry runs them in a worker thread: the event loop never waits on a walk.
"""

from __future__ import annotations

from typing import Any

from ..core.context import ToolContext
from ..core.registry import ToolSet
from ..search.engine import DEFAULT_MAX_RESULTS, Query, globs

tools = ToolSet("search")

GLOBS = {"type": ["array", "string"], "items": {"type": "string"}}
MAX_RESULTS = {"type": "integer", "minimum": 1, "maximum": 100000, "default": DEFAULT_MAX_RESULTS}


@tools.tool(
    "search_in_files_content",
    "Search for text in every file of the project (like ripgrep): .gitignore rules (nested "
    "ones, negations and .git/info/exclude included) are honoured; .git and other VCS folders, "
    "binary files and files over the size limit are skipped; symlinked folders are not "
    "entered and links out of the project are ignored. Notebooks (.ipynb) are searched in "
    "their percent-format text (# %% cells), not their JSON. By default searchText is literal "
    "and case-sensitive. Returns an array with one entry per file, sorted by path: {path "
    "(relative, '/' separators), absolutePath, matches: [{line (1-based), column (0-based, "
    "characters), preview (the matching line)}]} — for notebooks, lines of the percent-format "
    "text. When results were cut at maxResults, the last entry carries truncated: true (and "
    "maxResults); narrow the search (include/exclude) or raise maxResults to see more.",
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
            **MAX_RESULTS,
            "description": "Stop after this many matches (counted over all files).",
        },
    },
    required=["searchText"],
    read_only=True,
    idempotent=True,
    title="Search in files",
    task_support=True,
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
    # Bad patterns fail here, before anything is walked.
    Query(searchText, regex=regex, case_sensitive=caseSensitive)
    globs(include, "include")
    globs(exclude, "exclude")
    arguments = {
        "searchText": searchText,
        "regex": regex,
        "caseSensitive": caseSensitive,
        "include": include,
        "exclude": exclude,
        "maxResults": maxResults,
    }
    return ctx.services.search.backend().run("content", arguments)


@tools.tool(
    "find_files_by_name_substring",
    "Find project files whose name contains nameSubstring (case-insensitive; files only, no "
    "folders). Same files as the content search sees, except that binary and large files are "
    "listed too. Sorted by relevance: exact name first, then names starting with the "
    "substring, then the rest; within each, shorter paths first. Each entry: {path (relative, "
    "'/' separators), name, directory (relative, '' for the root), absolutePath}. When "
    "results were cut at maxResults, the last entry carries truncated: true (and maxResults).",
    {
        "nameSubstring": {
            "type": "string",
            "minLength": 1,
            "description": "The substring to look for in file names (not in folder names).",
        },
        "maxResults": {**MAX_RESULTS, "description": "Return at most this many files."},
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
    arguments = {"nameSubstring": nameSubstring, "maxResults": maxResults}
    return ctx.services.search.backend().run("names", arguments)
