"""Cell outputs as an agent reads them.

A notebook keeps each output as nbformat stores it (streams, MIME bundles, errors with an
ANSI-coloured traceback). An agent gets an *output object* instead: what a person would read
in the notebook — text with terminal escapes and carriage-return redraws resolved, the
``text/plain`` of a rich output, an error's name, value and clean traceback — cut head and
tail when long, with the cut said. PNG and JPEG pictures travel beside the JSON as
:class:`~jupyter_mcp.core.registry.Image` (image content on standard MCP).

The full outputs stay in the notebook; nothing here changes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.registry import Image

#: Characters of one output's text an agent gets by default (head and tail kept).
TEXT_LIMIT = 4000
#: Pictures larger than this (base64 characters) are not attached; the output says so.
IMAGE_LIMIT = 2 * 1024 * 1024
#: The MIME types attached as pictures, in order of preference.
IMAGE_TYPES = ("image/png", "image/jpeg")

# CSI sequences (colours, cursor moves), OSC sequences (titles, hyperlinks) and the rest of
# the two-character escapes: what a terminal would interpret rather than show.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# The same, except colours and styles (SGR: ``ESC [ ... m``), which a view shows.
_ANSI_BUT_COLOURS = re.compile(
    r"\x1b\[(?![0-9;]*m)[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
)
# C0 controls a reader never sees (tab and newline stay; carriage returns are resolved first).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_CONTROL_BUT_ESCAPE = re.compile(r"[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f]")
# Lone surrogates: a kernel that decoded bytes with ``surrogateescape`` can send them.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Overstrike, the underline (``_\bA``) and bold (``A\bA``) of terminal manual pages, which R's
# help (IRkernel's inspection) and ``man`` output still use.
_OVERSTRIKE = re.compile(r"_\x08(.)|(.)\x08\2")


def _joined(value: Any) -> str:
    """nbformat allows multiline strings as a list of lines."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def readable_text(text: str, *, colours: bool = False) -> str:
    """``text`` as a person reads it: escapes dropped, ``\\r`` redraws resolved, no junk.

    A progress bar that redraws its line with ``\\r`` shows its last state; a lone surrogate
    (a kernel decoding bytes with ``surrogateescape``) becomes U+FFFD, so the text is valid
    UTF-8 on every surface. With ``colours``, colour and style sequences stay (for a view that
    shows them, as JupyterLab does).
    """
    text = (_ANSI_BUT_COLOURS if colours else _ANSI).sub("", text)
    if "\x08" in text:
        text = _OVERSTRIKE.sub(lambda m: m.group(1) or m.group(2), text)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        text = "\n".join(line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    text = (_CONTROL_BUT_ESCAPE if colours else _CONTROL).sub("", text)
    return _SURROGATE.sub("\ufffd", text)


def cut(text: str, limit: int = TEXT_LIMIT) -> tuple[str, bool]:
    """``text`` cut to about ``limit`` characters, head and tail kept, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    head = limit * 2 // 3
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters cut …]\n{text[-tail:]}", True


def output_object(output: Mapping[str, Any], *, limit: int = TEXT_LIMIT) -> dict[str, Any]:
    """The output object of one nbformat output (see the module docstring)."""
    kind = output.get("output_type", "")
    result: dict[str, Any] = {"outputType": kind}
    data: Mapping[str, Any] = {}
    if kind == "stream":
        result["name"] = output.get("name", "stdout")
        text = _joined(output.get("text"))
        mime_types = ["text/plain"]
    elif kind == "error":
        result["ename"] = str(output.get("ename", ""))
        result["evalue"] = readable_text(str(output.get("evalue", "")))
        text = "\n".join(_joined(line) for line in output.get("traceback") or [])
        if not text:
            text = f"{result['ename']}: {result['evalue']}"
        mime_types = []
    else:  # execute_result, display_data (and update_display_data as it arrives)
        data = output.get("data") or {}
        mime_types = list(data)
        if "text/plain" in data:
            text = _joined(data["text/plain"])
        elif mime_types:
            # No text fallback: say what it is, so the agent knows there is something to see.
            text = f"[{', '.join(mime_types)}]"
        else:
            text = ""
    text, truncated = cut(readable_text(text), limit)
    result.update(text=text, mimeTypes=mime_types, truncated=truncated)
    for mime in IMAGE_TYPES:
        if mime in data and len(_joined(data[mime])) > IMAGE_LIMIT:
            result["imageOmitted"] = f"{mime} larger than {IMAGE_LIMIT} base64 characters"
            break
    return result


def images_of(outputs: Iterable[Mapping[str, Any]]) -> list[Image]:
    """The PNG and JPEG pictures of ``outputs`` (one per output, PNG preferred), in order."""
    images: list[Image] = []
    for output in outputs:
        data = output.get("data") or {}
        for mime in IMAGE_TYPES:
            if mime in data:
                encoded = _joined(data[mime]).replace("\n", "")
                if len(encoded) <= IMAGE_LIMIT:
                    images.append(Image(mime_type=mime, data=encoded))
                break
    return images


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_valid(v) for v in value]
    if isinstance(value, dict):
        return {k: _valid(v) for k, v in value.items()}
    return value


def storable(output: Mapping[str, Any]) -> dict[str, Any]:
    """An nbformat output whose strings are all valid Unicode, so it can be saved as UTF-8.

    A kernel may send a lone surrogate (text it decoded with ``surrogateescape``); it becomes
    U+FFFD, as :func:`readable_text` shows it. Everything else is kept as the kernel sent it.
    """
    return dict(_valid(dict(output)))
