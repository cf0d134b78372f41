"""The view pages in headless Chromium, driven by a host that speaks the Apps protocol with the
Apps SDK's own host side (see apps_host.py), fed REAL tool results of this server.

What a user would notice is checked: the DataFrame is a table that sorts, the picture shows,
the error has its traceback, the charts are drawn from their JSON — and that an output's
``<script>``, its ``onerror=`` handler and its SVG's script never run, and that showing all of
it makes not one network request (every request the page makes is counted, and refused).

Screenshots go to ``test-artifacts/``; with ``JUPYTER_MCP_SCREENSHOTS=1`` they also replace
the README's pictures in ``docs/screenshots/``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import git
import nbformat
import pytest
from apps_host import esbuild_missing, host_page
from chromium import CHROMIUM, CHROMIUM_ARGS, require_chromium, skip_or_fail
from outputs_notebook import write_outputs_notebook

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
SCREENSHOTS = REPO / "docs" / "screenshots"


async def keep_screenshot(host: Host, name: str) -> None:
    """A picture of the view as the host shows it (the whole of its height)."""
    frame = host.page.locator("iframe")
    box = await frame.bounding_box()
    # An iframe's content outside the viewport is not painted: make room for all of it.
    await host.page.set_viewport_size({"width": 1000, "height": int(box["height"]) + 20})
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_bytes(await frame.screenshot())
    if os.environ.get("JUPYTER_MCP_SCREENSHOTS"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / name, SCREENSHOTS / name)


def wire(result: Any) -> dict[str, Any]:
    """A result as it travels (what a host hands its view)."""
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


class Host:
    """The host page in Chromium, every request it (or its view) makes kept and refused."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.requests: list[str] = []
        self.console: list[str] = []

    @classmethod
    async def open(cls, browser: Any) -> Host:
        page = await browser.new_page(viewport={"width": 1000, "height": 800})
        host = cls(page)

        async def refuse(route: Any) -> None:
            host.requests.append(route.request.url)
            await route.abort()

        await page.route("**/*", refuse)
        page.on("console", lambda message: host.console.append(f"{message.type}: {message.text}"))
        await page.set_content(host_page())
        return host

    async def show(self, html: str, arguments: dict[str, Any], result: Any) -> Any:
        """Show a view page with one tool result; the view's frame once it drew it."""
        await self.page.evaluate(
            "view => showView(view)",
            {"html": html, "toolInput": arguments, "toolResult": wire(result)},
        )
        await self.page.wait_for_function("window.host.initialized", timeout=30000)
        frame = next(f for f in self.page.frames if f is not self.page.main_frame)
        await frame.wait_for_selector("#root > :not(.jp-MCPView-note)", timeout=30000)
        return frame

    def network_requests(self) -> list[str]:
        """What the page and its view asked for, other than documents inside themselves."""
        return [url for url in self.requests if not url.startswith(("data:", "about:"))]

    def csp_violations(self) -> list[str]:
        return [line for line in self.console if "Content Security Policy" in line]


@asynccontextmanager
async def host_in_chromium() -> AsyncIterator[Host]:
    """A host page in a Chromium of its own (launched per test: the server is per test too)."""
    require_chromium()
    reason = esbuild_missing()
    if reason:
        skip_or_fail(reason)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield await Host.open(browser)
        finally:
            await browser.close()


async def page_of(client: Any, uri: str) -> str:
    return (await client.read_resource(uri)).contents[0].text


async def column(frame: Any, table: str, index: int) -> list[str]:
    return await frame.eval_on_selector_all(
        f"{table} tbody tr",
        f"rows => rows.filter(r => !r.hidden).map(r => r.cells[{index}].textContent.trim())",
    )


async def test_cell_outputs_page_shows_every_output_and_runs_nothing_from_them(
    connect, jp_root_dir
):
    write_outputs_notebook(jp_root_dir / "outputs.ipynb")
    arguments = {"pathInProject": "outputs.ipynb", "timeoutMs": 120000}
    async with connect("legacy", views=True) as client:
        run = await client.call_tool("execute_notebook_cells", arguments)
        html = await page_of(client, "ui://jupyter-mcp/cell-outputs")
    async with host_in_chromium() as host:
        frame = await host.show(html, arguments, run)
        await frame.wait_for_selector(".jp-MCPView-chart svg.marks", timeout=30000)  # Vega-Lite
        await frame.wait_for_selector(".jp-MCPView-chart .main-svg", timeout=30000)  # Plotly

        # The DataFrame: a table whose columns sort, numbers as numbers.
        table = ".jp-MCPView-sortableTable"
        assert await column(frame, table, 1) == ["3", "1", "2"]
        await frame.click(f"{table} thead th:nth-child(2)")
        assert await column(frame, table, 1) == ["1", "2", "3"]
        assert await column(frame, table, 2) == ["a", "b", "c"]
        await frame.click(f"{table} thead th:nth-child(2)")
        assert await column(frame, table, 1) == ["3", "2", "1"]
        await frame.click(f"{table} thead th:nth-child(2)")
        assert await column(frame, table, 1) == ["3", "1", "2"]  # as it came

        # The PNG (from the result's image block) and the SVG, as pictures.
        pictures = await frame.eval_on_selector_all(
            "img.jp-MCPView-picture", "imgs => imgs.map(i => [i.src.slice(0, 22), i.naturalWidth])"
        )
        assert ["data:image/png;base64,", 120] in pictures
        assert ["data:image/svg+xml;bas", 40] in pictures

        # The hostile HTML: its text and link text stay, nothing of it can run or load.
        hostile = frame.locator("[data-jupyter-id='hostile']")
        assert await hostile.inner_text() == "Bold text and a link."
        link = hostile.locator("a")
        assert await link.get_attribute("href") is None
        assert await link.get_attribute("title") == "https://example.com/page"
        found = await frame.evaluate(
            """() => ({
                scripts: document.querySelectorAll('#root script').length,
                handlers: [...document.querySelectorAll('#root *')].filter(
                    e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
                iframes: document.querySelectorAll('#root iframe').length,
                outside: [...document.querySelectorAll('#root [src], #root [href], #root [srcset]')]
                    .map(e => ['src', 'href', 'srcset'].map(a => e.getAttribute(a)).find(Boolean))
                    .filter(v => !v.startsWith('data:') && !v.startsWith('#')),
                styled: [...document.querySelectorAll('#root [style]')]
                    .filter(e => /url\\(/.test(e.getAttribute('style'))).length,
                title: document.title,
            })"""
        )
        assert found == {
            "scripts": 0,
            "handlers": 0,
            "iframes": 0,
            "outside": [],
            "styled": 0,
            "title": "Cell outputs · jupyter-mcp",
        }

        # Markdown rendered (its link and picture without their addresses), LaTeX as its text.
        markdown = frame.locator(".jp-MCPView-markdown")
        assert await markdown.locator("strong").inner_text() == "Markdown"
        assert await markdown.locator("a").get_attribute("href") is None
        assert await markdown.locator("img").get_attribute("src") is None
        assert await frame.inner_text(".jp-MCPView-latex") == "$\\alpha^2 + \\beta$"

        # Colours of a stream and of the traceback.
        assert await frame.inner_text(".jp-MCPView-stream .jp-MCPView-ansi-fg-red") == "red"
        error = await frame.inner_text(".jp-MCPView-errorName")
        assert error == "ZeroDivisionError: division by zero"
        traceback = await frame.inner_text(".jp-MCPView-traceback")
        assert "1 / 0" in traceback and "\x1b" not in traceback
        coloured = frame.locator(".jp-MCPView-traceback span[class*='jp-MCPView-ansi-fg']")
        assert await coloured.count() > 0

        # The charts: three Vega-Lite bars, one Plotly line.
        assert await frame.locator(".jp-MCPView-chart svg.marks .mark-rect path").count() == 3
        assert await frame.locator(".jp-MCPView-chart .scatterlayer .trace").count() == 1

        await asyncio.sleep(1)  # time for anything that would run late (an onerror, a timer)
        assert await host.page.evaluate("window.host.pwned") == []
        assert host.network_requests() == []
        assert host.csp_violations() == []
        sizes = await host.page.evaluate("window.host.sizes")
        assert sizes and sizes[-1][1] > 500  # the view reported its height; the host follows it
        await keep_screenshot(host, "view-cell-outputs.png")


async def test_variables_page_is_a_table_that_sorts_and_filters(connect, jp_root_dir):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import pandas as pd\n"
            "sales = pd.DataFrame({'region': ['north', 'south'], 'total': [120, 80]})\n"
            "names = ['ada', 'grace', 'linus']\n"
            "rate = 0.25\n"
            "title = 'Quarterly report'"
        )
    ]
    (jp_root_dir / "vars.ipynb").write_text(nbformat.writes(nb))
    arguments = {"pathInProject": "vars.ipynb"}
    async with connect("auto", views=True) as client:
        await client.call_tool("execute_notebook_cells", arguments)
        listed = await client.call_tool("get_kernel_variables", arguments)
        html = await page_of(client, "ui://jupyter-mcp/variables")
    async with host_in_chromium() as host:
        frame = await host.show(html, arguments, listed)
        table = ".jp-MCPView-variables table"
        assert sorted(await column(frame, table, 0)) == ["names", "rate", "sales", "title"]
        await frame.click(f"{table} thead th:nth-child(1)")
        assert await column(frame, table, 0) == ["names", "rate", "sales", "title"]
        await frame.click(f"{table} thead th:nth-child(1)")
        assert await column(frame, table, 0) == ["title", "sales", "rate", "names"]
        sizes = dict(zip(await column(frame, table, 0), await column(frame, table, 2), strict=True))
        assert sizes["sales"] == "2 × 2" and sizes["names"] == "3"
        await frame.fill(".jp-MCPView-filter", "dataframe")
        assert await column(frame, table, 0) == ["sales"]
        assert await frame.inner_text(".jp-MCPView-count") == "1 of 4 variables"
        await frame.fill(".jp-MCPView-filter", "")
        assert len(await column(frame, table, 0)) == 4
        assert host.network_requests() == [] and host.csp_violations() == []
        await keep_screenshot(host, "view-variables.png")


async def test_diff_page_shows_edits_side_by_side(connect, jp_root_dir):
    repo = git.Repo.init(jp_root_dir)
    module = jp_root_dir / "shapes.py"
    module.write_text(
        "def area(width, height):\n    return width * height\n\n\n"
        "def perimeter(width, height):\n    return 2 * (width + height)\n"
    )
    repo.index.add(["shapes.py"])
    repo.index.commit("shapes")
    module.write_text(
        "def area(width, height):\n    return width * height\n\n\n"
        "def perimeter(width, height):\n    return 2 * width + 2 * height\n\n\n"
        "def square(side):\n    return area(side, side)\n"
    )
    arguments = {"pathInProject": "shapes.py"}
    async with connect("legacy", views=True) as client:
        diff = await client.call_tool("get_file_diff", arguments)
        html = await page_of(client, "ui://jupyter-mcp/diff")
    async with host_in_chromium() as host:
        frame = await host.show(html, arguments, diff)
        assert await frame.inner_text(".jp-MCPView-diffHeader") == "shapes.py\n+5 −1"
        changed = frame.locator(".jp-MCPView-diffRow-change").first
        cells = await changed.locator("td").all_inner_texts()
        assert cells == [
            "6",
            "    return 2 * (width + height)",
            "6",
            "    return 2 * width + 2 * height",
        ]
        assert await changed.locator(".jp-MCPView-diffWordInserted").count() > 0
        right = frame.locator(".jp-MCPView-diffRow-insert td:nth-child(4)")
        inserted = await right.all_inner_texts()
        assert "def square(side):" in inserted
        assert host.network_requests() == [] and host.csp_violations() == []
        await keep_screenshot(host, "view-diff.png")


async def test_a_page_shows_the_error_of_a_failed_call(connect):
    async with connect("legacy", views=True) as client:
        failed = await client.call_tool("get_notebook_cell", {"pathInProject": "missing.ipynb"})
        html = await page_of(client, "ui://jupyter-mcp/cell-outputs")
    assert failed.is_error
    async with host_in_chromium() as host:
        frame = await host.show(html, {"pathInProject": "missing.ipynb"}, failed)
        assert "missing.ipynb" in await frame.inner_text(".jp-MCPView-error")
        assert host.network_requests() == []


def test_screenshots_are_named_as_the_readme_shows_them():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in ("view-cell-outputs.png", "view-variables.png", "view-diff.png"):
        assert f"docs/screenshots/{name}" in readme
        assert (SCREENSHOTS / name).is_file(), f"{name}: run with JUPYTER_MCP_SCREENSHOTS=1"
