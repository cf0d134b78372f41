"""The names of the project's things as MCP resource URIs (``jupyter-mcp://...``).

One module owns the URI forms, so the resources, the subscriptions, the links in tool results
and the ``imageUri`` of a picture output all spell them alike:

- ``jupyter-mcp://file/{+path}``: a project file (a notebook as its percent-format text);
- ``jupyter-mcp://notebook/{+path}``: a notebook as cells;
- ``jupyter-mcp://notebook/{+path}/cell/{cellId}``: one cell;
- ``jupyter-mcp://notebook/{+path}/cell/{cellId}/output/{index}``: one output's picture;
- ``jupyter-mcp://kernel/{+path}/variables``: the variables of a notebook's kernel.

``{+path}`` is RFC 6570 reserved expansion: the project path with each segment
percent-encoded and its ``/`` kept; a ``%2F`` in a URI is accepted and means ``/`` too.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass
from typing import Literal

SCHEME = "jupyter-mcp"
PREFIX = f"{SCHEME}://"

#: Which thing a URI names.
Kind = Literal["file", "notebook", "cell", "output", "variables"]

#: The URI template of each kind, as ``resources/templates/list`` gives it.
TEMPLATES: dict[Kind, str] = {
    "file": f"{PREFIX}file/{{+path}}",
    "notebook": f"{PREFIX}notebook/{{+path}}",
    "cell": f"{PREFIX}notebook/{{+path}}/cell/{{cellId}}",
    "output": f"{PREFIX}notebook/{{+path}}/cell/{{cellId}}/output/{{index}}",
    "variables": f"{PREFIX}kernel/{{+path}}/variables",
}

# A notebook path ends in .ipynb: the shortest such prefix that leaves a valid tail wins, so a
# folder named "cell" inside the path is still part of it.
_NOTEBOOK = re.compile(
    r"^notebook/(?P<path>.+?\.ipynb)(?:/cell/(?P<cell>[^/]+)(?:/output/(?P<index>\d{1,9}))?)?$",
    re.IGNORECASE,
)
_VARIABLES = re.compile(r"^kernel/(?P<path>.+?\.ipynb)/variables$", re.IGNORECASE)


@dataclass(frozen=True)
class ResourceURI:
    """A parsed ``jupyter-mcp://`` URI: what it names, in project terms."""

    kind: Kind
    #: The project path (``/`` separators, decoded), as the URI spells it (not yet resolved).
    path: str
    cell_id: str | None = None
    index: int | None = None

    def __str__(self) -> str:
        return format_uri(self.kind, self.path, self.cell_id, self.index)


def quote_path(path: str) -> str:
    """``path`` as ``{+path}`` expands it: every segment percent-encoded, ``/`` kept."""
    return urllib.parse.quote(path, safe="/")


def format_uri(kind: Kind, path: str, cell_id: str | None = None, index: int | None = None) -> str:
    """The URI of ``kind`` for the project path ``path`` (and cell, output index)."""
    quoted = quote_path(path)
    if kind == "file":
        return f"{PREFIX}file/{quoted}"
    if kind == "variables":
        return f"{PREFIX}kernel/{quoted}/variables"
    uri = f"{PREFIX}notebook/{quoted}"
    if kind == "notebook":
        return uri
    if cell_id is None:
        raise ValueError(f"a {kind} URI needs a cell id")
    uri += "/cell/" + urllib.parse.quote(cell_id, safe="")
    if kind == "cell":
        return uri
    if index is None:
        raise ValueError("an output URI needs an output index")
    return f"{uri}/output/{index}"


def parse_uri(uri: str) -> ResourceURI | None:
    """What ``uri`` names; None when it is not one of the forms above."""
    if not uri.startswith(PREFIX):
        return None
    rest = uri[len(PREFIX) :]
    if "?" in rest or "#" in rest:
        return None
    if rest.startswith("file/"):
        path = _unquote(rest[len("file/") :])
        return ResourceURI("file", path) if path else None
    match = _NOTEBOOK.match(rest)
    if match is not None:
        path = _unquote(match["path"])
        if match["cell"] is None:
            return ResourceURI("notebook", path)
        cell = urllib.parse.unquote(match["cell"])
        if match["index"] is None:
            return ResourceURI("cell", path, cell)
        return ResourceURI("output", path, cell, int(match["index"]))
    match = _VARIABLES.match(rest)
    if match is not None:
        return ResourceURI("variables", _unquote(match["path"]))
    return None


def _unquote(quoted: str) -> str:
    return urllib.parse.unquote(quoted)
