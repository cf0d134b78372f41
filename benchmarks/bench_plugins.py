"""What a plugin tool call costs beside the same work as a built-in tool, in one run.

Both go through the same ``Registry.call`` (schema validation, policies, result handling). The
built-in tool runs in asyncio's default thread pool (``asyncio.to_thread``), the reference; the
plugin tool adds its own thread per call (so a stuck plugin cannot starve that pool), a JSON
copy of the arguments, the 1 MiB / 4 MiB size checks and the time budget. Figures are under the
shared machine's load; compare the two columns of one run, not across runs.

    .venv/bin/python benchmarks/bench_plugins.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.registry import Registry, Tool
from jupyter_mcp.plugins.host import Plugin
from jupyter_mcp.services import build_services

SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "times": {"type": "integer", "minimum": 0}},
    "required": ["text", "times"],
    "additionalProperties": False,
}


def work(text: str, times: int) -> str:
    return text * times


class Echo:
    """A plugin with one tool doing ``work``."""

    tools = [
        {
            "name": "echo",
            "description": "Repeat a text.",
            "inputSchema": SCHEMA,
            "readOnly": True,
            "destructive": False,
        }
    ]

    def call(self, tool: str, arguments: dict[str, Any], ctx: Any) -> str:
        return work(arguments["text"], arguments["times"])


def builtin(ctx: Any, text: str, times: int) -> str:
    return work(text, times)


async def timed(registry: Registry, ctx: ToolContext, name: str, n: int, width: int) -> float:
    """Calls per second of ``n`` calls, ``width`` at a time."""
    args = {"text": "abc", "times": 100}
    started = time.perf_counter()
    for _ in range(n // width):
        await asyncio.gather(*(registry.call(name, dict(args), ctx) for _ in range(width)))
    return n / (time.perf_counter() - started)


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        ctx = ToolContext(root_dir=Path(root))
        ctx.services = build_services(ctx)
        plugin = Plugin("bench.echo", Echo())
        registry = Registry(
            [
                Tool(
                    name="builtin_echo",
                    description="Repeat a text.",
                    properties=SCHEMA["properties"],
                    required=["text", "times"],
                    fn=builtin,
                    read_only=True,
                ),
                *plugin.tools,
            ]
        )
        print(f"python {sys.version.split()[0]}; figures are calls per second (median of 5)")
        print(f"{'calls at a time':>16} {'built-in (ref)':>15} {'plugin':>10} {'ratio':>7}")
        for width in (1, 20):
            ours, ref = [], []
            for _ in range(5):
                ref.append(await timed(registry, ctx, "builtin_echo", 400, width))
                ours.append(await timed(registry, ctx, "bench_echo__echo", 400, width))
            r, o = statistics.median(ref), statistics.median(ours)
            print(f"{width:>16} {r:>15.0f} {o:>10.0f} {o / r:>7.2f}")


if __name__ == "__main__":
    asyncio.run(main())
