"""Bounded output capture shared by the project terminal and run configurations.

An :class:`OutputBuffer` keeps the most recent ``cap`` characters of a stream with absolute
offsets, so a reader can ask for "everything after offset N" and be told when the start of
what it asked for was dropped.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

#: Characters of output kept per terminal or run (the most recent ones).
OUTPUT_CAP_CHARS = 1024 * 1024

ANSI = re.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC … BEL / ST (titles, shell integration)
    r"|\x1b\[[0-?]*[ -/]*[@-~]"  # CSI (colours, cursor movement)
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
    r"|[\x00-\x08\x0b\x0e-\x1f\x7f]"  # remaining control characters except \t \n \r
)


def plain_text(text: str) -> str:
    """Terminal output as plain text: escape sequences removed, CRLF and lone CR normalised."""
    text = ANSI.sub("", text).replace("\r\n", "\n")
    # A lone carriage return rewrites the current line (progress bars): keep what was drawn last.
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        lines.append(line)
    return "\n".join(lines)


@dataclass
class Chunk:
    """What :meth:`OutputBuffer.read` returns."""

    text: str
    next_offset: int
    #: True when part of the requested range had already been dropped (over the cap).
    truncated: bool


class OutputBuffer:
    """The tail of a stream, at most ``cap`` characters, addressed by absolute offsets."""

    def __init__(self, cap: int = OUTPUT_CAP_CHARS) -> None:
        self.cap = cap
        self._text = ""
        self._start = 0  # absolute offset of self._text[0]
        self._lock = threading.Lock()

    @property
    def end(self) -> int:
        """Absolute offset just after the last character received."""
        with self._lock:
            return self._start + len(self._text)

    def append(self, text: str) -> None:
        """Add ``text``, dropping the oldest characters beyond the cap."""
        if not text:
            return
        with self._lock:
            self._text += text
            excess = len(self._text) - self.cap
            if excess > 0:
                self._text = self._text[excess:]
                self._start += excess

    def read(self, since: int = 0) -> Chunk:
        """Everything from absolute offset ``since`` on (clamped to what is still kept)."""
        with self._lock:
            end = self._start + len(self._text)
            since = max(0, min(since, end))
            truncated = since < self._start
            begin = max(since, self._start) - self._start
            return Chunk(self._text[begin:], end, truncated)
