"""``%load_ext jupyter_mcp`` in real notebooks, run by the server's own kernels.

A Jupyter server with jupyter_mcp runs in a subprocess (its own runtime folder, no
``JUPYTER_MCP_*`` in its environment); each notebook here is put in its root and run through
that server's ``execute_notebook_cells``, so the kernel is one the server started, as when a
user runs the notebook in JupyterLab. The extension must find that server by itself, and the
cells' outputs (saved in the notebook) show what it did. One notebook runs in a kernel that
no server started, to see what the extension says there and that ``%mcp connect`` works.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from outputs_notebook import write_outputs_notebook
from server_configs import COLLABORATION_EXTENSIONS
from server_process import ServerProcess, seed_call, server_process

MIME = "application/vnd.jupyter-mcp.result+json"


class Server(ServerProcess):
    """The subprocess server, and notebooks run by it."""

    def run(self, name: str, cells: list[str]) -> list[dict[str, Any]]:
        """Write a notebook of ``cells``, run it in the server's kernel for it, stop that
        kernel; the cells with their outputs as saved."""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
        (self.root / name).write_text(nbformat.writes(nb))
        try:
            seed_call(self, "execute_notebook_cells", pathInProject=name, timeoutMs=240000)
        finally:
            seed_call(self, "kernel_action", action="shutdown", pathInProject=name)
        return nbformat.read(self.root / name, as_version=4).cells


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("ipython-server")
    root = home / "root"
    root.mkdir()
    (root / "hello.py").write_text('def greet(name):\n    return f"Hello, {name}!"\n')
    # The kernels must find the server by themselves: nothing in their environment names it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_MCP_")}
    # Without jupyter-collaboration, a run's outputs are in the notebook file when it ends.
    extensions = {name: False for name in COLLABORATION_EXTENSIONS}
    with server_process(home, root, extensions=extensions, env=env) as running:
        yield Server(url=running.url, token=running.token, root=root)


def texts(cell: Any) -> str:
    """Everything a cell printed or showed as text."""
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
        else:
            parts.append(output.data.get("text/plain", ""))
    return "\n".join(parts)


def shown(cell: Any) -> dict[str, Any]:
    """The MIME bundle of a cell's result (its last rich output)."""
    rich = [o for o in cell.outputs if o.output_type in ("execute_result", "display_data")]
    assert rich, texts(cell)
    return dict(rich[-1].data)


def test_the_extension_finds_its_server_and_gives_the_tools(server: Server) -> None:
    cells = server.run(
        "magics.ipynb",
        [
            "%load_ext jupyter_mcp",
            "%mcp tools",
            "text = %mcp get_file_text_by_path hello.py\n"
            "print(type(text).__name__, isinstance(text, dict), repr(text['content']))",
            "found = ide.search_in_files_content(searchText='def greet')\n"
            "print(type(found).__name__, [(f['path'], f['matches'][0]['line']) for f in found])\n"
            "found",
            "import inspect\n"
            "print(inspect.signature(ide.get_file_text_by_path))\n"
            "print(ide.get_file_text_by_path.__doc__.splitlines()[0])\n"
            "from IPython.core.completer import provisionalcompleter\n"
            "with provisionalcompleter():\n"
            "    completer = get_ipython().Completer\n"
            "    print([c.text for c in completer.completions('ide.get_file_t', 14)])",
            "%%mcp create_new_file_with_text\n"
            "pathInProject: made/notes.txt\n"
            "text: |\n"
            "  one\n"
            "  two\n",
            "%%mcp rewrite_file_content pathInProject=made/notes.txt --body text\nthree\n",
            'answer = %mcp replace_specific_text pathInProject=made/notes.txt searchText="three" '
            "replaceText='four'\nprint(answer)",
            "%mcp get_file_text_by_path pathInProject=missing.txt",
        ],
    )
    loaded = texts(cells[0])
    assert "jupyter-mcp: connected to " + server.url in loaded
    assert "(the server that started this kernel)" in loaded
    assert "60 tools" in loaded or " tools." in loaded
    for cell in cells:  # the token is never shown
        assert server.token not in json.dumps(cell.outputs)

    tools = shown(cells[1])
    assert set(tools) == {MIME, "text/html", "text/plain"}
    rows = tools[MIME]["value"]
    by_name = {row["name"]: row for row in rows}
    assert by_name["get_file_text_by_path"]["toolset"] == "files"
    assert by_name["execute_notebook_cells"]["toolset"] == "kernels"
    assert by_name["execute_notebook_cells"]["view"] == "cell-outputs"
    assert [row["toolset"] for row in rows] == sorted(
        (row["toolset"] for row in rows), key=[r["toolset"] for r in rows].index
    )
    assert "<table" in tools["text/html"] and "get_file_text_by_path" in tools["text/plain"]

    assert texts(cells[2]).strip() == (
        "ResultDict True 'def greet(name):\\n    return f\"Hello, {name}!\"\\n'"
    )
    assert "ResultList [('hello.py', 1)" in texts(cells[3])
    assert shown(cells[3])[MIME]["value"][0]["path"] == "hello.py"

    signature, first_line, completions = texts(cells[4]).strip().splitlines()
    assert signature == "(*, pathInProject: str) -> Any"
    assert first_line.startswith("Read a project file's text.")
    assert "get_file_text_by_path" in completions  # what Tab completes in the kernel

    assert (server.root / "made" / "notes.txt").read_text() == "four\n"
    assert "'replacements': 1" in texts(cells[7])

    (error,) = cells[8].outputs
    assert error.output_type == "error"
    assert (error.ename, error.evalue) == ("ToolError", "File not found: missing.txt")
    assert len(error.traceback) == 1  # the message, not the client library's traceback


def test_results_show_with_the_views_data_and_safe_fallbacks(server: Server) -> None:
    write_outputs_notebook(server.root / "outputs.ipynb")
    cells = server.run(
        "runs.ipynb",
        [
            "%load_ext jupyter_mcp",
            "run = %mcp execute_notebook_cells pathInProject=outputs.ipynb timeoutMs=120000\n"
            "print(run['status'], len(run['cells']))\n"
            "run",
            "%mcp kernel_action action=shutdown pathInProject=outputs.ipynb",
            "%mcp get_kernel_variables pathInProject=runs.ipynb",
        ],
    )
    assert texts(cells[1]).startswith("error 8")
    bundle = shown(cells[1])
    view = bundle[MIME]["result"]["_meta"]["jupyter-mcp/view"]
    assert view["view"] == "cell-outputs"
    assert "<table" in view["cells"][0]["outputs"][0]["data"]["text/html"]
    images = [b for b in bundle[MIME]["result"]["content"] if b["type"] == "image"]
    assert images and view["cells"][1]["outputs"][0]["contentImage"] == 0
    # The plain HTML for other frontends escapes everything an output carried.
    fallback = bundle["text/html"]
    assert "<script" not in fallback and "onerror" not in fallback.replace("onerror=&quot;", "")
    assert "data:image/png;base64," in fallback and "ZeroDivisionError" in fallback
    assert "ZeroDivisionError" in bundle["text/plain"]

    (refused,) = [o for o in cells[3].outputs if o.output_type == "error"]
    assert refused.ename == "ToolError"
    assert "this notebook's own kernel (runs.ipynb)" in refused.evalue


def test_a_kernel_no_server_started_says_how_to_connect(server: Server, tmp_path: Path) -> None:
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_mcp"),
        nbformat.v4.new_code_cell(f"%mcp connect {server.url}"),
        nbformat.v4.new_code_cell("%mcp get_file_text_by_path pathInProject=hello.py"),
    ]
    env_before = {k: os.environ.get(k) for k in ("JUPYTER_RUNTIME_DIR", "JUPYTER_MCP_URL")}
    os.environ["JUPYTER_RUNTIME_DIR"] = str(tmp_path / "runtime")
    os.environ.pop("JUPYTER_MCP_URL", None)
    os.environ["JUPYTER_MCP_TOKEN"] = server.token  # what %mcp connect takes the token from
    try:
        NotebookClient(
            nb, timeout=120, startup_timeout=180, resources={"metadata": {"path": str(tmp_path)}}
        ).execute()
    finally:
        os.environ.pop("JUPYTER_MCP_TOKEN", None)
        for key, value in env_before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    said = texts(nb.cells[0])
    assert "No Jupyter server found for this kernel" in said and "%mcp connect URL" in said
    assert f"connected to {server.url}" in texts(nb.cells[1])
    assert "greet" in json.dumps(shown(nb.cells[2])[MIME]["value"])


def test_importing_the_extension_is_cheap() -> None:
    heavy = ["mcp", "jupyter_server", "tornado", "jsonschema", "jedi", "jupyter_mcp.core.registry"]
    code = f"import sys, jupyter_mcp.ipython\nprint([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
