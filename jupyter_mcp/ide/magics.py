"""``%mcp`` and ``%%mcp``: the IDE's tools from a notebook cell.

::

    %mcp tools [TOOLSET]                 the tools, by tool set (a table)
    %mcp TOOL key=value …                call a tool; its answer shows, and is the cell's value
    %%mcp TOOL [key=value …]             the cell is the arguments, as JSON or YAML
    %%mcp TOOL key=value … --body NAME   the cell is the text of argument NAME
    %mcp help [TOOL]                     this, or what a tool does and takes
    %mcp connect [URL] [--token TOKEN]   talk to another server (or find it again)
    %mcp server                          which server this talks to

Values are read by what the tool's schema says an argument is: ``pathInProject=notes.md`` is
text, ``line=3`` a number, ``background=true`` a boolean, ``cellIds=a1,b2`` or
``cellIds='["a1", "b2"]'`` a list, ``options={"newName": "total"}`` an object; quoted values
(``searchText="def main"``) are always text. A bare value fills the tool's first required
argument (``%mcp get_file_text_by_path README.md``). ``{name}`` and ``$name`` put a Python
variable in, as in every line magic.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from .api import IDE, python_type, type_text
from .client import ToolError, ToolInfo

_KEY = re.compile(r"([A-Za-z_][\w.-]*)=")
_CLOSING = {"[": "]", "{": "}"}


def _scan_value(text: str, start: int) -> tuple[str, str, int]:
    """The value starting at ``start``: its text, its kind (``quoted``, ``json`` or ``bare``)
    and where it ends."""
    if start >= len(text):
        return "", "bare", start
    first = text[start]
    if first in "\"'":
        i = start + 1
        while i < len(text):
            if text[i] == "\\":
                i += 2
                continue
            if text[i] == first:
                return text[start : i + 1], "quoted", i + 1
            i += 1
        raise UsageError(f"The quote opened at {text[start : start + 20]!r} is not closed")
    if first in _CLOSING:
        depth = 0
        quote = None
        i = start
        while i < len(text):
            char = text[i]
            if quote:
                if char == "\\":
                    i += 1
                elif char == quote:
                    quote = None
            elif char in "\"'":
                quote = char
            elif char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1], "json", i + 1
            i += 1
        raise UsageError(f"The bracket opened at {text[start : start + 20]!r} is not closed")
    end = start
    while end < len(text) and not text[end].isspace():
        end += 1
    return text[start:end], "bare", end


def split_line(text: str) -> list[tuple[str | None, str, str]]:
    """The words of a magic's line: ``(key or None, value text, kind)`` each; options
    (``--body NAME``) come as ``("--body", "NAME", "bare")``."""
    words: list[tuple[str | None, str, str]] = []
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        if text.startswith("--", i):
            option, _, i = _scan_value(text, i)
            name, _, inline = option.partition("=")
            if inline:
                words.append((name, inline, "bare"))
                continue
            while i < len(text) and text[i].isspace():
                i += 1
            value, kind, i = _scan_value(text, i)
            words.append((name, value, kind))
            continue
        key = _KEY.match(text, i)
        if key:
            value, kind, i = _scan_value(text, key.end())
            words.append((key[1], value, kind))
        else:
            value, kind, i = _scan_value(text, i)
            words.append((None, value, kind))
    return words


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    if kind is None and "enum" in schema:
        return {"string"} if all(isinstance(v, str) for v in schema["enum"]) else set()
    return set(kind) if isinstance(kind, list) else {kind} if kind else set()


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def convert(name: str, text: str, kind: str, schema: dict[str, Any] | None) -> Any:
    """A value of the line as the argument ``name`` of this ``schema`` wants it."""
    types = _types(schema or {})
    if kind == "quoted":
        try:
            inner = json.loads(text) if text[0] == '"' else ast.literal_eval(text)
        except (ValueError, SyntaxError):
            inner = text[1:-1]
        if not isinstance(inner, str) or not types or "string" in types:
            return inner
        # Quoted to keep its spaces, for an argument that is not text: '["a b", "c"]'.
        stripped = inner.strip()
        return convert(name, stripped, "json" if stripped[:1] in "[{" else "bare", schema)
    if kind == "json":
        try:
            return json.loads(text)
        except ValueError:
            pass
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise UsageError(f"{name}={text} is neither JSON nor a Python literal") from None
    if not types:
        try:
            return json.loads(text)
        except ValueError:
            return text
    if types <= {"string", "null"}:
        return None if text in ("null", "None") and "null" in types else text
    if types & {"integer", "number"}:
        try:
            return int(text)
        except ValueError:
            pass
        if "number" in types:
            try:
                return float(text)
            except ValueError:
                pass
    if "boolean" in types and text.lower() in _TRUE | _FALSE:
        return text.lower() in _TRUE
    if "array" in types:
        items = (schema or {}).get("items") or {}
        return [convert(name, part, "bare", items) for part in text.split(",") if part != ""]
    if "string" in types:
        return text
    raise UsageError(f"{name}={text}: the tool takes {type_text(python_type(schema or {}))} there")


def arguments_of(
    tool: ToolInfo, line_words: list[tuple[str | None, str, str]], body: str | None
) -> dict[str, Any]:
    """The arguments a ``%mcp TOOL …`` line (and a ``%%mcp`` cell's body) give ``tool``."""
    properties = tool.schema.get("properties") or {}
    required = [n for n in tool.schema.get("required") or [] if n in properties]
    arguments: dict[str, Any] = {}
    body_name = None
    positional = []
    for key, text, kind in line_words:
        if key == "--body":
            body_name = text
        elif key is not None and key.startswith("--"):
            raise UsageError(f"Unknown option {key} (%mcp help says what there is)")
        elif key is None:
            positional.append((text, kind))
        else:
            arguments[key] = convert(key, text, kind, properties.get(key))
    free = [n for n in required if n not in arguments]
    if len(positional) > len(free):
        raise UsageError(
            f"{tool.name}: {len(positional)} values without a name, but "
            + (f"only {', '.join(free)} can take one" if free else "no argument is left for them")
            + "; write them as name=value"
        )
    for name, (text, kind) in zip(free, positional, strict=False):
        arguments[name] = convert(name, text, kind, properties.get(name))
    if body is not None:
        if body_name:
            arguments[body_name] = body
        elif body.strip():
            arguments.update(_parse_body(body))
    elif body_name:
        raise UsageError("--body names the argument the cell's text goes to: use it with %%mcp")
    return arguments


def _parse_body(body: str) -> dict[str, Any]:
    """A ``%%mcp`` cell's body: a JSON object, or YAML that is a mapping."""
    text = body.strip()
    if text.startswith("{"):
        try:
            value = json.loads(text)
        except ValueError as e:
            raise UsageError(f"The cell is not valid JSON: {e}") from None
    else:
        import yaml

        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise UsageError(f"The cell is neither JSON nor valid YAML: {e}") from None
    if not isinstance(value, dict):
        raise UsageError(
            "The cell must be the tool's arguments (a JSON object, or YAML name: value lines); "
            "for a text argument, use --body NAME"
        )
    return value


@magics_class
class MCPMagics(Magics):
    """``%mcp`` / ``%%mcp`` (see the module docstring)."""

    def __init__(self, shell: Any, ide: IDE) -> None:
        super().__init__(shell)
        self.ide = ide

    @line_cell_magic
    def mcp(self, line: str, cell: str | None = None) -> Any:
        """Call the IDE's tools: ``%mcp TOOL key=value …``, ``%mcp tools``, ``%mcp help``."""
        words = split_line(line)
        if not words:
            print(__doc__.split("::", 1)[1].split("Values are read", 1)[0].strip("\n"))
            return None
        key, command, _ = words[0]
        rest = words[1:]
        if key is not None:
            raise UsageError("Start with the tool's name: %mcp TOOL key=value …")
        if command == "tools":
            return self.ide.tools(rest[0][1] if rest else None)
        if command == "help":
            return self._help(rest[0][1] if rest else None)
        if command == "connect":
            return self._connect(rest)
        if command == "server":
            address = self.ide.address
            print(address.describe() if address else "Not connected: %mcp connect [URL]")
            return None
        tool = self._tool(command)
        return self.ide.call(command, **arguments_of(tool, rest, cell))

    def _tool(self, name: str) -> ToolInfo:
        self.ide._session()
        tool = self.ide._tools.get(name)
        if tool is None:
            self.ide._load_tools()
            tool = self.ide._tools.get(name)
        if tool is None:
            raise ToolError(f"No tool {name} on this server; %mcp tools lists them")
        return tool

    def _help(self, name: str | None) -> None:
        if name is None:
            print(__doc__.strip())
            return
        from .api import docstring_of

        print(f"{name}: " + docstring_of(self._tool(name)))

    def _connect(self, words: list[tuple[str | None, str, str]]) -> None:
        url = next((text for key, text, _ in words if key is None), None)
        token = next((text for key, text, _ in words if key == "--token"), None)
        if token is None and url is not None and _asks_for_token(url):
            import getpass

            token = getpass.getpass(f"Token of {url} (not shown): ")
        address = self.ide.connect(url, token=token)
        print(f"jupyter-mcp: connected to {address.describe()}: {len(self.ide._tools)} tools")


def _asks_for_token(url: str) -> bool:
    """Whether ``%mcp connect URL`` must ask for a token: none in the environment or in a
    runtime file of that server."""
    from .server import NoServerError, address_for

    try:
        address_for(url)
    except NoServerError:
        return True
    return False
