"""The data a view shows of one tool result, bounded.

A view needs more than the text result gives the model: a DataFrame's HTML, an SVG, a chart's
JSON, the whole texts before and after an edit. The result of a tool that has a view carries
them, for a client that shows views only, under ``_meta["jupyter-mcp/view"]``; the view reads
them from the result its host hands it (no second call). Pictures that are already image
content blocks of the result are named by their position there, not sent twice.

The data is bounded: each output's rich data to :data:`OUTPUT_LIMIT` characters, a stream or
traceback to :data:`TEXT_LIMIT`, the whole to :data:`TOTAL_LIMIT`. What does not fit is said
(``omitted``) and the view shows the output's text instead.

Shapes (``view`` names which):

- ``cell-outputs``: ``{"view", "path"?, "cells": [{"cellId", "executionCount", "status"?,
  "cellType"?, "outputs": [output], "outputsOmitted"?}], "omitted"?}`` where an output is
  ``{"outputType": "stream", "name", "text"}``, ``{"outputType": "error", "ename", "evalue",
  "traceback": [line]}`` or ``{"outputType": "execute_result" | "display_data", "data":
  {mime: value}, "metadata"?, "contentImage"?, "omitted"?}``; texts keep their colour codes.
- ``variables``: ``{"view", "path"?, "variables": [{name, type, value, ...}], "omitted"?}``.
- ``diff``: ``{"view", "files": [{"path", "before", "after"} | {"path"?, "patch"}
  | {"path", "omitted"}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.registry import Image
from ..kernels.outputs import IMAGE_LIMIT, IMAGE_TYPES, cut, readable_text
from .catalog import View

#: Characters of one output's rich data (HTML, SVG, chart JSON) a view gets.
OUTPUT_LIMIT = 1_000_000
#: Characters of one stream, text or traceback a view gets (head and tail kept).
TEXT_LIMIT = 100_000
#: Characters of all the data one result carries for its view.
TOTAL_LIMIT = 4_000_000

#: Chart types, first choice when an output carries one (its data is in the output).
CHART_TYPES = (
    "application/vnd.plotly.v1+json",
    "application/vnd.vegalite.v6+json",
    "application/vnd.vegalite.v5+json",
    "application/vnd.vegalite.v4+json",
    "application/vnd.vegalite.v3+json",
    "application/vnd.vega.v6+json",
    "application/vnd.vega.v5+json",
)
#: The other rich types a view shows, in JupyterLab's order of preference.
RICH_TYPES = (
    "text/html",
    "text/markdown",
    "text/latex",
    "image/svg+xml",
    *IMAGE_TYPES,
    "image/gif",
    "application/json",
)


class _Budget:
    """Characters left for the rest of one result's view data."""

    def __init__(self, total: int) -> None:
        self.left = total

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


def view_data(
    view: View,
    arguments: Mapping[str, Any],
    value: Any,
    images: list[Image],
    offered: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ``_meta`` data of ``view`` for one successful result of a tool it shows: the
    result's ``value``, its attached ``images`` and the data the tool ``offered``
    (:class:`~jupyter_mcp.core.registry.WithViewData`), bounded."""
    budget = _Budget(TOTAL_LIMIT)
    path = arguments.get("pathInProject")
    if view.name == "cell-outputs":
        return _cell_outputs(offered or {}, images, budget, path)
    if view.name == "variables":
        return _variables(value, budget, path)
    return _diff(value, offered, budget)


def _cell_outputs(
    data: Mapping[str, Any], images: list[Image], budget: _Budget, path: Any
) -> dict[str, Any]:
    attached = _AttachedImages(images)
    cells = []
    omitted = 0
    for cell in data.get("cells") or []:
        shown: dict[str, Any] = {
            key: cell[key]
            for key in ("cellId", "executionCount", "status", "cellType", "outputsOmitted")
            if key in cell
        }
        outputs = []
        for output in cell.get("outputs") or []:
            item = _output(output, attached, budget)
            omitted += "omitted" in item
            outputs.append(item)
        shown["outputs"] = outputs
        cells.append(shown)
    answer: dict[str, Any] = {"view": "cell-outputs", "cells": cells}
    where = data.get("path") or path
    if where:
        answer["path"] = where
    if omitted:
        answer["omitted"] = omitted
    return answer


class _AttachedImages:
    """The pictures the result carries as image content, matched to outputs in order."""

    def __init__(self, images: list[Image]) -> None:
        self._images = images
        self._next = 0

    def position(self, image: Image) -> int | None:
        """Where ``image`` is among the result's image blocks (the next one in order), if
        attached: outputs and images are in the same order, some pictures not attached."""
        for k in range(self._next, len(self._images)):
            if self._images[k] == image:
                self._next = k + 1
                return k
        return None


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def _text(value: Any) -> tuple[str, bool]:
    return cut(readable_text(_joined(value), colours=True), TEXT_LIMIT)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value, ensure_ascii=False))


def _output(
    output: Mapping[str, Any], attached: _AttachedImages, budget: _Budget
) -> dict[str, Any]:
    kind = output.get("output_type", "")
    if kind == "stream":
        text, truncated = _text(output.get("text"))
        budget.take(len(text))
        item: dict[str, Any] = {"outputType": "stream", "name": output.get("name", "stdout")}
        item["text"] = text
        if truncated:
            item["truncated"] = True
        return item
    if kind == "error":
        traceback, truncated = _text(
            "\n".join(_joined(line) for line in output.get("traceback") or [])
        )
        budget.take(len(traceback))
        item = {
            "outputType": "error",
            "ename": str(output.get("ename", "")),
            "evalue": readable_text(str(output.get("evalue", "")), colours=True),
            "traceback": traceback.split("\n") if traceback else [],
        }
        if truncated:
            item["truncated"] = True
        return item
    bundle: Mapping[str, Any] = output.get("data") or {}
    item = {"outputType": kind or "display_data", "data": {}}
    data: dict[str, Any] = item["data"]
    if "text/plain" in bundle:
        text, truncated = _text(bundle["text/plain"])
        budget.take(len(text))
        data["text/plain"] = text
    chosen = _chosen(bundle, attached, budget, item)
    if chosen is not None and chosen in CHART_TYPES:
        # A chart the view cannot draw (a trace type the bundled library lacks) falls back on
        # the output's own picture.
        for mime in IMAGE_TYPES:
            if mime in bundle:
                _picture(bundle, mime, attached, budget, item)
                break
    metadata = output.get("metadata")
    if isinstance(metadata, Mapping):
        kept = {
            mime: {k: v for k, v in value.items() if k in ("width", "height", "unconfined")}
            for mime, value in metadata.items()
            if mime in data and isinstance(value, Mapping)
        }
        kept = {mime: value for mime, value in kept.items() if value}
        if kept:
            item["metadata"] = kept
    return item


def _chosen(
    bundle: Mapping[str, Any], attached: _AttachedImages, budget: _Budget, item: dict[str, Any]
) -> str | None:
    """Put the richest type of ``bundle`` a view shows into ``item`` (the first that fits)."""
    for mime in (*CHART_TYPES, *RICH_TYPES):
        if mime not in bundle:
            continue
        if mime in IMAGE_TYPES or mime == "image/gif":
            if _picture(bundle, mime, attached, budget, item):
                return mime
            continue
        value = bundle[mime]
        if not mime.endswith("json"):
            value = _joined(value)
        size = _size(value)
        if size > OUTPUT_LIMIT or not budget.take(size):
            item.setdefault("omitted", f"{mime} ({size:,} characters) is more than a view is sent")
            continue
        item["data"][mime] = value
        return mime
    return None


def _picture(
    bundle: Mapping[str, Any],
    mime: str,
    attached: _AttachedImages,
    budget: _Budget,
    item: dict[str, Any],
) -> bool:
    encoded = _joined(bundle[mime]).replace("\n", "")
    if mime in IMAGE_TYPES and len(encoded) <= IMAGE_LIMIT:
        position = attached.position(Image(mime_type=mime, data=encoded))
        if position is not None:
            item["contentImage"] = position
            return True
    if len(encoded) > OUTPUT_LIMIT or not budget.take(len(encoded)):
        item.setdefault(
            "omitted", f"{mime} ({len(encoded):,} characters) is more than a view is sent"
        )
        return False
    item["data"][mime] = encoded
    return True


def _variables(value: Any, budget: _Budget, path: Any) -> dict[str, Any]:
    variables = []
    rows = value if isinstance(value, list) else []
    for row in rows:
        if not budget.take(_size(row)):
            break
        variables.append(row)
    answer: dict[str, Any] = {"view": "variables", "variables": variables}
    if path:
        answer["path"] = path
    if len(variables) < len(rows):
        answer["omitted"] = len(rows) - len(variables)
    return answer


def _diff(value: Any, offered: Mapping[str, Any] | None, budget: _Budget) -> dict[str, Any]:
    files: Iterable[Mapping[str, Any]]
    if offered is not None:
        files = offered.get("files") or []
    elif isinstance(value, str):
        files = [{"patch": value}]
    elif isinstance(value, Mapping) and isinstance(value.get("diff"), str):
        files = [{"patch": value["diff"]}]
    else:
        files = []
    shown = []
    for file in files:
        texts = {k: file[k] for k in ("before", "after", "patch") if isinstance(file.get(k), str)}
        size = sum(len(text) for text in texts.values())
        entry: dict[str, Any] = {"path": file["path"]} if file.get("path") else {}
        if budget.take(size):
            entry.update(texts)
        else:
            entry["omitted"] = f"{size:,} characters are more than a view is sent"
        shown.append(entry)
    return {"view": "diff", "files": shown}
