"""The project as ``jupyter-mcp://`` resources: files, notebooks, cells, outputs, variables.

Each kind of resource is read the way the tool that reads the same thing reads it, and is
available exactly when that tool is (its tool set chosen, not disabled): a file as
``get_file_text_by_path`` (its unsaved edits in JupyterLab included, a binary file as its
bytes), a notebook as ``get_notebook_cells``, a cell and its pictures as
``get_notebook_cell``, a kernel's variables as ``get_kernel_variables`` (but only of a kernel
that runs: reading starts none). Paths go through the path jail like every tool argument.

``resources/list`` gives the documents open in JupyterLab first (the most recently focused
window's first), then every project file in the order and with the ignore rules of
``find_files_by_name_substring``; notebooks as notebook resources where the connection may read
them. A watched resource is told of changes from the file on disk, the JupyterLab window
showing it, its shared document (jupyter-collaboration) and, for variables, its kernel.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import mimetypes
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types

from ..core.context import Actor, ToolContext
from ..core.errors import ToolError
from ..core.uris import PREFIX, TEMPLATES, Kind, ResourceURI, format_uri, parse_uri
from ..documents.facts import is_notebook, looks_binary
from ..documents.files import read_file_bytes, read_text
from ..documents.notebook_document import NotebookDocument
from ..documents.notebook_file import FileNotebooks
from ..documents.notebook_view import view_of_notebook
from ..kernels import introspection, managers
from ..kernels.outputs import images_of
from ..kernels.sessions import api_path, find_notebook_kernel
from ..lab.editor import DocumentChange, EditorBridge
from ..lab.live_notebooks import LiveNotebooks, collaboration
from ..lab.notebooks import cell_object, notebook_cells
from .changes import FileWatcher, KernelActivity, SharedDocuments, WriteLog, log
from .registry import (
    Change,
    ChangeListener,
    Contents,
    ListListener,
    ResourceError,
    ResourceProvider,
    Scope,
    completion,
)

#: The tool each kind of resource is read like: the resource is available when it is.
BACKING_TOOL: dict[Kind, str] = {
    "file": "get_file_text_by_path",
    "notebook": "get_notebook_cells",
    "cell": "get_notebook_cell",
    "output": "get_notebook_cell",
    "variables": "get_kernel_variables",
}

#: Seconds between two looks at which project files exist, while a client follows the list.
LISTING_POLL = 1.0
#: Seconds between two looks at which kernel each watched notebook has.
KERNEL_POLL = 1.0
#: Seconds between two reads of a watched file whose changes do not say what they touched.
CHECK_INTERVAL = 0.1

_TEMPLATE_INFO: dict[Kind, tuple[str, str, str, str]] = {
    # kind: name, title, description, mimeType
    "file": (
        "project-file",
        "Project file",
        "A file of the project by its path ({+path}, relative to the project root): its text, "
        "unsaved edits in JupyterLab included; a notebook as its percent-format script "
        "('# %%' cells); a binary file as its bytes.",
        "text/plain",
    ),
    "notebook": (
        "notebook",
        "Notebook as cells",
        "A notebook ({+path}) as cells: id, index, type, source, execution count and outputs as "
        "text, with the notebook's kernel (as get_notebook_cells answers, every cell).",
        "application/json",
    ),
    "cell": (
        "notebook-cell",
        "Notebook cell",
        "One cell ({cellId}) of a notebook ({+path}) in full, as get_notebook_cell answers.",
        "application/json",
    ),
    "output": (
        "notebook-output-image",
        "Picture of a notebook cell's output",
        "The PNG or JPEG of output {index} (0-based) of cell {cellId} of the notebook {+path}; "
        "the notebook tools give each picture output's URI as imageUri.",
        "image/png",
    ),
    "variables": (
        "kernel-variables",
        "Variables of a notebook's kernel",
        "The variables of the running kernel of a notebook ({+path}): name, type, short repr, "
        "length or shape (as get_kernel_variables answers).",
        "application/json",
    ),
}

# Text types by extension where Python's table has none or another one.
_TEXT_TYPES = {
    ".py": "text/x-python",
    ".ipynb": "text/x-python",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".toml": "application/toml",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".json": "application/json",
    ".ts": "text/x-typescript",
    ".tsx": "text/x-typescript",
    ".rs": "text/x-rust",
    ".sh": "text/x-sh",
    ".r": "text/x-r",
    ".jl": "text/x-julia",
    ".cfg": "text/plain",
    ".ini": "text/plain",
    ".txt": "text/plain",
}


def posix_name(path: str) -> str:
    """The last component of a ``/``-separated project path: ``PurePosixPath(path).name``
    without the path object, which every resource link of a call made twice."""
    return path.rstrip("/").rpartition("/")[2]


def mime_type(path: str, *, binary: bool = False) -> str:
    """The MIME type of a project file by its extension (a notebook: its percent text)."""
    name = posix_name(path)
    dot = name.rfind(".")
    # As PurePath.suffix: a leading or trailing dot starts no suffix.
    suffix = name[dot:].lower() if 0 < dot < len(name) - 1 else ""
    if not binary and suffix in _TEXT_TYPES:
        return _TEXT_TYPES[suffix]
    guessed = mimetypes.guess_type(path, strict=False)[0]
    if guessed is not None:
        return guessed
    return "application/octet-stream" if binary else "text/plain"


def _fingerprint(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


@dataclass(eq=False)
class _Watched:
    """The watched resources of one file, and what watches it."""

    path: Path
    shown: str
    api: str
    #: The hub's listener of each watched URI of this file, and what the URI names.
    uris: dict[str, tuple[ResourceURI, ChangeListener]] = field(default_factory=dict)
    stops: list[Callable[[], None]] = field(default_factory=list)
    #: The last content seen of each watched cell or output (cell changes seen by reading).
    prints: dict[str, str] = field(default_factory=dict)
    checking: asyncio.Task[None] | None = None
    #: Authors of the changes the next check of the cells is for.
    check_authors: set[Actor | None] = field(default_factory=set)
    kernel_id: str | None = None
    activity: KernelActivity | None = None


class ProjectResources(ResourceProvider):
    """The ``jupyter-mcp://`` resources of a server's project."""

    def __init__(self, ctx: ToolContext, bridge: EditorBridge | None, writes: WriteLog) -> None:
        self.ctx = ctx
        self.bridge = bridge
        self.writes = writes
        self.files = FileWatcher(writes)
        self._file_notebooks = FileNotebooks(ctx)
        self._shared: SharedDocuments | None = None
        self._watched: dict[Path, _Watched] = {}
        self._kernels: asyncio.Task[None] | None = None
        self._list_listeners: list[ListListener] = []
        self._listing: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        if bridge is not None:
            bridge.add_document_listener(self._window_changed)
            bridge.add_open_listener(self._open_changed)

    # -- the URIs --------------------------------------------------------------------------

    def owns(self, uri: str) -> bool:
        """Every ``jupyter-mcp://`` URI is this provider's."""
        return uri.startswith(PREFIX)

    def _parse(self, scope: Scope, uri: str) -> ResourceURI:
        """What ``uri`` names, once the connection may read that kind of resource."""
        ref = parse_uri(uri)
        if ref is None:
            raise ResourceError(
                f"Resource not found: {uri} is not a resource of this server (the templates "
                "are listed by resources/templates/list)",
                uri,
                not_found=True,
            )
        refusal = scope.refusal(BACKING_TOOL[ref.kind])
        if refusal is not None:
            raise ResourceError(f"Resource {uri} is not available: {refusal}", uri)
        return ref

    def _resolve(self, ref: ResourceURI, uri: str) -> tuple[Path, str]:
        try:
            path = self.ctx.resolve(ref.path)
        except ToolError as e:
            raise ResourceError(f"Resource {uri} is refused: {e}", uri) from None
        return path, self.ctx.relative(path)

    def templates(self, scope: Scope) -> list[types.ResourceTemplate]:
        """The templates of the kinds ``scope`` may read."""
        found = []
        for kind, template in TEMPLATES.items():
            if scope.allows(BACKING_TOOL[kind]):
                name, title, description, mime = _TEMPLATE_INFO[kind]
                found.append(
                    types.ResourceTemplate(
                        name=name,
                        title=title,
                        uri_template=template,
                        description=description,
                        mime_type=mime,
                    )
                )
        return found

    # -- resources/list ----------------------------------------------------------------------

    def _open_documents(self, scope: Scope) -> list[types.Resource]:
        """The documents open in JupyterLab, the most recently focused window's first."""
        if self.bridge is None:
            return []
        found: dict[str, types.Resource] = {}
        for window in self.bridge.windows():
            docs = [window.active] if window.active is not None else []
            for doc in docs + list(window.open):
                try:
                    path = self.ctx.resolve(doc.path)
                except ToolError:
                    continue
                resource = self._entry(scope, self.ctx.relative(path), None, open_doc=doc.dirty)
                if resource is not None and resource.uri not in found:
                    found[resource.uri] = resource
        return list(found.values())

    def _entry(
        self, scope: Scope, shown: str, size: int | None, *, open_doc: bool | None = None
    ) -> types.Resource | None:
        """The listed resource of a project file (a notebook as cells where it may be read so),
        None when the connection may read neither."""
        name = posix_name(shown)
        if is_notebook(shown) and scope.allows(BACKING_TOOL["notebook"]):
            uri, mime = format_uri("notebook", shown), "application/json"
            size = None  # the cells' JSON is not the file's size
        elif scope.allows(BACKING_TOOL["file"]):
            uri, mime = format_uri("file", shown), mime_type(shown)
        else:
            return None
        description = None
        annotations = None
        if open_doc is not None:
            description = "Open in JupyterLab" + (", with unsaved changes" if open_doc else "")
            annotations = types.Annotations(priority=1.0)
        return types.Resource(
            uri=uri,
            name=name,
            title=shown,
            description=description,
            mime_type=mime,
            size=size,
            annotations=annotations,
        )

    async def list_page(
        self, scope: Scope, start: int, limit: int
    ) -> tuple[list[types.Resource], bool]:
        """Open documents first, then every project file (see the module docstring)."""
        opened = self._open_documents(scope)
        found = opened[start : start + limit]
        if not (scope.allows(BACKING_TOOL["file"]) or scope.allows(BACKING_TOOL["notebook"])):
            return found, False
        seen = {r.uri for r in opened}
        position = max(0, start - len(opened))
        while len(found) < limit:
            want = limit - len(found)
            page = await asyncio.to_thread(
                self.ctx.services.search.backend().run,
                "list",
                {"start": position, "limit": want},
            )
            for shown, size in page["files"]:
                entry = self._entry(scope, shown, size)
                position += 1
                if entry is not None and entry.uri not in seen:
                    found.append(entry)
            if position >= page["total"]:
                return found, False
            if not page["files"]:
                return found, False
        return found, True

    # -- resources/read ----------------------------------------------------------------------

    async def read(self, scope: Scope, uri: str) -> list[Contents]:
        """The contents of ``uri`` (see the module docstring)."""
        ref = self._parse(scope, uri)
        path, shown = await asyncio.to_thread(self._resolve, ref, uri)
        if not await asyncio.to_thread(path.exists):
            raise ResourceError(f"Resource not found: {shown} does not exist", uri, not_found=True)
        try:
            if ref.kind == "file":
                return [await self._read_file(uri, path, shown)]
            if ref.kind == "variables":
                return [await self._read_variables(uri, path, shown)]
            doc = await self._notebook(path, shown)
            nb = await doc.snapshot()
            if ref.kind == "notebook":
                found, _ = await notebook_cells(self.ctx, doc, nb)
                return [_json_contents(uri, found)]
            position, cell = _cell(nb, ref, uri, shown)
            if ref.kind == "cell":
                return [_json_contents(uri, cell_object(cell, position, shown=shown))]
            return [_picture(cell, ref, uri, shown)]
        except ToolError as e:
            raise ResourceError(f"Resource {uri} cannot be read: {e}", uri) from None

    async def _notebook(self, path: Path, shown: str) -> NotebookDocument:
        notebooks = self.ctx.services.notebooks
        if notebooks is None:
            raise ToolError("This server has no notebook documents")
        if not is_notebook(path):
            raise ToolError(f"{shown} is not a notebook (.ipynb)")
        # A read leaves no shared document behind: open ones are read, else the file.
        return await notebooks.open(path, shown, create=False)

    async def _read_file(self, uri: str, path: Path, shown: str) -> Contents:
        if await asyncio.to_thread(path.is_dir):
            raise ResourceError(f"Resource {uri}: {shown} is a folder, not a file", uri)
        if is_notebook(path):
            doc = await self._notebook(path, shown)
            if doc.location == "file":
                text = await asyncio.to_thread(read_text, self.ctx, path, shown)
            else:
                text = await _view(await doc.snapshot())
            return types.TextResourceContents(uri=uri, mime_type=mime_type(shown), text=text)
        live = await self._live_text(path)
        if live is not None:
            return types.TextResourceContents(uri=uri, mime_type=mime_type(shown), text=live)
        data = await asyncio.to_thread(read_file_bytes, self.ctx, path, shown)
        if not looks_binary(data):
            with contextlib.suppress(UnicodeDecodeError):
                text = data.decode("utf-8")
                return types.TextResourceContents(uri=uri, mime_type=mime_type(shown), text=text)
        return types.BlobResourceContents(
            uri=uri,
            mime_type=mime_type(shown, binary=True),
            blob=base64.b64encode(data).decode("ascii"),
        )

    async def _live_text(self, path: Path) -> str | None:
        """The text of a file open live: its shared document, or a window's editor with
        unsaved edits; None when the file on disk is what a reader sees."""
        serverapp = self.ctx.serverapp
        extension = collaboration(serverapp) if serverapp is not None else None
        if extension is not None:
            with contextlib.suppress(Exception):
                document = await extension.get_document(
                    path=api_path(self.ctx, path),
                    content_type="file",
                    file_format="text",
                    copy=False,
                )
                if document is not None:
                    text = document.get()
                    if isinstance(text, str):
                        return text
            return None
        if self.bridge is None:
            return None
        for window, doc in self.bridge.documents_at(path):
            if doc.type == "file" and doc.dirty:
                answer = await self.bridge.ask(window=window).document_text(doc.path)
                if isinstance(answer, dict) and isinstance(answer.get("text"), str):
                    return str(answer["text"])
        return None

    async def _read_variables(self, uri: str, path: Path, shown: str) -> Contents:
        if not is_notebook(path):
            raise ToolError(f"{shown} is not a notebook (.ipynb)")
        kernel = await find_notebook_kernel(self.ctx, path)
        if kernel is None:
            raise ResourceError(
                f"Resource not found: {shown} has no running kernel (reading its variables "
                "starts none; run a cell or kernel_action start)",
                uri,
                not_found=True,
            )
        found = await introspection.variables(
            self.ctx.services.executions.clients, kernel.kernel_id, shown, None
        )
        return _json_contents(uri, found)

    # -- completion/complete -------------------------------------------------------------------

    async def complete(
        self, scope: Scope, template: str, argument: str, value: str, context: dict[str, str]
    ) -> types.Completion | None:
        """Paths by project files (prefix, one folder level at a time; notebooks where a
        notebook is meant), cell ids by the notebook's, output indexes by the cell's pictures."""
        kind = next((k for k, t in TEMPLATES.items() if t == template), None)
        if kind is None:
            if not template.startswith(PREFIX):
                return None
            raise ResourceError(f"No resource template {template} to complete", template)
        refusal = scope.refusal(BACKING_TOOL[kind])
        if refusal is not None:
            raise ResourceError(
                f"Resource template {template} is not available: {refusal}", template
            )
        if argument == "path":
            return await self.complete_path(value, notebooks=kind != "file")
        if argument == "cellId" and kind in ("cell", "output"):
            return await self.complete_cell(context.get("path"), value)
        if argument == "index" and kind == "output":
            return await self._complete_output(context.get("path"), context.get("cellId"), value)
        raise ResourceError(f"Resource template {template} has no argument {argument!r}", template)

    async def complete_path(self, value: str, *, notebooks: bool) -> types.Completion:
        """Project paths starting with ``value`` (notebooks and their folders only, with
        ``notebooks``), one folder level at a time."""
        answer = await asyncio.to_thread(
            self.ctx.services.search.backend().run,
            "complete",
            {"prefix": value, "suffix": ".ipynb" if notebooks else "", "limit": 100},
        )
        return completion(answer["values"], answer["total"])

    async def complete_cell(self, notebook: str | None, value: str) -> types.Completion:
        """The ids of the notebook's cells that start with ``value``, in the notebook's order."""
        nb = await self._snapshot_of(notebook)
        if nb is None:
            return completion([])
        ids = [str(c.get("id")) for c in nb["cells"] if str(c.get("id", "")).startswith(value)]
        return completion(ids)

    async def _complete_output(
        self, notebook: str | None, cell_id: str | None, value: str
    ) -> types.Completion:
        nb = await self._snapshot_of(notebook)
        cell = next((c for c in (nb or {}).get("cells", []) if c.get("id") == cell_id), None)
        if cell is None:
            return completion([])
        found = [
            str(n)
            for n, output in enumerate(cell.get("outputs") or [])
            if images_of([output]) and str(n).startswith(value)
        ]
        return completion(found)

    async def _snapshot_of(self, notebook: str | None) -> dict[str, Any] | None:
        if not notebook:
            return None
        try:
            path = await asyncio.to_thread(self.ctx.resolve, notebook)
            doc = await self._notebook(path, self.ctx.relative(path))
            return await doc.snapshot()
        except ToolError:
            return None

    # -- subscriptions ---------------------------------------------------------------------

    def check_watch(self, scope: Scope, uri: str) -> None:
        """A URI of a kind the connection may read, inside the project."""
        ref = self._parse(scope, uri)
        self._resolve(ref, uri)

    async def watch(self, uri: str, changed: ChangeListener) -> Callable[[], None]:
        """Watch one resource: its file on disk, in the windows, shared, its kernel."""
        ref = parse_uri(uri)
        assert ref is not None  # check_watch came first
        path = self.ctx.resolve(ref.path)
        watched = self._watched.get(path)
        if watched is None:
            watched = self._watched[path] = self._start(path)
        watched.uris[uri] = (ref, changed)
        if self._printed(watched, ref):
            # What it is now: a change that cannot say what it touched (the file rewritten, a
            # shared document's transaction) is told to the resources whose content differs.
            watched.prints[uri] = await self._print(watched, ref)
        if ref.kind == "variables":
            await self._follow_kernel(watched)
            if self._kernels is None or self._kernels.done():
                self._kernels = asyncio.get_running_loop().create_task(self._poll_kernels())

        def stop() -> None:
            current = self._watched.get(path)
            if current is None or current.uris.get(uri, (None, None))[1] is not changed:
                return
            del current.uris[uri]
            current.prints.pop(uri, None)
            if not any(r.kind == "variables" for r, _ in current.uris.values()):
                self._stop_kernel(current)
            if not current.uris:
                self._stop(path)

        return stop

    def _start(self, path: Path) -> _Watched:
        shown = self.ctx.relative(path)
        api = api_path(self.ctx, path) if self.ctx.serverapp is not None else shown
        watched = _Watched(path, shown, api)
        watched.stops.append(
            self.files.watch(path, lambda author: self._disk_changed(path, author))
        )
        shared = self._shared_documents()
        if shared is not None:
            watched.stops.append(shared.watch(api, lambda author: self._file_changed(path, author)))
        return watched

    def _stop(self, path: Path) -> None:
        watched = self._watched.pop(path, None)
        if watched is None:
            return
        for stop in watched.stops:
            stop()
        self._stop_kernel(watched)
        if watched.checking is not None:
            watched.checking.cancel()

    def _shared_documents(self) -> SharedDocuments | None:
        if self._shared is None and self.ctx.serverapp is not None:
            extension = collaboration(self.ctx.serverapp)
            if extension is not None:
                self._shared = SharedDocuments(
                    self.ctx.serverapp,
                    extension,
                    self.writes,
                    lambda api: os.path.realpath(self.ctx.root_dir / api),
                )
                notebooks = self.ctx.services.notebooks
                if isinstance(notebooks, LiveNotebooks):
                    notebooks.add_shared_listener(self._shared.opened)
        return self._shared

    # -- changes -> URIs ---------------------------------------------------------------------

    def _tell(self, watched: _Watched, uri: str, authors: set[Actor | None]) -> None:
        entry = watched.uris.get(uri)
        if entry is None:
            return
        for author in authors or {None}:
            entry[1](Change(uri, author))

    def _disk_changed(self, path: Path, author: Actor | None) -> None:
        """The file changed on disk: a change, unless its shared document is open (which
        tells every change itself, a reload from the file included; its own saves change
        nothing)."""
        watched = self._watched.get(path)
        if watched is None:
            return
        if self._shared is not None and self._shared.observing(watched.api):
            return
        self._file_changed(path, author)

    def _file_changed(self, path: Path, author: Actor | None) -> None:
        """The file changed on disk or in its shared document, which cannot say what changed:
        its watched resources are read again (see :meth:`_check`); a plain file on disk has
        changed when its stamp has (the watcher saw to that)."""
        watched = self._watched.get(path)
        if watched is None:
            return
        for uri, (ref, _) in list(watched.uris.items()):
            if ref.kind in ("file", "notebook") and not self._printed(watched, ref):
                self._tell(watched, uri, {author})
        self._check(watched, {author})

    def _printed(self, watched: _Watched, ref: ResourceURI) -> bool:
        """Whether changes of ``ref`` are told by comparing what it reads (its fingerprint):
        everything of a notebook, and a plain file open in a shared document."""
        if ref.kind == "variables":
            return False
        if ref.kind != "file" or is_notebook(watched.path):
            return True
        return self._shared_documents() is not None

    def _window_changed(self, change: DocumentChange) -> None:
        """A window reports a change of a document it shows (before it is saved)."""
        if self._shared_documents() is not None:
            return  # the shared document tells every change, the window's too
        try:
            path = self.ctx.resolve(change.path)
        except ToolError:
            return
        watched = self._watched.get(path)
        if watched is None:
            return
        # The window says which cells changed: no need to read them (the window is never
        # asked here). What it reports is the live document, not the file: the fingerprints,
        # taken of the file, stay as they are.
        authors = set(change.authors)
        for uri, (ref, _) in list(watched.uris.items()):
            if ref.kind == "notebook" or (ref.kind == "file" and change.sources):
                self._tell(watched, uri, authors)
            elif ref.kind in ("cell", "output") and change.cells is not None:
                if ref.cell_id in change.cells:
                    self._tell(watched, uri, authors)
        if change.cells is None:
            for uri, (ref, _) in list(watched.uris.items()):
                if ref.kind in ("cell", "output"):
                    self._tell(watched, uri, authors)

    def _check(self, watched: _Watched, authors: set[Actor | None]) -> None:
        """Read the watched resources again and tell those whose content differs."""
        if not any(self._printed(watched, ref) for ref, _ in watched.uris.values()):
            return
        watched.check_authors |= authors
        if watched.checking is None or watched.checking.done():
            watched.checking = asyncio.get_running_loop().create_task(self._checks(watched))

    async def _checks(self, watched: _Watched) -> None:
        # Changes that come while a check reads are seen by the next round; rounds are at
        # least CHECK_INTERVAL apart, so a stream of keystrokes costs a few reads a second.
        while watched.check_authors:
            authors, watched.check_authors = watched.check_authors, set()
            notebook = is_notebook(watched.path)
            nb = await self._quiet_snapshot(watched) if notebook else None
            text = None if notebook else await self._quiet_text(watched)
            for uri, (ref, _) in list(watched.uris.items()):
                if not self._printed(watched, ref):
                    continue
                now = _print_of(nb, ref, watched.shown) if notebook else _fingerprint(text)
                if watched.prints.get(uri) != now:
                    watched.prints[uri] = now
                    self._tell(watched, uri, authors)
            await asyncio.sleep(CHECK_INTERVAL)

    async def _print(self, watched: _Watched, ref: ResourceURI) -> str:
        if is_notebook(watched.path):
            return _print_of(await self._quiet_snapshot(watched), ref, watched.shown)
        return _fingerprint(await self._quiet_text(watched))

    async def _quiet_text(self, watched: _Watched) -> str | None:
        """A plain file's text as a reader sees it (its shared document's, else the file's)."""
        live = await self._live_text(watched.path)
        if live is not None:
            return live
        try:
            data = await asyncio.to_thread(read_file_bytes, self.ctx, watched.path, watched.shown)
        except (ToolError, OSError):
            return None
        return data.decode("utf-8", "replace")

    async def _quiet_snapshot(self, watched: _Watched) -> dict[str, Any] | None:
        """The notebook as the changes that cannot name their cells leave it: its shared
        document (with jupyter-collaboration), else its file (a window reports which cells it
        changed, and is never asked here); None when it cannot be read (missing, mid-save)."""
        try:
            if self._shared_documents() is not None:
                doc = await self._notebook(watched.path, watched.shown)
            else:
                doc = await self._file_notebooks.open(watched.path, watched.shown)
            return await doc.snapshot()
        except (ToolError, OSError):
            return None

    # -- kernels -------------------------------------------------------------------------------

    async def _follow_kernel(self, watched: _Watched, sessions: list[Any] | None = None) -> None:
        """Listen to the notebook's kernel now; a new kernel (started, changed) is a change."""
        serverapp = self.ctx.serverapp
        if serverapp is None:
            return
        if sessions is None:
            found = await find_notebook_kernel(self.ctx, watched.path)
            kernel_id = found.kernel_id if found is not None else None
        else:
            kernel_id = next(
                (
                    (s.get("kernel") or {}).get("id")
                    for s in sessions
                    if s.get("path") == watched.api and (s.get("kernel") or {}).get("id")
                ),
                None,
            )
        if kernel_id == watched.kernel_id:
            return
        had = watched.kernel_id is not None or watched.activity is not None
        self._stop_kernel(watched)
        watched.kernel_id = kernel_id
        if kernel_id is not None:
            try:
                manager = managers.kernel(serverapp, kernel_id)
            except KeyError:
                watched.kernel_id = None
            else:
                watched.activity = KernelActivity(manager, lambda: self._kernel_ran(watched))
        if had or kernel_id is not None and sessions is not None:
            self._kernel_ran(watched)

    def _kernel_ran(self, watched: _Watched) -> None:
        for uri, (ref, _) in list(watched.uris.items()):
            if ref.kind == "variables":
                self._tell(watched, uri, {None})

    def _stop_kernel(self, watched: _Watched) -> None:
        if watched.activity is not None:
            watched.activity.stop()
            watched.activity = None
        watched.kernel_id = None

    async def _poll_kernels(self) -> None:
        while True:
            await asyncio.sleep(KERNEL_POLL)
            following = [
                w
                for w in self._watched.values()
                if any(r.kind == "variables" for r, _ in w.uris.values())
            ]
            if not following:
                return
            try:
                sessions = await self.ctx.serverapp.session_manager.list_sessions()
            except Exception:  # the server stops
                log.debug("resource subscriptions: no sessions", exc_info=True)
                continue
            for watched in following:
                await self._follow_kernel(watched, sessions)

    # -- the list ----------------------------------------------------------------------------

    def watch_list(self, changed: ListListener) -> Callable[[], None]:
        """Tell ``changed`` when a window opens or closes a document, or a project file
        appears or goes (looked at every :data:`LISTING_POLL` s while someone listens)."""
        self._list_listeners.append(changed)
        if self._listing is None or self._listing.done():
            self._listing = asyncio.get_running_loop().create_task(self._poll_listing())

        def stop() -> None:
            if changed in self._list_listeners:
                self._list_listeners.remove(changed)

        return stop

    def _open_changed(self) -> None:
        self._list_changed()

    def _list_changed(self) -> None:
        for listener in list(self._list_listeners):
            try:
                listener()
            except Exception:
                log.exception("resource subscriptions: a list listener failed")

    async def _poll_listing(self) -> None:
        last: int | None = None
        while self._list_listeners:
            try:
                version = await asyncio.to_thread(
                    self.ctx.services.search.backend().run, "listing", {}
                )
            except ToolError:  # the worker stops, or is busy: look again later
                version = last
            if last is not None and version != last:
                self._list_changed()
            last = version
            await asyncio.sleep(LISTING_POLL)

    async def close(self) -> None:
        """Stop watching everything."""
        for path in list(self._watched):
            self._stop(path)
        for task in (self._kernels, self._listing):
            if task is not None:
                task.cancel()
        self._list_listeners.clear()
        self.files.close()
        if self._shared is not None:
            self._shared.close()


def _json_contents(uri: str, value: Any) -> types.TextResourceContents:
    return types.TextResourceContents(
        uri=uri, mime_type="application/json", text=json.dumps(value, ensure_ascii=False)
    )


async def _view(nb: dict[str, Any]) -> str:
    import nbformat

    node = nbformat.from_dict(nb)
    return await asyncio.to_thread(view_of_notebook, node)


def _cell(nb: dict[str, Any], ref: ResourceURI, uri: str, shown: str) -> tuple[int, Any]:
    for position, cell in enumerate(nb["cells"]):
        if cell.get("id") == ref.cell_id:
            return position, cell
    raise ResourceError(
        f"Resource not found: {shown} has no cell with id {ref.cell_id!r}", uri, not_found=True
    )


def _picture(cell: dict[str, Any], ref: ResourceURI, uri: str, shown: str) -> Contents:
    outputs = cell.get("outputs") or []
    index = ref.index if ref.index is not None else 0
    if index >= len(outputs):
        raise ResourceError(
            f"Resource not found: cell {ref.cell_id} of {shown} has no output {index}",
            uri,
            not_found=True,
        )
    images = images_of([outputs[index]])
    if not images:
        raise ResourceError(
            f"Output {index} of cell {ref.cell_id} of {shown} is not a picture", uri
        )
    return types.BlobResourceContents(uri=uri, mime_type=images[0].mime_type, blob=images[0].data)


def _print_of(nb: dict[str, Any] | None, ref: ResourceURI, shown: str) -> str:
    """What a resource of a notebook reads now, as a fingerprint ("" when it is not there):
    the file view's cells, the notebook's cells as the resource gives them, one cell, one
    output. Positions (a cell's index) are left out: a cell moved by others is not changed."""
    if nb is None:
        return ""
    cells = nb.get("cells", [])
    if ref.kind == "file":
        return _fingerprint([(c.get("cell_type"), c.get("source")) for c in cells])
    if ref.kind == "notebook":
        return _fingerprint([_cell_print(c, shown) for c in cells])
    cell = next((c for c in cells if c.get("id") == ref.cell_id), None)
    if cell is None:
        return ""
    if ref.kind == "output":
        outputs = cell.get("outputs") or []
        index = ref.index or 0
        return _fingerprint(images_of([outputs[index]])) if index < len(outputs) else ""
    return _fingerprint(_cell_print(cell, shown))


def _cell_print(cell: dict[str, Any], shown: str) -> dict[str, Any]:
    found = cell_object(cell, 0, shown=shown)
    found.pop("index", None)
    return found
