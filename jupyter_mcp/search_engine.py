"""Searching the project index, in a worker process so the server never waits on it.

:func:`search_content` and :func:`find_names` are pure functions over a refreshed
:class:`~jupyter_mcp.search_index.ProjectIndex`. A server runs them in a child process
(:class:`WorkerSearch`, ``python -m jupyter_mcp.search_engine``) that owns the index, its file
watches and its text cache: a scan of a large tree then runs on another core and never holds
the server's GIL, so the event loop stays responsive while searches run. :class:`LocalSearch`
runs the same code in-process (tests, or when no child can be started).

Wire format between server and worker: frames of a 4-byte big-endian length and UTF-8 JSON;
``{"op", "args", "maxFileBytes", "cacheBytes"}`` one way, ``{"result"}`` or ``{"error"}`` back.
"""

from __future__ import annotations

import json
import logging
import os
import re
import select
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pathspec

from .errors import ToolError
from .search_index import DEFAULT_CACHE_BYTES, FileEntry, ProjectIndex

DEFAULT_MAX_RESULTS = 1000
PREVIEW_CHARS = 200
_FRAME = struct.Struct(">I")

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

    The spec's result is an array of files, so the flag rides on the last real entry rather
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


def find_names(
    index: ProjectIndex, nameSubstring: str, maxResults: int = DEFAULT_MAX_RESULTS
) -> list[dict[str, Any]]:
    """Files of a refreshed ``index`` whose name contains ``nameSubstring``, best first."""
    needle = nameSubstring.casefold()
    ranked: list[tuple[int, int, str, FileEntry]] = []
    for entry in index.files():
        name = entry.name.casefold()
        if needle not in name:
            continue
        rank = 0 if name == needle else 1 if name.startswith(needle) else 2
        ranked.append((rank, len(entry.rel), entry.rel, entry))
    ranked.sort(key=lambda r: r[:3])
    results: list[dict[str, Any]] = [
        {
            "path": entry.rel,
            "name": entry.name,
            "directory": entry.rel.rpartition("/")[0],
            "absolutePath": entry.path,
        }
        for *_, entry in ranked[:maxResults]
    ]
    if len(ranked) > maxResults:
        mark_truncated(results, maxResults)
    return results


OPERATIONS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "content": search_content,
    "names": find_names,
}


# ------------------------------------------------------------------------------ backends


class LocalSearch:
    """Runs searches in the calling thread over an index of this process."""

    def __init__(
        self,
        root: Path | str,
        max_file_bytes: int,
        *,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
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


def _write_frame(stream: IO[bytes], value: Any) -> None:
    data = json.dumps(value, ensure_ascii=False).encode("utf-8")
    stream.write(_FRAME.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("the other end closed the pipe")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> Any:
    (size,) = _FRAME.unpack(_read_exactly(stream, _FRAME.size))
    return json.loads(_read_exactly(stream, size))


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
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        timeout: float = 120.0,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.max_file_bytes = max_file_bytes
        self.cache_bytes = cache_bytes
        self.timeout = timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _start(self) -> subprocess.Popen[bytes]:
        # The child imports this very package, wherever the server imported it from.
        package_parent = str(Path(__file__).resolve().parent.parent)
        python_path = os.environ.get("PYTHONPATH")
        env = {
            **os.environ,
            "PYTHONPATH": package_parent + (os.pathsep + python_path if python_path else ""),
        }
        try:
            return subprocess.Popen(
                [sys.executable, "-m", "jupyter_mcp.search_engine", str(self.root)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                close_fds=True,
                env=env,
            )
        except OSError as e:
            raise ToolError(f"Could not start the search worker process: {e}") from e

    def run(self, op: str, args: dict[str, Any]) -> Any:
        """Send one operation to the child and return its result (or raise its ToolError)."""
        request = {
            "op": op,
            "args": args,
            "maxFileBytes": self.max_file_bytes,
            "cacheBytes": self.cache_bytes,
        }
        with self._lock:
            if self._closed:
                raise ToolError("The server is shutting down; search is not available")
            for attempt in (1, 2):
                proc = self._proc
                if proc is None or proc.poll() is not None:
                    proc = self._proc = self._start()
                assert proc.stdin is not None and proc.stdout is not None
                try:
                    _write_frame(proc.stdin, request)
                    ready, _, _ = select.select([proc.stdout], [], [], self.timeout)
                    if not ready:
                        self._stop(proc, kill=True)
                        self._proc = None
                        raise ToolError(
                            f"The search took longer than {self.timeout:g} s and was stopped; "
                            "narrow it (a simpler pattern, include globs)"
                        )
                    answer = _read_frame(proc.stdout)
                    break
                except (OSError, EOFError, ValueError) as e:
                    log.warning("search worker failed (%s); restarting it", e)
                    self._stop(proc)
                    self._proc = None
                    if attempt == 2:
                        raise ToolError(f"The search worker process failed: {e}") from e
        if "error" in answer:
            raise ToolError(answer["error"])
        return answer["result"]

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes], *, kill: bool = False) -> None:
        if kill:
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Stop the child (it also exits by itself when the server's end of the pipe closes)."""
        self._closed = True
        with self._lock:
            if self._proc is not None:
                self._stop(self._proc)
                self._proc = None


# ------------------------------------------------------------------------------ the worker


def serve(root: str, requests: IO[bytes], answers: IO[bytes]) -> None:
    """The worker's loop: answer frames from ``requests`` until the stream closes."""
    index: ProjectIndex | None = None
    while True:
        try:
            request = _read_frame(requests)
        except EOFError:
            break
        try:
            limit = int(request["maxFileBytes"])
            budget = int(request.get("cacheBytes", DEFAULT_CACHE_BYTES))
            if index is None or index.max_file_bytes != limit or index.cache_bytes != budget:
                if index is not None:
                    index.close()
                index = ProjectIndex(root, max_file_bytes=limit, cache_bytes=budget)
            index.refresh()
            answer: dict[str, Any] = {"result": OPERATIONS[request["op"]](index, **request["args"])}
        except ToolError as e:
            answer = {"error": e.message}
        except Exception as e:
            log.exception("search failed")
            answer = {"error": f"Search failed: {type(e).__name__}: {e}"}
        _write_frame(answers, answer)
    if index is not None:
        index.close()


def main() -> None:
    """Entry point of ``python -m jupyter_mcp.search_engine ROOT``."""
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    # Anything printed by accident (Python or C) goes to stderr, never into the frames.
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, format="[search worker] %(message)s")
    serve(sys.argv[1], requests, answers)


if __name__ == "__main__":
    main()
