"""Many agents at once: some running cells, each in its own notebook and kernel, others on
files, search and git, while the user's JupyterLab window keeps asking the server; from one run,
the user's figures beside the same figures with no agent.

Starts a real ``jupyter server`` with jupyter_mcp (token auth) on a temporary git project of
``--files`` Python modules. Every agent is an official SDK client with its own session.

1. Idle, for ``--idle`` seconds: the user's requests alone, one after the other: ``GET
   /api/status`` and what an open JupyterLab window asks (its file browser's listing, the open
   notebook's contents, the kernels and sessions it polls).
2. Under load, the same requests of the user the whole time, and at once:
   - ``--cell-agents`` agents (20), each creating ``agent_<i>.ipynb`` and then ``--cells`` times
     (50) inserting a short code cell that prints a line only it prints, running it in the
     notebook's kernel (``execute_notebook_cells``) and reading the cell back
     (``get_notebook_cell``); each answer must show that agent's own line;
   - ``--other-agents`` agents (30) turning through reads, appends and replacements in a file
     of their own, content and name searches, git status, history and diffs, until the cell
     agents are done.
3. Afterwards every notebook file is read: each cell holds exactly the line its agent printed
   in it (an output in the wrong notebook, or lost, is counted).

Printed: calls, errors, p50 and p99 per tool; the user's requests idle and loaded (p50, p99);
outputs checked and outputs misplaced. Targets: 0 errors, 0 misplaced, the user's requests
staying fast. The figures are wall-clock on whatever machine runs this: on a shared, busy
machine they are noisy, so compare the rows of one run with each other.

    .venv/bin/python benchmarks/bench_agents.py [--cell-agents 20] [--cells 50] [--other-agents 30]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx2
import nbformat
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from _server import jupyter_server  # noqa: E402
from bench_mcp import percentile  # noqa: E402


def project(root: Path, files: int) -> None:
    """A git project of ``files`` small modules, one commit."""
    for n in range(files):
        package = root / f"pkg{n % 10}"
        package.mkdir(exist_ok=True)
        (package / f"module_{n}.py").write_text(
            f'"""Module {n}."""\n\n\ndef compute_{n}(values):\n'
            f"    total = 0\n    for value in values:\n        total += value * {n}\n"
            "    return total\n"
        )
    for j in range(100):
        (root / f"notes_{j}.txt").write_text(f"notes of agent {j}\nstatus: new\n")
    # The notebook the user has open in JupyterLab.
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"compute_{n}([1, 2, 3])") for n in range(20)]
    nbformat.write(nb, root / "user.ipynb")
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "A project to work on"], check=True)


class Tally:
    """Milliseconds per tool, errors and their first messages."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.messages: list[str] = []

    async def call(self, client: Client, tool: str, **arguments: Any) -> Any:
        """Call ``tool`` and time it; its JSON answer, or None after an error."""
        started = time.perf_counter()
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as e:  # a failed call is counted, and the agent goes on
            failure: str | None = f"{type(e).__name__}: {e}"
            result = None
        else:
            failure = result.content[0].text if result.is_error else None
        self.samples[tool].append((time.perf_counter() - started) * 1000)
        if failure is not None:
            self.errors[tool] += 1
            if len(self.messages) < 10:
                self.messages.append(f"{tool}: {failure[:300]}")
            return None
        assert result is not None
        if result.structured_content is not None:
            return result.structured_content
        try:
            return json.loads(result.content[0].text)
        except ValueError:  # a text answer (a diff, "ok")
            return result.content[0].text


def line_of(agent: int, cell: int) -> str:
    """What cell ``cell`` of agent ``agent`` prints: nobody else prints it."""
    return f"agent {agent} cell {cell}"


async def cell_agent(
    url: str, headers: dict[str, str], agent: int, cells: int, tally: Tally, misplaced: list[str]
) -> None:
    """Make a notebook, then insert, run and read back ``cells`` cells in it."""
    path = f"agent_{agent}.ipynb"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=600) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        await tally.call(client, "create_new_file_with_text", pathInProject=path, text="")
        for cell in range(cells):
            wanted = line_of(agent, cell)
            inserted = await tally.call(
                client, "insert_notebook_cell", pathInProject=path, source=f"print({wanted!r})"
            )
            if inserted is None:
                continue
            cell_id = inserted["cellId"]
            ran = await tally.call(
                client, "execute_notebook_cells", pathInProject=path, cellIds=[cell_id]
            )
            read = await tally.call(client, "get_notebook_cell", pathInProject=path, cellId=cell_id)
            for answer, where in ((ran, "run"), (read, "read")):
                if answer is None:
                    continue
                texts = [
                    output.get("text", "")
                    for found in answer.get("cells", [answer])
                    for output in found.get("outputs", [])
                ]
                if texts != [wanted + "\n"]:
                    misplaced.append(f"{path} {cell_id} ({where}): {texts!r}, wanted {wanted!r}")


async def other_agent(
    url: str, headers: dict[str, str], agent: int, done: asyncio.Event, tally: Tally
) -> None:
    """Turn through file, search and git calls until ``done``."""
    own = f"notes_{agent}.txt"
    steps: list[tuple[str, dict[str, Any]]] = [
        ("get_file_text_by_path", {"pathInProject": own}),
        ("append_file_content", {"pathInProject": own, "text": "another line\n"}),
        ("search_in_files_content", {"searchText": "total += value", "maxResults": 50}),
        (
            "replace_specific_text",
            {"pathInProject": own, "searchText": "another line", "replaceText": "a line"},
        ),
        ("find_files_by_name_substring", {"nameSubstring": f"module_{agent}"}),
        ("get_project_vcs_status", {}),
        ("get_file_text_by_path", {"pathInProject": f"pkg{agent % 10}/module_{agent}.py"}),
        ("get_file_history", {"pathInProject": own}),
        ("get_file_diff", {"pathInProject": own}),
    ]
    async with (
        httpx2.AsyncClient(headers=headers, timeout=600) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        for tool, arguments in itertools.cycle(steps):
            if done.is_set():
                return
            await tally.call(client, tool, **arguments)


USER_REQUESTS = {
    "GET /api/status": "api/status",
    "JupyterLab: file browser listing": "api/contents/?content=1",
    "JupyterLab: the open notebook": "api/contents/user.ipynb?type=notebook&content=1",
    "JupyterLab: kernels poll": "api/kernels",
    "JupyterLab: sessions poll": "api/sessions",
}


async def the_user(base: str, headers: dict[str, str], stop: asyncio.Event) -> dict[str, list]:
    """The user's requests, one after the other, every 0.2 s until ``stop``: milliseconds
    per request (a request that fails counts as an error sample, -1)."""
    samples: dict[str, list[float]] = defaultdict(list)
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        while not stop.is_set():
            for label, path in USER_REQUESTS.items():
                started = time.perf_counter()
                response = await http.get(f"{base}/{path}")
                elapsed = (time.perf_counter() - started) * 1000
                samples[label].append(elapsed if response.status_code == 200 else -1.0)
            await asyncio.sleep(0.2)
    return samples


async def idle(base: str, headers: dict[str, str], seconds: float) -> dict[str, list]:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(seconds, stop.set)
    return await the_user(base, headers, stop)


async def loaded(
    base: str, headers: dict[str, str], args: argparse.Namespace
) -> tuple[Tally, list[str], dict[str, list], float]:
    url = base + "/mcp"
    tally, misplaced = Tally(), []
    done, stop_user = asyncio.Event(), asyncio.Event()
    user = asyncio.create_task(the_user(base, headers, stop_user))
    started = time.perf_counter()
    others = [
        asyncio.create_task(other_agent(url, headers, j, done, tally))
        for j in range(args.other_agents)
    ]
    await asyncio.gather(
        *(
            cell_agent(url, headers, i, args.cells, tally, misplaced)
            for i in range(args.cell_agents)
        )
    )
    elapsed = time.perf_counter() - started
    done.set()
    await asyncio.gather(*others)
    stop_user.set()
    return tally, misplaced, await user, elapsed


def saved(path: Path, cells: int) -> list[Any]:
    """The code cells of a notebook file once it holds ``cells`` run cells: with
    jupyter-collaboration the server saves its shared document about a second after a change
    (at most 60 s are waited; then whatever the file holds)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # caught mid-save: read again
            nb = None
        code = [] if nb is None else [c for c in nb.cells if c.cell_type == "code"]
        code = [c for c in code if c.source.strip()]
        if (len(code) >= cells and all(c.outputs for c in code)) or time.monotonic() > deadline:
            return code
        time.sleep(0.5)


def in_files(root: Path, agents: int, cells: int) -> tuple[int, list[str]]:
    """Outputs checked in the notebook files, and those that are not their agent's line."""
    checked, wrong = 0, []
    for agent in range(agents):
        code = saved(root / f"agent_{agent}.ipynb", cells)
        if len(code) != cells:
            wrong.append(f"agent_{agent}.ipynb has {len(code)} code cells, not {cells}")
        for cell in code:
            checked += 1
            wanted = cell.source.removeprefix("print(").removesuffix(")").strip("'\"")
            texts = [o.get("text", "") for o in cell.outputs]
            if texts != [wanted + "\n"]:
                wrong.append(f"agent_{agent}.ipynb {cell.get('id')}: {texts!r}, wanted {wanted!r}")
    return checked, wrong


def p50_p99(samples: list[float]) -> str:
    good = [s for s in samples if s >= 0]
    if not good:
        return f"{'-':>8} {'-':>8}"
    return f"{percentile(good, 0.5):>8.1f} {percentile(good, 0.99):>8.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell-agents", type=int, default=20)
    parser.add_argument("--cells", type=int, default=50, help="cells each cell agent runs")
    parser.add_argument("--other-agents", type=int, default=30)
    parser.add_argument("--files", type=int, default=300, help="modules in the project")
    parser.add_argument("--idle", type=float, default=20, help="seconds of idle measurement")
    parser.add_argument("--settle", type=float, default=5, help="seconds after start, first")
    parser.add_argument(
        "--no-collaboration",
        action="store_true",
        help="turn jupyter-collaboration off (on when installed: notebooks change through "
        "the server's shared documents)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project(root, args.files)
        # Enabled on install, when it is installed.
        collaboration = not args.no_collaboration and bool(find_spec("jupyter_server_ydoc"))
        off = {"jupyter_server_ydoc": False} if args.no_collaboration else {}
        with jupyter_server(root, extensions=off) as server:
            headers = {"Authorization": f"token {server.token}"}
            time.sleep(args.settle)  # the warm start (workers, the project's index) first
            quiet = asyncio.run(idle(server.url, headers, args.idle))
            tally, misplaced, busy, elapsed = asyncio.run(loaded(server.url, headers, args))
            checked, wrong = in_files(root, args.cell_agents, args.cells)

    load = os.getloadavg()[0]
    print(
        f"{args.cell_agents} agents x {args.cells} cells (each its own notebook and kernel) and "
        f"{args.other_agents} agents on files, search and git, in {elapsed:.0f} s; "
        f"jupyter-collaboration {'on' if collaboration else 'off'} "
        f"(load average {load:.1f} on {os.cpu_count()} cores)"
    )
    print(f"{'tool':<30} {'calls':>6} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for tool, samples in sorted(tally.samples.items()):
        print(f"{tool:<30} {len(samples):>6} {tally.errors[tool]:>6} {p50_p99(samples)}")
    errors = sum(tally.errors.values())
    print()
    print(f"{'the user, meanwhile (ms)':<36} {'idle p50':>8} {'p99':>8} {'load p50':>8} {'p99':>8}")
    user_errors = 0
    for label in USER_REQUESTS:
        user_errors += sum(1 for s in busy[label] if s < 0)
        print(f"{label:<36} {p50_p99(quiet[label])} {p50_p99(busy[label])}")
    print()
    answers = 2 * args.cell_agents * args.cells
    print(
        f"errors: {errors} agent calls, {user_errors} user requests (target 0); outputs in the "
        f"wrong place: {len(misplaced)} of {answers} answers, {len(wrong)} of {checked} cells "
        "in the files (target 0)"
    )
    for message in tally.messages + misplaced[:5] + wrong[:5]:
        print("  ", message)


if __name__ == "__main__":
    main()
