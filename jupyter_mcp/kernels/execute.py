"""Execute code in a kernel of the server and follow what it sends back.

A kernel's answer to one ``execute_request`` is a series of iopub messages (stream, display,
result, error), closed by a ``status: idle``, then an ``execute_reply`` on the shell channel.
:func:`execute` waits for all of it, hands each iopub message of this request to the caller as
it arrives, and notices a kernel that died half-way (it would otherwise never go idle).
"""

from __future__ import annotations

import inspect
import json
import queue
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import ToolError
from ..documents.files import settled_bytes

#: How often, while a kernel is silent, :func:`execute` checks that it is still alive (seconds).
ALIVE_POLL = 0.5
#: How long the shell reply may lag behind the kernel going idle (seconds).
REPLY_TIMEOUT = 30.0
#: Kernel states a gateway announces, with no parent, when the kernel behind it was replaced.
_REPLACED = frozenset({"restarting", "dead"})


class KernelDied(RuntimeError):
    """The kernel stopped while code was running in it."""

    def __init__(self) -> None:
        super().__init__("the kernel died")


class NoReply(RuntimeError):
    """The kernel finished the request but never answered it."""

    def __init__(self) -> None:
        super().__init__(
            f"the kernel finished the code but sent no reply within {REPLY_TIMEOUT:g} s"
        )


async def execute(
    client: Any,
    code: str,
    *,
    on_message: Callable[[str, dict[str, Any]], Awaitable[None] | None],
    is_alive: Callable[[], Awaitable[bool]],
    user_expressions: dict[str, str] | None = None,
    store_history: bool = False,
    silent: bool = False,
) -> dict[str, Any]:
    """Run ``code`` (no stdin; no history unless ``store_history``) and return the shell reply.

    ``on_message(msg_type, content)`` gets every iopub message of this request but the status
    ones, in order (a coroutine is awaited before the next message is read);
    ``is_alive()`` is asked whenever the kernel is silent for :data:`ALIVE_POLL` seconds, and
    a False answer raises :class:`KernelDied`. ``store_history`` makes it a run as a user's
    (the execution count advances); ``silent`` asks the kernel to send no output at all.
    """
    msg_id = client.execute(
        code,
        silent=silent,
        store_history=store_history and not silent,
        allow_stdin=False,
        user_expressions=user_expressions or {},
    )
    while True:
        try:
            msg = await client.get_iopub_msg(timeout=ALIVE_POLL)
        except queue.Empty:
            if not await is_alive():
                raise KernelDied() from None
            continue
        kind, content = msg.get("msg_type"), msg.get("content") or {}
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            # A gateway says on iopub that it restarted the kernel (it died): the request
            # went with the old one and gets no answer.
            if kind == "status" and content.get("execution_state") in _REPLACED:
                if not await is_alive():
                    raise KernelDied()
            continue
        if kind == "status":
            if content.get("execution_state") == "idle":
                break
            continue
        handled = on_message(kind, content)
        if inspect.isawaitable(handled):
            await handled
    # The reply follows at once, unless the kernel went away between the two (a restart
    # interrupts the running cell first: its error and "idle" come, its reply does not).
    deadline = time.monotonic() + REPLY_TIMEOUT
    while True:
        try:
            reply: dict[str, Any] = await client.get_shell_msg(timeout=ALIVE_POLL)
        except queue.Empty:
            if not await is_alive():
                raise KernelDied() from None
            if time.monotonic() > deadline:
                raise NoReply() from None
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return reply


def _asked_for(notebook: Path) -> tuple[str, str, str] | None:
    """The kernel a notebook's metadata asks for: (kernelspec name, display name, language),
    each "" when missing; None when the notebook cannot be read."""
    try:
        meta = json.loads(settled_bytes(notebook)).get("metadata", {})  # not mid-save
        spec = meta.get("kernelspec") or {}
        info = meta.get("language_info") or {}
        return (
            str(spec.get("name") or ""),
            str(spec.get("display_name") or ""),
            str(spec.get("language") or info.get("name") or "").lower(),
        )
    except (OSError, ValueError, AttributeError):
        return None


def _language(entry: Any) -> str:
    spec = entry.get("spec") if isinstance(entry, Mapping) else None
    return str(spec.get("language") or "").lower() if isinstance(spec, Mapping) else ""


def _display(specs: Mapping[str, Any], name: str) -> str:
    entry = specs.get(name)
    spec = entry.get("spec") if isinstance(entry, Mapping) else None
    shown = spec.get("display_name") if isinstance(spec, Mapping) else None
    return f"{name} ({shown})" if shown and shown != name else name


def kernel_name_for(
    notebook: Path | None,
    specs: Mapping[str, Any],
    default: str | None,
    *,
    shown: str | None = None,
) -> str | None:
    """The kernel to start: the one a notebook asks for, else a Python kernel for programs.

    ``specs`` are the server's kernelspecs by name and ``default`` its default kernel's name.
    None means the server's default kernel. A notebook is matched as JupyterLab matches it: by
    its kernelspec's name, else by its language (the server's default kernel when it speaks
    it, else the one kernel that does). A notebook that asks for a kernel the server lacks is
    a ToolError naming it (``shown`` names the notebook): running R or bash code in Python
    would write Python's errors into the user's notebook.
    """
    if notebook is not None:
        asked = _asked_for(notebook)
        if asked is None:  # unreadable: the tool that reads it says why
            return None
        name, display, language = asked
        if name in specs:
            return name
        if not name and not language:
            return None  # a notebook that names no kernel: the server's default
        same = sorted(n for n, entry in specs.items() if language and _language(entry) == language)
        if default in same:
            return None
        if len(same) == 1:
            return same[0]
        raise ToolError(_missing_kernel(shown or notebook.name, asked, specs, same))
    # Programs and tasks are started by Python code in the kernel: make sure it is Python.
    python = [n for n, s in specs.items() if _language(s) == "python"]
    if default in python or not python:
        return None
    return "python3" if "python3" in python else sorted(python)[0]


def _missing_kernel(
    shown: str, asked: tuple[str, str, str], specs: Mapping[str, Any], same: list[str]
) -> str:
    name, display, language = asked
    if name:
        wanted = repr(name) + (f" ({display})" if display and display != name else "")
        what = f"{shown} asks for the kernel {wanted}, which this server does not have"
    else:
        what = f"{shown} names no kernel and is written in {language}"
    if same:
        what += f"; more than one of its kernels runs {language}"
    elif language:
        what += f" (no kernel of the server runs {language})"
    has = ", ".join(_display(specs, n) for n in sorted(specs)) or "none"
    return (
        f"{what}. The server's kernels: {has}. Nothing was run. Choose one for this notebook "
        "with kernel_action action=change kernelName=<name> (it names the kernel in the "
        "notebook's metadata), or install the notebook's kernel on the server."
    )
