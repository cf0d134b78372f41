"""Terminal tools: the visible project terminal, background commands, waiting.

``execute_terminal_command`` types into the Jupyter terminal named ``mcp`` (JupyterLab lists it
under Terminals), ``read_terminal_output`` reads back what that terminal printed, and
``run_command_on_background`` runs an invisible subprocess with a timeout and capped output.
"""

from __future__ import annotations

import asyncio
import os
import platform
import shlex
from typing import Any

from ..core.context import ToolContext, progress_reporter
from ..core.errors import ToolError
from ..core.paths import os_encodable
from ..core.registry import ToolSet
from ..execution.processes import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    OUTPUT_CAP_BYTES,
    REPORT_EVERY,
    command_summary,
    run_shell,
)
from ..execution.terminal import TERMINAL_NAME

tools = ToolSet("terminal")

#: Longest wait the ``wait`` tool and the terminal waits accept (milliseconds).
MAX_WAIT_MS = 300_000
#: Characters of the terminal's latest output a progress report reads for its last line.
TAIL_CHARS = 4096


def os_type() -> str:
    """``Linux``, ``macOS`` or ``Windows`` (other systems by their own name)."""
    system = platform.system()
    return {"Darwin": "macOS"}.get(system, system or "Unknown")


def os_version() -> str:
    """A readable description of the operating system and its version."""
    system = platform.system()
    if system == "Linux":
        pretty = None
        try:
            info = platform.freedesktop_os_release()
            pretty = info.get("PRETTY_NAME") or info.get("NAME")
        except (OSError, AttributeError):
            pass
        kernel = f"Linux {platform.release()}"
        return f"{pretty} ({kernel})" if pretty else kernel
    if system == "Darwin":
        return f"macOS {platform.mac_ver()[0]}".strip()
    if system == "Windows":
        return f"Microsoft Windows [Version {platform.version()}]"
    return f"{system} {platform.release()}".strip()


def _ms(value: float, field: str, maximum: int) -> float:
    if value > maximum:
        raise ToolError(f"{field} must be at most {maximum} milliseconds, got {value:g}")
    return value


async def _run_visibly(ctx: ToolContext, command: str, wait_ms: float | None) -> dict[str, Any]:
    term = ctx.services.terminal
    await term.send(command)
    result: dict[str, Any] = {"status": "executed"}
    if wait_ms is not None:
        reporting = (
            asyncio.get_running_loop().create_task(_report_terminal(ctx, command))
            if progress_reporter.get() is not None
            else None
        )
        try:
            finished = await term.wait_idle(wait_ms / 1000)
        except asyncio.CancelledError:
            # The caller gave up on the command it waits for (a cancelled call or task): it is
            # stopped as Ctrl-C in the terminal stops it, rather than left running unasked.
            await asyncio.shield(term.interrupt())
            raise
        finally:
            if reporting is not None:
                reporting.cancel()
        answer = term.read()
        result.update(
            output=answer["output"],
            running=not finished or answer["running"],
            nextOffset=answer["nextOffset"],
            truncated=answer["truncated"],
        )
    return result


async def _report_terminal(ctx: ToolContext, command: str) -> None:
    """While a call waits for its terminal command: every second, the command, its time and
    the last line the terminal printed (the progress, and a task's status message)."""
    term = ctx.services.terminal
    loop = asyncio.get_running_loop()
    started = loop.time()
    shown = command_summary(command)
    while True:
        await asyncio.sleep(REPORT_EVERY)
        elapsed = loop.time() - started
        # Only the output's end is read: a chatty command's whole output is not cleaned of
        # escape sequences every second just to show its last line.
        since = max(term.command_offset, term.output.end - TAIL_CHARS)
        lines = [line.strip() for line in term.read(since)["output"].splitlines() if line.strip()]
        last = lines[-1][:200] if lines else ""
        message = f"`{shown}` running in terminal {term.name} for {elapsed:.1f} s"
        ctx.report_progress(elapsed, None, message + (f": {last}" if last else ""))


WAIT_FOR_OUTPUT = {
    "type": "boolean",
    "default": False,
    "description": "Wait for the command's end (at most timeout) and answer its output too.",
}
OUTPUT_TIMEOUT = {
    "type": "number",
    "minimum": 0,
    "default": 30000,
    "description": f"waitForOutput: milliseconds (max {MAX_WAIT_MS}).",
}


@tools.tool(
    "execute_terminal_command",
    f"Type a shell command into the project terminal (Jupyter terminal '{TERMINAL_NAME}', "
    "which the user sees). Answers once typed: read its output with read_terminal_output, or "
    "pass waitForOutput.",
    {
        "command": {"type": "string"},
        "waitForOutput": WAIT_FOR_OUTPUT,
        "timeout": OUTPUT_TIMEOUT,
    },
    required=["command"],
    open_world=True,
    title="Run command in terminal",
    task_support=True,
)
async def execute_terminal_command(
    ctx: ToolContext, command: str, waitForOutput: bool = False, timeout: float = 30000
) -> dict[str, Any]:
    """Type ``command`` into the project terminal; ``{"status": "executed"}``."""
    wait_ms = _ms(timeout, "timeout", MAX_WAIT_MS) if waitForOutput else None
    return await _run_visibly(ctx, command, wait_ms)


@tools.tool(
    "read_terminal_output",
    "What the project terminal printed, escape sequences removed: the last command's "
    "output, or all from offset on. running tells whether a command is still in the "
    "foreground.",
    {
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "A previous answer's nextOffset.",
        },
        "waitMs": {
            "type": "number",
            "minimum": 0,
            "default": 0,
            "description": f"Wait up to this long for the command's end (max {MAX_WAIT_MS}).",
        },
    },
    read_only=True,
    title="Read terminal output",
)
async def read_terminal_output(
    ctx: ToolContext, offset: int | None = None, waitMs: float = 0
) -> dict[str, Any]:
    """The project terminal's output since the last command (or ``offset``)."""
    _ms(waitMs, "waitMs", MAX_WAIT_MS)
    term = ctx.services.terminal
    term.manager  # noqa: B018 - a clear error when terminals are disabled
    if waitMs:
        await term.wait_idle(waitMs / 1000)
    return term.read(offset)


@tools.tool(
    "run_command_on_background",
    "Run a shell command out of the user's sight and answer its exit code and output "
    f"(stdout and stderr each capped at {OUTPUT_CAP_BYTES} bytes). On timeout it and every "
    "process it started are killed (timedOut).",
    {
        "command": {"type": "string"},
        "cwd": {
            "type": "string",
            "description": "Folder relative to the project root; default the root.",
        },
        "env": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Added to the server's environment.",
        },
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "default": DEFAULT_TIMEOUT_MS,
            "description": f"Milliseconds (max {MAX_TIMEOUT_MS}).",
        },
    },
    required=["command"],
    open_world=True,
    title="Run background command",
    task_support=True,
)
async def run_command_on_background(
    ctx: ToolContext,
    command: str,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_MS,
) -> dict[str, Any]:
    """``{stdout, stderr, exitCode, timedOut, truncated}`` of ``command``.

    ``exitCode`` is null when the command timed out, negative when a signal ended it.
    Cancelling the call kills the command's process group.
    """
    if not command.strip():
        raise ToolError("command must not be empty")
    if "\x00" in command:
        raise ToolError("command must not contain NUL characters")
    if not os_encodable(command):
        raise ToolError("command has an unpaired surrogate, which cannot be passed to a process")
    _ms(timeout, "timeout", MAX_TIMEOUT_MS)
    workdir = ctx.resolve(cwd or "", must_exist=True)
    if not workdir.is_dir():
        raise ToolError(f"cwd is not a directory: {cwd}")
    for name, value in (env or {}).items():
        if (
            not name
            or "=" in name
            or "\x00" in name
            or "\x00" in value
            or not (os_encodable(name) and os_encodable(value))
        ):
            raise ToolError(f"Invalid environment variable name or value: {name!r}")
    report = None
    if progress_reporter.get() is not None:

        def report(elapsed: float, message: str) -> None:
            ctx.report_progress(elapsed, None, message)

    return await run_shell(
        command,
        cwd=workdir,
        env=env,
        timeout_ms=timeout,
        tracker=ctx.services.background_commands,
        report=report,
    )


@tools.tool(
    "wait",
    f"Wait this many milliseconds (at most {MAX_WAIT_MS}), reporting progress every second.",
    {"milliseconds": {"type": "number", "minimum": 0}},
    required=["milliseconds"],
    read_only=True,
    idempotent=True,
    title="Wait",
    task_support=True,
)
async def wait(ctx: ToolContext, milliseconds: float) -> dict[str, str]:
    """Sleep without blocking the server; ``{"status": "completed", "message": …}``."""
    _ms(milliseconds, "milliseconds", MAX_WAIT_MS)
    # In steps of at most a second, each reported, so a client sees a long wait advance.
    loop = asyncio.get_running_loop()
    start = loop.time()
    while (waited := (loop.time() - start) * 1000) < milliseconds:
        await asyncio.sleep(min(1000.0, milliseconds - waited) / 1000)
        done = min(milliseconds, (loop.time() - start) * 1000)
        ctx.report_progress(done, milliseconds, f"waited {done / 1000:.1f} s")
    shown = int(milliseconds) if float(milliseconds).is_integer() else milliseconds
    return {"status": "completed", "message": f"Waited for {shown} milliseconds"}


def _terminal_shell(ctx: ToolContext) -> tuple[str, bool, bool]:
    """(shell name, terminals available, shell is the default one)."""
    manager = None
    web_app = getattr(ctx.serverapp, "web_app", None)
    if web_app is not None:
        manager = web_app.settings.get("terminal_manager")
    override = None
    if ctx.serverapp is not None:
        override = (getattr(ctx.serverapp, "terminado_settings", None) or {}).get("shell_command")
    argv = getattr(manager, "shell_command", None) if manager is not None else None
    if isinstance(argv, str):
        argv = shlex.split(argv)
    shell = argv[0] if argv else os.environ.get("SHELL") or ("cmd.exe" if os.name == "nt" else "sh")
    name = os.path.basename(shell)
    for suffix in (".exe",):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name, manager is not None, override is None


@tools.tool(
    "get_terminal_info",
    "The operating system (type and version) and the project terminal's shell.",
    read_only=True,
    idempotent=True,
    title="Terminal info",
)
def get_terminal_info(ctx: ToolContext) -> dict[str, Any]:
    """``{osType, osVersion, terminalType, isIntegratedTerminal, isDefault}``."""
    shell, integrated, default = _terminal_shell(ctx)
    return {
        "osType": os_type(),
        "osVersion": os_version(),
        "terminalType": shell,
        "isIntegratedTerminal": integrated,
        "isDefault": default,
    }


def pick_command(
    os_name: str,
    *,
    windowsCommand: str | None = None,
    unixCommand: str | None = None,
    macCommand: str | None = None,
    command: str | None = None,
) -> str:
    """The command for ``os_name``: the OS's own, then (macOS) the Unix one, then the generic."""
    if os_name == "Windows":
        candidates = [windowsCommand]
    elif os_name == "macOS":
        candidates = [macCommand, unixCommand]
    else:
        candidates = [unixCommand]
    for candidate in [*candidates, command]:
        if candidate is not None and candidate.strip():
            return candidate
    given = [
        n
        for n, v in (
            ("windowsCommand", windowsCommand),
            ("unixCommand", unixCommand),
            ("macCommand", macCommand),
        )
        if v
    ]
    wanted = {"Windows": "windowsCommand", "macOS": "macCommand or unixCommand"}.get(
        os_name, "unixCommand"
    )
    if given:
        raise ToolError(
            f"No command for {os_name}: got only {', '.join(given)}; give {wanted} or command"
        )
    raise ToolError(f"No command given: give {wanted} or the generic command")


@tools.tool(
    "execute_os_specific_command",
    "Run, like execute_terminal_command, the command for this server's OS: windowsCommand, "
    "unixCommand (Linux too) or macCommand, else command. The answer says which ran.",
    {
        "windowsCommand": {"type": "string"},
        "unixCommand": {"type": "string"},
        "macCommand": {"type": "string"},
        "command": {"type": "string", "description": "For any platform."},
    },
    open_world=True,
    title="Run OS-specific command",
)
async def execute_os_specific_command(
    ctx: ToolContext,
    windowsCommand: str | None = None,
    unixCommand: str | None = None,
    macCommand: str | None = None,
    command: str | None = None,
) -> dict[str, Any]:
    """``{osType, command, executed: true}`` after typing the OS's command into the terminal."""
    name = os_type()
    chosen = pick_command(
        name,
        windowsCommand=windowsCommand,
        unixCommand=unixCommand,
        macCommand=macCommand,
        command=command,
    )
    await _run_visibly(ctx, chosen, None)
    return {"osType": name, "command": chosen, "executed": True}
