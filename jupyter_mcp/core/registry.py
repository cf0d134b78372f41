"""The tool registry: every tool is declared once here and every surface reads it.

A tool is a function over plain data and a :class:`~jupyter_mcp.core.context.ToolContext`. The
registry validates arguments against the tool's JSON schema, applies the server's policies
(read-only mode, disabled tools, tool sets, approval), runs the function off the event loop and
cuts the result window the caller asked for.

Every tool belongs to one named tool set (:data:`TOOLSETS`), given by the :class:`ToolSet` its
module declares (``tools = ToolSet("files")``); plugin tools are in ``plugins``. The server
serves the sets of ``c.JupyterMCP.toolsets``; a connection may narrow them further
(:func:`parse_toolsets` reads its ``toolsets`` parameter), and may be limited to the read-only
tools (``read_only`` on the calls below: a connection whose OAuth grant is read-only).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import inspect
import itertools
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for

from .cancel import cancel_event
from .errors import ToolError

# Defined in core/toolsets.py (importable without this module's jsonschema); named here too
# for the modules that import them from the registry.
from .toolsets import (  # noqa: F401
    TOOLSETS,
    TOOLSETS_HEADER,
    parse_toolsets,
    request_toolsets,
    unknown_toolsets,
)

if TYPE_CHECKING:
    from .context import ToolContext


def window_properties(window: int) -> dict[str, Any]:
    """The ``resultStart``/``resultEnd`` properties every listed schema adds.

    ``window`` is the server's largest window (``c.JupyterMCP.result_window``), so what a
    client is told is what :func:`parse_window` enforces.
    """
    # Every tool carries these, so they are said in as few words as will do: the server's
    # instructions explain the window, and a cut answer says where to read on.
    return {
        "resultStart": {"type": "integer", "minimum": 0, "default": 0},
        "resultEnd": {
            "type": "integer",
            "minimum": 1,
            "default": window,
            "description": f"Exclusive end character; at most resultStart+{window}.",
        },
    }


@dataclass
class Tool:
    """One tool: its wire declaration, its policy flags and the function that does the work.

    ``fn`` is called as ``fn(ctx, **arguments)``; a plain function runs in a worker thread, a
    coroutine function on the event loop. It returns a JSON value (a string, object or array)
    or raises :class:`ToolError`.
    """

    name: str
    description: str
    properties: dict[str, Any]
    fn: Callable[..., Any]
    required: list[str] = field(default_factory=list)
    #: The tool set it belongs to (one of :data:`TOOLSETS`).
    toolset: str = "plugins"
    title: str | None = None
    read_only: bool = False
    # None means MCP's own default: a tool that writes may destroy (overwrite, run commands).
    destructive: bool | None = None
    idempotent: bool = False
    open_world: bool = False
    # Extra fields are refused unless the tool passes them through (grouped tools do).
    additional_properties: bool = False
    # True, or a predicate over the arguments, when a call must be approved in the window.
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False
    # True when the tool's work can outlast a request (a run of cells, a command, a search of a
    # large project): MCP clients may then run it as a task, polled and collected later.
    task_support: bool = False
    # The plugin a tool comes from; None for built-in tools.
    plugin: str | None = None
    # A complete JSON Schema used as is instead of the one built from ``properties`` (plugins).
    schema: dict[str, Any] | None = None
    # Arguments larger than this, serialised as JSON, are refused before validation.
    max_argument_bytes: int | None = None
    # For a read-only tool whose answer is long: what its answer to ``arguments`` is computed
    # from, as a value that differs whenever the answer may (a file's stamp); None when that
    # cannot be told. The later result windows of one caller reuse the first window's text while
    # it is unchanged (see :class:`ResultWindows`).
    result_version: Callable[[ToolContext, dict[str, Any]], Awaitable[Hashable | None]] | None = (
        None
    )
    _validator: Any = field(default=None, init=False, repr=False)

    @property
    def input_schema(self) -> dict[str, Any]:
        """The schema of the tool's own arguments (without the result window)."""
        if self.schema is not None:
            return copy.deepcopy(self.schema)
        schema: dict[str, Any] = {"type": "object", "properties": self.properties}
        if self.required:
            schema["required"] = list(self.required)
        if not self.additional_properties:
            schema["additionalProperties"] = False
        return schema

    def advertised_schema(self, window: int) -> dict[str, Any]:
        """The schema clients see: the tool's arguments plus ``resultStart``/``resultEnd``
        for a result window of at most ``window`` characters."""
        schema = self.input_schema
        schema["properties"] = {**schema.get("properties", {}), **window_properties(window)}
        return schema

    @property
    def annotations(self) -> dict[str, Any]:
        """MCP tool annotations, every hint spelled out."""
        return {
            "title": self.title or self.name.replace("_", " ").capitalize(),
            "readOnlyHint": self.read_only,
            "destructiveHint": (
                self.destructive if self.destructive is not None else not self.read_only
            ),
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }

    def validate(self, arguments: dict[str, Any]) -> None:
        """Raise a :class:`ToolError` naming the field when ``arguments`` break the schema."""
        if self.max_argument_bytes is not None:
            size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8"))
            if size > self.max_argument_bytes:
                raise ToolError(
                    f"Arguments for {self.name} are {size} bytes, over the limit of "
                    f"{self.max_argument_bytes} bytes; nothing was done"
                )
        if self._validator is None:
            schema = self.input_schema
            self._validator = validator_for(schema, default=Draft202012Validator)(schema)
        error = next(iter(sorted(self._validator.iter_errors(arguments), key=_error_rank)), None)
        if error is not None:
            raise ToolError(
                f"Invalid arguments for {self.name}: {describe_validation_error(error)}"
            )

    def approval_needed(self, arguments: dict[str, Any]) -> bool:
        """Whether this call has to be approved by the user before it runs."""
        if callable(self.needs_approval):
            return bool(self.needs_approval(arguments))
        return bool(self.needs_approval)


def _error_rank(error: ValidationError) -> tuple[int, str]:
    # Report a missing field before a type problem deeper down; then by path for stability.
    return (0 if error.validator == "required" else 1, json.dumps(list(error.absolute_path)))


def describe_validation_error(error: ValidationError) -> str:
    """A one-line description of a schema violation that names the offending field."""
    where = ".".join(str(p) for p in error.absolute_path)
    # jsonschema types these as possibly unset; for the validators named below they are set.
    value: Any = error.validator_value
    schema: Any = error.schema
    instance: Any = error.instance
    if error.validator == "required":
        missing = [name for name in value if name not in (instance or {})]
        prefix = f"{where}." if where else ""
        return f"missing required field '{prefix}{missing[0] if missing else error.message}'"
    if error.validator == "additionalProperties":
        extra = sorted(set(instance) - set(schema.get("properties", {})))
        prefix = f"{where}." if where else ""
        return "unknown field " + ", ".join(f"'{prefix}{e}'" for e in extra)
    if error.validator == "type":
        expected = value
        expected_text = " or ".join(expected) if isinstance(expected, list) else expected
        return (
            f"field '{where}' must be {_article(expected_text)} {expected_text}, "
            f"got {_json_type(error.instance)}"
        )
    if error.validator == "enum":
        options = ", ".join(json.dumps(v) for v in value)
        return f"field '{where}' must be one of {options}, got {json.dumps(error.instance)}"
    return f"field '{where}': {error.message}" if where else error.message


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class ToolSet:
    """Collects the tools of one module: ``tools = ToolSet("files")`` then ``@tools.tool(...)``.

    ``name`` is the tool set (one of :data:`TOOLSETS`) every tool declared here belongs to, so a
    module's tools are selected and refused together.
    """

    def __init__(self, name: str) -> None:
        if name not in TOOLSETS:
            raise ValueError(f"Unknown tool set {name!r}; the tool sets are {', '.join(TOOLSETS)}")
        self.name = name
        self.tools: list[Tool] = []

    def tool(
        self,
        name: str,
        description: str,
        properties: dict[str, Any] | None = None,
        *,
        required: Iterable[str] = (),
        **flags: Any,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Declare ``fn`` as the tool ``name``; ``flags`` are :class:`Tool` fields."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.tools.append(
                Tool(
                    name=name,
                    description=description,
                    properties=properties or {},
                    required=list(required),
                    fn=fn,
                    toolset=self.name,
                    **flags,
                )
            )
            return fn

        return register

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)


@dataclass(frozen=True)
class Image:
    """A picture a tool shows beside its JSON value: ``data`` is base64, as notebooks keep it."""

    mime_type: str
    data: str


@dataclass
class WithImages:
    """What a tool returns to attach pictures (cell outputs) to its value.

    Standard MCP gives each image as an image content block after the text; the REST surfaces,
    which answer JSON only, give the value alone.
    """

    value: Any
    images: list[Image] = field(default_factory=list)


@dataclass
class WithViewData:
    """What a tool returns to offer the data a view of its result shows beyond the value: the
    outputs' MIME bundles of a run, the texts before and after an edit.

    ``data`` is called only for a client that shows views (see :mod:`jupyter_mcp.views`), so
    the other clients pay nothing for it; it answers plain JSON data.
    """

    value: Any
    data: Callable[[], dict[str, Any]]


@dataclass
class CallResult:
    """A tool's answer: its JSON value and the text form the result window is cut from."""

    value: Any
    text: str
    total_length: int
    window: tuple[int, int] | None = None
    images: list[Image] = field(default_factory=list)
    #: The tool's :class:`WithViewData` data, when it offered some.
    view_data: Callable[[], dict[str, Any]] | None = None

    @property
    def more(self) -> bool:
        """True when the window stopped before the end of the whole result."""
        return self.window is not None and self.window[1] < self.total_length


def summarize_arguments(arguments: dict[str, Any], *, limit: int) -> str:
    """``key=value`` pairs with each value cut to ``limit`` characters, for people to read."""
    parts = []
    for key, value in arguments.items():
        if isinstance(value, str) and len(value) > limit:
            value = value[:limit]  # never serialise a whole file's text just to cut it
        text = json.dumps(value, ensure_ascii=False)
        if len(text) > limit:
            text = text[: limit - 1] + "…"
        parts.append(f"{key}={text}")
    return ", ".join(parts)


def result_text(value: Any) -> str:
    """The text form of a result: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def parse_window(arguments: dict[str, Any], max_window: int) -> tuple[int, int] | None:
    """Take ``resultStart``/``resultEnd`` out of ``arguments``; None when neither was given."""
    # An explicit null is a wrong type like any other (the schema says integer), not "absent".
    for label in ("resultStart", "resultEnd"):
        if label in arguments and arguments[label] is None:
            raise ToolError(f"Invalid arguments: field '{label}' must be an integer, got null")
    start = arguments.pop("resultStart", None)
    end = arguments.pop("resultEnd", None)
    if start is None and end is None:
        return None
    for label, value in (("resultStart", start), ("resultEnd", end)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ToolError(f"Invalid arguments: field '{label}' must be an integer")
    start = 0 if start is None else start
    end = start + max_window if end is None else end
    if start < 0:
        raise ToolError("Invalid arguments: resultStart must be at least 0")
    if end < 1 or end <= start:
        raise ToolError("Invalid arguments: resultEnd must be greater than resultStart")
    if end - start > max_window:
        raise ToolError(f"Invalid arguments: resultEnd - resultStart must be at most {max_window}")
    return start, end


class ResultWindows:
    """The texts of long answers one caller is paging through, so that a later window does not
    compute the whole answer again.

    An entry is keyed by the caller (its MCP session and user), the tool and its arguments
    without the window, and holds the tool's :attr:`Tool.result_version` taken *before* the
    answer was computed. A later window is cut from it only while the version is unchanged; when
    it changed, the call is refused (the windows read so far belong to an answer that no longer
    holds). A tool without a version (a run of cells, a command, a search) keeps its long
    answers too, so that reading on never runs it again. The first window (``resultStart`` 0)
    always computes a fresh answer. Bounded in entries and in characters.
    """

    def __init__(self, entries: int = 16, chars: int = 16_000_000) -> None:
        self.entries = entries
        self.chars = chars
        self._texts: OrderedDict[Hashable, tuple[Hashable, str, Any]] = OrderedDict()

    def get(self, key: Hashable) -> tuple[Hashable, str, Any] | None:
        found = self._texts.get(key)
        if found is not None:
            self._texts.move_to_end(key)
        return found

    def drop(self, key: Hashable) -> None:
        self._texts.pop(key, None)

    def put(self, key: Hashable, version: Hashable, text: str, value: Any) -> None:
        self._texts.pop(key, None)
        if len(text) > self.chars:
            return
        self._texts[key] = (version, text, value)
        while len(self._texts) > self.entries or (
            sum(len(t) for _, t, _ in self._texts.values()) > self.chars
        ):
            self._texts.popitem(last=False)


#: ``observer(name, arguments, ok, error, duration_ms)``, told after every call on every surface.
CallObserver = Callable[[str, dict[str, Any], bool, "str | None", float], None]
#: ``observer(call_id, name, arguments)``, told when a call starts, before anything is checked.
StartObserver = Callable[[int, str, dict[str, Any]], None]

#: The id of the call running in this context (what :data:`StartObserver` was told), so that a
#: :data:`CallObserver` can match the end of a call to its start; None outside a call.
current_call_id: contextvars.ContextVar[int | None] = contextvars.ContextVar(
    "jupyter_mcp_call_id", default=None
)


class Registry:
    """All tools of the server, filtered by the context's policies on every request."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        #: Told about each finished call (the JupyterLab activity panel listens here).
        self.observers: list[CallObserver] = []
        #: Told about each call as it starts (the panel shows long calls as running).
        self.start_observers: list[StartObserver] = []
        self._call_ids = itertools.count(1)
        self.windows = ResultWindows()
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register ``tool``; a name may be registered once."""
        if tool.name in self._tools:
            raise ValueError(f"Tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def remove(self, name: str) -> None:
        """Withdraw a tool (plugins that were disabled or withheld)."""
        self._tools.pop(name, None)

    def all(self) -> list[Tool]:
        """Every registered tool, whatever the policies say."""
        return list(self._tools.values())

    def find(self, name: str) -> Tool | None:
        """The tool registered as ``name``, whatever the policies say; None when there is none."""
        return self._tools.get(name)

    def visible(
        self, ctx: ToolContext, toolsets: frozenset[str] | None = None, *, read_only: bool = False
    ) -> list[Tool]:
        """The tools a client may see now, in a stable order.

        ``toolsets`` are the sets the connection chose (None: all the server serves);
        ``read_only`` limits the connection to the read-only tools.
        """
        return [
            t for t in self._tools.values() if self._refusal(t, ctx, toolsets, read_only) is None
        ]

    def get(
        self,
        name: str,
        ctx: ToolContext,
        toolsets: frozenset[str] | None = None,
        *,
        read_only: bool = False,
    ) -> Tool:
        """The tool called ``name``, or a :class:`ToolError` saying why it cannot be called."""
        tool = self._tools.get(name)
        if tool is None:
            raise ToolError(f"Unknown tool: {name}")
        refusal = self._refusal(tool, ctx, toolsets, read_only)
        if refusal:
            raise ToolError(refusal)
        return tool

    def _refusal(
        self,
        tool: Tool,
        ctx: ToolContext,
        toolsets: frozenset[str] | None = None,
        read_only: bool = False,
    ) -> str | None:
        settings = ctx.settings
        if tool.name in settings.disabled_tools:
            return f"Tool {tool.name} is disabled on this server"
        if tool.plugin is not None and tool.plugin in settings.disabled_plugins:
            return f"Tool {tool.name} is disabled on this server (plugin {tool.plugin} is disabled)"
        if tool.toolset not in settings.toolsets:
            return (
                f"Tool {tool.name} is disabled on this server (its tool set {tool.toolset} "
                "is not in c.JupyterMCP.toolsets)"
            )
        if toolsets is not None and tool.toolset not in toolsets:
            return (
                f"Tool {tool.name} is not available on this connection: its tool set "
                f"{tool.toolset} is not among the chosen toolsets ({', '.join(sorted(toolsets))})"
            )
        if settings.read_only and not tool.read_only:
            return f"Tool {tool.name} is not available: the server is in read-only mode"
        if read_only and not tool.read_only:
            return (
                f"Tool {tool.name} is not available on this connection: it may use read-only "
                "tools only"
            )
        return None

    def listing(
        self, ctx: ToolContext, toolsets: frozenset[str] | None = None, *, read_only: bool = False
    ) -> list[dict[str, Any]]:
        """The seed ``list_tools`` form: name, description and input schema per tool."""
        return [
            {
                "name": t.name,
                "description": t.description,
                "inputSchema": t.advertised_schema(ctx.settings.result_window),
            }
            for t in self.visible(ctx, toolsets, read_only=read_only)
        ]

    async def call(
        self,
        name: str,
        arguments: Any,
        ctx: ToolContext,
        *,
        always_window: bool = False,
        toolsets: frozenset[str] | None = None,
        caller: Hashable | None = None,
        read_only: bool = False,
    ) -> CallResult:
        """Validate, approve and run one call; cut the result window.

        ``toolsets`` are the tool sets the caller's connection chose (None: all the server
        serves); a tool outside them is refused like a disabled one, and so is a tool that is
        not read-only when the connection is limited to ``read_only`` tools.

        With ``always_window`` (standard MCP) the window applies even when the caller gave
        no ``resultStart``/``resultEnd``; otherwise only when asked for. Every call is reported
        to :attr:`start_observers` as it starts and, failed or not, to :attr:`observers` when it
        ends, with :data:`current_call_id` set to the same id for both.

        Every failure but a cancellation comes out as a :class:`ToolError`: this is the one
        place that turns an unexpected exception (a bug in a tool) into the message the agent
        reads, on every surface.

        ``caller`` names who pages through the windows (an MCP session): with it, the later
        windows of a tool with a :attr:`Tool.result_version` are cut from the first one's text
        while the version says nothing changed (see :class:`ResultWindows`).
        """
        started = time.perf_counter()
        call_id = next(self._call_ids)
        token = current_call_id.set(call_id)
        try:
            self._notify_start(call_id, name, arguments)
            return await self._observed_call(
                name, arguments, ctx, always_window, toolsets, caller, started, read_only
            )
        finally:
            current_call_id.reset(token)

    async def _observed_call(
        self,
        name: str,
        arguments: Any,
        ctx: ToolContext,
        always_window: bool,
        toolsets: frozenset[str] | None,
        caller: Hashable | None,
        started: float,
        read_only: bool = False,
    ) -> CallResult:
        try:
            result = await self._call(
                name,
                arguments,
                ctx,
                always_window=always_window,
                toolsets=toolsets,
                caller=caller,
                read_only=read_only,
            )
        except ToolError as e:
            self._notify(name, arguments, False, str(e), started)
            raise
        except Exception as e:
            # A bug, not bad input: the agent gets a message, the log the traceback.
            ctx.log.exception("jupyter_mcp: tool %s raised", name)
            error = ToolError(f"{name} failed unexpectedly: {type(e).__name__}: {e}")
            self._notify(name, arguments, False, str(error), started)
            raise error from e
        except BaseException as e:
            self._notify(name, arguments, False, f"{type(e).__name__}: {e}", started)
            raise
        self._notify(name, arguments, True, None, started)
        return result

    def _notify_start(self, call_id: int, name: str, arguments: Any) -> None:
        if not self.start_observers:
            return
        shown = dict(arguments) if isinstance(arguments, dict) else {}
        for observer in list(self.start_observers):
            try:
                observer(call_id, name, shown)
            except Exception:  # an observer must never break a call
                logging.getLogger("jupyter_mcp").exception("Start observer %r failed", observer)

    def _notify(
        self, name: str, arguments: Any, ok: bool, error: str | None, started: float
    ) -> None:
        if not self.observers:
            return
        shown = dict(arguments) if isinstance(arguments, dict) else {}
        duration_ms = (time.perf_counter() - started) * 1000
        for observer in list(self.observers):
            try:
                observer(name, shown, ok, error, duration_ms)
            except Exception:  # an observer must never break a call
                logging.getLogger("jupyter_mcp").exception("Call observer %r failed", observer)

    async def _call(
        self,
        name: str,
        arguments: Any,
        ctx: ToolContext,
        *,
        always_window: bool,
        toolsets: frozenset[str] | None,
        caller: Hashable | None = None,
        read_only: bool = False,
    ) -> CallResult:
        tool = self.get(name, ctx, toolsets, read_only=read_only)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolError(
                f"Invalid arguments for {name}: expected a JSON object, got {_json_type(arguments)}"
            )
        arguments = dict(arguments)
        non_finite = _non_finite_number(arguments)
        if non_finite is not None:
            # NaN/Infinity pass "type": "number" but no tool can use them (a NaN wait never ends).
            where, value = non_finite
            raise ToolError(
                f"Invalid arguments for {name}: field '{where}' must be a finite number, "
                f"got {value}"
            )
        window = parse_window(arguments, ctx.settings.result_window)
        tool.validate(arguments)
        if tool.approval_needed(arguments):
            await ctx.request_approval(tool, arguments)
        if window is None and always_window:
            window = (0, ctx.settings.result_window)
        key: Hashable | None = None
        version: Hashable | None = _UNVERSIONED
        if window is not None and caller is not None:
            if tool.result_version is not None:
                # Taken before the answer is computed: a change while it is computed shows as
                # a new version at the next window.
                version = await tool.result_version(ctx, arguments)
                if version is not None:
                    key = _window_key(caller, name, arguments)
            elif window[0] > 0:
                key = _window_key(caller, name, arguments)
        if key is not None and window is not None and window[0] > 0:
            found = self.windows.get(key)
            if found is not None:
                if found[0] != version:
                    self.windows.drop(key)  # said once; a caller that goes on gets a fresh answer
                    raise ToolError(
                        f"The result of {name} changed since its first window was read (what it "
                        "reads was changed); read it again from resultStart 0"
                    )
                return _cut(found[2], found[1], window, [])
        value = await run_tool(tool, ctx, arguments)
        view_data: Callable[[], dict[str, Any]] | None = None
        if isinstance(value, WithViewData):
            value, view_data = value.value, value.data
        images: list[Image] = []
        if isinstance(value, WithImages):
            value, images = value.value, value.images
        text = result_text(value)
        if (
            key is None
            and version is _UNVERSIONED
            and caller is not None
            and window is not None
            and window[1] < len(text)
        ):
            # A long answer of a tool without a version: its later windows are cut from this
            # text, so that reading on neither runs the tool again (a run of cells, a command)
            # nor shows a different answer.
            key = _window_key(caller, name, arguments)
        if key is not None:
            self.windows.put(key, version, text, value)
        if window is None:
            limit = ctx.settings.max_result_bytes
            if len(text) > limit and len(text.encode("utf-8")) > limit:
                raise ToolError(
                    f"The result of {name} is {len(text.encode('utf-8'))} bytes, over the "
                    f"server's limit of {limit}; read it in windows with resultStart/resultEnd"
                )
            return CallResult(
                value=value,
                text=text,
                total_length=len(text),
                images=images,
                view_data=view_data,
            )
        return _cut(value, text, window, images, view_data)


#: The version of an answer whose tool has no :attr:`Tool.result_version`: kept windows of it
#: are reused as long as they are kept.
_UNVERSIONED = ("unversioned",)


def _window_key(caller: Hashable, name: str, arguments: dict[str, Any]) -> Hashable:
    return (caller, name, json.dumps(arguments, sort_keys=True, default=str))


def _cut(
    value: Any,
    text: str,
    window: tuple[int, int],
    images: list[Image],
    view_data: Callable[[], dict[str, Any]] | None = None,
) -> CallResult:
    start, end = window
    first = start == 0
    return CallResult(
        value=value,
        text=text[start:end],
        total_length=len(text),
        window=window,
        # Pictures and view data go with the first window only, so paging through a result
        # sends each once.
        images=images if first else [],
        view_data=view_data if first else None,
    )


def _non_finite_number(arguments: dict[str, Any]) -> tuple[str, float] | None:
    """The first NaN or infinite number in ``arguments`` (as its dotted field path), if any.

    Python's JSON decoders (and pydantic's) accept ``NaN``/``Infinity`` literals, which JSON
    itself does not have; walked without recursion since values may nest deeply.
    """
    stack: list[tuple[tuple[Any, ...], Any]] = [((), arguments)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            return ".".join(str(p) for p in path), value
        if isinstance(value, dict):
            stack.extend(((*path, k), v) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in enumerate(value))
    return None


def _in_thread(tool: Tool, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
    """A plain tool's call, in its worker thread; its path argument then resolved there too,
    for the answer's links (see :meth:`ToolContext.resolve_for_answer`)."""
    value = tool.fn(ctx, **arguments)
    ctx.resolve_for_answer(arguments.get("pathInProject"))
    return value


async def run_tool(tool: Tool, ctx: ToolContext, arguments: dict[str, Any]) -> Any:
    """Run the tool's function: coroutines on the loop, plain functions in a worker thread.

    Threads come from the context's own executor when it has one: tools that wait on git,
    jedi or search workers hold a thread for seconds, and must not starve asyncio's default
    pool, which the server needs for DNS look-ups and its own file work.
    """
    if inspect.iscoroutinefunction(tool.fn):
        return await tool.fn(ctx, **arguments)
    context = contextvars.copy_context()
    # The thread cannot be cancelled: it is told, and stops what it waits for (core/cancel.py).
    cancelled = cancel_event(context)
    call = functools.partial(context.run, _in_thread, tool, ctx, arguments)
    try:
        return await asyncio.get_running_loop().run_in_executor(ctx.executor, call)
    except asyncio.CancelledError:
        cancelled.set()
        raise
