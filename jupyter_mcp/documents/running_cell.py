"""The outputs of a running cell as they arrive, before they are written anywhere.

Every notebook document (the file, a JupyterLab window, the shared document) stores a running
cell's outputs the same way, so they agree on what a cell shows: a stream continues the last
output when that is a stream of the same name (as JupyterLab's output area merges them), a
carriage return redraws its line (a progress bar keeps its last state instead of growing the
notebook by every redraw), and one cell keeps at most :data:`CELL_OUTPUT_LIMIT` characters of
output, the rest dropped with a note saying so, so a cell that prints without end cannot make
the notebook too big for JupyterLab to load.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

#: Characters of output one cell keeps (text and encoded pictures together).
CELL_OUTPUT_LIMIT = 2_000_000


# A kernel that decoded bytes with ``surrogateescape`` sends lone surrogates, which no UTF-8
# file (nor JupyterLab's JSON) can hold: they are stored as U+FFFD.
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _storable(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings replaced (a copy)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {key: _storable(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_storable(item) for item in value]
    return value


def _joined(value: Any) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def redraw_lines(text: str) -> str:
    """``text`` with each carriage return's redraw applied, as a terminal shows it.

    A line ending in ``\\r`` keeps it, so the next chunk of the stream still overwrites it.
    """
    if "\r" not in text:
        return text
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            body = line.rstrip("\r")
            kept = body.rsplit("\r", 1)[-1]
            lines[i] = kept + ("\r" if line.endswith("\r") else "")
    return "\n".join(lines)


def output_size(output: Mapping[str, Any]) -> int:
    """Characters of an nbformat output that count against the cell's limit."""
    kind = output.get("output_type")
    if kind == "stream":
        return len(_joined(output.get("text")))
    if kind == "error":
        return sum(len(_joined(line)) for line in output.get("traceback") or []) + len(
            str(output.get("evalue", ""))
        )
    data = output.get("data") or {}
    return sum(len(_joined(value)) for value in data.values())


class RunningCell:
    """The outputs of one cell while it runs (nbformat v4 output dicts)."""

    def __init__(self, cell_id: str, *, limit: int = CELL_OUTPUT_LIMIT) -> None:
        self.cell_id = cell_id
        self.limit = limit
        self.execution_count: int | None = None
        self.finished = False
        self._outputs: list[dict[str, Any]] = []
        self._size = 0
        #: Characters not kept because the cell reached its limit.
        self.dropped = 0
        #: Bumped on each change, so a writer knows whether it has the latest state.
        self.version = 0

    def add(self, output: Mapping[str, Any]) -> None:
        """One output arrived from the kernel."""
        self.version += 1
        kept: dict[str, Any] = _storable(copy.deepcopy(dict(output)))
        if kept.get("output_type") == "stream":
            self._add_stream(kept)
            return
        size = output_size(kept)
        if self.dropped or self._size + size > self.limit:
            self.dropped += size
            return
        self._outputs.append(kept)
        self._size += size

    def _add_stream(self, output: dict[str, Any]) -> None:
        text = _joined(output.get("text"))
        name = output.get("name", "stdout")
        last = self._outputs[-1] if self._outputs else None
        old = ""
        merge = (
            last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == name
            and not self.dropped
        )
        if merge:
            assert last is not None
            old = _joined(last.get("text"))
            self._size -= len(old)
            text = old + text
        text = redraw_lines(text)
        room = self.limit - self._size
        if self.dropped or room <= 0:
            self.dropped += len(text) - len(old)
            self._size += len(old)
            return
        if len(text) > room:
            self.dropped += len(text) - room
            text = text[:room]
        if merge:
            assert last is not None
            last["text"] = text
        else:
            self._outputs.append({"output_type": "stream", "name": name, "text": text})
        self._size += len(text)

    @property
    def size(self) -> int:
        """Characters of output the cell keeps now."""
        return self._size

    def clear(self) -> None:
        """The kernel cleared the cell's outputs."""
        self.version += 1
        self._outputs = []
        self._size = 0
        self.dropped = 0

    def finish(self, execution_count: int | None) -> None:
        """The cell finished (or was interrupted)."""
        self.version += 1
        self.execution_count = execution_count
        self.finished = True

    @property
    def outputs(self) -> list[dict[str, Any]]:
        """The cell's outputs now, with the note of what was dropped when it was capped."""
        outputs = copy.deepcopy(self._outputs)
        if self.dropped:
            outputs.append(
                {
                    "output_type": "stream",
                    "name": "stderr",
                    "text": (
                        f"\n[jupyter-mcp: this cell's output reached the limit of "
                        f"{self.limit} characters; {self.dropped} more characters were not "
                        "kept, so the notebook stays small enough to open]\n"
                    ),
                }
            )
        return outputs
