"""Tools from other packages, declared through an entry point.

A package adds tools with an entry point in the group ``jupyter_mcp.tools``. The entry point's
name is the plugin id; the object it loads (a module, an instance, or a class instantiated with
no arguments) has

- ``tools``: a list of declarations, each a dict (or an object with attributes) with the
  fields ``name`` (``[a-z0-9_]{1,40}``), ``description`` (1–4096 bytes), ``inputSchema`` (a dict,
  or a path inside the plugin's package to a JSON file: a self-contained JSON Schema of an object,
  at most 256 KiB, local ``$ref`` only), ``readOnly`` and ``destructive`` (both required booleans),
  and ``taskSupport`` (optional, default false: true when a call's work can outlast a client's
  request, so that MCP clients may run it as a task, within the same time budget);
- ``call(tool, arguments, ctx) -> str``: ``tool`` is the local name, ``arguments`` a dict already
  validated against the schema, ``ctx`` a :class:`PluginContext`. Structured results are returned
  as JSON text.

A tool is registered as ``<plugin id, every char outside [a-z0-9_] replaced by _>__<name>``.
Invalid declarations are refused with a log line; names that clash are withheld. Calls run in
the plugin's own worker threads with a time budget, so a stuck plugin never blocks the server.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import importlib.metadata
import importlib.resources
import inspect
import json
import logging
import queue
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from ..core.errors import ToolError
from ..core.paths import relative_path, resolve_in_root
from ..core.registry import Registry, Tool
from ..documents import files as documents

if TYPE_CHECKING:
    from ..core.context import ToolContext

ENTRY_POINT_GROUP = "jupyter_mcp.tools"
TOOL_NAME = re.compile(r"[a-z0-9_]{1,40}")
MAX_DESCRIPTION_BYTES = 4096
MAX_SCHEMA_BYTES = 256 * 1024
MAX_REGISTERED_NAME_BYTES = 64
MAX_ARGUMENT_BYTES = 1024 * 1024
MAX_RESULT_BYTES = 4 * 1024 * 1024
#: Calls of one plugin that may still run past their budget before new calls are refused.
MAX_OVERDUE_CALLS = 4


class PluginError(Exception):
    """A plugin or one of its declarations is invalid; the message says why."""


def normalise_plugin_id(plugin_id: str) -> str:
    """The plugin id with every character outside ``[a-z0-9_]`` replaced by ``_``."""
    return re.sub(r"[^a-z0-9_]", "_", plugin_id)


def registered_name(plugin_id: str, name: str) -> str:
    """The name a plugin tool is listed under: ``<normalised id>__<name>``."""
    return f"{normalise_plugin_id(plugin_id)}__{name}"


@dataclass
class PluginContext:
    """What a plugin's ``call`` sees of the server.

    ``root_dir`` is the project root, ``resolve(path)`` the path jail (a path in the project,
    relative or absolute, to a real path inside the root, or an error), ``contents_manager`` the
    server's ContentsManager (None outside a server), ``log`` a logger named after the plugin.
    ``call`` runs in a worker thread: use ``run_async`` to await the contents manager's coroutines.

    Files are read and written with ``read_text``, ``write_text`` and ``edit_text``, which do
    what the built-in file tools do: the path jail, notebooks as their percent-format text view,
    the per-file lock, the refusal to overwrite a file with unsaved edits in JupyterLab, and the
    reload of editors that show the file.
    """

    plugin_id: str
    root_dir: Path
    log: logging.Logger
    contents_manager: Any = None
    serverapp: Any = None
    _loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)
    _tool_context: ToolContext | None = field(default=None, repr=False)

    def resolve(self, path_in_project: str, *, must_exist: bool = False) -> Path:
        """The real path of ``path_in_project``; a :class:`ToolError` when outside the root."""
        return resolve_in_root(self.root_dir, path_in_project, must_exist=must_exist)

    def relative(self, path: Path | str) -> str:
        """``path`` relative to the project root, with ``/`` separators."""
        return relative_path(self.root_dir, Path(path))

    def _files(self) -> ToolContext:
        if self._tool_context is None:
            raise RuntimeError("No tool context: file helpers need a server or a harness")
        return self._tool_context

    def read_text(self, path: str) -> str:
        """The text of ``path`` (a project path): a notebook as its percent-format view.

        A :class:`ToolError` (its message fit for the agent) when the path is outside the
        project, missing, a folder or binary.
        """
        ctx = self._files()
        return documents.read_text(ctx, ctx.resolve(path, must_exist=True), path)

    def write_text(self, path: str, text: str) -> bool:
        """Store ``text`` as the content of ``path``, creating the file when it does not exist.

        For a notebook ``text`` is its percent-format view, merged into the notebook so that
        unchanged cells keep their outputs. Holds the file's lock, refuses (``ToolError``) a file
        with unsaved edits in JupyterLab, and reloads editors showing it. Returns False when the
        file already had this text. The folder must exist.
        """
        ctx = self._files()
        target = ctx.resolve(path)
        if target == ctx.root_dir or target.is_dir():
            raise ToolError(f"Not a file path: {path!r}")
        if not target.parent.is_dir():
            raise ToolError(f"Folder not found for {path}: create {ctx.relative(target.parent)}")
        with documents.transaction(ctx, [target]) as tx:
            return tx.write(target, path, text, create=not target.exists())

    def edit_text(self, path: str, change: Callable[[str], str]) -> bool:
        """Replace the text of an existing ``path`` by ``change(text)``, under the file's lock.

        ``change`` may raise :class:`ToolError` to refuse; then nothing is written. The same
        guards as :meth:`write_text` apply. Returns whether the file changed.
        """
        edit = documents.edit_text(self._files(), path, lambda text: (change(text), None))
        return edit.changed

    def run_async(self, value: Any, timeout: float | None = None) -> Any:
        """Wait, from the plugin's thread, for an awaitable run on the server's event loop.

        Plain values are returned as they are, so ``ctx.run_async(cm.get(path))`` works with
        synchronous and asynchronous contents managers alike.
        """
        if not inspect.isawaitable(value):
            return value
        if self._loop is None:
            raise RuntimeError("No event loop to run on: run_async needs a server or a harness")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            raise RuntimeError("run_async cannot wait on the event loop's own thread")

        async def _await() -> Any:
            return await value

        return asyncio.run_coroutine_threadsafe(_await(), self._loop).result(timeout)


@dataclass
class Declaration:
    """One valid tool declaration of a plugin."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool
    destructive: bool
    task_support: bool = False


def _field(raw: Any, name: str, alias: str | None = None) -> Any:
    """A declaration field from a dict or an object; ``...`` when absent."""
    for key in (name, alias):
        if key is None:
            continue
        if isinstance(raw, dict):
            if key in raw:
                return raw[key]
        elif hasattr(raw, key):
            return getattr(raw, key)
    return ...


def read_declaration(raw: Any, package: str | None) -> Declaration:
    """Check one declaration; :class:`PluginError` with the reason when it is invalid."""
    name = _field(raw, "name")
    if name is ...:
        raise PluginError("a tool declaration has no 'name'")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise PluginError(f"tool name {name!r} does not match [a-z0-9_]{{1,40}}")
    description = _field(raw, "description")
    if not isinstance(description, str):
        raise PluginError(f"tool {name}: 'description' must be a string")
    size = len(description.encode("utf-8"))
    if not 1 <= size <= MAX_DESCRIPTION_BYTES:
        raise PluginError(
            f"tool {name}: description is {size} bytes, it must be 1 to {MAX_DESCRIPTION_BYTES}"
        )
    flags = {}
    for spec_name, alias in (("readOnly", "read_only"), ("destructive", None)):
        value = _field(raw, spec_name, alias)
        if value is ...:
            raise PluginError(f"tool {name}: '{spec_name}' is required (true or false)")
        if not isinstance(value, bool):
            raise PluginError(f"tool {name}: '{spec_name}' must be true or false, got {value!r}")
        flags[spec_name] = value
    task_support = _field(raw, "taskSupport", "task_support")
    if task_support is ...:
        task_support = False
    elif not isinstance(task_support, bool):
        raise PluginError(f"tool {name}: 'taskSupport' must be true or false, got {task_support!r}")
    schema = _field(raw, "inputSchema", "input_schema")
    if schema is ...:
        raise PluginError(f"tool {name}: 'inputSchema' is required")
    try:
        schema = load_schema(schema, package)
        check_schema(schema)
    except PluginError as e:
        raise PluginError(f"tool {name}: {e}") from e
    return Declaration(
        name=name,
        description=description,
        input_schema=schema,
        read_only=flags["readOnly"],
        destructive=flags["destructive"],
        task_support=task_support,
    )


def load_schema(value: Any, package: str | None) -> dict[str, Any]:
    """The schema itself: a dict as given, or a JSON file read from a path inside ``package``."""
    if isinstance(value, dict):
        try:
            text = json.dumps(value)
        except (TypeError, ValueError) as e:
            raise PluginError(f"inputSchema is not JSON: {e}") from e
        if len(text.encode("utf-8")) > MAX_SCHEMA_BYTES:
            raise PluginError(f"inputSchema is over {MAX_SCHEMA_BYTES} bytes")
        return json.loads(text)
    if not isinstance(value, str):
        raise PluginError("inputSchema must be an object or a path inside the plugin's package")
    parts = PurePosixPath(value.replace("\\", "/")).parts
    if not parts or value.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        raise PluginError(f"inputSchema path {value!r} must be a relative path inside the package")
    if package is None:
        raise PluginError(f"inputSchema path {value!r} cannot be read: the plugin has no package")
    try:
        resource = importlib.resources.files(package).joinpath(*parts)
        data = resource.read_bytes()
    except (OSError, ModuleNotFoundError, TypeError) as e:
        raise PluginError(f"inputSchema file {value!r} cannot be read from {package}: {e}") from e
    if len(data) > MAX_SCHEMA_BYTES:
        raise PluginError(f"inputSchema file {value!r} is over {MAX_SCHEMA_BYTES} bytes")
    try:
        schema = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PluginError(f"inputSchema file {value!r} is not valid JSON: {e}") from e
    if not isinstance(schema, dict):
        raise PluginError(f"inputSchema file {value!r} must hold a JSON object")
    return schema


def check_schema(schema: dict[str, Any]) -> None:
    """A valid, self-contained JSON Schema of an object, or :class:`PluginError`."""
    if schema.get("type") != "object":
        raise PluginError('inputSchema must describe an object ("type": "object")')
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise PluginError(
            f"inputSchema is not a valid JSON Schema{' at ' + where if where else ''}: {e.message}"
        ) from e
    for ref in _references(schema):
        if not ref.startswith("#"):
            raise PluginError(f"inputSchema refers to {ref!r}; only local references (#...) work")
        if not _resolves(schema, ref):
            raise PluginError(f"inputSchema reference {ref!r} does not resolve")


def _references(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$ref", "$dynamicRef", "$recursiveRef") and isinstance(value, str):
                yield value
            elif key not in ("const", "enum", "default", "examples"):
                yield from _references(value)
    elif isinstance(node, list):
        for item in node:
            yield from _references(item)


def _resolves(schema: dict[str, Any], ref: str) -> bool:
    fragment = ref[1:]
    if not fragment:
        return True
    if not fragment.startswith("/"):
        return fragment in set(_anchors(schema))
    node: Any = schema
    for token in fragment[1:].split("/"):
        token = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


def _anchors(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("$anchor", "$dynamicAnchor") and isinstance(value, str):
                yield value
            elif key not in ("const", "enum", "default", "examples"):
                yield from _anchors(value)
    elif isinstance(node, list):
        for item in node:
            yield from _anchors(item)


def _package_of(obj: Any) -> str | None:
    """The import package a plugin object's schema paths are relative to."""
    if isinstance(obj, ModuleType):
        spec = obj.__spec__
        if spec is not None and spec.submodule_search_locations is not None:
            return obj.__name__
        return obj.__package__ or (spec.parent if spec else None) or None
    module_name = getattr(obj, "__module__", None) or type(obj).__module__
    module = importlib.import_module(module_name) if module_name else None
    return _package_of(module) if module is not None else None


class _Workers:
    """Daemon threads that run one plugin's calls.

    A call goes to an idle worker, or to a new thread when none is idle, so a slow or stuck
    call never delays another one, and stuck plugins never take threads from asyncio's default
    pool. Up to ``keep_idle`` workers wait for the next call, each for ``idle_seconds`` at most;
    the others end.
    """

    def __init__(self, name: str, keep_idle: int = 4, idle_seconds: float = 30.0) -> None:
        self.name = name
        self.keep_idle = keep_idle
        self.idle_seconds = idle_seconds
        self._jobs: queue.SimpleQueue[Callable[[], Callable[[], None]]] = queue.SimpleQueue()
        self._idle = 0
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], Callable[[], None]]) -> None:
        """Run ``job`` in a worker thread, then the function it returns (neither may raise).

        The worker counts itself idle before it runs that second function (which hands the
        result over), so a caller that calls again at once reuses the same thread.
        """
        with self._lock:
            spawn = self._idle <= 0
            if not spawn:
                self._idle -= 1
            # Queued under the lock, so that an idle worker that gives up sees it.
            self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._run, name=self.name, daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():
                        self._idle = max(0, self._idle - 1)
                        return
                continue
            deliver = job()
            with self._lock:
                stay = self._idle < self.keep_idle
                if stay:
                    self._idle += 1
            deliver()
            if not stay:
                return


class _Call:
    """Bookkeeping of one call: whether the plugin has returned yet."""

    __slots__ = ("finished",)

    def __init__(self) -> None:
        self.finished = False


class Plugin:
    """A loaded plugin: its id, object, valid tools and refused declarations."""

    def __init__(self, plugin_id: str, obj: Any, *, package: str | None = None) -> None:
        if inspect.isclass(obj):
            obj = obj()
        self.id = plugin_id
        self.obj = obj
        self.package = package if package is not None else _package_of(obj)
        self.log = logging.getLogger(f"jupyter_mcp.plugins.{plugin_id}")
        self.tools: list[Tool] = []
        #: Declarations that were refused: name (or position) → reason.
        self.refused: dict[str, str] = {}
        self._overdue: set[_Call] = set()
        self._lock = threading.Lock()
        self._workers = _Workers(f"jupyter_mcp-plugin-{plugin_id}")
        self._read_tools()

    def _read_tools(self) -> None:
        call = getattr(self.obj, "call", None)
        if not callable(call):
            raise PluginError("the plugin object has no call(tool, arguments, ctx) function")
        declarations = getattr(self.obj, "tools", None)
        if not isinstance(declarations, list | tuple):
            raise PluginError("the plugin object's 'tools' must be a list of declarations")
        for position, raw in enumerate(declarations):
            try:
                declaration = read_declaration(raw, self.package)
                name = registered_name(self.id, declaration.name)
                if len(name.encode("utf-8")) > MAX_REGISTERED_NAME_BYTES:
                    raise PluginError(
                        f"registered name {name} is over {MAX_REGISTERED_NAME_BYTES} bytes"
                    )
            except Exception as e:  # PluginError, or a declaration object that fails to answer
                try:
                    label = _field(raw, "name")
                except Exception:
                    label = None
                key = label if isinstance(label, str) else f"#{position}"
                reason = str(e) if isinstance(e, PluginError) else f"{type(e).__name__}: {e}"
                self.refused[key] = reason
                continue
            self.tools.append(self._tool(declaration, name))

    def _tool(self, declaration: Declaration, name: str) -> Tool:
        async def run(ctx: ToolContext, **arguments: Any) -> str:
            return await self.call(declaration.name, arguments, ctx)

        schema = declaration.input_schema
        return Tool(
            name=name,
            description=f"{declaration.description} (from plugin {self.id})",
            properties=dict(schema.get("properties") or {}),
            required=list(schema.get("required") or []),
            fn=run,
            title=f"{declaration.name.replace('_', ' ').capitalize()} ({self.id})",
            read_only=declaration.read_only,
            destructive=declaration.destructive,
            needs_approval=declaration.destructive,
            task_support=declaration.task_support,
            plugin=self.id,
            toolset="plugins",
            schema=schema,
            max_argument_bytes=MAX_ARGUMENT_BYTES,
        )

    def context(self, ctx: ToolContext, loop: asyncio.AbstractEventLoop | None) -> PluginContext:
        """The plugin's view of the tool context."""
        return PluginContext(
            plugin_id=self.id,
            root_dir=ctx.root_dir,
            log=self.log,
            contents_manager=ctx.services.contents_manager,
            serverapp=ctx.serverapp,
            _loop=loop,
            _tool_context=ctx,
        )

    async def call(self, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> str:
        """Run ``obj.call`` in a worker thread, within the time budget; check the result."""
        budget = ctx.settings.plugin_timeout
        with self._lock:
            overdue = len(self._overdue)
        if overdue >= MAX_OVERDUE_CALLS:
            raise ToolError(
                f"Plugin {self.id} has {overdue} calls still running past their time budget; "
                "nothing was done, try again later"
            )
        loop = asyncio.get_running_loop()
        plugin_ctx = self.context(ctx, loop)
        # A copy, so the plugin cannot change what the registry holds.
        own_arguments = json.loads(json.dumps(arguments))
        future: asyncio.Future[Any] = loop.create_future()
        context = contextvars.copy_context()
        this_call = _Call()

        def settle(outcome: tuple[bool, Any]) -> None:
            if not future.done():
                if outcome[0]:
                    future.set_result(outcome[1])
                else:
                    future.set_exception(outcome[1])

        def work() -> Callable[[], None]:
            try:
                outcome: tuple[bool, Any] = (
                    True,
                    context.run(self.obj.call, tool, own_arguments, plugin_ctx),
                )
            except BaseException as e:  # whatever the plugin raised becomes the tool's error
                if not isinstance(e, Exception) or isinstance(e, StopIteration):
                    e = RuntimeError(f"{type(e).__name__}: {e}")
                outcome = (False, e)
            finally:
                with self._lock:
                    this_call.finished = True
                    self._overdue.discard(this_call)

            def deliver() -> None:
                try:
                    loop.call_soon_threadsafe(settle, outcome)
                except RuntimeError:  # the loop closed while the plugin ran past its budget
                    pass

            return deliver

        def mark_overdue() -> None:
            with self._lock:
                if not this_call.finished:
                    self._overdue.add(this_call)

        self._workers.submit(work)
        try:
            result = await asyncio.wait_for(future, budget)
        except asyncio.TimeoutError as e:
            mark_overdue()
            self.log.warning("plugin %s: %s ran past its budget of %s s", self.id, tool, budget)
            raise ToolError(
                f"Plugin {self.id}: {tool} did not finish within its time budget of {budget:g} s; "
                "the call was abandoned (the plugin may still finish it in the background)"
            ) from e
        except asyncio.CancelledError:
            mark_overdue()
            raise
        except ToolError as e:
            raise ToolError(f"Plugin {self.id}: {e.message}") from e
        except Exception as e:
            self.log.debug("plugin %s: %s raised", self.id, tool, exc_info=e)
            message = str(e) or type(e).__name__
            raise ToolError(f"Plugin {self.id} failed in {tool}: {message}") from e
        if not isinstance(result, str):
            raise ToolError(
                f"Plugin {self.id}: {tool} returned {type(result).__name__}, not text; "
                "a plugin tool must return a string (JSON text for structured results)"
            )
        size = len(result.encode("utf-8"))
        if size > MAX_RESULT_BYTES:
            raise ToolError(
                f"Plugin {self.id}: the result of {tool} is {size} bytes, over the limit of "
                f"{MAX_RESULT_BYTES} bytes"
            )
        return result


def discover(group: str = ENTRY_POINT_GROUP) -> list[importlib.metadata.EntryPoint]:
    """The installed plugins' entry points, in a stable order."""
    found = importlib.metadata.entry_points(group=group)
    return sorted(found, key=lambda ep: (ep.name, ep.value))


def load_entry_point(entry_point: importlib.metadata.EntryPoint) -> Plugin:
    """Import an entry point and check its declarations; :class:`PluginError` when unusable."""
    try:
        obj = entry_point.load()
    except Exception as e:
        raise PluginError(f"cannot import {entry_point.value}: {type(e).__name__}: {e}") from e
    module = importlib.import_module(entry_point.module)
    try:
        return Plugin(entry_point.name, obj, package=_package_of(module))
    except PluginError:
        raise
    except Exception as e:  # a plugin's constructor or ``tools`` property that fails
        raise PluginError(f"cannot be set up: {type(e).__name__}: {e}") from e


class PluginHost:
    """The server's plugins: loads them, and keeps the registry's plugin tools in sync.

    The registry holds a plugin tool while its plugin is enabled and no other enabled plugin
    tool (or built-in tool) has the same registered name; clashing names are withheld.
    """

    def __init__(
        self,
        entry_points: Iterable[importlib.metadata.EntryPoint] | None = None,
        *,
        log: logging.Logger | None = None,
    ) -> None:
        self.entry_points = list(discover() if entry_points is None else entry_points)
        self.log = log or logging.getLogger("jupyter_mcp")
        #: Loaded plugins by entry point; None for plugins that failed to load.
        self.loaded: dict[importlib.metadata.EntryPoint, Plugin | None] = {}
        self.withheld: set[str] = set()
        self._said: set[str] = set()

    def _say(self, message: str, *args: Any) -> None:
        text = message % args
        if text not in self._said:
            self._said.add(text)
            self.log.warning(message, *args)

    def _load(self, entry_point: importlib.metadata.EntryPoint) -> Plugin | None:
        if entry_point not in self.loaded:
            plugin: Plugin | None = None
            try:
                plugin = load_entry_point(entry_point)
            except PluginError as e:
                self._say("jupyter_mcp: plugin %s refused: %s", entry_point.name, e)
            else:
                for key, reason in plugin.refused.items():
                    self._say(
                        "jupyter_mcp: plugin %s: declaration %s refused: %s", plugin.id, key, reason
                    )
            self.loaded[entry_point] = plugin
        return self.loaded[entry_point]

    def plugins(self) -> list[Plugin]:
        """The plugins loaded so far."""
        return [p for p in self.loaded.values() if p is not None]

    def sync(self, registry: Registry, disabled: Iterable[str] = ()) -> None:
        """Make the registry's plugin tools those of the enabled plugins, clashes withheld."""
        disabled = set(disabled)
        enabled = [
            plugin
            for entry_point in self.entry_points
            if entry_point.name not in disabled and (plugin := self._load(entry_point)) is not None
        ]
        counts = Counter(tool.name for plugin in enabled for tool in plugin.tools)
        builtin = {tool.name for tool in registry.all() if tool.plugin is None}
        wanted: dict[str, Tool] = {}
        withheld: set[str] = set()
        for plugin in enabled:
            for tool in plugin.tools:
                if counts[tool.name] > 1:
                    owners = sorted(
                        {p.id for p in enabled if any(t.name == tool.name for t in p.tools)}
                    )
                    self._say(
                        "jupyter_mcp: tool %s withheld: declared by more than one tool "
                        "(plugins %s)",
                        tool.name,
                        ", ".join(owners),
                    )
                    withheld.add(tool.name)
                elif tool.name in builtin:
                    self._say(
                        "jupyter_mcp: tool %s of plugin %s withheld: a built-in tool has that name",
                        tool.name,
                        plugin.id,
                    )
                    withheld.add(tool.name)
                else:
                    wanted[tool.name] = tool
        # Tools of plugins disabled after they loaded stay registered while their names are
        # free, so that the registry refuses a call with "plugin ... is disabled"; the
        # registry's policy hides them from every listing.
        idle = [
            plugin
            for entry_point, plugin in self.loaded.items()
            if plugin is not None and entry_point.name in disabled
        ]
        idle_counts = Counter(tool.name for plugin in idle for tool in plugin.tools)
        for plugin in idle:
            for tool in plugin.tools:
                taken = tool.name in wanted or tool.name in withheld or tool.name in builtin
                if not taken and idle_counts[tool.name] == 1:
                    wanted[tool.name] = tool
        for tool in registry.all():
            if tool.plugin is not None and wanted.get(tool.name) is not tool:
                registry.remove(tool.name)
        present = {tool.name for tool in registry.all()}
        for name, tool in wanted.items():
            if name not in present:
                registry.add(tool)
        self.withheld = withheld


def load_plugins(
    registry: Registry,
    *,
    disabled: Iterable[str] = (),
    log: logging.Logger | None = None,
    entry_points: Iterable[importlib.metadata.EntryPoint] | None = None,
) -> PluginHost:
    """Discover the installed plugins and register the tools of the enabled ones."""
    host = PluginHost(entry_points, log=log)
    host.sync(registry, disabled)
    count = sum(1 for tool in registry.all() if tool.plugin is not None)
    if host.entry_points:
        host.log.info("jupyter_mcp: %d plugin tools from %d plugins", count, len(host.plugins()))
    return host
