"""``resource_link`` blocks for tool results that name a file, a notebook or cells.

A client that follows the link reads (or subscribes to) the very thing the tool acted on.
Which things a result names is read from the call's arguments and answer, by a few rules that
hold for every tool:

- a notebook or kernel tool's notebook (``pathInProject``, else the ``path`` it answers) links
  to the notebook, the cells it names (``cellId``, ``cellIds``, the answer's cells) to those
  cells, and a kernel tool also to the kernel's variables;
- any other tool's ``pathInProject`` naming a file links to that file;
- the files a search answers link to those files.

Only resources the connection may read are linked, at most :data:`MAX_LINKS` per result.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import ToolError
from ..core.uris import Kind, format_uri
from ..documents.facts import is_notebook
from .project import BACKING_TOOL, mime_type, posix_name
from .registry import Scope

#: Links one result carries at most.
MAX_LINKS = 20
#: Tools whose answer is a list of files, each with its ``path``.
SEARCH_TOOLS = frozenset({"find_files_by_name_substring", "search_in_files_content"})
#: Kernel tools whose notebook's variables they read or change.
VARIABLES_TOOLS = frozenset(
    {"get_kernel_variables", "execute_code_in_kernel", "execute_notebook_cells"}
)


def links_for(
    scope: Scope, tool: str, toolset: str, arguments: dict[str, Any], value: Any
) -> list[dict[str, Any]]:
    """The ``resource_link`` blocks (wire form) of a successful call of ``tool``."""
    links: dict[str, dict[str, Any]] = {}

    def add(kind: Kind, shown: str, cell_id: str | None = None) -> None:
        if len(links) >= MAX_LINKS or not scope.allows(BACKING_TOOL[kind]):
            return
        uri = format_uri(kind, shown, cell_id)
        if uri in links:
            return
        name = posix_name(shown)
        if kind == "cell":
            name = f"cell {cell_id} of {name}"
        elif kind == "variables":
            name = f"variables of {name}'s kernel"
        mime = mime_type(shown) if kind == "file" else "application/json"
        links[uri] = {"type": "resource_link", "uri": uri, "name": name, "mimeType": mime}

    if tool in SEARCH_TOOLS:
        for entry in value if isinstance(value, list) else []:
            path = entry.get("path") if isinstance(entry, dict) else None
            if isinstance(path, str):
                add("file", path)
        return list(links.values())

    given = arguments.get("pathInProject")
    if toolset in ("notebooks", "kernels"):
        named = given if isinstance(given, str) and given else _answered_path(value)
        shown = _project_path(scope, named, file=True)
        if shown is None or not is_notebook(shown):
            return []
        add("notebook", shown)
        if tool in VARIABLES_TOOLS:
            add("variables", shown)
        if tool != "delete_notebook_cells":  # a link to a deleted cell leads nowhere
            for cell_id in _cell_ids(tool, arguments, value):
                add("cell", shown, cell_id)
        return list(links.values())

    shown = _project_path(scope, given, file=True)
    if shown is not None:
        add("file", shown)
    return list(links.values())


def _project_path(scope: Scope, path: Any, *, file: bool) -> str | None:
    """``path`` as the project names it, when it is a file inside the project."""
    if not isinstance(path, str) or not path:
        return None
    try:
        real = scope.ctx.resolved_in_call(path)
    except ToolError:
        return None
    if file and not scope.ctx.is_file_in_call(real):
        return None
    return scope.ctx.relative(real)


def _answered_path(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        return str(value["path"])
    return None


def _cell_ids(tool: str, arguments: dict[str, Any], value: Any) -> list[str]:
    """The cells a call names: its arguments', its answer's cell, the cells a run ran."""
    found: list[str] = []
    if isinstance(arguments.get("cellId"), str):
        found.append(arguments["cellId"])
    ids = arguments.get("cellIds")
    if isinstance(ids, list):
        found += [i for i in ids if isinstance(i, str)]
    if isinstance(value, dict):
        if isinstance(value.get("cellId"), str):
            found.append(value["cellId"])
        cells = value.get("cells")
        if tool == "execute_notebook_cells" and isinstance(cells, list):
            found += [
                c["cellId"]
                for c in cells
                if isinstance(c, dict) and isinstance(c.get("cellId"), str)
            ]
    return list(dict.fromkeys(found))
