"""Bad input never hurts: a sweep over every tool the server lists.

For each built-in tool (parametrized by name at collection time, then read from the live
``GET /mcp/list_tools`` so the advertised schema is what is exercised) the cases are generated
from its ``inputSchema``:

* each required field missing;
* each field (the window fields included) given every wrong JSON type;
* each path-like field pointing outside the root: ``../outside.txt``, ``..``, absolute paths
  outside, and symlinks inside the root that lead outside;
* numbers below their minimum, ``NaN``/``Infinity``, values nested 900 deep, NUL in paths;
* non-object bodies, malformed JSON, non-UTF-8 bytes, bad JSON-RPC wrappers, deep nesting.

Every case must answer HTTP 200 ``{"status": null, "error": "<names the problem>"}`` on both
REST surfaces, within a few seconds, with every file of the project (and the files outside it)
byte-for-byte as before. The rest of the module checks the standard MCP surface with the SDK
client, bodies over ``max_body_bytes`` on all three surfaces, and a binary file given to every
text tool, and odd strings (surrogates, NUL, over-long names) in every string field, which may
be refused or done but must never crash a tool.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import nbformat
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_messages import INITIALIZED, initialize

from jupyter_mcp.tools import builtin_tools

#: Every built-in tool, known at collection time so each gets its own test id.
TOOL_NAMES = [tool.name for tool in builtin_tools()]

#: A request for bad input answering slower than this counts as hung.
TIME_LIMIT_S = 5.0

#: A small ``max_body_bytes`` so the huge-body checks stay quick.
BODY_LIMIT = 256 * 1024

#: Fields whose value is a path (or a list of paths) in the project.
PATH_FIELDS = {"pathInProject", "cwd", "files", "path", "paths", "folder", "directory"}

#: A sample of every JSON type, for the wrong-type cases.
SAMPLES: dict[str, Any] = {
    "string": "text",
    "integer": 7,
    "number": 1.5,
    "boolean": True,
    "array": [1],
    "object": {"k": 1},
    "null": None,
}

#: Valid values for fields whose generic sample would not do; anything that ran by mistake
#: would leave a mark (a written file) that the snapshot catches.
VALID: dict[str, Any] = {
    "pathInProject": "notes.txt",
    "files": ["notes.txt"],
    "line": 1,
    "character": 4,
    "startLine": 1,
    "endLine": 1,
    "refactorType": "rename",
    "options": {"newName": "renamed"},
    "command": "touch escaped-marker",
    "unixCommand": "touch escaped-marker",
    "milliseconds": 1,
    "timeout": 2,
    "waitMs": 0,
    "maxResults": 5,
    "maxEntries": 5,
    "offset": 0,
}
#: Optional fields given with the path cases, so that only the path is wrong.
PATH_CASE_EXTRAS = ("options",)
GENERIC: dict[str, Any] = {
    "string": "x",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """The conftest server, with a small body limit for the huge-body checks."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_mcp": True},
            "allow_unauthenticated_access": False,
        },
        "JupyterMCP": {"max_body_bytes": BODY_LIMIT},
    }


@pytest.fixture(autouse=True)
def git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Git works in the project without touching the user's configuration."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test Author")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "author@example.org")


@dataclass
class Project:
    """The test project: the root, the files outside it and the parent they live in."""

    root: Path
    parent: Path
    outside_file: Path
    outside_dir: Path

    def snapshot(self) -> dict[str, Any]:
        """Bytes of every file in and around the project; symlinks by their target."""
        state: dict[str, Any] = {}
        for base in (self.root, self.outside_dir):
            for dirpath, dirnames, filenames in os.walk(base):
                for name in sorted(dirnames + filenames):
                    path = Path(dirpath) / name
                    key = str(path)
                    if path.is_symlink():
                        state[key] = ("link", os.readlink(path))
                    elif path.is_file():
                        if ".git" in path.relative_to(base).parts and name == "index":
                            continue  # git refreshes stat data in its index on a plain status
                        state[key] = path.read_bytes()
        state[str(self.outside_file)] = self.outside_file.read_bytes()
        state["<parent listing>"] = sorted(os.listdir(self.parent))
        return state


def _notebook() -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("value = 1\nprint(value)")]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    nb.cells[0].execution_count = 1
    return nbformat.writes(nb)


@pytest.fixture
def project(jp_root_dir: Path, tmp_path: Path) -> Project:
    """A git project with text, code, a notebook and a binary file; escapes lead outside."""
    root = jp_root_dir
    parent = root.parent
    outside_file = parent / "outside.txt"
    outside_file.write_text("outside, must never change\n")
    outside_dir = parent / "outside_dir"
    outside_dir.mkdir()
    (outside_dir / "inner.txt").write_text("inner, must never change\n")
    (outside_dir / "mod.py").write_text("def outer():\n    return 1\n")

    (root / "notes.txt").write_text("hello\nworld\n")
    (root / "src").mkdir()
    (root / "src" / "mod.py").write_text("def helper():\n    return 1\n\n\nhelper()\n")
    (root / "nb.ipynb").write_text(_notebook())
    (root / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    os.symlink(outside_file, root / "escape.txt")
    os.symlink(outside_dir, root / "escape_dir")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return Project(root, parent, outside_file, outside_dir)


# --- case generation ---------------------------------------------------------------------


@dataclass
class Case:
    """One bad call: a label, the raw body, and words the error must contain (any of them)."""

    label: str
    body: bytes
    mentions: tuple[str, ...]


def _types(prop: dict[str, Any]) -> list[str]:
    kind = prop.get("type")
    if kind is None:
        return []
    return list(kind) if isinstance(kind, list) else [kind]


def valid_value(name: str, prop: dict[str, Any]) -> Any:
    """A value that passes ``prop``: a fitting sample for known fields, else a generic one."""
    if "enum" in prop:
        return prop["enum"][0]
    if name in VALID:
        return VALID[name]
    types = _types(prop)
    return GENERIC[types[0]] if types else "x"


def wrong_types(prop: dict[str, Any]) -> list[str]:
    """The JSON types a value of ``prop`` must not have."""
    types = set(_types(prop))
    if not types:
        return []
    wrong = []
    for kind in SAMPLES:
        if kind in types or (kind == "integer" and "number" in types):
            continue
        wrong.append(kind)
    return wrong


def path_values(project: Project) -> list[str]:
    """Paths that lead outside the root, each in its own way."""
    return [
        "../outside.txt",
        "..",
        "src/../../outside.txt",
        str(project.outside_file),
        str(project.outside_dir),
        "escape.txt",
        "escape_dir",
        "escape_dir/inner.txt",
    ]


def _dump(arguments: Any) -> bytes:
    return json.dumps(arguments).encode()


def generate_cases(schema: dict[str, Any], project: Project) -> list[Case]:
    """Every bad call of one tool, from its advertised input schema."""
    properties: dict[str, Any] = schema.get("properties", {})
    required: list[str] = schema.get("required", [])
    base = {name: valid_value(name, properties[name]) for name in required}
    cases: list[Case] = []

    for name in required:
        arguments = {k: v for k, v in base.items() if k != name}
        cases.append(Case(f"missing {name}", _dump(arguments), (name,)))

    for name, prop in properties.items():
        for kind in wrong_types(prop):
            arguments = {**base, name: SAMPLES[kind]}
            cases.append(Case(f"{name} as {kind}", _dump(arguments), (name,)))

    for name, prop in properties.items():
        types = _types(prop)
        if "integer" in types or "number" in types:
            # Below the advertised minimum, and the non-standard JSON numbers Python accepts.
            low = prop.get("minimum", prop.get("exclusiveMinimum"))
            if low is not None:
                too_low = low - 1 if "minimum" in prop else low
                arguments = {**base, name: too_low}
                cases.append(Case(f"{name}={too_low} (below minimum)", _dump(arguments), (name,)))
            for literal in ("NaN", "Infinity", "-Infinity"):
                body = _dump({**base, name: 0}).replace(
                    b"%s: 0" % _dump(name), b"%s: %s" % (_dump(name), literal.encode())
                )
                cases.append(Case(f"{name}={literal}", body, (name, "json")))
        # A value nested deeper than any schema expects, still within what the decoder takes.
        deep_value: Any = []
        for _ in range(900):
            deep_value = [deep_value]
        cases.append(Case(f"{name} nested 900 deep", _dump({**base, name: deep_value}), (name,)))

    for name, prop in properties.items():
        if name not in PATH_FIELDS:
            continue
        value_nul: Any = (
            ["notes.txt\x00../outside.txt"]
            if "array" in _types(prop)
            else ("notes.txt\x00../outside.txt")
        )
        extras = {n: VALID[n] for n in PATH_CASE_EXTRAS if n in properties}
        arguments = {**base, **extras, name: value_nul}
        cases.append(Case(f"{name} with NUL", _dump(arguments), ("nul",)))
        for bad in path_values(project):
            value: Any = [bad] if "array" in _types(prop) else bad
            # Optional fields a valid call needs (a rename's options.newName) come along too.
            extras = {n: VALID[n] for n in PATH_CASE_EXTRAS if n in properties}
            arguments = {**base, **extras, name: value}
            cases.append(Case(f"{name}={bad!r}", _dump(arguments), ("outside",)))

    if schema.get("additionalProperties", True) is False:
        cases.append(Case("unknown field", _dump({**base, "noSuchField": 1}), ("noSuchField",)))

    not_object = ("object",)
    malformed = ("json",)
    deep = 50_000
    cases += [
        Case("body is an array", b"[1, 2]", not_object),
        Case("body is a string", b'"text"', not_object),
        Case("body is a number", b"42", not_object),
        Case("body is null", b"null", not_object),
        Case("body is true", b"true", not_object),
        Case("truncated JSON", b'{"pathInProject": ', malformed),
        Case("single-quoted JSON", b"{'pathInProject': 'notes.txt'}", malformed),
        Case("trailing garbage", _dump(base) + b" }", malformed),
        Case("not UTF-8", b"\xff\xfe{\x00}", ("utf-8", "json")),
        Case("deeply nested array", b"[" * deep + b"]" * deep, ("nest", "deep", "json")),
        Case(
            "deeply nested field",
            b'{"x": ' + b"[" * deep + b"]" * deep + b"}",
            ("nest", "deep", "json"),
        ),
        Case(
            "JSON-RPC params not an object",
            _dump({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [base]}),
            ("params",),
        ),
        Case(
            "JSON-RPC arguments not an object",
            _dump({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": []}}),
            ("object",),
        ),
    ]
    return cases


# --- the sweep ---------------------------------------------------------------------------


async def _post(jp_fetch: Any, parts: list[str], body: bytes) -> tuple[int, Any, float]:
    started = time.perf_counter()
    response = await jp_fetch(
        *parts, method="POST", body=body, raise_error=False, request_timeout=TIME_LIMIT_S * 4
    )
    took = time.perf_counter() - started
    try:
        payload = json.loads(response.body)
    except ValueError:
        payload = response.body[:300]
    return response.code, payload, took


async def _listing(jp_fetch: Any) -> dict[str, dict[str, Any]]:
    response = await jp_fetch("mcp", "list_tools", method="GET")
    return {tool["name"]: tool for tool in json.loads(response.body)}


def _check(
    label: str, code: int, payload: Any, took: float, before: Any, after: Any, mentions: Any
) -> list[str]:
    problems = []
    if code != 200:
        problems.append(f"HTTP {code}: {payload!r}")
    elif not isinstance(payload, dict) or set(payload) != {"status", "error"}:
        problems.append(f"not the seed error shape: {payload!r}")
    elif payload["status"] is not None:
        problems.append(f"succeeded: {str(payload['status'])[:200]!r}")
    elif not isinstance(payload["error"], str) or not payload["error"].strip():
        problems.append(f"empty error: {payload!r}")
    elif not any(word.lower() in payload["error"].lower() for word in mentions):
        problems.append(f"error does not mention {' or '.join(mentions)}: {payload['error']!r}")
    if took > TIME_LIMIT_S:
        problems.append(f"took {took:.1f} s")
    if after != before:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        problems.append(f"files changed: {changed}")
    return [f"{label}: {p}" for p in problems]


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_every_bad_call_is_a_clear_error_and_changes_nothing(
    jp_fetch: Any, project: Project, tool: str
) -> None:
    listing = await _listing(jp_fetch)
    assert tool in listing, f"{tool} is not listed by /mcp/list_tools"
    cases = generate_cases(listing[tool]["inputSchema"], project)
    assert cases

    before = project.snapshot()
    problems: list[str] = []
    for case in cases:
        for surface in (["mcp", tool], ["api", "mcp", tool]):
            code, payload, took = await _post(jp_fetch, surface, case.body)
            after = project.snapshot()
            label = f"/{'/'.join(surface)} [{case.label}]"
            problems += _check(label, code, payload, took, before, after, case.mentions)
            before = after
    assert not problems, f"{len(problems)} of {2 * len(cases)} calls misbehaved:\n" + "\n".join(
        problems
    )


async def test_the_sweep_covers_every_listed_tool(jp_fetch: Any, project: Project) -> None:
    """A tool added to the server but not to ``builtin_tools`` would escape the sweep."""
    listing = await _listing(jp_fetch)
    assert set(listing) == set(TOOL_NAMES)
    total = sum(len(generate_cases(t["inputSchema"], project)) for t in listing.values())
    # Every tool contributes at least its body cases; path tools many more.
    assert total >= 13 * len(listing)


# --- standard MCP -------------------------------------------------------------------------


@pytest.fixture
def connect(http_server: Any, http_server_port: tuple[Any, int], jp_base_url: str, jp_serverapp):  # type: ignore[no-untyped-def]
    """``async with connect(mode) as client``: an SDK client on ``/mcp``."""
    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    token = jp_serverapp.identity_provider.token

    @asynccontextmanager
    async def _connect(mode: str) -> AsyncIterator[Client]:
        async with httpx2.AsyncClient(headers={"Authorization": f"token {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                yield client

    return _connect


MCP_BAD_CALLS = [
    ("get_file_text_by_path", {}, "pathInProject"),
    ("rewrite_file_content", {"pathInProject": "notes.txt", "text": 5}, "text"),
    ("replace_file_content_at_position", {"pathInProject": "notes.txt"}, "startLine"),
    ("append_file_content", {"pathInProject": "../outside.txt", "text": "x"}, "outside"),
    ("rewrite_file_content", {"pathInProject": "escape.txt", "text": "x"}, "outside"),
    ("commit_changes", {"message": "m", "files": ["../outside.txt"]}, "outside"),
    ("run_command_on_background", {"command": "touch escaped-marker", "cwd": ".."}, "outside"),
    ("search_in_files_content", {"searchText": "x", "maxResults": "many"}, "maxResults"),
    ("get_file_text_by_path", {"pathInProject": "notes.txt", "resultStart": "0"}, "resultStart"),
]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_standard_mcp_bad_calls_are_error_results(connect, project: Project, mode: str):
    before = project.snapshot()
    async with connect(mode) as client:
        for tool, arguments, mention in MCP_BAD_CALLS:
            started = time.perf_counter()
            result = await client.call_tool(tool, arguments)
            assert time.perf_counter() - started < TIME_LIMIT_S, tool
            assert result.is_error is True, (tool, arguments, result)
            assert mention.lower() in result.content[0].text.lower(), (tool, result.content)
        # The session survives all of that.
        fine = await client.call_tool("get_file_text_by_path", {"pathInProject": "notes.txt"})
        assert fine.is_error is False
    assert project.snapshot() == before


def _argument_cases(schema: dict[str, Any], project: Project) -> list[Case]:
    """The sweep's cases that are an arguments object: all that a ``tools/call`` can carry.

    Values nested 900 deep are left out: the SDK client refuses to serialise them (its
    depth limit); test_standard_mcp_raw_bad_bodies sends deeper ones to /mcp as raw bytes.
    """
    found = []
    for case in generate_cases(schema, project):
        if "nested 900 deep" in case.label:
            continue
        try:
            arguments = json.loads(case.body)
        except (ValueError, RecursionError):
            continue
        if isinstance(arguments, dict) and "jsonrpc" not in arguments:
            found.append(case)
    return found


@asynccontextmanager
async def _recording_client(url: str, token: str, mode: str) -> AsyncIterator[tuple[Client, Any]]:
    """An SDK client on ``url``, and the HTTP status of every response it got."""
    statuses: list[int] = []

    async def record(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    async with httpx2.AsyncClient(
        headers={"Authorization": f"token {token}"}, event_hooks={"response": [record]}
    ) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client, statuses


async def _mcp_tools(client: Client) -> list[Any]:
    tools, cursor = [], None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sweep_over_standard_mcp(
    mcp_url: str, jp_serverapp: Any, project: Project, mode: str
) -> None:
    """Every argument case of the sweep, as a ``tools/call`` of one session, per era."""
    token = jp_serverapp.identity_provider.token
    problems: list[str] = []
    calls = 0
    async with _recording_client(mcp_url, token, mode) as (client, statuses):
        tools = await _mcp_tools(client)
        assert {t.name for t in tools} == set(TOOL_NAMES)
        before = project.snapshot()
        for tool in tools:
            for case in _argument_cases(tool.input_schema, project):
                calls += 1
                label = f"{tool.name} [{case.label}]"
                started = time.perf_counter()
                try:
                    result = await client.call_tool(tool.name, json.loads(case.body))
                except MCPError as e:
                    # A refusal at the protocol level is fine when it says the params are bad.
                    if e.code != -32602:
                        problems.append(f"{label}: protocol error {e.code}: {e}")
                    continue
                took = time.perf_counter() - started
                text = " ".join(getattr(block, "text", "") for block in result.content)
                if not result.is_error:
                    problems.append(f"{label}: succeeded: {text[:200]!r}")
                elif not any(word.lower() in text.lower() for word in case.mentions):
                    problems.append(f"{label}: error does not mention {case.mentions}: {text!r}")
                if took > TIME_LIMIT_S:
                    problems.append(f"{label}: took {took:.1f} s")
                after = project.snapshot()
                if after != before:
                    changed = sorted(
                        k for k in set(before) | set(after) if before.get(k) != after.get(k)
                    )
                    problems.append(f"{label}: files changed: {changed}")
                    before = after
        # The session is still fine after all of that.
        fine = await client.call_tool("get_file_text_by_path", {"pathInProject": "notes.txt"})
        assert fine.is_error is False and "hello" in fine.content[0].text
    assert calls > 10 * len(TOOL_NAMES)
    assert [code for code in statuses if code >= 500] == []
    assert not problems, f"{len(problems)} of {calls} calls misbehaved:\n" + "\n".join(problems)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_session_with_interleaved_cancellations_stays_usable(
    mcp_url: str, jp_serverapp: Any, project: Project, mode: str
) -> None:
    token = jp_serverapp.identity_provider.token
    before = project.snapshot()
    markers = [f"{6000 + i}.{os.getpid()}{i}" for i in range(6)]

    def running(marker: str) -> bool:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker in (entry / "cmdline").read_bytes().decode(errors="replace"):
                        return "Z" not in (entry / "stat").read_text().split(")")[-1][:3]
                except OSError:
                    continue
        return False

    async def until(condition: Any, seconds: float = 30) -> bool:
        deadline = time.monotonic() + seconds
        while not condition():
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async with _recording_client(mcp_url, token, mode) as (client, statuses):
        for number, marker in enumerate(markers):
            # A long call, cancelled once it runs, with ordinary calls on either side of it
            # (bad ones too) that must answer as if nothing happened.
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    client.call_tool,
                    "run_command_on_background",
                    {"command": f"sleep {marker}", "timeout": 120000},
                )
                assert await until(lambda marker=marker: running(marker)), marker
                read = await client.call_tool(
                    "get_file_text_by_path", {"pathInProject": "notes.txt"}
                )
                assert read.is_error is False and "hello" in read.content[0].text
                bad = await client.call_tool(
                    "get_file_text_by_path", {"pathInProject": "../outside.txt"}
                )
                assert bad.is_error is True
                tg.cancel_scope.cancel()
            assert await until(lambda marker=marker: not running(marker)), marker
            if number % 2:
                found = await client.call_tool(
                    "find_files_by_name_substring", {"nameSubstring": "notes"}
                )
                assert found.is_error is False and "notes.txt" in found.content[0].text
        fine = await client.call_tool("get_file_text_by_path", {"pathInProject": "notes.txt"})
        assert fine.is_error is False
    assert [code for code in statuses if code >= 500] == []
    assert project.snapshot() == before


# --- huge bodies ---------------------------------------------------------------------------


async def test_huge_bodies_are_refused_on_both_rest_surfaces(jp_fetch: Any, project: Project):
    before = project.snapshot()
    body = _dump({"pathInProject": "notes.txt", "text": "x" * (BODY_LIMIT + 10)})
    wrapped = _dump(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"arguments": {"pathInProject": "notes.txt", "text": "y" * BODY_LIMIT}},
        }
    )
    for parts in (["mcp", "rewrite_file_content"], ["api", "mcp", "append_file_content"]):
        for payload in (body, wrapped):
            code, answer, took = await _post(jp_fetch, parts, payload)
            assert code == 200, (parts, answer)
            assert answer["status"] is None
            assert "limit" in answer["error"] and str(BODY_LIMIT) in answer["error"]
            assert took < TIME_LIMIT_S
    assert project.snapshot() == before


async def test_huge_body_on_standard_mcp_is_refused(
    http_server: Any,
    http_server_port: tuple[Any, int],
    jp_base_url: str,
    jp_serverapp: Any,
    project: Project,
) -> None:
    before = project.snapshot()
    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    token = jp_serverapp.identity_provider.token
    headers = {
        "Authorization": f"token {token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "rewrite_file_content",
            "arguments": {"pathInProject": "notes.txt", "text": "x" * (BODY_LIMIT + 10)},
        },
    }
    async with httpx2.AsyncClient(headers=headers, timeout=TIME_LIMIT_S * 4) as http:
        started = time.perf_counter()
        response = await http.post(url, content=json.dumps(message))
        took = time.perf_counter() - started
    assert response.status_code == 413, response.text
    text = response.text.lower()
    assert "too large" in text or "limit" in text, response.text
    assert took < TIME_LIMIT_S
    assert project.snapshot() == before

    # And through the SDK client, the call fails as an error answer (no hang, no broken
    # connection) instead of writing, and the session goes on working.
    async with httpx2.AsyncClient(headers={"Authorization": f"token {token}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode="legacy") as client:
            with pytest.raises(MCPError):
                await client.call_tool(
                    "rewrite_file_content",
                    {"pathInProject": "notes.txt", "text": "x" * (BODY_LIMIT + 10)},
                )
            after = await client.call_tool("list_files_in_folder", {"pathInProject": "/"})
            assert after.is_error is False
    assert project.snapshot() == before


# --- binary files ---------------------------------------------------------------------------

#: (tool, file, other arguments); the code tools get binary bytes under a Python name, since
#: any other name is refused before the contents are looked at.
BINARY_CALLS = [
    ("get_file_text_by_path", {}),
    ("rewrite_file_content", {"text": "x"}),
    ("append_file_content", {"text": "x"}),
    ("replace_specific_text", {"searchText": "PNG", "replaceText": "GIF"}),
    ("replace_file_content_at_position", {"startLine": 1, "endLine": 1, "content": "x"}),
    ("get_symbols_in_file", {"pathInProject": "src/blob.py"}),
    ("find_references", {"pathInProject": "src/blob.py", "line": 1, "character": 1}),
    (
        "refactor_code_at_location",
        {
            "pathInProject": "src/blob.py",
            "line": 0,
            "character": 1,
            "refactorType": "rename",
            "options": {"newName": "renamed"},
        },
    ),
    ("toggle_debugger_breakpoint", {"line": 1}),
    ("get_file_diff", {}),
    ("get_file_diff", {"pathInProject": "src/blob.py"}),  # new and untracked
]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    BINARY_CALLS,
    ids=[f"{c[0]}-{c[1].get('pathInProject', 'blob.bin')}" for c in BINARY_CALLS],
)
async def test_binary_file_is_refused_by_every_text_tool(
    jp_fetch: Any, project: Project, tool: str, arguments: dict[str, Any]
) -> None:
    # The diff is asked of a changed binary file, so there is something it could show.
    if tool == "get_file_diff":
        (project.root / "blob.bin").write_bytes(b"\x00\x01changed\xff" * 20)
    (project.root / "src" / "blob.py").write_bytes((project.root / "blob.bin").read_bytes())
    arguments = {"pathInProject": "blob.bin", **arguments}
    before = project.snapshot()
    code, answer, took = await _post(jp_fetch, ["mcp", tool], _dump(arguments))
    assert code == 200
    assert answer["status"] is None, answer
    assert "binary" in answer["error"].lower(), answer["error"]
    assert Path(arguments["pathInProject"]).name in answer["error"], answer["error"]
    assert took < TIME_LIMIT_S
    assert project.snapshot() == before


async def test_binary_file_is_not_changed_over_standard_mcp(connect, project: Project):
    before = project.snapshot()
    async with connect("auto") as client:
        result = await client.call_tool(
            "append_file_content", {"pathInProject": "blob.bin", "text": "x"}
        )
    assert result.is_error is True
    assert "binary" in result.content[0].text.lower()
    assert project.snapshot() == before


# --- standard MCP over raw HTTP: bodies no SDK client would send ----------------------------


async def test_standard_mcp_raw_bad_bodies(
    http_server: Any,
    http_server_port: tuple[Any, int],
    jp_base_url: str,
    jp_serverapp: Any,
    project: Project,
) -> None:
    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    headers = {
        "Authorization": f"token {jp_serverapp.identity_provider.token}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    opening = initialize(id=0, client="bad-input")

    def call(arguments: str) -> bytes:
        return (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
            b'{"name": "%s", "arguments": %s}}' % tuple(x.encode() for x in arguments.split("|"))
        )

    deep = 50_000
    bodies = {
        "NaN wait": call('wait|{"milliseconds": NaN}'),
        "Infinity timeout": call(
            'execute_terminal_command|{"command": "touch m", "timeout": Infinity}'
        ),
        "NaN in a write": call(
            'rewrite_file_content|{"pathInProject": "notes.txt", "text": "x", "resultStart": NaN}'
        ),
        "deeply nested arguments": call("get_file_text_by_path|" + "[" * deep + "]" * deep),
        "lone surrogate path": call('get_file_text_by_path|{"pathInProject": "a\\udcffb"}'),
        "unpaired surrogate text": call(
            'append_file_content|{"pathInProject": "notes.txt", "text": "\\ud800"}'
        ),
        "malformed JSON": b'{"jsonrpc": "2.0", "id": 1, "method": ',
        "non-object body": b"[1, 2, 3]",
        "not UTF-8": b"\xff\xfe\x00{",
    }
    before = project.snapshot()
    async with httpx2.AsyncClient(headers=headers, timeout=TIME_LIMIT_S * 4) as http:
        opened = await http.post(url, content=json.dumps(opening))
        assert opened.status_code == 200, opened.text
        session = {
            "Mcp-Session-Id": opened.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        await http.post(url, content=json.dumps(INITIALIZED), headers=session)
        problems = []
        for label, body in bodies.items():
            started = time.perf_counter()
            response = await http.post(url, content=body, headers=session)
            took = time.perf_counter() - started
            if took > TIME_LIMIT_S:
                problems.append(f"{label}: took {took:.1f} s")
            if response.status_code >= 500:
                problems.append(f"{label}: HTTP {response.status_code} {response.text[:200]}")
                continue
            try:
                answer = response.json()
            except ValueError:
                problems.append(f"{label}: not JSON: {response.status_code} {response.text[:200]}")
                continue
            refused = "error" in answer or answer.get("result", {}).get("isError") is True
            if not refused:
                problems.append(f"{label}: not refused: {str(answer)[:200]}")
        # The session still works afterwards.
        fine = await http.post(
            url,
            content=call('get_file_text_by_path|{"pathInProject": "notes.txt"}'),
            headers=session,
        )
        assert fine.status_code == 200 and "hello" in fine.text
    assert not problems, "\n".join(problems)
    assert project.snapshot() == before


# --- odd strings: may be refused or done, but never a crash -------------------------------

#: Strings that are valid JSON but awkward for a file system, a subprocess or a UTF-8 encoder.
ODD_STRINGS = {
    "lone surrogate": "a\udcffb",
    "unpaired high surrogate": "a\ud800b",
    "NUL": "a\x00b",
    "300-character name": "a" * 300,
    "control characters": "\x1b[2J\r\x07",
}


def odd_string_cases(schema: dict[str, Any]) -> list[Case]:
    """Each string field (and string array item) given each odd string, the rest valid."""
    properties: dict[str, Any] = schema.get("properties", {})
    base = {name: valid_value(name, properties[name]) for name in schema.get("required", [])}
    extras = {n: VALID[n] for n in PATH_CASE_EXTRAS if n in properties}
    cases = []
    for name, prop in properties.items():
        types = _types(prop)
        for label, odd in ODD_STRINGS.items():
            if "string" in types:
                value: Any = odd
            elif "array" in types and prop.get("items", {}).get("type") == "string":
                value = [odd]
            else:
                continue
            body = json.dumps({**base, **extras, name: value}).encode()
            cases.append(Case(f"{name} {label}", body, ()))
    return cases


@pytest.mark.parametrize("tool", TOOL_NAMES)
async def test_odd_strings_never_crash_a_tool(jp_fetch: Any, project: Project, tool: str) -> None:
    """Refused or done, an odd string gets the seed answer in time and no 'failed unexpectedly'.

    Files may change here (writing a 300-character line is a valid call), so only the answer
    is checked; the strict no-change sweep above covers inputs that must be refused.
    """
    listing = await _listing(jp_fetch)
    problems = []
    cases = odd_string_cases(listing[tool]["inputSchema"])
    for case in cases:
        code, payload, took = await _post(jp_fetch, ["mcp", tool], case.body)
        if code != 200 or not isinstance(payload, dict) or set(payload) != {"status", "error"}:
            problems.append(f"[{case.label}] HTTP {code}: {payload!r}"[:300])
        elif payload["error"] is not None and (
            "failed unexpectedly" in payload["error"] or not payload["error"].strip()
        ):
            problems.append(f"[{case.label}] {payload['error']}"[:300])
        if took > TIME_LIMIT_S:
            problems.append(f"[{case.label}] took {took:.1f} s")
    assert not problems, f"{len(problems)} of {len(cases)} calls misbehaved:\n" + "\n".join(
        problems
    )


async def test_file_names_that_are_not_utf8_are_listed_on_every_surface(
    jp_fetch: Any, connect: Any, project: Project
) -> None:
    """A file name with a byte that is not UTF-8 comes back as a JSON escape, not a 500."""
    os.close(os.open(os.fsencode(project.root) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY))
    for parts in (["mcp", "list_files_in_folder"], ["api", "mcp", "list_files_in_folder"]):
        code, answer, _ = await _post(jp_fetch, parts, _dump({"pathInProject": ""}))
        assert code == 200, answer
        assert answer["error"] is None, answer
        assert "caf\udce9.txt" in json.dumps(answer["status"], ensure_ascii=False)
    # The name as listed reads back as the same (empty) file.
    code, answer, _ = await _post(
        jp_fetch, ["mcp", "get_file_text_by_path"], _dump({"pathInProject": "caf\udce9.txt"})
    )
    assert code == 200 and answer["status"]["content"] == "", answer
    async with connect("auto") as client:
        listed = await client.call_tool("list_files_in_folder", {"pathInProject": ""})
    assert listed.is_error is False
    assert "caf" in listed.content[0].text
