"""The requests the server sends a JupyterLab window, as ``protocol.json`` lists them.

``protocol.json`` is the one list of the lab socket's request methods and their parameters:
the labextension imports the same file and types its handlers from it, so adding a request
means adding it there (and writing its sender here and its handler there, which the type
checkers and ``tests/lab/test_protocol.py`` then hold to the list). A parameter is given by an
example value of its JSON type; a name ending in ``?`` is optional.

:class:`WindowRequests` has one typed method per request, named as the request in snake_case
(``read_text`` sends ``readText``); a method whose name or parameters are not in the list
fails at import, so no method name is spelled by hand on this side.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

PROTOCOL: dict[str, Any] = json.loads(
    Path(__file__).with_name("protocol.json").read_text(encoding="utf-8")
)
#: Request method → ``{"doc", "params"}``.
REQUESTS: dict[str, dict[str, Any]] = PROTOCOL["requests"]

#: Sends one request (method, params) and returns the window's answer.
SendRequest = Callable[[str, dict[str, Any]], Awaitable[Any]]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Param:
    """One parameter of a request."""

    name: str
    #: The Python types of its example's JSON type (``object`` when the example is null).
    types: tuple[type, ...]
    required: bool

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` has this parameter's JSON type."""
        if isinstance(value, bool) and bool not in self.types:
            return False  # JSON's true is not a number
        return isinstance(value, self.types)


def _json_types(example: Any) -> tuple[type, ...]:
    if example is None:
        return (object,)
    if isinstance(example, bool):
        return (bool,)
    if isinstance(example, (int, float)):
        return (int, float)
    return (type(example),)


def params_of(method: str) -> dict[str, Param]:
    """The declared parameters of ``method``, by name."""
    found = {}
    for key, example in REQUESTS[method]["params"].items():
        name = key.removesuffix("?")
        found[name] = Param(name, _json_types(example), required=not key.endswith("?"))
    return found


def check_params(method: str, params: dict[str, Any]) -> None:
    """Raise :class:`ValueError` unless ``params`` are what protocol.json declares for ``method``.

    A wrong request is a bug on the server's side; it must fail here, not as an odd answer
    from the window.
    """
    if method not in REQUESTS:
        raise ValueError(f"protocol.json has no request {method!r}")
    declared = params_of(method)
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ValueError(f"{method} has no parameter {', '.join(unknown)}")
    for param in declared.values():
        if param.name not in params:
            if param.required:
                raise ValueError(f"{method} needs the parameter {param.name}")
        elif not param.accepts(params[param.name]):
            raise ValueError(f"{method}: {param.name} has the wrong type")


def method_name(python_name: str) -> str:
    """The request a :class:`WindowRequests` method sends: its name in camelCase."""
    head, *rest = python_name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def python_name(method: str) -> str:
    """The :class:`WindowRequests` method that sends ``method``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", method).lower()


def _request(stub: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """Make a stub with a request's parameters send that request (checked at import)."""
    method = method_name(stub.__name__)
    if method not in REQUESTS:
        raise TypeError(f"{stub.__qualname__}: protocol.json has no request {method!r}")
    signature = inspect.signature(stub)
    names = {
        name: parameter.default is inspect.Parameter.empty
        for name, parameter in signature.parameters.items()
        if name != "self"
    }
    declared = {param.name: param.required for param in params_of(method).values()}
    if names != declared:
        raise TypeError(f"{stub.__qualname__}: parameters differ from protocol.json's {method}")

    @functools.wraps(stub)
    async def send(*args: P.args, **kwargs: P.kwargs) -> R:
        bound = signature.bind(*args, **kwargs)
        self = bound.arguments.pop("self")
        params = {name: value for name, value in bound.arguments.items() if value is not None}
        return await self._send(method, params)

    return send


class WindowRequests:
    """The requests of protocol.json, one typed method each, sent through ``send``.

    The methods' bodies are empty: :func:`_request` sends the method's arguments as the
    request's parameters (optional ones left out when None) and returns the window's answer.
    """

    def __init__(self, send: SendRequest) -> None:
        self._send = send

    @_request
    async def read_text(self) -> Any:
        """The active document (``{path, type, text}`` or ``{path, type, cells, metadata}``)."""

    @_request
    async def replace_selection(self, text: str) -> Any:
        """Replace the active editor's selection; None when no document is open."""

    @_request
    async def replace_document(
        self, path: str, text: str | None = None, cells: list[dict[str, Any]] | None = None
    ) -> Any:
        """Replace the active document at ``path`` (a file's text or a notebook's cells)."""

    @_request
    async def open_file(self, path: str) -> Any:
        """Open ``path`` (relative to the root) as the active editor."""

    @_request
    async def list_commands(self) -> Any:
        """The commands the user could run now, as ``[{id, text}]``."""

    @_request
    async def has_command(self, id: str) -> Any:
        """Whether the command exists."""

    @_request
    async def execute_command(self, id: str) -> Any:
        """Start the command: ``"ok"`` or ``"not found"``."""

    @_request
    async def document_text(self, path: str) -> Any:
        """The text of the file editor showing ``path`` (unsaved edits included); None when
        it is not open there."""

    @_request
    async def notebook_snapshot(self, path: str) -> Any:
        """The notebook open at ``path`` in full, live; None when it is not open there."""

    @_request
    async def notebook_apply(self, path: str, ops: list[dict[str, Any]]) -> Any:
        """Apply cell ops to the notebook open at ``path`` in one undoable transaction."""

    @_request
    async def notebook_run(
        self,
        path: str,
        cellId: str,
        state: str,
        outputs: list[dict[str, Any]] | None = None,
        executionCount: int | None = None,
    ) -> Any:
        """Show a running cell: started ([*]), its outputs so far, or finished."""

    @_request
    async def confirm(self, tool: str, title: str, description: str, arguments: str) -> Any:
        """Ask the user to approve a tool call; True only when approved."""
