"""Standard MCP for the tool registry: the official SDK's server, wired to our tools.

The ``mcp`` SDK owns the protocol (both eras: the legacy ``initialize`` handshake with sessions
and SSE, and 2026-07-28's ``server/discover`` with per-request ``_meta``); this module only
translates between the registry and the SDK's low-level ``Server``:

- ``tools/list`` lists the visible tools with their annotations and advertised schema, in pages;
- ``tools/call`` runs :meth:`Registry.call` with the result window always applied, reports
  progress and forwards the tool's log lines while it runs, and turns a :class:`ToolError` into an
  ``isError`` result; a long tool's call may run as a task instead (:mod:`jupyter_mcp.tasks`);
- :class:`MCPSurface` runs the SDK's Streamable HTTP session manager for the lifetime of the
  server extension and offers an ASGI entry point that the Tornado handler adapts.

Nothing here imports tornado: the HTTP layer lives in :mod:`jupyter_mcp.surfaces.asgi`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import functools
import json
import logging
import re
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..auth.scopes import Access
from ..core.context import (
    Actor,
    Services,
    ToolContext,
    current_actor,
    current_principal,
    progress_reporter,
    sharing_resolutions,
)
from ..core.errors import ToolError
from ..core.registry import CallResult, Registry, Tool
from ..core.toolsets import TOOLSETS_HEADER, request_toolsets
from ..core.version import __version__
from ..prompts.catalog import PromptError, Prompts
from ..resources.links import links_for
from ..resources.registry import ResourceError, ResourceRegistry, Scope
from ..resources.subscriptions import ListKind, Notice, Subscriber, SubscriptionHub
from ..tasks.protocol import TASK_NOTIFICATION, CallOrigin, TaskProtocol
from ..views.catalog import EXTENSION_ID, VIEW_DATA_KEY, pages_built, shows_views, view_of_tool
from ..views.data import view_data
from ..views.pages import ViewPages
from .inline_calls import InlineCalls, eligible_message

# Logging is deprecated at 2026-07-28 but still part of the legacy era we serve.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning, module=__name__)

log = logging.getLogger(__name__)

SERVER_NAME = "jupyter-mcp"

INSTRUCTIONS = """\
This server is a running Jupyter (JupyterLab) server used as an IDE.
- Paths (pathInProject, filePath, ...) are relative to the project root, the server's root_dir, \
with '/' separators; absolute paths inside the root also work; nothing outside it is reachable.
- Notebooks (.ipynb) read, search and edit as percent-format scripts ('# %%' code cells, \
'# %% [markdown]' cells); line numbers in a notebook refer to that text view. Writing the \
text back keeps outputs and metadata of the cells you did not change.
- The notebook tools (get_notebook_cells, edit_notebook_cell, ...) work on cells by cellId; \
without pathInProject they act on the notebook focused in JupyterLab. Give expectedSource to \
an edit so that a cell the user changed since you read it is not overwritten.
- Lines are 1-based and characters 0-based, except find_references, \
refactor_code_at_location, get_file_problems and symbol ranges, whose lines are 0-based.
- Every tool returns at most {window} characters per call. When a result is longer, a second \
text block gives its total length and the resultStart to call again with (resultEnd - \
resultStart <= {window}).
- The active editor is the document focused in JupyterLab; editor tools need an open window.
- A tool failure comes back as an isError result whose text says what to fix."""

#: Legacy requests that stop when their client leaves (see ``MCPSurface.cancel_call``): those
#: that may wait long, a tool call and the wait for a task's result.
STOPPED_WHEN_LEFT = frozenset({"tools/call", "tasks/result"})

#: Tools per ``tools/list`` page; clients follow ``nextCursor`` for the rest.
DEFAULT_PAGE_SIZE = 100

_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_DEFAULT_LEVEL: types.LoggingLevel = "warning"

#: Set by the HTTP handler around one POST: True when its answer goes out as one JSON body
#: rather than on an event stream of its own (see :func:`needs_stream`).
_json_answer: contextvars.ContextVar[bool]
_json_answer = contextvars.ContextVar("jupyter_mcp_json_answer", default=False)


#: Where the HTTP handler leaves a request's :class:`RequestFacts` in its ASGI scope.
REQUEST_FACTS = "jupyter_mcp.request"


@dataclass(frozen=True)
class RequestFacts:
    """What the HTTP handler read off one request to ``/mcp``, for the SDK's handlers of it.

    A call asks for its session and tool sets several times (its origin, log level, cancel
    scope, the session's bookkeeping); each ask was a scan of the request's headers and, for
    the tool sets, a parse of its query string. The handler reads them once and leaves them in
    the request's ASGI scope (:data:`REQUEST_FACTS`), which the SDK's request object keeps.
    """

    #: The ``Mcp-Session-Id`` header, as sent (None: none).
    session_id: str | None
    #: The tool sets the request chose (``?toolsets=``, ``X-MCP-Toolsets``; None: all).
    toolsets: frozenset[str] | None


def _facts(request: Any) -> RequestFacts | None:
    """The :class:`RequestFacts` the HTTP handler left on ``request`` (a Starlette request;
    None for one that did not come through it)."""
    scope = getattr(request, "scope", None)
    facts = scope.get(REQUEST_FACTS) if isinstance(scope, dict) else None
    return facts if isinstance(facts, RequestFacts) else None


class _PerRequestJSON:
    """The session manager's ``json_response`` flag, true for the legacy-session requests that
    need no stream (the HTTP handler decides, with :func:`needs_stream`).

    The SDK reads the flag where it answers a POST (in the request's context, which the handler
    it dispatches to inherits) and where it routes a session's outgoing messages (in the
    session's own task, started by the opening ``initialize``, which always streams: there the
    flag is false, and every message related to a request goes to that request's stream). A
    request answered as JSON therefore must never send a message related to it: the tool call
    sends no progress then, and its log lines go to the session's standalone stream.
    """

    def __bool__(self) -> bool:
        return _json_answer.get()


def needs_stream(message: Any) -> bool:
    """Whether a client message (parsed JSON) is answered on an event stream.

    An event stream carries what a request produces before its answer: progress (asked for with
    a progress token), log lines asked for per request (2026-07-28), a ``subscriptions/listen``
    stream. Everything else is answered as one JSON body, which spares the stream's set-up and
    its tasks. ``initialize`` streams too: it starts the session's own task (see
    :class:`_PerRequestJSON`). Notifications, responses, batches and malformed bodies are left
    to the SDK as they are.
    """
    if not isinstance(message, dict) or "id" not in message:
        return True
    method = message.get("method")
    if not isinstance(method, str) or method in ("initialize", "subscriptions/listen"):
        return True
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    if meta is None:
        return False
    if not isinstance(meta, dict):
        return True
    return meta.get("progressToken") is not None or bool(meta.get(types.LOG_LEVEL_META_KEY))


#: Set around one ``tools/call``: where the tool's log records go (thread-safe).
_call_log_sink: contextvars.ContextVar[Callable[[logging.LogRecord], None] | None]
_call_log_sink = contextvars.ContextVar("jupyter_mcp_call_log_sink", default=None)


def _python_level_name(levelno: int) -> types.LoggingLevel:
    if levelno >= logging.CRITICAL:
        return "critical"
    if levelno >= logging.ERROR:
        return "error"
    if levelno >= logging.WARNING:
        return "warning"
    if levelno >= logging.INFO:
        return "info"
    return "debug"


class _CallLogHandler(logging.Handler):
    """Hands the records logged during a ``tools/call`` to that call's client."""

    def emit(self, record: logging.LogRecord) -> None:
        sink = _call_log_sink.get()
        if sink is not None:
            sink(record)


def mcp_tool(tool: Tool, window: int) -> types.Tool:
    """The MCP declaration of a registry tool: schema (for a result window of ``window``
    characters), title and every annotation hint.

    The title is given once, as the tool's own (MCP prefers it to the annotations' title):
    every listing pays for each word of a declaration in every conversation.
    """
    hints = tool.annotations
    return types.Tool(
        name=tool.name,
        title=hints["title"],
        description=tool.description,
        input_schema=tool.advertised_schema(window),
        annotations=types.ToolAnnotations(
            read_only_hint=hints["readOnlyHint"],
            destructive_hint=hints["destructiveHint"],
            idempotent_hint=hints["idempotentHint"],
            open_world_hint=hints["openWorldHint"],
        ),
        # Where the era has it (2025-11-25): the tool may run as a task.
        execution=types.ToolExecution(task_support="optional") if tool.task_support else None,
    )


def encode_cursor(offset: int) -> str:
    """An opaque ``tools/list`` cursor for the page starting at ``offset``."""
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def decode_cursor(cursor: str | None) -> int:
    """The offset a cursor points at; an :class:`MCPError` (invalid params) when it is not ours."""
    if cursor is None:
        return 0
    try:
        offset = json.loads(base64.urlsafe_b64decode(cursor.encode()))["offset"]
    except (ValueError, KeyError, TypeError) as e:
        raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor!r}") from e
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    return offset


_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_safe(value: Any) -> Any:
    """``value`` with lone surrogates replaced by U+FFFD, so it is valid Unicode JSON.

    Python keeps bytes of file names that are not UTF-8 as lone surrogates; MCP clients (the
    SDK's pydantic parser among them) refuse the JSON escapes they become, and drop the session.
    """
    if isinstance(value, str):
        if value.isascii():  # most text, told without reading it (CPython keeps the flag)
            return value
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {unicode_safe(k): unicode_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unicode_safe(v) for v in value]
    return value


def call_tool_result(
    result: CallResult, protocol_version: str, links: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The MCP result of a successful call, in its wire form (the SDK validates it on the way
    out; building its models here first would only be dumped again).

    ``content[0]`` is exactly the result window; when more remains, a second text block says how
    long the whole result is and where to read on. Pictures follow, then ``links`` (the
    ``resource_link`` blocks of the files and cells the call named). A JSON object (or, from
    2026-07-28 on, any JSON value) is also given as ``structuredContent`` when the whole of it
    fits the window.
    """
    text = result.text
    # The text is the value's JSON (not ASCII-escaped) cut to the window, or the value itself:
    # a whole text holds every string of the value as it is, so one scan of it tells whether
    # the value has a lone surrogate, instead of a walk through the value.
    clean = text.isascii() or _SURROGATE.search(text) is None
    content: list[dict[str, Any]] = [
        {"type": "text", "text": text if clean else _SURROGATE.sub("\ufffd", text)}
    ]
    start, end = result.window or (0, result.total_length)
    if result.more:
        content.append(
            {
                "type": "text",
                "text": (
                    f"[Result window: characters {start}-{end} of {result.total_length}. "
                    f"Call again with resultStart={end} to read on.]"
                ),
            }
        )
    content.extend(
        {"type": "image", "data": image.data, "mimeType": image.mime_type}
        for image in result.images
    )
    if links:
        content.extend(unicode_safe(links))
    answer: dict[str, Any] = {"content": content, "isError": False, "resultType": "complete"}
    whole = start == 0 and not result.more
    if whole and isinstance(result.value, dict | list):
        if isinstance(result.value, dict) or protocol_version in MODERN_PROTOCOL_VERSIONS:
            answer["structuredContent"] = result.value if clean else unicode_safe(result.value)
    return answer


def error_result(message: str) -> dict[str, Any]:
    """A tool failure as the agent reads it: an ``isError`` result with the message."""
    return {
        "content": [{"type": "text", "text": unicode_safe(message)}],
        "isError": True,
        # The 2026-07-28 envelope; the SDK leaves it out of legacy answers.
        "resultType": "complete",
    }


class _Server(Server[Any]):
    """The SDK server, advertising ``tools.listChanged`` (and ``tasks``) on the legacy
    handshake."""

    _default_options: InitializationOptions | None = None
    #: ``capabilities.tasks`` of the legacy handshake (the SDK builds no such capability).
    tasks_capability: types.ServerTasksCapability | None = None
    #: The handshake era's ``capabilities.experimental`` (that era's schema has no
    #: ``extensions`` member, so an extension is declared there).
    experimental: dict[str, dict[str, Any]] | None = None

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """As the SDK's, with the tool, prompt and resource list changes announced.

        The SDK asks for the default options on every ``initialize``; they depend only on the
        handlers, set once in the constructor, so they are built once (building them cost
        about three tool calls per session opened).
        """
        default = (notification_options, experimental_capabilities, extensions) == (None,) * 3
        if default and self._default_options is not None:
            return self._default_options
        options = super().create_initialization_options(
            notification_options
            or NotificationOptions(
                tools_changed=True, prompts_changed=True, resources_changed=True
            ),
            experimental_capabilities or self.experimental,
            extensions,
        )
        if self.tasks_capability is not None:
            options.capabilities.tasks = self.tasks_capability
        if default:
            self._default_options = options
        return options


class _Relay:
    """Sends what one tool call produces (progress, log lines) to its client, in order.

    Sync tools run in a worker thread, so :meth:`put` only hands the item to the loop, where a
    task sends the items one after the other. The task starts with the first item: most calls
    report nothing and pay nothing.
    """

    def __init__(self, send: Callable[..., Any]) -> None:
        self._send = send
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[Any, ...] | None] | None = None
        self._task: asyncio.Task[None] | None = None

    def put(self, item: tuple[Any, ...]) -> None:
        """Queue one item; safe from any thread."""
        if _on_loop(self._loop):
            self._enqueue(item)
        else:
            self._loop.call_soon_threadsafe(self._enqueue, item)

    def _enqueue(self, item: tuple[Any, ...] | None) -> None:
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = self._loop.create_task(self._drain(self._queue))
        self._queue.put_nowait(item)

    async def _drain(self, queue: asyncio.Queue[tuple[Any, ...] | None]) -> None:
        while (item := await queue.get()) is not None:
            try:
                await self._send(*item)
            except Exception:  # a lost notification must never fail the call
                log.debug("jupyter_mcp: notification dropped", exc_info=True)

    async def close(self) -> None:
        """Send what is queued (before the call's result goes out), then stop."""
        if self._queue is not None and self._task is not None:
            self._queue.put_nowait(None)
            await self._task

    def cancel(self) -> None:
        """Stop without sending the rest (the call was cancelled)."""
        if self._task is not None:
            self._task.cancel()


class _ProgressRelay(_Relay):
    """``ctx.report_progress`` of one call as ``notifications/progress``."""

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        """The reporter installed in :data:`progress_reporter` for the call."""
        self.put((float(progress), None if total is None else float(total), message))


class _LogRelay(_Relay):
    """The log records of one call, at or above the client's level, as ``notifications/message``."""

    def __init__(self, send: Callable[..., Any], threshold: str) -> None:
        super().__init__(send)
        self._min = _LEVELS.index(threshold)

    def record(self, record: logging.LogRecord) -> None:
        """The sink installed for the call's log records (any thread)."""
        level = _python_level_name(record.levelno)
        if _LEVELS.index(level) < self._min:
            return
        try:
            text = record.getMessage()
        except Exception:  # a malformed log call must not break the tool
            text = str(record.msg)
        self.put((level, text))


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class MCPSurface:
    """The registry served over MCP: the SDK server, its session manager, their lifetime.

    ``start()`` enters the session manager's ``run()`` context in a task of its own and keeps it
    until ``stop()``; :meth:`handle` is the ASGI entry for one HTTP request to ``/mcp``.
    """

    def __init__(
        self,
        registry: Registry,
        ctx: ToolContext,
        *,
        allowed_hosts: list[str] | None = None,
        json_response: bool = False,
        page_size: int = DEFAULT_PAGE_SIZE,
        max_body_bytes: int | None = None,
        inline_calls: bool = True,
    ) -> None:
        self.registry = registry
        #: Whether legacy calls answered as JSON run in their POST's task (inline_calls).
        self.inline_calls = inline_calls
        # Per live legacy session, what answers those calls (made on its first request).
        self._inline: dict[str, InlineCalls] = {}
        self.ctx = ctx
        self.page_size = page_size
        # Level set by ``logging/setLevel`` per legacy session id (bounded, oldest dropped).
        self._levels: OrderedDict[str, types.LoggingLevel] = OrderedDict()
        # The standalone channel of each legacy session, for tools/list_changed.
        self._sessions: OrderedDict[str, Any] = OrderedDict()
        self._visible: tuple[str, ...] = ()
        # Each tool's declaration in wire form (see _wire_tool), by name.
        self._wire_tools: dict[str, tuple[Tool, int, dict[str, Any]]] = {}
        # The running calls of legacy sessions, by (session id, request id), to cancel.
        self._calls: dict[tuple[str, str], tuple[anyio.CancelScope, Any]] = {}
        # Resources, their subscriptions (both eras) and prompts: the app builds them once
        # (services); a surface made without them serves none.
        services = ctx.services if isinstance(ctx.services, Services) else None
        self.resources: ResourceRegistry = (
            services.resources if services and services.resources else ResourceRegistry()
        )
        self.prompts: Prompts | None = services.prompts if services else None
        self.hub: SubscriptionHub = (
            services.subscriptions
            if services and services.subscriptions
            else SubscriptionHub(self.resources)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server = _Server(
                SERVER_NAME,
                version=__version__,
                title="Jupyter MCP",
                description="A running Jupyter server as an IDE for AI agents.",
                instructions=INSTRUCTIONS.format(window=ctx.settings.result_window),
                get_tool_input_schema=self._input_schema,
                on_list_tools=cast(Any, self._list_tools),
                # The result goes out in its wire form (a dict, which the SDK's runner takes
                # besides its models): see call_tool_result.
                on_call_tool=cast(Any, self._call_tool),
                on_set_logging_level=self._set_level,
                on_list_prompts=self._list_prompts,
                on_get_prompt=self._get_prompt,
                on_list_resources=self._list_resources,
                on_list_resource_templates=self._list_resource_templates,
                on_read_resource=self._read_resource,
                on_subscribe_resource=self._subscribe,
                on_unsubscribe_resource=self._unsubscribe,
                on_completion=self._complete,
                on_subscriptions_listen=self._listen,
            )
        self.server.middleware.append(self._track_session)
        #: Whether views are offered: only with their pages built (make labextension).
        self.views = pages_built()
        if self.views:
            # Declared in both eras' places; tools link their view, and results carry its
            # data, only for a client that declared the extension too (see shows_views).
            self.server.extensions[EXTENSION_ID] = {}
            self.server.experimental = {EXTENSION_ID: {}}
            if not any(isinstance(p, ViewPages) for p in self.resources.providers):
                self.resources.add(ViewPages())
        # Long calls as MCP tasks, in both eras (tasks/): a middleware on tools/call and the
        # tasks/* methods; a task's answer is the plain call's (_answer_call).
        self.tasks = TaskProtocol(
            registry,
            ctx,
            origin=self._call_origin,
            answer=self._answer_call,
            server_info=lambda: self.server.server_info_stamp,
            stopped_when_left=self.stopped_when_left,
        )
        self.tasks.install(self.server)
        self.server.tasks_capability = self.tasks.legacy_capability()
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=allowed_hosts is not None,
            allowed_hosts=list(allowed_hosts or []),
            allowed_origins=[],
        )
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            # Each request that can produce nothing before its answer gets one JSON body.
            json_response=True if json_response else cast(bool, _PerRequestJSON()),
            security_settings=security,
            max_request_body_size=max_body_bytes or ctx.settings.max_body_bytes,
            session_idle_timeout=ctx.settings.session_idle_timeout,
        )
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stopping: asyncio.Event | None = None
        self._log_handler = _CallLogHandler()

    # -- lifetime ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while the session manager runs."""
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Run the session manager until :meth:`stop` (idempotent)."""
        if self._task is not None:
            assert self._ready is not None
            await self._ready.wait()
            return
        self._ready = asyncio.Event()
        self._stopping = asyncio.Event()
        self._visible = self._visible_names()
        self.ctx.log.addHandler(self._log_handler)
        self._task = asyncio.get_running_loop().create_task(self._run())
        serve_as_anyio_root(self._task)
        await self._ready.wait()
        if self._task.done():
            self._task.result()  # the manager failed to start: raise why

    async def _run(self) -> None:
        assert self._ready is not None and self._stopping is not None
        try:
            async with self.manager.run():
                self._ready.set()
                watcher = asyncio.get_running_loop().create_task(self._watch_tools())
                try:
                    await self._stopping.wait()
                finally:
                    watcher.cancel()
        finally:
            self._ready.set()

    async def stop(self) -> None:
        """End every session and the session manager."""
        self.ctx.log.removeHandler(self._log_handler)
        if self._task is None or self._stopping is None:
            return
        await self.tasks.close()
        await self.hub.close()  # listen streams end with their answer, sessions' watches go
        self._stopping.set()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=10)
        except (asyncio.TimeoutError, asyncio.CancelledError):
            self._task.cancel()
        except Exception:
            log.exception("jupyter_mcp: the MCP session manager stopped with an error")
        _stop_sse_shutdown_watcher()

    async def handle(
        self, scope: dict[str, Any], receive: Any, send: Any, *, json_answer: bool = False
    ) -> None:
        """ASGI entry for one request to the Streamable HTTP endpoint.

        ``json_answer``: answer with one JSON body, not an event stream (only for a request
        that :func:`needs_stream` says needs none).
        """
        # Always through start(): it waits until the manager runs, so a request that arrives
        # while another one's start is still under way does not reach a manager not yet running.
        await self.start()
        token = _json_answer.set(json_answer)
        try:
            await self.manager.handle_request(scope, receive, send)
        finally:
            _json_answer.reset(token)

    async def answer_inline(
        self, session_id: str, scope: dict[str, Any], message: Any, body: bytes
    ) -> Any:
        """The answer (a Starlette ``Response``) to a POST of legacy session ``session_id``
        that :meth:`answers_as_json`, when it is a call answered in this request's task
        (:mod:`~jupyter_mcp.surfaces.inline_calls`); None to hand it to :meth:`handle`."""
        inline = self._inline.get(session_id) if self.inline_calls else None
        if inline is None or not self.running:
            return None
        token = _json_answer.set(True)
        try:
            return await inline.answer(scope, message, body)
        finally:
            _json_answer.reset(token)

    def cancel_call(self, session_id: str, request_id: Any, owner: Any = None) -> None:
        """Stop the request ``request_id`` of legacy session ``session_id`` (its client left):
        a call, or another of :data:`STOPPED_WHEN_LEFT`.

        ``owner`` is the principal of the request that left (see ``session_owner``): only a
        call made by the same one is stopped, as the SDK only serves a session to its opener.
        """
        found = self._calls.get((session_id, str(request_id)))
        if found is not None and user_principal(found[1]) == user_principal(owner):
            found[0].cancel()

    def answers_as_json(self, message: Any, session_id: str) -> bool:
        """Whether a POST of legacy session ``session_id`` is answered as one JSON body.

        Yes unless it :func:`needs_stream`, or it is a call in a session that asked for log
        lines (``logging/setLevel``): those reach the client on the call's own stream, ahead
        of its result. Sessions at the default level get the rare warning on their standalone
        stream instead.
        """
        if needs_stream(message):
            return False
        return not (message.get("method") == "tools/call" and session_id in self._levels)

    def answers_modern_inline(self, message: Any, version: str | None) -> bool:
        """Whether a POST of protocol revision ``version`` (its ``MCP-Protocol-Version``) is a
        2026-07-28 call answered as one JSON body in the POST's own task (inline_calls).

        The SDK answers a 2026-07-28 request that is not in JSON mode on an event stream it
        defers: the handler runs in a task of its own beside one that watches the connection,
        and the answer crosses a memory stream back. A call that streams nothing
        (:func:`needs_stream`) sends nothing on that stream; in JSON mode the SDK runs it in
        the request's own task, with the same checks first (Host, Origin, ``Accept``, the
        era's ``_meta`` and headers) and the same error ladder. What the event stream gave
        besides, the HTTP handler gives: the call is stopped when its client leaves, and a
        call silent past the SDK's ping interval is answered on an event stream with pings
        (:func:`~jupyter_mcp.surfaces.asgi.serve_asgi`'s ``keepalive``).
        """
        return (
            self.inline_calls
            and version in MODERN_PROTOCOL_VERSIONS
            and eligible_message(message)
            and not needs_stream(message)
        )

    # -- resources, subscriptions, prompts, completion ----------------------------------------

    def _scope(self, rctx: Any) -> Scope:
        toolsets, read_only = _narrowing(rctx)
        return Scope(self.ctx, self.registry, toolsets, read_only)

    async def _list_resources(
        self, rctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        scope = self._scope(rctx)
        try:
            found, following = await self.resources.list_page(
                scope, params.cursor if params is not None else None
            )
        except ResourceError as e:
            raise _protocol_error(e, rctx) from None
        self._session_subscriber(rctx, scope)  # a legacy session that lists hears of changes
        return types.ListResourcesResult(resources=found, next_cursor=following)

    async def _list_resource_templates(
        self, rctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=self.resources.templates(self._scope(rctx))
        )

    async def _read_resource(
        self, rctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            contents = await self.resources.read(self._scope(rctx), str(params.uri))
        except ResourceError as e:
            raise _protocol_error(e, rctx) from None
        return types.ReadResourceResult(contents=contents)

    def _session_subscriber(self, rctx: Any, scope: Scope) -> Subscriber | None:
        """The subscriber of the request's legacy session (None without one)."""
        session_id = _session_id(rctx)
        if session_id is None or rctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        session = rctx.session

        async def send(notice: Notice) -> None:
            kind, value = notice
            if kind == "updated":
                await session.send_resource_updated(value)
            elif value == "resources":
                await session.send_resource_list_changed()

        return self.hub.session(session_id, scope, send)

    async def _subscribe(
        self, rctx: Any, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        subscriber = self._session_subscriber(rctx, self._scope(rctx))
        if subscriber is None:
            raise MCPError(
                types.INVALID_REQUEST, "resources/subscribe needs a session (initialize first)"
            )
        try:
            await self.hub.subscribe(subscriber, str(params.uri))
        except ResourceError as e:
            raise _protocol_error(e, rctx) from None
        return types.EmptyResult()

    async def _unsubscribe(
        self, rctx: Any, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        session_id = _session_id(rctx)
        subscriber = self.hub.known_session(session_id) if session_id is not None else None
        if subscriber is not None:
            self.hub.unsubscribe(subscriber, str(params.uri))
        return types.EmptyResult()

    async def _listen(
        self, rctx: Any, params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        """One ``subscriptions/listen`` stream: the resources asked for (each checked first:
        one the connection may not read refuses the whole request), the lists asked for, and
        the tasks asked for by the tasks extension's ``taskIds`` (the caller's own only)."""
        listen_id = rctx.request_id
        if listen_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        wanted = params.notifications
        uris = list(dict.fromkeys(wanted.resource_subscriptions or ()))
        asked: tuple[tuple[ListKind, bool | None], ...] = (
            ("tools", wanted.tools_list_changed),
            ("prompts", wanted.prompts_list_changed),
            ("resources", wanted.resources_list_changed),
        )
        lists = [kind for kind, on in asked if on]
        task_ids = self.tasks.listened(rctx.meta, wanted.model_extra)
        principal = user_principal(_user(rctx))
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: listen_id}
        session = rctx.session

        async def send(notice: Notice) -> None:
            kind, value = notice
            notification: Any
            if kind == "task":
                # The task as it is when the notice is sent: the latest state, once.
                state = self.tasks.notification_params(value, principal)
                if state is None:
                    return  # its ttl is over
                notification = types.Notification[dict[str, Any], str](
                    method=TASK_NOTIFICATION, params={**state, "_meta": meta}
                )
            elif kind == "updated":
                notification = types.ResourceUpdatedNotification(
                    params=types.ResourceUpdatedNotificationParams(uri=value, _meta=meta)
                )
            else:
                notification = _LIST_NOTIFICATIONS[value](
                    params=types.NotificationParams(_meta=meta)
                )
            await session.send_notification(notification, related_request_id=listen_id)

        subscriber = Subscriber(self._scope(rctx), send, lists=lists)
        try:
            for uri in uris:
                self.hub.check(subscriber, uri)
            self.hub.add_stream(subscriber)
        except ResourceError as e:
            raise _protocol_error(e, rctx) from None
        tells: dict[str, Callable[[], None]] = {}
        try:
            # Watched before the ack: a change while it is sent waits for it, not lost.
            for uri in uris:
                await self.hub.subscribe(subscriber, uri)
            for task_id in task_ids or ():
                told: Callable[[], None] = functools.partial(subscriber.offer, ("task", task_id))
                if self.tasks.watch(task_id, principal, told):
                    tells[task_id] = told
            # Of the tasks, only the caller's own are honored: another's is left out as unknown.
            extension = {"taskIds": list(tells)} if task_ids is not None else {}
            honored = types.SubscriptionFilter(
                tools_list_changed=True if wanted.tools_list_changed else None,
                prompts_list_changed=True if wanted.prompts_list_changed else None,
                resources_list_changed=True if wanted.resources_list_changed else None,
                resource_subscriptions=uris or None,
                **extension,
            )
            await session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(
                        notifications=honored, _meta=meta
                    )
                ),
                related_request_id=listen_id,
            )
            # Each task's state of now follows the ack: a task that ended before the stream
            # opened is told as well, and a client never has to poll once to catch up.
            for told in tells.values():
                told()
            await subscriber.run()
        except ResourceError as e:
            raise _protocol_error(e, rctx) from None
        finally:
            for task_id, told in tells.items():
                self.tasks.unwatch(task_id, told)
            self.hub.remove(subscriber)
        return types.SubscriptionsListenResult(_meta=meta)

    async def _list_prompts(
        self, rctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        if params is not None and params.cursor is not None:
            raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {params.cursor!r}")
        listed = self.prompts.listed(self._scope(rctx)) if self.prompts is not None else []
        return types.ListPromptsResult(prompts=listed)

    async def _get_prompt(
        self, rctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if self.prompts is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        try:
            return await self.prompts.get(
                self._scope(rctx), params.name, dict(params.arguments or {})
            )
        except PromptError as e:
            raise MCPError(types.INVALID_PARAMS, str(e), {"name": params.name}) from None

    async def _complete(
        self, rctx: Any, params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        scope = self._scope(rctx)
        ref = params.ref
        context = dict((params.context.arguments or {}) if params.context is not None else {})
        argument, value = params.argument.name, params.argument.value
        try:
            if isinstance(ref, types.PromptReference):
                if self.prompts is None:
                    raise PromptError(f"Unknown prompt: {ref.name}")
                found = await self.prompts.complete(scope, ref.name, argument, value, context)
            else:
                found = await self.resources.complete(scope, ref.uri, argument, value, context)
        except (PromptError, ResourceError) as e:
            raise MCPError(types.INVALID_PARAMS, str(e)) from None
        return types.CompleteResult(completion=found)

    # -- tools/list ---------------------------------------------------------------------------

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        """The schema the SDK checks a 2026-07-28 call's ``Mcp-Param-*`` headers against, asked
        on every such call with arguments: the one tool looked up, its declaration the cached
        one of ``tools/list`` (not every tool's policies checked and a schema built per call)."""
        try:
            tool = self.registry.get(name, self.ctx)
        except ToolError:
            return None
        schema: dict[str, Any] = self._wire_tool(tool)["inputSchema"]
        return schema

    async def _list_tools(
        self, rctx: Any, params: types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        offset = decode_cursor(params.cursor if params is not None else None)
        toolsets, read_only = _narrowing(rctx)
        visible = self.registry.visible(self.ctx, toolsets, read_only=read_only)
        if offset > len(visible):
            raise MCPError(types.INVALID_PARAMS, "Invalid cursor: past the end of the tool list")
        page = visible[offset : offset + self.page_size]
        following = offset + len(page)
        # In wire form, like call results (the SDK validates it on the way out): the envelope
        # (the caching fields of 2026-07-28 among them) from the SDK's model, the tools cached.
        answer = types.ListToolsResult(
            tools=[],
            next_cursor=encode_cursor(following) if following < len(visible) else None,
            # The list depends on who asks (an OAuth token's scopes, the chosen tool sets):
            # never to be served from a cache shared with others.
            cache_scope="private",
        ).model_dump(by_alias=True, mode="json", exclude_none=True)
        views = self._shows_views(rctx)
        answer["tools"] = [self._wire_tool(t, views) for t in page]
        return answer

    def _shows_views(self, rctx: Any) -> bool:
        """Whether the client of this request gets views (it declared the extension)."""
        if not self.views:
            return False
        session = getattr(rctx, "session", None)
        return shows_views(getattr(session, "client_capabilities", None))

    def _wire_tool(self, tool: Tool, views: bool = False) -> dict[str, Any]:
        """The wire form of :func:`mcp_tool`, made once per registered tool object and window.

        Every session lists the tools once, and 60 declarations with their schemas were the
        costliest answer a session asks for. A tool that is registered again (a plugin
        reloaded) is a new object and gets a new declaration. With ``views``, a tool that has
        a view links it (``_meta.ui.resourceUri``).
        """
        window = self.ctx.settings.result_window
        cached = self._wire_tools.get(tool.name)
        if cached is None or cached[0] is not tool or cached[1] != window:
            wire = mcp_tool(tool, window).model_dump(by_alias=True, mode="json", exclude_none=True)
            cached = self._wire_tools[tool.name] = (tool, window, wire)
        view = view_of_tool(tool.name) if views and tool.plugin is None else None
        if view is None:
            return cached[2]
        return {**cached[2], "_meta": {"ui": {"resourceUri": view.uri}}}

    # -- tools/call ---------------------------------------------------------------------------

    async def _call_tool(self, rctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
        name = params.name
        if self.registry.find(name) is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {name}")
        progress = self._progress_relay(rctx)
        logs = self._log_relay(rctx)
        origin = self._call_origin(rctx)
        reporter_token = progress_reporter.set(progress.report if progress else None)
        sink_token = _call_log_sink.set(logs.record if logs else None)
        finished = False
        try:
            with self.stopped_when_left(rctx) as scope:
                answer = await self._answer_call(origin, name, dict(params.arguments or {}))
            if scope.cancelled_caught:
                answer = error_result(f"{name} was stopped: the client went away")
            finished = True
        finally:
            progress_reporter.reset(reporter_token)
            _call_log_sink.reset(sink_token)
            for relay in (progress, logs):
                if relay is not None and not finished:
                    relay.cancel()
        for relay in (progress, logs):
            if relay is not None:
                await relay.close()
        return answer

    def _links(
        self,
        name: str,
        toolsets: frozenset[str] | None,
        read_only: bool,
        arguments: dict[str, Any],
        result: CallResult,
    ) -> list[dict[str, Any]]:
        """The ``resource_link`` blocks of a result's first window (none on later ones)."""
        if result.window is not None and result.window[0] > 0:
            return []
        tool = self.registry.find(name)
        if tool is None or tool.plugin is not None:
            return []
        scope = Scope(self.ctx, self.registry, toolsets, read_only)
        try:
            return links_for(scope, name, tool.toolset, arguments, result.value)
        except Exception:  # a link is a courtesy: it never fails the call
            log.debug("jupyter_mcp: no resource links for %s", name, exc_info=True)
            return []

    @contextlib.contextmanager
    def stopped_when_left(self, rctx: Any) -> Iterator[anyio.CancelScope]:
        """A cancel scope around a legacy request that :meth:`cancel_call` cancels when its
        client leaves (a 2026-07-28 request is cancelled by the SDK, which watches its
        connection). For the requests of :data:`STOPPED_WHEN_LEFT`, which may wait long."""
        session = _session_id(rctx)
        key = None if session is None else (session, str(rctx.request_id))
        with anyio.CancelScope() as scope:
            if key is not None:
                self._calls[key] = (scope, _user(rctx))
            try:
                yield scope
            finally:
                if key is not None:
                    self._calls.pop(key, None)

    async def _answer_call(
        self, origin: CallOrigin, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        """The wire answer of one call: the result window, or the failure as an ``isError``
        result. What a plain ``tools/call`` answers, and what a task keeps as its result."""
        # Its links name the paths the tool resolved: found again, not resolved again.
        with sharing_resolutions():
            return await self._answer_shared(origin, name, arguments)

    async def _answer_shared(
        self, origin: CallOrigin, name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        # What a legacy session's call changes while it runs is its own: its subscriptions
        # are not told of it (a task's call runs as long as the task does).
        actor = Actor(origin.session) if origin.session is not None else None
        token = current_actor.set(actor)
        # What the call starts to be found later by id (a run) is its principal's alone.
        principal = current_principal.set(origin.principal)
        try:
            result = await self.registry.call(
                name,
                arguments,
                self.ctx,
                always_window=True,
                toolsets=origin.toolsets,
                caller=origin.caller,
                read_only=origin.read_only,
            )
        except ToolError as e:  # the registry turns every failure, bugs too, into one
            return error_result(str(e))
        finally:
            if actor is not None:
                actor.running = False  # what its background work changes later is told
            current_actor.reset(token)
            current_principal.reset(principal)
        links = self._links(name, origin.toolsets, origin.read_only, arguments, result)
        answer = call_tool_result(result, origin.protocol_version, links)
        if origin.views:
            await self._add_view_data(answer, name, arguments, result)
        return answer

    async def _add_view_data(
        self, answer: dict[str, Any], name: str, arguments: dict[str, Any], result: CallResult
    ) -> None:
        """Give the result of a tool that has a view the data the view shows (a first window
        only: later ones are the same result read on)."""
        view = view_of_tool(name)
        if view is None or (result.window is not None and result.window[0] > 0):
            return
        # The tool's data is taken on the loop (a background run goes on changing it there);
        # shaping and bounding it, which may measure megabytes, in a thread.
        offered = result.view_data() if result.view_data is not None else None
        shown = await asyncio.to_thread(
            view_data, view, arguments, result.value, result.images, offered
        )
        answer.setdefault("_meta", {})[VIEW_DATA_KEY] = unicode_safe(shown)

    def _call_origin(self, rctx: Any) -> CallOrigin:
        """What a call needs of its request (a task keeps it past the request's end)."""
        session = _session_id(rctx)
        user = _user(rctx)
        legacy = rctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
        meta = rctx.meta or {}
        toolsets, read_only = _narrowing(rctx)
        return CallOrigin(
            protocol_version=rctx.protocol_version,
            principal=user_principal(user),
            toolsets=toolsets,
            read_only=read_only,
            # Who pages through result windows: one session of one user (none without one).
            caller=None if session is None else (session, str(getattr(user, "username", user))),
            session=session if legacy else None,
            progress_token=(
                meta.get("progressToken", meta.get("progress_token")) if legacy else None
            ),
            notifier=_standalone_notifier(rctx.session) if legacy and session else None,
            views=self._shows_views(rctx),
        )

    def _progress_relay(self, rctx: Any) -> _ProgressRelay | None:
        if _json_answer.get():
            return None  # nothing asked for progress (needs_stream)
        meta = rctx.meta or {}
        if meta.get("progressToken") is None and meta.get("progress_token") is None:
            return None
        return _ProgressRelay(rctx.session.report_progress)

    def _log_relay(self, rctx: Any) -> _LogRelay | None:
        if rctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            # The SDK applies the request's own opt-in level; nothing opted in, nothing sent.
            if not (rctx.meta or {}).get(types.LOG_LEVEL_META_KEY):
                return None
            threshold: str = "debug"
        else:
            threshold = self._levels.get(_session_id(rctx) or "", _DEFAULT_LEVEL)
        # A call answered as one JSON body has no stream of its own: its log lines go to the
        # session's standalone stream instead.
        related = None if _json_answer.get() else rctx.request_id

        async def send(level: types.LoggingLevel, text: str) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                sending = rctx.session.send_log_message(
                    level, text, logger="jupyter_mcp", related_request_id=related
                )
            await sending

        return _LogRelay(send, threshold)

    # -- logging/setLevel ------------------------------------------------------------------

    async def _set_level(self, rctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        session = _session_id(rctx)
        if session is not None:
            self._levels[session] = params.level
            self._levels.move_to_end(session)
            while len(self._levels) > 10_000:
                self._levels.popitem(last=False)
        return types.EmptyResult()

    # -- tools/list_changed -----------------------------------------------------------------

    async def _track_session(self, ctx: Any, call_next: Any) -> Any:
        """Remember each legacy session's channel, to announce tool list changes on it."""
        rctx = ctx
        session = _session_id(rctx)
        if session is not None and rctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._sessions[session] = rctx.session
            self._sessions.move_to_end(session)
            while len(self._sessions) > 10_000:
                self._sessions.popitem(last=False)
            if self.inline_calls and session not in self._inline:
                inline = InlineCalls.attach(
                    self.manager,
                    session,
                    rctx.session,
                    self.server,
                    functools.partial(self._inline.pop, session, None),
                )
                if inline is not None:
                    self._inline[session] = inline
        return await call_next(rctx)

    def _visible_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.registry.visible(self.ctx))

    async def _watch_tools(self) -> None:
        """Announce ``notifications/tools/list_changed`` when the visible tool set changes."""
        while True:
            await asyncio.sleep(1.0)
            self._forget_ended_sessions()
            current = self._visible_names()
            if current == self._visible:
                continue
            self._visible = current
            await self.notify_tools_changed()

    async def notify_tools_changed(self) -> None:
        """Tell every live legacy session and every listen stream that the tool list changed,
        and with it the prompts and resource templates (which follow the tools available)."""
        kinds: tuple[ListKind, ...] = ("tools", "prompts", "resources")
        for kind in kinds:
            self.hub.list_changed(kind)
        live = getattr(self.manager, "_server_instances", None)
        for session_id, session in list(self._sessions.items()):
            if live is not None and session_id not in live:
                self._sessions.pop(session_id, None)
                self._levels.pop(session_id, None)
                continue
            try:
                await session.send_tool_list_changed()
                await session.send_prompt_list_changed()
                await session.send_resource_list_changed()
            except Exception:
                log.debug("jupyter_mcp: list_changed not delivered", exc_info=True)

    def _forget_ended_sessions(self) -> None:
        """Drop what is kept of legacy sessions that ended (closed, timed out): their
        subscriptions, their channel (the SDK's session object, and through it its streams)
        and their log level. Kept until the tool list changed, every ended session's were
        held for the server's life (up to 10,000 of each).

        The SDK has no public list of its live sessions: its manager's ``_server_instances``
        is read, and without it (another SDK layout) only the bounds above apply."""
        live = getattr(self.manager, "_server_instances", None)
        if live is None:
            return
        for session_id in self.hub.sessions():
            if session_id not in live:
                self.hub.forget_session(session_id)
        kept: dict[str, Any]
        for kept in (self._sessions, self._levels, self._inline):
            for session_id in [s for s in kept if s not in live]:
                del kept[session_id]


_LIST_NOTIFICATIONS: dict[str, Any] = {
    "tools": types.ToolListChangedNotification,
    "prompts": types.PromptListChangedNotification,
    "resources": types.ResourceListChangedNotification,
}


def _protocol_error(error: ResourceError, rctx: Any) -> MCPError:
    """A resource error as each era spells it: not found is -32002 before 2026-07-28."""
    code = types.INVALID_PARAMS
    if error.not_found and rctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        code = RESOURCE_NOT_FOUND
    return MCPError(code, str(error), {"uri": error.uri})


#: The not-found code of the legacy era (2026-07-28 uses invalid params).
RESOURCE_NOT_FOUND = -32002


def serve_as_anyio_root(task: asyncio.Task[Any]) -> None:
    """Make ``task`` AnyIO's root task in the running loop, for as long as it runs.

    Each ``anyio.to_thread.run_sync`` (Jupyter's contents manager per entry of a folder, the
    collaboration's SQLite store three to six times per document update, the SDK) binds its
    worker thread to the loop's root task. AnyIO knows that task only under ``anyio.run`` or
    ``run_until_complete``; Jupyter runs its loop with ``run_forever``, so every call looked
    for it through all the loop's tasks, and then bound the thread to the calling request's
    task, stopping the thread when that request ended. Under bench_agents' load the loop held
    3,396 tasks (2,832 of them the collaboration store's queued writes), each thread hop scanned
    them all, and that scan was 13% of the loop's time; the writes queued behind slower hops,
    which made the scan longer still. The session manager's task lives as long as the extension
    (AnyIO already bound the SDK's threads to it): bound to it, threads are kept and reused, and
    a hop costs the same with any number of tasks. Once it ends, AnyIO looks again as before.
    """
    try:
        from anyio._backends._asyncio import _root_task
    except ImportError:  # another AnyIO layout: it finds a root task its own way
        return
    current = _root_task.get(None)
    if current is None or current.done():  # under anyio.run, say, AnyIO's own stays
        _root_task.set(task)


def _stop_sse_shutdown_watcher() -> None:
    """End sse-starlette's per-loop shutdown poller (it watches for uvicorn, not Jupyter).

    It would otherwise outlive the extension, waking twice a second until the loop closes.
    It starts again with the next event stream.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for task in asyncio.all_tasks(loop):
        coro = task.get_coro()
        if getattr(coro, "__qualname__", "") == "_shutdown_watcher" and "sse_starlette" in (
            getattr(getattr(coro, "cr_code", None), "co_filename", "") or ""
        ):
            task.cancel()


def _toolsets(rctx: Any) -> frozenset[str] | None:
    """The tool sets the HTTP request behind ``rctx`` chose (``?toolsets=``, the header).

    The Tornado handler refused a bad choice already; a legacy session's client sends every
    message to the URL it connected to, so the choice holds for the whole session.
    """
    request = getattr(rctx, "request", None)
    if request is None:
        return None
    facts = _facts(request)
    if facts is not None:
        return facts.toolsets
    query = getattr(request, "query_params", None)
    headers = getattr(request, "headers", None)
    try:
        return request_toolsets(
            query.get("toolsets") if query is not None else None,
            headers.get(TOOLSETS_HEADER) if headers is not None else None,
        )
    except ToolError:  # only when not served by our handler: show nothing, not all
        return frozenset()


def _standalone_notifier(session: Any) -> Callable[[], _Relay]:
    """Makes senders of raw notifications on a legacy session's standalone stream (a task's
    notifications: the request that started it has long been answered)."""

    async def send(method: str, params: dict[str, Any]) -> None:
        notification = types.Notification[dict[str, Any], str](method=method, params=params)
        await session.send_notification(cast(Any, notification))

    return lambda: _Relay(send)


def _user(rctx: Any) -> Any:
    """The SDK user of the HTTP request behind ``rctx`` (see ``session_owner``)."""
    return getattr(getattr(rctx, "request", None), "scope", {}).get("user")


def _narrowing(rctx: Any) -> tuple[frozenset[str] | None, bool]:
    """The tool sets a request may use and whether only read-only tools: the connection's
    choice (:func:`_toolsets`), within what its OAuth token allows (its principal's access)."""
    toolsets = _toolsets(rctx)
    access = getattr(_user(rctx), "access", None)
    if not isinstance(access, Access):
        return toolsets, False
    if access.toolsets is not None:
        toolsets = access.toolsets if toolsets is None else toolsets & access.toolsets
    return toolsets, access.read_only


def user_principal(user: Any) -> str | None:
    """The client id of an SDK user (None for no user: a server without auth)."""
    token = getattr(user, "access_token", None)
    return getattr(token, "client_id", None)


def _session_id(rctx: Any) -> str | None:
    """The ``Mcp-Session-Id`` the HTTP request behind ``rctx`` carried (None: none)."""
    request = getattr(rctx, "request", None)
    facts = _facts(request)
    if facts is not None:
        return facts.session_id
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    return headers.get("mcp-session-id")


def allowed_hosts(serverapp: Any) -> list[str] | None:
    """``Host`` values the SDK accepts (DNS-rebinding protection), or None to leave it off.

    The server's own loopback names, on any port (the seed port range listens on others too).
    When the server allows remote access the user chose the names it is reached by, and
    Jupyter's own Host check is off as well.
    """
    if serverapp is None or getattr(serverapp, "allow_remote_access", False):
        return None
    names = {"localhost", "127.0.0.1", "[::1]"}
    names.update(getattr(serverapp, "local_hostnames", None) or [])
    ip = getattr(serverapp, "ip", "") or ""
    if ip:
        names.add(f"[{ip}]" if ":" in ip and not ip.startswith("[") else ip)
    return sorted({f"{name}:*" for name in names} | names)
