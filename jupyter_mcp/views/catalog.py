"""The views: which there are, which tools they show, and who gets them.

A view is a small page (one self-contained HTML file, built with the labextension) that a
client supporting the MCP Apps extension shows in place of a tool's text result. Each is a
``ui://jupyter-mcp/<name>`` resource, linked from the tools it shows by ``_meta.ui.resourceUri``
in their declaration. A client that did not declare the extension sees neither the links nor
the data: its tools and results are exactly what they would be without views.

This module imports nothing heavy: the IPython extension reads it in the user's kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

#: The MCP Apps extension (``mcp.server.apps.EXTENSION_ID`` in the SDK).
EXTENSION_ID = "io.modelcontextprotocol/ui"
#: The MIME type of a view's page (``mcp.server.apps.APP_MIME_TYPE``).
APP_MIME_TYPE = "text/html;profile=mcp-app"
#: Where a tool result carries the data its view shows (only for clients that show views).
VIEW_DATA_KEY = "jupyter-mcp/view"

#: The built pages, one ``<name>.html`` each (made by the labextension's build).
PAGES = Path(__file__).resolve().parent / "static"


@dataclass(frozen=True)
class View:
    """One view: its name, what it shows, and the tools whose results it shows."""

    name: str
    title: str
    description: str
    tools: tuple[str, ...]

    @property
    def uri(self) -> str:
        """The view's resource URI."""
        return f"ui://jupyter-mcp/{self.name}"

    @property
    def page(self) -> Path:
        """The built HTML file of the view."""
        return PAGES / f"{self.name}.html"


VIEWS: tuple[View, ...] = (
    View(
        "cell-outputs",
        "Cell outputs",
        "Notebook cell outputs as JupyterLab shows them: sortable tables, pictures, SVG, "
        "Markdown, LaTeX as text, errors with their traceback, Plotly and Vega charts.",
        ("execute_notebook_cells", "get_execution", "get_notebook_cell"),
    ),
    View(
        "variables",
        "Kernel variables",
        "The variables of a notebook's kernel as a sortable, filterable table.",
        ("get_kernel_variables",),
    ),
    View(
        "diff",
        "Diff",
        "A side-by-side diff of the files or cells a tool changed or compared.",
        ("edit_notebook_cell", "refactor_code_at_location", "get_file_diff"),
    ),
)

_BY_TOOL = {tool: view for view in VIEWS for tool in view.tools}
_BY_URI = {view.uri: view for view in VIEWS}


def view_of_tool(tool: str) -> View | None:
    """The view that shows ``tool``'s results, if one does."""
    return _BY_TOOL.get(tool)


def view_at(uri: str) -> View | None:
    """The view whose resource URI is ``uri``."""
    return _BY_URI.get(uri)


def shows_views(capabilities: Any) -> bool:
    """Whether a client with these capabilities shows views.

    The extension is declared under ``extensions`` (2026-07-28, and the Apps document's own
    example) or, in the handshake era whose schema has no such member, under
    ``experimental``; either way its settings must list the views' MIME type, as the
    extension requires.
    """
    if capabilities is None:
        return False
    for field in ("extensions", "experimental"):
        declared = (
            capabilities.get(field)
            if isinstance(capabilities, Mapping)
            else getattr(capabilities, field, None)
        )
        settings = declared.get(EXTENSION_ID) if isinstance(declared, Mapping) else None
        if isinstance(settings, Mapping):
            mime_types = settings.get("mimeTypes")
            if isinstance(mime_types, list | tuple) and APP_MIME_TYPE in mime_types:
                return True
    return False


def pages_built() -> bool:
    """Whether every view's page is built (``make labextension``): views are offered only then,
    so that no tool links to a page the server cannot serve."""
    return all(view.page.is_file() for view in VIEWS)


@lru_cache(maxsize=len(VIEWS))
def page_html(name: str) -> str:
    """The HTML of a view's page (read once: it does not change while the server runs)."""
    view = next((v for v in VIEWS if v.name == name), None)
    if view is None:
        raise KeyError(name)
    return view.page.read_text(encoding="utf-8")


#: ``_meta.ui`` of every view's resource: nothing from any other origin (no connections,
#: scripts, styles, pictures, frames or base URIs), and a border from the host.
RESOURCE_UI_META: dict[str, Any] = {
    "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []},
    "prefersBorder": True,
}
