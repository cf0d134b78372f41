"""Asking a kernel about its state without changing it: variables, completions, inspection.

Variables are read by one *silent* execute request whose only work is a user expression:
the kernel sends no output, keeps no history and does not advance its execution count, and
the expression runs its helper code in a namespace of its own, so no name is left in the
user's. Completions and inspection are the kernel's own ``complete_request`` and
``inspect_request``, which run no user code.
"""

from __future__ import annotations

import ast
import asyncio
import json
import queue
from typing import Any

from ..core.errors import ToolError
from . import managers
from .clients import KernelClient, KernelClients
from .execute import KernelDied, execute
from .outputs import readable_text

#: Seconds to wait for another call's use of the kernel to end before answering "busy".
CLIENT_WAIT = 5.0
#: Seconds a kernel has to answer a question (it answers after the cell it is running).
ANSWER_TIMEOUT = 20.0
#: Variables one answer lists at most (sorted by name).
MAX_VARIABLES = 2000
#: Matches one completion answer lists at most.
MAX_MATCHES = 200

# Runs in a dict of its own (``exec(code, scope)``), reading the user's namespace; the result
# goes back as the expression's value. Hidden names (IPython's own), names starting with "_",
# modules, functions and classes are left out unless asked for by name.
_VARIABLES_CODE = r"""
import json, reprlib, types
_r = reprlib.Repr()
_r.maxstring = _r.maxother = 160
_r.maxlist = _r.maxtuple = _r.maxset = _r.maxfrozenset = _r.maxdict = 8
ns = ip.user_ns
hidden = ip.user_ns_hidden
skipped = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type)

def describe(name, value):
    t = type(value)
    mod = getattr(t, "__module__", "") or ""
    tname = t.__qualname__ if mod == "builtins" else mod.split(".")[0] + "." + t.__qualname__
    try:
        text = _r.repr(value)
    except Exception as e:
        text = "<repr failed: " + type(e).__name__ + ">"
    item = {"name": name, "type": tname, "value": text}
    if not isinstance(value, type):
        try:
            if hasattr(t, "__len__"):
                item["length"] = int(len(value))
        except Exception:
            pass
        try:
            shape = getattr(value, "shape", None)
            if shape is not None:
                item["shape"] = [int(n) for n in shape]
        except Exception:
            pass
    return item

if names is None:
    chosen = [
        n for n, v in ns.items()
        if not n.startswith("_") and not (n in hidden and hidden[n] is v)
        and not isinstance(v, skipped)
    ]
else:
    chosen = [n for n in names if n in ns]
out = json.dumps({
    "variables": [describe(n, ns[n]) for n in sorted(chosen)[:limit]],
    "missing": [] if names is None else [n for n in names if n not in ns],
    "count": len(chosen),
})
"""


def _variables_expression(names: list[str] | None) -> str:
    scope = f"{{'ip': get_ipython(), 'names': {names!r}, 'limit': {MAX_VARIABLES}}}"
    code = json.dumps(_VARIABLES_CODE)
    return f"(lambda scope: (exec({code}, scope), scope['out'])[1])({scope})"


async def variables(
    clients: KernelClients, kernel_id: str, shown: str, names: list[str] | None
) -> list[dict[str, Any]]:
    """The variables of the kernel (see the module docstring), sorted by name."""

    async def ask() -> dict[str, Any]:
        async with clients.use(kernel_id, wait=CLIENT_WAIT) as kept:
            language = await managers.kernel_language(clients.serverapp, kept.manager)
            if language and language != "python":
                raise ToolError(
                    f"The kernel of {shown} ({kept.info.get('implementation') or language}) "
                    f"cannot list its variables here: they are read from Python kernels (an "
                    f"IPython shell's namespace), and this kernel runs {language}"
                    + await _debugger_hint(clients.serverapp, kept.manager)
                )
            return await execute(
                kept.client,
                "",
                on_message=lambda kind, content: None,
                is_alive=kept.is_alive,
                user_expressions={"v": _variables_expression(names)},
                silent=True,
            )

    try:
        # Connecting counts too: a kernel answers kernel_info only between cells.
        reply = await asyncio.wait_for(ask(), ANSWER_TIMEOUT)
    except TimeoutError:
        raise _busy(shown) from None
    except KernelDied:
        clients.drop(kernel_id)
        raise ToolError(f"The kernel of {shown} died") from None
    result = reply.get("content", {}).get("user_expressions", {}).get("v", {})
    if result.get("status") != "ok":
        why = f"{result.get('ename', 'error')}: {result.get('evalue', '')}"
        raise ToolError(
            f"The kernel of {shown} could not list its variables ({readable_text(why)}); "
            "variables are read from IPython kernels (ipykernel)"
        )
    listed = json.loads(ast.literal_eval(result["data"]["text/plain"]))
    if listed["missing"]:
        raise ToolError(
            f"Not defined in the kernel of {shown}: {', '.join(listed['missing'])}"
            + (
                f" (defined: {', '.join(v['name'] for v in listed['variables'])})"
                if listed["variables"]
                else ""
            )
        )
    return list(listed["variables"])


async def _debugger_hint(serverapp: Any, manager: Any) -> str:
    """Where else to look: the debugger, for a kernel whose kernelspec says it has one (as
    JupyterLab's debugger panel decides)."""
    try:
        specs = await managers.kernel_specs(serverapp)
    except ToolError:
        return ""
    metadata = managers.spec_of(specs, getattr(manager, "kernel_name", None)).get("metadata")
    if isinstance(metadata, dict) and metadata.get("debugger"):
        return "; its debugger shows the variables of a paused cell (debug_session)"
    return "; it has no debugger to ask either"


def _busy(shown: str) -> ToolError:
    return ToolError(
        f"The kernel of {shown} did not answer within {ANSWER_TIMEOUT:g} s: it is busy "
        "running a cell. Ask again when it is idle, or interrupt it with kernel_action"
    )


async def _ask(kept: KernelClient, shown: str, send: Any) -> dict[str, Any]:
    """Send one shell request (``send(client)`` gives its id) and answer its reply's content."""
    msg_id = send(kept.client)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + ANSWER_TIMEOUT
    while True:
        left = deadline - loop.time()
        if left <= 0:
            raise _busy(shown)
        try:
            reply = await kept.client.get_shell_msg(timeout=min(left, 1.0))
        except queue.Empty:
            if not await kept.is_alive():
                raise ToolError(f"The kernel of {shown} died") from None
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return dict(reply.get("content", {}))


def cursor_offset(source: str, line: int, character: int, where: str) -> tuple[int, int]:
    """The offset in ``source`` of 0-based ``line``/``character``, and the line's own offset."""
    lines = source.split("\n")
    if not 0 <= line < len(lines):
        raise ToolError(f"line {line} is out of range: {where} has {len(lines)} lines")
    if not 0 <= character <= len(lines[line]):
        raise ToolError(
            f"character {character} is out of range: line {line} of {where} has "
            f"{len(lines[line])} characters"
        )
    start = sum(len(text) + 1 for text in lines[:line])
    return start + character, start


async def completions(
    clients: KernelClients,
    kernel_id: str,
    shown: str,
    source: str,
    line: int,
    character: int,
    *,
    where: str,
    inspect: bool = False,
) -> dict[str, Any]:
    """The kernel's completions at ``line``/``character`` of a cell's ``source``.

    ``start``/``end`` are offsets in the line (the text the matches replace); with
    ``inspect``, the kernel's inspection of the name at the cursor comes too.
    """
    offset, line_start = cursor_offset(source, line, character, where)

    async def ask() -> tuple[dict[str, Any], dict[str, Any] | None]:
        async with clients.use(kernel_id, wait=CLIENT_WAIT) as kept:
            completed = await _ask(kept, shown, lambda c: c.complete(source, offset))
            if not inspect:
                return completed, None
            found = await _ask(kept, shown, lambda c: c.inspect(source, offset, detail_level=0))
            return completed, found

    try:
        content, inspected = await asyncio.wait_for(ask(), 2 * ANSWER_TIMEOUT)
    except TimeoutError:
        raise _busy(shown) from None
    if content.get("status") != "ok":
        raise ToolError(f"The kernel of {shown} could not complete: {content.get('evalue', '')}")
    matches = list(content.get("matches") or [])
    answer: dict[str, Any] = {
        "matches": matches[:MAX_MATCHES],
        "start": max(0, int(content.get("cursor_start", offset)) - line_start),
        "end": max(0, int(content.get("cursor_end", offset)) - line_start),
    }
    if len(matches) > MAX_MATCHES:
        answer["matchesOmitted"] = len(matches) - MAX_MATCHES
    types = (content.get("metadata") or {}).get("_jupyter_types_experimental")
    if isinstance(types, list) and types:
        kinds = {t.get("text"): t.get("type") for t in types if isinstance(t, dict)}
        answer["types"] = [kinds.get(m) for m in answer["matches"]]
    if inspected is not None:
        found = inspected.get("status") == "ok" and inspected.get("found")
        text = (inspected.get("data") or {}).get("text/plain", "") if found else ""
        answer["documentation"] = readable_text(text)[:4000] if text else None
    return answer


async def execution_count(clients: KernelClients, kernel_id: str) -> int | None:
    """The kernel's execution count (a silent empty request answers it), or None when it does
    not answer within 2 s (busy: a kernel answers only between cells, ``kernel_info`` too)."""

    async def ask() -> dict[str, Any]:
        async with clients.use(kernel_id, wait=0.5) as kept:
            return await execute(
                kept.client,
                "",
                on_message=lambda kind, content: None,
                is_alive=kept.is_alive,
                silent=True,
            )

    try:
        reply = await asyncio.wait_for(ask(), 2.0)
    except (ToolError, TimeoutError, KernelDied):
        return None
    count = reply.get("content", {}).get("execution_count")
    return count if isinstance(count, int) else None
