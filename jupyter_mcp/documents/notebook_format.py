"""What a notebook file holds, in every version nbformat reads, and the ids of its cells.

Reading: nbformat reads the file (v1 to v3 are converted to v4; v4 minor versions are kept,
newer ones with the cells and fields this nbformat does not know), and the cells get their ids
here, never from nbformat. nbformat gives a cell a random id where its file stores none (every
cell of a v3 notebook, a v4.5 cell without one) or where two cells share one, so two reads of
one file would give two sets of ids. Here a cell keeps the id its file stores when that id is
valid and the first of its value; every other cell gets an id derived from its position and
source. The same file therefore always gives the same ids, after a cache eviction and after a
server restart, to the file tools, the cell tools and (through
:mod:`~jupyter_mcp.documents.jupyter_contents`) to JupyterLab and the shared document; the
first write stores them, as nbformat 4.5, the first version that keeps ids.

Writing: as Jupyter writes a notebook (nbformat's JSON and a final newline), never adding a
validation error the notebook did not have. A cell of a type this nbformat does not know (a
newer minor version's) is kept as it is: nbformat relaxes its schema for newer minor versions
on purpose, so that such notebooks survive.

nbformat is imported where it is used: the code-analysis worker imports the notebook view,
which imports this module.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError

if TYPE_CHECKING:
    from nbformat import NotebookNode

#: The cell types nbformat 4 defines; a newer minor version may add others.
KNOWN_CELL_TYPES = ("code", "markdown", "raw")
#: The first version whose cells keep ids, which every write of the tools stores.
IDS_SINCE = (4, 5)
#: nbformat's rule for a cell id.
_VALID_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def is_known_cell(cell: Any) -> bool:
    """True for a code, markdown or raw cell (the types the tools can show and edit)."""
    return isinstance(cell, dict) and cell.get("cell_type") in KNOWN_CELL_TYPES


def source_text(cell: Any) -> str:
    """A cell's source as one string ("" for a cell without one, as a newer type may be)."""
    source = cell.get("source", "") if isinstance(cell, dict) else ""
    if isinstance(source, list):
        return "".join(str(line) for line in source)
    return source if isinstance(source, str) else ""


def derived_id(index: int, source: str, taken: set[str]) -> str:
    """The id of the cell at ``index`` whose file gives it none: from its position and source,
    so the same file always gives the same id, and not one of ``taken``."""
    cell_id = hashlib.sha1(f"{index}\0{source}".encode(errors="replace")).hexdigest()[:8]
    while cell_id in taken:
        cell_id = hashlib.sha1(cell_id.encode()).hexdigest()[:8]
    return cell_id


def cell_ids(stored: list[Any], sources: list[str]) -> list[str]:
    """The ids of a notebook's cells, given the ids its file stores (None where it stores
    none) and the cells' sources.

    A stored id is kept when it is valid and the first cell to have it; the others (missing,
    invalid, or a later cell repeating an id) are derived, never equal to another cell's.
    """
    keep = []
    taken: set[str] = set()
    for cell_id in stored:
        good = isinstance(cell_id, str) and _VALID_ID.fullmatch(cell_id) is not None
        keep.append(good and cell_id not in taken)
        if good:
            taken.add(cell_id)
    ids = []
    for index, (cell_id, kept) in enumerate(zip(stored, keep, strict=True)):
        if not kept:
            cell_id = derived_id(index, sources[index], taken)
            taken.add(cell_id)
        ids.append(cell_id)
    return ids


def give_ids(nb: Any) -> None:
    """Give every cell of a notebook whose cells are all known an id, in place: kept where it
    has a valid one of its own, derived (as :func:`cell_ids`) where not.

    For the live documents, whose cells came with ids (those JupyterLab or the shared
    document loaded, see :mod:`~jupyter_mcp.documents.jupyter_contents`).
    """
    cells = nb.get("cells") or []
    ids = cell_ids([c.get("id") for c in cells], [source_text(c) for c in cells])
    for cell, cell_id in zip(cells, ids, strict=True):
        cell["id"] = cell_id


def version_of(nb: Any) -> tuple[int, int]:
    """``(major, minor)`` of a parsed notebook (a missing minor reads as 0, as nbformat has it)."""
    major, minor = nb.get("nbformat", 4), nb.get("nbformat_minor", 0)
    return (major if isinstance(major, int) else 4, minor if isinstance(minor, int) else 0)


@dataclass(frozen=True)
class Stored:
    """What a notebook file says of itself, as stored (before the tools change it)."""

    major: int
    #: None when the file has no minor version.
    minor: int | None
    #: Whether every cell's id is in the file (else the first write stores them).
    ids_stored: bool

    @property
    def version(self) -> str:
        """``"4.2"``, ``"3.0"``, or ``"4"`` for a file without a minor version."""
        return f"{self.major}" if self.minor is None else f"{self.major}.{self.minor}"

    @property
    def upgraded_on_write(self) -> bool:
        """Whether the first write changes the file's format (a version or its cells' ids)."""
        return (self.major, self.minor or 0) < IDS_SINCE or not self.ids_stored


def check_structure(nb: Any, shown: str) -> None:
    """Refuse (ToolError) a notebook whose cells the tools could not work with.

    A cell of a type nbformat 4 does not define passes (kept as it is); one of a known type
    needs a source.
    """
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ToolError(f"{shown} is not a valid notebook: it has no list of cells")
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
            raise ToolError(f"{shown} is not a valid notebook: cell {index} has no valid cell_type")
        if not isinstance(cell.get("metadata", {}), dict):
            raise ToolError(
                f"{shown} is not a valid notebook: the metadata of cell {index} is not an object"
            )
        source = cell.get("source")
        if is_known_cell(cell) and not (
            isinstance(source, str)
            or isinstance(source, list)
            and all(isinstance(line, str) for line in source)
        ):
            raise ToolError(
                f"{shown} is not a valid notebook: cell {index} ({cell['cell_type']}) has no "
                "valid source"
            )


def parse_notebook(raw: str, shown: str) -> tuple[NotebookNode, Stored]:
    """Parse notebook JSON of any version nbformat reads into an nbformat 4 notebook whose
    cells all have ids (see the module docstring), and what the file said of itself.

    Sources are strings. Raises :class:`ToolError` with the reason when it is no notebook
    nbformat reads, or one whose cells the tools could not work with.
    """
    import nbformat
    from nbformat.reader import get_version

    try:
        data = json.loads(raw)
    except ValueError as e:
        raise ToolError(f"{shown} is not a valid notebook: it is not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ToolError(f"{shown} is not a valid notebook: it is not a JSON object")
    major, minor = get_version(data)
    if not isinstance(major, int) or major not in nbformat.versions:
        raise ToolError(
            f"{shown} is not a valid notebook: nbformat {nbformat.__version__} reads versions "
            f"{', '.join(map(str, sorted(nbformat.versions)))}, not {major!r}"
        )
    if not isinstance(minor, int | None):
        raise ToolError(f"{shown} is not a valid notebook: its nbformat_minor is {minor!r}")
    if not isinstance(data.get("metadata", {}), dict):
        raise ToolError(f"{shown} is not a valid notebook: its metadata is not an object")
    if major == 4:
        check_structure(data, shown)
        stored: list[Any] = [cell.get("id") for cell in data["cells"]]
    else:
        stored = []  # ids are no part of nbformat 3 and older
    try:
        nb = nbformat.versions[major].to_notebook_json(data, minor=minor)
        nb = nbformat.convert(nb, 4)
    except AttributeError as e:  # nbformat's way of saying a key is missing
        raise ToolError(f"{shown} is not a valid notebook: it lacks the key {e}") from None
    except Exception as e:  # nbformat raises many types for notebooks it cannot convert
        raise ToolError(f"{shown} is not a valid notebook: {e}") from None
    had_minor = isinstance(data.get("nbformat_minor"), int)
    if not isinstance(nb.get("nbformat_minor"), int):
        nb["nbformat_minor"] = 0  # as nbformat's get_version reads it; the first write says 5
    check_structure(nb, shown)
    cells = nb["cells"]
    if len(stored) != len(cells):
        stored = [None] * len(cells)
    sources = [source_text(cell) for cell in cells]
    ids = cell_ids(stored, sources)
    for cell, cell_id in zip(cells, ids, strict=True):
        if is_known_cell(cell):
            cell["source"] = source_text(cell)
        cell["id"] = cell_id
    found = Stored(
        major=major,
        minor=minor if had_minor else None,
        ids_stored=major == 4 and (minor or 0) >= 5 and stored == ids,
    )
    return nb, found


def read_notebook(raw: str, shown: str) -> NotebookNode:
    """Parse notebook JSON of any version (see :func:`parse_notebook`)."""
    return parse_notebook(raw, shown)[0]


def validation_problem(nb: Any) -> str | None:
    """Why nbformat finds ``nb`` invalid as it would be stored (with its ids, so as nbformat
    4.5 at least); None when it is valid. Newer minor versions are checked the way nbformat
    checks them, unknown cells and fields allowed."""
    from nbformat.validator import iter_validate

    major, minor = version_of(nb)
    if (major, minor) < IDS_SINCE:
        nb = {**nb, "nbformat": 4, "nbformat_minor": 5}
    try:
        for error in iter_validate(nb):
            where = ".".join(str(part) for part in getattr(error, "path", ()) or ())
            message = getattr(error, "message", None) or str(error).splitlines()[0]
            return f"{where}: {message}" if where else str(message)
    except Exception as e:  # a notebook nbformat cannot even check
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return None


def upgraded_for_write(nb: Any) -> None:
    """Make ``nb`` the version a write stores: nbformat 4.5 when it is older (its cells have
    ids, which 4.5 is the first to keep), in place; newer minor versions stay as they are."""
    if version_of(nb) < IDS_SINCE:
        nb["nbformat"], nb["nbformat_minor"] = IDS_SINCE


def dump_notebook(nb: Any) -> str:
    """Serialise a notebook as Jupyter writes a notebook file (nbformat's JSON, a final
    newline)."""
    import nbformat

    # Edits may put plain dicts into the notebook; nbformat's writer wants NotebookNodes.
    text = nbformat.writes(nbformat.from_dict(nb), version=nbformat.NO_CONVERT)
    return text if text.endswith("\n") else text + "\n"


def upgrade_note(shown: str, stored: Stored, *, saved_by: str = "") -> str | None:
    """What a result says when a change is the one that upgrades a notebook file; None when
    the file's format does not change. ``saved_by`` says who stores the change when it is not
    this write (jupyter-collaboration, a JupyterLab window)."""
    if not stored.upgraded_on_write:
        return None
    when = f"when {saved_by} saves this change" if saved_by else "by this change"
    if (stored.major, stored.minor or 0) < IDS_SINCE:
        return (
            f"{shown} was nbformat {stored.version} and is stored as nbformat 4.5 {when} (as "
            "JupyterLab saves it), its cells with the ids they were read with"
        )
    return f"The ids {shown}'s cells were read with are stored {when} (the file lacked some)"


@dataclass
class ParsedFile:
    """A notebook file parsed (shared by every reader of that state of the file: never change
    ``nb``), what it said of itself, and its validation verdict, computed once when asked."""

    nb: NotebookNode
    stored: Stored
    #: The version (the file's stamp) it was parsed at.
    version: Hashable = None
    _problem: list[str | None] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def problem(self) -> str | None:
        """Why nbformat finds the notebook invalid (see :func:`validation_problem`), or None."""
        with self._lock:
            if not self._problem:
                self._problem.append(validation_problem(self.nb))
            return self._problem[0]


#: Parsed notebook files by key (their path), with the version (stamp) they were read at.
#: Parsing costs milliseconds per hundred cells, and agents re-read the same notebooks, often
#: several times in one answer (opening it, then its snapshot, then each result window).
_PARSED_SIZE = 16
_parsed: dict[Hashable, tuple[Hashable, ParsedFile]] = {}
_parsed_lock = threading.Lock()


def parsed_file(
    key: Hashable, version: Hashable | None, load: Callable[[], str], shown: str
) -> ParsedFile:
    """The notebook file ``key`` at ``version`` parsed, from the cache when it was parsed at
    that version; ``load`` gives its JSON text when it has to be parsed. A None version is
    never cached (a file that cannot be stat-ed)."""
    if version is not None:
        with _parsed_lock:
            found = _parsed.get(key)
        if found is not None and found[0] == version:
            return found[1]
    nb, stored = parse_notebook(load(), shown)
    parsed = ParsedFile(nb, stored, version)
    if version is not None:
        with _parsed_lock:
            _parsed.pop(key, None)  # re-inserted last: the oldest entry goes first
            _parsed[key] = (version, parsed)
            while len(_parsed) > _PARSED_SIZE:
                _parsed.pop(next(iter(_parsed)))
    return parsed


def notebook_language(nb: Any) -> str | None:
    """The language a notebook's metadata names (kernelspec, then language_info); None when
    it names none, or its metadata is not what nbformat describes."""
    metadata = nb.get("metadata") if isinstance(nb, dict) else None
    if not isinstance(metadata, dict):
        return None
    kernelspec, info = metadata.get("kernelspec"), metadata.get("language_info")
    for value in (
        kernelspec.get("language") if isinstance(kernelspec, dict) else None,
        info.get("name") if isinstance(info, dict) else None,
    ):
        if isinstance(value, str) and value:
            return value
    return None
