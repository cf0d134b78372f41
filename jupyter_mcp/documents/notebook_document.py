"""A notebook wherever it lives: what the notebook and kernel tools change it through.

An open notebook is changed in the live document (the JupyterLab window showing it, or the
server's shared document when jupyter-collaboration is installed), so the user sees each edit
and output at once, undo works and unsaved edits are kept; a closed one in its file, through
the one write transaction of :mod:`jupyter_mcp.documents.files`. The tools do not know which:
they ask :class:`NotebookDocuments` for the document of a path and talk to it.

Cells are nbformat v4 cell dicts, every one with an ``id``: those the notebook's file stores, or
derived from it where it stores none (see :mod:`~jupyter_mcp.documents.notebook_format`), and
stored by the first change, as JupyterLab does when it saves. A cell may be of a type nbformat 4
does not define (a newer minor version's); the edits keep it as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")

#: Where a notebook document lives.
Location = Literal["file", "window", "shared"]


class NotebookDocument(Protocol):
    """One notebook, in its file or live."""

    #: The notebook's real path (inside the project).
    path: Path
    #: How tools name it to the agent (the path relative to the project root).
    shown: str
    location: Location
    #: What the last :meth:`change` of this document has to tell the agent beside its result
    #: (``upgraded``: it changed the file's nbformat version or stored its cells' ids;
    #: ``invalid``: nbformat finds the notebook invalid, and the change left that as it was).
    notes: dict[str, str]

    async def snapshot(self) -> dict[str, Any]:
        """The notebook as it is now: an nbformat v4 dict, cells with ids, live when open."""
        ...

    def version(self) -> Hashable | None:
        """A value that differs whenever the notebook may have changed since it was taken
        (its file's stamp, the shared document's change count); None when that cannot be told
        (a window's cells, read over the bridge)."""
        ...

    async def change(self, edit: Callable[[dict[str, Any]], T]) -> T:
        """Apply ``edit`` to the notebook under its lock and answer what ``edit`` returned.

        ``edit`` gets the current notebook (as :meth:`snapshot` gives it) and changes it in
        place; resolving a cell and acting on it happen in one step, so a concurrent write of
        the file tools or the user never slips in between. A :class:`ToolError` raised by
        ``edit`` leaves the notebook unchanged.
        """
        ...

    # Execution: the kernel layer reports a running cell through these, in this order.

    async def run_started(self, cell_id: str) -> None:
        """The cell starts running: its outputs are cleared, its count shows ``[*]``."""
        ...

    async def output(self, cell_id: str, output: dict[str, Any]) -> None:
        """One nbformat output arrived (a stream continues the previous one of its name)."""
        ...

    async def clear_output(self, cell_id: str) -> None:
        """The kernel cleared the cell's outputs (``clear_output``)."""
        ...

    async def run_finished(self, cell_id: str, execution_count: int | None) -> None:
        """The cell finished (or was interrupted): the count is set, the outputs are kept."""
        ...


class NotebookDocuments(Protocol):
    """Opens the document of a notebook path, choosing where it lives."""

    async def open(self, path: Path, shown: str, *, create: bool = True) -> NotebookDocument:
        """The document of the notebook at ``path`` (an existing ``.ipynb`` in the project).

        ``create``: whether a live document may be made for it when none is open (a shared
        document, with jupyter-collaboration); a reader that must not leave one behind says
        False and gets the file's document then.

        Raises :class:`~jupyter_mcp.core.errors.ToolError` for a missing file or one that is
        not a notebook.
        """
        ...
