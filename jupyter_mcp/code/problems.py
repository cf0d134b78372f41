"""A file's problems: syntax errors, undefined names, unused imports, redefinitions.

The checks are pyflakes' (a maintained linter that only reads code, never imports or runs it);
syntax errors come from Python's own parser. A notebook is checked as the kernel would run it
from the top: its code cells in order, with IPython syntax (``%magic``, ``!shell``, ``obj?``)
turned into the Python IPython itself runs (``get_ipython().run_line_magic(...)``), so names
defined in earlier cells count as defined. What only a notebook can get wrong is said as well:
a name used before the cell that defines it, and cells that ran out of order.

Positions are 0-based; a notebook's are lines of its percent-format view, with the cell's id
and the line inside the cell.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from pyflakes import checker as pyflakes_checker
from pyflakes import messages as pyflakes_messages

#: pyflakes messages that are errors: the code fails (or cannot be compiled) when it runs.
ERRORS = frozenset(
    {
        "UndefinedName",
        "UndefinedLocal",
        "UndefinedExport",
        "ReturnOutsideFunction",
        "YieldOutsideFunction",
        "ContinueOutsideLoop",
        "BreakOutsideLoop",
        "DefaultExceptNotLast",
        "TwoStarredExpressions",
        "TooManyExpressionsInStarredAssignment",
        "DuplicateArgument",
        "ImportStarNotPermitted",
        "InvalidPrintSyntax",
        "ForwardAnnotationSyntaxError",
        "FutureFeatureNotDefined",
        "LateFutureImport",
        "PercentFormatInvalidFormat",
        "StringDotFormatInvalidFormat",
    }
)
#: Names an IPython kernel defines in every notebook.
IPYTHON_BUILTINS = frozenset({"get_ipython", "display", "In", "Out", "exit", "quit"})
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def python_problems(code: str, filename: str) -> list[dict[str, Any]]:
    """The problems of a Python file's text."""
    tree, error = _parse(code, filename)
    if tree is None:
        return [error] if error is not None else []
    return [_problem(m) for m in _check(tree, filename, ())]


def notebook_problems(
    cells: list[dict[str, Any]], markers: list[int] | None, filename: str
) -> list[dict[str, Any]]:
    """The problems of a notebook's cells (``{"id", "cell_type", "source", "execution_count"}``).

    ``markers`` are the 1-based view lines of the cells' ``# %%`` markers (None when the view
    does not map cell for cell: then ``line`` is the line inside the cell).
    """
    problems: list[dict[str, Any]] = []
    chunks: list[tuple[int, str]] = []  # (cell index, Python code) of the cells that parse
    for index, cell in enumerate(cells):
        if cell.get("cell_type") != "code" or not cell.get("source", "").strip():
            continue
        source = cell["source"]
        code = cell_as_python(source)
        if code is None:
            continue  # a cell magic (%%bash, %%timeit…): its body is not Python to check
        _tree, error = _parse(code, filename)
        if error is not None:
            problems.append(_in_cell(error, index, cells, markers))
            continue
        chunks.append((index, code))
    starts: list[tuple[int, int]] = []  # (first line in the whole text, cell index)
    lines: list[str] = []
    for index, code in chunks:
        starts.append((len(lines), index))
        lines.extend(code.rstrip("\n").split("\n"))
    whole = "\n".join(lines) + "\n"
    tree, _error = _parse(whole, filename)  # cells that parse one by one parse in a row
    if tree is not None:
        later = _later_bindings(chunks)
        for message in _check(tree, filename, IPYTHON_BUILTINS):
            problem = _problem(message)
            first, index = max((s for s in starts if s[0] <= problem["line"]), default=starts[0])
            problem["line"] -= first
            name = message.message_args[0] if message.message_args else None
            if isinstance(message, pyflakes_messages.UndefinedName) and name in later:
                defined_in = [i for i in later[name] if i > index]
                if defined_in:
                    problem["code"] = "DefinedInLaterCell"
                    problem["message"] = (
                        f"{problem['message']}: it is defined only in a later cell "
                        f"({_cell_label(cells, defined_in[0])}), so running the notebook from "
                        "the top fails here"
                    )
            problems.append(_in_cell(problem, index, cells, markers))
    problems.extend(execution_order(cells, markers))
    return sorted(problems, key=lambda p: (p["line"], p["character"], p["message"]))


def cell_as_python(source: str) -> str | None:
    """The Python IPython runs for a cell (same lines), or None for a cell magic."""
    if source.lstrip().startswith("%%"):
        return None
    # IPython comes with ipykernel (a dependency of JupyterLab); imported here, on first use,
    # because it is slow to import.
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        code = TransformerManager().transform_cell(source)
    except (SyntaxError, ValueError):
        return source  # the parser below reports it with a position
    if code.rstrip("\n").count("\n") != source.rstrip("\n").count("\n"):
        return source  # a transformation that moved lines: check the cell as written
    return code


def _parse(code: str, filename: str) -> tuple[ast.Module | None, dict[str, Any] | None]:
    try:
        return compile(code, filename, "exec", _FLAGS), None
    except SyntaxError as e:
        line = (e.lineno or 1) - 1
        return None, {
            "line": line,
            "character": max((e.offset or 1) - 1, 0),
            "severity": "error",
            "message": f"syntax error: {e.msg}",
            "code": "SyntaxError",
        }
    except ValueError as e:  # source code string cannot contain null bytes
        return None, {
            "line": 0,
            "character": 0,
            "severity": "error",
            "message": f"syntax error: {e}",
            "code": "SyntaxError",
        }


def _check(tree: ast.Module, filename: str, builtins: Iterable[str]) -> list[Any]:
    found = pyflakes_checker.Checker(tree, filename=filename, builtins=set(builtins))
    return sorted(found.messages, key=lambda m: (m.lineno, m.col))


def _problem(message: Any) -> dict[str, Any]:
    code = type(message).__name__
    return {
        "line": message.lineno - 1,
        "character": message.col,
        "severity": "error" if code in ERRORS else "warning",
        "message": message.message % message.message_args,
        "code": code,
    }


def _in_cell(
    problem: dict[str, Any], index: int, cells: list[dict[str, Any]], markers: list[int] | None
) -> dict[str, Any]:
    """``problem`` (line inside cell ``index``) placed in the view, with the cell's id."""
    in_cell = problem["line"]
    placed = dict(problem)
    placed["line"] = markers[index] + in_cell if markers is not None else in_cell
    placed["cellLine"] = in_cell
    placed["cellId"] = cells[index].get("id")
    return placed


def _cell_label(cells: list[dict[str, Any]], index: int) -> str:
    cell_id = cells[index].get("id")
    return f"cell {index}" + (f", id {cell_id}" if cell_id else "")


def _later_bindings(chunks: list[tuple[int, str]]) -> dict[str, list[int]]:
    """Names bound at the top level of each cell: name → the cell indexes binding it."""
    found: dict[str, list[int]] = {}
    for index, code in chunks:
        tree = ast.parse(code) if "await" not in code else compile(code, "", "exec", _FLAGS)
        for name in _top_level_names(tree):
            found.setdefault(name, []).append(index)
    return found


def _top_level_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    stack = list(ast.iter_child_nodes(tree))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            continue  # what is bound inside is not the cell's
        if isinstance(node, ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        stack.extend(ast.iter_child_nodes(node))
    return names


def execution_order(cells: list[dict[str, Any]], markers: list[int] | None) -> list[dict[str, Any]]:
    """A warning for each code cell that ran before a cell above it (execution counts)."""
    found = []
    previous: tuple[int, int] | None = None  # (cell index, count) of the highest count so far
    for index, cell in enumerate(cells):
        count = cell.get("execution_count")
        if cell.get("cell_type") != "code" or not isinstance(count, int):
            continue
        if previous is not None and count < previous[1]:
            found.append(
                _in_cell(
                    {
                        "line": 0,
                        "character": 0,
                        "severity": "warning",
                        "message": (
                            f"the cells ran out of order: this cell ran (execution count "
                            f"{count}) before {_cell_label(cells, previous[0])} above it "
                            f"(execution count {previous[1]}); its outputs may not be what "
                            "running the notebook from the top gives"
                        ),
                        "code": "ExecutedOutOfOrder",
                    },
                    index,
                    cells,
                    markers,
                )
            )
        if previous is None or count > previous[1]:
            previous = (index, count)
    return found
