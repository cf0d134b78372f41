"""The active editor end to end: real JupyterLab in headless Chromium, driven through the tools.

A JupyterLab server (with jupyter_mcp and its built labextension) runs as a subprocess for
this module; Playwright drives Debian's Chromium against it, and the tools are called over the
seed REST surface with the server's token, as an agent would. Screenshots of the approval
dialog and the activity panel go to ``test-artifacts/``.

Needs ``/usr/bin/chromium`` (``make test`` installs it) and the built labextension
(``make labextension``, linked with ``jupyter labextension develop``); skips otherwise.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import nbformat
import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS, require_chromium, skip_or_fail
from local_servers import free_port
from mcp_messages import INITIALIZED, initialize
from server_configs import COLLABORATION_EXTENSIONS

pytestmark = pytest.mark.browser

TOKEN = "browser-test-token"
#: jupyter-collaboration's lab extensions, kept off in these tests.

COLLABORATION_LAB_EXTENSIONS = (
    "@jupyter/collaboration-extension",
    "@jupyter/docprovider-extension",
)
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
BUILT_LABEXTENSION = REPO / "jupyter_mcp" / "labextension"


@pytest.fixture(autouse=True)
def jp_asyncio_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """pytest-jupyter's autouse loop fixture would grab (and close) Playwright's running loop;
    these tests use no in-process server, so give it a private loop instead."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(autouse=True)
def jp_server_cleanup() -> None:
    """No in-process ServerApp to clean up: JupyterLab runs as a subprocess here."""


@dataclass
class Lab:
    """A running JupyterLab: where it listens and which folder it serves."""

    url: str
    root: Path
    process: subprocess.Popen[bytes]
    start: Callable[[], subprocess.Popen[bytes]]

    def restart(self) -> None:
        """Stop the server and start it again on the same port (windows must reconnect)."""
        _stop(self.process)
        self.process = self.start()
        wait_for(lambda: _up(self.url, self.process), timeout=90, what="jupyter lab to restart")

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """POST one tool call to seed REST; the parsed ``{"status", "error"}``."""
        request = urllib.request.Request(
            f"{self.url}mcp/{tool}",
            data=json.dumps(arguments).encode(),
            headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def probe(self, **body: Any) -> dict[str, Any]:
        """Report a running cell to a notebook's document (see live_run_probe.py)."""
        request = urllib.request.Request(
            f"{self.url}live-run-probe",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def ok(self, tool: str, **arguments: Any) -> Any:
        answer = self.call(tool, **arguments)
        assert answer["error"] is None, answer["error"]
        return answer["status"]

    def fails(self, tool: str, **arguments: Any) -> str:
        answer = self.call(tool, **arguments)
        assert answer["status"] is None, answer
        return str(answer["error"])


def _labextension_served() -> bool:
    return (BUILT_LABEXTENSION / "package.json").exists()


def wait_for(condition: Callable[[], Any], timeout: float = 15.0, what: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _run_lab(base: Path, *, collaboration: bool = False) -> Iterator[Lab]:
    """Run JupyterLab on a folder under ``base`` until the generator is closed.

    Real-time collaboration is off unless asked for (CI installs it for the notebook tests, and
    installed it enables itself): its server extensions on the command line, its lab
    extensions in the page config.
    """
    require_chromium()
    if not _labextension_served():
        skip_or_fail("the labextension is not built/linked (make labextension; make test does it)")
    root = base / "root"
    root.mkdir()
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # This checkout's build of the labextension wins over an installed one of the same name.
    labextensions = base / "labextensions"
    labextensions.mkdir()
    (labextensions / "jupyter-mcp").symlink_to(BUILT_LABEXTENSION)
    labconfig = base / "config" / "labconfig"
    labconfig.mkdir(parents=True)
    disabled = {} if collaboration else {name: True for name in COLLABORATION_LAB_EXTENSIONS}
    (labconfig / "page_config.json").write_text(json.dumps({"disabledExtensions": disabled}))
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        # live_run_probe (a test-only server extension) lives beside this file.
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]
        ),
    }
    extensions = {
        "jupyter_mcp": True,
        "live_run_probe": True,
        **{name: False for name in COLLABORATION_EXTENSIONS},
    }
    if collaboration:
        extensions.update(jupyter_server_ydoc=True, jupyter_server_fileid=True)
    log = open(base / "lab.log", "ab")  # noqa: SIM115 (closed at teardown)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.jpserver_extensions={extensions!r}",
        f"--LabApp.extra_labextensions_path={labextensions}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        f"--LabApp.user_settings_dir={base / 'settings'}",
        "--JupyterMCP.approval_timeout=30",
        f"--JupyterMCP.breakpoints_file={base / 'breakpoints.json'}",
        f"--JupyterMCP.oauth_file={base / 'oauth.json'}",
    ]
    if collaboration:
        command += [
            f"--SQLiteYStore.db_path={base / 'ystore.db'}",
            f"--BaseFileIdManager.db_path={base / 'file_id.db'}",
            "--YDocExtension.document_save_delay=0.2",
        ]

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=base)

    url = f"http://127.0.0.1:{port}/"
    lab = Lab(url=url, root=root, process=start(), start=start)
    try:
        wait_for(lambda: _up(url, lab.process), timeout=90, what="jupyter lab to start")
        yield lab
    finally:
        _stop(lab.process)
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from _run_lab(tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="module")
def collab_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """JupyterLab with jupyter-collaboration enabled (skipped when it is not installed)."""
    if importlib.util.find_spec("jupyter_server_ydoc") is None:
        pytest.skip("jupyter-collaboration is not installed (the collab test extra)")
    yield from _run_lab(tmp_path_factory.mktemp("collab-lab"), collaboration=True)


def _up(url: str, process: subprocess.Popen[bytes]) -> bool:
    if process.poll() is not None:
        raise AssertionError(f"jupyter lab exited with {process.returncode}")
    try:
        urllib.request.urlopen(f"{url}api/status?token={TOKEN}", timeout=2).close()
    except (urllib.error.URLError, ConnectionError):
        return False
    return True


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the module (Playwright's sync API runs one instance per thread)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _browse(browser: Any, lab: Lab) -> Iterator[Any]:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(f"{lab.url}lab?token={TOKEN}")
    page.wait_for_selector(".jp-MCP-status", timeout=90000)
    wait_for(
        lambda: "MCP: offline" not in page.inner_text(".jp-MCP-status"),
        what="the lab socket to connect",
    )
    yield page
    page.close()


@pytest.fixture(scope="module")
def page(lab: Lab, browser: Any) -> Iterator[Any]:
    yield from _browse(browser, lab)


@pytest.fixture(scope="module")
def collab_page(collab_lab: Lab, browser: Any) -> Iterator[Any]:
    yield from _browse(browser, collab_lab)


def write(lab: Lab, name: str, text: str) -> Path:
    path = lab.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_notebook(lab: Lab, name: str, sources: list[tuple[str, str]]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    for kind, source in sources:
        if kind == "code":
            cell = nbformat.v4.new_code_cell(source)
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"out:{source}\n")]
            cell.execution_count = 1
        else:
            cell = nbformat.v4.new_markdown_cell(source)
        nb.cells.append(cell)
    path = lab.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb))
    return path


def open_in_editor(lab: Lab, page: Any, name: str) -> None:
    assert lab.ok("open_file_in_editor", pathInProject=name) == "file is opened"
    wait_for(
        lambda: lab.ok("get_open_in_editor_file_path") == str(lab.root / name),
        what=f"{name} to be the active editor",
    )


def editor_text(lab: Lab) -> str:
    return str(lab.ok("get_open_in_editor_file_text"))


def focus_file_editor(page: Any) -> Any:
    content = page.locator(".jp-FileEditor:visible .cm-content")
    content.click()
    return content


# -- reading ---------------------------------------------------------------------------------


def test_read_a_file_and_a_notebook_with_unsaved_edits(lab: Lab, page: Any) -> None:
    write(lab, "read/hello.py", "print('hello')\n")
    open_in_editor(lab, page, "read/hello.py")
    assert editor_text(lab) == "print('hello')\n"

    focus_file_editor(page)
    page.keyboard.press("Control+End")
    page.keyboard.type("x = 1")
    wait_for(lambda: editor_text(lab) == "print('hello')\nx = 1", what="typed text")
    assert (lab.root / "read/hello.py").read_text() == "print('hello')\n"  # not saved

    write_notebook(lab, "read/nb.ipynb", [("markdown", "# Title"), ("code", "a = 1\nprint(a)")])
    open_in_editor(lab, page, "read/nb.ipynb")
    on_disk = lab.ok("get_file_text_by_path", pathInProject="read/nb.ipynb")["content"]
    assert editor_text(lab) == on_disk

    cell = page.locator(".jp-NotebookPanel:visible .jp-CodeCell .cm-content").first
    cell.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("\nb = 2")
    wait_for(lambda: "print(a)\nb = 2" in editor_text(lab), what="typed cell text")
    assert "b = 2" not in lab.ok("get_file_text_by_path", pathInProject="read/nb.ipynb")["content"]


def test_open_file_in_editor_refuses_missing_files(lab: Lab, page: Any) -> None:
    assert "File not found: nope/missing.py" in lab.fails(
        "open_file_in_editor", pathInProject="nope/missing.py"
    )


# -- editing ---------------------------------------------------------------------------------


def test_replace_the_selection_in_a_file_and_in_a_notebook_cell(lab: Lab, page: Any) -> None:
    write(lab, "sel/words.txt", "alpha beta gamma\n")
    open_in_editor(lab, page, "sel/words.txt")
    focus_file_editor(page)
    page.keyboard.press("Control+Home")
    for _ in range(6):
        page.keyboard.press("ArrowRight")
    for _ in range(4):
        page.keyboard.press("Shift+ArrowRight")
    time.sleep(0.1)
    assert lab.ok("replace_selected_text", text="BETA") == "ok"
    assert editor_text(lab) == "alpha BETA gamma\n"
    assert (
        page.locator(".jp-FileEditor:visible .cm-content")
        .inner_text()
        .startswith("alpha BETA gamma")
    )

    write_notebook(lab, "sel/nb.ipynb", [("code", "first = 1"), ("code", "value = old")])
    open_in_editor(lab, page, "sel/nb.ipynb")
    page.locator(".jp-NotebookPanel:visible .jp-CodeCell .cm-content").nth(1).click()
    page.keyboard.press("End")
    for _ in range(3):
        page.keyboard.press("Shift+ArrowLeft")
    time.sleep(0.1)
    assert lab.ok("replace_selected_text", text="new") == "ok"
    assert "# %%\nfirst = 1\n\n# %%\nvalue = new\n" in editor_text(lab)


def test_replace_a_whole_file_and_undo_it(lab: Lab, page: Any) -> None:
    write(lab, "undo/a.py", "one\ntwo\n")
    open_in_editor(lab, page, "undo/a.py")
    assert lab.ok("replace_current_file_text", text="one\nTWO\nthree\n") == "ok"
    assert editor_text(lab) == "one\nTWO\nthree\n"
    assert (lab.root / "undo/a.py").read_text() == "one\ntwo\n"  # the user saves, not the tool
    focus_file_editor(page)
    page.keyboard.press("Control+z")
    wait_for(lambda: editor_text(lab) == "one\ntwo\n", what="undo")


def test_replace_a_notebook_keeps_outputs_of_unchanged_cells(lab: Lab, page: Any) -> None:
    write_notebook(lab, "nbedit/n.ipynb", [("code", "keep = 1"), ("code", "change = 1")])
    open_in_editor(lab, page, "nbedit/n.ipynb")
    text = editor_text(lab).replace("change = 1", "change = 2") + "\n# %% [markdown]\n# Added\n"
    assert lab.ok("replace_current_file_text", text=text) == "ok"
    assert editor_text(lab) == text
    outputs = page.locator(".jp-NotebookPanel:visible .jp-OutputArea-output")
    wait_for(lambda: "out:keep = 1" in outputs.all_inner_texts()[0], what="kept output")
    cells = page.locator(".jp-NotebookPanel:visible .jp-Cell")
    wait_for(lambda: cells.count() == 3, what="three cells")


# -- notebook tools on the open notebook -------------------------------------------------------


def cell_sources(page: Any) -> list[str]:
    """The sources of the visible notebook's cells as the page shows them."""
    return [
        text.replace("\u200b", "")
        for text in page.locator(".jp-NotebookPanel:visible .jp-Cell .cm-content").all_inner_texts()
    ]


def test_an_agent_edit_shows_at_once_and_ctrl_z_undoes_it(lab: Lab, page: Any) -> None:
    path = write_notebook(lab, "live/n.ipynb", [("code", "a = 1"), ("code", "b = 2")])
    before = path.read_bytes()
    open_in_editor(lab, page, "live/n.ipynb")
    cells = lab.ok("get_notebook_cells", pathInProject="live/n.ipynb")["cells"]
    assert cells[1]["outputs"][0]["text"] == "out:b = 2\n"
    started = time.monotonic()
    edited = lab.ok(
        "edit_notebook_cell",
        pathInProject="live/n.ipynb",
        cellId=cells[1]["cellId"],
        searchText="2",
        replaceText="20",
    )
    assert edited["index"] == 1
    wait_for(lambda: cell_sources(page) == ["a = 1", "b = 20"], what="the edit in the page")
    assert time.monotonic() - started < 10
    assert path.read_bytes() == before  # in the live document, for the user to save
    # The cell keeps its output, as when the user edits it
    outputs = page.locator(".jp-NotebookPanel:visible .jp-OutputArea-output")
    assert "out:b = 2" in outputs.all_inner_texts()[1]

    page.locator(".jp-NotebookPanel:visible .jp-CodeCell .cm-content").nth(1).click()
    page.keyboard.press("Control+z")
    wait_for(lambda: cell_sources(page) == ["a = 1", "b = 2"], what="Ctrl+Z to undo the edit")

    # A structural change is one step of the notebook's own history (Z in command mode)
    lab.ok("insert_notebook_cell", pathInProject="live/n.ipynb", source="c = 3", index=0)
    wait_for(lambda: cell_sources(page) == ["c = 3", "a = 1", "b = 2"], what="the new cell")
    page.keyboard.press("Escape")
    page.keyboard.press("z")
    wait_for(lambda: cell_sources(page) == ["a = 1", "b = 2"], what="Z to undo the insertion")


def test_an_edit_of_a_cell_the_user_just_typed_into_is_refused(lab: Lab, page: Any) -> None:
    write_notebook(lab, "live/stale.ipynb", [("code", "x = 1")])
    open_in_editor(lab, page, "live/stale.ipynb")
    cell = lab.ok("get_notebook_cell", pathInProject="live/stale.ipynb", index=0)
    page.locator(".jp-NotebookPanel:visible .jp-CodeCell .cm-content").first.click()
    page.keyboard.press("End")
    page.keyboard.type(" + 1")
    wait_for(lambda: cell_sources(page) == ["x = 1 + 1"], what="the user's typing")
    error = lab.fails(
        "edit_notebook_cell",
        pathInProject="live/stale.ipynb",
        cellId=cell["cellId"],
        source="x = 2",
        expectedSource=cell["source"],
    )
    assert "changed since it was read" in error and error.endswith("x = 1 + 1")
    time.sleep(0.3)
    assert cell_sources(page) == ["x = 1 + 1"]


def test_the_user_sees_an_agent_run_as_it_happens(lab: Lab, page: Any) -> None:
    path = write_notebook(
        lab,
        "live/run.ipynb",
        [("code", "import time\nprint('first', flush=True)\ntime.sleep(4)\nprint('second')")],
    )
    before = path.read_bytes()
    open_in_editor(lab, page, "live/run.ipynb")

    def window_kernels() -> list[str]:
        kernels = lab.ok("kernel_action", action="list")
        return [k["kernelId"] for k in kernels if "live/run.ipynb" in k["notebooks"]]

    users = wait_for(window_kernels, timeout=60, what="the window's kernel")
    prompt = page.locator(".jp-NotebookPanel:visible .jp-CodeCell .jp-InputPrompt").first
    output = page.locator(".jp-NotebookPanel:visible .jp-CodeCell .jp-OutputArea").first
    with ThreadPoolExecutor(1) as pool:
        # While the agent's call is still running, the cell shows [*] and then its first line
        call = pool.submit(lab.call, "execute_notebook_cells", pathInProject="live/run.ipynb")
        wait_for(lambda: "[*]" in prompt.inner_text(), timeout=60, what="[*] in the cell")
        wait_for(lambda: "first" in output.inner_text(), timeout=30, what="the first output")
        assert not call.done() and "second" not in output.inner_text()
        answer = call.result(timeout=60)
    assert answer["error"] is None, answer["error"]
    cell = answer["status"]["cells"][0]
    assert cell["status"] == "ok" and [o["text"] for o in cell["outputs"]] == ["first\nsecond\n"]
    # Then the count and the whole output, in the open notebook the user saves when they like
    count = cell["executionCount"]
    wait_for(lambda: f"[{count}]" in prompt.inner_text(), what="the execution count")
    wait_for(lambda: "first\nsecond" in output.inner_text(), what="the whole output")
    assert path.read_bytes() == before
    # It ran in the kernel the window uses, the one the user's cells run in
    assert window_kernels() == users


def test_a_running_cell_shows_star_then_outputs_then_its_count(lab: Lab, page: Any) -> None:
    path = write_notebook(lab, "live/run.ipynb", [("code", "for i in range(3): print(i)")])
    before = path.read_bytes()
    open_in_editor(lab, page, "live/run.ipynb")
    cell_id = lab.ok("get_notebook_cell", pathInProject="live/run.ipynb", index=0)["cellId"]
    prompt = page.locator(".jp-NotebookPanel:visible .jp-CodeCell .jp-InputPrompt").first
    outputs = page.locator(".jp-NotebookPanel:visible .jp-OutputArea-output")
    wait_for(lambda: prompt.inner_text().strip() == "[1]:", what="the saved count")
    answer = lab.probe(path="live/run.ipynb", cellId=cell_id, step="started")
    assert answer["location"] == "window"
    wait_for(lambda: prompt.inner_text().strip() == "[*]:", what="[*] while it runs")
    wait_for(lambda: outputs.count() == 0, what="the old outputs cleared")
    for i in range(3):
        output = {"output_type": "stream", "name": "stdout", "text": f"{i}\n"}
        lab.probe(path="live/run.ipynb", cellId=cell_id, step="output", output=output)
    wait_for(
        lambda: [t.strip() for t in outputs.all_inner_texts()] == ["0\n1\n2"],
        what="the outputs so far",
    )
    assert prompt.inner_text().strip() == "[*]:"
    lab.probe(path="live/run.ipynb", cellId=cell_id, step="finished", executionCount=7)
    wait_for(lambda: prompt.inner_text().strip() == "[7]:", what="the execution count")
    cell = lab.ok("get_notebook_cell", pathInProject="live/run.ipynb", cellId=cell_id)
    assert cell["executionCount"] == 7 and cell["outputs"][0]["text"] == "0\n1\n2\n"
    assert path.read_bytes() == before  # the live document has it; the user saves


def saved_sources(path: Path) -> list[str] | None:
    """The cell sources of the notebook file; None while the server is rewriting it.

    Jupyter saves a file in place (its atomic_writing keeps a backup copy, not a temporary
    file), so a read during a save finds it empty or cut short.
    """
    try:
        return [c.source for c in nbformat.read(path, as_version=4).cells]
    except (OSError, ValueError):  # nbformat's NotJSONError is a ValueError
        return None


def test_with_collaboration_every_edit_goes_through_the_shared_document(
    collab_lab: Lab, collab_page: Any
) -> None:
    lab, page = collab_lab, collab_page
    path = write_notebook(lab, "shared/n.ipynb", [("code", "a = 1")])
    # No window shows it: the shared document is changed, and the server saves it
    added = lab.ok("insert_notebook_cell", pathInProject="shared/n.ipynb", source="b = 2")
    wait_for(
        lambda: saved_sources(path) == ["a = 1", "b = 2"],
        what="the server to save the shared document",
    )
    open_in_editor(lab, page, "shared/n.ipynb")
    wait_for(lambda: cell_sources(page) == ["a = 1", "b = 2"], what="the saved edit in the page")
    # Open: the window sees each edit as it happens, and a running cell's [*], outputs, count
    lab.ok(
        "edit_notebook_cell", pathInProject="shared/n.ipynb", cellId=added["cellId"], source="b = 3"
    )
    wait_for(lambda: cell_sources(page) == ["a = 1", "b = 3"], what="the edit in the page")
    answer = lab.probe(path="shared/n.ipynb", cellId=added["cellId"], step="started")
    assert answer["location"] == "shared"
    prompt = page.locator(".jp-NotebookPanel:visible .jp-CodeCell .jp-InputPrompt").nth(1)
    wait_for(lambda: prompt.inner_text().strip() == "[*]:", what="[*] while it runs")
    output = {"output_type": "stream", "name": "stdout", "text": "shared\n"}
    lab.probe(path="shared/n.ipynb", cellId=added["cellId"], step="output", output=output)
    outputs = (
        page.locator(".jp-NotebookPanel:visible .jp-CodeCell")
        .nth(1)
        .locator(".jp-OutputArea-output")
    )
    wait_for(lambda: [t.strip() for t in outputs.all_inner_texts()] == ["shared"], what="output")
    lab.probe(path="shared/n.ipynb", cellId=added["cellId"], step="finished", executionCount=3)
    wait_for(lambda: prompt.inner_text().strip() == "[3]:", what="the execution count")


def stored_ids(path: Path) -> list[str] | None:
    """The cell ids the notebook file stores; None while the server is rewriting it."""
    try:
        return [c.get("id") for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    except (OSError, ValueError, KeyError):  # mid-save, or still v3 (worksheets, no cells)
        return None


def answer_dialogs(page: Any, quiet: float = 1.5, timeout: float = 30.0) -> None:
    """Answer the dialogs JupyterLab shows on opening an old notebook without a kernelspec
    ("Notebook converted": OK; "Select Kernel": No Kernel) until none has come for ``quiet``
    seconds; any other dialog fails the test."""
    dialog = page.locator(".jp-Dialog")
    deadline = time.monotonic() + timeout
    calm_since = time.monotonic()
    while time.monotonic() - calm_since < quiet:
        assert time.monotonic() < deadline, "JupyterLab kept showing dialogs"
        if dialog.count() and dialog.first.is_visible():
            text = dialog.first.inner_text()
            if "Select Kernel" in text:
                dialog.first.get_by_role("button", name="No Kernel").click()
            elif "Notebook converted" in text:
                dialog.first.get_by_role("button", name="Ok").click()
            else:
                raise AssertionError(f"an unexpected dialog: {text}")
            calm_since = time.monotonic()
        time.sleep(0.1)


def test_an_old_notebook_has_one_set_of_ids_in_its_file_its_window_and_once_saved(
    lab: Lab, page: Any
) -> None:
    from public_notebooks import NBFORMAT, copy_into, nbformat_notebook

    # nbformat gives the cells of these random ids at each read; JupyterLab loads them through
    # the contents API
    for what in ("v3", "v4.5 with two cells sharing an id"):
        name = f"versions/{NBFORMAT[what]}"
        path = copy_into(nbformat_notebook(NBFORMAT[what]), lab.root, name)
        before = path.read_bytes()
        cells = lab.ok("get_notebook_cells", pathInProject=name, includeOutputs=False)["cells"]
        in_file = [c["cellId"] for c in cells]
        open_in_editor(lab, page, name)
        answer_dialogs(page)  # JupyterLab says it converted a v3 notebook, asks for a kernel
        # The window shows the ids the tools gave out for the file
        listed = lab.ok("get_notebook_cells", pathInProject=name, includeOutputs=False)
        assert [c["cellId"] for c in listed["cells"]] == in_file, what
        target = next(c for c in listed["cells"] if c["cellType"] == "code")
        answer = lab.ok(
            "edit_notebook_cell",
            pathInProject=name,
            cellId=target["cellId"],
            source=target["source"] + "  # edited",
        )
        assert "when the JupyterLab window saves" in answer["upgraded"], answer
        wait_for(
            lambda: any(s.endswith("# edited") for s in cell_sources(page)),  # noqa: B023
            what="the edit in the page",
        )
        assert path.read_bytes() == before  # in the window, for the user to save
        # Saved by JupyterLab (the user's Ctrl+S), the file stores those same ids
        page.locator(".jp-NotebookPanel:visible .jp-Cell .jp-InputPrompt").first.click()
        page.keyboard.press("Control+s")
        wait_for(lambda: stored_ids(path) == in_file, what=f"JupyterLab to save {what}")  # noqa: B023
        # Closed once JupyterLab knows it saved it, so that later windows do not restore it
        dirty = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current.jp-mod-dirty")
        wait_for(lambda: dirty.count() == 0, what="the saved notebook to be clean")  # noqa: B023
        assert lab.ok("execute_action_by_id", actionId="application:close") == "ok"
        tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab", has_text=path.name)
        wait_for(lambda: tab.count() == 0, what=f"{path.name} to close")  # noqa: B023


# -- subscriptions: the user's typing reaches an agent -----------------------------------------


class Subscriber:
    """An agent subscribed to resources of the lab, through the official SDK client.

    The client runs in a thread with an event loop of its own (Playwright's sync API has this
    one); ``heard`` holds ``(time.monotonic(), uri)`` of each ``notifications/resources/updated``.
    ``mode="legacy"`` subscribes with ``resources/subscribe``, ``"auto"`` (2026-07-28) opens a
    ``subscriptions/listen`` stream.
    """

    def __init__(self, lab: Lab, uris: list[str], *, mode: str = "legacy") -> None:
        self.lab, self.uris, self.mode = lab, uris, mode
        self.heard: list[tuple[float, str]] = []
        self.ready = threading.Event()
        self.failed: BaseException | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> Subscriber:
        self._thread.start()
        wait_for(lambda: self.ready.is_set() or self.failed, timeout=60, what="the subscriber")
        if self.failed is not None:
            raise self.failed
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)

    def of(self, uri: str) -> list[float]:
        return [at for at, u in list(self.heard) if u == uri]

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a tool as this agent (on its own session); the result."""
        assert self._loop is not None and self._client is not None
        done = asyncio.run_coroutine_threadsafe(self._client.call_tool(tool, arguments), self._loop)
        return done.result(60)

    async def _run(self) -> None:
        import warnings

        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared.exceptions import MCPDeprecationWarning

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/resources/updated":
                self.heard.append((time.monotonic(), str(message.params.uri)))

        try:
            timeout = httpx2.Timeout(30.0, read=300.0)
            headers = {"Authorization": f"token {TOKEN}"}
            async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
                transport = streamable_http_client(f"{self.lab.url}mcp", http_client=http)
                async with Client(transport, mode=self.mode, message_handler=on_message) as client:
                    self._client = client
                    if self.mode == "legacy":
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", MCPDeprecationWarning)
                            for uri in self.uris:
                                await client.subscribe_resource(uri)
                        await asyncio.sleep(0.5)  # the session's event stream opens meanwhile
                        self.ready.set()
                        await self._stop.wait()
                    else:
                        async with client.listen(resource_subscriptions=self.uris) as stream:
                            self.ready.set()
                            listening = asyncio.ensure_future(self._listen(stream))
                            await self._stop.wait()
                            listening.cancel()
        except BaseException as e:  # the test thread raises it
            self.failed = e
            self.ready.set()

    async def _listen(self, stream: Any) -> None:
        async for event in stream:
            self.heard.append((time.monotonic(), str(event.uri)))


def type_into_cell(page: Any, index: int, text: str) -> float:
    """Type ``text`` at the end of cell ``index`` of the visible notebook; when typing ended."""
    page.locator(".jp-NotebookPanel:visible .jp-CodeCell .cm-content").nth(index).click()
    page.keyboard.press("End")
    page.keyboard.type(text)
    return time.monotonic()


def check_typing_reaches_the_subscribers(lab: Lab, page: Any, name: str) -> None:
    path = write_notebook(lab, name, [("code", "a = 1"), ("code", "b = 2")])
    before = path.read_bytes()
    open_in_editor(lab, page, name)
    wait_for(lambda: cell_sources(page) == ["a = 1", "b = 2"], what="the notebook in the page")
    first, second = [c["cellId"] for c in lab.ok("get_notebook_cells", pathInProject=name)["cells"]]
    cell = f"jupyter-mcp://notebook/{name}/cell/{{}}"
    notebook = f"jupyter-mcp://notebook/{name}"
    with (
        Subscriber(lab, [cell.format(first), cell.format(second), notebook]) as legacy,
        Subscriber(lab, [cell.format(second)], mode="auto") as modern,
    ):
        # When the user types in the second cell, without saving
        typed = type_into_cell(page, 1, "0")
        # Then both agents hear of that cell (and the legacy one of the notebook) at once
        wait_for(lambda: legacy.of(cell.format(second)) and modern.of(cell.format(second)))
        wait_for(lambda: legacy.of(notebook), what="the notebook's notification")
        latency = [(s.of(cell.format(second))[0] - typed) * 1000 for s in (legacy, modern)]
        print(
            f"{name}: typing told after {latency[0]:.0f} ms (legacy), {latency[1]:.0f} ms (listen)"
        )
        # ... and of nothing about the first cell; the file is still as saved
        time.sleep(1.0)
        assert legacy.of(cell.format(first)) == []
        # And the subscriber reads what the user typed, before any save
        read = lab.ok("get_notebook_cell", pathInProject=name, cellId=second)
        assert read["source"] == "b = 20"
        # Keystrokes in a burst are told at most twice a second, the last one included
        count = len(legacy.of(cell.format(second)))
        last = type_into_cell(page, 1, "123456789")
        wait_for(
            lambda: legacy.of(cell.format(second))[-1] >= last - 0.05,
            what="the burst's last keystroke to be told",
        )
        told = legacy.of(cell.format(second))[count:]
        # (Sent at least 0.5 s apart; received, the network's jitter may shorten a gap.)
        gaps = [b - a for a, b in zip(told, told[1:], strict=False)]
        assert all(gap >= 0.25 for gap in gaps), gaps
        assert len(told) <= 2 + (told[-1] - told[0]) / 0.5
        # An edit the legacy agent makes itself (through the window or the shared document)
        # is told to the listen stream, which has no session, but not back to that agent
        time.sleep(0.6)
        mine, theirs = len(legacy.of(cell.format(second))), len(modern.of(cell.format(second)))
        edited = legacy.call(
            "edit_notebook_cell", {"pathInProject": name, "cellId": second, "source": "b = 3"}
        )
        assert not edited.is_error, edited.content[0].text
        wait_for(lambda: cell_sources(page) == ["a = 1", "b = 3"], what="the agent's edit")
        wait_for(lambda: len(modern.of(cell.format(second))) > theirs, what="the listen stream")
        time.sleep(1.5)
        assert len(legacy.of(cell.format(second))) == mine
    if "collaboration" not in name:
        assert path.read_bytes() == before  # nothing was saved: it all went through the window


def test_the_users_typing_reaches_a_subscribed_agent_within_a_second(lab: Lab, page: Any) -> None:
    check_typing_reaches_the_subscribers(lab, page, "subscribed/n.ipynb")


def test_with_collaboration_the_users_typing_reaches_a_subscribed_agent(
    collab_lab: Lab, collab_page: Any
) -> None:
    check_typing_reaches_the_subscribers(collab_lab, collab_page, "subscribed/collaboration.ipynb")


# -- actions and approvals -------------------------------------------------------------------


def test_list_actions_and_save_with_one(lab: Lab, page: Any) -> None:
    actions = lab.ok("list_available_actions")
    ids = {a["id"]: a["text"] for a in actions}
    assert "docmanager:save" in ids and ids["docmanager:save"]
    assert all(a["text"] for a in actions)

    write(lab, "act/s.py", "before\n")
    open_in_editor(lab, page, "act/s.py")
    lab.ok("replace_current_file_text", text="after\n")
    assert lab.ok("execute_action_by_id", actionId="docmanager:save") == "ok"
    wait_for(lambda: (lab.root / "act/s.py").read_text() == "after\n", what="the save")
    assert lab.ok("execute_action_by_id", actionId="no-such:action") == "action not found"


def test_approval_dialog_reject_and_approve(lab: Lab, page: Any) -> None:
    write(lab, "appr/doc.py", "x = 1\n")
    open_in_editor(lab, page, "appr/doc.py")
    before = set(os.listdir(lab.root / "appr"))
    dialog = page.locator(".jp-MCP-approval-dialog")
    with ThreadPoolExecutor(1) as pool:
        # docmanager:duplicate copies the file on the server: it needs approval.
        pending = pool.submit(lab.call, "execute_action_by_id", actionId="docmanager:duplicate")
        dialog.wait_for(timeout=15000)
        assert "execute_action_by_id" in dialog.inner_text()
        assert 'actionId="docmanager:duplicate"' in dialog.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "approval-dialog.png"))
        dialog.get_by_role("button", name="Reject").click()
        answer = pending.result(timeout=30)
    assert answer["status"] is None
    assert "did not approve execute_action_by_id" in answer["error"]
    assert set(os.listdir(lab.root / "appr")) == before

    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(lab.call, "execute_action_by_id", actionId="docmanager:duplicate")
        dialog.wait_for(timeout=15000)
        dialog.get_by_role("button", name="Approve").click()
        answer = pending.result(timeout=30)
    assert answer == {"status": "ok", "error": None}
    wait_for(lambda: len(os.listdir(lab.root / "appr")) == len(before) + 1, what="the copy")


# -- file tools and the open editor ----------------------------------------------------------


def test_a_file_tool_write_reloads_the_open_editor(lab: Lab, page: Any) -> None:
    write(lab, "reload/r.py", "old = 1\n")
    open_in_editor(lab, page, "reload/r.py")
    lab.ok("rewrite_file_content", pathInProject="reload/r.py", text="new = 2\n")
    wait_for(lambda: editor_text(lab) == "new = 2\n", what="the reload")
    wait_for(
        lambda: "new = 2" in page.locator(".jp-FileEditor:visible .cm-content").inner_text(),
        what="the editor to show the new text",
    )


def test_a_file_with_unsaved_edits_is_never_overwritten(lab: Lab, page: Any) -> None:
    path = write(lab, "dirty/d.py", "disk = 1\n")
    open_in_editor(lab, page, "dirty/d.py")
    focus_file_editor(page)
    page.keyboard.press("Control+End")
    page.keyboard.type("mine = 2")
    wait_for(lambda: "mine = 2" in editor_text(lab), what="typing")
    time.sleep(0.2)  # the dirty flag reaches the server with the state report
    error = lab.fails("rewrite_file_content", pathInProject="dirty/d.py", text="agent = 3\n")
    assert "dirty/d.py has unsaved changes in JupyterLab; save or revert them first" in error
    assert path.read_text() == "disk = 1\n"
    assert editor_text(lab) == "disk = 1\nmine = 2"


# -- visibility ------------------------------------------------------------------------------


def test_status_bar_and_activity_panel_show_the_calls(lab: Lab, page: Any) -> None:
    write(lab, "vis/v.py", "v = 1\n")
    lab.ok("get_file_text_by_path", pathInProject="vis/v.py")
    lab.fails("get_file_text_by_path", pathInProject="vis/missing.py")
    status = page.locator(".jp-MCP-status")
    wait_for(lambda: "last: get_file_text_by_path (failed)" in status.inner_text(), what="status")
    assert status.inner_text().startswith("MCP: agent connected")
    status.click()
    panel = page.locator("#jupyter-mcp-activity")
    panel.wait_for(state="visible")
    items = panel.locator(".jp-MCP-activity-item")
    first = items.first.inner_text()
    assert "get_file_text_by_path" in first and "File not found: vis/missing.py" in first
    assert 'pathInProject="vis/v.py"' in items.nth(1).inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "activity-panel.png"))


#: Longer than any tool name the panel has to show: the route allows 128 characters.
LONG_TOOL = "a_tool_name_as_long_as_the_longest_plugin_tool_name_can_be_x" + "y" * 40

#: Entries (and their parts) whose content is wider than their box, or that stick out of their
#: entry or of the panel: what the user would see cut.
CUT_ENTRIES = """panel => {
  const cut = [];
  const box = panel.getBoundingClientRect();
  if (panel.scrollWidth > panel.clientWidth) cut.push(`panel: ${panel.scrollWidth}`);
  for (const item of panel.querySelectorAll('.jp-MCP-activity-item')) {
    const edge = item.getBoundingClientRect();
    const name = item.querySelector('.jp-MCP-activity-tool').textContent;
    for (const part of [item, ...item.querySelectorAll('*')]) {
      const rect = part.getBoundingClientRect();
      const label = `${name} ${part.className}`;
      if (part.clientWidth > 0 && part.scrollWidth > part.clientWidth) {
        cut.push(`${label}: scrollWidth ${part.scrollWidth} > clientWidth ${part.clientWidth}`);
      }
      if (rect.right > edge.right + 0.5 || rect.left < edge.left - 0.5) {
        cut.push(`${label}: outside its entry`);
      }
      if (rect.right > box.right + 0.5) cut.push(`${label}: outside the panel`);
    }
  }
  return cut;
}"""


def show_activity(page: Any) -> Any:
    page.locator(".jp-MCP-status").click()
    panel = page.locator("#jupyter-mcp-activity")
    panel.wait_for(state="visible")
    return panel


def test_activity_entries_fit_the_sidebar_with_long_names(lab: Lab, page: Any) -> None:
    write(lab, "fit/f.py", "f = 1\n")
    lab.call("get_open_in_editor_file_text")  # the name the panel used to cut
    lab.fails(
        "replace_file_content_at_position",
        pathInProject="fit/no/such/file/in/a/deep/folder/with/a/long/path/name.py",
        startLine=1,
        endLine=1,
        content="x" * 200,
    )
    lab.fails(LONG_TOOL)  # an unknown name is shown too, with its error
    panel = show_activity(page)
    items = panel.locator(".jp-MCP-activity-item")
    wait_for(lambda: LONG_TOOL in items.first.inner_text(), what="the long name in the panel")
    # At the sidebar's default width, every entry keeps its duration and time in view.
    width = panel.evaluate("panel => panel.clientWidth")
    assert 150 < width < 600, width
    assert panel.evaluate(CUT_ENTRIES) == []
    for index in range(3):
        assert re.search(r"\d+(\.\d+)? m?s · \d", items.nth(index).inner_text())
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "activity-long-names.png"))


def test_a_long_call_shows_as_running_until_it_ends(lab: Lab, page: Any) -> None:
    panel = show_activity(page)
    running = panel.locator(".jp-MCP-activity-item.jp-mod-running")
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(lab.call, "wait", milliseconds=4000)
        running.wait_for(timeout=15000)
        entry = running.first
        assert entry.locator(".jp-MCP-activity-tool").inner_text() == "wait"
        assert entry.locator(".jp-MCP-activity-result").inner_text() == "running…"
        shown = entry.locator(".jp-MCP-activity-duration")
        first = shown.inner_text()
        assert first.startswith("running ")
        wait_for(lambda: shown.inner_text() != first, what="the running time to advance")
        assert panel.evaluate(CUT_ENTRIES) == []
        assert not pending.done()  # still running while shown as running
        answer = pending.result(timeout=60)
    assert answer["error"] is None
    wait_for(lambda: running.count() == 0, what="the entry to show the outcome")
    # Its outcome took the running entry's place: one entry for the call.
    calls = panel.locator(".jp-MCP-activity-item", has_text="milliseconds=4000")
    assert calls.count() == 1
    assert calls.first.locator(".jp-MCP-activity-result").inner_text() == "ok"
    took = calls.first.locator(".jp-MCP-activity-duration").inner_text()
    assert re.fullmatch(r"\d\.\d\d s", took), took
    status = page.locator(".jp-MCP-status")
    wait_for(lambda: status.inner_text().endswith("last: wait"), what="the status bar")


# -- tool results in notebooks (the IPython extension) ---------------------------------------

SCREENSHOTS = REPO / "docs" / "screenshots"


def keep_screenshot(locator: Any, name: str) -> None:
    """A screenshot into test-artifacts/; with JUPYTER_MCP_SCREENSHOTS=1 also into the README's
    pictures (docs/screenshots/), which are otherwise left as they are."""
    ARTIFACTS.mkdir(exist_ok=True)
    locator.screenshot(path=str(ARTIFACTS / name))
    if os.environ.get("JUPYTER_MCP_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        (SCREENSHOTS / name).write_bytes((ARTIFACTS / name).read_bytes())


def test_magics_results_render_in_jupyterlab_with_the_views_renderers(lab: Lab, page: Any) -> None:
    from outputs_notebook import write_outputs_notebook

    (lab.root / "magics").mkdir()
    write_outputs_notebook(lab.root / "magics" / "outputs.ipynb")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)"}
    nb.cells = [
        nbformat.v4.new_code_cell(source)
        for source in (
            "%load_ext jupyter_mcp",
            "%mcp tools notebooks",
            "run = %mcp execute_notebook_cells pathInProject=magics/outputs.ipynb\nrun",
            "%mcp edit_notebook_cell pathInProject=magics/outputs.ipynb index=0 "
            "searchText=\"'c', 'a', 'b'\" replaceText=\"'c', 'a', 'z'\"",
            "%mcp get_kernel_variables pathInProject=magics/outputs.ipynb",
        )
    ]
    (lab.root / "magics" / "demo.ipynb").write_text(nbformat.writes(nb))
    try:
        # Run by the server, in the kernel it starts for the notebook: the extension finds it.
        lab.ok("execute_notebook_cells", pathInProject="magics/demo.ipynb", timeoutMs=240000)
    finally:
        for name in ("magics/demo.ipynb", "magics/outputs.ipynb"):
            lab.call("kernel_action", action="shutdown", pathInProject=name)
    page.evaluate(
        "() => { window.pwned = []; window.addEventListener('message', e => "
        "{ if (e.data && e.data.pwned) window.pwned.push(e.data.pwned); }); }"
    )
    open_in_editor(lab, page, "magics/demo.ipynb")
    panel = page.locator(".jp-NotebookPanel:visible")
    rendered = panel.locator(".jp-MCPView-rendered")
    wait_for(lambda: rendered.count() == 4, timeout=60, what="the four results, rendered")
    tools = rendered.nth(0)
    assert tools.locator("tbody tr").count() == 7  # the notebooks tool set
    # In the tool's order of keys, though the saved notebook sorted them.
    assert tools.locator("thead th").all_inner_texts()[:2] == ["toolset", "name"]
    run = rendered.nth(1)
    table = run.locator(".jp-MCPView-sortableTable")
    wait_for(lambda: table.count() == 1, what="the DataFrame as a sortable table")

    def first_column() -> list[str]:
        return table.locator("tbody tr td:nth-child(2)").all_inner_texts()

    assert first_column() == ["3", "1", "2"]
    table.locator("thead th").nth(1).click()
    assert first_column() == ["1", "2", "3"]
    chart = run.locator(".jp-MCPView-chart")
    wait_for(lambda: chart.locator("svg.marks").count() == 1, what="the Vega chart")
    wait_for(lambda: chart.locator(".main-svg").count() > 0, what="the Plotly chart")
    # Further down the notebook cells may not be laid out yet: their text, not their looks.
    error = run.locator(".jp-MCPView-errorName").text_content()
    assert error == "ZeroDivisionError: division by zero"
    assert run.locator("script, iframe, [onerror]").count() == 0
    assert rendered.nth(2).locator(".jp-MCPView-diffWordInserted").text_content() == "z"
    variables = rendered.nth(3).locator(".jp-MCPView-variables tbody td:first-child")
    assert "table" in variables.all_text_contents()
    time.sleep(1)
    assert page.evaluate("window.pwned") == [] and "pwned" not in page.title()
    # Room for the whole of a long cell (the notebook lays out what it shows), then back.
    page.set_viewport_size({"width": 1400, "height": 2600})
    try:
        keep_screenshot(panel.locator(".jp-Cell").nth(1), "magics-tools.png")
        keep_screenshot(panel.locator(".jp-Cell").nth(2), "magics-cell-outputs.png")
    finally:
        page.set_viewport_size({"width": 1400, "height": 900})


def start_task(lab: Lab, tool: str, arguments: dict[str, Any]) -> str:
    """Start ``tool`` as an MCP task in a 2025-11-25 session of its own, then end the session
    (the task outlives it); the task id."""
    headers = {
        "Authorization": f"token {TOKEN}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }

    def post(body: dict[str, Any], method: str = "POST") -> tuple[Any, dict[str, Any] | None]:
        request = urllib.request.Request(
            f"{lab.url}mcp", data=json.dumps(body).encode(), headers=headers, method=method
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read().decode()
            if response.headers.get("Content-Type", "").startswith("text/event-stream"):
                text = text.split("data:", 1)[1].split("\n\n", 1)[0]
            return response.headers, json.loads(text) if text.strip() else None

    opened, _ = post(initialize(client="browser-test"))
    headers["Mcp-Session-Id"] = opened["Mcp-Session-Id"]
    post(INITIALIZED)
    _, created = post(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "task": {"ttl": 600000}},
        }
    )
    assert created is not None and "result" in created, created
    request = urllib.request.Request(f"{lab.url}mcp", headers=headers, method="DELETE")
    urllib.request.urlopen(request, timeout=60).close()
    return str(created["result"]["task"]["taskId"])


def test_a_task_shows_as_running_with_what_runs_then_its_outcome(lab: Lab, page: Any) -> None:
    write_notebook(lab, "tasks/long.ipynb", [("markdown", "# A long run")])
    nb = nbformat.read(lab.root / "tasks/long.ipynb", as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import time\nfor i in range(8):\n    print('tick', i, flush=True)\n    time.sleep(1)"
        )
    )
    (lab.root / "tasks/long.ipynb").write_text(nbformat.writes(nb))
    panel = show_activity(page)
    task_id = start_task(lab, "execute_notebook_cells", {"pathInProject": "tasks/long.ipynb"})
    entry = panel.locator(f'.jp-MCP-activity-item[data-task-id="{task_id}"]')
    # The request that started it was answered and its session ended: the task shows running,
    # with what runs now (the cell's last line).
    running = panel.locator(f'.jp-MCP-activity-item.jp-mod-running[data-task-id="{task_id}"]')
    running.wait_for(timeout=60000)
    badge = running.locator(".jp-MCP-activity-task")
    assert badge.inner_text() == f"task {task_id[:8]} · working"
    result = running.locator(".jp-MCP-activity-result")
    wait_for(lambda: "tick" in result.inner_text(), timeout=60, what="the cell's output line")
    assert running.locator(".jp-MCP-activity-tool").inner_text() == "execute_notebook_cells"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "activity-task-running.png"))
    # Then its outcome, in the same entry.
    wait_for(lambda: running.count() == 0, timeout=90, what="the task to end")
    assert entry.count() == 1
    assert entry.locator(".jp-MCP-activity-task").inner_text() == f"task {task_id[:8]} · completed"
    assert entry.locator(".jp-MCP-activity-result").inner_text() == "ok"
    took = entry.locator(".jp-MCP-activity-duration").inner_text()
    assert re.fullmatch(r"\d+\.\d\d s", took) and float(took[:-2]) >= 8, took
    # The run it did is the task's: the same id follows it.
    assert lab.ok("get_execution", executionId=task_id)["status"] == "ok"


def wait_for_debugger_button(page: Any, bug: Any) -> None:
    """Wait until JupyterLab's debugger can be switched on for the visible notebook (its kernel
    is up and says it can debug); on a time-out, keep a screenshot of what the page showed."""
    try:
        # count() does not wait: is_enabled() alone would wait 30 s for the button and raise.
        wait_for(
            lambda: bug.count() > 0 and bug.is_enabled(),
            timeout=180,
            what="the debugger to be available",
        )
    except AssertionError:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "debugger-button-missing.png"))
        raise


# -- breakpoints and JupyterLab's debugger ----------------------------------------------------


def test_breakpoints_show_in_the_debugger_and_gutter_clicks_come_back(lab: Lab, page: Any) -> None:
    write_notebook(lab, "bp/n.ipynb", [("code", "a = 1\nb = 2"), ("code", "c = 3\nd = 4")])
    open_in_editor(lab, page, "bp/n.ipynb")
    view = lab.ok("get_file_text_by_path", pathInProject="bp/n.ipynb")["content"].splitlines()
    line_of = {text: index + 1 for index, text in enumerate(view)}
    # Given the debugger is on for the notebook (its kernel is started for it)
    bug = page.locator(".jp-NotebookPanel:visible .jp-DebuggerBugButton button")
    wait_for_debugger_button(page, bug)
    bug.click()
    cells = page.locator(".jp-NotebookPanel:visible .jp-CodeCell")
    wait_for(
        lambda: cells.nth(1).locator(".cm-breakpoint-gutter").count() > 0,
        timeout=30,
        what="the debugger gutter",
    )
    # When an agent sets a breakpoint on "d = 4", the second cell shows it on its line 2
    assert (
        lab.ok("toggle_debugger_breakpoint", pathInProject="bp/n.ipynb", line=line_of["d = 4"])
        == "Breakpoint added"
    )
    # (the gutter's hidden spacer holds an icon too)
    marker = cells.nth(1).locator(
        '.cm-gutterElement:not([style*="visibility: hidden"]) .cm-breakpoint-icon'
    )
    wait_for(lambda: marker.count() == 1, what="the breakpoint marker")
    # When the user clicks the gutter at "a = 1", the server's store gets that line
    cells.nth(0).locator(".cm-breakpoint-gutter .cm-gutterElement").nth(1).click()
    path = str(lab.root / "bp/n.ipynb")
    wait_for(
        lambda: (
            {b["line"] for b in lab.ok("get_debugger_breakpoints") if b["path"] == path}
            == {line_of["a = 1"], line_of["d = 4"]}
        ),
        what="the clicked breakpoint in the store",
    )
    # And removing it by tool clears the gutter
    lab.ok("toggle_debugger_breakpoint", pathInProject="bp/n.ipynb", line=line_of["d = 4"])
    wait_for(lambda: marker.count() == 0, what="the marker to go")


# -- several windows ---------------------------------------------------------------------------


def test_the_most_recently_used_window_is_the_editor(lab: Lab, page: Any) -> None:
    write(lab, "win/first.py", "first = 1\n")
    write(lab, "win/second.py", "second = 2\n")
    open_in_editor(lab, page, "win/first.py")
    other = page.context.browser.new_page()
    try:
        other.set_viewport_size({"width": 1400, "height": 900})
        other.goto(f"{lab.url}lab/tree/win/second.py?token={TOKEN}")
        other.wait_for_selector(".jp-MCP-status", timeout=90000)
        # The new window, showing second.py, is the editor once it reports.
        wait_for(
            lambda: lab.ok("get_open_in_editor_file_path") == str(lab.root / "win/second.py"),
            what="the second window to be the editor",
        )
        assert editor_text(lab) == "second = 2\n"
        # The user goes back to the first window and clicks into its editor.
        page.bring_to_front()
        focus_file_editor(page)
        wait_for(
            lambda: lab.ok("get_open_in_editor_file_path") == str(lab.root / "win/first.py"),
            what="the first window to be the editor again",
        )
        assert editor_text(lab) == "first = 1\n"
    finally:
        other.close()
    wait_for(lambda: editor_text(lab) == "first = 1\n", what="one window left")


async def _oauth_grant(lab: Lab) -> str:
    """A client registers itself, the user allows it (the consent page answered with the
    token), the client gets its access token and uses it once: that token."""
    from oauth_client import ClientSite, grant_by_hand

    site = ClientSite()
    try:
        tokens = await grant_by_hand(
            lab.url, TOKEN, site, client_name="Panel Test Connector", scope="mcp mcp:read"
        )
        access = str(tokens["access_token"])
        async with httpx2.AsyncClient(timeout=60) as http:
            used = await _mcp_tools_list(http, lab, access)
        assert used.status_code == 200, used.text
        return access
    finally:
        site.close()


async def _mcp_tools_list(http: Any, lab: Lab, access_token: str) -> Any:
    return await http.post(
        f"{lab.url}mcp",
        json=initialize(client="panel-test"),
        headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"},
    )


def test_the_activity_panel_lists_oauth_clients_and_revokes_them(lab: Lab, page: Any) -> None:
    with ThreadPoolExecutor(1) as pool:
        access = pool.submit(asyncio.run, _oauth_grant(lab)).result()
    panel = show_activity(page)
    # A call (the panel asks for the grants again after calls, and when it is shown).
    write(lab, "oauth/o.py", "o\n")
    lab.ok("get_file_text_by_path", pathInProject="oauth/o.py")
    grant = panel.locator(".jp-MCP-grant", has_text="Panel Test Connector")
    wait_for(lambda: grant.count() == 1, timeout=30, what="the grant in the activity panel")
    shown = grant.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "activity-oauth-clients.png"))

    grant.locator(".jp-MCP-grant-revoke").click()
    wait_for(lambda: grant.count() == 0, timeout=30, what="the grant to go")

    async def after() -> Any:
        async with httpx2.AsyncClient(timeout=60) as http:
            return await _mcp_tools_list(http, lab, access)

    with ThreadPoolExecutor(1) as pool:
        refused = pool.submit(asyncio.run, after()).result()
    assert "registered itself" in shown
    assert "may use read-only tools of every tool set (mcp mcp:read)" in shown
    assert "last used" in shown and "last used never" not in shown
    assert refused.status_code == 401
    assert "revoked" in refused.headers["WWW-Authenticate"]


# -- last: the server restarts -----------------------------------------------------------------


def test_the_window_reconnects_after_a_server_restart(lab: Lab, page: Any) -> None:
    write(lab, "restart/x.py", "x = 1\n")
    open_in_editor(lab, page, "restart/x.py")
    lab.restart()
    status = page.locator(".jp-MCP-status")
    wait_for(lambda: "offline" not in status.inner_text(), timeout=30, what="the reconnection")
    # The window reported its state again: the restarted server knows the active editor.
    wait_for(
        lambda: lab.ok("get_open_in_editor_file_path") == str(lab.root / "restart/x.py"),
        what="the state after reconnecting",
    )
    assert editor_text(lab) == "x = 1\n"


@pytest.fixture
def fresh_lab(tmp_path: Path) -> Iterator[Lab]:
    """A JupyterLab of its own: the module's page holds many notebooks and kernels by the end,
    and on a loaded machine JupyterLab then took minutes to offer its debugger for one more."""
    yield from _run_lab(tmp_path)


@pytest.fixture
def fresh_page(fresh_lab: Lab, browser: Any) -> Iterator[Any]:
    yield from _browse(browser, fresh_lab)


def test_jupyterlabs_debugger_marks_the_line_where_the_agent_stopped(
    fresh_lab: Lab, fresh_page: Any
) -> None:
    lab, page = fresh_lab, fresh_page
    write_notebook(
        lab,
        "dbg/n.ipynb",
        [("code", "def f(x):\n    y = x * 2\n    return y"), ("code", "f(21)")],
    )
    open_in_editor(lab, page, "dbg/n.ipynb")
    view = lab.ok("get_file_text_by_path", pathInProject="dbg/n.ipynb")["content"].splitlines()
    line = view.index("    y = x * 2") + 1
    # Given the user has JupyterLab's debugger on for the notebook
    bug = page.locator(".jp-NotebookPanel:visible .jp-DebuggerBugButton button")
    wait_for_debugger_button(page, bug)
    bug.click()
    cells = page.locator(".jp-NotebookPanel:visible .jp-CodeCell")
    wait_for(
        lambda: cells.nth(0).locator(".cm-breakpoint-gutter").count() > 0,
        timeout=30,
        what="the debugger gutter",
    )
    assert lab.ok("toggle_debugger_breakpoint", pathInProject="dbg/n.ipynb", line=line)
    # When the agent starts its session, it shares the user's debugger
    started = lab.ok("debug_session", action="start", pathInProject="dbg/n.ipynb")
    assert started["shared"] is True and "the user is debugging" in started["message"]
    cell_ids = [
        c["cellId"] for c in lab.ok("get_notebook_cells", pathInProject="dbg/n.ipynb")["cells"]
    ]
    done = lab.ok(
        "debug_session", action="run_cell", pathInProject="dbg/n.ipynb", cellId=cell_ids[0]
    )
    assert done["state"] == "finished"
    stopped = lab.ok(
        "debug_session", action="run_cell", pathInProject="dbg/n.ipynb", cellId=cell_ids[1]
    )
    assert stopped["state"] == "stopped" and stopped["where"]["cellId"] == cell_ids[0]
    # Then JupyterLab's debugger marks that line of the first cell as where the code is stopped
    current = cells.nth(0).locator(".cm-line.jp-DebuggerEditor-highlight")
    wait_for(lambda: current.count() == 1, timeout=30, what="the stopped line's highlight")
    assert current.inner_text() == "    y = x * 2"
    # and when the agent ends its session, the cell finishes and the mark goes
    ended = lab.ok("debug_session", action="stop", pathInProject="dbg/n.ipynb")
    assert ended["run"]["state"] == "finished"
    assert ended["run"]["outputs"][0]["text"] == "42"
    wait_for(lambda: current.count() == 0, timeout=30, what="the highlight to go")
    lab.ok("toggle_debugger_breakpoint", pathInProject="dbg/n.ipynb", line=line)
