"""The IDE's tools as Python methods: ``ide.search_in_files_content(searchText="def main")``.

``ide`` connects to the server the first time it is used (see :mod:`.server`) and gets one
method per tool, with the tool's arguments as its keyword parameters (names, types, defaults
from the tool's schema) and the tool's description as its docstring: Tab completes them and
``ide.get_file_text_by_path?`` shows what the tool does. A method returns the tool's answer as
Python data that displays itself (see :mod:`.results`); a failing tool raises
:class:`ToolError` with the tool's message.
"""

from __future__ import annotations

import inspect
import keyword
import threading
from pathlib import Path
from typing import Any, Literal, Union

from ..core.toolsets import TOOLSETS
from .client import Answer, Connection, ToolError, ToolInfo
from .results import ResultList, shown
from .server import NoServerError, ServerAddress, address_for, find_address

_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}

#: Arguments the notebook never passes: whole answers are read in windows by the client.
_WINDOW = ("resultStart", "resultEnd")

#: Tools that ask a notebook's kernel, which waits while it runs the cell that asks.
_KERNEL_TOOLS = frozenset(
    {
        "execute_notebook_cells",
        "execute_code_in_kernel",
        "get_kernel_variables",
        "get_kernel_completions",
        "debug_session",
    }
)


def python_type(schema: dict[str, Any]) -> Any:
    """A JSON Schema type as a Python annotation (``str``, ``int | None``, ``Literal[...]``)."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    types = list(dict.fromkeys(_TYPES.get(k, Any) for k in kinds if k is not None))
    if not types:
        return Any
    return types[0] if len(types) == 1 else Union[tuple(types)]  # noqa: UP007


def type_text(annotation: Any) -> str:
    """An annotation as a docstring writes it (``str``, ``int | None``)."""
    if isinstance(annotation, type):
        return "None" if annotation is type(None) else annotation.__name__
    return str(annotation).replace("typing.", "")


def _properties(info: ToolInfo) -> dict[str, dict[str, Any]]:
    properties = info.schema.get("properties") or {}
    return {k: v for k, v in properties.items() if k not in _WINDOW and isinstance(v, dict)}


def signature_of(info: ToolInfo) -> inspect.Signature:
    """The keyword-only signature of a tool's method, from its input schema."""
    required = list(info.schema.get("required") or [])
    properties = _properties(info)
    order = [
        *[n for n in required if n in properties],
        *[n for n in properties if n not in required],
    ]
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    odd = False
    for name in order:
        if not name.isidentifier() or keyword.iskeyword(name):
            odd = True  # reachable as **{"name": value} only
            continue
        schema = properties[name]
        default = inspect.Parameter.empty if name in required else schema.get("default")
        parameters.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=python_type(schema),
            )
        )
    if odd or info.schema.get("additionalProperties", False) is not False:
        parameters.append(
            inspect.Parameter("arguments", inspect.Parameter.VAR_KEYWORD, annotation=Any)
        )
    return inspect.Signature(parameters, return_annotation=Any)


def docstring_of(info: ToolInfo) -> str:
    """A tool's method docstring: what the tool does, its arguments, what it answers."""
    what = "reads only" if info.read_only else "may destroy" if info.destructive else "changes"
    lines = [info.description.strip(), "", f"{info.title} · tool set {info.toolset} · {what}"]
    properties = _properties(info)
    required = set(info.schema.get("required") or [])
    if properties:
        lines += ["", "Parameters", "----------"]
        for name, schema in properties.items():
            optional = "" if name in required else ", optional"
            lines.append(f"{name} : {type_text(python_type(schema))}{optional}")
            text = str(schema.get("description", "")).strip()
            extra = []
            if "default" in schema:
                extra.append(f"default {schema['default']!r}")
            if "enum" in schema:
                extra.append("one of " + ", ".join(repr(v) for v in schema["enum"]))
            if extra:
                text = f"{text} ({'; '.join(extra)})" if text else f"({'; '.join(extra)})"
            if text:
                lines.append(f"    {text}")
    shown_as = f"shown as the {info.view} view" if info.view else "shown as a table or text"
    lines += [
        "",
        "Returns",
        "-------",
        f"The tool's answer as Python data (dict, list or str), {shown_as}.",
        "A failing tool raises ToolError with the tool's message.",
    ]
    return "\n".join(lines)


def own_kernel_id() -> str | None:
    """The id of the kernel this code runs in (from its connection file), if in one."""
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).stem
    except Exception:
        return None
    return name[len("kernel-") :] if name.startswith("kernel-") else None


class IDE:
    """The tools of the Jupyter server this kernel talks to, as methods.

    ``ide.connect()`` finds the server (or ``ide.connect(url, token=...)`` names it); then
    every tool is a method of ``ide`` (of a class made for that server's tools, so Tab,
    ``?`` and signatures work as for any Python method). :meth:`call` calls a tool by name,
    connecting first when needed; :meth:`tools` lists the tools by tool set.
    """

    def __init__(self) -> None:
        self._connection: Connection | None = None
        self._tools: dict[str, ToolInfo] = {}
        self._lock = threading.RLock()

    # -- the connection -----------------------------------------------------------------------

    def connect(self, url: str | None = None, *, token: str | None = None) -> ServerAddress:
        """Connect to the server at ``url`` (its base URL; the token from ``token``, the
        environment or its runtime file), or to the one this kernel finds by itself."""
        with self._lock:
            address = address_for(url, token) if url else find_address()
            connection = Connection(address)
            self.close()
            self._connection = connection
            self._load_tools()
            return address

    def close(self) -> None:
        """End the session with the server (a later call connects again)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
            self._tools = {}
            self.__class__ = IDE

    @property
    def address(self) -> ServerAddress | None:
        """The server this talks to, once connected."""
        return self._connection.address if self._connection is not None else None

    @property
    def connected(self) -> bool:
        """Whether a session with the server is open."""
        return self._connection is not None and self._connection.open

    def _session(self) -> Connection:
        with self._lock:
            if not self.connected:
                self.connect(self._connection.address.url if self._connection else None)
            assert self._connection is not None
            return self._connection

    def _load_tools(self) -> None:
        """The server's tools, and this object's methods for them."""
        assert self._connection is not None
        self._tools = {tool.name: tool for tool in self._connection.tools()}
        methods = {
            tool.name: _method(tool)
            for tool in self._tools.values()
            if tool.name.isidentifier() and not hasattr(IDE, tool.name)
        }
        self.__class__ = type("IDE", (IDE,), {"__module__": __name__, **methods})

    # -- calls --------------------------------------------------------------------------------

    def call(self, tool: str, /, **arguments: Any) -> Any:
        """Call ``tool`` with ``arguments``; its answer as Python data that displays itself."""
        connection = self._session()
        if tool not in self._tools:
            self._load_tools()  # a plugin may have come since
            if tool not in self._tools:
                raise ToolError(
                    f"The server at {connection.address.url} has no tool {tool}; "
                    "%mcp tools (or ide.tools()) lists them"
                )
        self._refuse_own_kernel(connection, tool, arguments)
        return shown(connection.call(tool, arguments))

    def _refuse_own_kernel(
        self, connection: Connection, tool: str, arguments: dict[str, Any]
    ) -> None:
        """Refuse a tool that would ask this very kernel, busy with the cell that asks: it would
        wait for itself until it timed out."""
        own = own_kernel_id()
        if tool not in _KERNEL_TOOLS or own is None:
            return
        listed = connection.call("kernel_action", {"action": "list"}).value
        mine = next((k for k in listed if isinstance(k, dict) and k.get("kernelId") == own), None)
        if not mine or not mine.get("notebooks"):
            return  # not one of that server's notebook kernels
        target = arguments.get("pathInProject")
        if not target:
            focused = connection.call("get_open_in_editor_file_path", {}).value
            target = next((nb for nb in mine["notebooks"] if str(focused).endswith("/" + nb)), None)
        if target in mine["notebooks"]:
            raise ToolError(
                f"{tool} would ask this notebook's own kernel ({target}), which is busy running "
                "the cell that calls it: it would wait for itself. Run the code here, or name "
                "another notebook with pathInProject."
            )

    def tools(self, toolset: str | None = None) -> ResultList:
        """The server's tools (of ``toolset`` only, when given), by tool set."""
        self._session()
        self._load_tools()
        rows = [
            {
                "toolset": t.toolset,
                "name": t.name,
                "title": t.title,
                "readOnly": t.read_only,
                "view": t.view or "",
                "description": t.description.split(". ")[0].split("\n")[0],
            }
            for t in self._tools.values()
            if toolset is None or t.toolset == toolset
        ]
        rows.sort(key=lambda r: TOOLSETS.index(r["toolset"]) if r["toolset"] in TOOLSETS else 99)
        listing: ResultList = shown(Answer(tool="tools", value=rows, result={"content": []}))
        return listing

    def __repr__(self) -> str:
        if self._connection is None:
            return "<jupyter-mcp IDE: not connected (ide.connect(), or %load_ext jupyter_mcp)>"
        return (
            f"<jupyter-mcp IDE: {self._connection.address.describe()}, {len(self._tools)} "
            "tools: ide.<Tab> lists them, ide.tools() shows them by tool set>"
        )


def _method(info: ToolInfo) -> Any:
    """The method of one tool: its schema's keyword arguments, its description as docstring."""
    signature = signature_of(info)

    def method(self: IDE, /, *args: Any, **kwargs: Any) -> Any:
        if args:
            raise TypeError(f"{info.name}() takes keyword arguments only, as its tool does")
        try:
            signature.bind(self, **kwargs)
        except TypeError as e:
            raise TypeError(f"{info.name}(): {e}") from None
        # None means "not given": the tool's own default applies.
        return self.call(info.name, **{k: v for k, v in kwargs.items() if v is not None})

    method.__name__ = info.name
    method.__qualname__ = f"IDE.{info.name}"
    method.__doc__ = docstring_of(info)
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


_the_ide: IDE | None = None


def the_ide(*, connect: bool = True) -> IDE:
    """The one :class:`IDE` of this kernel; connected to its server when ``connect`` and it
    never was (a server that cannot be found is said, and ``ide.connect(url)`` can follow)."""
    global _the_ide
    if _the_ide is None:
        _the_ide = IDE()
    if connect and _the_ide.address is None:
        try:
            _the_ide.connect()
        except NoServerError as e:
            print(f"jupyter-mcp: {e}")
    return _the_ide
