"""The one write transaction: sorted locks, the unsaved-edit guard, roll back, reload notices."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.documents.files import transaction
from jupyter_mcp.services import build_services


def _context(root: Path) -> tuple[ToolContext, list[str], list[str]]:
    """A context whose guard refuses ``dirty.txt`` and whose listener records notices."""
    ctx = ToolContext(root)
    ctx.services = build_services(ctx)
    guarded: list[str] = []
    notices: list[str] = []

    def guard(path: Path) -> None:
        guarded.append(path.name)
        if path.name == "dirty.txt":
            raise ToolError("dirty.txt has unsaved changes in JupyterLab")

    def listener(path: Path) -> None:
        # Notices come once the locks are released: another writer may take the lock now.
        lock = ctx.locks(path)
        assert lock.acquire(blocking=False), f"{path.name} is still locked"
        lock.release()
        notices.append(path.name)

    ctx.services.before_file_write = guard
    ctx.services.on_file_written = listener
    return ctx, guarded, notices


def test_writes_take_sorted_locks_guard_once_and_notify_after_release(tmp_path: Path) -> None:
    ctx, guarded, notices = _context(tmp_path)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    b.write_text("old b")
    locked: list[str] = []
    real_locks = ctx.locks

    def recording(path: Path) -> threading.Lock:
        locked.append(path.name)
        return real_locks(path)

    ctx.locks = recording  # type: ignore[assignment]
    with transaction(ctx, [b, a, b]) as tx:
        tx.check_unsaved()
        assert tx.write(a, "a.txt", "new a")
        assert not tx.write(b, "b.txt", "old b")  # unchanged: nothing written
    ctx.locks = real_locks
    assert locked[:2] == ["a.txt", "b.txt"]
    assert guarded == ["a.txt", "b.txt"]
    assert notices == ["a.txt"]
    assert a.read_text() == "new a"


def test_a_failure_part_way_puts_every_written_file_back(tmp_path: Path) -> None:
    ctx, _, notices = _context(tmp_path)
    a, new = tmp_path / "a.txt", tmp_path / "sub" / "new.txt"
    a.write_text("old a")
    a.chmod(0o640)
    with pytest.raises(RuntimeError, match="disk full"), transaction(ctx, [a, new]) as tx:
        tx.write(a, "a.txt", "new a")
        tx.write(new, "sub/new.txt", "created", create=True)
        raise RuntimeError("disk full")
    assert a.read_text() == "old a"
    assert a.stat().st_mode & 0o777 == 0o640
    assert not new.exists()
    assert notices == []


def test_a_file_with_unsaved_edits_stops_the_transaction_and_undoes_its_writes(
    tmp_path: Path,
) -> None:
    ctx, _, notices = _context(tmp_path)
    a, dirty = tmp_path / "a.txt", tmp_path / "dirty.txt"
    a.write_text("old a")
    dirty.write_text("old")
    with pytest.raises(ToolError, match="dirty.txt has unsaved changes"):
        with transaction(ctx, [a, dirty]) as tx:
            tx.write(a, "a.txt", "new a")
            tx.write(dirty, "dirty.txt", "new")
    assert a.read_text() == "old a" and dirty.read_text() == "old"
    assert notices == []


def test_a_single_file_that_is_not_part_of_the_transaction_is_refused(tmp_path: Path) -> None:
    ctx, _, _ = _context(tmp_path)
    with pytest.raises(RuntimeError, match="not part of this transaction"):
        with transaction(ctx, [tmp_path / "a.txt"]) as tx:
            tx.write(tmp_path / "b.txt", "b.txt", "x", create=True)
    assert not (tmp_path / "b.txt").exists()
