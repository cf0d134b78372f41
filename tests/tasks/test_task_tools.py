"""Every tool declared task-capable runs as a task end to end, on a real server.

Each one is started as a 2025-11-25 task (raw JSON-RPC: the SDK client sends no
``params.task``), polled with ``tasks/get``, and its ``tasks/result`` is what the plain call
answers (or, for a tool that changes something, did what the plain call does). Work long enough
to become a task in 2026-07-28 goes through the SDK's client with the tasks extension. A long
one cancelled is stopped: the command typed into the terminal gets Ctrl-C, a debugged cell's
kernel is interrupted. The status message says what runs (the command, its last line).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from code_notebook import write_code_notebook
from process_table import processes_with
from task_clients import TasksExtension, legacy_session, modern_client, until

pytestmark = [pytest.mark.usefixtures("no_kernels_left"), pytest.mark.timeout(300)]


def value_of(result: dict[str, Any]) -> Any:
    """The JSON value of a tool result's first text block (its text when it is not JSON)."""
    text = result["content"][0]["text"]
    try:
        return json.loads(text)
    except ValueError:
        return text


async def as_task(session: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run ``name`` as a 2025-11-25 task: created working, polled, collected. Its task id,
    first poll, result and final state."""
    created = await session.call_as_task(name, arguments)
    task_id = created["task"]["taskId"]
    polled = await session.result("tasks/get", {"taskId": task_id})
    result = await session.result("tasks/result", {"taskId": task_id})
    ended = await session.result("tasks/get", {"taskId": task_id})
    assert created["task"]["status"] == "working", (name, created)
    assert polled["taskId"] == task_id and polled["status"] in ("working", "completed")
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    assert ended["status"] == "completed", (name, ended, result)
    return {"id": task_id, "created": created, "polled": polled, "result": result, "ended": ended}


async def plain(session: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return await session.result("tools/call", {"name": name, "arguments": arguments})


def without_meta(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "_meta"}


UTIL = "def helper(value):\n    return value + 1\n"
MAIN = "import os\nfrom pkg.util import helper\n\nprint(helper(1))\nprint(helper(2))\n"


async def test_code_and_search_tools_run_as_tasks_and_answer_as_their_calls(
    mcp_url, token, jp_root_dir
):
    (jp_root_dir / "pkg").mkdir()
    (jp_root_dir / "pkg" / "__init__.py").write_text("")
    (jp_root_dir / "pkg" / "util.py").write_text(UTIL)
    (jp_root_dir / "main.py").write_text(MAIN)
    calls = {
        "find_references": {"pathInProject": "pkg/util.py", "line": 0, "character": 4},
        "get_file_problems": {"pathInProject": "main.py"},
        "search_in_files_content": {"searchText": "helper("},
    }
    async with legacy_session(mcp_url, token, listen=False) as session:
        tasks = {name: await as_task(session, name, args) for name, args in calls.items()}
        plains = {name: await plain(session, name, args) for name, args in calls.items()}
        renamed = await as_task(
            session,
            "refactor_code_at_location",
            {
                "pathInProject": "pkg/util.py",
                "line": 0,
                "character": 4,
                "refactorType": "rename",
                "options": {"newName": "assist"},
            },
        )

    for name in calls:
        assert without_meta(tasks[name]["result"]) == plains[name], name
        assert tasks[name]["result"]["isError"] is False, name
    # Before a tool reports anything, its status message says which tool runs on what.
    created = tasks["search_in_files_content"]["created"]["task"]["statusMessage"]
    assert created.startswith('search_in_files_content (searchText="helper(") running for ')
    references = value_of(tasks["find_references"]["result"])["references"]
    assert {r["path"] for r in references} == {"pkg/util.py", "main.py"}
    problems = json.dumps(value_of(tasks["get_file_problems"]["result"]))
    assert "os" in problems and "imported but unused" in problems
    assert renamed["result"]["isError"] is False
    assert "def assist(value)" in (jp_root_dir / "pkg" / "util.py").read_text()
    assert (jp_root_dir / "main.py").read_text().count("assist(") == 2


async def test_a_cancelled_search_task_stops_the_search_worker(
    mcp_url, token, jp_root_dir, mcp_app
):
    # A regular expression that backtracks for far longer than the worker's 120 s budget.
    (jp_root_dir / "a.txt").write_text("a" * 40 + "b\n")
    services = mcp_app.tool_context.services
    async with legacy_session(mcp_url, token, listen=False) as session:
        await plain(session, "search_in_files_content", {"searchText": "ab"})
        worker = services.search.current.worker
        first = worker.proc
        created = await session.call_as_task(
            "search_in_files_content", {"searchText": "(a+)+$", "regex": True}
        )
        task_id = created["task"]["taskId"]
        # The worker has the request (its lock is held while the child works on one).
        await until(worker._lock.locked, what="the search running in the worker")
        cancelled = await session.result("tasks/cancel", {"taskId": task_id})
        # The child is stopped now, not when its budget runs out (the bound only ends a hang).
        await until(lambda: first.poll() is not None, timeout=60, what="the worker stopped")
        after = value_of(await plain(session, "search_in_files_content", {"searchText": "ab"}))

    assert cancelled["status"] == "cancelled"
    assert [entry["path"] for entry in after] == ["a.txt"]
    assert worker.proc is not None and worker.proc.pid != first.pid


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
    ).stdout


@pytest.fixture
def cloned(tmp_path: Path, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project as a clone of a bare remote, and another clone that pushed a commit since."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Test Author")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "author@example.org")
    seed, bare, pusher = tmp_path / "seed", tmp_path / "remote.git", tmp_path / "pusher"
    seed.mkdir()
    git(seed, "init", "-q", "-b", "main")
    (seed / "shared.txt").write_text("line 1\n")
    git(seed, "add", "shared.txt")
    git(seed, "commit", "-q", "-m", "Initial")
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(tmp_path, "clone", "-q", str(bare), str(jp_root_dir))
    git(tmp_path, "clone", "-q", str(bare), str(pusher))
    (pusher / "pushed.txt").write_text("from the remote\n")
    git(pusher, "add", "pushed.txt")
    git(pusher, "commit", "-q", "-m", "Pushed")
    git(pusher, "push", "-q", "origin", "main")
    return pusher


async def test_pull_changes_runs_as_a_task(mcp_url, token, jp_root_dir, cloned):
    async with legacy_session(mcp_url, token, listen=False) as session:
        pulled = await as_task(session, "pull_changes", {})

    value = value_of(pulled["result"])
    assert pulled["result"]["isError"] is False and value["success"] is True
    assert (jp_root_dir / "pushed.txt").read_text() == "from the remote\n"
    assert value["commitHash"] == git(cloned, "rev-parse", "HEAD").strip()


async def test_a_cancelled_pull_task_kills_git_and_what_it_started(
    mcp_url, token, jp_root_dir, cloned, tmp_path
):
    # A remote whose ssh never answers (far longer than the 60 s a fetch may take).
    marker = f"{700 + uuid.uuid4().int % 100}.{uuid.uuid4().int % 10**6}"
    ssh = tmp_path / "silent-ssh"
    ssh.write_text(f"#!/bin/sh\nexec sleep {marker}\n")
    ssh.chmod(0o755)
    git(jp_root_dir, "config", "core.sshCommand", str(ssh))
    git(jp_root_dir, "remote", "set-url", "origin", "ssh://example.invalid/remote.git")
    async with legacy_session(mcp_url, token, listen=False) as session:
        created = await session.call_as_task("pull_changes", {})
        task_id = created["task"]["taskId"]
        await until(lambda: processes_with(f"sleep {marker}"), what="git fetch waiting on ssh")
        cancelled = await session.result("tasks/cancel", {"taskId": task_id})
        # git and its ssh are killed now, not at the fetch's timeout (the bound ends a hang).
        gone = await until(
            lambda: processes_with(f"sleep {marker}") == [], timeout=30, what="git killed"
        )
        # The repository is free again: the next git call is not kept waiting for its lock.
        status = value_of(await plain(session, "get_project_vcs_status", {}))

    assert cancelled["status"] == "cancelled" and gone
    assert status == []  # the clone has no changes


async def test_a_run_configuration_runs_as_a_task(mcp_url, token, jp_root_dir):
    write_code_notebook(jp_root_dir, "job.ipynb", "print('job ran')")
    async with legacy_session(mcp_url, token, listen=False) as session:
        started = await as_task(
            session, "run_configuration", {"configName": "Run notebook job.ipynb"}
        )
        output = value_of(
            await plain(
                session,
                "get_run_output",
                {"configName": "Run notebook job.ipynb", "waitMs": 120000},
            )
        )

    assert started["result"]["isError"] is False
    assert value_of(started["result"]) == "Run configuration started"
    assert output["status"] == "succeeded" and "job ran" in output["output"]


async def test_debug_session_actions_run_as_tasks(mcp_url, token, jp_root_dir):
    write_code_notebook(jp_root_dir, "dbg.ipynb", "x = 40 + 2\nprint('debugged', x)", ids=True)
    notebook = {"pathInProject": "dbg.ipynb"}
    async with legacy_session(mcp_url, token, listen=False) as session:
        started = await as_task(session, "debug_session", {"action": "start", **notebook})
        ran = await as_task(
            session, "debug_session", {"action": "run_cell", "cellId": "c0", **notebook}
        )
        stopped = await as_task(session, "debug_session", {"action": "stop", **notebook})

    assert started["result"]["isError"] is False, started["result"]
    answer = value_of(ran["result"])
    assert answer["state"] == "finished"
    assert "debugged 42" in json.dumps(answer["outputs"])
    assert stopped["result"]["isError"] is False, stopped["result"]


async def test_terminal_commands_run_as_tasks_and_a_cancel_stops_the_command(mcp_url, token):
    marker = f"{600 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    async with legacy_session(mcp_url, token, listen=False) as session:
        echoed = await as_task(
            session,
            "execute_terminal_command",
            {"command": "echo task-typed-$((6 * 7))", "waitForOutput": True, "timeout": 60000},
        )
        background = await as_task(
            session, "run_command_on_background", {"command": "echo quiet-$((6 * 7))"}
        )
        created = await session.call_as_task(
            "execute_terminal_command",
            {
                "command": f"echo sleeping; sleep {marker}",
                "waitForOutput": True,
                "timeout": 300000,
            },
        )
        task_id = created["task"]["taskId"]
        await until(lambda: processes_with(f"sleep {marker}"), what="the command running")

        # What runs: the command, and the last line the terminal printed.
        async def says_what_runs() -> Any:
            got = await session.result("tasks/get", {"taskId": task_id})
            return got if "sleeping" in got["statusMessage"] else None

        running = await until(says_what_runs, what="a status message naming the command")
        cancelled = await session.result("tasks/cancel", {"taskId": task_id})
        gone = await until(
            lambda: processes_with(f"sleep {marker}") == [], timeout=30, what="Ctrl-C"
        )
        after = value_of(
            await plain(
                session,
                "execute_terminal_command",
                {"command": "echo free-again", "waitForOutput": True},
            )
        )

    assert "task-typed-42" in value_of(echoed["result"])["output"]
    assert value_of(background["result"])["stdout"] == "quiet-42"
    assert running["status"] == "working"
    assert f"sleep {marker}" in running["statusMessage"]
    assert cancelled["status"] == "cancelled" and gone
    # The terminal is the shell's again: the next command runs.
    assert "free-again" in after["output"]


async def test_a_background_commands_status_message_names_it_and_its_last_line(mcp_url, token):
    command = "for i in 1 2 3 4 5 6; do echo step-$i; sleep 0.5; done"
    async with legacy_session(mcp_url, token, listen=False) as session:
        created = await session.call_as_task("run_command_on_background", {"command": command})
        task_id = created["task"]["taskId"]

        async def stepping() -> Any:
            got = await session.result("tasks/get", {"taskId": task_id})
            # The command's own report: it, its time, and after them its last output line.
            message = got["statusMessage"]
            return got if message.startswith("`") and ": step-" in message else None

        running = await until(stepping, what="the command's output in its status message")
        result = await session.result("tasks/result", {"taskId": task_id})

    assert running["status"] == "working"
    assert running["statusMessage"].startswith("`for i in 1 2 3 4 5 6; do echo step-$i;")
    assert re.search(r"running for \d+\.\d s: step-[1-6]$", running["statusMessage"])
    assert value_of(result)["stdout"].splitlines()[-1] == "step-6"


async def test_long_tools_become_tasks_of_the_2026_client(mcp_url, token, jp_root_dir):
    write_code_notebook(
        jp_root_dir, "slow.ipynb", "import time\ntime.sleep(2)\nprint('slept')", ids=True
    )
    ext = TasksExtension()
    async with modern_client(mcp_url, token, tasks=ext) as client:
        typed = await client.call_tool(
            "execute_terminal_command",
            {"command": "sleep 2; echo modern-$((6 * 7))", "waitForOutput": True},
        )
        snippet = await client.call_tool(
            "execute_code_in_kernel",
            {"pathInProject": "slow.ipynb", "code": "import time\ntime.sleep(2)\n6 * 7"},
        )
        await client.call_tool("debug_session", {"action": "start", "pathInProject": "slow.ipynb"})
        debugged = await client.call_tool(
            "debug_session", {"action": "run_cell", "cellId": "c0", "pathInProject": "slow.ipynb"}
        )
        await client.call_tool("debug_session", {"action": "stop", "pathInProject": "slow.ipynb"})

    # Each answered a task, which the client polled to its end and collected.
    assert len(ext.created) >= 3
    assert "modern-42" in json.loads(typed.content[0].text)["output"]
    assert json.loads(snippet.content[0].text)["outputs"][0]["text"] == "42"
    answer = json.loads(debugged.content[0].text)
    assert answer["state"] == "finished" and "slept" in json.dumps(answer["outputs"])


@pytest.mark.skipif(os.name == "nt", reason="a POSIX terminal")
async def test_a_2026_cancel_stops_a_terminal_command(mcp_url, token):
    marker = f"{1700 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    from task_clients import cancel_task, until_ended

    ext = TasksExtension()
    async with modern_client(mcp_url, token, tasks=ext) as client:
        started = await client.session.call_tool(
            "execute_terminal_command",
            {"command": f"sleep {marker}", "waitForOutput": True, "timeout": 300000},
            allow_claimed=True,
        )
        await until(lambda: processes_with(f"sleep {marker}"), what="the command running")
        await cancel_task(client.session, started.task_id)
        ended = await until_ended(client.session, started.task_id)
        gone = await until(
            lambda: processes_with(f"sleep {marker}") == [], timeout=30, what="Ctrl-C"
        )

    assert ended.status == "cancelled" and gone


async def test_a_cancelled_debug_run_cell_task_interrupts_the_kernel(mcp_url, token, jp_root_dir):
    write_code_notebook(
        jp_root_dir,
        "stuck.ipynb",
        "import time\nprint('asleep', flush=True)\ntime.sleep(600)",
        ids=True,
    )
    notebook = {"pathInProject": "stuck.ipynb"}
    async with legacy_session(mcp_url, token, listen=False) as session:
        await as_task(session, "debug_session", {"action": "start", **notebook})
        created = await session.call_as_task(
            "debug_session",
            {"action": "run_cell", "cellId": "c0", "timeoutMs": 300000, **notebook},
        )
        task_id = created["task"]["taskId"]

        async def asleep() -> bool:
            cell = value_of(await plain(session, "get_notebook_cell", {"cellId": "c0", **notebook}))
            return "asleep" in json.dumps(cell.get("outputs"))

        await until(asleep, what="the cell running under the debugger")
        cancelled = await session.result("tasks/cancel", {"taskId": task_id})
        state = value_of(await plain(session, "debug_session", {"action": "state", **notebook}))
        await plain(session, "debug_session", {"action": "stop", **notebook})
        # The kernel is free again: a snippet answers at once.
        quick = value_of(
            await plain(
                session,
                "execute_code_in_kernel",
                {"code": "1 + 1", "timeoutMs": 60000, **notebook},
            )
        )

    assert cancelled["status"] == "cancelled"
    # The cell was interrupted (its run ended so), not left running under the debugger.
    assert state["running"] is False and state["state"] == "finished", state
    assert state["status"] == "interrupted", state
    assert state["outputs"][-1]["ename"] == "KeyboardInterrupt"
    assert quick["status"] == "ok" and quick["outputs"][0]["text"] == "2"
