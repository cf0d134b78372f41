"""The package's import structure: every module imports alone, no cycles, folders in layers.

The import graph is read from the source with ``ast``: an edge is an ``import`` statement of a
package module, at module level or inside a function (an import moved into a function to dodge a
cycle is still a cycle), but not inside ``if TYPE_CHECKING:``. Importing ``jupyter_mcp.a.b``
runs ``jupyter_mcp/a/__init__.py`` first, so it is an edge to ``jupyter_mcp.a`` too; the root
package is left out of that rule, since it holds only the version and entry points that import
on call. Modules loaded by name through ``importlib`` (the built-in tool modules, a worker's
handler) are not edges.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

PACKAGE = "jupyter_mcp"
ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / PACKAGE

#: The folders from the bottom up: a folder imports only folders before it (and itself).
LAYERS = [
    "core",
    "documents",
    "project",
    "search",
    "code",
    "git",
    "kernels",
    "execution",
    "lab",
    "plugins",
    "resources",
    "prompts",
    "surfaces",
    "tools",
    "cli",
]


def package_modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` except those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _known(name: str, modules: dict[str, Path]) -> str:
    """``name`` itself when it is a module, else the module that defines it."""
    while name not in modules:
        name = name.rpartition(".")[0]
    return name


def import_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported module: line of the first import}}`` within the package."""
    modules = package_modules()
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: dict[str, int] = {}
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    origin = ".".join([*base, node.module] if node.module else base)
                else:
                    origin = node.module or ""
                wanted = [f"{origin}.{alias.name}" for alias in node.names]
            for full in wanted:
                if full.split(".")[0] != PACKAGE:
                    continue
                target = _known(full, modules)
                # The packages the import runs on the way (not the root: see the docstring).
                parts = target.split(".")
                chain = [".".join(parts[:i]) for i in range(2, len(parts))] + [target]
                for module in chain:
                    if module != name:
                        targets[module] = min(targets.get(module, node.lineno), node.lineno)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Shortest cycles (``[a, b, …, a]``) until every module caught in one is in one shown."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(start: str) -> None:
        # Tarjan's algorithm, iterative: (node, iterator over its successors).
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for group in groups:
        left = set(group)
        while left:
            cycle = _cycle_through(min(left), group, graph)
            found.append(cycle)
            left -= set(cycle)
    return found


def _cycle_through(start: str, group: set[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """The shortest cycle through ``start`` within its group (breadth-first)."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for succ in sorted(graph[node]):
            if succ == start:
                return [*paths[node], start]
            if succ in group and succ not in paths:
                paths[succ] = [*paths[node], succ]
                queue.append(succ)
    raise AssertionError(f"no cycle in {group}")  # a strongly connected group always has one


def describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    """``a (line 3) -> b (line 12) -> a``: where each module imports the next."""
    steps = [f"{a} (line {graph[a][b]})" for a, b in pairwise(cycle)]
    return " -> ".join([*steps, cycle[-1]])


def folder_layer(module: str) -> int | None:
    """The layer of the folder a module is in; None outside the folders."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return None


def layers(graph: dict[str, dict[str, int]]) -> dict[str, int]:
    """Each module's layer: its folder's, or for a module outside the folders (app.py, the
    package itself, a facade such as testing.py) the highest layer it imports (-1 for none)."""
    found: dict[str, int] = {}

    def of(module: str, seen: tuple[str, ...]) -> int:
        if module in found:
            return found[module]
        own = folder_layer(module)
        if own is None:
            if module in seen:
                return -1  # a cycle: test_the_import_graph_has_no_cycle reports it
            own = max((of(t, (*seen, module)) for t in graph[module]), default=-1)
        found[module] = own
        return own

    for module in graph:
        of(module, ())
    return found


def test_every_module_imports_on_its_own():
    modules = [
        name
        for name, path in package_modules().items()
        if path.name != "__main__.py"  # runs the command line
    ]
    # One interpreter; before each module, forget every module of the package, so each is
    # imported first, with nothing of ours already loaded (third-party modules stay cached).
    script = """if True:
        import importlib, json, sys, traceback
        failures = {}
        for name in sys.argv[1:]:
            for loaded in [m for m in sys.modules if m.split(".")[0] == "jupyter_mcp"]:
                del sys.modules[loaded]
            try:
                importlib.import_module(name)
            except BaseException:
                failures[name] = traceback.format_exc()
        print(json.dumps(failures))
    """
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", script, *modules],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    failures = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not failures, "modules that fail to import alone:\n" + "\n".join(
        f"{name}:\n{error}" for name, error in failures.items()
    )


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    # The graph sees the package (a broken resolver would find no edges and no cycles).
    assert f"{PACKAGE}.core.errors" in graph[f"{PACKAGE}.core.registry"]
    assert f"{PACKAGE}.surfaces.rest" in graph[f"{PACKAGE}.surfaces.routes"]
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(describe(c, graph) for c in found)


def test_a_folder_imports_only_the_folders_below_it():
    graph = import_graph()
    level = layers(graph)
    wrong = []
    for module, targets in sorted(graph.items()):
        if folder_layer(module) is None:
            continue  # outside the folders, a module is as high as what it imports
        for target, line in sorted(targets.items()):
            if level[target] > level[module]:
                wrong.append(f"{module} (line {line}) imports {target} ({LAYERS[level[target]]})")
    assert not wrong, (
        "imports against the layers (" + " < ".join(LAYERS) + "):\n" + "\n".join(wrong)
    )


def test_a_module_outside_the_folders_is_as_high_as_what_it_imports():
    graph = {
        "jupyter_mcp.app": {"jupyter_mcp.tools.files": 1, "jupyter_mcp.facade": 2},
        "jupyter_mcp.facade": {"jupyter_mcp.git.repo": 1},
        "jupyter_mcp.tools.files": {"jupyter_mcp.facade": 3},
        "jupyter_mcp.git.repo": {},
        "jupyter_mcp.leaf": {},
    }
    level = layers(graph)
    assert level["jupyter_mcp.facade"] == LAYERS.index("git")
    assert level["jupyter_mcp.app"] == LAYERS.index("tools")
    assert level["jupyter_mcp.leaf"] == -1


def test_cycles_are_found_and_named():
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}, "e": {"e": 5}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert describe(["a", "b", "c", "a"], graph) == "a (line 1) -> b (line 2) -> c (line 3) -> a"
