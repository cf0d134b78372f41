"""debug_session over standard MCP (official SDK client): an agent finds why a cell returns a
wrong value by stopping in the function it calls and reading the locals, then fixes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from notebook_files import answer_of

from jupyter_mcp.documents.notebook_view import cell_marker_lines, notebook_view

pytestmark = pytest.mark.timeout(240)

AVERAGE = (
    "def average(values):\n"
    "    total = 0\n"
    "    for v in values:\n"
    "        total += v\n"
    "    return total / (len(values) + 1)\n"
)


async def test_an_agent_finds_why_a_cell_returns_a_wrong_value(
    connect: Any, jp_root_dir: Path
) -> None:
    # Given a notebook whose second cell should print the mean of 2, 4 and 6 (4.0)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(AVERAGE, id="define"),
        nbformat.v4.new_code_cell("average([2, 4, 6])", id="use"),
    ]
    nbformat.write(nb, jp_root_dir / "stats.ipynb")
    async with connect() as client:
        answer = await answer_of(
            client, "execute_notebook_cells", pathInProject="stats.ipynb", cellIds=["define", "use"]
        )
        assert answer["cells"][1]["outputs"][0]["text"] == "3.0"  # wrong

        # When the agent stops on the function's return line (a line of the notebook's text
        # view, as it reads it with the file tools) and runs the cell under the debugger
        view = notebook_view(nb)
        markers = cell_marker_lines(nb, view)
        assert markers is not None
        line = markers[0] + 5
        assert view.splitlines()[line - 1].strip().startswith("return total")
        assert (
            await answer_of(
                client, "toggle_debugger_breakpoint", pathInProject="stats.ipynb", line=line
            )
            == "Breakpoint added"
        )
        started = await answer_of(
            client, "debug_session", action="start", pathInProject="stats.ipynb"
        )
        assert started["breakpoints"][0]["verified"] is True
        stopped = await answer_of(
            client, "debug_session", action="run_cell", pathInProject="stats.ipynb", cellId="use"
        )

        # Then it is stopped in average, on the return line, and the locals say why
        assert stopped["state"] == "stopped"
        assert stopped["where"]["cellId"] == "define" and stopped["where"]["function"] == "average"
        assert stopped["where"]["viewLine"] == line
        found = await answer_of(
            client, "debug_session", action="variables", pathInProject="stats.ipynb"
        )
        values = {v["name"]: v["value"] for v in found["variables"]}
        assert values["total"] == "12" and values["values"] == "[2, 4, 6]"
        divisor = await answer_of(
            client,
            "debug_session",
            action="evaluate",
            pathInProject="stats.ipynb",
            expression="len(values) + 1",
        )
        assert divisor["result"] == "4"  # one too many

        # The agent lets the cell finish and ends the session …
        done = await answer_of(
            client, "debug_session", action="continue", pathInProject="stats.ipynb"
        )
        assert done["state"] == "finished" and done["outputs"][0]["text"] == "3.0"
        ended = await answer_of(client, "debug_session", action="stop", pathInProject="stats.ipynb")
        assert ended["session"] == "ended"
        # … fixes the function and runs both cells again
        await answer_of(
            client,
            "edit_notebook_cell",
            pathInProject="stats.ipynb",
            cellId="define",
            searchText="(len(values) + 1)",
            replaceText="len(values)",
        )
        answer = await answer_of(
            client, "execute_notebook_cells", pathInProject="stats.ipynb", cellIds=["define", "use"]
        )
        assert answer["cells"][1]["outputs"][0]["text"] == "4.0"


async def test_read_only_mode_hides_the_debugger(mcp_app: Any) -> None:
    ctx = mcp_app.tool_context
    assert "debug_session" in {t.name for t in mcp_app.registry.visible(ctx)}
    ctx.settings.read_only = True
    try:
        visible = {t.name for t in mcp_app.registry.visible(ctx)}
        assert "debug_session" not in visible and "get_debugger_breakpoints" in visible
    finally:
        ctx.settings.read_only = False
