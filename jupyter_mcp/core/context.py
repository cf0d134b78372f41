"""What a tool sees of the server: the project root, the settings and shared services.

Tools never import tornado; a :class:`ToolContext` can be built with nothing but a folder, and
:func:`jupyter_mcp.services.build_services` gives it the services of that folder, which is how
the unit tests and :class:`~jupyter_mcp.testing.PluginHarness` call tools without a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from .errors import ToolError
from .paths import relative_path, resolve_in_root
from .toolsets import TOOLSETS

if TYPE_CHECKING:
    from ..auth.provider import OAuthServer
    from ..code.client import CodeService
    from ..documents.notebook_document import NotebookDocuments
    from ..execution.breakpoints import BreakpointStore
    from ..execution.busy import BusyKernels
    from ..execution.processes import BackgroundCommands
    from ..execution.run_configs import RunManager
    from ..execution.terminal import ProjectTerminal
    from ..kernels.debugger import KernelDebuggers
    from ..kernels.runner import Executions
    from ..lab.editor import EditorBridge
    from ..plugins.host import PluginHost
    from ..prompts.catalog import Prompts
    from ..resources.changes import WriteLog
    from ..resources.registry import ResourceRegistry
    from ..resources.subscriptions import SubscriptionHub
    from ..search.backend import ProjectSearch
    from ..surfaces.mcp import MCPSurface
    from ..surfaces.seed_port import SeedPortListener
    from .registry import Tool

#: Set by a surface around one call, so that long tools can report progress.
progress_reporter: contextvars.ContextVar[Callable[[float, float | None, str | None], None] | None]
progress_reporter = contextvars.ContextVar("jupyter_mcp_progress", default=None)


@dataclass
class _CallPaths:
    """What a running call found of its paths, for what its answer adds (its links)."""

    #: The real paths its :meth:`ToolContext.resolve` found, by argument.
    real: dict[str, Path] = field(default_factory=dict)
    #: Whether a real path is a file, as the call's worker thread found once the tool was done.
    is_file: dict[Path, bool] = field(default_factory=dict)


#: The running call's :class:`_CallPaths` (set around a call by :func:`sharing_resolutions`;
#: a worker thread's copied context holds the same object).
_paths_in_call: contextvars.ContextVar[_CallPaths | None]
_paths_in_call = contextvars.ContextVar("jupyter_mcp_paths_in_call", default=None)


@contextlib.contextmanager
def sharing_resolutions() -> Iterator[None]:
    """Around one call and what its answer adds: its resolves are remembered for
    :meth:`ToolContext.resolved_in_call` (a tool's own resolves never read them)."""
    token = _paths_in_call.set(_CallPaths())
    try:
        yield
    finally:
        _paths_in_call.reset(token)


@dataclass(eq=False)
class Actor:
    """Who changes the project from within a tool call: an MCP session, while its call runs.

    A surface sets it (:data:`current_actor`) around each call of a session; whatever the call
    changes (files, live notebooks) is then known to be that session's own change, which its
    resource subscriptions are not told about. Work that outlives the call (a background run)
    runs with ``running`` false and is told like anyone else's change.
    """

    session: str
    running: bool = True


#: The :class:`Actor` of the tool call running in this context, None outside one.
current_actor: contextvars.ContextVar[Actor | None] = contextvars.ContextVar(
    "jupyter_mcp_actor", default=None
)


def acting() -> Actor | None:
    """The actor whose call is making a change now, or None (the user, or no session)."""
    actor = current_actor.get()
    return actor if actor is not None and actor.running else None


class TaskLink(Protocol):
    """The MCP task a call runs as, as the call's own code sees it."""

    @property
    def task_id(self) -> str:
        """The task's id; a run of cells started by the call takes it as its executionId."""
        ...

    @property
    def announced(self) -> bool:
        """True once the client was given the task (until then the call may still answer
        inline, as a plain call)."""
        ...

    def fail(self, message: str) -> None:
        """Say that the work failed although the tool answered (the kernel died mid-run): the
        task ends failed (or, where the protocol keeps ``failed`` for protocol errors,
        completed) with ``message`` as its status message."""
        ...


#: Who a tool call runs for, as the surface that took it tells it (an MCP request's principal:
#: a token, a user, an OAuth grant; None on a server without auth, or outside any surface).
#: What a call starts that is later found by an id alone (a notebook run's executionId, which
#: is also its MCP task's id) is found again only by the same principal.
current_principal: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "jupyter_mcp_principal", default=None
)


#: Set by the tasks layer around a call that runs as an MCP task; None for a plain call.
running_task: contextvars.ContextVar[TaskLink | None]
running_task = contextvars.ContextVar("jupyter_mcp_running_task", default=None)


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
    """The policies and limits that tools and surfaces obey (traits of ``JupyterMCP``).

    The defaults written here are the only ones: the traits of ``JupyterMCP`` and the defaults of
    the classes that take one of these limits read them from this class.
    """

    read_only: bool = False
    #: The tool sets the server serves (every one of ``registry.TOOLSETS`` by default).
    toolsets: frozenset[str] = frozenset(TOOLSETS)
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
    #: Counted in characters of cached text (a character of ASCII text is a byte of the file).
    search_cache_bytes: int = 256 * 1024 * 1024
    code_timeout: float = 30.0
    #: Seconds a legacy MCP session may go without a request before it is ended (the SDK's
    #: default): a client that went away without ending its session leaves nothing for longer.
    session_idle_timeout: float = 1800.0
    #: Seconds an MCP task and its result are kept after the task ended, at most.
    max_task_ttl: float = 3600.0


class PathLocks:
    """One lock per file, so concurrent edits of one file are serialised and none is lost.

    A file's lock is kept only while someone holds a reference to it (whoever holds or waits
    for it does): Jupyter's saves and content reads take these locks too, so a dict of every
    file ever touched would grow with every file a server's users and agents ever opened.
    A lock nobody refers to is held by nobody, and the next caller may get a new one.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: weakref.WeakValueDictionary[Path, threading.Lock] = (
            weakref.WeakValueDictionary()
        )

    def __len__(self) -> int:
        """How many files' locks are kept now."""
        return len(self._locks)

    def __call__(self, path: Path) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(path)
            if lock is None:
                lock = self._locks[path] = threading.Lock()
            return lock


#: The threads that wait for a file's lock for the event loop (see :func:`held`): their own, so
#: that many waiters never take the few threads of asyncio's default executor that the lock's
#: holder may need before it gives the lock back (its read of the file, say). A waiter holds no
#: lock, so a thread here never waits for another one.
_lock_waiters = ThreadPoolExecutor(max_workers=32, thread_name_prefix="jupyter_mcp-lock")


@contextlib.asynccontextmanager
async def held(lock: threading.Lock) -> AsyncIterator[None]:
    """Hold a file's lock (a thread lock the file tools take in worker threads) on the loop."""
    if not lock.acquire(blocking=False):
        loop = asyncio.get_running_loop()
        acquiring = asyncio.ensure_future(loop.run_in_executor(_lock_waiters, lock.acquire))
        try:
            await asyncio.shield(acquiring)
        except asyncio.CancelledError:
            # The thread still gets the lock; give it back as soon as it does.
            def give_back(done: asyncio.Future[bool]) -> None:
                if not done.cancelled() and done.exception() is None:
                    lock.release()

            acquiring.add_done_callback(give_back)
            raise
    try:
        yield
    finally:
        lock.release()


@dataclass(eq=False)
class Services:
    """The server's collaborators, one field each: built once, closed once by :meth:`aclose`.

    :func:`jupyter_mcp.services.build_services` builds the ones every tool relies on, for a
    server or for a bare folder; the app (``JupyterMCP.initialize_settings``) adds those that
    only exist in a server (``None`` otherwise, and the code that uses them says what is
    missing). Nothing else sets a field. Building is cheap: the search and code services
    start their worker processes on first use.
    """

    breakpoints: BreakpointStore
    background_commands: BackgroundCommands
    terminal: ProjectTerminal
    runs: RunManager
    busy_kernels: BusyKernels
    search: ProjectSearch
    code: CodeService
    #: The agent's debug sessions on notebook kernels.
    debugger: KernelDebuggers
    #: Runs of notebook cells and snippets, and the kept kernel clients they and the kernel
    #: tools share.
    executions: Executions
    #: The ContentsManager plugins get: the server's, or the one a test harness gives.
    contents_manager: Any = None
    #: Called with a file's real path before a tool writes it; raises ToolError to refuse
    #: (the editor link refuses files with unsaved edits in JupyterLab).
    before_file_write: Callable[[Path], None] | None = None
    #: Called with a file's real path after a tool wrote it (the editor link reloads it).
    on_file_written: Callable[[Path], None] | None = None
    #: Asks the user to approve a call (the editor link asks in a JupyterLab window); None
    #: means there is nobody to ask, and every call that needs approval is refused.
    approver: Callable[[Tool, dict[str, Any]], Awaitable[bool]] | None = None
    #: Opens a notebook's document, in its file or live (see documents/notebook_document.py).
    notebooks: NotebookDocuments | None = None
    #: The JupyterLab window link; None outside a server.
    editor: EditorBridge | None = None
    plugins: PluginHost | None = None
    #: The listener on the seed port range, when ``port_range`` asks for one.
    seed_port: SeedPortListener | None = None
    #: The MCP resources (one provider per URI family; the Apps views add theirs).
    resources: ResourceRegistry | None = None
    #: Who is told of which resource change (both protocol eras).
    subscriptions: SubscriptionHub | None = None
    #: Which session's tool call wrote each file (told apart from everyone else's writes).
    writes: WriteLog | None = None
    prompts: Prompts | None = None
    mcp_surface: MCPSurface | None = None
    #: The server's own OAuth authorization server for remote MCP clients (None: turned off).
    oauth: OAuthServer | None = None

    async def aclose(self, log: logging.Logger) -> None:
        """Stop every service; one that fails is logged and the others are still stopped."""
        steps: list[tuple[str, Callable[[], Awaitable[object]]]] = []
        if self.mcp_surface is not None:
            steps.append(("the MCP surface", self.mcp_surface.stop))  # ends every session
        if self.subscriptions is not None:
            steps.append(("resource subscriptions", self.subscriptions.close))
        if self.resources is not None:
            steps.append(("resource watches", self.resources.close))
        steps += [
            ("debug sessions", self.debugger.shutdown),  # before kernels go: nothing stays paused
            ("runs", self.runs.shutdown),  # and their kernels
            ("notebook executions", self.executions.shutdown),
            ("background commands", self.background_commands.shutdown),
            ("the project terminal", self.terminal.shutdown),
            ("the busy-kernel watcher", self.busy_kernels.shutdown),
        ]
        notebooks_close = getattr(self.notebooks, "close", None)  # LiveNotebooks: its rooms
        if notebooks_close is not None:

            async def close_notebooks() -> None:
                notebooks_close()

            steps.append(("the notebooks' room closes", close_notebooks))
        if self.seed_port is not None:
            steps.append(("the seed port listener", self.seed_port.stop))
        if self.oauth is not None:
            steps.append(("the OAuth server", self.oauth.aclose))  # writes the last uses
        # Stopping a worker process waits for it: off the event loop.
        steps.append(("the search worker", functools.partial(asyncio.to_thread, self.search.close)))
        steps.append(("the code worker", functools.partial(asyncio.to_thread, self.code.close)))
        editor = self.editor
        if editor is not None:

            async def close_editor() -> None:
                editor.close()  # on the loop: fails pending requests, ends the breakpoint sync

            steps.append(("the editor bridge", close_editor))
        for what, stop in steps:
            try:
                await stop()
            except Exception:  # one failing service must not keep the others running
                log.exception("Stopping %s failed", what)


class _NoServices:
    """The services of a context built without any: each use says how to get real ones."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends probe for optional hooks
            raise AttributeError(name)
        raise RuntimeError(
            f"This ToolContext has no services (asked for {name!r}); give it some with "
            "ctx.services = jupyter_mcp.services.build_services(ctx)"
        )


@dataclass
class ToolContext:
    """Shared state handed to every tool call."""

    root_dir: Path
    settings: Settings = field(default_factory=Settings)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("jupyter_mcp"))
    #: The jupyter_server ServerApp, when running inside one.
    serverapp: Any = None
    #: The server's collaborators (built by :func:`jupyter_mcp.services.build_services`).
    services: Services = field(default_factory=lambda: cast("Services", _NoServices()))
    locks: PathLocks = field(default_factory=PathLocks)
    #: Threads for plain-function tools; None means asyncio's default executor.
    executor: Executor | None = None

    def __post_init__(self) -> None:
        self.root_dir = Path(self.root_dir).resolve()

    def resolve(self, path_in_project: str, *, must_exist: bool = False) -> Path:
        """The real path of ``path_in_project``, refused when it is outside the root."""
        real = resolve_in_root(self.root_dir, path_in_project, must_exist=must_exist)
        seen = _paths_in_call.get()
        if seen is not None:
            seen.real[path_in_project] = real
        return real

    def resolved_in_call(self, path_in_project: str) -> Path:
        """:meth:`resolve` of ``path_in_project``, answered with what the running call's own
        resolve of it found when it made one (see :func:`sharing_resolutions`).

        For what a call's answer adds afterwards (its resource links): the tool resolved its
        path argument already, and resolving it again (the real path, one ``lstat`` per
        component, the sealed check) was 4% of a file read's event-loop time over MCP.
        """
        seen = _paths_in_call.get()
        found = seen.real.get(path_in_project) if seen is not None else None
        return found if found is not None else self.resolve(path_in_project)

    def is_file_in_call(self, real: Path) -> bool:
        """Whether ``real`` is a file: as the running call's worker thread found it (see
        :meth:`resolve_for_answer`), else asked now."""
        seen = _paths_in_call.get()
        known = seen.is_file.get(real) if seen is not None else None
        return real.is_file() if known is None else known

    def resolve_for_answer(self, path_in_project: object) -> None:
        """Have :meth:`resolved_in_call` and :meth:`is_file_in_call` answer for
        ``path_in_project`` without a system call: called in a plain tool's worker thread
        once it is done. On the loop afterwards, its real path (a system call per component)
        and its ``stat``, each of which lets a busy thread hold the loop, were a share of the
        loop's late beats under many agents (the ``stat`` alone 2.9%). A path the jail
        refuses is left for the answer to refuse."""
        seen = _paths_in_call.get()
        if seen is None or not isinstance(path_in_project, str):
            return
        real = seen.real.get(path_in_project)
        if real is None:
            try:
                real = self.resolve(path_in_project)
            except ToolError:
                return
        seen.is_file[real] = real.is_file()

    def relative(self, path: Path) -> str:
        """``path`` relative to the project root, with ``/`` separators."""
        return relative_path(self.root_dir, path)

    async def request_approval(self, tool: Tool, arguments: dict[str, Any]) -> None:
        """Ask the user to approve a call; raise :class:`ToolError` unless approved."""
        approver = self.services.approver
        if approver is None:
            raise ToolError(
                f"{tool.name} needs the user's approval, but no JupyterLab window is connected "
                "to ask in; nothing was done"
            )
        if not await approver(tool, arguments):
            raise ToolError(f"The user did not approve {tool.name}; nothing was done")

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress of the current call to the client, when its surface supports it."""
        reporter = progress_reporter.get()
        if reporter is not None:
            reporter(progress, total, message)


T = TypeVar("T")


async def outside_the_call(work: Awaitable[T]) -> T:
    """Await ``work`` in a task of its own, in an empty context.

    What starting, restarting or connecting to a kernel makes lives as long as the kernel
    (the server's restarter and activity stream of it, a client's channels), and what opening
    a shared document makes as long as its room (jupyter-collaboration's awareness and save
    tasks): their timers, readers and tasks keep the context they were made in, and a tool
    call's context holds the call's handler and MCP session. Made here, they keep none.
    Cancelling the caller cancels ``work``.
    """

    async def run() -> T:
        return await work

    # A task copies the context it is created in (create_task's context= is 3.11's).
    task = contextvars.Context().run(asyncio.get_running_loop().create_task, run())
    return await task
