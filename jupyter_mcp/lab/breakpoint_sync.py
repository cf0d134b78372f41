"""Breakpoints between the server's store and JupyterLab's debugger, both ways.

The store (``ctx.services.breakpoints``) keeps absolute paths and 1-based lines; in a
notebook a line is a line of its percent-format view. JupyterLab's debugger keeps breakpoints
per cell, with lines counted inside the cell. This module translates: it tells windows the
breakpoints of every file (with, for notebooks, each cell's lines by cell id), and turns a
window's report of the debugger's breakpoints in one document into store changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.paths import is_inside, relative_path
from ..documents.facts import is_notebook
from ..documents.files import read_notebook_and_view
from ..documents.notebook_view import (
    notebook_from_cells,
    view_lines_by_cell,
    view_lines_of_cells,
)

log = logging.getLogger("jupyter_mcp")


class BreakpointSync:
    """Keeps the store and the windows' debuggers in agreement.

    ``broadcast`` sends a message to every connected window (the editor link's own); the sync
    knows nothing else of the link, which owns it.
    """

    def __init__(
        self, ctx: ToolContext, store: Any, broadcast: Callable[[dict[str, Any]], None]
    ) -> None:
        self.ctx = ctx
        self.store = store
        self.broadcast = broadcast
        self._unsubscribe = store.subscribe(self._changed)
        self._tasks: set[asyncio.Task[None]] = set()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        """Stop listening to the store."""
        self._unsubscribe()

    def snapshot(self) -> list[dict[str, Any]]:
        """Every file with breakpoints: project path, lines and, for notebooks, cell lines."""
        root = self.ctx.root_dir
        by_path: dict[str, set[int]] = {}
        for entry in self.store.list():
            by_path.setdefault(entry["path"], set()).add(entry["line"])
        files = []
        for absolute, lines in sorted(by_path.items()):
            path = Path(absolute)
            if not is_inside(root, path):
                continue
            relative = relative_path(root, path)
            item: dict[str, Any] = {"path": relative, "lines": sorted(lines)}
            if is_notebook(path):
                try:
                    item["cells"] = self._cell_lines(path, relative, lines)
                except (ToolError, OSError):
                    continue
            files.append(item)
        return files

    def _cell_lines(self, path: Path, relative: str, lines: set[int]) -> list[dict[str, Any]]:
        nb, view = read_notebook_and_view(self.ctx, path, relative)
        return view_lines_by_cell(nb, lines, view)

    def apply(self, message: dict[str, Any]) -> None:
        """Make the store hold exactly the breakpoints a window's debugger shows for a file."""
        relative = message.get("path")
        if not isinstance(relative, str):
            return
        try:
            path = self.ctx.resolve(relative)
        except ToolError:
            return
        if message.get("kind") == "notebook":
            nb = notebook_from_cells(message.get("cells"), message.get("metadata"))
            per_cell: dict[str, list[int]] = {
                c["id"]: c["lines"]
                for c in message.get("cells", [])
                if isinstance(c, dict)
                and isinstance(c.get("id"), str)
                and isinstance(c.get("lines"), list)
            }
            wanted = view_lines_of_cells(nb, per_cell)
            if wanted is None:
                return
        else:
            wanted = {n for n in message.get("lines", []) if isinstance(n, int) and n >= 1}
        current = {e["line"] for e in self.store.list() if e["path"] == str(path)}
        for line in sorted(wanted ^ current):
            self.store.toggle(path, line)

    def _changed(self, change: dict[str, Any]) -> None:
        self.push()

    def push(self, window: Any = None) -> None:
        """Send the current breakpoints to one window, or to all of them."""

        async def send() -> None:
            try:
                files = await asyncio.to_thread(self.snapshot)
            except Exception:
                log.exception("Reading breakpoints for JupyterLab failed")
                return
            message = {"type": "breakpoints", "files": files}
            if window is not None:
                window.send(message)
            else:
                self.broadcast(message)

        self._spawn(send())

    def receive(self, message: dict[str, Any]) -> None:
        """A window reported its debugger's breakpoints for one document."""

        async def run() -> None:
            try:
                await asyncio.to_thread(self.apply, message)
            except Exception:
                log.exception("Taking breakpoints from JupyterLab failed")

        self._spawn(run())
