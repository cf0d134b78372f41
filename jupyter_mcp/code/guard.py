"""The check that a refactoring leaves no importer of a renamed or removed name behind.

jedi finds references by following imports; when it cannot follow one (an import it resolves
to another copy of the package, a name reached through a re-export it does not see), the use
is silently left out and the rename breaks the project. This check does not depend on jedi's
answer: it scans every file that mentions the old name (the index says which) for the ways a
module-level name is reached from another module, resolving imports by path over the
project's import roots:

* ``from M import name`` where ``M`` is the module defining the name, or a module that itself
  imports it from there (a re-export, ``from .utils import name`` in ``__init__.py``);
* ``M.name`` where ``M`` is bound by ``import M`` / ``from P import M`` to such a module;
* ``__all__`` entries (``"name"``) of those modules, which jedi does not rename;
* plain uses of the name in a module that has it from such a module (``from M import *`` or
  ``from M import name``), when jedi's own lookup agrees.

Each is reported with its position; the rename includes them, and an inline refuses when any
is left.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import parso


@dataclass(frozen=True)
class Use:
    """A place in a file that reaches the name from a module that defines or re-exports it."""

    path: Path
    line: int  # 0-based
    character: int
    #: "import", "attribute", "__all__" or "name".
    how: str
    tree_name: Any = None


class Resolver:
    """Import statements to project files, by path, over the project's import roots."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots

    def module_file(self, importer: Path, level: int, dotted: list[str]) -> Path | None:
        """The file of module ``dotted`` imported from ``importer`` (``level`` leading dots)."""
        if level:
            base = importer.parent
            for _ in range(level - 1):
                base = base.parent
            bases = [base]
        else:
            # A script's and a notebook's folder is on their sys.path (pytest puts a test's
            # there too); a package module's own folder holds no module of that name then.
            bases = [importer.parent, *self.roots]
        for base in bases:
            found = _module_at(base, dotted)
            if found is not None:
                return found
        return None


def _module_at(base: Path, dotted: list[str]) -> Path | None:
    target = base.joinpath(*dotted)
    candidates = [target / "__init__.py", target / "__init__.pyi"]
    if dotted:
        candidates[:0] = [
            target.with_name(target.name + ".py"),
            target.with_name(target.name + ".pyi"),
        ]
    for candidate in candidates:
        if candidate.is_file():
            return Path(os.path.realpath(candidate))
    return None


@dataclass
class FileScan:
    """What one file imports, as far as the check needs it."""

    path: Path
    module: Any
    #: Local name → module file, for ``import a.b``, ``import a.b as c``, ``from p import m``.
    modules: dict[str, Path]
    #: ``from M import name [as alias]``: the name and alias leaves, M's file (None when M is
    #: not a project file) and M's dotted name.
    imports: list[tuple[Any, Any, Path | None, list[str]]]
    #: Files of ``from M import *``.
    stars: list[Path]


def scan_file(path: Path, code: str, name: str, resolver: Resolver, module: Any = None) -> FileScan:
    """Note what of ``code`` (parsed, or ``module`` when the caller has its tree) the check
    needs: ``from … import name`` statements, star imports, and the imports binding the
    first name of each ``a.b.name``. Only those statements are looked at."""
    if module is None:
        module = parso.parse(code, error_recovery=True)
    scan = FileScan(path, module, {}, [], [])
    used = module.get_used_names()
    nodes: dict[int, Any] = {}
    for node in module.iter_imports():
        if node.type == "import_from" and node.is_star_import():
            nodes[id(node)] = node
    bases: set[str] = set()
    for leaf in used.get(name, []):
        statement = _import_of(leaf)
        if statement is not None:
            nodes[id(statement)] = statement
        else:
            chain = _attribute_base(leaf)
            if chain:
                bases.add(chain[0])
    for base in bases:
        for leaf in used.get(base, []):
            statement = _import_of(leaf)
            if statement is not None:
                nodes[id(statement)] = statement
    for node in nodes.values():
        _note_import(scan, node, name, resolver)
    return scan


def _note_import(scan: FileScan, node: Any, name: str, resolver: Resolver) -> None:
    path = scan.path
    if node.type == "import_name":
        for dotted_names, alias in node._dotted_as_names():
            dotted = [n.value for n in dotted_names]
            if alias is not None:
                target = resolver.module_file(path, 0, dotted)
                if target is not None:
                    scan.modules[alias.value] = target
            else:
                # ``import a.b`` binds ``a``; ``a.b`` is reached through attributes.
                target = resolver.module_file(path, 0, dotted[:1])
                if target is not None:
                    scan.modules[dotted[0]] = target
        return
    level = node.level
    dotted = [n.value for n in node.get_from_names()]
    source = resolver.module_file(path, level, dotted)
    if node.is_star_import():
        if source is not None:
            scan.stars.append(source)
        return
    for imported, alias in node._as_name_tuples():
        bound = alias if alias is not None else imported
        submodule = resolver.module_file(path, level, [*dotted, imported.value])
        if submodule is not None:
            scan.modules[bound.value] = submodule
        if imported.value == name:
            scan.imports.append((imported, alias, source, dotted))


def _import_of(leaf: Any) -> Any:
    """The ``import``/``from … import`` statement ``leaf`` is part of, or None."""
    node = leaf.parent
    while node is not None:
        if node.type in ("import_name", "import_from"):
            return node
        if node.type in ("simple_stmt", "file_input", "suite", "expr_stmt"):
            return None
        node = node.parent
    return None


def carriers(scans: dict[Path, FileScan], defining: set[Path], name: str) -> set[Path]:
    """The defining modules and every module that re-exports the name from one of them."""
    found = set(defining)
    changed = True
    while changed:
        changed = False
        for path, scan in scans.items():
            if path in found:
                continue
            # ``from M import name as other`` carries ``other``, not the name.
            if any(
                source in found and (alias is None or alias.value == name)
                for _, alias, source, _ in scan.imports
            ) or any(star in found for star in scan.stars):
                found.add(path)
                changed = True
    return found


def uses(
    scans: dict[Path, FileScan],
    name: str,
    carrier_files: set[Path],
    agrees: Callable[[Path, Any, set[tuple[int, int]]], bool],
    done: set[tuple[Path, int, int]],
) -> tuple[list[Use], list[tuple[Path, str]]]:
    """The places that reach ``name`` from a carrier module, and imports that cannot be told
    (``(path, what)``).

    ``agrees(path, leaf, anchors)`` says whether jedi's own lookup takes a plain use to the
    name, or to one of ``anchors`` (0-based positions, in the same file, of the imports that
    bind it from a carrier: their module need not be resolved for that); places in ``done``
    (``(path, line, character)``, already found) are not looked at again.
    """
    found: list[Use] = []
    unclear: list[tuple[Path, str]] = []
    stems = {p.parent.name if p.name.startswith("__init__.") else p.stem for p in carrier_files}
    for path, scan in scans.items():
        binds = False
        anchors: set[tuple[int, int]] = set()
        for leaf, alias, source, dotted in scan.imports:
            if source in carrier_files:
                found.append(_use(path, leaf, "import"))
                if alias is not None and alias.value == name:
                    found.append(_use(path, alias, "import"))  # a re-export under its name
                bound = alias if alias is not None else leaf
                if bound.value == name:
                    binds = True
                    anchors.add((bound.start_pos[0] - 1, bound.start_pos[1]))
            elif source is None and dotted and dotted[-1] in stems:
                unclear.append(
                    (
                        path,
                        f"line {leaf.start_pos[0] - 1}: from {'.' * _level(leaf)}"
                        f"{'.'.join(dotted)} import {name} (no module of the project found there)",
                    )
                )
        binds = binds or any(star in carrier_files for star in scan.stars)
        for leaf in scan.module.get_used_names().get(name, []):
            if (path, leaf.start_pos[0] - 1, leaf.start_pos[1]) in done or _import_of(
                leaf
            ) is not None:
                continue
            base = _attribute_base(leaf)
            if base is not None:
                target = _resolve_chain(scan, base)
                if target in carrier_files:
                    found.append(_use(path, leaf, "attribute"))
            elif (binds or path in carrier_files) and agrees(path, leaf, anchors):
                found.append(_use(path, leaf, "name"))
        if path in carrier_files:
            found.extend(_all_entries(path, scan.module, name))
    return [u for u in found if (u.path, u.line, u.character) not in done], unclear


def _use(path: Path, leaf: Any, how: str) -> Use:
    return Use(path, leaf.start_pos[0] - 1, leaf.start_pos[1], how, leaf)


def _level(leaf: Any) -> int:
    node = leaf.parent
    while node is not None and node.type != "import_from":
        node = node.parent
    return int(node.level) if node is not None else 0


def _attribute_base(leaf: Any) -> list[str] | None:
    """``["a", "b"]`` for the ``name`` of ``a.b.name`` (only dotted names); None otherwise."""
    trailer = leaf.parent
    if trailer is None or trailer.type != "trailer" or trailer.children[0].value != ".":
        return None
    power = trailer.parent
    if power is None or power.type not in ("power", "atom_expr"):
        return []
    chain: list[str] = []
    for child in power.children:
        if child is trailer:
            return chain
        if child.type == "name":
            chain.append(child.value)
        elif child.type == "trailer" and child.children[0].value == "." and chain:
            chain.append(child.children[1].value)
        else:
            return []
    return []


def _resolve_chain(scan: FileScan, chain: list[str]) -> Path | None:
    if not chain or chain[0] not in scan.modules:
        return None
    target: Path | None = scan.modules[chain[0]]
    for part in chain[1:]:
        if target is None or not target.name.startswith("__init__."):
            return None
        target = _module_at(target.parent, [part])
    return target


def _all_entries(path: Path, module: Any, name: str) -> Iterator[Use]:
    """The ``"name"`` strings of ``__all__ = [...]`` / ``__all__ += [...]``."""
    for statement in _top_statements(module):
        first = statement.children[0]
        if first.type != "name" or first.value != "__all__":
            continue
        for leaf in _leaves(statement):
            if leaf.type == "string" and leaf.value in (f"'{name}'", f'"{name}"'):
                yield Use(path, leaf.start_pos[0] - 1, leaf.start_pos[1] + 1, "__all__")


def _top_statements(module: Any) -> Iterator[Any]:
    for child in module.children:
        if child.type == "simple_stmt":
            for statement in child.children:
                if statement.type == "expr_stmt":
                    yield statement


def _leaves(node: Any) -> Iterator[Any]:
    leaf = node.get_first_leaf()
    last = node.get_last_leaf()
    while leaf is not None:
        yield leaf
        if leaf is last:
            return
        leaf = leaf.get_next_leaf()
