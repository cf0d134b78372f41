"""The views' pages as MCP resources: ``ui://jupyter-mcp/<view>``, read by a host before it
shows a view (``text/html;profile=mcp-app``, with the resource's ``_meta.ui``: its CSP allows
no other origin).

They are not listed: hosts find them through the tools' ``_meta.ui.resourceUri``, as the Apps
extension allows, so ``resources/list`` is the same for every client.
"""

from __future__ import annotations

import asyncio

import mcp_types as types

from ..resources.registry import Contents, ResourceError, ResourceProvider, Scope
from .catalog import APP_MIME_TYPE, RESOURCE_UI_META, page_html, view_at


class ViewPages(ResourceProvider):
    """The ``ui://jupyter-mcp/`` resources: the built pages of the views."""

    PREFIX = "ui://jupyter-mcp/"

    def owns(self, uri: str) -> bool:
        """Whether ``uri`` is a ``ui://jupyter-mcp/`` URI."""
        return uri.startswith(self.PREFIX)

    async def read(self, scope: Scope, uri: str) -> list[Contents]:
        """The page of the view at ``uri`` (a static page: every connection may read it)."""
        view = view_at(uri)
        if view is None:
            raise ResourceError(f"Resource not found: {uri} is not a view", uri, not_found=True)
        html = await asyncio.to_thread(page_html, view.name)
        return [
            types.TextResourceContents(
                uri=uri, mime_type=APP_MIME_TYPE, text=html, _meta={"ui": RESOURCE_UI_META}
            )
        ]
