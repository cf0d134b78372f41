"""Line breakpoints kept by the server, per absolute path and 1-based line.

The store persists to one JSON file in the user's Jupyter data directory
(``<jupyter_data_dir>/jupyter_mcp/breakpoints.json``), keyed by project root, so breakpoints
survive server restarts and two servers on different projects share the file without
clobbering each other. Listeners (the editor link, to mirror them in JupyterLab's
debugger) subscribe to changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..documents.files import atomic_write

log = logging.getLogger("jupyter_mcp")

#: A change: ``{"action": "added" | "removed", "path": str, "line": int}``.
Listener = Callable[[dict[str, Any]], None]


def default_breakpoints_file() -> Path:
    """``<jupyter_data_dir>/jupyter_mcp/breakpoints.json``."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "jupyter_mcp" / "breakpoints.json"


class BreakpointStore:
    """The breakpoints of one project root, persisted in ``file``."""

    def __init__(self, root_dir: Path, file: Path | None = None) -> None:
        self.root_dir = Path(root_dir).resolve()
        self.file = Path(file) if file else default_breakpoints_file()
        self._lock = threading.Lock()
        self._listeners: list[tuple[Listener, asyncio.AbstractEventLoop | None]] = []
        self._points: set[tuple[str, int]] = set()
        for entry in self._read_all().get(str(self.root_dir), []):
            if isinstance(entry, dict):
                path, line = entry.get("path"), entry.get("line")
                if isinstance(path, str) and isinstance(line, int) and line >= 1:
                    self._points.add((path, line))

    def _read_all(self) -> dict[str, Any]:
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as e:
            log.warning("Ignoring unreadable breakpoints file %s: %s", self.file, e)
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self) -> None:
        # Re-read so that other projects' entries written by other servers are kept.
        data = self._read_all()
        entries = [{"path": p, "line": n} for p, n in sorted(self._points)]
        if entries:
            data[str(self.root_dir)] = entries
        else:
            data.pop(str(self.root_dir), None)
        atomic_write(self.file, json.dumps(data, indent=1, sort_keys=True) + "\n")

    def has(self, path: Path, line: int) -> bool:
        """Whether a breakpoint is set at ``path``:``line``."""
        with self._lock:
            return (str(path), line) in self._points

    def toggle(self, path: Path, line: int) -> bool:
        """Add the breakpoint, or remove it when present; True when it was added."""
        key = (str(path), line)
        with self._lock:
            added = key not in self._points
            if added:
                self._points.add(key)
            else:
                self._points.discard(key)
            try:
                self._save()
            except OSError:
                # Keep memory and disk in agreement: undo, then report the failure.
                if added:
                    self._points.discard(key)
                else:
                    self._points.add(key)
                raise
        self._notify({"action": "added" if added else "removed", "path": key[0], "line": line})
        return added

    def list(self) -> list[dict[str, Any]]:
        """Every breakpoint as ``{"path": absolute path, "line": 1-based line}``, sorted."""
        with self._lock:
            return [{"path": p, "line": n} for p, n in sorted(self._points)]

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(change)`` on every change; returns a function that unsubscribes.

        Subscribed from within an event loop, the listener is always called on that loop (the
        tools change breakpoints in worker threads).
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        entry = (listener, loop)
        self._listeners.append(entry)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(entry)

        return unsubscribe

    def _notify(self, change: dict[str, Any]) -> None:
        for listener, loop in list(self._listeners):
            if loop is not None and not loop.is_closed() and not _on_loop(loop):
                loop.call_soon_threadsafe(_safe_call, listener, change)
            else:
                _safe_call(listener, change)


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _safe_call(listener: Listener, change: dict[str, Any]) -> None:
    try:
        listener(change)
    except Exception:  # a broken listener must not undo the change
        log.exception("Breakpoint listener failed")
