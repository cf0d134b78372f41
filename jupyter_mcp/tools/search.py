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
    "Search the text of every project file, like ripgrep: .gitignore rules are honoured; "
    "VCS folders, binary and oversized files are skipped. Notebooks are searched in their "
    "percent-format text. Per file, sorted by path: {path, absolutePath, matches: [{line "
    "(1-based), column (0-based), preview}]}. Results cut at maxResults end with an entry "
    "truncated: true.",
    {
        "searchText": {
            "type": "string",
            "minLength": 1,
            "description": "Literal text, or a regular expression with regex.",
        },
        "regex": {
            "type": "boolean",
            "default": False,
            "description": "Python regex; ^ and $ match at line breaks.",
        },
        "caseSensitive": {"type": "boolean", "default": True},
        "include": {**GLOBS, "description": "Only files matching these gitignore-style globs."},
        "exclude": {**GLOBS, "description": "Skip files matching these globs."},
        "maxResults": {**MAX_RESULTS, "description": "Matches over all files."},
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
    "Find project files (not folders) whose name contains nameSubstring, case-insensitive; "
    "binary and large files included. Exact names first, then prefixes, shorter paths first. "
    "Results cut at maxResults end with an entry truncated: true.",
    {
        "nameSubstring": {"type": "string", "minLength": 1},
        "maxResults": {**MAX_RESULTS, "description": "Files at most."},
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
