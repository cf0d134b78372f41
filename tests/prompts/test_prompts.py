"""The five prompts through the official SDK client, both eras: listed, completed, their
messages embedding the resources they are about, and clear invalid-params errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mcp import MCPError
from mcp_types import PromptReference
from notebook_files import write_notebook

MODES = ["legacy", "auto"]
NAMES = ["explain_notebook", "fix_failing_cell", "debug_cell", "review_changes", "tidy_notebook"]


def analysis(root: Path) -> list[str]:
    """A notebook whose third cell fails on a name the second defines; its cell ids."""
    load = nbformat.v4.new_code_cell("import math\nrows = [1, 2, 3]", execution_count=2)
    scale = nbformat.v4.new_code_cell("factor = 10\n%matplotlib inline", execution_count=3)
    fail = nbformat.v4.new_code_cell("total = sum(rows) * factor / zero", execution_count=1)
    fail.outputs = [
        nbformat.v4.new_output(
            "error", ename="NameError", evalue="name 'zero' is not defined", traceback=["NameError"]
        )
    ]
    cells = [nbformat.v4.new_markdown_cell("# Analysis"), load, scale, fail]
    return write_notebook(root / "analysis.ipynb", cells)


def embedded(message: Any) -> Any:
    assert message.content.type == "resource", message.content
    return message.content.resource


@pytest.mark.parametrize("mode", MODES)
async def test_the_five_prompts_are_listed_with_their_arguments(connect, mode):
    async with connect(mode) as client:
        assert client.server_capabilities.prompts is not None
        prompts = (await client.list_prompts()).prompts
    assert [p.name for p in prompts] == NAMES
    assert all(p.description and p.title for p in prompts)
    arguments = {p.name: [(a.name, a.required) for a in p.arguments or []] for p in prompts}
    assert arguments == {
        "explain_notebook": [("pathInProject", True)],
        "fix_failing_cell": [("pathInProject", True), ("cellId", False)],
        "debug_cell": [("pathInProject", True), ("cellId", True)],
        "review_changes": [("base", False)],
        "tidy_notebook": [("pathInProject", True)],
    }


async def test_prompts_follow_the_tools_a_connection_may_use(connect, mcp_app):
    async with connect("legacy", query="toolsets=git,files") as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["review_changes"]
        with pytest.raises(MCPError, match="explain_notebook is not available on this connection"):
            await client.get_prompt("explain_notebook", {"pathInProject": "a.ipynb"})
    mcp_app.read_only = True  # the fix and the tidy-up run code: not offered read-only
    async with connect("auto") as client:
        names = [p.name for p in (await client.list_prompts()).prompts]
    assert names == ["explain_notebook", "review_changes"]


@pytest.mark.parametrize("mode", MODES)
async def test_explain_notebook_embeds_the_notebook(connect, jp_root_dir, mode):
    ids = analysis(jp_root_dir)
    async with connect(mode) as client:
        got = await client.get_prompt("explain_notebook", {"pathInProject": "analysis.ipynb"})
    resource = embedded(got.messages[0])
    assert resource.uri == "jupyter-mcp://notebook/analysis.ipynb"
    assert [c["cellId"] for c in json.loads(resource.text)["cells"]] == ids
    assert got.messages[-1].content.type == "text"
    assert "cell by cell" in got.messages[-1].content.text


async def test_fix_failing_cell_finds_the_error_and_the_cells_it_depends_on(connect, jp_root_dir):
    _, load, scale, fail = analysis(jp_root_dir)
    async with connect("legacy") as client:
        got = await client.get_prompt("fix_failing_cell", {"pathInProject": "analysis.ipynb"})
    # The failing cell with its error, then the cells that define rows and factor
    uris = [embedded(m).uri for m in got.messages[:-1]]
    assert uris == [
        f"jupyter-mcp://notebook/analysis.ipynb/cell/{fail}",
        f"jupyter-mcp://notebook/analysis.ipynb/cell/{load}",
        f"jupyter-mcp://notebook/analysis.ipynb/cell/{scale}",
    ]
    assert json.loads(embedded(got.messages[0]).text)["outputs"][0]["ename"] == "NameError"
    text = got.messages[-1].content.text
    assert "fails with NameError: name 'zero' is not defined" in text
    assert "edit_notebook_cell" in text and "execute_notebook_cells" in text


async def test_fix_failing_cell_without_a_failing_cell_says_so(connect, jp_root_dir):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1 + 1")]
    (jp_root_dir / "fine.ipynb").write_text(nbformat.writes(nb))
    async with connect("auto") as client:
        with pytest.raises(MCPError, match="no cell of fine.ipynb has an error") as caught:
            await client.get_prompt("fix_failing_cell", {"pathInProject": "fine.ipynb"})
    assert caught.value.error.code == -32602


async def test_debug_cell_embeds_the_cell_and_how_to_step_through_it(connect, jp_root_dir):
    _, _, scale, _ = analysis(jp_root_dir)
    async with connect("legacy") as client:
        got = await client.get_prompt(
            "debug_cell", {"pathInProject": "analysis.ipynb", "cellId": scale}
        )
        view = await client.call_tool("get_file_text_by_path", {"pathInProject": "analysis.ipynb"})
    assert embedded(got.messages[0]).uri.endswith(f"/cell/{scale}")
    text = got.messages[-1].content.text
    # The cell's first line in the percent view, where a breakpoint goes
    lines = json.loads(view.content[0].text)["content"].splitlines()
    first = next(i for i, line in enumerate(lines, 1) if line == "factor = 10")
    assert f"line {first} of the notebook's percent-format view" in text
    for step in ("toggle_debugger_breakpoint", "'start'", "'run_cell'", "'step_over'", "'stop'"):
        assert step in text


async def test_review_changes_embeds_the_changed_files_and_the_diff(connect, jp_root_dir):
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=jp_root_dir, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    analysis(jp_root_dir)
    (jp_root_dir / "app.py").write_text("x = 1\n")
    git("add", ".")
    git("commit", "-qm", "one")
    git("tag", "v1")
    # When a code cell and a file change, and a file is new
    nb = nbformat.read(jp_root_dir / "analysis.ipynb", as_version=4)
    nb.cells[3].source = "total = sum(rows) * factor"
    nb.cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="60\n")]
    nbformat.write(nb, jp_root_dir / "analysis.ipynb")
    (jp_root_dir / "app.py").write_text("x = 2\n")
    (jp_root_dir / "new.py").write_text("y = 1\n")
    async with connect("auto") as client:
        got = await client.get_prompt("review_changes", {})
        completions = await client.complete(
            PromptReference(type="ref/prompt", name="review_changes"),
            {"name": "base", "value": "v"},
        )
        with pytest.raises(MCPError, match="Unknown revision 'nope'"):
            await client.get_prompt("review_changes", {"base": "nope"})
    assert completions.completion.values == ["v1"]
    files = [embedded(m).uri for m in got.messages[:-1]]
    assert files == [
        "jupyter-mcp://file/analysis.ipynb",
        "jupyter-mcp://file/app.py",
        "jupyter-mcp://file/new.py",
    ]
    text = got.messages[-1].content.text
    # Notebooks as cell diffs, outputs left out
    assert "-total = sum(rows) * factor / zero" in text
    assert "+total = sum(rows) * factor" in text
    assert "60" not in text.replace("(3 files)", "") and "NameError" not in text
    assert "-x = 1" in text and "+x = 2" in text and "+y = 1" in text


async def test_tidy_notebook_points_at_hidden_state(connect, jp_root_dir):
    _, _, _, fail = analysis(jp_root_dir)
    async with connect("legacy") as client:
        got = await client.get_prompt("tidy_notebook", {"pathInProject": "analysis.ipynb"})
    assert embedded(got.messages[0]).uri == "jupyter-mcp://notebook/analysis.ipynb"
    text = got.messages[-1].content.text
    assert "kernel_action 'restart'" in text and "execute_notebook_cells" in text
    assert f"cell {fail}: the cells ran out of order" in text  # count 1 after counts 2 and 3
    assert f"cell {fail} (index 3) uses zero, which no earlier cell defines" in text


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_prompts_and_missing_arguments_are_invalid_params(connect, mode):
    async with connect(mode) as client:
        with pytest.raises(MCPError, match="Unknown prompt: nope") as caught:
            await client.get_prompt("nope", {})
        assert caught.value.error.code == -32602
        with pytest.raises(MCPError, match="debug_cell needs the argument cellId") as caught:
            await client.get_prompt("debug_cell", {"pathInProject": "a.ipynb"})
        assert caught.value.error.code == -32602
        with pytest.raises(MCPError, match="explain_notebook has no argument colour"):
            await client.get_prompt("explain_notebook", {"pathInProject": "a.ipynb", "colour": "x"})
        with pytest.raises(MCPError, match="Unknown prompt: nope"):
            await client.complete(
                PromptReference(type="ref/prompt", name="nope"), {"name": "x", "value": ""}
            )


async def test_prompt_arguments_complete(connect, jp_root_dir):
    ids = analysis(jp_root_dir)
    (jp_root_dir / "notes.txt").write_text("")
    (jp_root_dir / "nb").mkdir()
    (jp_root_dir / "nb" / "other.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    ref = PromptReference(type="ref/prompt", name="debug_cell")
    async with connect("legacy") as client:
        paths = await client.complete(ref, {"name": "pathInProject", "value": ""})
        cells = await client.complete(
            ref,
            {"name": "cellId", "value": ""},
            context_arguments={"pathInProject": "analysis.ipynb"},
        )
    assert paths.completion.values == ["analysis.ipynb", "nb/"]  # notebooks only
    assert cells.completion.values == ids
