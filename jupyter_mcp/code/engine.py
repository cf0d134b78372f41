"""Code intelligence with jedi: symbols, references and refactorings across modules and notebooks.

This is the analysis side. It runs in a separate worker process (see :func:`worker_handler` and
:mod:`jupyter_mcp.code.client`), so jedi's CPU time and garbage collection never stall the Jupyter
server, and a call over its time limit can be stopped for real.

An :class:`Engine` holds a ``jedi.Project`` rooted at the project root (its ``sys.path``
starting with the project's import roots, :mod:`jupyter_mcp.code.roots`), a mirror of the
server's project index (which files mention which identifiers; the server sends what changed
with every request) and a cache of recent reference answers. Notebooks take part through their
percent-format text view, the same text ``get_file_text_by_path`` shows, so a position in a
notebook is a line of that view. Jedi sees a notebook under a made-up ``.py`` path next to it
(``analysis.ipynb.py``), with IPython syntax that jupytext left uncommented turned into comments
without moving any other character. A rename is completed, or refused, by the check of
:mod:`jupyter_mcp.code.guard`; a file's problems come from :mod:`jupyter_mcp.code.problems`.
Nothing here writes files.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import gc
import keyword
import os
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jedi
import parso
from jedi.api.exceptions import RefactoringError
from jedi.file_io import KnownContentFileIO
from jedi.inference import references as jedi_references
from jedi.inference.imports import load_module_from_path
from jedi.inference.sys_path import transform_path_to_dotted
from parso.python.tree import Name as TreeName
from parso.tree import search_ancestor

from ..core.errors import ToolError
from ..core.paths import is_inside, relative_path
from ..documents.facts import NOTEBOOK_SUFFIX, is_notebook
from ..documents.notebook_view import is_magic_line
from .guard import Resolver, Use, carriers, scan_file, uses
from .problems import notebook_problems, python_problems
from .roots import config_files, import_roots

PYTHON_SUFFIXES = (".py", ".pyi")
#: Where a notebook's text view lives for jedi: next to the notebook, under a ``.py`` name.
VIEW_SUFFIX = ".py"
REFACTOR_TYPES = ("rename", "extract_variable", "extract_function", "inline")
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_CONSTANT = re.compile(r"_*[A-Z][A-Z0-9_]*")
_SCOPES = ("funcdef", "classdef", "lambdef", "file_input")
_PROPERTY_DECORATORS = re.compile(r"@\s*(\w+\.)*(property|cached_property|setter|getter|deleter)\b")

Changes = dict[Path, tuple[str, str, str]]


# --------------------------------------------------------------------------------------------
# Sources: what jedi reads for a file


@dataclass
class Source:
    """A Python file or notebook as jedi sees it.

    ``text`` is the file's text view (what agents read and positions refer to); ``code`` is the
    same text with IPython-only lines turned into comments, character for character aligned.
    """

    path: Path
    shown: str
    text: str
    code: str
    jedi_path: Path

    @property
    def notebook(self) -> bool:
        """True when the source is a notebook's text view."""
        return self.jedi_path != self.path

    @classmethod
    def of(cls, path: Path, shown: str, text: str, *, notebook: bool) -> Source:
        """The source of a file (``text`` as stored) or of a notebook (``text`` = its view)."""
        if notebook:
            return cls(path, shown, text, neutralise(text), view_path(path))
        return cls(path, shown, text, text, path)


def view_path(notebook: Path) -> Path:
    """The made-up ``.py`` path under which jedi sees ``notebook``'s text view."""
    return notebook.with_name(notebook.name + VIEW_SUFFIX)


def neutralise(text: str) -> str:
    """Comment out IPython syntax (``%magic``, ``!shell``, ``obj?``) without moving characters.

    jupytext already comments these in a notebook's view; this catches what it leaves, such as
    lines of a view an agent wrote by hand. Only lines where the parser found an error are
    touched, so Python code that merely contains ``%`` or ``!=`` stays as it is.
    """
    if not any(c in text for c in "%!?"):
        return text
    module = parso.parse(text, error_recovery=True)
    lines = text.split("\n")
    bad: set[int] = set()
    leaf = module.get_first_leaf()
    while leaf is not None:
        in_error = leaf.type == "error_leaf" or (
            leaf.parent is not None and leaf.parent.type == "error_node"
        )
        if in_error and leaf.value[:1] in ("%", "!", "?"):
            row = leaf.start_pos[0] - 1
            line = lines[row] if row < len(lines) else ""
            starts_line = line[: leaf.start_pos[1]].strip() == ""
            if starts_line or leaf.value.startswith("?"):
                bad.add(row)
        leaf = leaf.get_next_leaf()
    for row in bad:
        line = lines[row]
        indent = len(line) - len(line.lstrip())
        if indent < len(line):
            lines[row] = line[:indent] + "#" + line[indent + 1 :]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The index mirror


@dataclass
class Delta:
    """What changed in the project since the last request (sent by the server).

    ``python`` lists Python files that appeared or changed, ``notebooks`` maps notebooks that
    appeared or changed to their text view (None when unreadable), ``removed`` lists files
    that are gone; ``reset`` says the lists cover the whole project.
    """

    reset: bool = False
    python: list[Path] = field(default_factory=list)
    notebooks: dict[Path, str | None] = field(default_factory=dict)
    removed: list[Path] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.reset or bool(self.python or self.notebooks or self.removed)


class Index:
    """Which project files mention which identifiers; notebooks with their text views."""

    def __init__(self, on_python_changed: Callable[[Path, str, bool], None]) -> None:
        self.generation = 0
        self._names: dict[Path, frozenset[str]] = {}
        self._notebooks: dict[Path, Source] = {}
        self._on_python_changed = on_python_changed

    def apply(self, delta: Delta) -> None:
        """Take in what changed; ``generation`` moves on when anything did."""
        if not delta:
            return
        if delta.reset:
            self._names.clear()
            self._notebooks.clear()
        for path in delta.removed:
            self._names.pop(path, None)
            self._notebooks.pop(path, None)
        for path in delta.python:
            try:
                code = path.read_bytes().decode("utf-8", errors="replace")
            except OSError:
                self._names.pop(path, None)
                continue
            self._names[path] = frozenset(_IDENTIFIER.findall(code))
            # On a reset every file is "new": trust parso's disk cache as jedi does. A file that
            # changed while the worker runs is checked against the caches.
            self._on_python_changed(path, code, not delta.reset)
        for path, text in delta.notebooks.items():
            if text is None:
                self._names.pop(path, None)
                self._notebooks.pop(path, None)
                continue
            source = Source.of(path, path.name, text, notebook=True)
            self._notebooks[path] = source
            self._names[path] = frozenset(_IDENTIFIER.findall(source.code))
        self.generation += 1

    def knows(self, path: Path) -> bool:
        """True when ``path`` is an indexed file."""
        return path in self._names

    def mentioning(self, name: str) -> list[Path]:
        """Files (Python and notebooks) whose text contains the identifier ``name``."""
        return sorted(p for p, names in self._names.items() if name in names)

    def notebook(self, path: Path) -> Source | None:
        """The source of an indexed notebook."""
        return self._notebooks.get(path)


# --------------------------------------------------------------------------------------------
# The engine


@dataclass
class Reference:
    """One place a name occurs, in view coordinates (0-based)."""

    path: Path
    line: int
    character: int
    name: str
    is_definition: bool
    tree_name: Any = field(default=None, repr=False, compare=False)
    #: The module itself (its file), rather than a name in the text.
    module: bool = False

    def as_json(self, root: Path) -> dict[str, Any]:
        """The wire form: the path relative to ``root`` and the range of the name."""
        return {
            "path": self.path.relative_to(root).as_posix(),
            "line": self.line,
            "character": self.character,
            "endLine": self.line,
            "endCharacter": self.character + (0 if self.module else len(self.name)),
        }


class Engine:
    """The jedi project of one server with its index mirror and caches (in the worker)."""

    def __init__(self, root: Path, *, environment_path: str | None = None) -> None:
        self.root = root
        self._environment_path = environment_path
        self._config_stamps = _stamps(config_files(root))
        self.roots = import_roots(root)
        self.project = self._project(environment_path)
        self.index = Index(on_python_changed=self._keep_parse_fresh)
        self._references_cache: dict[tuple[Path, int, int], tuple[int, str, list[Reference]]] = {}
        self._grammar_cache: Any = None

    def _project(self, environment_path: str | None) -> jedi.Project:
        """The project with the kernel's interpreter, or this one when that cannot be used."""
        if environment_path is not None:
            try:
                return self._project_with(environment_path)
            except Exception as e:
                print(
                    f"jupyter_mcp: analysing with {sys.executable} instead of the kernel's "
                    f"{environment_path} ({type(e).__name__}: {e})",
                    file=sys.stderr,
                )
        return self._project_with(None)

    def _project_with(self, environment_path: str | None) -> jedi.Project:
        """A project whose ``sys.path`` starts with the project's import roots.

        jedi would put the folders of a ``src/`` layout after site-packages (as parents of the
        file being analysed), so a copy of the package installed there answered the project's
        own imports: a use in ``exceptions.py`` of ``from .utils import f`` then led to the
        installed ``utils.f`` and was no reference of the project's ``f``.
        """
        probe = jedi.Project(self.root, environment_path=environment_path)
        environment = probe.get_environment()
        if environment_path is not None:
            environment._get_subprocess()  # start it now to know it works
        roots = [str(p) for p in self.roots]
        base = [p for p in environment.get_sys_path() if p and p not in roots]
        project = jedi.Project(
            self.root,
            environment_path=environment_path,
            sys_path=[*roots, *base],
            smart_sys_path=True,
        )
        project._environment = environment  # one interpreter process, not two
        return project

    def refresh_roots(self, *, rescan: bool = False) -> None:
        """Read the import roots again when a project file that declares them changed.

        The known project files are looked at on every request (a few ``stat`` calls); the
        tree is searched for new ones only with ``rescan`` (new files appeared).
        """
        stamps = _stamps(config_files(self.root) if rescan else list(self._config_stamps))
        if stamps == self._config_stamps:
            return
        self._config_stamps = stamps
        roots = import_roots(self.root)
        if roots != self.roots:
            self.roots = roots
            self.project = self._project(self._environment_path)
            self._references_cache.clear()

    def script(self, source: Source) -> jedi.Script:
        """A jedi Script over ``source`` in the shared project."""
        return jedi.Script(source.code, path=source.jedi_path, project=self.project)

    @contextlib.contextmanager
    def _project_search(self, source: Source) -> Iterator[None]:
        """Make jedi's project-wide search use the index: every file, notebooks included.

        jedi opens at most 2,000 files, parses at most 30 of them and does not look beyond the
        current file for names of one or two characters; the index knows which files mention
        a name, so all of those are searched and nothing else is read.
        """
        original = jedi_references.get_module_contexts_containing_name
        index = self.index
        own = {source.jedi_path}

        def containing(
            inference_state: Any, module_contexts: Any, name: str, limit_reduction: int = 1
        ) -> Iterator[Any]:
            except_ = set(own)
            sys_path = inference_state.get_sys_path(add_parent_paths=False)
            for module_context in module_contexts:
                if module_context.is_compiled():
                    continue
                except_.add(module_context.py__file__())
                yield module_context
            for path in index.mentioning(name):
                if is_notebook(path):
                    notebook = index.notebook(path)
                    if notebook is None or notebook.jedi_path in except_:
                        continue
                    file_io = KnownContentFileIO(notebook.jedi_path, notebook.code)
                    module = load_module_from_path(
                        inference_state,
                        file_io,
                        import_names=(_module_name(path),),
                        is_package=False,
                    )
                else:
                    if path in except_:
                        continue
                    try:
                        raw = path.read_bytes()
                    except OSError:
                        continue
                    file_io = KnownContentFileIO(path, raw.decode("utf-8", errors="replace"))
                    # The name jedi gives the file being analysed (the import roots first): a
                    # module reached here and by an import is then one module, not two.
                    names, is_package = transform_path_to_dotted(sys_path, path)
                    if names is None:
                        module = load_module_from_path(inference_state, file_io)
                    else:
                        module = load_module_from_path(
                            inference_state, file_io, import_names=names, is_package=is_package
                        )
                if not module.is_compiled():
                    yield module.as_context()

        jedi_references.get_module_contexts_containing_name = containing
        try:
            yield
        finally:
            jedi_references.get_module_contexts_containing_name = original

    def _keep_parse_fresh(self, path: Path, code: str, changed: bool) -> None:
        """Make sure parso's caches hold the current text of a file that changed on disk.

        parso trusts a cached tree when the file is not newer than the cache, which a file
        replaced by an older copy (``cp -p``, an archive, ``git stash``) or rewritten within
        the file system's timestamp resolution defeats.
        """
        from parso.cache import _get_hashed_path, load_module, parser_cache, try_to_save_module
        from parso.file_io import FileIO
        from parso.utils import split_lines

        grammar = self._grammar()
        hashed = grammar._hashed
        cache_path = Path(jedi.settings.cache_directory)
        item = parser_cache.get(hashed, {}).get(path)
        if item is None:
            if not changed:
                return
            pickle = _get_hashed_path(hashed, path, cache_path=cache_path)
            try:
                if os.path.getmtime(pickle) < os.path.getmtime(path):
                    return  # parso will parse the file afresh
            except OSError:
                return  # nothing cached on disk
            load_module(hashed, FileIO(str(path)), cache_path=cache_path)
            item = parser_cache.get(hashed, {}).get(path)
        lines = split_lines(code, keepends=True)
        if item is not None and item.lines == lines:
            return
        module = grammar.parse(code, cache=False, diff_cache=False)
        try_to_save_module(hashed, FileIO(str(path)), module, lines, cache_path=cache_path)

    def _grammar(self) -> Any:
        if self._grammar_cache is None:
            self._grammar_cache = self.project.get_environment().get_grammar()
        return self._grammar_cache

    def _real_path(self, jedi_path: Path | None) -> Path | None:
        """The file behind a path jedi reports: a notebook for its view, links followed (so a
        link leading out of the project is outside it, and a file is named one way only)."""
        if jedi_path is None:
            return None
        path = Path(jedi_path)
        if path.name.endswith(NOTEBOOK_SUFFIX + VIEW_SUFFIX):
            notebook = path.with_name(path.name[: -len(VIEW_SUFFIX)])
            if notebook.exists() and not path.exists():
                return Path(os.path.realpath(notebook))
        return Path(os.path.realpath(path))

    # -- references --------------------------------------------------------------------------

    def references(self, source: Source, line: int, character: int) -> list[dict[str, Any]]:
        """Every reference of the name at (line, character), definitions included, sorted.

        Answers are cached until any Python file or notebook of the project changes.
        """
        key = (source.path, line, character)
        cached = self._references_cache.get(key)
        if cached is not None and cached[0] == self.index.generation and cached[1] == source.code:
            return [ref.as_json(self.root) for ref in cached[2]]
        found = self._references(source, line, character)
        for ref in found:
            ref.tree_name = None  # do not keep whole parse trees alive in the cache
        if len(self._references_cache) > 256:
            self._references_cache.clear()
        self._references_cache[key] = (self.index.generation, source.code, found)
        return [ref.as_json(self.root) for ref in found]

    def _references(
        self, source: Source, line: int, character: int, *, file_only: bool = False
    ) -> list[Reference]:
        check_position(source, line, character)
        script = self.script(source)
        with self._project_search(source):
            names = script.get_references(
                line + 1,
                character,
                include_builtins=False,
                scope="file" if file_only else "project",
            )
        if not names:
            raise ToolError(describe_no_symbol(source, line, character))
        found: dict[tuple[Path, int, int], Reference] = {}
        # Thousands of names come from a few files: each file's real path is looked up once.
        real: dict[Path | None, tuple[Path | None, bool]] = {}
        for name in names:
            module_path = name.module_path
            known = real.get(module_path)
            if known is None:
                path = self._real_path(module_path)
                known = real[module_path] = (path, path is not None and is_inside(self.root, path))
            path, inside = known
            if path is None or not inside or name.line is None:
                continue
            ref = Reference(
                path=path,
                line=name.line - 1,
                character=name.column,
                name=name.name,
                is_definition=name.is_definition(),
                tree_name=getattr(name._name, "tree_name", None),
            )
            if ref.tree_name is None and name.type == "module":
                # The module itself: jedi places it at the start of its file.
                ref.line, ref.character, ref.module = 0, 0, True
            found.setdefault((path, ref.line, ref.character), ref)
        return sorted(found.values(), key=lambda r: (str(r.path), r.line, r.character))

    # -- symbols -----------------------------------------------------------------------------

    def symbols(self, source: Source) -> list[dict[str, Any]]:
        """The symbols defined in ``source``, class members nested as ``children``."""
        script = self.script(source)
        return [
            _symbol(name, container=None)
            for name in script.get_names(all_scopes=False, definitions=True, references=False)
        ]

    # -- problems ----------------------------------------------------------------------------

    def problems(
        self, files: list[tuple[Source, list[dict[str, Any]] | None, list[int] | None]]
    ) -> list[list[dict[str, Any]]]:
        """The problems of each file (see :mod:`jupyter_mcp.code.problems`)."""
        return [
            python_problems(source.text, source.shown)
            if cells is None
            else notebook_problems(cells, markers, source.shown)
            for source, cells, markers in files
        ]

    # -- refactorings ------------------------------------------------------------------------

    def rename(
        self,
        source: Source,
        line: int,
        character: int,
        new_name: str,
    ) -> tuple[Changes, int, list[str]]:
        """The new text of every file a rename touches (``{path: (shown, old, new)}``), the
        number of occurrences renamed and notebook magic lines that mention the old name."""
        check_position(source, line, character)
        script = self.script(source)
        at_cursor = parso.parse(source.code).get_name_of_position((line + 1, character))
        file_only = _is_alias_name(at_cursor) or any(
            _is_alias_name(getattr(d._name, "tree_name", None))
            for d in script.goto(line + 1, character)
        )
        if not file_only:
            for d in script.goto(line + 1, character, follow_imports=True):
                where = self._real_path(d.module_path)
                if d.in_builtin_module() or where is None or not is_inside(self.root, where):
                    raise ToolError(
                        f"{d.name} is defined outside the project ({where or 'built in'}); only "
                        "names defined in the project can be renamed"
                    )
        refs = self._references(source, line, character, file_only=file_only)
        target = next(
            (
                r
                for r in refs
                if r.path == source.path
                and r.line == line
                and r.character <= character <= r.character + len(r.name)
            ),
            refs[0],
        )
        old_name = target.name
        if old_name == new_name:
            raise ToolError(f"The symbol is already called {new_name}; nothing to rename")
        modules = [r for r in refs if r.module or r.tree_name is None]
        if modules:
            raise ToolError(
                f"{old_name} is a module; renaming it would rename the file "
                f"{self._shown(modules[0].path)}, which refactor_code_at_location does not do"
            )
        if not file_only:
            refs.extend(self._missed_importers(script, source, line, character, old_name, refs))
        _check_conflicts(refs, new_name, self._shown)
        by_file: dict[Path, list[Reference]] = {}
        for ref in refs:
            by_file.setdefault(ref.path, []).append(ref)
        changes: Changes = {}
        for path, file_refs in by_file.items():
            src = source if path == source.path else self._read(path)
            lines = src.text.split("\n")
            for ref in sorted(file_refs, key=lambda r: (r.line, r.character), reverse=True):
                text_line = lines[ref.line] if ref.line < len(lines) else ""
                end = ref.character + len(ref.name)
                if text_line[ref.character : end] != ref.name:
                    raise ToolError(
                        f"{src.shown} changed while the rename was computed "
                        f"(expected {ref.name} at line {ref.line}, character {ref.character}); "
                        "nothing was changed, try again"
                    )
                lines[ref.line] = text_line[: ref.character] + new_name + text_line[end:]
            changes[path] = (src.shown, src.text, "\n".join(lines))
        _check_syntax(changes)
        return changes, len(refs), self._magic_mentions(source, old_name)

    def _missed_importers(
        self,
        script: jedi.Script,
        source: Source,
        line: int,
        character: int,
        name: str,
        found: list[Reference],
    ) -> list[Reference]:
        """The places that import or use a module-level ``name`` from its module (or a module
        re-exporting it) which jedi's references left out; refuse when one cannot be told."""
        use_list, unclear = self._importer_uses(script, source, line, character, name, found)
        if unclear:
            raise ToolError(
                f"Cannot rename {name} safely: these imports of {name} could not be resolved, "
                "so renaming could leave them broken; nothing was changed: "
                + "; ".join(f"{self._shown(path)} {what}" for path, what in unclear)
            )
        return [
            Reference(u.path, u.line, u.character, name, is_definition=False, tree_name=u.tree_name)
            for u in use_list
        ]

    def _importer_uses(
        self,
        script: jedi.Script,
        source: Source,
        line: int,
        character: int,
        name: str,
        found: list[Reference],
    ) -> tuple[list[Use], list[tuple[Path, str]]]:
        """What :mod:`jupyter_mcp.code.guard` finds beyond ``found`` (with unclear imports)."""
        definitions: set[tuple[Path, int, int]] = set()
        for d in script.goto(line + 1, character, follow_imports=True):
            where = self._real_path(d.module_path)
            if where is None or d.line is None or not _module_level(d):
                continue  # only a module-level name is imported by other modules
            definitions.add((where, d.line - 1, d.column))
        if not definitions:
            return [], []
        defining = {path for path, _, _ in definitions}
        sources: dict[Path, Source] = {}
        for path in sorted({*self.index.mentioning(name), *defining, source.path}):
            if not is_inside(self.root, path):
                continue
            try:
                sources[path] = source if path == source.path else self._read(path)
            except ToolError:
                continue  # unreadable: no part of the project's code
        resolver = Resolver([*self.roots, self.root])
        scans = {
            path: scan_file(path, src.code, name, resolver, self._tree(src))
            for path, src in sources.items()
        }
        scripts: dict[Path, jedi.Script] = {source.path: script}

        def agrees(path: Path, leaf: Any, anchors: set[tuple[int, int]]) -> bool:
            if path not in scripts:
                scripts[path] = self.script(sources[path])
            for d in scripts[path].goto(*leaf.start_pos):
                if d.line is not None and (d.line - 1, d.column) in anchors:
                    if self._real_path(d.module_path) == path:
                        return True  # bound by an import of the name from its module
            for d in scripts[path].goto(*leaf.start_pos, follow_imports=True):
                where = self._real_path(d.module_path)
                if where is not None and d.line is not None:
                    if (where, d.line - 1, d.column) in definitions:
                        return True
            return False

        done = {(r.path, r.line, r.character) for r in found}
        return uses(scans, name, carriers(scans, defining, name), agrees, done)

    def _tree(self, source: Source) -> Any:
        """The parse tree of ``source``: jedi's (cached) when it is of this very text."""
        try:
            module = self._grammar().parse(
                source.code,
                path=source.jedi_path,
                cache=True,
                diff_cache=False,
                cache_path=jedi.settings.cache_directory,
            )
        except Exception:
            module = None
        if module is None or module.get_code() != source.code:
            module = parso.parse(source.code, error_recovery=True)
        return module

    def _magic_mentions(self, source: Source, name: str) -> list[str]:
        """Notebook lines with IPython magics or shell commands that mention ``name``.

        jedi cannot see into ``%magic``/``!shell`` lines (the view shows them as comments), so
        a rename leaves them alone; the agent is told where they are.
        """
        notebooks = {p for p in self.index.mentioning(name) if is_notebook(p)}
        if source.notebook:
            notebooks.add(source.path)
        word = re.compile(rf"\b{re.escape(name)}\b")
        found = []
        for path in sorted(notebooks):
            src = source if path == source.path else self.index.notebook(path)
            if src is None:
                continue
            rows = [
                str(number)
                for number, line in enumerate(src.text.split("\n"))
                if is_magic_line(line) and word.search(line)
            ]
            if rows:
                found.append(f"{self._shown(path)} line {', '.join(rows)}")
        return found

    def refactor(
        self,
        source: Source,
        kind: str,
        line: int,
        character: int,
        new_name: str | None,
        until: tuple[int, int] | None,
    ) -> tuple[Changes, int, list[str]]:
        """Run jedi's ``extract_variable``/``extract_function``/``inline`` and map its changes
        back onto the files' text views; also the number of edits (changed blocks of lines)."""
        check_position(source, line, character)
        script = self.script(source)
        try:
            with self._project_search(source):
                if kind == "inline":
                    refactoring = script.inline(line + 1, character)
                else:
                    refactoring = getattr(script, kind)(
                        line + 1,
                        character,
                        new_name=new_name,
                        until_line=None if until is None else until[0] + 1,
                        until_column=None if until is None else until[1],
                    )
        except RefactoringError as e:
            raise ToolError(f"{kind} at line {line}, character {character} failed: {e}") from e
        if refactoring.get_renames():
            raise ToolError("The refactoring would rename files, which is not supported")
        changes: Changes = {}
        edits = 0
        for jedi_path, changed in refactoring.get_changed_files().items():
            path = self._real_path(jedi_path)
            if path is None or not is_inside(self.root, path):
                raise ToolError(f"The refactoring would change {jedi_path}, outside the project")
            src = source if path == source.path else self._read(path)
            old_code = changed._module_node.get_code()
            if old_code != src.code:
                raise ToolError(
                    f"{src.shown} changed while the refactoring was computed; try again"
                )
            new_text = map_back(src.code, src.text, changed.get_new_code())
            if new_text != src.text:
                changes[path] = (src.shown, src.text, new_text)
                edits += count_edits(src.text, new_text)
        if kind == "inline":
            self._check_inline_leaves_no_importer(script, source, line, character, changes)
        _check_syntax(changes)
        return changes, edits, []

    def _check_inline_leaves_no_importer(
        self, script: jedi.Script, source: Source, line: int, character: int, changes: Changes
    ) -> None:
        """Refuse an inline that removes a module-level variable another module still imports
        or reaches as an attribute (the check runs over the files as they would be)."""
        at_cursor = parso.parse(source.code).get_name_of_position((line + 1, character))
        if at_cursor is None:
            return
        name = at_cursor.value
        defining = set()
        for d in script.goto(line + 1, character, follow_imports=True):
            where = self._real_path(d.module_path)
            if where is not None and d.line is not None and _module_level(d):
                defining.add(where)
        if not defining:
            return
        resolver = Resolver([*self.roots, self.root])
        scans = {}
        for path in sorted({*self.index.mentioning(name), *changes}):
            if path in changes:
                code = changes[path][2]
            else:
                try:
                    code = self._read(path).code
                except ToolError:
                    continue
            scans[path] = scan_file(path, code, name, resolver)
        # A plain use left in another module that has the name from its module (a star
        # import) fails once the variable is gone; in the defining module itself a use left
        # is another, local binding of the name.
        left, unclear = uses(
            scans,
            name,
            carriers(scans, defining, name),
            lambda path, _leaf, _anchors: path not in defining,
            set(),
        )
        places = [f"{self._shown(u.path)} line {u.line} ({_HOW[u.how]})" for u in left]
        places += [f"{self._shown(path)} {what}" for path, what in unclear]
        if places:
            raise ToolError(
                f"Cannot inline {name}: it is still imported or used from its module at "
                + "; ".join(places)
                + "; nothing was changed"
            )

    def _read(self, path: Path) -> Source:
        """Another file a refactoring touches, as the index or the disk has it now."""
        if is_notebook(path):
            notebook = self.index.notebook(path)
            if notebook is None:
                raise ToolError(f"{self._shown(path)} could not be read as a notebook")
            return Source(path, self._shown(path), notebook.text, notebook.code, notebook.jedi_path)
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ToolError(f"{self._shown(path)} could not be read: {e}") from e
        return Source.of(path, self._shown(path), text, notebook=False)

    def _shown(self, path: Path) -> str:
        return relative_path(self.root, path) if is_inside(self.root, path) else str(path)


def _is_alias_name(tree_name: Any) -> bool:
    """True for the ``y`` of ``import x as y`` / ``from m import x as y``."""
    parent = getattr(tree_name, "parent", None)
    return (
        parent is not None
        and parent.type in ("import_as_name", "dotted_as_name")
        and len(parent.children) == 3
        and parent.children[-1] is tree_name
    )


_HOW = {
    "import": "an import",
    "attribute": "an attribute use",
    "__all__": "an __all__ entry",
    "name": "a use",
}


def _module_level(name: Any) -> bool:
    """True for a name jedi places at the top level of a module (not a module itself)."""
    if name.type == "module":
        return False
    parent = name.parent()
    return parent is not None and parent.type == "module"


def _check_syntax(changes: Changes) -> None:
    """Refuse a refactoring that would turn a Python file that parses into one that does not."""
    for path, (shown, old_text, new_text) in changes.items():
        if is_notebook(path):
            continue  # a notebook's view may hold IPython syntax, which ast does not parse
        try:
            ast.parse(old_text)
        except (SyntaxError, ValueError):
            continue  # broken before: not this refactoring's doing
        try:
            ast.parse(new_text)
        except (SyntaxError, ValueError) as e:
            raise ToolError(
                f"The refactoring would leave a syntax error in {shown} (line "
                f"{(getattr(e, 'lineno', None) or 1) - 1}, 0-based: {getattr(e, 'msg', e)}); "
                "nothing was changed"
            ) from e


def _stamps(paths: list[Path]) -> dict[Path, tuple[int, int]]:
    found = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        found[path] = (st.st_mtime_ns, st.st_size)
    return found


def _module_name(notebook: Path) -> str:
    return re.sub(r"\W", "_", notebook.stem) + "_ipynb"


# --------------------------------------------------------------------------------------------
# Positions


def check_position(source: Source, line: int, character: int) -> None:
    """Refuse a position beyond the file's text view."""
    lines = source.text.split("\n")
    if line < 0 or character < 0:
        raise ToolError("line and character are 0-based and must not be negative")
    if line >= len(lines):
        raise ToolError(
            f"Line {line} is beyond the end of {source.shown} ({len(lines)} lines, 0-based)"
        )
    if character > len(lines[line]):
        raise ToolError(
            f"Character {character} is beyond the end of line {line} of {source.shown} "
            f"({len(lines[line])} characters)"
        )


def describe_no_symbol(source: Source, line: int, character: int) -> str:
    """Why there is no symbol at a position: whitespace, a keyword, a string or a comment."""
    where = f"No symbol at line {line}, character {character} of {source.shown}"
    module = parso.parse(source.code, error_recovery=True)
    leaf = module.get_leaf_for_position((line + 1, character), include_prefixes=True)
    if leaf is None:
        return f"{where} (end of file)"
    if (line + 1, character) < leaf.start_pos:
        prefix_line = source.code.split("\n")[line]
        if "#" in prefix_line[:character] or prefix_line.lstrip().startswith("#"):
            return f"{where} (a comment)"
        return f"{where} (whitespace); put the position on a name"
    if leaf.type == "keyword":
        return f"{where} (the keyword '{leaf.value}'); put the position on a name"
    if leaf.type in ("string", "fstring_string", "fstring_start", "fstring_end"):
        return f"{where} (inside a string)"
    if leaf.type in ("number", "operator"):
        return f"{where} (the {leaf.type} '{leaf.value}'); put the position on a name"
    return f"{where}; put the position on a name"


# --------------------------------------------------------------------------------------------
# Symbols


def _definition(name: Any) -> Any:
    tree_name = getattr(name._name, "tree_name", None)
    if tree_name is None:
        return None
    return tree_name.get_definition(include_setitem=True)


def _is_property(funcdef: Any) -> bool:
    parent = funcdef.parent
    if parent is None or parent.type not in ("decorated", "async_stmt"):
        return False
    if parent.type == "async_stmt":
        parent = parent.parent
        if parent is None or parent.type != "decorated":
            return False
    return bool(_PROPERTY_DECORATORS.search(parent.children[0].get_code()))


def _outer(definition: Any) -> Any:
    node = definition
    while node.parent is not None and node.parent.type in (
        "decorated",
        "async_stmt",
        "async_funcdef",
    ):
        node = node.parent
    return node


def _one_line(code: str, limit: int = 120) -> str:
    text = " ".join(code.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _header(definition: Any) -> str:
    """``def f(a, b=1) -> int`` / ``class C(Base)`` from the definition's own text."""
    parts = []
    for child in definition.children:
        if child.type == "operator" and child.value == ":":
            break
        parts.append(child.get_code(include_prefix=True))
    header = _one_line("".join(parts))
    if definition.parent is not None and definition.parent.type in ("async_stmt", "async_funcdef"):
        header = "async " + header
    return header


def _kind(name: Any, definition: Any, container: str | None) -> str:
    if definition is None:
        return "Module" if name.type == "module" else "Variable"
    kind = definition.type
    if kind in ("import_name", "import_from"):
        return "Module"
    if kind == "classdef":
        return "Class"
    if kind == "funcdef":
        if _is_property(definition):
            return "Property"
        if container == "class":
            return "Constructor" if name.name == "__init__" else "Method"
        return "Function"
    if container == "class":
        return "Field"
    if container is None and _CONSTANT.fullmatch(name.name):
        return "Constant"
    return "Variable"


def _range(start: tuple[int, int], end: tuple[int, int]) -> dict[str, int]:
    return {
        "startLine": start[0] - 1,
        "startCharacter": start[1],
        "endLine": end[0] - 1,
        "endCharacter": end[1],
    }


def _symbol(name: Any, container: str | None) -> dict[str, Any]:
    definition = _definition(name)
    kind = _kind(name, definition, container)
    if definition is not None and definition.type in ("funcdef", "classdef"):
        start = _outer(definition).start_pos
        detail = _header(definition)
    else:
        start = name.get_definition_start_position() or (name.line, name.column)
        detail = (
            _one_line(definition.get_code(include_prefix=False)) if definition is not None else ""
        )
    end = name.get_definition_end_position() or (name.line, name.column + len(name.name))
    symbol: dict[str, Any] = {
        "name": name.name,
        "kind": kind,
        "range": _range(start, end),
        "selectionRange": _range(
            (name.line, name.column), (name.line, name.column + len(name.name))
        ),
        "text": name.name,
        "detail": detail,
    }
    if kind == "Class":
        symbol["children"] = [_symbol(child, "class") for child in name.defined_names()]
    elif definition is not None and definition.type == "funcdef":
        nested = [
            child
            for child in name.defined_names()
            if (d := _definition(child)) is not None and d.type in ("funcdef", "classdef")
        ]
        if nested:
            symbol["children"] = [_symbol(child, "function") for child in nested]
    return symbol


# --------------------------------------------------------------------------------------------
# Renames


def _scope(node: Any) -> Any:
    return search_ancestor(node, *_SCOPES)


def _binding_scope(tree_name: TreeName) -> Any:
    """The scope a name is bound in (a function's own name belongs to the enclosing scope)."""
    definition = tree_name.get_definition(include_setitem=True)
    if definition is not None and definition.type in ("funcdef", "classdef"):
        return _scope(definition)
    if definition is not None and definition.type == "param":
        return _scope(definition)
    return _scope(tree_name)


def _defined_in(scope: Any, new_name: str) -> TreeName | None:
    module = scope.get_root_node()
    for leaf in module.get_used_names().get(new_name, []):
        if leaf.parent is not None and leaf.parent.type == "trailer":
            continue
        if leaf.is_definition(include_setitem=True) and _binding_scope(leaf) is scope:
            return leaf
    return None


def _scope_label(scope: Any) -> str:
    if scope.type == "classdef":
        return f"class {scope.name.value}"
    if scope.type == "funcdef":
        return f"function {scope.name.value}"
    if scope.type == "lambdef":
        return "a lambda"
    return "the module"


def _check_conflicts(refs: list[Reference], new_name: str, shown: Callable[[Path], str]) -> None:
    """Refuse a rename when ``new_name`` is already bound where the renamed name is used."""
    for ref in refs:
        tree_name = ref.tree_name
        if tree_name is None or (
            tree_name.parent is not None and tree_name.parent.type == "trailer"
        ):
            continue
        if ref.is_definition:
            scopes = [_binding_scope(tree_name)]
        else:
            # A plain use sees its own scope and the enclosing function and module scopes.
            scopes = []
            node = _scope(tree_name)
            while node is not None:
                if not scopes or node.type != "classdef":
                    scopes.append(node)
                node = _scope(node) if node.parent is not None else None
        for scope in scopes:
            clash = _defined_in(scope, new_name)
            if clash is not None:
                raise ToolError(
                    f"Cannot rename {ref.name} to {new_name}: {new_name} is already defined in "
                    f"{_scope_label(scope)} ({shown(ref.path)}, line {clash.start_pos[0] - 1}, "
                    f"character {clash.start_pos[1]}, 0-based); nothing was changed"
                )


def check_identifier(new_name: Any, field_name: str = "options.newName") -> str:
    """Refuse anything that is not a usable Python identifier."""
    if not isinstance(new_name, str) or not new_name:
        raise ToolError(f"{field_name} is required and must be a non-empty string")
    if not new_name.isidentifier():
        raise ToolError(f"{field_name} {new_name!r} is not a valid Python identifier")
    if keyword.iskeyword(new_name):
        raise ToolError(f"{field_name} {new_name!r} is a Python keyword")
    return new_name


# --------------------------------------------------------------------------------------------
# Mapping jedi's output back onto a notebook's view, and writing


def map_back(code: str, text: str, new_code: str) -> str:
    """``new_code`` (an edit of ``code``) applied to ``text``, where lines of ``code`` may be
    neutralised versions of those of ``text``: unchanged lines come from ``text``."""
    if code == text:
        return new_code
    old_lines = code.split("\n")
    real_lines = text.split("\n")
    new_lines = new_code.split("\n")
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out.extend(real_lines[i1:i2] if tag == "equal" else new_lines[j1:j2])
    return "\n".join(out)


def count_edits(old: str, new: str) -> int:
    """The number of separate blocks of lines that differ between ``old`` and ``new``."""
    matcher = difflib.SequenceMatcher(a=old.split("\n"), b=new.split("\n"), autojunk=False)
    return sum(1 for op in matcher.get_opcodes() if op[0] != "equal")


# --------------------------------------------------------------------------------------------
# The worker process

#: Engine methods a request may call.
REQUESTS = frozenset({"symbols", "references", "rename", "refactor", "problems"})
#: The request that starts the engine and takes the project's files before any query needs them.
WARM = "warm"
_WARM_CODE = "import os\n\n\ndef f(value):\n    return os.path.join(value)\n"


class _Handler:
    """The worker's side: one :class:`Engine`, made on the first request."""

    def __init__(self, root: str, environment_path: str = "") -> None:
        self.root = Path(root)
        self.environment_path = environment_path or None
        self.engine: Engine | None = None
        self.start_error: str | None = None

    def __call__(self, request: tuple[str, tuple[Any, ...], Delta | None]) -> Any:
        """Apply the request's delta to the index, then run ``Engine.method(*args)``."""
        method, args, delta = request
        if self.engine is None and self.start_error is None:
            try:
                self.engine = Engine(self.root, environment_path=self.environment_path)
            except Exception as e:
                self.start_error = f"jedi could not start ({type(e).__name__}: {e})"
        if self.engine is None:
            raise ToolError(f"Code analysis failed: {self.start_error}")
        if method == WARM:
            if delta is not None:
                self.engine.index.apply(delta)
            # What every first query pays: parso's grammar and jedi's inference of a module.
            jedi.Script(_WARM_CODE, project=self.engine.project).get_names(definitions=True)
            return None
        if method not in REQUESTS:
            raise ToolError(f"Unknown request {method!r}")
        try:
            new_files = delta is not None and (
                delta.reset or any(not self.engine.index.knows(p) for p in delta.python)
            )
            self.engine.refresh_roots(rescan=new_files)
            if delta is not None:
                self.engine.index.apply(delta)
            return getattr(self.engine, method)(*args)
        except ToolError:
            raise
        except Exception as e:  # an analysis bug must not take the worker down
            raise ToolError(f"Code analysis failed ({type(e).__name__}: {e})") from e


#: The worker's garbage-collector thresholds. jedi keeps a large, long-lived heap of parse
#: trees and builds hundreds of thousands of small objects per query; with Python's default
#: (700, 10, 10) the collector walks that heap over and over (a cold project-wide search of
#: 1,000 modules spent a fifth of its time there). Only the youngest generation's threshold is
#: raised: cycles are still collected, less often (the worker held ~10-20 MB more after a few
#: project-wide searches of 1,000 modules, ~90 MB in all).
GC_THRESHOLDS = (50_000, 10, 10)


def worker_handler(root: str, environment_path: str = "") -> _Handler:
    """The code-analysis worker (``python -m jupyter_mcp.core.worker jupyter_mcp.code.engine ROOT
    [PYTHON]``, see :class:`jupyter_mcp.core.worker.WorkerProcess`): a request is ``(method, args,
    delta)``, answered with the method's value."""
    gc.freeze()  # the imported modules live as long as the worker: never scan them again
    gc.set_threshold(*GC_THRESHOLDS)
    return _Handler(root, environment_path)
