"""What a tool sees of the server: the project root, the settings and shared services.

Tools never import tornado; a :class:`ToolContext` can be built with nothing but a folder,
which is how the unit tests and plugin authors call tools without a server.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ToolError
from .paths import relative_path, resolve_in_root

if TYPE_CHECKING:
    from .registry import Tool

#: Set by a surface around one call, so that long tools can report progress.
progress_reporter: contextvars.ContextVar[Callable[[float, float | None, str | None], None] | None]
progress_reporter = contextvars.ContextVar("jupyter_mcp_progress", default=None)


#: Case-insensitive glob patterns of JupyterLab command ids that act on the server: they
#: delete, rename or move files, run code or drive the debugger, restart, interrupt or shut down
#: kernels, open terminals, log out, or change extensions and git state. ``execute_action_by_id``
#: asks the user's approval in JupyterLab before running such a command.
ACTION_APPROVAL_PATTERNS: tuple[str, ...] = (
    "*delete*",
    "*rename*",
    "*:cut",
    "*:paste",
    "*duplicate*",
    "*:run*",
    "*execute*",
    "*restart*",
    "*interrupt*",
    "*shutdown*",
    "*shut-down*",
    "*change-kernel*",
    "*reconnect-to-kernel*",
    "debugger:*",
    "terminal:*",
    "filemenu:logout",
    "extensionmanager:*",
    "pluginmanager:*",
    "git:*",
    # Commands that throw away unsaved work, or trust and run untrusted output.
    "*reload*",
    "*restore-checkpoint*",
    "*:trust*",
    "*clear*output*",
    "apputils:reset*",
    "settingeditor:*",
)


@dataclass
class Settings:
    """The policies and limits that tools and surfaces obey (traits of ``JupyterMCP``)."""

    read_only: bool = False
    disabled_tools: frozenset[str] = frozenset()
    disabled_plugins: frozenset[str] = frozenset()
    result_window: int = 8000
    max_body_bytes: int = 16 * 1024 * 1024
    max_result_bytes: int = 16 * 1024 * 1024
    max_file_bytes: int = 16 * 1024 * 1024
    approval_timeout: float = 120.0
    action_approval_patterns: tuple[str, ...] = ACTION_APPROVAL_PATTERNS
    plugin_timeout: float = 5.0
    search_max_file_bytes: int = 8 * 1024 * 1024
    search_cache_bytes: int = 256 * 1024 * 1024
    code_timeout: float = 30.0


class PathLocks:
    """One lock per file, so concurrent edits of one file are serialised and none is lost."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Path, threading.Lock] = {}

    def __call__(self, path: Path) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = threading.Lock()
            return lock


@dataclass
class ToolContext:
    """Shared state handed to every tool call."""

    root_dir: Path
    settings: Settings = field(default_factory=Settings)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("jupyter_mcp"))
    #: The jupyter_server ServerApp, when running inside one.
    serverapp: Any = None
    #: Services other parts of the extension attach (kernel runs, bridge, breakpoints …).
    services: dict[str, Any] = field(default_factory=dict)
    locks: PathLocks = field(default_factory=PathLocks)
    #: Asks the JupyterLab window to approve a call; set by the browser bridge.
    approver: Callable[[Tool, dict[str, Any]], Awaitable[bool]] | None = None
    #: Threads for plain-function tools; None means asyncio's default executor.
    executor: Executor | None = None

    def __post_init__(self) -> None:
        self.root_dir = Path(self.root_dir).resolve()

    def resolve(self, path_in_project: str, *, must_exist: bool = False) -> Path:
        """The real path of ``path_in_project``, refused when it is outside the root."""
        return resolve_in_root(self.root_dir, path_in_project, must_exist=must_exist)

    def relative(self, path: Path) -> str:
        """``path`` relative to the project root, with ``/`` separators."""
        return relative_path(self.root_dir, path)

    @property
    def contents_manager(self) -> Any:
        """The server's ContentsManager, or None outside a server."""
        return getattr(self.serverapp, "contents_manager", None)

    async def request_approval(self, tool: Tool, arguments: dict[str, Any]) -> None:
        """Ask the user to approve a call; raise :class:`ToolError` unless approved."""
        if self.approver is None:
            raise ToolError(
                f"{tool.name} needs the user's approval, but no JupyterLab window is connected "
                "to ask in; nothing was done"
            )
        if not await self.approver(tool, arguments):
            raise ToolError(f"The user did not approve {tool.name}; nothing was done")

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress of the current call to the client, when its surface supports it."""
        reporter = progress_reporter.get()
        if reporter is not None:
            reporter(progress, total, message)
