"""The ``JupyterMCP`` server extension: configuration, the shared tool context, the routes."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import os
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Int, List, TraitError, Unicode, Union, observe, validate

from .auth.provider import OAuthServer, OAuthSettings, OAuthUnavailable, site_for
from .auth.store import GrantStore
from .auth.store import default_path as default_grants_path
from .core.context import Settings, ToolContext
from .core.paths import is_inside, seal
from .core.registry import Registry
from .core.toolsets import TOOLSETS, unknown_toolsets
from .core.version import __version__
from .documents.folder_listing import list_in_one_hop
from .documents.jupyter_contents import serve_stable_ids, share_file_locks
from .execution.processes import kill_groups_now
from .kernels.managers import process_groups as kernel_process_groups
from .kernels.managers import stamp_new_kernels
from .lab.editor import EditorBridge
from .lab.live_notebooks import LiveNotebooks, collaboration
from .lab.ystore import prefer_file_store
from .plugins.host import load_plugins
from .prompts.catalog import Prompts
from .resources.changes import WriteLog
from .resources.project import ProjectResources
from .resources.registry import ResourceRegistry
from .resources.subscriptions import SubscriptionHub
from .services import build_services, warm_up
from .surfaces.mcp import MCPSurface, allowed_hosts
from .surfaces.routes import default_handlers
from .surfaces.seed_port import SeedPortListener, parse_port_range
from .tools import builtin_tools

#: Every setting's default, in one place (the fields of :class:`Settings`).
_DEFAULTS = Settings()


def both(first: Callable[[Path], None], then: Callable[[Path], None]) -> Callable[[Path], None]:
    """A file hook that calls ``first`` (which may raise to refuse), then ``then``."""

    def hook(path: Path) -> None:
        first(path)
        then(path)

    # Which hooks it calls, in order (the services' tests check the editor link is one of them).
    hook.hooks = (first, then)  # type: ignore[attr-defined]
    return hook


class JupyterMCP(ExtensionApp):
    """Serves the IDE tool set to MCP clients on the Jupyter server's own port."""

    name = "jupyter_mcp"
    app_name = "Jupyter MCP"
    description = __doc__
    load_other_extensions = True

    read_only = Bool(
        _DEFAULTS.read_only,
        config=True,
        help="Hide and refuse every tool that is not read-only.",
    )
    toolsets = List(
        Unicode(),
        default_value=list(TOOLSETS),
        config=True,
        help=(
            "Tool sets the server serves (default: all of them): "
            + ", ".join(TOOLSETS)
            + ". Tools of the other sets are hidden and refused; a connection can narrow the "
            "set further with ?toolsets=files,git on its URL."
        ),
    )
    disabled_tools = List(
        Unicode(),
        default_value=sorted(_DEFAULTS.disabled_tools),
        config=True,
        help="Names of tools to hide and refuse, for example ['run_command_on_background'].",
    )
    disabled_plugins = List(
        Unicode(),
        default_value=sorted(_DEFAULTS.disabled_plugins),
        config=True,
        help="Plugin ids whose tools are hidden and refused.",
    )
    result_window = Int(
        _DEFAULTS.result_window,
        config=True,
        help=(
            "Largest result window, in characters, that one call returns (resultEnd - resultStart)."
        ),
    )
    max_body_bytes = Int(
        _DEFAULTS.max_body_bytes,
        config=True,
        help="Largest request body, in bytes, that a tool route accepts.",
    )
    max_result_bytes = Int(
        _DEFAULTS.max_result_bytes,
        config=True,
        help="Largest result, in bytes, returned whole when the caller asked for no window.",
    )
    max_file_bytes = Int(
        _DEFAULTS.max_file_bytes,
        config=True,
        help="Largest file, in bytes, that the text tools read or edit.",
    )
    allowed_origins = List(
        Unicode(),
        default_value=[],
        config=True,
        help=(
            "Browser origins (such as 'https://example.org') allowed to call the tool routes, "
            "besides the server's own and those of ServerApp.allow_origin."
        ),
    )
    approval_timeout = Float(
        _DEFAULTS.approval_timeout,
        config=True,
        help="Seconds to wait for the user to approve a call in JupyterLab before it fails.",
    )
    action_approval_patterns = List(
        Unicode(),
        default_value=list(_DEFAULTS.action_approval_patterns),
        config=True,
        help=(
            "Glob patterns (case-insensitive) of JupyterLab command ids that execute_action_by_id "
            "runs only after the user approves them in JupyterLab. The default covers commands "
            "that delete, rename or move files, run code, drive kernels or the debugger, open "
            "terminals, log out or change extensions; ['*'] asks for every command."
        ),
    )
    plugin_timeout = Float(
        _DEFAULTS.plugin_timeout,
        min=0.001,
        config=True,
        help=(
            "Time budget, in seconds, of one call of a plugin tool; a call that takes longer "
            "fails and the server stops waiting for it."
        ),
    )
    port_range = Union(
        [Bool(), Unicode()],
        default_value=False,
        config=True,
        help=(
            "Also listen on the first free port of this range on 127.0.0.1, for clients that scan "
            "for an IDE: True or 'on' for 9960-9990, 'FIRST-LAST' for another range, False to "
            "turn it off. Same handlers and auth as the main port."
        ),
    )

    search_max_file_bytes = Int(
        _DEFAULTS.search_max_file_bytes,
        config=True,
        help="Files larger than this many bytes are skipped by search_in_files_content.",
    )
    search_cache_bytes = Int(
        _DEFAULTS.search_cache_bytes,
        config=True,
        help=(
            "Budget of the search index's in-memory text cache (characters of file text); "
            "files beyond it are read from disk on each search."
        ),
    )
    code_timeout = Float(
        _DEFAULTS.code_timeout,
        config=True,
        help=(
            "Seconds one code-intelligence call (symbols, references, refactorings) may take; "
            "a longer one is stopped and fails with an error."
        ),
    )

    session_idle_timeout = Float(
        _DEFAULTS.session_idle_timeout,
        min=1.0,
        config=True,
        help=(
            "Seconds a standard MCP session (protocol revisions before 2026-07-28) may go without "
            "a request before the server ends it; a client that went away without ending its "
            "session (it crashed, its machine slept) holds nothing for longer. A request on an "
            "ended session is answered 404, which tells the client to open a new one."
        ),
    )

    max_task_ttl = Float(
        _DEFAULTS.max_task_ttl,
        min=0.0,
        config=True,
        help=(
            "Longest time, in seconds, that an MCP task (a long tool call a client runs in the "
            "background and collects later) and its result are kept after the task ended; a "
            "client asking for a longer ttl, or for none, gets this one. A task is never "
            "dropped while it runs."
        ),
    )

    breakpoints_file = Unicode(
        "",
        config=True,
        help=(
            "JSON file where breakpoints are kept across restarts (keyed by project root); "
            "empty means <jupyter data dir>/jupyter_mcp/breakpoints.json."
        ),
    )

    tool_threads = Int(
        32,
        config=True,
        help=(
            "Threads that run tool calls. Calls that wait on git, jedi or a search hold one, "
            "so this bounds how many such calls run at once."
        ),
    )

    inline_calls = Bool(
        True,
        config=True,
        help=(
            "Run a standard MCP tool call that streams nothing in the request that carries "
            "it: in a session (protocol revisions before 2026-07-28), rather than hand it to "
            "the MCP SDK's per-session dispatcher task and back; at 2026-07-28, as one JSON "
            "answer rather than on the SDK's deferred event stream and its tasks (stopped "
            "when the client leaves, and pinged as the SDK pings when it runs long). The "
            "answers are the same. False sends every call the SDK's way."
        ),
    )

    warm_start = Bool(
        True,
        config=True,
        help=(
            "At start-up, start in the background what the first tool calls need (the search "
            "worker and its index of the project, the code-analysis worker), so that no first "
            "call waits for it; False starts each on first use."
        ),
    )

    freeze_startup_heap = Bool(
        True,
        config=True,
        help=(
            "Once the warm start is done, leave the objects the server has made so far out of "
            "the garbage collector's full collections (gc.freeze; given back at stop): they "
            "live as long as the server, and each full collection over them (~300,000 objects) "
            "held every request and kernel message for about 0.1 s, every few seconds under "
            "load. False leaves Python's collector as it is."
        ),
    )

    oauth = Bool(
        True,
        config=True,
        help=(
            "Be an OAuth authorization server for remote MCP clients (claude.ai and ChatGPT "
            "connectors, VS Code, ...): they sign in through Jupyter's own login and get a "
            "token for /mcp alone, with the scopes the user allows. False turns all of it off "
            "(no discovery, no endpoints, OAuth tokens refused)."
        ),
    )
    oauth_access_token_lifetime = Int(
        3600,
        min=60,
        config=True,
        help="Seconds an OAuth access token is valid; clients refresh it after that.",
    )
    oauth_refresh_token_lifetime = Int(
        30 * 86400,
        min=300,
        config=True,
        help=(
            "Seconds an OAuth refresh token stays valid; each refresh makes a new one, so a "
            "grant used at least this often lasts until it is revoked."
        ),
    )
    oauth_dynamic_registration = Bool(
        True,
        config=True,
        help=(
            "Let clients register themselves (OAuth Dynamic Client Registration, which many "
            "clients still use); False leaves only clients with a Client ID Metadata Document."
        ),
    )
    oauth_public_url = Unicode(
        "",
        config=True,
        help=(
            "The https address remote MCP clients reach this server at, when a tunnel or proxy "
            "in front of it changes the host or scheme (such as 'https://lab.example.org/'); "
            "the OAuth issuer and the tokens' audience are made from it. Empty: from each "
            "request (its Host, and its scheme, which Jupyter takes from X-Forwarded-Proto "
            "with ServerApp.trust_xheaders)."
        ),
    )
    oauth_grant_lifetime = Int(
        90 * 86400,
        min=3600,
        config=True,
        help=(
            "Seconds an OAuth grant lasts from the user's consent, however often its client "
            "refreshes (90 days); then the client must be allowed again."
        ),
    )
    oauth_allow_consent_by_others = Bool(
        False,
        config=True,
        help=(
            "Under JupyterHub, let users other than the server's owner (those it is shared "
            "with, admins) allow OAuth clients on it; by default only the owner can, since a "
            "client they allow acts as the owner."
        ),
    )
    oauth_file = Unicode(
        "",
        config=True,
        help=(
            "The file of OAuth grants and registered clients (tokens stored as digests, "
            "readable by the user alone); empty means <jupyter data dir>/jupyter_mcp/oauth.json."
        ),
    )
    oauth_allow_insecure_client_metadata = Bool(
        False,
        config=True,
        help=(
            "For tests only: fetch Client ID Metadata Documents over plain http from this "
            "machine (loopback). Never from another address, and never needed otherwise."
        ),
    )

    registry: Registry
    tool_context: ToolContext
    _warm_task: asyncio.Task[None] | None = None
    _froze_heap = False
    _stopped: asyncio.Future[None] | None = None
    #: What puts back the server's own methods the app wrapped (its contents managers' ``get``
    #: and ``save``, its kernel manager's factory).
    _restores: list[Callable[[], None]]

    def settings_snapshot(self) -> Settings:
        """The current policies as the plain object tools read (one trait per field)."""
        values: dict[str, Any] = {}
        for f in fields(Settings):
            value = getattr(self, f.name)
            if isinstance(value, list):
                # A snapshot is shared by concurrent calls: lists become immutable, of the
                # field's own kind (frozenset or tuple).
                kind: Any = f.default
                value = type(kind)(value)
            values[f.name] = value
        return Settings(**values)

    @observe(*(f.name for f in fields(Settings)))
    def _policy_changed(self, change: dict[str, Any]) -> None:
        if hasattr(self, "tool_context"):
            self.tool_context.settings = self.settings_snapshot()

    @validate("toolsets")
    def _check_toolsets(self, proposal: dict[str, Any]) -> Any:
        # "files,git" in one item is the command line's way: --JupyterMCP.toolsets=files,git
        names = [n for item in proposal["value"] for n in item.replace(",", " ").split()]
        unknown = unknown_toolsets(names)
        if unknown:
            raise TraitError(
                f"JupyterMCP.toolsets: unknown tool set{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; the tool sets are {', '.join(TOOLSETS)}"
            )
        return names

    @validate("oauth_public_url")
    def _check_public_url(self, proposal: dict[str, Any]) -> Any:
        value = proposal["value"]
        if not value:
            return value
        try:
            site_for("", "", "/", value)
        except OAuthUnavailable as e:
            raise TraitError(f"JupyterMCP.oauth_public_url {value!r}: {e}") from None
        parts = urlsplit(value)
        if not parts.hostname or parts.query or parts.fragment:
            raise TraitError(
                f"JupyterMCP.oauth_public_url {value!r} must be an address such as "
                "'https://lab.example.org/' (a host, a path at most, no query or fragment)"
            )
        return value

    @validate("port_range")
    def _check_port_range(self, proposal: dict[str, Any]) -> Any:
        try:
            parse_port_range(proposal["value"])
        except ValueError as e:
            raise TraitError(str(e)) from e
        return proposal["value"]

    @observe("disabled_plugins")
    def _plugins_changed(self, change: dict[str, Any]) -> None:
        # Tools are listed on every request: withdraw (or bring back) plugin tools at once.
        host = self.tool_context.services.plugins if hasattr(self, "tool_context") else None
        if host is not None:
            host.sync(self.registry, self.disabled_plugins)

    def _link_jupyter_server_extension(self, serverapp: Any) -> None:
        """Take the configuration; an invalid setting stops the server from starting.

        jupyter_server would log the error and load the extension anyway, with every setting
        of the failed batch back at its default: a misspelt tool set would serve every tool,
        and undo read_only on the way.
        """
        try:
            super()._link_jupyter_server_extension(serverapp)
        except TraitError as e:
            self.log.critical("jupyter_mcp: invalid configuration, not starting: %s", e)
            raise SystemExit(f"jupyter_mcp: invalid configuration: {e}") from e

    def initialize_settings(self) -> None:
        """Build the registry, the context every tool call shares, and its services.

        The one place that assembles the services: :func:`build_services` makes those every
        context has, then this adds those only a server has.
        """
        # The contents manager's root is the one JupyterLab's file browser shows.
        serverapp = self.serverapp
        assert serverapp is not None  # jupyter_server links the extension before this call
        contents_manager = getattr(serverapp, "contents_manager", None)
        root_dir = Path(getattr(contents_manager, "root_dir", None) or serverapp.root_dir)
        self._seal_credentials(root_dir)
        self._restores = []
        self.tool_executor = ThreadPoolExecutor(
            max_workers=self.tool_threads, thread_name_prefix="jupyter-mcp-tool"
        )
        self.tool_context = ToolContext(
            root_dir=root_dir,
            settings=self.settings_snapshot(),
            log=self.log,
            serverapp=self.serverapp,
            executor=self.tool_executor,
        )
        self.registry = Registry(builtin_tools())
        services = self.tool_context.services = build_services(
            self.tool_context, breakpoints_file=self.breakpoints_file
        )
        # The editor link to the JupyterLab windows: the editor tools' editor, the file tools'
        # write hooks (refuse unsaved files, reload written ones), the approver of calls, and
        # the activity panel's record of calls (long ones shown while they run).
        editor = EditorBridge(self.tool_context)
        services.editor = editor
        # Who wrote a file is remembered too, so that a session's own writes are not told to
        # its resource subscriptions.
        writes = services.writes = WriteLog()
        services.before_file_write = both(editor.before_file_write, writes.writing)
        services.on_file_written = both(editor.on_file_written, writes.written)
        services.approver = editor.approve
        # Notebooks open in JupyterLab (or shared, with jupyter-collaboration) change live, and
        # load through the contents manager with the cell ids the tools give out.
        services.notebooks = LiveNotebooks(self.tool_context, editor, services.notebooks)
        # jupyter-collaboration (loaded after this extension) keeps the shared documents'
        # updates in files, unless the user chose a store (see lab/ystore.py).
        shared = collaboration(serverapp)
        if shared is not None and prefer_file_store(shared) is not None:
            self.log.info("jupyter_mcp: shared documents' updates are kept in files")
        self._adapt_contents_managers()
        restore = stamp_new_kernels(self.serverapp)
        if restore is not None:
            self._restores.append(restore)
        self.registry.observers.append(editor.record_call)
        self.registry.start_observers.append(editor.call_started)
        self.log.info(
            "jupyter_mcp %s: %d tools for %s", __version__, len(self.registry.all()), root_dir
        )
        services.plugins = load_plugins(self.registry, disabled=self.disabled_plugins, log=self.log)
        # MCP resources, their subscriptions and the prompts built on them.
        project = ProjectResources(self.tool_context, editor, writes)
        services.resources = ResourceRegistry([project])
        services.subscriptions = SubscriptionHub(services.resources)
        services.prompts = Prompts(project)
        services.mcp_surface = MCPSurface(
            self.registry,
            self.tool_context,
            allowed_hosts=allowed_hosts(self.serverapp),
            inline_calls=self.inline_calls,
        )
        # MCP tasks show in the activity panel as the calls they are, outliving their request.
        services.mcp_surface.tasks.store.observers.append(editor.task_changed)
        services.oauth = self._make_oauth() if self.oauth else None
        services.seed_port = self._start_seed_port()
        # Jupyter stops its extensions on SIGTERM and on a confirmed Ctrl-C; a SIGINT without a
        # terminal ends the process without that, and a stop can be cut short. Then this ends,
        # as the process exits, what the server started.
        atexit.register(self._end_leftovers)

    def _seal_credentials(self, root_dir: Path) -> None:
        """Seal (see core/paths.py) this server's runtime folder, where its connection file
        with its token is, and its grants file: jupyter_core's default folders are sealed
        anyway, these may have been configured elsewhere."""
        runtime_dir = getattr(self.serverapp, "runtime_dir", None)
        grants = Path(os.path.realpath(self.oauth_file or default_grants_path()))
        # The grants file's folder and all in it (its lock, its temporary copies), unless the
        # file was put in the project's own folder or above: then the files alone.
        if is_inside(grants.parent, Path(os.path.realpath(root_dir))):
            places = [grants, grants.with_name(grants.name + ".lock")]
        else:
            places = [grants.parent]
        seal([p for p in (runtime_dir, *places) if p])

    def _adapt_contents_managers(self) -> None:
        """Have the server's contents managers (the app's and the handlers') hand out the
        tools' cell ids, save files under the tools' file locks and list a folder in one worker
        hop; a manager already doing so is left as it is."""
        serverapp = self.serverapp
        settings = getattr(getattr(serverapp, "web_app", None), "settings", {})
        for manager in (
            getattr(serverapp, "contents_manager", None),
            settings.get("contents_manager"),
        ):
            if manager is None:
                continue
            restores = (
                serve_stable_ids(manager, self.tool_context),
                share_file_locks(manager, self.tool_context),
                list_in_one_hop(manager),
            )
            self._restores.extend(restore for restore in restores if restore is not None)

    def _make_oauth(self) -> OAuthServer:
        """The OAuth authorization server, over the grants file of this user."""
        context = self.tool_context
        server_id: list[str] = []

        def identity() -> str:
            # Decided at the first request, once the server listens on its final port. Under
            # JupyterHub the prefix names the server (its port changes with each spawn).
            if not server_id:
                serverapp = self.serverapp
                prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX")
                if prefix and os.environ.get("JUPYTERHUB_API_TOKEN"):
                    where = f"hub {prefix}"
                else:
                    port = getattr(serverapp, "port", "")
                    base_url = getattr(serverapp, "base_url", "/")
                    where = f"port {port} {base_url}"
                server_id.append(f"{where} root {context.root_dir}")
            return server_id[0]

        return OAuthServer(
            GrantStore(self.oauth_file or None),
            server_id=identity,
            served_toolsets=lambda: context.settings.toolsets,
            settings=OAuthSettings(
                access_token_lifetime=float(self.oauth_access_token_lifetime),
                refresh_token_lifetime=float(self.oauth_refresh_token_lifetime),
                grant_lifetime=float(self.oauth_grant_lifetime),
                consent_by_others=self.oauth_allow_consent_by_others,
                dynamic_registration=self.oauth_dynamic_registration,
                allow_insecure_client_metadata=self.oauth_allow_insecure_client_metadata,
                public_url=self.oauth_public_url,
            ),
        )

    def _end_leftovers(self) -> None:
        """End the runs, background commands and kernels still running, all at once, without
        the event loop (the process is exiting; see :func:`kill_groups_now`).

        Further Ctrl-Cs are ignored from here on: one arriving in the middle (a user presses
        it twice) would end this with a KeyboardInterrupt and leave the rest running.
        """
        with contextlib.suppress(ValueError):  # not the main thread: no signal arrives here
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        services = self.tool_context.services
        kill_groups_now(
            [
                *services.runs.groups(),
                *services.background_commands.groups(),
                *kernel_process_groups(self.serverapp),
            ],
            grace=1.0,
        )

    def _start_seed_port(self) -> SeedPortListener | None:
        """Open the seed port-range listener when ``port_range`` asks for it."""
        port_range = parse_port_range(self.port_range)
        if port_range is None:
            return None
        listener = SeedPortListener(self.serverapp, *port_range, log=self.log)
        listener.start()
        return listener

    def initialize_handlers(self) -> None:
        """Register the extension's routes (surfaces/routes.py) under the server's base_url."""
        self.handlers.extend(default_handlers(self.tool_context, self.registry))

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Start the standard MCP session manager once the event loop runs, and have the
        contents manager hand out the tools' cell ids (JupyterLab and jupyter-collaboration
        load notebooks through it)."""
        surface = self.tool_context.services.mcp_surface
        assert surface is not None  # made in initialize_settings, which runs first
        await surface.start()
        # Again now that every extension is loaded: one may have replaced the contents manager
        # (jupytext's server extension does, building its own from the configured class).
        self._adapt_contents_managers()
        if self.tool_context.services.oauth is not None:
            self.tool_context.services.oauth.start()
        if self.warm_start:
            # Not awaited: the server serves at once, and a call that needs something still
            # starting waits for that one thing.
            self._warm_task = asyncio.get_running_loop().create_task(self._warm_up())

    async def _warm_up(self) -> None:
        await warm_up(self.tool_context.services, self.log)
        if self.freeze_startup_heap and not self._froze_heap:
            # What start-up left as garbage is collected first (once, ~0.1 s), so that only
            # live objects are set aside.
            gc.collect()
            gc.freeze()
            self._froze_heap = True
            self.log.debug("jupyter_mcp: %d start-up objects set aside", gc.get_freeze_count())

    async def stop_extension(self) -> None:
        """Stop every service (sessions, runs, commands, worker processes, listeners).

        Jupyter calls this again when its stop is asked for again (each further Ctrl-C or
        SIGTERM): a later call waits for the first, which stops everything once.
        """
        if self._stopped is None:
            self._stopped = asyncio.ensure_future(self._stop_services())
        await asyncio.shield(self._stopped)

    async def _stop_services(self) -> None:
        serverapp = self.serverapp
        # Asked to stop (a signal, or ServerApp.stop): the process is ending. Jupyter starts
        # its whole stop again on each further SIGINT or SIGTERM, and the first of the two to
        # finish stops the event loop under the other, kernels half shut down: from now on
        # those signals are only logged. The exit still ends what is left (_end_leftovers).
        ending = bool(getattr(serverapp, "_stopping", False))
        if ending:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(ValueError):  # not the main thread
                    signal.signal(sig, self._already_stopping)
        if self._warm_task is not None:
            self._warm_task.cancel()
        if self._froze_heap:
            # An embedding process (tests, a server started in-process) goes on without us:
            # what start-up made becomes collectable again.
            gc.unfreeze()
            self._froze_heap = False
        restores = getattr(self, "_restores", [])
        while restores:
            restores.pop()()
        context = getattr(self, "tool_context", None)
        if context is not None:
            await context.services.aclose(self.log)
        executor = getattr(self, "tool_executor", None)
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
        if not ending:
            # Stopped in a process that goes on (tests, an embedding application): every
            # service is stopped, so nothing is left for the exit to end.
            atexit.unregister(self._end_leftovers)

    def _already_stopping(self, signum: int, frame: Any) -> None:
        self.log.warning(
            "jupyter_mcp: signal %d while the server stops; it goes on stopping", signum
        )
