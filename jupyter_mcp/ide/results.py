"""Tool results in a notebook: Python data that shows itself the way the views show it.

A result is the tool's value (a ``list``, ``dict`` or ``str`` — subclasses of them, so they
are used as the data they are) that displays with three representations:

- ``application/vnd.jupyter-mcp.result+json``: the value and the result's pictures and view
  data, which JupyterLab (with this package's labextension) draws with the MCP Apps views'
  renderers — sortable tables, side-by-side diffs, the cell outputs, pictures;
- ``text/html``: a plain rendering for other frontends (everything escaped: no HTML from a
  notebook output is ever passed on);
- ``text/plain``: an aligned table, a diff, the text.
"""

from __future__ import annotations

import difflib
import html
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..views.catalog import VIEW_DATA_KEY
from .client import Answer

#: The MIME type the labextension renders results of.
MIME_TYPE = "application/vnd.jupyter-mcp.result+json"

#: Rows a text or HTML fallback shows of a long list; characters of one cell.
ROWS = 200
CELL = 300
#: Base64 characters of pictures the HTML fallback carries (the rich view has them all).
PICTURES = 2_000_000


class _Shown:
    """What makes a result display itself (mixed into the list, dict and str results)."""

    _answer: Answer

    @property
    def answer(self) -> Answer:
        """The whole answer: tool, value, and the result's pictures and view data."""
        return self._answer

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return bundle(self._answer)


class ResultList(_Shown, list):
    """A tool's answer that is a list."""


class ResultDict(_Shown, dict):
    """A tool's answer that is an object."""


class ResultText(_Shown, str):
    """A tool's answer that is text."""

    __slots__ = ("_answer",)


def shown(answer: Answer) -> Any:
    """The answer's value, made to display itself (see the module docstring)."""
    value = answer.value
    result: Any
    if isinstance(value, list):
        result = ResultList(value)
    elif isinstance(value, dict):
        result = ResultDict(value)
    elif isinstance(value, str):
        result = ResultText(value)
    else:
        return value
    result._answer = answer
    return result


def bundle(answer: Answer) -> dict[str, Any]:
    """The MIME bundle of an answer."""
    data: dict[str, Any] = {"tool": answer.tool, "value": answer.value, "result": answer.result}
    order = key_order(answer.value)
    if order:
        data["order"] = order
    return {MIME_TYPE: data, "text/html": html_of(answer), "text/plain": text_of(answer)}


def key_order(value: Any) -> dict[str, Any] | None:
    """The order of the keys the answer's tables show, as the tool gave them: a notebook
    saves JSON with its keys sorted, so the order is kept beside the value.

    ``{"columns": [...]}`` for a list of objects; ``{"fields": [...], "columns": {field:
    [...]}}`` for an object (and the lists of objects in it).
    """
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return {"columns": _columns(value)}
    if isinstance(value, dict):
        nested = {
            key: _columns(item)
            for key, item in value.items()
            if isinstance(item, list) and item and all(isinstance(v, dict) for v in item)
        }
        order: dict[str, Any] = {"fields": list(value)}
        if nested:
            order["columns"] = nested
        return order
    return None


def view_data(answer: Answer) -> dict[str, Any] | None:
    """The data of the answer's view, if it has one."""
    data = (answer.result.get("_meta") or {}).get(VIEW_DATA_KEY)
    return data if isinstance(data, dict) and "view" in data else None


def _images(answer: Answer) -> list[dict[str, Any]]:
    return [b for b in answer.result.get("content") or [] if b.get("type") == "image"]


#: The colour sequences the view data keeps in texts (the server dropped every other escape).
_COLOURS = re.compile(r"\x1b\[[0-9;]*m")


def _plain(text: str) -> str:
    return _COLOURS.sub("", text)


def _cut(text: str, limit: int = CELL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(key for row in rows for key in row))


def _is_diff(text: str) -> bool:
    return text.startswith(("diff --git ", "--- ")) or "\n@@ -" in text


def _unified(files: Iterable[Mapping[str, Any]]) -> str:
    """The files of a diff view's data as one unified diff."""
    parts = []
    for file in files:
        if "patch" in file:
            parts.append(str(file["patch"]))
        elif "before" in file:
            name = str(file.get("path", ""))
            parts.append(
                "".join(
                    difflib.unified_diff(
                        str(file["before"]).splitlines(keepends=True),
                        str(file["after"]).splitlines(keepends=True),
                        f"{name} (before)",
                        f"{name} (after)",
                    )
                )
            )
    return "\n".join(parts)


# -- text/plain -----------------------------------------------------------------------------


def _text_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    shown_rows = rows[:ROWS]
    cells = [
        [_cut(_cell(row.get(c)).replace("\n", " "), 60) for c in columns] for row in shown_rows
    ]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    if len(rows) > ROWS:
        lines.append(f"… {len(rows) - ROWS} more")
    return "\n".join(lines)


def text_of(answer: Answer) -> str:
    """The answer as plain text."""
    value = answer.value
    data = view_data(answer)
    if data is not None and data["view"] == "diff":
        return _unified(data.get("files") or []) or "No differences."
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return _text_table(value, _columns(value))
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=1, ensure_ascii=False)


# -- text/html ------------------------------------------------------------------------------

_TABLE = "border-collapse:collapse;font-size:12px"
_TD = "border:1px solid #d1d9e0;padding:2px 6px;text-align:left;vertical-align:top"


def _html_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "".join(f'<th style="{_TD}">{html.escape(c)}</th>' for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{_TD}"><code>{html.escape(_cut(_cell(row.get(c))))}</code></td>'
            for c in columns
        )
        + "</tr>"
        for row in rows[:ROWS]
    )
    more = f"<p>… {len(rows) - ROWS} more</p>" if len(rows) > ROWS else ""
    return (
        f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}'
    )


def _html_diff(text: str) -> str:
    colours = {"+": "#dafbe1", "-": "#ffebe9", "@": "#eef1f4"}
    lines = []
    for line in text.splitlines():
        colour = colours.get(line[:1]) if not line.startswith(("+++", "---")) else None
        style = f' style="background:{colour}"' if colour else ""
        lines.append(f"<span{style}>{html.escape(line)}</span>")
    return '<pre style="font-size:12px">' + "\n".join(lines) + "</pre>"


def _html_pre(text: str) -> str:
    return f'<pre style="font-size:12px;white-space:pre-wrap">{html.escape(text)}</pre>'


def _html_value(value: Any) -> str:
    if isinstance(value, str):
        return _html_diff(value) if _is_diff(value) else _html_pre(value)
    if isinstance(value, list):
        if value and all(isinstance(v, dict) for v in value):
            return _html_table(value, _columns(value))
        return _html_table([{"value": v} for v in value], ["value"])
    if isinstance(value, dict):
        scalars = []
        parts = []
        for key, item in value.items():
            if key == "diff" and isinstance(item, str):
                parts.append(_html_diff(item))
            elif isinstance(item, list) and item and all(isinstance(v, dict) for v in item):
                parts.append(
                    f"<p><b>{html.escape(key)}</b></p>" + _html_table(item, _columns(item))
                )
            else:
                scalars.append({"field": key, "value": item})
        return (_html_table(scalars, ["field", "value"]) if scalars else "") + "".join(parts)
    return _html_pre(_cell(value))


def _picture(mime: str, data: str, budget: list[int]) -> str:
    if len(data) > budget[0]:
        return "<p><i>(a picture: shown in JupyterLab with jupyter-mcp's extension)</i></p>"
    budget[0] -= len(data)
    return f'<img src="data:{html.escape(mime)};base64,{html.escape(data)}" style="max-width:100%">'


def _html_cells(data: dict[str, Any], answer: Answer, budget: list[int]) -> str:
    """The cell-outputs view as plain HTML: texts and pictures, never an output's own HTML."""
    images = _images(answer)
    parts = []
    for cell in data.get("cells") or []:
        count = cell.get("executionCount")
        title = f"[{count if count is not None else ' '}]: cell {cell.get('cellId') or ''}"
        status = cell.get("status")
        if status and status != "ok":
            title += f" · {status}"
        parts.append(
            f'<p style="margin:6px 0 2px;color:#59636e"><code>{html.escape(title)}</code></p>'
        )
        for output in cell.get("outputs") or []:
            kind = output.get("outputType")
            if kind == "stream":
                parts.append(_html_pre(_plain(output.get("text", ""))))
            elif kind == "error":
                text = _plain("\n".join(output.get("traceback") or []))
                head = f"{output.get('ename')}: {output.get('evalue')}"
                parts.append(
                    '<div style="background:#ffebe9;padding:2px 6px">'
                    f'<b style="color:#b62324">{html.escape(head)}</b>{_html_pre(text)}</div>'
                )
            else:
                shown_data = output.get("data") or {}
                index = output.get("contentImage")
                if isinstance(index, int) and 0 <= index < len(images):
                    block = images[index]
                    parts.append(_picture(block["mimeType"], block["data"], budget))
                elif "image/png" in shown_data:
                    parts.append(_picture("image/png", shown_data["image/png"], budget))
                elif "text/plain" in shown_data:
                    parts.append(_html_pre(_plain(shown_data["text/plain"])))
    return "".join(parts)


def html_of(answer: Answer) -> str:
    """The answer as plain, escaped HTML (for frontends without the labextension)."""
    budget = [PICTURES]
    data = view_data(answer)
    if data is not None and data["view"] == "cell-outputs":
        body = _html_cells(data, answer, budget)
    elif data is not None and data["view"] == "diff":
        body = _html_diff(_unified(data.get("files") or []) or "No differences.")
    else:
        body = _html_value(answer.value)
        body += "".join(
            _picture(b.get("mimeType", "image/png"), b.get("data", ""), budget)
            for b in _images(answer)
        )
    return f'<div class="jp-MCPView-fallback">{body}</div>'
