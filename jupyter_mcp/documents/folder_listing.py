"""The listing of a folder through Jupyter's async file managers, in one worker hop.

``AsyncFileContentsManager._dir_model`` (jupyter_server 2.21.1) makes one ``run_sync`` hop per
folder entry (its ``os.lstat``), some 3 event-loop turns each: ~400 turns for a folder of 135
entries, and under load (10-20 ms a turn) the user's listing of the project root took 3-8 s.
Its per-entry ``get(content=False)`` makes no hop (the stock one, and jupytext's, which the
server runs when jupytext is installed, with its configuration cached per folder), and it is
what emits the manager's events, on the loop. So :func:`list_in_one_hop` does the part of
``_dir_model`` that makes hops (the folder's checks and model, its listing, each entry's
``lstat`` and the hidden-file and ``should_list`` rules) in one worker hop, with the same
code, then has the manager's own ``get`` make each entry's model on the loop, in order, as
Jupyter does: the models and events are the manager's own, whichever ``get`` it has. Those
gets do not suspend, so the loop is given back after every ``TURN_SECONDS`` of them: a big
folder's listing does not hold it for all of them at once.

Only the code it reproduces is replaced: a manager whose class or instance overrides one of
the methods that run in the worker, or a jupyter_server whose ``_dir_model`` or
``_base_model`` differ from the ones reproduced here (by the digest of their source), lists
the stock way.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import hashlib
import inspect
import os
import stat
import time
from collections.abc import Callable
from typing import Any

from anyio.to_thread import run_sync
from jupyter_core.paths import is_file_hidden, is_hidden
from jupyter_server.services.contents.filemanager import (
    AsyncFileContentsManager,
    FileContentsManager,
)
from tornado import web

from .jupyter_contents import install_wrappers

# The methods that run in the worker hop (or are replaced): the stock ones only. The
# entries' get (and what it calls) runs on the loop: any manager's own will do.
_STOCK = ("_dir_model", "_base_model", "_get_os_path", "should_list")
#: Seconds of entries' models made in one turn of the event loop before it is given back:
#: each turn given back waits behind the others' (15 ms p50 under bench_agents' load), so
#: only as many as the listing needs, and none for a small folder.
TURN_SECONDS = 0.005
# sha256 of the source of the methods reproduced below, as of jupyter_server 2.21.1.
REPRODUCED_DIGEST = "c41327b3c0a39c7c2154ded43f2cfe8b07ba06d22c2aaf755733d9c3ce55098a"


def stock_digest() -> str | None:
    """The digest of the installed jupyter_server's source of the reproduced methods."""
    try:
        text = "".join(
            inspect.getsource(f)
            for f in (AsyncFileContentsManager._dir_model, FileContentsManager._base_model)
        )
    except (OSError, TypeError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def _same_code() -> bool:
    return stock_digest() == REPRODUCED_DIGEST


def reproducible(manager: Any) -> bool:
    """Whether ``manager`` lists folders with the code reproduced here."""
    if not isinstance(manager, AsyncFileContentsManager) or not _same_code():
        return False
    cls = type(manager)
    return all(getattr(cls, n) is getattr(AsyncFileContentsManager, n) for n in _STOCK) and not any(
        n in manager.__dict__ for n in _STOCK if n != "_dir_model"
    )


def _listing(cm: Any, path: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Stock ``_dir_model(path, content=True)`` up to each entry's ``get``: the folder's
    model without its content, and the entries to get (name, os path), in order."""
    os_path = cm._get_os_path(path)
    four_o_four = f"directory does not exist: {path!r}"
    if not os.path.isdir(os_path):
        raise web.HTTPError(404, four_o_four)
    elif not cm.allow_hidden and is_hidden(os_path, cm.root_dir):
        cm.log.info("Refusing to serve hidden directory %r, via 404 Error", os_path)
        raise web.HTTPError(404, four_o_four)
    model = cm._base_model(path)
    model["type"] = "directory"
    model["size"] = None
    entries: list[tuple[str, str]] = []
    os_dir = os_path
    for name in os.listdir(os_dir):
        try:
            os_path = os.path.join(os_dir, name)
        except UnicodeDecodeError as e:
            cm.log.warning("failed to decode filename '%s': %r", name, e)
            continue
        try:
            st = os.lstat(os_path)
        except OSError as e:
            if e.errno == errno.ENOENT:
                cm.log.warning("%s doesn't exist", os_path)
            elif e.errno != errno.EACCES:
                cm.log.warning("Error stat-ing %s: %r", os_path, e)
            continue
        if (
            not stat.S_ISLNK(st.st_mode)
            and not stat.S_ISREG(st.st_mode)
            and not stat.S_ISDIR(st.st_mode)
        ):
            cm.log.debug("%s not a regular file", os_path)
            continue
        try:
            if cm.should_list(name) and (
                cm.allow_hidden or not is_file_hidden(os_path, stat_res=st)
            ):
                entries.append((name, os_path))
        except OSError as e:
            _unknown_error(cm, e, os_path)
    return model, entries


def _unknown_error(cm: Any, e: OSError, os_path: str) -> None:
    # ELOOP: recursive symlink, also don't show failure due to permissions (Jupyter's words)
    if e.errno not in [errno.ELOOP, errno.EACCES]:
        cm.log.warning("Unknown error checking if file %r is hidden", os_path, exc_info=True)


def list_in_one_hop(contents_manager: Any) -> Callable[[], None] | None:
    """Have a stock async file manager list a folder in one worker hop (see the module
    docstring); returns the function that puts the original back, or None when the manager
    is not one whose code is reproduced here or already lists so."""
    original = contents_manager._dir_model
    if getattr(original, "lists_in_one_hop", False) or not reproducible(contents_manager):
        return None

    @functools.wraps(original)
    async def _dir_model(path: str, content: bool = True) -> Any:
        # Checked at each listing: an override installed later makes it the stock way.
        if not content or not reproducible(contents_manager):
            return await original(path, content=content)
        model, entries = await run_sync(_listing, contents_manager, path)
        model["content"] = contents = []
        turn = time.perf_counter()
        for name, os_path in entries:
            if time.perf_counter() - turn >= TURN_SECONDS:
                # The entries' gets do not suspend: without a turn given back, a folder's
                # listing held the loop for all of them at once (the project root of
                # bench_agents, 121 entries: 25 ms idle, 100-190 ms under load, a late
                # /api/status for everyone else meanwhile).
                await asyncio.sleep(0)
                turn = time.perf_counter()
            try:
                contents.append(await contents_manager.get(path=f"{path}/{name}", content=False))
            except OSError as e:
                _unknown_error(contents_manager, e, os_path)
        model["format"] = "json"
        return model

    return install_wrappers(contents_manager, "lists_in_one_hop", _dir_model=_dir_model)
