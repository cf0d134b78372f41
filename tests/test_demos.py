"""The demo notebooks in notebooks/ run headless against a real server and leave no trace.

Every ``notebooks/*.ipynb`` is executed by nbclient in a fresh kernel, with the demo folder as
its working directory, against a Jupyter server started here in a subprocess on that same
folder (as ``make run`` does). The server's URL and token reach the notebook through
``JUPYTER_MCP_URL`` and ``JUPYTER_MCP_TOKEN``; run by hand, the notebooks find the server they
run in instead. A notebook must finish without an error and leave every file of the folder as
it was (names and contents).

``JUPYTER_MCP_SAVE_DEMOS=1`` (``make demos``) also writes the executed notebooks back, with the
server's port and token, the checkout's path and scratch folders replaced by fixed text, so the
committed notebooks show their outputs.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from server_process import server_process

REPO = Path(__file__).resolve().parent.parent
DEMOS = REPO / "notebooks"
NOTEBOOKS = sorted(DEMOS.glob("*.ipynb"))
#: Per cell; the longest demo cell waits on a test run in a kernel of its own.
CELL_TIMEOUT = 180


def manifest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path) with the SHA-256 of its contents."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() or path.is_symlink()
    }


def _python_path() -> str:
    """This process's import path for subprocesses: absolute, so it holds in any folder."""
    entries = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(entries)


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A Jupyter server with jupyter_mcp on notebooks/, in a subprocess of its own."""
    home = tmp_path_factory.mktemp("demo-server")
    env = {**os.environ, "PYTHONPATH": _python_path()}
    with server_process(home, DEMOS, env=env) as server:
        yield {"url": server.url.rstrip("/"), "token": server.token}


def _errors(nb: Any) -> list[str]:
    return [
        f"{output.get('ename')}: {output.get('evalue')}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]


def _scrub(nb: Any, server: dict[str, str]) -> None:
    """Replace what changes from run to run (port, token, paths) by fixed text."""
    replacements = [
        (server["token"], "<token>"),
        (server["url"], "http://127.0.0.1:8888"),
        (str(REPO), "/path/to/jupyter-mcp"),
    ]
    scratch = re.compile(re.escape(tempfile.gettempdir()) + r"/[A-Za-z0-9_.-]+")

    def clean(text: str) -> str:
        for old, new in replacements:
            text = text.replace(old, new)
        return scratch.sub("/tmp/scratch", text)

    def cleaned(value: Any) -> Any:
        # JSON outputs too (the IPython extension's results carry paths in their data).
        if isinstance(value, str):
            return clean(value)
        if isinstance(value, list):
            return [cleaned(v) for v in value]
        if isinstance(value, dict):
            return {k: cleaned(v) for k, v in value.items()}
        return value

    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = clean(output["text"])
            for kind, value in list(output.get("data", {}).items()):
                output["data"][kind] = cleaned(value)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_demo_notebook_runs_and_leaves_the_folder_as_found(
    path: Path, demo_server: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = manifest(DEMOS)
    nb = nbformat.read(path, as_version=4)
    # The kernel inherits these: where the server is, and this checkout's jupyter_mcp.
    monkeypatch.setenv("JUPYTER_MCP_URL", demo_server["url"])
    monkeypatch.setenv("JUPYTER_MCP_TOKEN", demo_server["token"])
    monkeypatch.setenv("PYTHONPATH", _python_path())
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        # nbclient's 60 s is not enough for a kernel to start on a loaded CI machine.
        startup_timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(DEMOS)}},
    )
    try:
        client.execute()
    finally:
        after = manifest(DEMOS)
        leftovers = sorted(set(after) - set(before))
        for name in leftovers:  # never leave a failed demo's files in the checkout
            (DEMOS / name).unlink()
            parent = (DEMOS / name).parent
            while parent != DEMOS and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
    assert not _errors(nb), _errors(nb)
    changed = sorted(name for name in before if after.get(name) != before[name])
    assert not leftovers and not changed, f"left behind: {leftovers}, changed: {changed}"

    if os.environ.get("JUPYTER_MCP_SAVE_DEMOS"):
        _scrub(nb, demo_server)
        nbformat.write(nb, path)


def test_every_demo_is_run() -> None:
    """The runner picks up each notebook of the folder, a new one included."""
    assert {p.name for p in NOTEBOOKS} >= {
        "tour.ipynb",
        "mcp_client.ipynb",
        "agent_session.ipynb",
        "plugin_harness.ipynb",
    }
    assert shutil.which("git"), "the agent session demo needs git"
