"""A file's lock lives as long as someone refers to it (core.context.PathLocks): Jupyter's
saves and content reads take these locks too, so keeping one for every file ever touched would
grow with every file a server's users and agents ever opened."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

from jupyter_mcp.core.context import PathLocks


def test_a_files_lock_is_the_same_for_everyone_while_anyone_holds_it(tmp_path: Path) -> None:
    locks = PathLocks()
    held = locks(tmp_path / "a.txt")
    with held:
        gc.collect()
        again = locks(tmp_path / "a.txt")
        assert again is held and again.locked()
        assert not again.acquire(blocking=False)
    assert locks(tmp_path / "b.txt") is not held


def test_a_lock_nobody_refers_to_is_not_kept(tmp_path: Path) -> None:
    locks = PathLocks()
    for n in range(500):
        with locks(tmp_path / f"f{n}.txt"):
            pass
    gc.collect()
    assert len(locks) == 0


async def test_files_written_and_read_through_jupyter_leave_no_lock_behind(
    ok: Any, jp_fetch: Any, jp_root_dir: Path, mcp_app: Any
) -> None:
    # Given a server whose tools wrote 40 files, and Jupyter's contents API read and saved them
    for n in range(40):
        await ok("create_new_file_with_text", pathInProject=f"f{n}.txt", text=f"{n}\n")
        await jp_fetch("api", "contents", f"f{n}.txt", params={"content": "1"})
        body = json.dumps({"type": "file", "format": "text", "content": f"{n} saved\n"})
        await jp_fetch("api", "contents", f"f{n}.txt", method="PUT", body=body)
    # Then, with every write and read over, no file's lock is kept
    gc.collect()
    assert len(mcp_app.tool_context.locks) == 0
    assert (jp_root_dir / "f39.txt").read_text() == "39 saved\n"
    # And a lock someone holds is still the one everyone gets
    lock = mcp_app.tool_context.locks(jp_root_dir / "f0.txt")
    with lock:
        assert mcp_app.tool_context.locks(jp_root_dir / "f0.txt") is lock
