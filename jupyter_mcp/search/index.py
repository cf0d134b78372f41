"""The project walk behind search: which files count, and an in-memory cache of their text.

What counts as a project file is decided by :mod:`jupyter_mcp.project.walk` (ignore rules,
VCS folders, symlinks), the same walk code analysis and run configurations use; search also
leaves out binary files (a NUL byte in the first block) and files over the size limit.
Notebooks are indexed as their percent-format text view.

The :class:`ProjectIndex` keeps every searchable file's text in memory so that a search is a
scan of strings, not a read of thousands of files. On Linux it watches every indexed folder
with inotify and reads the pending events at the start of each refresh; the kernel queues an
event before a write returns, so a file written just before a search is seen by it. Where
inotify is not available (or its limits are reached) every refresh re-stats the whole tree.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.context import Settings
from ..core.errors import ToolError
from ..core.paths import sealed_names
from ..documents.facts import Stamp, is_notebook, looks_binary, stamp_of, stamp_of_stat
from ..documents.notebook_view import view_of, view_of_json
from ..project.events import GONE, IGNORED, Q_OVERFLOW, WATCH_MASK, open_events, pending
from ..project.walk import (
    IGNORE_FILE,
    IgnoreRules,
    classify,
    folder_rules,
    outer_rule_files,
    root_rules,
)

#: Characters that re.IGNORECASE matches with an ASCII letter but that ``str.lower`` does not
#: turn into that letter alone (ſ → s; ı and İ → i).
FOLD_SPECIALS = "ſıİ"
# A file modified this close to the moment it was read may change again within the same
# timestamp tick; such "racy" entries are read again on the next refresh (git does the same).
_RACY_NS = 50_000_000

log = logging.getLogger("jupyter_mcp.search")


# --------------------------------------------------------------------------- the index


@dataclass(eq=False)
class FileEntry:
    """One project file as the index knows it."""

    rel: str
    path: str
    name: str
    stamp: tuple[int, int, int]
    #: True for a symlink (to a file inside the root), whose target is re-checked each refresh.
    link: bool = False
    #: None until read; then "text", "binary", "large" or "unreadable".
    kind: str | None = None
    #: The searchable text (a notebook's view), when kept in memory.
    text: str | None = None
    #: ``text.lower()``, made on the first case-insensitive search.
    folded: str | None = None
    #: The characters of :data:`FOLD_SPECIALS` that the text holds (None: not looked yet).
    specials: str | None = None
    racy: bool = False

    def _cached(self) -> int:
        return len(self.text or "") + len(self.folded or "")


@dataclass(eq=False)
class _Dir:
    rel: str
    path: str
    rules: IgnoreRules
    ignore_stamp: tuple[int, int, int] | None = None
    files: dict[str, FileEntry] = field(default_factory=dict)
    dirs: dict[str, _Dir] = field(default_factory=dict)
    wd: int | None = None
    mtime_ns: int = 0
    alive: bool = True


class ProjectIndex:
    """The searchable files of one project folder, with their text cached in memory.

    Call :meth:`refresh` before using :meth:`files` or :meth:`searchable`; it brings the index
    up to date with the disk (events or stats) and reads new or changed files. All methods are
    thread-safe; searches over the returned lists need no lock.
    """

    def __init__(
        self,
        root: Path | str,
        *,
        max_file_bytes: int = Settings.search_max_file_bytes,
        cache_bytes: int = Settings.search_cache_bytes,
        use_events: bool = True,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.max_file_bytes = max_file_bytes
        self.cache_bytes = cache_bytes
        self._use_events = use_events
        self._lock = threading.RLock()
        self._inotify: Any = None
        self._wds: dict[int, _Dir] = {}
        self._top: _Dir | None = None
        self._outer: list[tuple[str, str]] = []
        self._outer_stamps: list[tuple[int, int, int] | None] = []
        self._links: set[FileEntry] = set()
        self._racy: set[FileEntry] = set()
        self._unloaded: set[FileEntry] = set()
        self._cached_chars = 0
        self._sorted: list[FileEntry] | None = None
        self._texts: list[tuple[FileEntry, str | None]] | None = None
        self._folded: list[tuple[FileEntry, str, str, str]] | None = None
        self._uncached = False
        self._closed = False
        #: Counts the files that appeared or went (see :attr:`listing_version`).
        self._listing = 0

    # ----------------------------------------------------------------- public

    @property
    def listing_version(self) -> int:
        """A number that changes whenever a file appears in the index or leaves it."""
        return self._listing

    @property
    def watching(self) -> bool:
        """True while file events keep the index fresh (else each refresh re-stats the tree)."""
        return self._inotify is not None

    def close(self) -> None:
        """Stop watching; the index can still be used (it falls back to stat checks)."""
        with self._lock:
            self._closed = True
            self._stop_events()

    def refresh(self) -> None:
        """Bring the index up to date with the disk and read every new or changed file."""
        with self._lock:
            # A few stats: the repository around the root may appear, or its rules change.
            outer = outer_rule_files(self.root)
            outer_stamps = [stamp_of(p) for p, _ in outer]
            if self._top is None or outer != self._outer or outer_stamps != self._outer_stamps:
                self._build()
            elif self._inotify is not None:
                self._apply_events()
            else:
                self._poll(self._top)
            for entry in list(self._links):
                stamp = stamp_of(entry.path)
                if stamp != entry.stamp:
                    self._invalidate(entry, stamp)
            for entry in list(self._racy):
                self._invalidate(entry, stamp_of(entry.path))
            for entry in list(self._unloaded):
                self._load(entry)

    def files(self) -> list[FileEntry]:
        """Every indexed file (searchable or not), sorted by project path."""
        with self._lock:
            if self._sorted is None:
                self._sorted = sorted(self._iter_files(self._top), key=lambda e: e.rel)
            return self._sorted

    def searchable(self) -> list[tuple[FileEntry, str]]:
        """The files whose content is searched, with their text, sorted by project path."""
        with self._lock:
            if self._texts is None:
                texts = [(e, e.text) for e in self.files() if e.kind == "text"]
                self._uncached = any(text is None for _, text in texts)
                self._texts = texts
            texts = self._texts
        if not self._uncached:
            return texts  # type: ignore[return-value]
        found = []
        for entry, text in texts:
            if text is None:  # over the cache budget: read from disk each time
                text = read_searchable(entry.path, entry.name, entry.stamp, self.max_file_bytes)[1]
                if text is None:
                    continue
            found.append((entry, text))
        return found

    def folded(self) -> list[tuple[FileEntry, str, str, str]]:
        """Like :meth:`searchable`, plus each text lower-cased (``str.lower``) and which of
        the characters in :data:`FOLD_SPECIALS` it holds.

        The lower-cased copies are made on the first case-insensitive search and kept within
        the cache budget, so that such a search is a plain substring test.
        """
        with self._lock:
            if self._folded is None:
                found = []
                for entry, text in self.searchable():
                    folded = entry.folded
                    if folded is None:
                        folded = text.lower()
                        if entry.text is not None and (
                            self._cached_chars + len(folded) <= self.cache_bytes
                        ):
                            entry.folded = folded
                            self._cached_chars += len(folded)
                    specials = entry.specials
                    if specials is None:
                        specials = entry.specials = (
                            "" if text.isascii() else "".join(c for c in FOLD_SPECIALS if c in text)
                        )
                    found.append((entry, text, folded, specials))
                if self._uncached:
                    return found
                self._folded = found
            return self._folded

    def _changed(self) -> None:
        self._sorted = None
        self._texts = None
        self._folded = None

    # ----------------------------------------------------------------- building

    def _build(self) -> None:
        """(Re)build the whole tree, reusing cached texts whose file did not change."""
        previous = {e.rel: e for e in self._iter_files(self._top)} if self._top else {}
        self._stop_events()
        if self._use_events and not self._closed:
            try:
                self._inotify = open_events()
            except OSError as e:
                log.info("search index: no file events (%s); using stat checks", e)
        self._outer = outer_rule_files(self.root)
        self._outer_stamps = [stamp_of(p) for p, _ in self._outer]
        rules = root_rules(self._outer)
        self._links.clear()
        self._racy.clear()
        self._unloaded.clear()
        self._cached_chars = 0
        self._top = _Dir(rel="", path=str(self.root), rules=rules)
        self._scan(self._top, previous)
        if previous.keys() - {e.rel for e in self._iter_files(self._top)}:
            self._listing += 1  # files that went with the old tree (new ones counted already)
        self._changed()

    def _stop_events(self) -> None:
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
        self._wds.clear()

    def _watch(self, node: _Dir) -> None:
        if self._inotify is None:
            return
        try:
            node.wd = self._inotify.add_watch(node.path, WATCH_MASK)
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ENOTDIR):
                return  # gone already; its parent's event will tell
            log.warning("search index: cannot watch %s (%s); using stat checks", node.path, e)
            self._stop_events()
            return
        self._wds[node.wd] = node

    def _scan(self, node: _Dir, previous: dict[str, FileEntry] | None = None) -> None:
        """List ``node`` (watching it first, so no change is missed) and its new sub-folders."""
        if node.wd is None:
            self._watch(node)
        ignore_path = os.path.join(node.path, IGNORE_FILE)
        ignore_stamp = stamp_of(ignore_path)
        rules_changed = ignore_stamp != node.ignore_stamp
        if rules_changed:
            node.ignore_stamp = ignore_stamp
            node.rules = self._rules_for(node)
            # The new rules may hide or reveal anything below: list the subtree again.
            for child in list(node.dirs.values()):
                self._drop_dir(child)
            node.dirs.clear()
        try:
            node.mtime_ns = os.stat(node.path).st_mtime_ns
            with os.scandir(node.path) as it:
                listing = list(it)
        except OSError:
            listing = []
        rules = node.rules
        prefix = node.rel + "/" if node.rel else ""
        seen_files: set[str] = set()
        seen_dirs: set[str] = set()
        sealed = sealed_names(self.root)
        for item in listing:
            name = item.name
            rel = prefix + name
            member = classify(self.root, item, rel, rules, sealed=sealed)
            if member is None:
                continue
            if member.is_dir:
                seen_dirs.add(name)
                if name not in node.dirs:
                    child = _Dir(rel=rel, path=item.path, rules=rules)
                    node.dirs[name] = child
                    self._scan(child, previous)
                continue
            link, st = member.link, member.stat
            assert st is not None
            seen_files.add(name)
            stamp = stamp_of_stat(st)
            entry = node.files.get(name)
            if entry is None:
                old = previous.get(rel) if previous else None
                entry = FileEntry(rel=rel, path=item.path, name=name, stamp=stamp, link=link)
                if old is not None and old.stamp == stamp and old.kind is not None and not old.racy:
                    entry.kind, entry.text = old.kind, old.text
                    entry.folded, entry.specials = old.folded, old.specials
                    self._cached_chars += entry._cached()
                else:
                    self._unloaded.add(entry)
                node.files[name] = entry
                if old is None:
                    self._listing += 1
                if link:
                    self._links.add(entry)
                self._changed()
            elif entry.stamp != stamp or entry.link != link:
                entry.link = link
                (self._links.add if link else self._links.discard)(entry)
                self._invalidate(entry, stamp)
        for name in [n for n in node.files if n not in seen_files]:
            self._forget(node.files.pop(name))
        for name in [n for n in node.dirs if n not in seen_dirs]:
            self._drop_dir(node.dirs.pop(name))

    def _rules_for(self, node: _Dir) -> IgnoreRules:
        return folder_rules(self._parent_rules(node), node.path, node.rel)

    def _parent_rules(self, node: _Dir) -> IgnoreRules:
        if node is self._top or not node.rel:
            return root_rules(self._outer)
        parent = self._find_dir(node.rel.rpartition("/")[0])
        return parent.rules if parent is not None else IgnoreRules()

    def _find_dir(self, rel: str) -> _Dir | None:
        node = self._top
        if rel:
            for part in rel.split("/"):
                node = node.dirs.get(part) if node is not None else None
        return node

    def _drop_dir(self, node: _Dir) -> None:
        node.alive = False
        # A folder moved inside the tree keeps its inode, so the kernel may have handed the
        # same watch to its new node already: only drop a watch that is still this node's.
        if node.wd is not None and self._wds.get(node.wd) is node:
            del self._wds[node.wd]
            if self._inotify is not None:
                with contextlib.suppress(OSError):  # the kernel may have dropped it already
                    self._inotify.rm_watch(node.wd)
        for entry in node.files.values():
            self._forget(entry)
        for child in node.dirs.values():
            self._drop_dir(child)
        self._changed()

    def _forget(self, entry: FileEntry) -> None:
        self._listing += 1
        self._cached_chars -= entry._cached()
        entry.text = entry.folded = entry.specials = None
        self._links.discard(entry)
        self._racy.discard(entry)
        self._unloaded.discard(entry)
        self._changed()

    def _invalidate(self, entry: FileEntry, stamp: tuple[int, int, int] | None) -> None:
        """Forget the entry's text; it is read again before the next search."""
        self._cached_chars -= entry._cached()
        entry.text = entry.folded = entry.specials = None
        entry.kind = None
        self._changed()
        entry.racy = False
        self._racy.discard(entry)
        if stamp is not None:
            entry.stamp = stamp
        self._unloaded.add(entry)

    # ----------------------------------------------------------------- freshness

    def _apply_events(self) -> None:
        assert self._inotify is not None
        try:
            events = pending(self._inotify)
        except OSError as e:
            log.warning("search index: reading file events failed (%s); rebuilding", e)
            self._build()
            return
        dirty: dict[int, _Dir] = {}
        touched: list[tuple[_Dir, str]] = []
        for wd, mask, name in events:
            if mask & Q_OVERFLOW:
                self._build()
                return
            node = self._wds.get(wd)
            if mask & IGNORED:
                self._wds.pop(wd, None)
                if node is not None:
                    node.wd = None
                continue
            if node is None or not node.alive:
                continue
            if mask & GONE:
                if node is self._top:
                    self._build()
                    return
                continue  # the parent folder's own event relists it
            dirty[id(node)] = node
            if name:
                touched.append((node, name))
        for node, name in touched:
            if name == IGNORE_FILE:  # rewritten within one timestamp tick: re-read it anyway
                node.ignore_stamp = (-1, -1, -1)
            entry = node.files.get(name)
            if entry is not None:  # content events may keep the timestamp within one tick
                self._invalidate(entry, None)
        for node in sorted(dirty.values(), key=lambda n: n.rel.count("/") if n.rel else -1):
            if node.alive:
                self._scan(node)

    def _poll(self, node: _Dir) -> None:
        """Without events: list folders whose mtime changed, re-stat every file."""
        try:
            mtime = os.stat(node.path).st_mtime_ns
        except OSError:
            mtime = -1
        if mtime != node.mtime_ns or stamp_of(os.path.join(node.path, IGNORE_FILE)) != (
            node.ignore_stamp
        ):
            self._scan(node)
        else:
            for entry in list(node.files.values()):
                stamp = stamp_of(entry.path)
                if stamp is None:
                    self._scan(node)
                    break
                if stamp != entry.stamp:
                    self._invalidate(entry, stamp)
        for child in list(node.dirs.values()):
            if child.alive:
                self._poll(child)

    # ----------------------------------------------------------------- reading

    def _load(self, entry: FileEntry) -> None:
        self._unloaded.discard(entry)
        started = time.time_ns()
        entry.kind, text = read_searchable(entry.path, entry.name, entry.stamp, self.max_file_bytes)
        if text is None:
            return
        if entry.stamp[0] + _RACY_NS > started:
            entry.racy = True
            self._racy.add(entry)
        if self._cached_chars + len(text) <= self.cache_bytes:
            entry.text = text
            self._cached_chars += len(text)
        self._changed()

    def _iter_files(self, node: _Dir | None) -> Iterable[FileEntry]:
        if node is None:
            return
        stack = [node]
        while stack:
            current = stack.pop()
            yield from current.files.values()
            stack.extend(current.dirs.values())


def read_searchable(path: str, name: str, stamp: Stamp, max_bytes: int) -> tuple[str, str | None]:
    """``(kind, text)`` of a file as search sees it; ``text`` is None unless kind is "text".

    ``stamp`` is the file's change stamp as the walk saw it. kind is "large" over
    ``max_bytes``, "binary" with a NUL byte in the first block, "unreadable" when it cannot be
    opened, else "text": the file decoded as UTF-8 (invalid bytes replaced), or for a notebook
    its percent-format view (the raw text if it is not a valid notebook).
    """
    if stamp[1] > max_bytes:
        return "large", None
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError:
        return "unreadable", None
    if len(data) > max_bytes:
        return "large", None
    if looks_binary(data):
        return "binary", None
    raw = data.decode("utf-8", "replace")
    if not is_notebook(name):
        return "text", raw
    with contextlib.suppress(ToolError):
        if "\ufffd" in raw:  # maybe not the text the file tools read: keep it out of the cache
            return "text", view_of_json(raw, name)
        return "text", view_of(Path(path), stamp, lambda: raw, name)
    return "text", raw
