"""A shared document a tool call opens lives as long as its room, not as the call.

jupyter-collaboration's room (its awareness and save tasks, its document's observers) is made
when the document is first asked for; made in a tool call, its tasks kept the call's context
(the MCP handler and session it holds) for as long as the room stays open. A soak showed the
handlers of those calls held by ``YRoom._send_server_awareness`` tasks after the agents left.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from code_notebook import write_code_notebook
from live_documents import scratch_server_config
from server_configs import collaboration_installed

from jupyter_mcp.lab.notebooks import open_notebook

pytestmark = pytest.mark.skipif(
    not collaboration_installed(), reason="jupyter-collaboration is not installed"
)


@pytest.fixture
def collaboration() -> bool:
    return True


@pytest.fixture
def jp_server_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return scratch_server_config(True, tmp_path, monkeypatch)


class _Call:
    """Stands for what a tool call's context holds (its handler, its MCP session)."""


_the_call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("the_call", default=None)


async def test_a_shared_document_opened_by_a_call_holds_nothing_of_the_call(
    mcp_app: Any, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    from jupyter_mcp.lab.live_notebooks import SharedNotebook, collaboration

    ctx = mcp_app.tool_context
    write_code_notebook(jp_root_dir, "n.ipynb", "x = 1")

    async def call() -> tuple[Any, weakref.ref[_Call]]:
        made = _Call()
        _the_call.set(made)  # in the task's own copy of the test's context
        return await open_notebook(ctx, "n.ipynb"), weakref.ref(made)

    doc, ref = await asyncio.get_running_loop().create_task(call())
    assert isinstance(doc, SharedNotebook)
    rooms = collaboration(jp_serverapp).ywebsocket_server.rooms
    assert rooms, "the document's room is open"
    # A cancelled timer keeps its context until its time: poll, up to 30 s
    for _ in range(300):
        gc.collect()
        if ref() is None:
            break
        await asyncio.sleep(0.1)
    assert ref() is None, [type(r).__name__ for r in gc.get_referrers(ref())]
    assert rooms, "and the room is still open"
