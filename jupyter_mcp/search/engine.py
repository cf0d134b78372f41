"""Searching the project index, in a worker process so the server never waits on it.

:func:`search_content` and :func:`find_names` are pure functions over a refreshed
:class:`~jupyter_mcp.search.index.ProjectIndex`. A server runs them in a child process
(:class:`WorkerSearch`) that owns the index, its file
watches and its text cache: a scan of a large tree then runs on another core and never holds
the server's GIL, so the event loop stays responsive while searches run. :class:`LocalSearch`
runs the same code in-process (tests, or when no child can be started).

The child is a :class:`~jupyter_mcp.core.worker.WorkerProcess` running :func:`worker_handler`; a
request is ``(op, args)``, answered with the operation's result.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pathspec

from ..core.context import Settings
from ..core.errors import ToolError
from ..core.worker import (
    WorkerBusy,
    WorkerDied,
    WorkerFailed,
    WorkerProcess,
    WorkerStartFailed,
    WorkerTimeout,
)
from .index import FileEntry, ProjectIndex

DEFAULT_MAX_RESULTS = 1000
PREVIEW_CHARS = 200

log = logging.getLogger("jupyter_mcp.search")


# ------------------------------------------------------------------------------ matching


class Query:
    """A compiled search: a literal (fast path) or a regular expression."""

    def __init__(self, text: str, *, regex: bool = False, case_sensitive: bool = True) -> None:
        self.literal: str | None = None
        self.pattern: re.Pattern[str] | None = None
        #: For a literal, case-insensitive ASCII query: the lower-cased text to look for in
        #: lower-cased files (see :func:`_candidates`).
        self.folded: str | None = None
        #: The characters of FOLD_SPECIALS that may match a letter of the query: files
        #: holding one go through the regular expression instead.
        self.specials = ""
        if not regex and not case_sensitive and text.isascii():
            self.folded = text.lower()
            self.specials = ("ſ" if "s" in self.folded else "") + (
                "ıİ" if "i" in self.folded else ""
            )
        if not regex and case_sensitive:
            self.literal = text
            return
        flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
        source = text if regex else re.escape(text)
        try:
            self.pattern = re.compile(source, flags)
        except re.error as e:
            raise ToolError(f"Invalid regular expression {text!r}: {e}") from e

    def found_in(self, text: str) -> bool:
        """Whether ``text`` has at least one match."""
        if self.literal is not None:
            return self.literal in text
        assert self.pattern is not None
        return self.pattern.search(text) is not None

    def spans(self, text: str, lowered: str | None = None) -> Iterator[int]:
        """Start offsets of the non-overlapping matches in ``text``.

        ``lowered`` is ``text.lower()``, given for ASCII text when the query has ``folded``.
        """
        needle, haystack = self.literal, text
        if needle is None and self.folded is not None and lowered is not None and text.isascii():
            needle, haystack = self.folded, lowered  # same offsets: ASCII keeps its length
        if needle is not None:
            step = len(needle)
            start = haystack.find(needle)
            while start >= 0:
                yield start
                start = haystack.find(needle, start + step)
            return
        assert self.pattern is not None
        for match in self.pattern.finditer(text):
            yield match.start()


def _preview(line: str, column: int) -> str:
    if len(line) <= PREVIEW_CHARS:
        return line
    start = max(0, min(column - PREVIEW_CHARS // 4, len(line) - PREVIEW_CHARS))
    end = start + PREVIEW_CHARS
    return ("…" if start else "") + line[start:end] + ("…" if end < len(line) else "")


def locate(text: str, starts: Iterator[int], limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Line (1-based), column (0-based, characters) and preview of up to ``limit`` matches.

    The second value is True when there were more matches than ``limit``.
    """
    found: list[dict[str, Any]] = []
    line = 1
    line_start = 0
    scanned = 0
    for start in starts:
        if len(found) >= limit:
            return found, True
        newlines = text.count("\n", scanned, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", 0, start) + 1
        scanned = start
        line_end = text.find("\n", start)
        if line_end < 0:
            line_end = len(text)
        body = text[line_start:line_end].rstrip("\r")
        column = start - line_start
        found.append({"line": line, "column": column, "preview": _preview(body, column)})
    return found, False


def globs(value: str | list[str] | None, field: str) -> pathspec.GitIgnoreSpec | None:
    """gitignore-style patterns as a matcher; None when there are none."""
    if value is None:
        return None
    patterns = [value] if isinstance(value, str) else list(value)
    patterns = [p for p in patterns if p.strip()]
    if not patterns:
        return None
    try:
        return pathspec.GitIgnoreSpec.from_lines(patterns)
    except Exception as e:  # pathspec raises several types for malformed patterns
        raise ToolError(f"Invalid glob in {field}: {e}") from e


def _selected(
    entry: FileEntry,
    include: pathspec.GitIgnoreSpec | None,
    exclude: pathspec.GitIgnoreSpec | None,
) -> bool:
    if include is not None and not include.match_file(entry.rel):
        return False
    return exclude is None or not exclude.match_file(entry.rel)


def mark_truncated(results: list[dict[str, Any]], limit: int) -> None:
    """Flag a result cut at ``limit``: its last entry gets ``truncated`` and ``maxResults``.

    The tool's result is an array of files, so the flag rides on the last real entry rather
    than on an extra entry without a path.
    """
    if results:
        results[-1]["truncated"] = True
        results[-1]["maxResults"] = limit


def _candidates(index: ProjectIndex, query: Query) -> Iterator[tuple[FileEntry, str, str | None]]:
    """The files where ``query`` has a match, in path order: entry, text, lowered text."""
    if query.folded is not None:
        # str.lower maps every other character that IGNORECASE matches with an ASCII letter
        # (such as the Kelvin sign) onto that letter, one character for one: the substring test
        # on the lower-cased copy finds exactly the files the regular expression would.
        folded = query.folded
        specials = query.specials
        search = query.found_in
        for entry, text, lowered, present in index.folded():
            if folded in lowered:
                yield entry, text, lowered
            elif present and specials and any(c in present for c in specials):
                if search(text):
                    yield entry, text, lowered
        return
    if query.literal is not None:
        literal = query.literal
        for entry, text in index.searchable():
            if literal in text:
                yield entry, text, None
        return
    search = query.found_in
    for entry, text in index.searchable():
        if search(text):
            yield entry, text, None


def search_content(
    index: ProjectIndex,
    searchText: str,
    regex: bool = False,
    caseSensitive: bool = True,
    include: str | list[str] | None = None,
    exclude: str | list[str] | None = None,
    maxResults: int = DEFAULT_MAX_RESULTS,
) -> list[dict[str, Any]]:
    """Files of a refreshed ``index`` containing ``searchText``, with every match located."""
    query = Query(searchText, regex=regex, case_sensitive=caseSensitive)
    include_spec = globs(include, "include")
    exclude_spec = globs(exclude, "exclude")
    results: list[dict[str, Any]] = []
    remaining = maxResults
    for entry, text, lowered in _candidates(index, query):
        if (include_spec or exclude_spec) and not _selected(entry, include_spec, exclude_spec):
            continue
        if remaining == 0:  # another file matches: the result was cut
            mark_truncated(results, maxResults)
            break
        matches, more = locate(text, query.spans(text, lowered), remaining)
        if not matches:
            continue
        results.append({"path": entry.rel, "absolutePath": entry.path, "matches": matches})
        remaining -= len(matches)
        if more:
            mark_truncated(results, maxResults)
            break
    return results


def _ranked(index: ProjectIndex, needle: str) -> list[FileEntry]:
    """The files whose case-folded name contains ``needle``, best first: the exact name, then
    names starting with it, then the rest; within each, shorter paths first, then by path."""
    ranked: list[tuple[int, int, str, FileEntry]] = []
    for entry in index.files():
        name = entry.name.casefold()
        if needle not in name:
            continue
        rank = 0 if name == needle else 1 if name.startswith(needle) else 2
        ranked.append((rank, len(entry.rel), entry.rel, entry))
    ranked.sort(key=lambda r: r[:3])
    return [entry for *_, entry in ranked]


def find_names(
    index: ProjectIndex, nameSubstring: str, maxResults: int = DEFAULT_MAX_RESULTS
) -> list[dict[str, Any]]:
    """Files of a refreshed ``index`` whose name contains ``nameSubstring``, best first."""
    ranked = _ranked(index, nameSubstring.casefold())
    results: list[dict[str, Any]] = [
        {
            "path": entry.rel,
            "name": entry.name,
            "directory": entry.rel.rpartition("/")[0],
            "absolutePath": entry.path,
        }
        for entry in ranked[:maxResults]
    ]
    if len(ranked) > maxResults:
        mark_truncated(results, maxResults)
    return results


#: The listing order of the last :func:`list_files`: the index's file list it was made from
#: (the same object while no file came or went) and the order.
_listed: dict[int, tuple[list[FileEntry], list[FileEntry]]] = {}


def list_files(index: ProjectIndex, start: int = 0, limit: int = 1000) -> dict[str, Any]:
    """A page of every project file, in :func:`find_names`' order for a name that every file
    has (shorter paths first): ``{"files": [[path, size], ...], "total": n}``."""
    files = index.files()
    cached = _listed.get(id(index))
    if cached is None or cached[0] is not files:
        cached = _listed[id(index)] = (files, _ranked(index, ""))
    ordered = cached[1]
    page = ordered[start : start + limit]
    return {"files": [[e.rel, e.stamp[1]] for e in page], "total": len(ordered)}


def complete_paths(
    index: ProjectIndex, prefix: str, suffix: str = "", limit: int = 100
) -> dict[str, Any]:
    """Completions of a path typed so far, one folder level at a time, as a shell completes.

    The project files (ending in ``suffix``, case-insensitive, when given) whose path starts
    with ``prefix`` (case-insensitive) give the files of ``prefix``'s folder and its
    sub-folders that hold such files (``name/``), sorted: ``{"values", "total"}``.
    """
    folded = prefix.casefold()
    folder = prefix[: prefix.rfind("/") + 1]
    wanted = suffix.casefold()
    found: set[str] = set()
    for entry in index.files():
        rel = entry.rel
        if not rel.casefold().startswith(folded):
            continue
        if wanted and not rel.casefold().endswith(wanted):
            continue
        rest = rel[len(folder) :]
        head, slash, _ = rest.partition("/")
        found.add(rel[: len(folder)] + head + slash)
    ordered = sorted(found, key=lambda v: (v.casefold(), v))
    return {"values": ordered[:limit], "total": len(ordered)}


def listing_version(index: ProjectIndex) -> int:
    """A number that changes whenever a project file appears or goes."""
    return index.listing_version


def index_size(index: ProjectIndex) -> int:
    """How many files of a refreshed ``index`` are searched: the warm-up's request, which makes
    the worker build its index (and read the files) before the first search needs it."""
    return len(index.searchable())


OPERATIONS: dict[str, Callable[..., Any]] = {
    "content": search_content,
    "names": find_names,
    "list": list_files,
    "complete": complete_paths,
    "listing": listing_version,
    "warm": index_size,
}


# ------------------------------------------------------------------------------ backends


class LocalSearch:
    """Runs searches in the calling thread over an index of this process."""

    def __init__(
        self,
        root: Path | str,
        max_file_bytes: int,
        *,
        cache_bytes: int = Settings.search_cache_bytes,
        **index_options: Any,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.max_file_bytes = max_file_bytes
        self.cache_bytes = cache_bytes
        self.index = ProjectIndex(
            self.root, max_file_bytes=max_file_bytes, cache_bytes=cache_bytes, **index_options
        )
        self._lock = threading.Lock()

    def run(self, op: str, args: dict[str, Any]) -> Any:
        """Refresh the index, then run operation ``op`` (see :data:`OPERATIONS`)."""
        with self._lock:
            self.index.refresh()
        return OPERATIONS[op](self.index, **args)

    def close(self) -> None:
        """Drop the index's file watches."""
        self.index.close()


class WorkerSearch:
    """Runs searches in a child process that keeps the index (started on first use).

    Calls are serialised (the child works on one search at a time); a child that died is
    started again on the next call. A call that takes longer than ``timeout`` seconds (a
    regular expression that backtracks without end, say) kills the child and fails.
    """

    def __init__(
        self,
        root: Path | str,
        max_file_bytes: int,
        *,
        cache_bytes: int = Settings.search_cache_bytes,
        timeout: float = 120.0,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.max_file_bytes = max_file_bytes
        self.cache_bytes = cache_bytes
        self.timeout = timeout
        self.worker = WorkerProcess(
            "jupyter_mcp.search.engine",
            str(self.root),
            str(max_file_bytes),
            str(cache_bytes),
            timeout=timeout,
        )

    @property
    def _proc(self) -> subprocess.Popen[bytes] | None:
        """The child process (None before the first search and after a stop)."""
        return self.worker.proc

    def run(self, op: str, args: dict[str, Any]) -> Any:
        """Send one operation to the child and return its result (or raise its ToolError)."""
        if self.worker.closed:
            raise ToolError("The server is shutting down; search is not available")
        for attempt in (1, 2):
            try:
                return self.worker.call((op, args))
            except WorkerBusy as e:
                raise ToolError(
                    f"Other searches kept the search worker busy for {self.timeout:g} s; try again"
                ) from e
            except WorkerTimeout as e:
                raise ToolError(
                    f"The search took longer than {self.timeout:g} s and was stopped; "
                    "narrow it (a simpler pattern, include globs)"
                ) from e
            except WorkerStartFailed as e:
                raise ToolError(f"Could not start the search worker process: {e}") from e
            except WorkerDied as e:
                # It had the request: running it again could end the same way. Say so.
                raise ToolError(
                    f"The search worker process stopped during this search ({e}); "
                    "try again (the next search starts a new one)"
                ) from e
            except WorkerFailed as e:
                if self.worker.closed:
                    raise ToolError("The server is shutting down; search is not available") from e
                log.warning("search worker failed (%s); restarting it", e)
                if attempt == 2:
                    raise ToolError(f"The search worker process failed: {e}") from e
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Stop the child (it also exits by itself when the server's end of the pipe closes)."""
        self.worker.close()


# ------------------------------------------------------------------------------ the worker


class _Handler:
    """The worker's side: the index, refreshed before each operation."""

    def __init__(self, root: str, max_file_bytes: int, cache_bytes: int) -> None:
        self.index = ProjectIndex(root, max_file_bytes=max_file_bytes, cache_bytes=cache_bytes)

    def __call__(self, request: tuple[str, dict[str, Any]]) -> Any:
        """Run one ``(op, args)`` request over the refreshed index."""
        op, args = request
        try:
            self.index.refresh()
            return OPERATIONS[op](self.index, **args)
        except ToolError:
            raise
        except Exception as e:
            log.exception("search failed")
            raise ToolError(f"Search failed: {type(e).__name__}: {e}") from e

    def close(self) -> None:
        """Drop the index's file watches."""
        self.index.close()


def worker_handler(root: str, max_file_bytes: str, cache_bytes: str) -> _Handler:
    """The search worker (``python -m jupyter_mcp.core.worker jupyter_mcp.search.engine ROOT
    MAX_FILE_BYTES CACHE_BYTES``, see :class:`jupyter_mcp.core.worker.WorkerProcess`): a request is
    ``(op, args)`` (see :data:`OPERATIONS`), answered with the operation's result."""
    return _Handler(root, int(max_file_bytes), int(cache_bytes))
