"""Code intelligence with jedi: symbols, references and refactorings across modules and notebooks.

One :class:`CodeIntel` per server holds a ``jedi.Project`` rooted at the project root, an index
of which files mention which identifiers (refreshed by modification time) and a cache of recent
reference answers. Notebooks take part through their percent-format text view, the same text
``get_file_text_by_path`` shows, so a position in a notebook is a line of that view. Jedi sees a
notebook under a made-up ``.py`` path next to it (``analysis.ipynb.py``), with IPython syntax
that jupytext left uncommented turned into comments without moving any other character.

All jedi work runs on one worker thread (jedi is not thread-safe), with a time limit per call:
a call that takes longer fails with a clear error while the worker finishes in the background.
Nothing here writes files; :func:`apply_changes` does, for every file or for none.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import difflib
import keyword
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import jedi
import parso
from jedi.api.exceptions import RefactoringError
from jedi.file_io import KnownContentFileIO
from jedi.inference import references as jedi_references
from jedi.inference.imports import load_module_from_path
from parso.python.tree import Name as TreeName
from parso.tree import search_ancestor

from .context import ToolContext
from .documents import atomic_write, is_notebook, read_raw_text, read_text, write_text
from .errors import ToolError
from .notebook_text import read_notebook

T = TypeVar("T")

PYTHON_SUFFIXES = (".py", ".pyi")
NOTEBOOK_SUFFIX = ".ipynb"
#: Where a notebook's text view lives for jedi: next to the notebook, under a ``.py`` name.
VIEW_SUFFIX = ".py"
#: Folders the project walk never enters (jedi skips the same ones, plus hidden folders).
SKIPPED_FOLDERS = frozenset(
    {".tox", ".venv", ".mypy_cache", "venv", "__pycache__", "node_modules", "site-packages"}
)
REFACTOR_TYPES = ("rename", "extract_variable", "extract_function", "inline")
DEFAULT_TIMEOUT = 30.0
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_CONSTANT = re.compile(r"_*[A-Z][A-Z0-9_]*")
_SCOPES = ("funcdef", "classdef", "lambdef", "file_input")
_PROPERTY_DECORATORS = re.compile(r"@\s*(\w+\.)*(property|cached_property|setter|getter|deleter)\b")


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


def load_source(ctx: ToolContext, path_in_project: str, *, tool: str) -> Source:
    """Read a Python file or a Python notebook for analysis; anything else is refused."""
    path = ctx.resolve(path_in_project, must_exist=True)
    shown = ctx.relative(path)
    suffix = path.suffix.lower()
    if is_notebook(path):
        nb = read_notebook(read_raw_text(ctx, path, path_in_project), path_in_project)
        language = (nb.metadata.get("kernelspec") or {}).get("language") or (
            nb.metadata.get("language_info") or {}
        ).get("name")
        if language and language.lower() != "python":
            raise ToolError(f"{tool} analyses Python; {shown} is a {language} notebook")
        text = read_text(ctx, path, path_in_project)
        return Source(path, shown, text, neutralise(text), view_path(path))
    if suffix not in PYTHON_SUFFIXES:
        raise ToolError(
            f"{tool} supports Python files (.py, .pyi) and Python notebooks (.ipynb); "
            f"{shown} is not one"
        )
    text = read_text(ctx, path, path_in_project)
    return Source(path, shown, text, text, path)


# --------------------------------------------------------------------------------------------
# The project index


@dataclass
class _Entry:
    stamp: tuple[int, int]
    names: frozenset[str]
    code: str | None = None  # the neutralised view, for notebooks only


class FileIndex:
    """Which project files mention which identifiers, refreshed by modification time.

    ``generation`` changes whenever a Python file or notebook appears, changes or goes away,
    which is what cached answers are checked against.
    """

    def __init__(
        self,
        root: Path,
        max_file_bytes: int,
        on_changed: Callable[[Path, str], None] | None = None,
    ) -> None:
        self.root = root
        self.max_file_bytes = max_file_bytes
        self._on_changed = on_changed
        self.generation = 0
        self._entries: dict[Path, _Entry] = {}

    def _walk(self) -> Iterator[os.DirEntry[str]]:
        stack = [str(self.root)]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        name = entry.name
                        if entry.is_dir(follow_symlinks=False):
                            if not name.startswith(".") and name not in SKIPPED_FOLDERS:
                                stack.append(entry.path)
                        elif name.endswith((".py", ".pyi", NOTEBOOK_SUFFIX)) and entry.is_file():
                            yield entry
            except OSError:
                continue

    def refresh(self) -> None:
        """Bring the index up to date with the files on disk."""
        seen: set[Path] = set()
        changed = False
        for entry in self._walk():
            path = Path(entry.path)
            seen.add(path)
            try:
                st = entry.stat()
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            old = self._entries.get(path)
            if old is not None and old.stamp == stamp:
                continue
            changed = True
            self._entries[path] = self._read(path, stamp)
        for gone in set(self._entries) - seen:
            del self._entries[gone]
            changed = True
        if changed:
            self.generation += 1

    def _read(self, path: Path, stamp: tuple[int, int]) -> _Entry:
        if stamp[1] > self.max_file_bytes:
            return _Entry(stamp, frozenset())
        try:
            raw = path.read_bytes().decode("utf-8", errors="replace")
        except OSError:
            return _Entry(stamp, frozenset())
        if path.suffix == NOTEBOOK_SUFFIX:
            try:
                from .notebook_text import notebook_view

                code = neutralise(notebook_view(read_notebook(raw, path.name)))
            except (ToolError, Exception):  # a broken notebook simply takes no part
                return _Entry(stamp, frozenset())
            return _Entry(stamp, frozenset(_IDENTIFIER.findall(code)), code)
        if self._on_changed is not None:
            self._on_changed(path, raw)
        return _Entry(stamp, frozenset(_IDENTIFIER.findall(raw)))

    def invalidate(self, paths: list[Path]) -> None:
        """Forget ``paths`` (just written), so the next refresh reads them again."""
        for path in paths:
            self._entries.pop(path, None)
        self.generation += 1

    def mentioning(self, name: str) -> list[Path]:
        """Files (Python and notebooks) whose text contains the identifier ``name``."""
        return sorted(p for p, e in self._entries.items() if name in e.names)

    def notebook_code(self, path: Path) -> str | None:
        """The neutralised text view of an indexed notebook."""
        entry = self._entries.get(path)
        return entry.code if entry is not None else None


# --------------------------------------------------------------------------------------------
# The engine


def kernel_python(ctx: ToolContext) -> str | None:
    """The interpreter of the server's default Python kernel, when it is another one than ours."""
    app = ctx.serverapp
    ksm = getattr(app, "kernel_spec_manager", None)
    if ksm is None:
        return None
    name = getattr(getattr(app, "kernel_manager", None), "default_kernel_name", None) or "python3"
    try:
        spec = ksm.get_kernel_spec(name)
    except Exception:  # no such kernel: analyse with the server's interpreter
        return None
    if (spec.language or "").lower() != "python" or not spec.argv:
        return None
    exe = spec.argv[0]
    # jupyter_client runs "python" kernels with the server's interpreter.
    if exe in {
        "python",
        f"python{sys.version_info[0]}",
        "python{}.{}".format(*sys.version_info[:2]),
    }:
        return None
    found = exe if os.path.isabs(exe) else shutil.which(exe)
    if not found or not os.access(found, os.X_OK):
        return None
    if os.path.realpath(found) == os.path.realpath(sys.executable):
        return None
    return found


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

    def as_json(self, ctx: ToolContext) -> dict[str, Any]:
        """The wire form of the spec."""
        return {
            "path": ctx.relative(self.path),
            "line": self.line,
            "character": self.character,
            "endLine": self.line,
            "endCharacter": self.character + (0 if self.module else len(self.name)),
        }


class CodeIntel:
    """The shared jedi project of one server, with its index, caches and worker thread."""

    def __init__(
        self,
        root: Path,
        *,
        environment_path: str | None = None,
        max_file_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.root = root
        self.environment_path = environment_path
        self.project = jedi.Project(
            root,
            environment_path=environment_path,
            added_sys_path=[str(root)],
            smart_sys_path=True,
        )
        self.index = FileIndex(root, max_file_bytes, on_changed=self._keep_parse_fresh)
        self._references_cache: dict[tuple[Path, int, int], tuple[int, str, list[Reference]]] = {}
        self._grammar_cache: Any = None
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="jupyter-mcp-jedi"
        )

    def close(self) -> None:
        """Stop taking work; a job still running finishes in the background."""
        self._executor.shutdown(wait=False, cancel_futures=True)

    # -- running jedi ------------------------------------------------------------------------

    def run(self, fn: Callable[[], T], *, timeout: float, what: str) -> T:
        """Run ``fn`` on the jedi thread; give up with a clear error after ``timeout`` seconds."""
        future = self._executor.submit(fn)
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError as e:
            future.cancel()
            raise ToolError(
                f"{what} did not finish within {timeout:g} s (the server's code_timeout) and "
                "was abandoned; nothing was changed. Try a narrower query or raise "
                "c.JupyterMCP.code_timeout"
            ) from e
        except RefactoringError as e:
            raise ToolError(f"{what} failed: {e}") from e

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
            for module_context in module_contexts:
                if module_context.is_compiled():
                    continue
                except_.add(module_context.py__file__())
                yield module_context
            for path in index.mentioning(name):
                if path.suffix == NOTEBOOK_SUFFIX:
                    code = index.notebook_code(path)
                    jedi_path = view_path(path)
                    if code is None or jedi_path in except_:
                        continue
                    file_io = KnownContentFileIO(jedi_path, code)
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
                    module = load_module_from_path(inference_state, file_io)
                if not module.is_compiled():
                    yield module.as_context()

        jedi_references.get_module_contexts_containing_name = containing
        try:
            yield
        finally:
            jedi_references.get_module_contexts_containing_name = original

    def _keep_parse_fresh(self, path: Path, code: str) -> None:
        """Make sure parso's caches hold the current text of a file that changed on disk.

        parso trusts a cached tree when the file is not newer than the cache, which a file
        replaced by an older copy (``cp -p``, an archive, a restored backup) defeats.
        """
        from parso.cache import _get_hashed_path, parser_cache, try_to_save_module
        from parso.file_io import FileIO
        from parso.utils import split_lines

        grammar = self._grammar()
        hashed = grammar._hashed
        item = parser_cache.get(hashed, {}).get(path)
        lines = split_lines(code, keepends=True)
        if item is not None:
            if item.lines == lines:
                return
        else:
            pickle = _get_hashed_path(hashed, path, cache_path=Path(jedi.settings.cache_directory))
            try:
                if os.path.getmtime(pickle) < os.path.getmtime(path):
                    return  # parso will parse the file afresh
            except OSError:
                return  # nothing cached on disk
        module = grammar.parse(code, cache=False, diff_cache=False)
        try_to_save_module(
            hashed, FileIO(str(path)), module, lines, cache_path=Path(jedi.settings.cache_directory)
        )

    def _grammar(self) -> Any:
        if self._grammar_cache is None:
            self._grammar_cache = self.project.get_environment().get_grammar()
        return self._grammar_cache

    def _real_path(self, jedi_path: Path | None) -> Path | None:
        if jedi_path is None:
            return None
        path = Path(jedi_path)
        if path.name.endswith(NOTEBOOK_SUFFIX + VIEW_SUFFIX):
            notebook = path.with_name(path.name[: -len(VIEW_SUFFIX)])
            if notebook.exists() and not path.exists():
                return notebook
        return path

    # -- references --------------------------------------------------------------------------

    def references(self, source: Source, line: int, character: int) -> list[Reference]:
        """Every reference of the name at (line, character), definitions included, sorted.

        Runs on the jedi thread. Answers are cached until any Python file or notebook of the
        project changes.
        """
        self.index.refresh()
        key = (source.path, line, character)
        cached = self._references_cache.get(key)
        if cached is not None and cached[0] == self.index.generation and cached[1] == source.code:
            return cached[2]
        found = self._references(source, line, character)
        if len(self._references_cache) > 256:
            self._references_cache.clear()
        self._references_cache[key] = (self.index.generation, source.code, found)
        return found

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
        for name in names:
            path = self._real_path(name.module_path)
            if path is None or name.line is None or not _inside(self.root, path):
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

    # -- refactorings ------------------------------------------------------------------------

    def rename(
        self,
        source: Source,
        line: int,
        character: int,
        new_name: str,
        read: Callable[[Path], Source],
    ) -> tuple[dict[Path, tuple[str, str, str]], int]:
        """The new text of every file a rename touches (``{path: (shown, old, new)}``) and the
        number of occurrences renamed."""
        self.index.refresh()
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
                if d.in_builtin_module() or where is None or not _inside(self.root, where):
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
        _check_conflicts(refs, new_name, self._shown)
        by_file: dict[Path, list[Reference]] = {}
        for ref in refs:
            by_file.setdefault(ref.path, []).append(ref)
        changes: dict[Path, tuple[str, str, str]] = {}
        for path, file_refs in by_file.items():
            src = source if path == source.path else read(path)
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
        return changes, len(refs)

    def jedi_refactoring(
        self, source: Source, make: Callable[[jedi.Script], Any], read: Callable[[Path], Source]
    ) -> tuple[dict[Path, tuple[str, str, str]], int]:
        """Run one of jedi's refactorings and map its changes back onto the files' text views;
        also the number of edits (changed blocks of lines)."""
        self.index.refresh()
        script = self.script(source)
        with self._project_search(source):
            refactoring = make(script)
        if refactoring.get_renames():
            raise ToolError("The refactoring would rename files, which is not supported")
        changes: dict[Path, tuple[str, str, str]] = {}
        edits = 0
        for jedi_path, changed in refactoring.get_changed_files().items():
            path = self._real_path(jedi_path)
            if path is None or not _inside(self.root, path):
                raise ToolError(f"The refactoring would change {jedi_path}, outside the project")
            src = source if path == source.path else read(path)
            old_code = changed._module_node.get_code()
            if old_code != src.code:
                raise ToolError(
                    f"{src.shown} changed while the refactoring was computed; try again"
                )
            new_text = map_back(src.code, src.text, changed.get_new_code())
            if new_text != src.text:
                changes[path] = (src.shown, src.text, new_text)
                edits += count_edits(src.text, new_text)
        return changes, edits

    def _shown(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def _is_alias_name(tree_name: Any) -> bool:
    """True for the ``y`` of ``import x as y`` / ``from m import x as y``."""
    parent = getattr(tree_name, "parent", None)
    return (
        parent is not None
        and parent.type in ("import_as_name", "dotted_as_name")
        and len(parent.children) == 3
        and parent.children[-1] is tree_name
    )


def _module_name(notebook: Path) -> str:
    return re.sub(r"\W", "_", notebook.stem) + "_ipynb"


def _inside(root: Path, path: Path) -> bool:
    return path.parts[: len(root.parts)] == root.parts


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


def apply_changes(
    ctx: ToolContext, changes: dict[Path, tuple[str, str, str]], notify: Callable[[Path], None]
) -> None:
    """Write every changed file or none: all locks taken, originals restored on any failure.

    ``changes`` maps a path to ``(shown, text the change was computed from, new text)``; a
    file whose text view is no longer the one the change was computed from is refused.
    """
    paths = sorted(changes, key=str)
    with contextlib.ExitStack() as stack:
        for path in paths:
            stack.enter_context(ctx.locks(path))
        guard = ctx.services.get("before_file_write")
        originals: dict[Path, str] = {}
        for path in paths:
            shown, old_text, _ = changes[path]
            if guard is not None:
                guard(path)
            originals[path] = read_raw_text(ctx, path, shown)
            if read_text(ctx, path, shown) != old_text:
                raise ToolError(
                    f"{shown} changed while the refactoring was computed; nothing was changed, "
                    "try again"
                )
        written: list[Path] = []
        try:
            for path in paths:
                shown, _, new_text = changes[path]
                write_text(ctx, path, shown, new_text)
                written.append(path)
        except BaseException as e:
            for path in written:
                atomic_write(path, originals[path])
            if isinstance(e, ToolError):
                raise ToolError(f"{e.message}; no file was changed") from e
            raise ToolError(f"Writing {changes[path][0]} failed ({e}); no file was changed") from e
    for path in paths:
        _forget_parse(path)
        notify(path)


def _forget_parse(path: Path) -> None:
    # parso compares modification times at a resolution a quick rewrite can slip under.
    from parso.cache import parser_cache

    for per_grammar in parser_cache.values():
        per_grammar.pop(path, None)
        per_grammar.pop(view_path(path), None)


# --------------------------------------------------------------------------------------------
# The shared engine


_engine_guard = threading.Lock()


def engine(ctx: ToolContext) -> CodeIntel:
    """The server's :class:`CodeIntel`, created on first use and kept in ``ctx.services``."""
    with _engine_guard:
        found = ctx.services.get("code_intel")
        if found is None:
            found = CodeIntel(
                ctx.root_dir,
                environment_path=kernel_python(ctx),
                max_file_bytes=ctx.settings.max_file_bytes,
            )
            ctx.services["code_intel"] = found
        return found


def timeout(ctx: ToolContext) -> float:
    """The time limit of one code-analysis call, in seconds."""
    return float(getattr(ctx.settings, "code_timeout", DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT)
