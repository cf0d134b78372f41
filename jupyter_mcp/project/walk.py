"""What counts as a project file: the one walk behind search, code analysis and run configs.

A project file is what ripgrep and git would look at: ``.gitignore`` files (at the root, in
sub-folders and in the folders above the root up to the repository top, with negation) and
``.git/info/exclude`` are honoured; VCS folders (``.git``, ``.hg``, ``.svn`` …) and Jupyter's
``.ipynb_checkpoints`` are skipped. Symlinks are never descended: a symlinked folder is skipped
(so a link loop cannot trap the walk) and a symlinked file counts only when its target is a
regular file inside the root (so nothing outside the root is read or written through a link).

:func:`iter_project_files` walks a tree once. The search index keeps its own incremental tree
(it re-lists single folders on file events) and decides each entry with the same pieces:
:func:`root_rules`, :func:`folder_rules` and :func:`classify`.

Code analysis and run configurations also pass ``skip_tool_dirs``: folders that hold tools'
and dependencies' files rather than project code (hidden folders, virtual environments,
``node_modules``, ``__pycache__``, ``site-packages``) are not walked even when not ignored.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pathspec

from ..core.paths import is_inside, is_sealed, sealed_names

#: Folders never walked: version control data and Jupyter's checkpoint copies.
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".ipynb_checkpoints"})
#: Folders of tools and dependencies, skipped with ``skip_tool_dirs`` (hidden folders too).
TOOL_DIRS = frozenset(
    {"node_modules", "__pycache__", "site-packages", "venv", "env", ".venv", ".tox", ".mypy_cache"}
)
#: A folder holding one of these is a Python environment (virtualenv, conda).
_ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")
IGNORE_FILE = ".gitignore"


# --------------------------------------------------------------------------- ignore rules


@dataclass(frozen=True)
class Rule:
    """One ignore file: its patterns and how a root-relative path maps onto its folder."""

    spec: pathspec.GitIgnoreSpec
    #: The rule file's folder relative to the root ("" for the root itself).
    base: str = ""
    #: For a rule file above the root: the root's path relative to the rule file's folder.
    outer: str = ""

    def check(self, rel: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by ``!``) or None (no pattern matched)."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        key = self.outer + rel + ("/" if is_dir else "")
        return self.spec.check_file(key).include


class IgnoreRules:
    """The ignore files in force for a folder, lowest precedence first."""

    def __init__(self, rules: tuple[Rule, ...] = ()) -> None:
        self.rules = rules

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether the root-relative ``rel`` is ignored; the deepest matching rule decides."""
        for rule in reversed(self.rules):
            verdict = rule.check(rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def with_rule(self, rule: Rule | None) -> IgnoreRules:
        """These rules plus ``rule`` (deeper, so it takes precedence)."""
        return self if rule is None else IgnoreRules((*self.rules, rule))


def read_rule(path: str, base: str = "", outer: str = "") -> Rule | None:
    """The ignore file at ``path`` (None when missing, unreadable or without patterns)."""
    try:
        with open(path, "rb") as f:
            data = f.read(4 * 1024 * 1024)
    except OSError:
        return None
    lines = data.decode("utf-8", "replace").splitlines()
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    return Rule(pathspec.GitIgnoreSpec.from_lines(lines), base, outer)


def _git_dir(folder: Path) -> Path | None:
    """The git directory of a repository whose work tree top is ``folder``, if it is one."""
    dot_git = folder / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():  # worktrees and submodules: "gitdir: <path>"
        with contextlib.suppress(OSError, UnicodeDecodeError):
            line = dot_git.read_text("utf-8").strip()
            if line.startswith("gitdir:"):
                target = Path(line[len("gitdir:") :].strip())
                return target if target.is_absolute() else (folder / target).resolve()
    return None


def outer_rule_files(root: Path) -> list[tuple[str, str]]:
    """Ignore files that apply from outside the walk, lowest precedence first.

    Those are ``info/exclude`` of the repository that holds ``root`` and the ``.gitignore``
    files of the folders between that repository's top and ``root``; each comes with the
    root's path relative to the file's folder (the prefix its patterns see).
    """
    top = None
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            top = folder
            break
    if top is None:
        return []
    found: list[tuple[str, str]] = []
    git_dir = _git_dir(top)
    if git_dir is not None:
        found.append((str(git_dir / "info" / "exclude"), _prefix(top, root)))
    for folder in reversed(root.parents):
        if folder == top or top in folder.parents:
            found.append((str(folder / IGNORE_FILE), _prefix(folder, root)))
    return found


def _prefix(folder: Path, root: Path) -> str:
    rel = root.relative_to(folder).as_posix()
    return "" if rel == "." else rel + "/"


def root_rules(outer: list[tuple[str, str]]) -> IgnoreRules:
    """The rules in force above the root, from :func:`outer_rule_files`."""
    rules = IgnoreRules()
    for path, prefix in outer:
        rules = rules.with_rule(read_rule(path, outer=prefix))
    return rules


def folder_rules(inherited: IgnoreRules, folder: str, rel: str) -> IgnoreRules:
    """The rules in force inside ``folder`` (root-relative ``rel``): its own ``.gitignore``
    on top of the ``inherited`` ones."""
    return inherited.with_rule(read_rule(os.path.join(folder, IGNORE_FILE), base=rel))


# --------------------------------------------------------------------------- entries


class Member(NamedTuple):
    """A directory entry that belongs to the project."""

    is_dir: bool
    #: True for a symlinked file (its target is a regular file inside the root).
    link: bool
    #: The file's (for a link: its target's) stat; None for a folder.
    stat: os.stat_result | None


class ProjectFile(NamedTuple):
    """A file :func:`iter_project_files` found."""

    #: Its path under the walked root's real path (for a symlink: the link's own path).
    path: Path
    #: Its stat (for a symlink: the target's).
    stat: os.stat_result
    #: True for a symlink (whose target is a regular file inside the root).
    link: bool


def is_tool_dir(name: str, names: Iterable[str] = ()) -> bool:
    """Whether the folder called ``name`` (holding ``names``, when listed) holds tools' or
    dependencies' files rather than project code."""
    if name.startswith(".") or name in TOOL_DIRS:
        return True
    return any(marker in names for marker in _ENVIRONMENT_MARKERS)


def classify(
    root: Path,
    item: os.DirEntry[str],
    rel: str,
    rules: IgnoreRules,
    *,
    skip_tool_dirs: bool = False,
    sealed: frozenset[str] | None = None,
) -> Member | None:
    """What the entry ``item`` (root-relative path ``rel``) is to the project, or None when
    it is not part of it: ignored, a VCS folder, a symlinked folder, a link leading outside
    the root or nowhere, a socket or a device, or a sealed place (the server's credentials,
    see :mod:`jupyter_mcp.core.paths`; ``sealed`` is :func:`sealed_names` of ``root``, passed
    by a caller that classifies many entries). ``root`` must be a real path."""
    name = item.name
    if rel in (sealed_names(root) if sealed is None else sealed):
        return None
    try:
        if item.is_dir(follow_symlinks=False):
            if name in SKIPPED_DIRS or rules.ignored(rel, True):
                return None
            if skip_tool_dirs and is_tool_dir(name):
                return None  # environments are recognised by their content, once listed
            return Member(True, False, None)
        if item.is_symlink():
            target = os.path.realpath(item.path)
            if not is_inside(root, Path(target)) or not os.path.isfile(target):
                return None  # links out of the root, dangling links and folder links
            if is_sealed(root, Path(target)):
                return None
            link = True
            st = os.stat(target)
        elif item.is_file(follow_symlinks=False):
            link = False
            st = item.stat(follow_symlinks=False)
        else:
            return None  # sockets, fifos, devices: never opened
    except OSError:
        return None
    if rules.ignored(rel, False):
        return None
    return Member(False, link, st)


def iter_project_files(
    root: Path | str,
    suffixes: tuple[str, ...] | None = None,
    *,
    skip_tool_dirs: bool = False,
) -> Iterator[ProjectFile]:
    """Every project file below ``root`` (optionally only names ending in one of
    ``suffixes``, compared case-insensitively), in no particular order.

    The paths are under the real path of ``root``, so only a symlinked file (``link``) has a
    path that is not its real path.
    """
    top = Path(os.path.realpath(root))
    wanted = tuple(s.lower() for s in suffixes) if suffixes is not None else None
    sealed = sealed_names(top)
    stack = [(str(top), "", root_rules(outer_rule_files(top)))]
    while stack:
        folder, rel, rules = stack.pop()
        try:
            with os.scandir(folder) as it:
                listing = list(it)
        except OSError:
            continue
        names = {item.name for item in listing}
        if rel and skip_tool_dirs and is_tool_dir("", names):
            continue  # a virtualenv or conda environment
        if IGNORE_FILE in names:
            rules = folder_rules(rules, folder, rel)
        prefix = rel + "/" if rel else ""
        subfolders = []
        for item in listing:
            matches = wanted is None or item.name.lower().endswith(wanted)
            if not matches:
                # Only folders can still matter; skip the stat calls of other files.
                try:
                    if not item.is_dir(follow_symlinks=False):
                        continue
                except OSError:
                    continue
            child_rel = prefix + item.name
            member = classify(
                top, item, child_rel, rules, skip_tool_dirs=skip_tool_dirs, sealed=sealed
            )
            if member is None:
                continue
            if member.is_dir:
                subfolders.append((item.path, child_rel))
            elif matches:
                assert member.stat is not None
                yield ProjectFile(Path(item.path), member.stat, member.link)
        stack.extend((path, child_rel, rules) for path, child_rel in subfolders)
