"""protocol.json, the one list of the lab socket's requests, and the two sides held to it.

The Python side sends each request through one typed method of ``WindowRequests``; the
labextension types its handlers from the same file (``labextension/src/protocol.ts``), so
neither side spells a request method as a string of its own.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from jupyter_mcp.lab import protocol
from jupyter_mcp.lab.protocol import (
    REQUESTS,
    WindowRequests,
    check_params,
    method_name,
    params_of,
    python_name,
)

REPO = Path(__file__).resolve().parents[2]


def sender_names() -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(WindowRequests, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }


def test_every_request_has_exactly_one_typed_sender() -> None:
    assert sender_names() == {python_name(method) for method in REQUESTS}
    for method in REQUESTS:
        assert method_name(python_name(method)) == method


def test_a_sender_that_does_not_match_the_list_fails_at_import() -> None:
    with pytest.raises(TypeError, match="has no request 'readTexts'"):

        @protocol._request
        async def read_texts(self: Any) -> Any:
            """Not a request."""

    with pytest.raises(TypeError, match="parameters differ from protocol.json's openFile"):

        @protocol._request
        async def open_file(self: Any, file: str) -> Any:
            """``path`` misspelt."""

    with pytest.raises(TypeError, match="parameters differ"):

        @protocol._request
        async def replace_document(self: Any, path: str, text: str, cells: Any = None) -> Any:
            """``text`` is optional in the list."""


async def test_senders_send_their_request_with_the_given_parameters() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    async def send(method: str, params: dict[str, Any]) -> Any:
        sent.append((method, params))
        return True

    ask = WindowRequests(send)
    assert await ask.read_text() is True
    await ask.replace_document("a.py", text="new")
    await ask.replace_document("n.ipynb", cells=[{"id": "c", "cell_type": "code", "source": ""}])
    await ask.confirm(tool="t", title="T", description="d", arguments="a=1")
    assert sent == [
        ("readText", {}),
        ("replaceDocument", {"path": "a.py", "text": "new"}),
        (
            "replaceDocument",
            {"path": "n.ipynb", "cells": [{"id": "c", "cell_type": "code", "source": ""}]},
        ),
        ("confirm", {"tool": "t", "title": "T", "description": "d", "arguments": "a=1"}),
    ]


def test_parameters_are_checked_against_the_list() -> None:
    check_params("replaceDocument", {"path": "a.py", "text": ""})
    check_params("listCommands", {})
    with pytest.raises(ValueError, match="no request 'readtext'"):
        check_params("readtext", {})
    with pytest.raises(ValueError, match="has no parameter file"):
        check_params("openFile", {"path": "a", "file": "a"})
    with pytest.raises(ValueError, match="needs the parameter path"):
        check_params("replaceDocument", {"text": ""})
    with pytest.raises(ValueError, match="text has the wrong type"):
        check_params("replaceSelection", {"text": 1})
    with pytest.raises(ValueError, match="cells has the wrong type"):
        check_params("replaceDocument", {"path": "a", "cells": {}})
    assert params_of("replaceDocument")["text"].required is False
    assert params_of("replaceDocument")["path"].required is True


async def test_the_bridge_refuses_a_request_not_in_the_list(mcp_app: Any) -> None:
    bridge = mcp_app.tool_context.services.editor
    with pytest.raises(ValueError, match="no request 'readFile'"):
        await bridge.request("readFile")


def test_no_request_method_is_spelt_by_hand() -> None:
    # The list is read, not copied: a method name in quotes anywhere else in the package or the
    # labextension's sources would be a second, unchecked spelling of it. TypeScript may name
    # one as a type argument (``RequestParams<'confirm'>``): the compiler checks it against
    # protocol.json.
    package = (REPO / "jupyter_mcp").rglob("*.py")
    sources = [*package, *(REPO / "labextension" / "src").rglob("*.ts")]
    assert len(sources) > 20
    spelt = []
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for method in REQUESTS:
            name = re.escape(method)
            unchecked = (
                rf"""(?<!<)(["']){name}\1""" if path.suffix == ".ts" else rf"""["']{name}["']"""
            )
            if re.search(unchecked, text):
                spelt.append((path.relative_to(REPO).as_posix(), method))
    assert spelt == []


def test_the_labextension_imports_the_same_list() -> None:
    source = (REPO / "labextension" / "src" / "protocol.ts").read_text(encoding="utf-8")
    imported = re.search(r"""import \w+ from ['"]([^'"]+\.json)['"]""", source)
    assert imported is not None
    target = (REPO / "labextension" / "src" / imported.group(1)).resolve()
    assert target == Path(protocol.__file__).with_name("protocol.json").resolve()
