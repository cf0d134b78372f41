"""A notebook whose cells make every kind of output a view shows, the hostile ones included.

Run in a real kernel, it gives: a DataFrame (HTML and text), a PNG, an HTML output carrying a
``<script>``, an ``onerror=`` handler and pictures from the network, Markdown, an SVG with a
script of its own, LaTeX, coloured text, a Vega-Lite and a Plotly chart with their data inside,
and a ZeroDivisionError with its traceback. Shared by the server-side view tests and the
Chromium tests of the pages.
"""

from __future__ import annotations

from pathlib import Path

import nbformat


def _png(width: int = 120, height: int = 60) -> str:
    """A PNG (a colour gradient), base64: a picture output of a known size."""
    import base64
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(
        b"\x00" + b"".join(bytes((x * 255 // width, y * 255 // height, 160)) for x in range(width))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
    return base64.b64encode(png + chunk(b"IEND", b"")).decode()


#: A 120x60 PNG.
PNG = _png()

#: What the hostile HTML output would do if it ran or loaded anything.
HOSTILE_HTML = (
    "<p id='hostile'><b>Bold</b> text and a <a href='https://example.com/page'>link</a>.</p>"
    "<script>window.parent.postMessage({pwned: 'script'}, '*'); document.title = 'pwned';"
    "</script>"
    "<img src='x' onerror=\"window.parent.postMessage({pwned: 'onerror'}, '*')\">"
    "<img src='https://example.com/tracker.png' alt='tracker'>"
    "<div style=\"background-image: url('https://example.com/bg.png')\">styled</div>"
    "<iframe src='https://example.com/frame'></iframe>"
)

SVG = (
    "<svg xmlns='http://www.w3.org/2000/svg' width='40' height='40'>"
    "<script>parent.postMessage({pwned: 'svg'}, '*')</script>"
    "<image href='https://example.com/svg.png' width='10' height='10'/>"
    "<circle cx='20' cy='20' r='15' fill='teal'/></svg>"
)

VEGA_LITE = {
    "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
    "data": {"values": [{"x": "a", "y": 3}, {"x": "b", "y": 7}, {"x": "c", "y": 5}]},
    "mark": "bar",
    "encoding": {
        "x": {"field": "x", "type": "nominal"},
        "y": {"field": "y", "type": "quantitative"},
    },
}

PLOTLY = {
    "data": [{"type": "scatter", "x": [1, 2, 3], "y": [2, 1, 3], "mode": "lines+markers"}],
    "layout": {"title": {"text": "a line"}, "width": 400, "height": 300},
}

CELLS = [
    "import pandas as pd\ntable = pd.DataFrame({'n': [3, 1, 2], 'name': ['c', 'a', 'b']})\ntable",
    f"import base64\nfrom IPython.display import Image, display\n"
    f"display(Image(data=base64.b64decode({PNG!r})))",
    f"from IPython.display import HTML\nHTML({HOSTILE_HTML!r})",
    "from IPython.display import Latex, Markdown, SVG, display\n"
    "display(Markdown('**Markdown** with a [link](https://example.com) and "
    "![a picture](https://example.com/md.png)'))\n"
    f"display(SVG({SVG!r}))\n"
    "display(Latex(r'$\\alpha^2 + \\beta$'))",
    "print('\\x1b[31mred\\x1b[0m and plain')",
    f"display({{'application/vnd.vegalite.v5+json': {VEGA_LITE!r}, 'text/plain': 'chart'}}, "
    "raw=True)",
    f"display({{'application/vnd.plotly.v1+json': {PLOTLY!r}, 'text/plain': 'figure'}}, raw=True)",
    "1 / 0",
]


def write_outputs_notebook(path: Path) -> Path:
    """Write the notebook (cells not run) to ``path``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    path.write_text(nbformat.writes(nb), encoding="utf-8")
    return path
