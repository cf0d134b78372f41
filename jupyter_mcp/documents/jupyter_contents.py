"""Jupyter's contents manager hands out the cell ids the tools give out, and writes a file
under the lock the tools take for it.

JupyterLab (through the contents API) and jupyter-collaboration (loading a shared document)
read notebooks through the server's contents manager, which reads them with nbformat: each cell
nbformat finds without an id, or sharing one, gets a random id there, another one at each read.
A JupyterLab window or a shared document of a v3 notebook, of a v4.5 one whose cells lack ids
or share them, would then show other ids than the tools give out for the same file, and other
ones again after a reload or a server restart. With :func:`serve_stable_ids` the manager's
``get`` hands out the ids of :mod:`~jupyter_mcp.documents.notebook_format` instead (the ids a
cell's file stores, derived ones where it stores none): the tools, every window and the shared
document agree on them, and whoever saves first stores them.

Such a notebook is handed out as nbformat 4.5 when its file is older (as JupyterLab makes a
notebook it loads, and as the first write stores it): an older minor version has no room for
ids. Only a notebook whose cells are those the tools read from its file (same count, same
sources) gets them; anything else (a contents manager that makes notebooks from other files, a file
changed between the two reads) is handed out as the manager made it.

With :func:`share_file_locks` the manager saves a file, and reads a file's content, under
the file's lock (see :func:`~jupyter_mcp.documents.files.transaction`). Jupyter saves a file in
place: it copies it to ``.~name``, empties it, writes the new content and removes the copy. Two
such saves at once, or a read in between, break the file: the second save copies the emptied
file as its backup; a read of a notebook that finds it empty (or cut short) with a backup beside
it takes the save for a crashed one, moves the file being written to ``name.invalid`` and the
backup over it, so that the save then writes a file nobody reads. jupyter-collaboration orders
only the saves and loads of one shared document among themselves; the lock orders them with
every other save (a window's, a copy's), with the contents API's reads and with the tools'
writes. (Upstream, as of jupyter_server 2.21.1 and jupyter_server_ydoc 3.0.4: the in-place
write is ``atomic_writing`` in ``jupyter_server/services/contents/fileio.py`` line 103, the
restore ``AsyncFileManagerMixin._read_notebook`` line 518 of that file, and the one lock
``FileLoader._lock`` in ``jupyter_server_ydoc/loaders.py`` line 41.)
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

from ..core.context import ToolContext, held
from ..core.errors import ToolError
from .facts import is_notebook, stamp_of_stat
from .files import settled_bytes
from .notebook_format import parsed_file, source_text, upgraded_for_write


def serve_stable_ids(contents_manager: Any, ctx: ToolContext) -> Callable[[], None] | None:
    """Wrap ``contents_manager.get`` (sync or async, as the manager has it) so that notebooks
    come with the tools' cell ids; returns the function that puts the original back, or None
    when the manager already hands them out."""
    original = contents_manager.get
    if getattr(original, "serves_stable_ids", False):
        return None

    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def get(*args: Any, **kwargs: Any) -> Any:
            model = await original(*args, **kwargs)
            if _wanted(model):
                await asyncio.to_thread(with_stable_ids, ctx, model)
            return model

    else:

        @functools.wraps(original)
        def get(*args: Any, **kwargs: Any) -> Any:
            model = original(*args, **kwargs)
            if _wanted(model):
                with_stable_ids(ctx, model)
            return model

    return install_wrappers(contents_manager, "serves_stable_ids", get=get)


def _wanted(model: Any) -> bool:
    return (
        isinstance(model, dict)
        and model.get("type") == "notebook"
        and isinstance(model.get("content"), dict)
        and isinstance(model["content"].get("cells"), list)
    )


def with_stable_ids(ctx: ToolContext, model: dict[str, Any]) -> None:
    """Give the cells of a contents model of a notebook file the tools' ids, in place (see the
    module docstring); a model whose cells are not those of its file is left as it is."""
    try:
        path = ctx.resolve(str(model.get("path") or ""))
        if not is_notebook(path):
            return
        st = path.stat()
        if st.st_size > ctx.settings.max_file_bytes:
            return  # the tools refuse it: no ids to agree on
        parsed = parsed_file(
            path, stamp_of_stat(st), lambda: settled_bytes(path).decode("utf-8"), str(model["path"])
        )
    except (ToolError, OSError, UnicodeDecodeError, ValueError):
        return  # the tools cannot read it either
    cells = model["content"]["cells"]
    ours = parsed.nb.cells
    if len(cells) != len(ours) or any(
        not isinstance(cell, dict) or source_text(cell) != source_text(mine)
        for cell, mine in zip(cells, ours, strict=True)
    ):
        return
    for cell, mine in zip(cells, ours, strict=True):
        cell["id"] = mine["id"]
    # Cells with ids are nbformat 4.5 (an older minor version has no room for them: a copy
    # saved from this model would not be valid), as JupyterLab makes a notebook it loads and
    # as the first write stores it.
    upgraded_for_write(model["content"])


def share_file_locks(contents_manager: Any, ctx: ToolContext) -> Callable[[], None] | None:
    """Have ``contents_manager`` save a file, and read a file's content or hash, under the
    file's lock (see the module docstring); returns the function that puts the original
    methods back, or None when the manager already takes the locks or is not asynchronous (a
    synchronous manager would wait for a lock on the event loop, which the tools' writes may
    need before they give it back)."""
    save, get = contents_manager.save, contents_manager.get
    if getattr(save, "takes_file_locks", False) or not inspect.iscoroutinefunction(save):
        return None
    if not inspect.iscoroutinefunction(get):
        return None

    def lock_of(api_path: Any) -> Any:
        try:
            path = ctx.resolve(str(api_path or "").strip("/"))
        except ToolError:  # outside the project (a root the tools do not serve): no lock
            return None
        # A folder is never saved in place: its listings need not wait for one another.
        return None if path.is_dir() else ctx.locks(path)

    @functools.wraps(save)
    async def locked_save(model: Any, path: str = "", *args: Any, **kwargs: Any) -> Any:
        lock = lock_of(path)
        if lock is None:
            return await save(model, path, *args, **kwargs)
        async with held(lock):
            return await save(model, path, *args, **kwargs)

    @functools.wraps(get)
    async def locked_get(path: str, *args: Any, **kwargs: Any) -> Any:
        # Only a read of the file's bytes can meet a save half done: a model without content
        # takes no lock, so a save never holds up the listing of its folder.
        content = kwargs.get("content", args[0] if args else True)
        lock = lock_of(path) if content or kwargs.get("require_hash") else None
        if lock is None:
            return await get(path, *args, **kwargs)
        async with held(lock):
            return await get(path, *args, **kwargs)

    return install_wrappers(contents_manager, "takes_file_locks", save=locked_save, get=locked_get)


def install_wrappers(
    manager: Any, marker: str, **wrappers: Callable[..., Any]
) -> Callable[[], None]:
    """Put each wrapper on ``manager`` as an instance attribute over its class's method,
    marked with ``marker`` (so that adapting the manager again sees it is done); returns the
    function that takes off those still in place (one another wrapper has replaced since is
    left to that one)."""
    for name, wrapper in wrappers.items():
        setattr(wrapper, marker, True)
        setattr(manager, name, wrapper)

    def restore() -> None:
        for name, wrapper in wrappers.items():
            if manager.__dict__.get(name) is wrapper:
                delattr(manager, name)

    return restore
