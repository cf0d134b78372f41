"""The project's search service: which backend answers, made on the first search.

In a server the index lives in a worker process (:class:`~jupyter_mcp.search.engine.WorkerSearch`)
so that walking and matching never hold the server's interpreter; without a server (unit tests,
the plugin harness) it lives in-process (:class:`~jupyter_mcp.search.engine.LocalSearch`).
Either is made on the first search, with the context's current limits, and made again when
``search_max_file_bytes`` or ``search_cache_bytes`` changed since.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .engine import LocalSearch, WorkerSearch

if TYPE_CHECKING:
    from ..core.context import ToolContext


class ProjectSearch:
    """The search backend of one context: in a worker process or in-process."""

    def __init__(self, ctx: ToolContext, *, in_worker: bool) -> None:
        self.ctx = ctx
        self.in_worker = in_worker
        self._lock = threading.Lock()
        self._backend: LocalSearch | WorkerSearch | None = None

    @property
    def current(self) -> LocalSearch | WorkerSearch | None:
        """The backend made by the last search, None before the first."""
        return self._backend

    def backend(self) -> LocalSearch | WorkerSearch:
        """The backend for the context's root and limits now (made, or made again, here)."""
        ctx = self.ctx
        limit = ctx.settings.search_max_file_bytes
        budget = ctx.settings.search_cache_bytes
        with self._lock:
            backend = self._backend
            if (
                backend is None
                or backend.root != ctx.root_dir
                or backend.max_file_bytes != limit
                or backend.cache_bytes != budget
            ):
                if backend is not None:
                    backend.close()
                maker = WorkerSearch if self.in_worker else LocalSearch
                backend = self._backend = maker(ctx.root_dir, limit, cache_bytes=budget)
            return backend

    def warm(self) -> int:
        """Make the backend and have it index the project now, so the first search is quick.

        Blocks (call it off the event loop); a search arriving meanwhile waits for this one
        instead of starting a second worker. Returns how many files are searched.
        """
        return int(self.backend().run("warm", {}))

    def close(self) -> None:
        """Close the backend (stopping its worker process); the next search makes a new one."""
        with self._lock:
            backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()
