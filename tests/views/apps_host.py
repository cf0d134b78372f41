"""A test page that plays the host of the MCP Apps protocol, with the Apps SDK's own host side.

The page (``HOST_PAGE``) embeds a view page in a sandboxed ``<iframe srcdoc>`` (scripts only,
an opaque origin: as a chat client shows it) and connects to it with ``AppBridge`` and
``PostMessageTransport`` from ``@modelcontextprotocol/ext-apps`` (the tests' npm tools),
bundled here by the labextension's esbuild. ``await page.evaluate("showView(...)")`` gives the
view the tool's arguments and its real result once the view said it is initialized; what the
view reports (its sizes) and any message saying an output's script ran are kept in
``window.host``.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path

from npm_tools import REPO, npm_tools

ESBUILD = REPO / "labextension" / "node_modules" / ".bin" / "esbuild"

HOST_SCRIPT = """
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

window.host = { sizes: [], pwned: [], initialized: false, log: [] };
window.addEventListener('message', event => {
  if (event.data && event.data.pwned) {
    window.host.pwned.push(String(event.data.pwned));
  }
});

window.showView = async ({ html, toolInput, toolResult, hostContext }) => {
  const iframe = document.createElement('iframe');
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.width = '100%';
  iframe.style.border = '0';
  document.body.appendChild(iframe);
  const bridge = new AppBridge(
    null,
    { name: 'jupyter-mcp-test-host', version: '1.0.0' },
    { openLinks: {}, logging: {} },
    { hostContext: hostContext || { theme: 'light', displayMode: 'inline' } }
  );
  bridge.onsizechange = ({ width, height }) => {
    window.host.sizes.push([width, height]);
    if (height) {
      iframe.style.height = `${height}px`;
    }
  };
  bridge.oninitialized = async () => {
    window.host.initialized = true;
    await bridge.sendToolInput({ arguments: toolInput });
    await bridge.sendToolResult(toolResult);
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  iframe.srcdoc = html;
  window.host.bridge = bridge;
};
"""


@lru_cache(maxsize=1)
def host_bundle() -> str:
    """The host script, bundled (once per test run) from the Apps SDK in the npm tools."""
    tools = npm_tools("the view page tests need the MCP Apps SDK (@modelcontextprotocol/ext-apps)")
    build = tools / "apps-host"
    build.mkdir(exist_ok=True)
    entry = build / "host.js"
    entry.write_text(HOST_SCRIPT, encoding="utf-8")
    out = build / "host.bundle.js"
    done = subprocess.run(
        [str(ESBUILD), str(entry), "--bundle", "--format=iife", f"--outfile={out}"],
        env={**os.environ, "NODE_PATH": str(tools / "node_modules")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"bundling the test host failed:\n{done.stderr}"
    return out.read_text(encoding="utf-8")


def host_page() -> str:
    """The host page's HTML (no request is needed to load it)."""
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>host</title></head>"
        "<body style='margin:0;background:#fff'><script>"
        + host_bundle().replace("</script", "<\\/script")
        + "</script></body></html>"
    )


def esbuild_missing() -> str | None:
    """Why the host cannot be bundled, or None."""
    if not Path(ESBUILD).exists():
        return "the labextension's npm dependencies are not installed (make labextension)"
    return None
