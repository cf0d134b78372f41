"""The listing of a folder through Jupyter's async file managers, in one worker hop.

``AsyncFileContentsManager._dir_model`` (jupyter_server 2.21.1) makes one ``run_sync`` hop per
folder entry (its ``os.lstat``), some 3 event-loop turns each: ~400 turns for a folder of 135
entries, and under load (10-20 ms a turn) the user's listing of the project root took 3-8 s.
Its per-entry ``get(content=False)`` awaits nothing else; only its ``emit`` must run on the
loop (jupyter_events starts its listeners as tasks). :func:`list_in_one_hop` has the stock
managers build the whole listing with the same per-entry logic (the manager's own
``_get_os_path``, ``_base_model``, ``should_list``, jupyter_core's hidden-file rules) in one
worker hop, then emits on the loop the events Jupyter emits, in its order.

Only the code it reproduces is replaced: a manager whose class or instance overrides one of
the methods involved, whose ``get`` is wrapped by anyone but us, or a jupyter_server whose
code of those methods differs from the one reproduced here (by the digest of its source),
lists the stock way.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import inspect
import mimetypes
import os
import stat
from collections.abc import Callable
from typing import Any

from anyio.to_thread import run_sync
from jupyter_core.paths import is_file_hidden, is_hidden
from jupyter_server.services.contents.filemanager import (
    AsyncFileContentsManager,
    FileContentsManager,
)
from tornado import web

# The methods the listing calls or reproduces: the stock ones only.
_STOCK = (
    "_dir_model",
    "_file_model",
    "_notebook_model",
    "_base_model",
    "_get_os_path",
    "get",
    "exists",
    "is_writable",
    "should_list",
)  # not emit: the listing calls the manager's own, on the loop, as Jupyter does
# sha256 of the source of the methods reproduced below, as of jupyter_server 2.21.1.
REPRODUCED_DIGEST = "affbe00d49df92be868d9358c4c3b34ab394c406a6d573b6885db8147eea8c03"


def stock_digest() -> str | None:
    """The digest of the installed jupyter_server's source of the reproduced methods."""
    try:
        text = "".join(
            inspect.getsource(f)
            for f in (
                AsyncFileContentsManager._dir_model,
                AsyncFileContentsManager._file_model,
                AsyncFileContentsManager._notebook_model,
                AsyncFileContentsManager.get,
                FileContentsManager._base_model,
            )
        )
    except (OSError, TypeError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def _same_code() -> bool:
    return stock_digest() == REPRODUCED_DIGEST


def _stock_get(get: Any) -> bool:
    # Our own wrappers (jupyter_contents) do nothing to a model without content.
    while getattr(get, "serves_stable_ids", False) or getattr(get, "takes_file_locks", False):
        get = get.__wrapped__
    return getattr(get, "__func__", None) is AsyncFileContentsManager.get


def reproducible(manager: Any) -> bool:
    """Whether ``manager`` lists folders with the code reproduced here."""
    if not isinstance(manager, AsyncFileContentsManager) or not _same_code():
        return False
    cls = type(manager)
    return (
        all(getattr(cls, n) is getattr(AsyncFileContentsManager, n) for n in _STOCK)
        and not any(n in manager.__dict__ for n in _STOCK if n not in ("get", "_dir_model"))
        and _stock_get(manager.get)
    )


def _entry_model(cm: Any, path: str) -> tuple[dict[str, Any], str]:
    """Stock ``get(path, content=False)`` without its emit; returns the model and the path
    the emit names."""
    path = path.strip("/")
    if not cm.exists(path):
        raise web.HTTPError(404, f"No such file or directory: {path}")
    os_path = cm._get_os_path(path)
    if os.path.isdir(os_path):
        # _dir_model(path, content=False)
        if not os.path.isdir(os_path):
            raise web.HTTPError(404, f"directory does not exist: {path!r}")
        elif not cm.allow_hidden and is_hidden(os_path, cm.root_dir):
            cm.log.info("Refusing to serve hidden directory %r, via 404 Error", os_path)
            raise web.HTTPError(404, f"directory does not exist: {path!r}")
        model = cm._base_model(path)
        model["type"] = "directory"
        model["size"] = None
    elif path.endswith(".ipynb"):
        model = cm._base_model(path)
        model["type"] = "notebook"
    else:
        model = cm._base_model(path)
        model["type"] = "file"
        model["mimetype"] = mimetypes.guess_type(os_path)[0]
    return model, path


def _listing(cm: Any, path: str) -> tuple[dict[str, Any], list[str], BaseException | None]:
    """Stock ``_dir_model(path, content=True)`` with its hops made plain calls and its
    emits left to the caller: the model, the paths to emit, and the error the stock code
    would raise after those emits."""
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
    model["content"] = contents = []
    emitted: list[str] = []
    os_dir = os_path
    try:
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
                    entry, emit_path = _entry_model(cm, f"{path}/{name}")
                    contents.append(entry)
                    emitted.append(emit_path)
            except OSError as e:
                if e.errno not in [errno.ELOOP, errno.EACCES]:
                    cm.log.warning(
                        "Unknown error checking if file %r is hidden", os_path, exc_info=True
                    )
    except Exception as e:  # the stock code raises it after the emits so far
        return model, emitted, e
    model["format"] = "json"
    return model, emitted, None


def list_in_one_hop(contents_manager: Any, ctx: Any = None) -> Callable[[], None] | None:
    """Have a stock async file manager list a folder in one worker hop (see the module
    docstring); returns the function that puts the original back, or None when the manager
    is not one whose code is reproduced here or already lists so."""
    original = contents_manager._dir_model
    if getattr(original, "lists_in_one_hop", False) or not reproducible(contents_manager):
        return None

    @functools.wraps(original)
    async def _dir_model(path: str, content: bool = True) -> Any:
        # Checked at each listing: a wrapper of get installed later makes it the stock way.
        if not content or not reproducible(contents_manager):
            return await original(path, content=content)
        model, emitted, error = await run_sync(_listing, contents_manager, path)
        for emit_path in emitted:
            contents_manager.emit(data={"action": "get", "path": emit_path})
        if error is not None:
            raise error
        return model

    _dir_model.lists_in_one_hop = True  # type: ignore[attr-defined]
    contents_manager._dir_model = _dir_model

    def restore() -> None:
        if contents_manager.__dict__.get("_dir_model") is _dir_model:
            del contents_manager._dir_model

    return restore
