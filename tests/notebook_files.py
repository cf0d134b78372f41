"""Helpers of the notebook and kernel tool tests: a picture, a tool's answer over MCP, and
waiting for a notebook file to reach a state (a shared document saves it shortly after each
change; a file-backed one has it at once)."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import nbformat
from mcp import Client

#: A 1x1 PNG, base64 as notebooks keep it.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f80f000001010000050dfa5c0000000049454e44ae426082"
    )
).decode()


async def on_disk(path: Path, check: Any, timeout: float = 20.0) -> Any:
    """The notebook file once ``check(notebook)`` holds."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            nb = nbformat.read(path, as_version=4)
            if check(nb):
                return nb
        except Exception:  # caught mid-save
            pass
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{path.name} never reached the state wanted")
        await asyncio.sleep(0.05)


async def answer_of(client: Client, tool: str, **arguments: Any) -> Any:
    """What ``tool`` answers over MCP, as JSON (a tool that answers a sentence: the text);
    a tool error fails the test."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    try:
        return json.loads(text)
    except ValueError:
        return text


async def error_of(client: Client, tool: str, **arguments: Any) -> str:
    """The message of the error ``tool`` answers over MCP; an answer that is no error fails
    the test."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content[0].text
    return str(result.content[0].text)


def write_notebook(path: Path, cells: list[Any]) -> list[str]:
    """Write a Python notebook of ``cells`` (nbformat cells) to ``path``; their ids."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = cells
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb))
    return [cell.id for cell in cells]
