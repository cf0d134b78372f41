"""Run configurations through a real Jupyter server and real kernels."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
import pytest
from process_table import processes_with

from jupyter_mcp.execution.run_configs import discover

LAUNCH = """{
  // VS Code writes comments and trailing commas
  "version": "0.2.0",
  "configurations": [
    {
      "name": "Run Script",
      "type": "debugpy",
      "request": "launch",
      "program": "${workspaceFolder}/scripts/app.py",
      "args": ["--greeting", "hello world", "${workspaceFolderBasename}"],
      "cwd": "${workspaceFolder}/scripts",
      "env": {"APP_MODE": "testing", "APP_NUMBER": 7}, /* numbers become strings */
      "envFile": "${workspaceFolder}/.env",
    },
    {"name": "Module", "type": "python", "request": "launch", "module": "http.server"},
    {"name": "Attach", "type": "python", "request": "attach", "port": 5678},
    {"name": "Current File", "type": "python", "request": "launch", "program": "${file}"},
    {"name": "Build", "type": "python", "request": "launch", "program": "build.py"},
  ],
}
"""

TASKS = """{
  "version": "2.0.0",
  "tasks": [
    // a task writes a file, in the root by default
    {"label": "Write Marker", "type": "shell", "command": "echo task-ran > task.txt && pwd"},
    {"label": "In Subfolder", "type": "process", "command": "pwd",
     "options": {"cwd": "${workspaceFolder}/scripts", "env": {"X": "1"}}},
    {"label": "Build", "type": "shell", "command": "echo build"},
    {"label": "Sleep Forever", "type": "shell", "command": "sleep $MARKER",
     "options": {"env": {"MARKER": "MARKER_VALUE"}}},
  ],
}
"""

SCRIPT = """import os, sys
print("args:", sys.argv[1:])
print("cwd:", os.getcwd())
print("env:", os.environ["APP_MODE"], os.environ["APP_NUMBER"])
open("launched.txt", "w").write("launched")
sys.exit(3)
"""


def _notebook(path: Path, *sources: str) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# title")]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb))


@pytest.fixture
def project(jp_root_dir: Path) -> Path:
    """A project with every kind of run configuration."""
    (jp_root_dir / ".vscode").mkdir()
    (jp_root_dir / ".vscode" / "launch.json").write_text(LAUNCH)
    marker = f"{100 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    (jp_root_dir / ".vscode" / "tasks.json").write_text(TASKS.replace("MARKER_VALUE", marker))
    (jp_root_dir / ".env").write_text("# comment\nFROM_FILE='yes'\nAPP_MODE=overridden\n")
    (jp_root_dir / "scripts").mkdir()
    (jp_root_dir / "scripts" / "app.py").write_text(SCRIPT)
    (jp_root_dir / "package.json").write_text(
        json.dumps(
            {
                "name": "demo",
                "scripts": {
                    "write": "node -e \"require('fs').writeFileSync('npm.txt', 'npm-ran')\"",
                },
            }
        )
    )
    _notebook(
        jp_root_dir / "analysis.ipynb",
        "x = 6 * 7\nprint('x is', x)",
        "x + 1",
        "open('notebook.txt', 'w').write(f'cells ran: {x}')",
    )
    _notebook(jp_root_dir / "nested" / "broken.ipynb", "print('before')", "1 / 0", "print('after')")
    (jp_root_dir / "tests").mkdir()
    (jp_root_dir / "tests" / "test_sample.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    (jp_root_dir / "marker.txt").write_text(marker)
    return jp_root_dir


def _instant(iso: str) -> float:
    """A start or end time of a run report, in seconds since the epoch."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


async def _wait_done(ok: Any, name: str, seconds: float = 90) -> dict[str, Any]:
    report = await ok("get_run_output", configName=name, waitMs=seconds * 1000)
    assert report["status"] not in ("starting", "running"), report
    return report


async def test_configurations_are_listed_under_their_own_names(ok: Any, project: Path) -> None:
    names = await ok("get_run_configurations")
    assert names == [
        "Run Script",
        "Module",
        "launch: Build",
        "Write Marker",
        "In Subfolder",
        "task: Build",
        "Sleep Forever",
        "write",
        "Run notebook analysis.ipynb",
        "Run notebook nested/broken.ipynb",
        "pytest",
    ]


def test_discovery_details(project: Path) -> None:
    configs = {c.name: c for c in discover(project, logging.getLogger("test"))}
    script = configs["Run Script"]
    assert script.argv == [
        "${python}",
        f"{project}/scripts/app.py",
        "--greeting",
        "hello world",
        project.name,
    ]
    assert script.cwd == (project / "scripts").resolve()
    assert script.env == {"FROM_FILE": "yes", "APP_MODE": "testing", "APP_NUMBER": "7"}
    assert configs["Module"].argv == ["${python}", "-m", "http.server"]
    assert configs["Write Marker"].cwd == project.resolve()
    assert configs["In Subfolder"].argv == ["pwd"]
    assert configs["In Subfolder"].env == {"X": "1"}
    assert configs["write"].argv == ["npm", "run", "write"]


def test_no_pytest_without_tests(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("print(1)\n")
    assert discover(tmp_path, logging.getLogger("test")) == []
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\naddopts = '-q'\n")
    assert [c.name for c in discover(tmp_path, logging.getLogger("test"))] == ["pytest"]


def test_unreadable_vscode_files_are_skipped_with_a_warning(tmp_path: Path, caplog) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "launch.json").write_text("{ not json")
    (tmp_path / ".vscode" / "tasks.json").write_text('["a list, not an object"]')
    (tmp_path / "package.json").write_text(json.dumps({"scripts": {"go": "echo go"}}))
    with caplog.at_level(logging.WARNING, logger="test"):
        names = [c.name for c in discover(tmp_path, logging.getLogger("test"))]
    # The other sources still answer; only the file that cannot be parsed is named.
    assert names == ["go"]
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        f"Cannot read {tmp_path / '.vscode' / 'launch.json'}"
    ]


def test_ignored_and_outside_notebooks_and_tests_are_not_offered(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Given notebooks and test files in git-ignored folders, a re-included notebook, a
    # notebook in a virtualenv and a link to a notebook outside the project
    root = tmp_path / "project"
    (root / "nested").mkdir(parents=True)
    (root / ".gitignore").write_text("build/\n*.scratch.ipynb\n")
    (root / "nested" / ".gitignore").write_text("out/\n!keep.scratch.ipynb\n")
    _notebook(root / "main.ipynb", "print(1)")
    _notebook(root / "build" / "copy.ipynb", "print(1)")
    _notebook(root / "draft.scratch.ipynb", "print(1)")
    _notebook(root / "nested" / "keep.scratch.ipynb", "print(1)")
    _notebook(root / "nested" / "out" / "result.ipynb", "print(1)")
    (root / "build" / "test_copy.py").write_text("def test_x():\n    pass\n")
    (root / "nested" / "out" / "test_result.py").write_text("def test_x():\n    pass\n")
    (root / "env2").mkdir()
    (root / "env2" / "pyvenv.cfg").write_text("home = /usr\n")
    _notebook(root / "env2" / "lib" / "tool.ipynb", "print(1)")
    outside = tmp_path_factory.mktemp("outside")
    _notebook(outside / "theirs.ipynb", "print(1)")
    (root / "linked.ipynb").symlink_to(outside / "theirs.ipynb")

    # When the run configurations are discovered
    names = [c.name for c in discover(root, logging.getLogger("test"))]

    # Then only the project's own notebooks are offered, and no pytest (no test file counts)
    assert names == ["Run notebook main.ipynb", "Run notebook nested/keep.scratch.ipynb"]

    # And a test file the rules do not ignore brings pytest back
    (root / "nested" / "test_real.py").write_text("def test_x():\n    pass\n")
    assert discover(root, logging.getLogger("test"))[-1].name == "pytest"


async def test_unknown_configuration_suggests_close_names(fails: Any, project: Path) -> None:
    error = await fails("run_configuration", configName="Run Scrpt")
    assert "Unknown run configuration: 'Run Scrpt'" in error
    assert "'Run Script'" in error
    error = await fails("run_configuration", configName="zzz")
    assert "Unknown run configuration" in error and "Available:" in error
    assert "has not been run" in await fails("get_run_output", configName="pytest")


async def test_task_and_launch_configuration_run_in_kernels(
    ok: Any, fails: Any, project: Path, jp_fetch: Any
) -> None:
    assert await ok("run_configuration", configName="Write Marker") == "Run configuration started"
    assert await ok("run_configuration", configName="Run Script") == "Run configuration started"

    task = await _wait_done(ok, "Write Marker")
    assert task["status"] == "succeeded" and task["exitCode"] == 0
    assert (project / "task.txt").read_text().strip() == "task-ran"
    assert str(project.resolve()) in task["output"]  # tasks run in the project root
    # A finished run's elapsed time is its start-to-end time, and stops growing.
    start, end = (_instant(task[k]) for k in ("startTime", "endTime"))
    assert abs(task["elapsedMs"] - (end - start) * 1000) <= 2
    await asyncio.sleep(0.1)
    assert (await ok("get_run_output", configName="Write Marker"))["elapsedMs"] == task["elapsedMs"]

    launch = await _wait_done(ok, "Run Script")
    assert launch["status"] == "failed" and launch["exitCode"] == 3
    assert f"args: ['--greeting', 'hello world', '{project.name}']" in launch["output"]
    assert f"cwd: {(project / 'scripts').resolve()}" in launch["output"]
    assert "env: testing 7" in launch["output"]
    assert (project / "scripts" / "launched.txt").read_text() == "launched"

    # Following by offset returns only what came after.
    rest = await ok("get_run_output", configName="Run Script", offset=launch["nextOffset"])
    assert rest["output"] == ""
    # The kernels are shut down once the runs end.
    for report in (task, launch):
        for _ in range(100):
            kernels = json.loads((await jp_fetch("api", "kernels")).body)
            if report["kernelId"] not in [k["id"] for k in kernels]:
                break
            await asyncio.sleep(0.1)
        assert report["kernelId"] not in [k["id"] for k in kernels]


async def test_notebook_runs_all_cells(ok: Any, project: Path) -> None:
    await ok("run_configuration", configName="Run notebook analysis.ipynb")
    await ok("run_configuration", configName="Run notebook nested/broken.ipynb")
    good = await _wait_done(ok, "Run notebook analysis.ipynb")
    assert good["status"] == "succeeded", good
    assert "x is 42" in good["output"] and "43" in good["output"]
    assert (project / "notebook.txt").read_text() == "cells ran: 42"

    bad = await _wait_done(ok, "Run notebook nested/broken.ipynb")
    assert bad["status"] == "failed" and bad["exitCode"] == 1
    assert "code cell 2 of 3 raised ZeroDivisionError" in bad["error"]
    assert "before" in bad["output"] and "after" not in bad["output"]


async def test_a_notebook_of_a_kernel_the_server_lacks_is_refused_not_run_in_python(
    fails: Any, project: Path, jp_serverapp: Any
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "julia-1.10", "display_name": "Julia 1.10"}
    nb.cells = [nbformat.v4.new_code_cell('open("julia.txt", "w") do f; write(f, "ran") end')]
    (project / "model.ipynb").write_text(nbformat.writes(nb))
    error = await fails("run_configuration", configName="Run notebook model.ipynb")
    assert "model.ipynb asks for the kernel 'julia-1.10' (Julia 1.10)" in error, error
    assert "kernel_action action=change" in error
    assert list(jp_serverapp.kernel_manager.list_kernel_ids()) == []
    assert not (project / "julia.txt").exists()


async def test_pytest_configuration(ok: Any, project: Path) -> None:
    await ok("run_configuration", configName="pytest")
    report = await _wait_done(ok, "pytest")
    assert report["status"] == "succeeded", report["output"]
    assert "1 passed" in report["output"]


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
async def test_package_json_script(ok: Any, project: Path) -> None:
    await ok("run_configuration", configName="write")
    report = await _wait_done(ok, "write")
    assert report["status"] == "succeeded", report["output"]
    assert (project / "npm.txt").read_text() == "npm-ran"


async def test_stop_a_run(ok: Any, fails: Any, project: Path, jp_fetch: Any) -> None:
    marker = (project / "marker.txt").read_text()
    await ok("run_configuration", configName="Sleep Forever")
    report = await ok("get_run_output", configName="Sleep Forever")
    assert report["status"] == "running"
    # The run's kernel is one the server manages, listed like any other.
    kernels = json.loads((await jp_fetch("api", "kernels")).body)
    assert report["kernelId"] in [k["id"] for k in kernels]
    deadline = time.monotonic() + 30
    while not processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert processes_with(f"sleep {marker}")
    assert "already running" in await fails("run_configuration", configName="Sleep Forever")

    assert await ok("stop_run_configuration", configName="Sleep Forever") == (
        "Run configuration stopped"
    )
    report = await ok("get_run_output", configName="Sleep Forever")
    assert report["status"] == "stopped"
    deadline = time.monotonic() + 10
    while processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert processes_with(f"sleep {marker}") == []
    assert "not running" in await fails("stop_run_configuration", configName="Sleep Forever")


def _marker(base: int) -> str:
    """A number no other process has as its ``sleep`` argument."""
    return f"{base + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"


async def _until_gone(marker: str, seconds: float = 10) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return left


def _sleeps(marker: str) -> list[str]:
    """The live ``sleep <marker>`` processes themselves (not the shells that started them)."""
    return [c for c in processes_with(f"sleep {marker}") if c.startswith("sleep ")]


def _tasks(root: Path, **commands: str) -> None:
    (root / ".vscode").mkdir(exist_ok=True)
    tasks = [{"label": label, "type": "shell", "command": c} for label, c in commands.items()]
    (root / ".vscode" / "tasks.json").write_text(json.dumps({"version": "2.0.0", "tasks": tasks}))


async def test_stop_ends_what_the_task_started_in_the_background(
    ok: Any, jp_root_dir: Path
) -> None:
    marker = _marker(1000)
    # The inner shell cleans up on SIGTERM, as a dev server would: a stop must send SIGTERM to
    # the whole group first, not SIGKILL it with the kernel.
    trap = 'trap "echo terminated > cleanup.txt; exit 0" TERM'
    _tasks(jp_root_dir, Twice=f"sh -c '{trap}; sleep {marker} & sleep {marker}'")
    await ok("run_configuration", configName="Twice")
    deadline = time.monotonic() + 30
    while len(_sleeps(marker)) < 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert len(_sleeps(marker)) == 2
    assert await ok("stop_run_configuration", configName="Twice") == "Run configuration stopped"
    assert (await ok("get_run_output", configName="Twice"))["status"] == "stopped"
    # The background sleep ignores SIGINT and is not the task's own process: only signalling the
    # task's process group ends it.
    assert await _until_gone(f"sleep {marker}") == []
    # The shell runs its trap once its foreground sleep has died: give it a moment to write.
    cleanup = jp_root_dir / "cleanup.txt"
    deadline = time.monotonic() + 10
    while not cleanup.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert cleanup.read_text().strip() == "terminated"


async def test_a_stopped_task_gets_its_whole_grace_to_clean_up(ok: Any, jp_root_dir: Path) -> None:
    marker = _marker(4000)
    # A clean shutdown that takes a while, runs a command of its own and reports on its output
    # (as a dev server's may): one SIGTERM, then time to finish; not a second SIGTERM into the
    # handler's command, nor a SIGKILL after two seconds, nor a closed output pipe (SIGPIPE).
    trap = 'trap "sleep 3 && echo shutting down && echo terminated > cleanup.txt; exit 0" TERM'
    _tasks(jp_root_dir, Slow=f"sh -c '{trap}; sleep {marker}'")
    await ok("run_configuration", configName="Slow")
    deadline = time.monotonic() + 30
    while len(_sleeps(marker)) < 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert len(_sleeps(marker)) == 1
    assert await ok("stop_run_configuration", configName="Slow") == "Run configuration stopped"
    assert await _until_gone(f"sleep {marker}", seconds=30) == []
    assert (jp_root_dir / "cleanup.txt").read_text().strip() == "terminated"
    assert "shutting down" in (await ok("get_run_output", configName="Slow"))["output"]


async def test_a_finished_task_leaves_nothing_running(ok: Any, jp_root_dir: Path) -> None:
    quiet, holding = _marker(2000), _marker(3000)
    # One leftover has its output redirected; the other keeps the output pipe open, which must
    # not keep the run going once the task itself has exited.
    _tasks(
        jp_root_dir,
        Leave=f"sleep {quiet} >/dev/null 2>&1 & sleep {holding} & echo left behind",
    )
    await ok("run_configuration", configName="Leave")
    report = await _wait_done(ok, "Leave", seconds=30)
    assert report["status"] == "succeeded" and report["exitCode"] == 0, report
    assert "left behind" in report["output"]
    assert await _until_gone(f"sleep {quiet}") == []
    assert await _until_gone(f"sleep {holding}") == []
