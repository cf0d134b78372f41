"""Many agents at once: some running cells, each in its own notebook and kernel, others on
files, search and git, while the user's JupyterLab window keeps asking the server; from one run,
the user's figures beside the same figures with no agent.

Starts a real ``jupyter server`` with jupyter_mcp (token auth) on a temporary git project of
``--files`` Python modules. Every agent is an official SDK client of its own, every other one
on a 2025-11-25 session, the rest in the stateless 2026-07-28 era. The user has JupyterLab open
in headless Chromium on ``user.ipynb`` (its kernel started by JupyterLab) and, besides, asks the
server what an open window asks, one request after the other.

1. Idle, for ``--idle`` seconds: the user alone. Every two seconds the user refreshes the file
   browser and runs the notebook's first cell with Shift+Enter; the scripted requests go on
   meanwhile: ``GET /api/status``, the file browser's listing, the open notebook's contents,
   the kernels and sessions JupyterLab polls. Every request the window makes is timed
   (Chromium's own timing), grouped by route.
2. Under load, the same user the whole time, and at once:
   - ``--cell-agents`` agents (20), each creating ``agent_<i>.ipynb`` and then ``--cells`` times
     (50) inserting a short code cell that prints a line only it prints, running it in the
     notebook's kernel (``execute_notebook_cells``) and reading the cell back
     (``get_notebook_cell``); each answer must show that agent's own line;
   - ``--other-agents`` agents (30) turning through reads, appends and replacements in a file
     of their own, content and name searches, git status, history and diffs, until the cell
     agents are done.
3. Afterwards every notebook file is read: each cell holds exactly the line its agent printed
   in it (an output in the wrong notebook, or lost, is counted).

Printed: calls, errors, p50 and p99 per tool; the user's requests and the window's, idle and
loaded (p50, p99); the user's cell runs; outputs checked and outputs misplaced; agents whose
client ended with an error (with the calls they had under way); the CPU seconds the server,
its kernels, the agents' clients and the browser used over the load (on a machine with few
cores they share it: the figures are read against that). Targets: 0 errors, 0 misplaced, the
user's requests staying fast. Calls under way for over a minute are said on stderr as the
run goes. The figures are wall-clock on whatever machine runs this: on a shared, busy machine
they are noisy, so compare the rows of one run with each other.

    .venv/bin/python benchmarks/bench_agents.py [--cell-agents 20] [--cells 50] [--other-agents 30]
        [--no-window] [--no-collaboration] [--loop-lag]

With ``--loop-lag`` it also prints what held the server's event loop whenever it was over
50 ms late, idle and under load, and this process's loop under load (``_loop_lag``): the
stack line charged, jupyter_mcp's or the library's, and how late the loop's beats ran. The
user's scripted requests run on a loop of their own (a thread), so that their figures are
the server's and not the agents' clients'.
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
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import nbformat
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from _loop_lag import LagMonitor  # noqa: E402
from _server import jupyter_server  # noqa: E402
from _soak_probe import stacks  # noqa: E402
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
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(f"sum(range({n} * 1000))") for n in range(20)]
    nbformat.write(nb, root / "user.ipynb")
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "A project to work on"], check=True)


def _cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used; 0 once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _below(pid: int) -> set[int]:
    """Every live process below ``pid``, from /proc."""
    children: dict[int, list[int]] = defaultdict(list)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            children[int(stat[stat.rfind(")") + 2 :].split()[1])].append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def cpu_use(server_pid: int) -> dict[str, float]:
    """CPU seconds so far of the server, of its children (kernels, workers: those alive now),
    of this process (every agent's and the user's client) and of its children (the browser)."""
    servers = _below(server_pid)
    browser = _below(os.getpid()) - servers - {server_pid}
    return {
        "the server": _cpu_of(server_pid),
        "its kernels and workers": sum(_cpu_of(p) for p in servers),
        "the agents' clients (this process)": sum(os.times()[:2]),
        "the browser": sum(_cpu_of(p) for p in browser),
    }


class Tally:
    """Milliseconds per tool, errors and their first messages, the calls under way."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.messages: list[str] = []
        #: The calls under way: (agent, tool) and when each started.
        self.under_way: dict[int, tuple[str, str, float]] = {}
        #: Agents whose client ended with an error (the SDK's transport failing, say).
        self.stopped: list[str] = []
        #: What held the server's event loop when it was late, idle and over the load
        #: (``--loop-lag``; the probe's text), else empty.
        self.lag: dict[str, str] = {}
        #: CPU seconds by whom over the load (see :func:`cpu_use`).
        self.cpu: dict[str, float] = {}
        self._numbers = itertools.count()

    async def call(self, who: str, client: Client, tool: str, **arguments: Any) -> Any:
        """Call ``tool`` and time it; its JSON answer, or None after an error."""
        number = next(self._numbers)
        started = time.perf_counter()
        self.under_way[number] = (who, tool, started)
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as e:  # a failed call is counted, and the agent goes on
            failure: str | None = f"{type(e).__name__}: {e}"
            result = None
        else:
            failure = result.content[0].text if result.is_error else None
        finally:
            self.under_way.pop(number, None)
        self.samples[tool].append((time.perf_counter() - started) * 1000)
        if failure is not None:
            self.errors[tool] += 1
            if len(self.messages) < 10:
                self.messages.append(f"{tool}: {failure[:300]}")
            return None
        assert result is not None
        if result.structured_content is not None:
            return result.structured_content
        text = next((c.text for c in result.content if isinstance(c, types.TextContent)), "")
        try:
            return json.loads(text)
        except ValueError:  # a text answer (a diff, "ok")
            return text

    def long_calls(self, seconds: float) -> list[str]:
        """The calls under way for more than ``seconds``."""
        now = time.perf_counter()
        return [
            f"{who} {tool} for {now - started:.0f} s"
            for who, tool, started in list(self.under_way.values())
            if now - started > seconds
        ]

    async def guarded(self, who: str, agent: Any) -> None:
        """Run ``agent``; an error that ends its client is kept (with the calls it had under
        way), and the other agents go on."""
        try:
            await agent
        except Exception as e:
            under_way = [f"{t}" for w, t, _ in self.under_way.values() if w == who]
            self.stopped.append(f"{who} stopped ({'; '.join(leaves(e))}); under way: {under_way}")

    async def watch(
        self,
        every: float = 60,
        dump: Callable[[str], Awaitable[None]] | None = None,
        stuck: float = 120,
    ) -> None:
        """Say on stderr, every ``every`` seconds, which calls have been under way as long; and
        once for each call under way for over ``stuck`` seconds, ``dump`` where everything is."""
        dumped: set[int] = set()
        for turn in itertools.count(1):
            await asyncio.sleep(min(every, 15))
            now = time.perf_counter()
            late = [
                (number, f"{who} {tool}")
                for number, (who, tool, started) in list(self.under_way.items())
                if now - started > stuck and number not in dumped
            ]
            if late and dump is not None:
                dumped.update(number for number, _ in late)
                await dump(", ".join(call for _, call in late))
            if turn % max(1, round(every / 15)) == 0:
                long = self.long_calls(every)
                if long:
                    print(f"under way for over {every:.0f} s: {long[:10]}", file=sys.stderr)


def dumper(
    base: str, headers: dict[str, str], folder: str | None
) -> Callable[[str], Awaitable[None]]:
    """What to do when calls go unanswered: write, into a file of ``folder`` (a fresh one
    when None), every asyncio task's and thread's stack in the server (its probe) and in this
    process (the clients)."""
    numbers = itertools.count(1)
    chosen: list[Path] = []  # made at the first dump: most runs have none

    async def dump(calls: str) -> None:
        if not chosen:
            chosen.append(Path(folder or tempfile.mkdtemp(prefix="bench-agents-stuck-")))
            chosen[0].mkdir(parents=True, exist_ok=True)
        path = chosen[0] / f"stuck-{next(numbers)}.txt"
        try:
            async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
                response = await http.get(f"{base}/soak-probe", params={"stacks": "1"})
                server = response.text
        except httpx2.HTTPError as e:  # a server whose loop does not answer says so too
            server = f"the server did not answer: {type(e).__name__}: {e}"
        client = stacks(asyncio.get_running_loop())
        path.write_text(
            f"under way: {calls}\n\n===== the server\n{server}\n\n===== the clients\n{client}"
        )
        print(f"under way for long: {calls}; stacks in {path}", file=sys.stderr)

    return dump


async def lag_report(base: str, headers: dict[str, str], reset: bool = False) -> str:
    """What held the server's event loop so far (the probe's watchdog); with ``reset``, its
    count starts afresh."""
    async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
        text = (await http.get(f"{base}/soak-probe", params={"lag": "1"})).text
        if reset:
            await http.get(f"{base}/soak-probe", params={"lag": "reset"})
    return text


def leaves(e: BaseException) -> list[str]:
    """The exceptions an exception group holds (or the exception), as ``Type: message``."""
    inner = getattr(e, "exceptions", None)  # an exception group (anyio's, on Python 3.10 too)
    if isinstance(inner, (list, tuple)):
        return [leaf for one in inner for leaf in leaves(one)]
    return [f"{type(e).__name__}: {e}"[:300]]


def line_of(agent: int, cell: int) -> str:
    """What cell ``cell`` of agent ``agent`` prints: nobody else prints it."""
    return f"agent {agent} cell {cell}"


def era(agent: int) -> str:
    """The protocol era agent ``agent`` speaks: every other one a 2025-11-25 session, the rest
    the stateless 2026-07-28 era."""
    return "legacy" if agent % 2 == 0 else "2026-07-28"


async def cell_agent(
    url: str, headers: dict[str, str], agent: int, cells: int, tally: Tally, misplaced: list[str]
) -> None:
    """Make a notebook, then insert, run and read back ``cells`` cells in it."""
    path = f"agent_{agent}.ipynb"
    who = f"cell agent {agent}"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=600) as http,
        Client(streamable_http_client(url, http_client=http), mode=era(agent)) as client,
    ):
        await tally.call(who, client, "create_new_file_with_text", pathInProject=path, text="")
        for cell in range(cells):
            wanted = line_of(agent, cell)
            inserted = await tally.call(
                who, client, "insert_notebook_cell", pathInProject=path, source=f"print({wanted!r})"
            )
            if inserted is None:
                continue
            cell_id = inserted["cellId"]
            ran = await tally.call(
                who, client, "execute_notebook_cells", pathInProject=path, cellIds=[cell_id]
            )
            read = await tally.call(
                who, client, "get_notebook_cell", pathInProject=path, cellId=cell_id
            )
            for answer, where in ((ran, "run"), (read, "read")):
                if answer is None:
                    continue
                texts = [
                    output.get("text", "")
                    for found in answer.get("cells", [answer])
                    for output in found.get("outputs", [])
                ]
                if texts != [wanted + "\n"]:
                    # The answer's status, error, count and source beside the texts: an
                    # empty answer of a run that never reached the kernel (an error, or an
                    # empty source, which is not sent) is told from outputs lost on the way.
                    said = {k: answer[k] for k in ("status", "error") if k in answer}
                    ran_cells = answer.get("cells", [answer])
                    said["cells"] = [
                        (c.get("status"), c.get("executionCount"), c.get("source"))
                        for c in ran_cells
                    ]
                    misplaced.append(
                        f"{path} {cell_id} ({where}): {texts!r}, wanted {wanted!r} {said}"
                    )


async def other_agent(
    url: str, headers: dict[str, str], agent: int, done: asyncio.Event, tally: Tally
) -> None:
    """Turn through file, search and git calls until ``done``."""
    own = f"notes_{agent}.txt"
    who = f"agent {agent}"
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
        Client(streamable_http_client(url, http_client=http), mode=era(agent)) as client,
    ):
        for tool, arguments in itertools.cycle(steps):
            if done.is_set():
                return
            await tally.call(who, client, tool, **arguments)


USER_REQUESTS = {
    "GET /api/status": "api/status",
    "JupyterLab: file browser listing": "api/contents/?content=1",
    "JupyterLab: the open notebook": "api/contents/user.ipynb?type=notebook&content=1",
    "JupyterLab: kernels poll": "api/kernels",
    "JupyterLab: sessions poll": "api/sessions",
}


async def the_user(base: str, headers: dict[str, str], stop: asyncio.Event) -> dict[str, list]:
    """The user's requests (:func:`users_requests`) on an event loop of their own, in a thread,
    until ``stop``. The user's browser is a process apart from the agents: on this process's
    loop, shared with every agent's client, the user's answers also waited for that loop
    (--loop-lag saw it held 986 ms as the agents' clients start), which is no server's time."""
    flag = threading.Event()

    async def mirror() -> None:
        await stop.wait()
        flag.set()

    mirroring = asyncio.create_task(mirror())
    try:
        return await asyncio.to_thread(asyncio.run, users_requests(base, headers, flag))
    finally:
        flag.set()
        mirroring.cancel()


async def users_requests(
    base: str, headers: dict[str, str], stop: threading.Event
) -> dict[str, list]:
    """The user's requests, one after the other, every 0.2 s until ``stop``: milliseconds
    per request (a request that fails counts as an error sample, -1)."""
    samples: dict[str, list[float]] = defaultdict(list)
    async with httpx2.AsyncClient(headers=headers, timeout=USER_TIMEOUT) as http:
        while not stop.is_set():
            for label, path in USER_REQUESTS.items():
                started = time.perf_counter()
                try:
                    response = await http.get(f"{base}/{path}")
                except httpx2.HTTPError as e:  # no answer within the timeout: counted, not fatal
                    failure: str | None = f"{type(e).__name__} after {USER_TIMEOUT:g} s {e}"
                else:
                    failure = None
                    if response.status_code != 200:
                        failure = f"{response.status_code} {response.text[:300]}"
                elapsed = (time.perf_counter() - started) * 1000
                samples[label].append(elapsed if failure is None else -1.0)
                if failure is not None and len(USER_FAILURES) < 5:
                    USER_FAILURES.append(f"{label}: {failure}")
            await asyncio.sleep(0.2)
    return samples


#: Seconds the user's scripted requests wait for an answer (a longer wait counts as an error).
USER_TIMEOUT = 120.0

#: The first failed requests of the user, what the server answered.
USER_FAILURES: list[str] = []


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: The window's figure that is no request: the user runs their notebook's first cell.
USER_RUN = "user runs a cell: Shift+Enter to [n]"
FIRST_PROMPT = ".jp-Notebook .jp-CodeCell .jp-InputPrompt"
FIRST_EDITOR = ".jp-Notebook .jp-CodeCell .cm-content"


class LabWindow:
    """A real JupyterLab window in headless Chromium, the user's notebook open in it (its
    kernel started by JupyterLab): the milliseconds of every request the window makes (its
    own polls and saves, the file browser the user refreshes, the cells the user runs), by
    phase. Requests are grouped by method and route (``GET api/contents``)."""

    def __init__(self, base: str) -> None:
        self.base = base
        #: "idle" or "load" while a phase is measured; None between them (nothing kept).
        self.phase: str | None = None
        self.samples: dict[str, dict[str, list[float]]] = {
            "idle": defaultdict(list),
            "load": defaultdict(list),
        }
        self.errors: list[str] = []
        self.page: Any = None
        #: The messages the server sent the window over its editor link (/mcp/bridge), by
        #: phase and type: under many agents the activity panel's updates are most of them.
        self.bridge: dict[str, dict[str, int]] = {
            "idle": defaultdict(int),
            "load": defaultdict(int),
        }

    def route(self, method: str, url: str) -> str:
        path = url.split("?", 1)[0].removeprefix(self.base).strip("/")
        parts = path.split("/")
        if parts[0] in ("api", "mcp"):
            # The root folder's listing apart from a named file's or folder's contents.
            parts = parts[:2] + (["…"] if len(parts) > 2 and parts[2] else [])
        elif parts[:2] == ["lab", "api"]:
            parts = parts[:3]
        else:
            parts = parts[:1]
        return f"{method} {'/'.join(parts)}"

    def _finished(self, request: Any) -> None:
        if self.phase is None or request.resource_type not in ("fetch", "xhr"):
            return
        ended = request.timing.get("responseEnd", -1)
        if ended >= 0:
            self.samples[self.phase][self.route(request.method, request.url)].append(ended)

    def _failed(self, request: Any) -> None:
        if self.phase is not None and request.resource_type in ("fetch", "xhr"):
            self.errors.append(f"{self.route(request.method, request.url)}: {request.failure}")

    def _answered(self, response: Any) -> None:
        if self.phase is not None and response.status >= 500:
            self.errors.append(
                f"{self.route(response.request.method, response.url)}: {response.status}"
            )

    def _socket(self, socket: Any) -> None:
        if "/mcp/bridge" in socket.url:
            socket.on("framereceived", self._bridge_frame)

    def _bridge_frame(self, payload: Any) -> None:
        if self.phase is None:
            return
        try:
            kind = json.loads(payload).get("type", "?")
        except (TypeError, ValueError, AttributeError):
            kind = "?"
        self.bridge[self.phase][kind] += 1

    async def open(self, browser: Any, token: str) -> None:
        page = self.page = await browser.new_page(viewport={"width": 1400, "height": 900})
        page.on("requestfinished", self._finished)
        page.on("requestfailed", self._failed)
        page.on("response", self._answered)
        page.on("websocket", self._socket)
        await page.goto(f"{self.base}/lab/tree/user.ipynb?token={token}")
        await page.wait_for_selector(".jp-MCP-status", timeout=180_000)
        await page.wait_for_selector(FIRST_PROMPT, timeout=180_000)
        # The kernel is up before anything counts. A key pressed while JupyterLab still sets
        # the notebook up (its shared document arriving) can go nowhere: pressed again.
        deadline = time.monotonic() + 180
        while True:
            try:
                await self.run_first_cell(timeout=30_000)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise

    async def run_first_cell(self, timeout: float = 120_000) -> float:
        """Shift+Enter in the notebook's first cell, as the user types it; the milliseconds
        until its prompt shows the new execution count."""
        page = self.page
        before = (await page.locator(FIRST_PROMPT).first.inner_text()).strip()
        await page.locator(FIRST_EDITOR).first.click()
        started = time.perf_counter()
        await page.keyboard.press("Shift+Enter")
        # Looked up afresh at each check: JupyterLab may render the cell again meanwhile.
        await page.wait_for_function(
            """([selector, before]) => {
                const prompt = document.querySelector(selector);
                const text = prompt ? prompt.innerText.trim() : '';
                return text !== before && /\\[\\d+\\]/.test(text);
            }""",
            arg=[FIRST_PROMPT, before],
            timeout=timeout,
        )
        return (time.perf_counter() - started) * 1000

    async def use(self, phase: str, stop: asyncio.Event) -> None:
        """The user at the window until ``stop``: every two seconds the file browser is
        refreshed and the first cell run (its time counted beside the requests)."""
        self.phase = phase
        refresh = self.page.locator('[data-command="filebrowser:refresh"]').first
        try:
            while not stop.is_set():
                await refresh.click()
                try:
                    ran = await self.run_first_cell()
                except Exception as e:  # a cell that never ends is counted, and the user goes on
                    self.errors.append(f"{USER_RUN}: {type(e).__name__}: {e}"[:300])
                else:
                    self.samples[phase][USER_RUN].append(ran)
                await asyncio.sleep(2)
        finally:
            self.phase = None


async def idle(
    base: str, headers: dict[str, str], seconds: float, window: LabWindow | None
) -> dict[str, list]:
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(seconds, stop.set)
    if window is None:
        return await the_user(base, headers, stop)
    user, _ = await asyncio.gather(the_user(base, headers, stop), window.use("idle", stop))
    return user


async def loaded(
    base: str,
    headers: dict[str, str],
    args: argparse.Namespace,
    window: LabWindow | None,
    server_pid: int,
) -> tuple[Tally, list[str], dict[str, list], float]:
    url = base + "/mcp"
    tally, misplaced = Tally(), []
    if args.loop_lag:
        tally.lag["the server's, idle"] = await lag_report(base, headers, reset=True)
        # This process's loop too: every client and the user's requests share it, and a
        # late answer of the user's can be late here as much as in the server.
        clients = LagMonitor(asyncio.get_running_loop())
    done, stop_user = asyncio.Event(), asyncio.Event()
    user = asyncio.create_task(the_user(base, headers, stop_user))
    at_window = None if window is None else asyncio.create_task(window.use("load", stop_user))
    started = time.perf_counter()
    cpu_before = cpu_use(server_pid)
    others = [
        asyncio.create_task(tally.guarded(f"agent {j}", other_agent(url, headers, j, done, tally)))
        for j in range(args.other_agents)
    ]
    watch = asyncio.create_task(
        tally.watch(dump=dumper(base, headers, args.dumps), stuck=args.stuck)
    )
    await asyncio.gather(
        *(
            tally.guarded(
                f"cell agent {i}", cell_agent(url, headers, i, args.cells, tally, misplaced)
            )
            for i in range(args.cell_agents)
        )
    )
    watch.cancel()
    elapsed = time.perf_counter() - started
    done.set()
    await asyncio.gather(*others)
    if args.loop_lag:
        tally.lag["the server's, load"] = await lag_report(base, headers)
        clients.stop()
        tally.lag["the clients' loop, load"] = clients.report(lines=8)
    # Kernels started during the load count from zero: all of theirs is the load's.
    tally.cpu = {k: v - cpu_before[k] for k, v in cpu_use(server_pid).items()}
    stop_user.set()
    if at_window is not None:
        await at_window
    return tally, misplaced, await user, elapsed


async def measure(
    base: str, token: str, args: argparse.Namespace, server_pid: int
) -> tuple[dict[str, list], Tally, list[str], dict[str, list], float, LabWindow | None]:
    """Both phases, the user's window open through both (unless ``--no-window``)."""
    headers = {"Authorization": f"token {token}"}
    if args.no_window:
        quiet = await idle(base, headers, args.idle, None)
        return (quiet, *await loaded(base, headers, args, None, server_pid), None)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            window = LabWindow(base)
            await window.open(browser, token)
            quiet = await idle(base, headers, args.idle, window)
            return (quiet, *await loaded(base, headers, args, window, server_pid), window)
        finally:
            await browser.close()


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
                count = cell.get("execution_count")  # None: the cell never ran (or was reset)
                wrong.append(
                    f"agent_{agent}.ipynb {cell.get('id')}: {texts!r}, wanted {wanted!r}, "
                    f"execution_count {count}"
                )
    return checked, wrong


def notebooks_on_disk(root: Path) -> tuple[int, list[str]]:
    """Every notebook file of the project once the run is over, and what is wrong with those
    that are empty, not valid nbformat, or have a save's leftovers beside them (Jupyter's
    ``.~name`` backup, or the ``name.invalid`` it moves a notebook it could not read to)."""
    found, wrong = 0, []
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if ".ipynb_checkpoints" in path.parts or not path.is_file():
            continue
        if path.name.startswith(".~") or path.name.endswith(".ipynb.invalid"):
            wrong.append(f"{name} was left behind by a save")
            continue
        if path.suffix != ".ipynb":
            continue
        found += 1
        data = path.read_bytes()
        if not data:
            wrong.append(f"{name} is empty (0 bytes)")
            continue
        try:
            nbformat.validate(nbformat.reads(data.decode("utf-8"), as_version=nbformat.NO_CONVERT))
        except Exception as e:  # not UTF-8, not JSON, not nbformat: each is a broken notebook
            wrong.append(f"{name} ({len(data)} bytes) is not a valid notebook: {e!r:.200}")
    return found, wrong


def p50_p99(samples: list[float]) -> str:
    good = [s for s in samples if s >= 0]
    if not good:
        return f"{'-':>8} {'-':>8}"
    return f"{percentile(good, 0.5):>8.1f} {percentile(good, 0.99):>8.1f}"


def options() -> argparse.ArgumentParser:
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
        "the server's shared documents); no window then",
    )
    parser.add_argument(
        "--stuck",
        type=float,
        default=120,
        help="seconds after which a call under way has the stacks of the server's tasks and "
        "threads and of this process's written to a file (said on stderr)",
    )
    parser.add_argument(
        "--loop-lag",
        action="store_true",
        help="watch the server's event loop and print what held it whenever it was over 50 ms "
        "late, idle and under load (the stack line: jupyter_mcp's, or the library's)",
    )
    parser.add_argument("--dumps", help="the folder of those files (default: a fresh one)")
    parser.add_argument(
        "--no-window",
        action="store_true",
        help="no JupyterLab window in Chromium (the user's scripted requests only)",
    )
    return parser


@dataclass
class Outcome:
    """What one run found (``report`` prints it)."""

    args: argparse.Namespace
    collaboration: bool
    elapsed: float
    tally: Tally
    #: Answers whose outputs were not their agent's line.
    misplaced: list[str]
    #: The user's scripted requests, idle and under load: label -> milliseconds (-1: failed).
    quiet: dict[str, list[float]]
    busy: dict[str, list[float]]
    window: LabWindow | None
    #: Cells checked in the notebook files, and those not as their agent left them.
    checked: int
    wrong: list[str]
    #: The notebook files on disk at the end, and those empty, invalid or with leftovers.
    notebooks: int
    broken: list[str]
    #: What the server logged at error level (each entry with its traceback): where a
    #: failed request of the user, a failed save of a shared document, is explained.
    server_errors: list[str]

    @property
    def user_errors(self) -> int:
        return sum(1 for samples in self.busy.values() for s in samples if s < 0)

    @property
    def problems(self) -> list[str]:
        """Every error, stopped agent and misplaced output (empty: the targets were met)."""
        found = list(self.tally.stopped)
        for tool, count in self.tally.errors.items():
            if count:
                found.append(f"{count} errors of {tool}")
        found += self.tally.messages + USER_FAILURES + self.misplaced + self.wrong + self.broken
        if self.user_errors:
            found.append(f"{self.user_errors} failed requests of the user")
        if self.window is not None:
            found += self.window.errors
        return found


def run(argv: list[str] | None = None) -> Outcome:
    """One run of the benchmark with these command-line arguments."""
    args = options().parse_args(argv)
    if args.no_collaboration:
        # With jupyter-collaboration's server extension off but its JupyterLab extension
        # installed, the window never shows the notebook (seen: no cell within 180 s).
        args.no_window = True
    USER_FAILURES.clear()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project(root, args.files)
        # Enabled on install, when it is installed.
        collaboration = not args.no_collaboration and bool(find_spec("jupyter_server_ydoc"))
        off = {"jupyter_server_ydoc": False} if args.no_collaboration else {}
        # The probe (_soak_probe) tells where a call that goes unanswered is stuck.
        here = str(Path(__file__).parent)
        paths = (here, os.environ.get("PYTHONPATH", ""))
        env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
        if args.loop_lag:
            env["SOAK_LOOP_LAG"] = "1"
        with jupyter_server(root, env=env, extensions={**off, "_soak_probe": True}) as server:
            time.sleep(args.settle)  # the warm start (workers, the project's index) first
            quiet, tally, misplaced, busy, elapsed, window = asyncio.run(
                measure(server.url, server.token, args, server.proc.pid)
            )
            checked, wrong = in_files(root, args.cell_agents, args.cells)
            notebooks, broken = notebooks_on_disk(root)
            server_errors = server.logged_errors()
    return Outcome(
        args,
        collaboration,
        elapsed,
        tally,
        misplaced,
        quiet,
        busy,
        window,
        checked,
        wrong,
        notebooks,
        broken,
        server_errors,
    )


def report(outcome: Outcome) -> None:
    """Print the figures of one run."""
    args, tally, window = outcome.args, outcome.tally, outcome.window
    elapsed, quiet, busy = outcome.elapsed, outcome.quiet, outcome.busy
    load = os.getloadavg()[0]
    agents = args.cell_agents + args.other_agents
    legacy = sum(1 for i in range(args.cell_agents) if era(i) == "legacy") + sum(
        1 for j in range(args.other_agents) if era(j) == "legacy"
    )
    print(
        f"{args.cell_agents} agents x {args.cells} cells (each its own notebook and kernel) and "
        f"{args.other_agents} agents on files, search and git, in {elapsed:.0f} s; "
        f"{legacy} of the {agents} on 2025-11-25 sessions, the others on 2026-07-28; "
        f"jupyter-collaboration {'on' if outcome.collaboration else 'off'} "
        f"(load average {load:.1f} on {os.cpu_count()} cores)"
    )
    used = ", ".join(f"{who} {seconds:.0f} s" for who, seconds in tally.cpu.items())
    print(f"CPU over the load ({elapsed:.0f} s on {os.cpu_count()} cores): {used}")
    print(f"{'tool':<30} {'calls':>6} {'errors':>6} {'p50 ms':>8} {'p99 ms':>8}")
    for tool, samples in sorted(tally.samples.items()):
        print(f"{tool:<30} {len(samples):>6} {tally.errors[tool]:>6} {p50_p99(samples)}")
    errors = sum(tally.errors.values())
    print()
    print(f"{'the user, meanwhile (ms)':<36} {'idle p50':>8} {'p99':>8} {'load p50':>8} {'p99':>8}")
    for label in USER_REQUESTS:
        print(f"{label:<36} {p50_p99(quiet[label])} {p50_p99(busy[label])}")
    window_errors = 0
    if window is not None:
        print()
        print(
            f"{'the JupyterLab window (ms)':<44} {'idle n':>6} {'p50':>8} {'p99':>8} "
            f"{'load n':>6} {'p50':>8} {'p99':>8}"
        )
        rows = sorted(set(window.samples["idle"]) | set(window.samples["load"]))
        for label in [USER_RUN] + [r for r in rows if r != USER_RUN]:
            idle_ms, load_ms = window.samples["idle"][label], window.samples["load"][label]
            print(
                f"{label:<44} {len(idle_ms):>6} {p50_p99(idle_ms)} {len(load_ms):>6} "
                f"{p50_p99(load_ms)}"
            )
        window_errors = len(window.errors)
        for phase in ("idle", "load"):
            sent = window.bridge[phase]
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(sent.items())) or "none"
            print(f"the server's messages to the window ({phase}): {sum(sent.values())} ({kinds})")
    print()
    answers = 2 * args.cell_agents * args.cells
    print(
        f"errors: {errors} agent calls, {len(tally.stopped)} agents stopped, "
        f"{outcome.user_errors} user requests, {window_errors} in the window (target 0); "
        f"outputs in the wrong place: {len(outcome.misplaced)} of {answers} answers, "
        f"{len(outcome.wrong)} of {outcome.checked} cells in the files (target 0); "
        f"notebook files empty, invalid or with a save's leftovers: {len(outcome.broken)} of "
        f"{outcome.notebooks} (target 0)"
    )
    shown = window.errors[:5] if window is not None else []
    for message in (
        tally.stopped[:5]
        + tally.messages
        + USER_FAILURES
        + outcome.misplaced[:5]
        + outcome.wrong[:5]
        + outcome.broken[:5]
        + shown
    ):
        print("  ", message)
    for phase, text in tally.lag.items():
        print(f"\nwhat held the event loop ({phase}):")
        print(text, end="")
    if outcome.server_errors:
        print(f"the server logged {len(outcome.server_errors)} errors; the first ones:")
        for entry in outcome.server_errors[:3]:
            print("   " + entry[-2000:].replace("\n", "\n   "))


def main() -> None:
    report(run())


if __name__ == "__main__":
    main()
