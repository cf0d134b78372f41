"""The project's visible terminal: one named Jupyter terminal that agents type into.

The terminal comes from jupyter_server_terminals' ``TerminalManager`` (the one JupyterLab's
Terminals panel lists), so the user sees every command an agent runs and can open it at
``/terminals/mcp``. A listener attached as a terminal client keeps what it prints, so tools
can read the output back.

Whether a command is still running is read from the pseudo-terminal itself: while a job runs,
the terminal's foreground process group is the job's, not the shell's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.errors import ToolError
from .output import ANSI, OutputBuffer, plain_text

#: Name of the project terminal in JupyterLab (``/terminals/mcp``).
TERMINAL_NAME = "mcp"
#: Output must stay quiet this long, with the shell in the foreground, for a command to be done.
QUIET_SECONDS = 0.3
#: Longest silence after a command before it counts as done even with nothing printed after it.
SETTLE_SECONDS = 3.0


class _Listener:
    """A terminado client that records everything the terminal prints."""

    # terminado sizes the terminal to its smallest client; None means "no opinion".
    size = (None, None)

    def __init__(self, owner: ProjectTerminal) -> None:
        self.owner = owner

    def on_pty_read(self, text: str) -> None:
        self.owner.output.append(text)
        self.owner.last_output = time.monotonic()

    def on_pty_died(self) -> None:
        self.owner.output.append("\n[terminal closed]\n")


class ProjectTerminal:
    """Creates, reuses and reads the project terminal of one server."""

    def __init__(self, serverapp: Any, root_dir: Path, name: str = TERMINAL_NAME) -> None:
        self.serverapp = serverapp
        self.root_dir = root_dir
        self.name = name
        self.output = OutputBuffer()
        self.last_output = time.monotonic()
        #: Offset of the output where the last command sent by a tool starts.
        self.command_offset = 0
        self.last_command: str | None = None
        self.command_started: float | None = None
        self._term: Any = None

    @property
    def manager(self) -> Any:
        """The server's TerminalManager; a clear error when terminals are disabled."""
        web_app = getattr(self.serverapp, "web_app", None)
        settings = getattr(web_app, "settings", {}) if web_app is not None else {}
        manager = settings.get("terminal_manager")
        if manager is None:
            raise ToolError(
                "Terminals are not available on this Jupyter server (they are disabled with "
                "ServerApp.terminals_enabled = False, or jupyter_server_terminals/terminado is "
                "missing); use run_command_on_background instead"
            )
        return manager

    def _current(self) -> Any | None:
        try:
            manager = self.manager
        except ToolError:
            return None
        return manager.terminals.get(self.name)

    def ensure(self) -> Any:
        """The project terminal, created in the project root when missing (event loop only)."""
        manager = self.manager
        term = manager.terminals.get(self.name)
        if term is None:
            with _ctrl_c_reaches_children():
                manager.create(name=self.name, cwd=str(self.root_dir))
            term = manager.terminals[self.name]
        if term is not self._term:
            # A new terminal (first use, or the user closed the old one): start listening.
            if not any(isinstance(c, _Listener) for c in term.clients):
                self.output.append("".join(term.read_buffer))
                term.clients.append(_Listener(self))
            self._term = term
        return term

    async def send(self, command: str) -> int:
        """Type ``command`` and Enter into the terminal; return the output offset it starts at."""
        if not command.strip():
            raise ToolError("command must not be empty")
        if "\x00" in command:
            raise ToolError("command must not contain NUL characters")
        try:
            command.encode("utf-8")  # what the terminal is typed in
        except UnicodeEncodeError as e:
            raise ToolError(
                f"command has an unpaired surrogate U+{ord(command[e.start]):04X} at character "
                f"{e.start}, which cannot be typed into the terminal"
            ) from None
        term = self.ensure()
        if self.busy():
            # Typing now would feed the running program's input, not the shell.
            raise ToolError(
                f"The project terminal '{self.name}' is still running "
                f"{self.last_command or 'a command'!r}; wait for it (read_terminal_output with "
                "waitMs), stop it in JupyterLab, or use run_command_on_background"
            )
        offset = self.output.end
        self.command_offset = offset
        self.last_command = command
        self.command_started = time.time()
        data = command.replace("\r\n", "\n").rstrip("\n").replace("\n", "\r") + "\r"
        await asyncio.to_thread(term.ptyproc.write, data)
        self.last_output = time.monotonic()
        return offset

    async def interrupt(self) -> bool:
        """Ctrl-C to the job in the terminal's foreground, as the user would type it (the tty
        signals the job's whole process group); False when none runs."""
        term = self._current()
        if term is None or not self.busy():
            return False
        await asyncio.to_thread(term.ptyproc.write, "\x03")
        self.last_output = time.monotonic()
        return True

    def busy(self) -> bool:
        """True while a job runs in the foreground of the terminal (not the shell itself)."""
        term = self._current()
        if term is None:
            return False
        try:
            return os.tcgetpgrp(term.ptyproc.fd) != term.ptyproc.pid
        except OSError:
            return False

    def running(self) -> bool:
        """True while a job is in the foreground, output is flowing, or the shell is starting.

        A fresh login shell may take a while before it reads the typed command; until the
        shell has printed something after the command's echo (its output or the next prompt),
        the command counts as running, for at most :data:`SETTLE_SECONDS` of silence.
        """
        if self.busy():
            return True
        quiet = time.monotonic() - self.last_output
        if quiet < QUIET_SECONDS:
            return True
        if self.last_command is not None and quiet < SETTLE_SECONDS:
            text = ANSI.sub("", self.output.read(self.command_offset).text)
            if not _drop_echo(text, self.last_command).strip():
                return True
        return False

    async def wait_idle(self, timeout: float) -> bool:
        """Wait until the terminal is idle (shell in front, output quiet); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.running():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            await asyncio.sleep(min(0.05, remaining))

    def read(self, since: int | None = None) -> dict[str, Any]:
        """Plain-text output since ``since`` (default: the start of the last command)."""
        start = self.command_offset if since is None else since
        chunk = self.output.read(start)
        text = ANSI.sub("", chunk.text)
        if since is None and self.last_command:
            text = _drop_echo(text, self.last_command)
        text = plain_text(text)
        alive = self._current() is not None
        return {
            "terminal": self.name,
            "command": self.last_command if since is None else None,
            "output": text,
            "running": alive and self.running(),
            "terminalOpen": alive,
            "offset": max(start, chunk.next_offset - len(chunk.text)),
            "nextOffset": chunk.next_offset,
            "truncated": chunk.truncated,
        }

    async def shutdown(self) -> None:
        """Detach from the terminal (the terminals extension terminates it with the server)."""
        term = self._term
        if term is not None:
            with contextlib.suppress(ValueError):
                term.clients[:] = [c for c in term.clients if not isinstance(c, _Listener)]
        self._term = None


@contextlib.contextmanager
def _ctrl_c_reaches_children() -> Iterator[None]:
    """While this holds, processes the server starts get SIGINT and SIGQUIT at their defaults.

    A server started in the background by a shell without job control (a script's
    ``jupyter lab &``, a service wrapper) has SIGINT and SIGQUIT ignored, as POSIX has such
    shells do. An ignored signal stays ignored across fork and exec, and no shell may undo it,
    so the terminal's shell and every command typed into it would ignore the Ctrl-C that a
    cancelled call, a timeout or the user types (terminado gives no hook into the child).
    A handler, unlike an ignore, is reset to the default by exec: for the moment the terminal
    is forked, the server swaps its ignore for a handler that does nothing, which keeps the
    server deaf to Ctrl-C as it was, then puts the ignore back.
    """
    swapped: list[signal.Signals] = []
    for name in ("SIGINT", "SIGQUIT"):  # Windows has no SIGQUIT, nor this inheritance
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            try:
                signal.signal(sig, _ignored)
            except ValueError:  # not the main thread: nothing can be changed from here
                break
            swapped.append(sig)
    try:
        yield
    finally:
        for sig in swapped:
            signal.signal(sig, signal.SIG_IGN)


def _ignored(signum: int, frame: Any) -> None:
    """Ignores a signal while looking, to the kernel, like a handler (see above)."""


def _drop_echo(text: str, command: str) -> str:
    """Remove prompts and echoes of ``command`` from the start of ``text``.

    The echo is matched ignoring whitespace and carriage returns, because the line editor wraps
    long lines at the terminal's width. It may come twice: once from the pseudo-terminal while
    the shell was busy, once more when the shell's line editor shows it after its prompt.
    """
    wanted = "".join(command.split())
    if not wanted:
        return text
    for attempt in range(2):
        kept = [i for i, ch in enumerate(text) if not ch.isspace()]
        squeezed = "".join(text[i] for i in kept)
        at = squeezed.find(wanted)
        if at < 0 or (attempt and "\n" in text[: kept[at]]):
            break
        end = kept[at + len(wanted) - 1] + 1
        newline = text.find("\n", end)
        text = "" if newline < 0 else text[newline + 1 :]
    return text
