"""Tools the tests add to a server's registry for one test: any function, and one that runs
until it is cancelled (the cancel tests of every surface and of the relay)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.registry import Tool


def add_tool(app: Any, name: str, fn: Any, **flags: Any) -> None:
    """Add ``fn`` as the tool ``name`` (no arguments) to ``app``'s registry."""
    app.registry.add(
        Tool(name=name, description=f"test tool {name}", properties={}, fn=fn, **flags)
    )


@dataclass
class SlowTool:
    """What the tool of :func:`add_slow_tool` did: started, was cancelled, or ran to its end
    (which a cancel test must never see)."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False


def add_slow_tool(app: Any, name: str = "test_slow", **flags: Any) -> SlowTool:
    """Add a tool that sleeps five minutes unless cancelled, and say what became of it."""
    state = SlowTool()

    async def slow(ctx: ToolContext) -> str:
        state.started.set()
        try:
            await asyncio.sleep(300)
        except asyncio.CancelledError:
            state.cancelled.set()
            raise
        state.finished = True
        return "finished"

    add_tool(app, name, slow, **flags)
    return state
