"""The notebook and kernel tools in kernels other than ipykernel, through a real server.

Two real kernels from PyPI that ``make test`` installs (the test extra, and the Makefile's
``kernels`` step for bash_kernel's kernelspec): bash_kernel (bash through a pty; no debugger)
and xeus-python (a C++ kernel of its own with a Python interpreter, and a debugger). pytest-
jupyter hides this environment's kernelspecs from the test server, so each test gives the
server the ones installed here, as a user's ``jupyter kernelspec list`` shows them. IRkernel
(R) comes from Debian; where it cannot be installed its test is skipped.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from notebook_files import answer_of, error_of, on_disk

from jupyter_mcp.documents.notebook_view import cell_marker_lines, notebook_view

pytestmark = pytest.mark.timeout(300)
#: Every test runs with the notebook in its file and in the shared document (see conftest).
BOTH_BACKENDS = True

#: This environment's kernelspecs, looked up before pytest-jupyter hides them.
INSTALLED = KernelSpecManager().find_kernel_specs()
KERNELS = {
    "bash": {"name": "bash", "display_name": "Bash", "language": "bash"},
    "xpython": {"name": "xpython", "display_name": "Python (XPython)", "language": "python"},
    "ir": {"name": "ir", "display_name": "R", "language": "R"},
}
#: IRkernel comes from Debian (root and apt-get): elsewhere its test is skipped, said so.
needs_r = pytest.mark.skipif(
    "ir" not in INSTALLED, reason="IRkernel is not installed (make test installs it with apt-get)"
)


@pytest.fixture(autouse=True)
def _kernelspecs(jp_env_jupyter_path: Path) -> None:
    for name in KERNELS:
        if name not in INSTALLED:
            if name == "ir":
                continue
            pytest.fail(f"The {name} kernelspec is not installed here: run `make test-deps`")
        shutil.copytree(INSTALLED[name], jp_env_jupyter_path / "kernels" / name)


def write_notebook(root: Path, name: str, kernel: str, *sources: str) -> Path:
    """``root/name``, a notebook of ``kernel`` (as JupyterLab saves one) with code cells c0 …"""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = dict(KERNELS[kernel])
    nb.cells = [nbformat.v4.new_code_cell(s, id=f"c{i}") for i, s in enumerate(sources)]
    path = root / name
    path.write_text(nbformat.writes(nb))
    return path


async def test_a_bash_notebook_runs_in_bash_and_every_kernel_tool_answers_for_bash(
    connect: Any, jp_root_dir: Path
) -> None:
    path = write_notebook(
        jp_root_dir,
        "shell.ipynb",
        "bash",
        "echo hello\necho oops >&2",
        "greeting=hi; echo $greeting",
        "ls /no/such/folder",
        "echo never",
    )
    async with connect() as client:
        # When the agent runs the notebook
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="shell.ipynb")
        # Then it ran in bash, up to the failing command, with bash's own words
        assert ran["status"] == "error", ran
        assert [c["cellId"] for c in ran["cells"]] == ["c0", "c1", "c2"]
        assert ran["notRun"] == ["c3"]
        assert "".join(o["text"] for o in ran["cells"][0]["outputs"]) == "hello\noops\n"
        assert ran["cells"][1]["outputs"][0]["text"] == "hi\n"
        failed = ran["cells"][2]["outputs"]
        assert "No such file or directory" in failed[0]["text"]
        assert failed[-1]["evalue"] == "2"  # ls's exit status, as bash_kernel reports it
        listed = await answer_of(client, "kernel_action", action="list")
        assert [(k["name"], k["notebooks"]) for k in listed] == [("bash", ["shell.ipynb"])]
        # And the notebook keeps the outputs and says its language, from the kernel's reply
        saved = await on_disk(path, lambda nb: nb.cells[2].execution_count == 3)
        assert saved.cells[1].outputs[0]["text"] == "hi\n"
        assert saved.metadata.language_info["name"] == "bash"
        assert saved.metadata.kernelspec["name"] == "bash"
        # And the same shell answers snippets, completions and interrupts
        snippet = await answer_of(
            client, "execute_code_in_kernel", pathInProject="shell.ipynb", code="echo $greeting"
        )
        assert snippet["outputs"][0]["text"] == "hi\n"
        completed = await answer_of(
            client,
            "get_kernel_completions",
            pathInProject="shell.ipynb",
            cellId="c3",
            line=0,
            character=3,
            inspect=True,
        )
        assert "echo" in completed["matches"]
        assert completed["start"] == 0 and completed["end"] == 3
        slow = await answer_of(
            client,
            "execute_code_in_kernel",
            pathInProject="shell.ipynb",
            code="sleep 120",
            timeoutMs=3000,
        )
        assert slow["status"] == "timeout", slow
        after = await answer_of(
            client, "execute_code_in_kernel", pathInProject="shell.ipynb", code="echo after"
        )
        assert after["status"] == "ok" and after["outputs"][0]["text"] == "after\n"
        interrupted = await answer_of(
            client, "kernel_action", action="interrupt", pathInProject="shell.ipynb"
        )
        assert interrupted["name"] == "bash"
        still = await answer_of(
            client, "execute_code_in_kernel", pathInProject="shell.ipynb", code="echo $greeting"
        )
        assert still["outputs"][0]["text"] == "hi\n"  # the same shell, its variables kept
        # And what bash cannot do is said, not faked
        message = await error_of(client, "get_kernel_variables", pathInProject="shell.ipynb")
        assert "(bash_kernel) cannot list its variables" in message, message
        assert "runs bash; it has no debugger" in message
        message = await error_of(
            client, "debug_session", action="start", pathInProject="shell.ipynb"
        )
        assert "has no debugger" in message, message
        problems = await error_of(client, "get_file_problems", pathInProject="shell.ipynb")
        assert "analyses Python" in problems and "bash notebook" in problems, problems
        project = await answer_of(client, "get_file_problems", pathInProject=".")
        assert project["filesChecked"] == 0 and project["problems"] == []
        assert [s["path"] for s in project["skipped"]] == ["shell.ipynb"]
        # And kernel_action acts on the bash kernel
        restarted = await answer_of(
            client, "kernel_action", action="restart", pathInProject="shell.ipynb"
        )
        assert restarted["name"] == "bash"
        gone = await answer_of(
            client,
            "execute_code_in_kernel",
            pathInProject="shell.ipynb",
            code="echo ${greeting:-gone}",
        )
        assert gone["outputs"][0]["text"] == "gone\n"
        stopped = await answer_of(
            client, "kernel_action", action="shutdown", pathInProject="shell.ipynb"
        )
        assert stopped["state"] == "dead"
        started = await answer_of(
            client, "kernel_action", action="start", pathInProject="shell.ipynb"
        )
        assert started["name"] == "bash"
        changed = await answer_of(
            client,
            "kernel_action",
            action="change",
            pathInProject="shell.ipynb",
            kernelName="xpython",
        )
        assert changed["name"] == "xpython"
    saved = await on_disk(path, lambda nb: nb.metadata.kernelspec["name"] == "xpython")
    assert saved.metadata.kernelspec["language"] == "python"


async def test_a_xeus_python_notebook_runs_errors_interrupts_and_shows_its_variables(
    connect: Any, jp_root_dir: Path
) -> None:
    path = write_notebook(
        jp_root_dir,
        "xeus.ipynb",
        "xpython",
        "x = 21 * 2\nx",
        "import sys\nprint('out')\nprint('err', file=sys.stderr)",
        "1 / 0",
    )
    async with connect() as client:
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="xeus.ipynb")
        assert ran["status"] == "error", ran
        assert ran["cells"][0]["outputs"][0]["text"] == "42"
        streams = {o["name"]: o["text"] for o in ran["cells"][1]["outputs"]}
        assert streams == {"stdout": "out\n", "stderr": "err\n"}
        error = ran["cells"][2]["outputs"][0]
        assert "ZeroDivisionError" in error["ename"] and error["evalue"] == "division by zero"
        listed = await answer_of(client, "kernel_action", action="list")
        assert [k["name"] for k in listed] == ["xpython"]
        saved = await on_disk(path, lambda nb: nb.cells[2].execution_count == 3)
        assert saved.metadata.language_info["name"] == "python"
        variables = await answer_of(
            client, "get_kernel_variables", pathInProject="xeus.ipynb", names=["x"]
        )
        assert [(v["name"], v["type"], v["value"]) for v in variables] == [("x", "int", "42")]
        completed = await answer_of(
            client,
            "get_kernel_completions",
            pathInProject="xeus.ipynb",
            cellId="c1",
            line=0,
            character=len("import s"),
        )
        assert "sys" in completed["matches"]
        slow = await answer_of(
            client,
            "execute_code_in_kernel",
            pathInProject="xeus.ipynb",
            code="import time\ntime.sleep(120)",
            timeoutMs=3000,
        )
        # A timeout interrupts the kernel; xeus kernels end on SIGINT (jupyter-xeus/xeus#272),
        # which the answer says; the server restarts the kernel for the notebook's session
        assert slow["status"] == "timeout", slow
        assert "cannot be interrupted" in slow["error"]
        listed = await answer_of(client, "kernel_action", action="list")
        assert [(k["name"], k["notebooks"]) for k in listed] == [("xpython", ["xeus.ipynb"])]


@needs_r
async def test_an_r_notebook_runs_in_irkernel_with_rs_errors_completions_and_interrupts(
    connect: Any, jp_root_dir: Path
) -> None:
    path = write_notebook(
        jp_root_dir,
        "stats.ipynb",
        "ir",
        "x <- c(1, 2, 3)\nmean(x)",
        'cat("hi\\n"); message("careful")',
        'stop("boom")',
    )
    async with connect() as client:
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="stats.ipynb")
        assert ran["status"] == "error", ran
        assert ran["cells"][0]["outputs"][0]["text"] == "[1] 2"
        streams = {o["name"]: o["text"] for o in ran["cells"][1]["outputs"]}
        assert streams["stdout"] == "hi\n" and streams["stderr"].startswith("careful")
        error = ran["cells"][2]["outputs"][0]
        assert error["ename"] == "ERROR" and "boom" in error["evalue"]
        listed = await answer_of(client, "kernel_action", action="list")
        assert [(k["name"], k["notebooks"]) for k in listed] == [("ir", ["stats.ipynb"])]
        saved = await on_disk(path, lambda nb: nb.cells[2].execution_count == 3)
        assert saved.metadata.language_info["name"] == "R"
        assert saved.cells[0].outputs[0]["data"]["text/plain"] == "[1] 2"
        await answer_of(
            client, "edit_notebook_cell", pathInProject="stats.ipynb", cellId="c2", source="mean"
        )
        completed = await answer_of(
            client,
            "get_kernel_completions",
            pathInProject="stats.ipynb",
            cellId="c2",
            line=0,
            character=4,
            inspect=True,
        )
        assert "mean" in completed["matches"]
        assert "mean.Date" in completed["matches"]
        assert "Arithmetic Mean" in completed["documentation"], completed["documentation"]
        slow = await answer_of(
            client,
            "execute_code_in_kernel",
            pathInProject="stats.ipynb",
            code="Sys.sleep(120)",
            timeoutMs=3000,
        )
        assert slow["status"] == "timeout", slow
        # The interrupt stopped the code, not R: its variables are still there
        kept = await answer_of(
            client, "execute_code_in_kernel", pathInProject="stats.ipynb", code="x"
        )
        assert kept["outputs"][0]["text"] == "[1] 1 2 3"
        message = await error_of(client, "get_kernel_variables", pathInProject="stats.ipynb")
        assert "(IRkernel) cannot list its variables" in message, message
        message = await error_of(
            client, "debug_session", action="start", pathInProject="stats.ipynb"
        )
        assert "has no debugger" in message, message
        problems = await error_of(client, "get_file_problems", pathInProject="stats.ipynb")
        assert "R notebook" in problems, problems


AVERAGE = (
    "def average(values):\n"
    "    total = 0\n"
    "    for v in values:\n"
    "        total += v\n"
    "    return total / (len(values) + 1)\n"
)


async def test_xeus_pythons_own_debugger_stops_at_a_breakpoint_and_shows_the_locals(
    connect: Any, jp_root_dir: Path
) -> None:
    path = write_notebook(jp_root_dir, "debug.ipynb", "xpython", AVERAGE, "average([2, 4, 6])")
    nb = nbformat.read(path, as_version=4)
    view = notebook_view(nb)
    markers = cell_marker_lines(nb, view)
    assert markers is not None
    line = markers[0] + 5
    assert view.splitlines()[line - 1].strip().startswith("return total")
    async with connect() as client:
        await answer_of(
            client, "execute_notebook_cells", pathInProject="debug.ipynb", cellIds=["c0"]
        )
        added = await answer_of(
            client, "toggle_debugger_breakpoint", pathInProject="debug.ipynb", line=line
        )
        assert added == "Breakpoint added"
        started = await answer_of(
            client, "debug_session", action="start", pathInProject="debug.ipynb"
        )
        assert started["breakpoints"][0]["verified"] is True, started
        stopped = await answer_of(
            client, "debug_session", action="run_cell", pathInProject="debug.ipynb", cellId="c1"
        )
        assert stopped["state"] == "stopped", stopped
        assert stopped["where"]["cellId"] == "c0" and stopped["where"]["function"] == "average"
        found = await answer_of(
            client, "debug_session", action="variables", pathInProject="debug.ipynb"
        )
        values = {v["name"]: v["value"] for v in found["variables"]}
        assert values["total"] == "12" and values["values"] == "[2, 4, 6]"
        done = await answer_of(
            client, "debug_session", action="continue", pathInProject="debug.ipynb"
        )
        assert done["state"] == "finished" and done["outputs"][0]["text"] == "3.0"
        ended = await answer_of(client, "debug_session", action="stop", pathInProject="debug.ipynb")
        assert ended["session"] == "ended"
