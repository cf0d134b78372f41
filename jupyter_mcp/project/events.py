"""File events: inotify on Linux, the one place the project opens and reads it.

The search index watches every project folder with it (and reads the events before each
search); the resource subscriptions watch the folders of the files agents subscribed to (and
read the events as they come). Where inotify is missing, :func:`open_events` raises OSError and
each caller falls back to stat checks.
"""

from __future__ import annotations

import errno
import sys

try:  # Linux only (a dependency there); elsewhere callers fall back to stat checks
    from inotify_simple import INotify
    from inotify_simple import flags as _in
except ImportError:  # pragma: no cover - not Linux, or not installed
    INotify = None
    _in = None

if _in is not None:
    #: The kernel's queue overflowed: events were lost, look at everything again.
    Q_OVERFLOW = int(_in.Q_OVERFLOW)
    #: A watch was removed (its folder went, or it was removed by hand).
    IGNORED = int(_in.IGNORED)
    #: The watched folder itself was deleted or moved.
    GONE = int(_in.DELETE_SELF | _in.MOVE_SELF)
    #: What a folder's watch reports: its entries written, created, deleted, moved, and itself
    #: going (links are not followed; a moved-away entry stops being reported).
    WATCH_MASK = int(
        _in.MODIFY
        | _in.ATTRIB
        | _in.CLOSE_WRITE
        | _in.MOVED_FROM
        | _in.MOVED_TO
        | _in.CREATE
        | _in.DELETE
        | _in.DELETE_SELF
        | _in.MOVE_SELF
        | _in.ONLYDIR
        | _in.DONT_FOLLOW
        | _in.EXCL_UNLINK
    )
else:  # pragma: no cover - never used without inotify
    Q_OVERFLOW = IGNORED = GONE = WATCH_MASK = 0


def open_events() -> INotify:
    """A new inotify instance (close it when done); OSError where inotify is not available."""
    if INotify is None or not sys.platform.startswith("linux"):
        raise OSError(errno.ENOSYS, "inotify is not available on this system")
    return INotify()


def pending(events: INotify, timeout: float = 0) -> list[tuple[int, int, str]]:
    """The events queued on ``events`` as ``(wd, mask, name)``, waiting at most ``timeout``
    seconds for the first (0: not at all)."""
    found: list[tuple[int, int, str]] = []
    wait = round(timeout * 1000) if timeout else 0
    while True:
        batch = events.read(timeout=wait)
        if not batch:
            return found
        found.extend((e.wd, e.mask, e.name) for e in batch)
        wait = 0
