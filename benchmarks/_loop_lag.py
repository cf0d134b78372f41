"""What holds an event loop (a server's, a benchmark's clients'): a watchdog thread that
samples the loop thread's stack while the loop is late (the benchmarks' ``_soak_probe`` starts
it in the server when ``SOAK_LOOP_LAG=1``).

The loop beats every ``BEAT`` seconds (a ``call_later`` that notes the time); the watchdog looks
every ``LOOK`` seconds, and while the last beat is over ``LATE`` seconds old it takes the loop
thread's stack. How late each beat ran is kept too: about the length of the loop's turns,
which a request waits behind even when none is over ``LATE``. Each sample is charged to a
*holder*: the innermost frame outside the standard library (asyncio's own frames included),
which is ours when it is jupyter_mcp's, and else names the library whose line it is (with the
innermost jupyter_mcp frame it was called through, if any: a wrapper of ours that only passed
the call on does not own the work). A loop thread found inside ``select`` while late held
nothing: it was starved, of the CPU (a busy machine) or of the GIL (another thread of the
process running Python); the busy threads seen then are charged instead, marked "(thread)".
asyncio's debug mode names only the handle that ran long (a task's step); this names the line.
"""

from __future__ import annotations

import asyncio
import os
import sys
import sysconfig
import threading
import time
from collections import Counter
from types import FrameType

BEAT = 0.01
LOOK = 0.005
LATE = 0.05

_STDLIB = sysconfig.get_paths()["stdlib"]
#: Frames a waiting thread sits in: not what holds anything.
_WAITS = {"wait", "select", "poll", "_worker", "get", "acquire", "sleep", "run_forever", "recv"}


def _where(frame: FrameType) -> str:
    code = frame.f_code
    name = code.co_filename
    for marker in ("site-packages" + os.sep, "jupyter_mcp" + os.sep):
        if marker in name:
            cut = name.rindex(marker) + (len(marker) if marker.startswith("site") else 0)
            name = name[cut:]
            break
    return f"{name}:{frame.f_lineno} {code.co_name}"


def _frames(frame: FrameType | None) -> list[FrameType]:
    """The frames of a stack, innermost first."""
    found = []
    while frame is not None:
        found.append(frame)
        frame = frame.f_back
    return found


def holder(frame: FrameType | None) -> str | None:
    """Whom a sample of the loop thread charges (None: the thread waits in select)."""
    frames = _frames(frame)
    if not frames:
        return None
    if (
        frames[0].f_code.co_name in ("select", "poll")
        and "selectors" in frames[0].f_code.co_filename
    ):
        return None
    inner = next((f for f in frames if not f.f_code.co_filename.startswith(_STDLIB)), frames[0])
    ours = next((f for f in frames if f"{os.sep}jupyter_mcp{os.sep}" in f.f_code.co_filename), None)
    if ours is inner:
        return f"ours: {_where(ours)} <- {_where(frames[0])}"
    # The innermost library frame does the work; ours, further out, only passed through.
    via = "" if ours is None else f" (via {_where(ours)})"
    return f"theirs: {_where(inner)} <- {_where(frames[0])}{via}"


class LagMonitor:
    """Samples of the late loop by holder, and the late spells (start, length)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.beat = time.monotonic()
        self.samples: Counter[str] = Counter()
        #: The longest spell each holder was seen in (seconds).
        self.longest: dict[str, float] = {}
        self.spells: list[float] = []
        #: How late each beat ran (seconds): about the length of the loop's turns.
        self.lateness: list[float] = []
        self._loop_thread = threading.get_ident()
        self._stopped = threading.Event()
        loop.call_soon(self._beat)
        threading.Thread(target=self._watch, name="loop-lag watchdog", daemon=True).start()

    def _beat(self) -> None:
        now = time.monotonic()
        self.lateness.append(max(0.0, now - self.beat - BEAT))
        self.beat = now
        if not self._stopped.is_set():
            self.loop.call_later(BEAT, self._beat)

    def _busy_threads(self, frames: dict[int, FrameType]) -> list[str]:
        found = []
        for ident, frame in frames.items():
            if ident in (self._loop_thread, threading.get_ident()):
                continue
            if frame.f_code.co_name in _WAITS:
                continue
            found.append(f"(thread) {holder(frame) or _where(frame)}")
        return found

    def _watch(self) -> None:
        spell: Counter[str] | None = None
        started = 0.0
        while not self._stopped.wait(LOOK):
            now = time.monotonic()
            late = now - self.beat > LATE + BEAT
            if not late:
                if spell is not None:
                    length = now - started
                    self.spells.append(length)
                    for who in spell:
                        self.longest[who] = max(self.longest.get(who, 0.0), length)
                    spell = None
                continue
            if spell is None:
                spell, started = Counter(), self.beat
            frames = sys._current_frames()
            who = holder(frames.get(self._loop_thread))
            charged = [who] if who is not None else self._busy_threads(frames)
            charged = charged or ["starved: the loop waits in select, no thread of ours runs"]
            for one in charged:
                spell[one] += 1
                self.samples[one] += 1

    def report(self, lines: int = 25) -> str:
        """The holders, most sampled first: samples (each ``LOOK`` s of a late loop), share,
        the longest spell they were in; then the spells."""
        total = sum(self.samples.values()) or 1
        spells = sorted(self.spells)
        late = sorted(self.lateness) or [0.0]

        def pick(q: float) -> float:
            return late[min(len(late) - 1, int(q * len(late)))] * 1000

        out = [
            f"{len(late)} beats every {BEAT * 1000:.0f} ms, late by p50 {pick(0.5):.1f}, "
            f"p90 {pick(0.9):.1f}, p99 {pick(0.99):.1f}, max {late[-1] * 1000:.0f} ms",
            f"loop late (> {LATE * 1000:.0f} ms) {len(spells)} times, "
            f"{sum(spells):.1f} s in all; longest "
            + ", ".join(f"{s * 1000:.0f}" for s in spells[-5:][::-1])
            + " ms",
        ]
        out.append(f"{'samples':>8} {'share':>6} {'longest ms':>10}  holder")
        for who, count in self.samples.most_common(lines):
            out.append(
                f"{count:>8} {count / total:>6.1%} {self.longest.get(who, 0) * 1000:>10.0f}  {who}"
            )
        return "\n".join(out) + "\n"

    def stop(self) -> None:
        """No more beats or looks (the figures stay)."""
        self._stopped.set()

    def reset(self) -> None:
        self.samples.clear()
        self.longest.clear()
        self.spells.clear()
        self.lateness.clear()
