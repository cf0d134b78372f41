"""The execution and kernel tools over standard MCP (official SDK client), on a real server.

No JupyterLab window has the notebooks open (that path is the browser test's), so runs stream
into the notebook file; the module runs a second time with jupyter-collaboration enabled,
where they stream into the server's shared document, which saves the file shortly after.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
import nbformat
from code_notebook import write_code_notebook
from notebook_files import PNG, answer_of, on_disk

#: Every test runs with the notebook in its file and in the shared document (see conftest).
BOTH_BACKENDS = True


async def test_an_agent_fixes_a_failing_cell_runs_it_and_those_below_and_looks_at_a_table(
    connect: Any, jp_root_dir: Path
) -> None:
    path = write_code_notebook(
        jp_root_dir,
        "analysis.ipynb",
        "import pandas as pd",
        "rows = [(i, i * i) for i in range(5)]",
        "table = pd.DataFrame(rowz, columns=['n', 'square'])",
        "print('total', table['square'].sum())",
    )
    async with connect() as client:
        # Given a notebook whose third cell fails when the agent runs it
        first = await answer_of(client, "execute_notebook_cells", pathInProject="analysis.ipynb")
        assert first["status"] == "error"
        failing = first["cells"][-1]
        assert failing["outputs"][0]["ename"] == "NameError"
        cells = await answer_of(client, "get_notebook_cells", pathInProject="analysis.ipynb")
        index = next(c["index"] for c in cells["cells"] if c["cellId"] == failing["cellId"])
        assert cells["cells"][index]["outputs"][0]["ename"] == "NameError"  # in the file too
        # When it fixes the cell and runs it and the cells below
        await answer_of(
            client,
            "edit_notebook_cell",
            pathInProject="analysis.ipynb",
            cellId=failing["cellId"],
            searchText="rowz",
            replaceText="rows",
            expectedSource="table = pd.DataFrame(rowz, columns=['n', 'square'])",
        )
        second = await answer_of(
            client, "execute_notebook_cells", pathInProject="analysis.ipynb", fromIndex=index
        )
        # Then both ran in the same kernel, counts following the first run's
        assert second["status"] == "ok"
        assert [c["executionCount"] for c in second["cells"]] == [4, 5]
        assert second["cells"][1]["outputs"][0]["text"] == "total 30\n"
        # And the kernel shows the DataFrame's shape
        variables = await answer_of(
            client, "get_kernel_variables", pathInProject="analysis.ipynb", names=["table"]
        )
        assert [(v["name"], v["type"], v["length"], v["shape"]) for v in variables] == [
            ("table", "pandas.DataFrame", 5, [5, 2])
        ]
        assert variables[0]["value"].split()[:2] == ["n", "square"]
    saved = await on_disk(path, lambda nb: nb.cells[3].execution_count == 5)
    assert [c.execution_count for c in saved.cells] == [1, 2, 4, 5]
    assert saved.cells[2].outputs == []
    assert saved.cells[3].outputs[0]["text"] == "total 30\n"


async def test_progress_then_cancelling_interrupts_the_kernel_and_keeps_what_ran(
    connect: Any, jp_root_dir: Path
) -> None:
    path = write_code_notebook(
        jp_root_dir,
        "long.ipynb",
        "import time\nfor i in range(600):\n    print('tick', i, flush=True)\n    time.sleep(0.1)",
        "print('after')",
    )
    updates: list[tuple[float, float | None, str | None]] = []
    seen_ticks = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))
        if message and "tick 5" in message:
            seen_ticks.set()

    async with connect() as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: client.call_tool(
                    "execute_notebook_cells",
                    {"pathInProject": "long.ipynb"},
                    progress_callback=on_progress,
                )
            )
            await asyncio.wait_for(seen_ticks.wait(), 60)
            tg.cancel_scope.cancel()
        # The kernel was interrupted: it answers at once, and the file shows the interrupt.
        saved = await on_disk(path, lambda nb: nb.cells[0].execution_count is not None)
        cell = saved.cells[0]
        assert cell.outputs[-1]["ename"] == "KeyboardInterrupt"
        assert cell.outputs[0]["text"].startswith("tick 0\ntick 1\n")
        assert saved.cells[1].outputs == []
        quick = await answer_of(
            client, "execute_code_in_kernel", pathInProject="long.ipynb", code="i", timeoutMs=20000
        )
        assert quick["status"] == "ok" and int(quick["outputs"][0]["text"]) < 300
    assert all(total == 2 for _, total, _ in updates)
    assert [p for p, _, _ in updates] == sorted(p for p, _, _ in updates)
    # Each message names the running cell (its place in the run and its id) and its last line.
    assert any(m and m.startswith("cell 1 of 2 (") and " s: tick " in m for _, _, m in updates)


async def test_pictures_of_a_run_come_as_image_content(connect: Any, jp_root_dir: Path) -> None:
    write_code_notebook(
        jp_root_dir,
        "pic.ipynb",
        "from IPython.display import Image, display\nimport base64\n"
        f"display(Image(data=base64.b64decode('{PNG}'), format='png'))",
    )
    async with connect() as client:
        result = await client.call_tool("execute_notebook_cells", {"pathInProject": "pic.ipynb"})
        assert not result.is_error
        # The text, the picture, then links to the notebook, its variables and the cell
        assert [block.type for block in result.content][:2] == ["text", "image"]
        assert {block.type for block in result.content[2:]} == {"resource_link"}
        assert result.content[1].data == PNG and result.content[1].mime_type == "image/png"


async def test_two_agents_running_two_notebooks_at_once_never_cross(
    connect: Any, jp_root_dir: Path
) -> None:
    paths = {
        name: write_code_notebook(
            jp_root_dir,
            f"{name}.ipynb",
            f"import time\nwho = '{name}'\nfor i in range(5):\n"
            "    print(who, i, flush=True)\n    time.sleep(0.1)",
            "print(who)",
        )
        for name in ("a", "b")
    }

    async def agent(name: str) -> dict[str, Any]:
        async with connect() as client:
            return dict(
                await answer_of(client, "execute_notebook_cells", pathInProject=f"{name}.ipynb")
            )

    answers = await asyncio.gather(agent("a"), agent("b"))
    for name, answer in zip(("a", "b"), answers, strict=True):
        assert answer["status"] == "ok"
        assert answer["cells"][1]["outputs"][0]["text"] == f"{name}\n"
        saved = await on_disk(paths[name], lambda nb: nb.cells[1].execution_count is not None)
        assert saved.cells[0].outputs[0]["text"] == "".join(f"{name} {i}\n" for i in range(5))
        assert saved.cells[1].outputs[0]["text"] == f"{name}\n"


async def test_read_only_mode_keeps_the_kernel_questions_only(mcp_app: Any) -> None:
    ctx = mcp_app.tool_context
    reading = {"get_execution", "get_kernel_variables", "get_kernel_completions"}
    acting = {"execute_notebook_cells", "execute_code_in_kernel", "kernel_action"}
    visible = {t.name for t in mcp_app.registry.visible(ctx)}
    assert reading | acting <= visible
    ctx.settings.read_only = True
    try:
        visible = {t.name for t in mcp_app.registry.visible(ctx)}
        assert reading <= visible and not acting & visible
    finally:
        ctx.settings.read_only = False


async def test_bad_input_is_a_clear_error(fails: Any, jp_root_dir: Path) -> None:
    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1")
    before = path.read_bytes()
    assert "n.ipynb has no kernel" in await fails(
        "kernel_action", action="interrupt", pathInProject="n.ipynb"
    )
    assert "No kernel named 'ruby'" in await fails(
        "kernel_action", action="change", pathInProject="n.ipynb", kernelName="ruby"
    )
    assert "timeoutMs" in await fails(
        "execute_notebook_cells", pathInProject="n.ipynb", timeoutMs=0
    )
    assert "Notebook not found: gone.ipynb" in await fails(
        "execute_notebook_cells", pathInProject="gone.ipynb"
    )
    assert "waitMs" in await fails("get_execution", executionId="x", waitMs=10**9)
    assert path.read_bytes() == before


async def test_list_names_every_kernel_or_only_a_notebooks(
    connect: Any, fails: Any, jp_root_dir: Path
) -> None:
    write_code_notebook(jp_root_dir, "a.ipynb", "1")
    write_code_notebook(jp_root_dir, "b.ipynb", "2")
    async with connect() as client:
        a = await answer_of(client, "kernel_action", action="start", pathInProject="a.ipynb")
        b = await answer_of(client, "kernel_action", action="start", pathInProject="b.ipynb")
        every = await answer_of(client, "kernel_action", action="list")
        assert sorted(k["kernelId"] for k in every) == sorted([a["kernelId"], b["kernelId"]])
        only_a = await answer_of(client, "kernel_action", action="list", pathInProject="a.ipynb")
        assert [(k["kernelId"], k["notebooks"]) for k in only_a] == [(a["kernelId"], ["a.ipynb"])]
    # A notebook named on list is checked like on any other action.
    assert "outside" in (await fails("kernel_action", action="list", pathInProject="../x.ipynb"))


def _r_notebook(root: Path, name: str) -> Path:
    """A notebook of IRkernel's, as R users' notebooks are saved (this server has no R)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    nb.metadata["language_info"] = {"name": "R", "version": "4.2.2"}
    nb.cells = [nbformat.v4.new_code_cell("x <- c(1, 2, 3)\nmean(x)", id="r0")]
    path = root / name
    path.write_text(nbformat.writes(nb))
    return path


async def test_a_notebook_of_a_kernel_the_server_lacks_never_runs_in_python(
    connect: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    path = _r_notebook(jp_root_dir, "stats.ipynb")
    before = path.read_bytes()
    sessions = jp_serverapp.session_manager
    async with connect() as client:
        # Every tool that would start a kernel for the R notebook refuses, naming its kernel
        # and the server's, and how to choose another
        asks: list[tuple[str, dict[str, Any]]] = [
            ("execute_notebook_cells", {}),
            ("execute_code_in_kernel", {"code": "1"}),
            ("get_kernel_variables", {}),
            ("get_kernel_completions", {"cellId": "r0", "line": 0, "character": 1}),
            ("kernel_action", {"action": "start"}),
            ("debug_session", {"action": "start"}),
        ]
        for tool, arguments in asks:
            result = await client.call_tool(tool, {"pathInProject": "stats.ipynb", **arguments})
            assert result.is_error, (tool, result.content[0].text)
            message = result.content[0].text
            assert "stats.ipynb asks for the kernel 'ir' (R)" in message, (tool, message)
            assert "which this server does not have" in message
            assert "python3 (" in message and "kernel_action action=change" in message
        # Then nothing ran and nothing was written: no session, no kernel, the file as it was
        assert await sessions.list_sessions() == []
        assert list(jp_serverapp.kernel_manager.list_kernel_ids()) == []
        assert path.read_bytes() == before
        # When the agent chooses Python for it, the notebook names that kernel and runs
        changed = await answer_of(
            client,
            "kernel_action",
            action="change",
            pathInProject="stats.ipynb",
            kernelName="python3",
        )
        assert changed["name"] == "python3"
        await answer_of(
            client,
            "edit_notebook_cell",
            pathInProject="stats.ipynb",
            cellId="r0",
            source="sum([1, 2, 3]) / 3",
        )
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="stats.ipynb")
        assert ran["status"] == "ok", ran
        assert ran["cells"][0]["outputs"][0]["text"] == "2.0"
    saved = await on_disk(path, lambda nb: nb.cells[0].execution_count == 1)
    assert saved.metadata.kernelspec.name == "python3"


async def test_a_notebook_is_matched_to_a_kernel_as_jupyterlab_matches_it(
    connect: Any, fails: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    # A Python notebook saved with another machine's kernelspec (a conda environment's): the
    # server's Python kernel runs it, as JupyterLab picks a kernel of the notebook's language
    elsewhere = write_code_notebook(jp_root_dir, "conda.ipynb", "6 * 7")
    nb = nbformat.read(elsewhere, as_version=4)
    nb.metadata["kernelspec"] = {
        "name": "conda-env-analysis-py",
        "display_name": "Python [conda env:analysis]",
        "language": "python",
    }
    nbformat.write(nb, elsewhere)
    # One that names no kernel at all: the server's default
    plain = nbformat.v4.new_notebook()
    plain.cells = [nbformat.v4.new_code_cell("1 + 1")]
    (jp_root_dir / "plain.ipynb").write_text(nbformat.writes(plain))
    # One that names no kernel but says it is written in Julia: refused, naming the language
    julia = nbformat.v4.new_notebook()
    julia.metadata["language_info"] = {"name": "julia"}
    julia.cells = [nbformat.v4.new_code_cell("println(1)")]
    (jp_root_dir / "julia.ipynb").write_text(nbformat.writes(julia))
    async with connect() as client:
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="conda.ipynb")
        assert ran["cells"][0]["outputs"][0]["text"] == "42"
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="plain.ipynb")
        assert ran["cells"][0]["outputs"][0]["text"] == "2"
        names = {k["name"] for k in await answer_of(client, "kernel_action", action="list")}
        assert names == {jp_serverapp.kernel_manager.default_kernel_name}
    message = await fails("execute_notebook_cells", pathInProject="julia.ipynb")
    assert "julia.ipynb names no kernel and is written in julia" in message
    assert "(no kernel of the server runs julia)" in message
