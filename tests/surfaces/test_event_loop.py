"""What the server's event loop pays for its thread hops, in a real server process (Jupyter
runs its loop with ``run_forever``, as no in-process test server does)."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest
from server_process import server_process

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")


def _threads(pid: int) -> set[int]:
    return {int(tid) for tid in os.listdir(f"/proc/{pid}/task")}


def test_folder_listings_reuse_anyio_worker_threads(tmp_path: Path) -> None:
    # Given a server on a folder of 30 files: Jupyter's contents manager lists it with one
    # AnyIO thread hop per entry
    root = tmp_path / "root"
    root.mkdir()
    for n in range(30):
        (root / f"f{n}.txt").write_text("x\n")
    with server_process(tmp_path / "home", root) as server:

        def listing() -> None:
            request = urllib.request.Request(
                server.url + "api/contents/?content=1",
                headers={"Authorization": f"token {server.token}"},
            )
            with urllib.request.urlopen(request, timeout=120) as response:
                assert response.status == 200

        for _ in range(3):  # what starts once (the warm start's threads) has started
            listing()
        # When the file browser lists it 20 times, one listing after the other
        seen = _threads(server.pid)
        new: set[int] = set()
        for _ in range(20):
            listing()
            new |= _threads(server.pid) - seen
        # Then the listings' hops ran in the threads already there: each thread was kept for
        # the next request (AnyIO bound it to the session manager's task, not to the request's,
        # whose end stopped it: then about every other listing started one more)
        assert len(new) <= 1, f"{len(new)} threads started by 20 listings"
