"""What the MCP client tests share: a listing read to its end."""

from __future__ import annotations

from typing import Any


async def list_all(client: Any) -> list[Any]:
    """Every tool the client's server lists, following ``nextCursor`` (and no cache)."""
    tools: list[Any] = []
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        if (cursor := page.next_cursor) is None:
            return tools
