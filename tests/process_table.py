"""What the machine's process table shows (Linux ``/proc``), for tests that check for orphans."""

from __future__ import annotations

from pathlib import Path


def processes_with(marker: str) -> list[str]:
    """Command lines of the live (non-zombie) processes that mention ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if marker in cmdline and stat[stat.rfind(")") + 2] != "Z":
                found.append(cmdline)
    return found


def descendants(pid: int) -> list[int]:
    """Every descendant process of ``pid`` (from /proc), deepest last."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in parents.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found
