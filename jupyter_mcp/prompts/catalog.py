"""The five prompts, their arguments, their completions and their messages.

A prompt is offered to a connection when the tools its messages ask the model to use are
available there (its tool sets chosen, not disabled, not hidden by read-only mode), and its
messages embed the resources it is about, read as ``resources/read`` reads them (the user's
unsaved edits in JupyterLab included).
"""

from __future__ import annotations

import ast
import asyncio
import builtins
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..code.problems import IPYTHON_BUILTINS, cell_as_python, execution_order
from ..core.errors import ToolError
from ..core.uris import format_uri
from ..git.repo import open_repository
from ..resources.project import ProjectResources, mime_type
from ..resources.registry import Contents, ResourceError, Scope, completion

#: Characters of the diff ``review_changes`` embeds at most (the rest is said to be cut).
DIFF_LIMIT = 200_000
#: Files ``review_changes`` shows the diff of at most.
DIFF_FILES = 200
#: Characters of changed files ``review_changes`` embeds at most (the others are linked).
EMBEDDED_LIMIT = 100_000


class PromptError(Exception):
    """A prompt request that cannot be answered (unknown prompt, missing or bad argument)."""


@dataclass(frozen=True)
class _Argument:
    name: str
    description: str
    required: bool = True


@dataclass(frozen=True)
class _Prompt:
    name: str
    title: str
    description: str
    arguments: tuple[_Argument, ...]
    #: The tools the prompt asks the model to use (or reads like): all must be available.
    tools: tuple[str, ...]


PATH = _Argument("pathInProject", "The notebook (.ipynb), relative to the project root.")

PROMPTS: tuple[_Prompt, ...] = (
    _Prompt(
        "explain_notebook",
        "Explain a notebook",
        "Explain what a notebook does, cell by cell, from its cells and outputs.",
        (PATH,),
        ("get_notebook_cells",),
    ),
    _Prompt(
        "fix_failing_cell",
        "Fix a failing cell",
        "Fix a notebook cell whose output is an error: the cell, its error and the cells it "
        "depends on, then edit it, run it and check the result.",
        (
            PATH,
            _Argument(
                "cellId",
                "The failing cell (default: the first cell whose last output is an error).",
                required=False,
            ),
        ),
        ("get_notebook_cell", "edit_notebook_cell", "execute_notebook_cells"),
    ),
    _Prompt(
        "debug_cell",
        "Debug a cell",
        "Debug a notebook cell with the kernel's debugger: breakpoints, stepping, variables.",
        (PATH, _Argument("cellId", "The cell to debug.")),
        ("get_notebook_cell", "debug_session", "toggle_debugger_breakpoint"),
    ),
    _Prompt(
        "review_changes",
        "Review the changes",
        "Review the working tree's changes since a revision (notebooks as cell diffs, outputs "
        "left out).",
        (_Argument("base", "The revision to compare with (default: HEAD).", required=False),),
        ("get_file_diff",),
    ),
    _Prompt(
        "tidy_notebook",
        "Tidy a notebook",
        "Restart a notebook's kernel, run every cell in order and report the cells that fail or "
        "depend on hidden state.",
        (PATH,),
        ("get_notebook_cells", "kernel_action", "execute_notebook_cells"),
    ),
)
_BY_NAME = {p.name: p for p in PROMPTS}


class Prompts:
    """The prompts of a server, built on its project resources."""

    def __init__(self, resources: ProjectResources) -> None:
        self.resources = resources

    def _available(self, scope: Scope, prompt: _Prompt) -> str | None:
        for tool in prompt.tools:
            refusal = scope.refusal(tool)
            if refusal is not None:
                return refusal
        return None

    def _find(self, scope: Scope, name: str) -> _Prompt:
        prompt = _BY_NAME.get(name)
        if prompt is None:
            raise PromptError(f"Unknown prompt: {name} (the prompts are {', '.join(_BY_NAME)})")
        refusal = self._available(scope, prompt)
        if refusal is not None:
            raise PromptError(f"Prompt {name} is not available on this connection: {refusal}")
        return prompt

    def listed(self, scope: Scope) -> list[types.Prompt]:
        """The prompts ``scope`` may use."""
        return [
            types.Prompt(
                name=p.name,
                title=p.title,
                description=p.description,
                arguments=[
                    types.PromptArgument(
                        name=a.name, description=a.description, required=a.required
                    )
                    for a in p.arguments
                ],
            )
            for p in PROMPTS
            if self._available(scope, p) is None
        ]

    async def get(
        self, scope: Scope, name: str, arguments: dict[str, str]
    ) -> types.GetPromptResult:
        """The messages of prompt ``name`` for ``arguments``."""
        prompt = self._find(scope, name)
        for argument in prompt.arguments:
            value = arguments.get(argument.name)
            if argument.required and (not isinstance(value, str) or not value.strip()):
                raise PromptError(f"Prompt {name} needs the argument {argument.name}")
        known = {a.name for a in prompt.arguments}
        unknown = sorted(set(arguments) - known)
        if unknown:
            raise PromptError(
                f"Prompt {name} has no argument {', '.join(unknown)} (its arguments: "
                f"{', '.join(sorted(known)) or 'none'})"
            )
        build: Callable[[Scope, dict[str, str]], Awaitable[list[types.PromptMessage]]] = getattr(
            self, f"_{name}"
        )
        try:
            messages = await build(scope, arguments)
        except (ResourceError, ToolError) as e:
            raise PromptError(f"Prompt {name}: {e}") from None
        return types.GetPromptResult(description=prompt.description, messages=messages)

    async def complete(
        self, scope: Scope, name: str, argument: str, value: str, context: dict[str, str]
    ) -> types.Completion:
        """Completions of a prompt's argument: notebooks, cell ids, revisions."""
        prompt = self._find(scope, name)
        if argument not in {a.name for a in prompt.arguments}:
            raise PromptError(f"Prompt {name} has no argument {argument!r}")
        if argument == "pathInProject":
            return await self.resources.complete_path(value, notebooks=True)
        if argument == "cellId":
            return await self.resources.complete_cell(context.get("pathInProject"), value)
        return await asyncio.to_thread(self._revisions, scope, value)

    def _revisions(self, scope: Scope, value: str) -> types.Completion:
        try:
            with open_repository(scope.ctx.root_dir, read_only=True) as repo:
                names = ["HEAD", *repo.local_branches(), *repo.tags(), *repo.remote_branches()]
        except ToolError:
            return completion([])
        return completion([n for n in dict.fromkeys(names) if n.startswith(value)])

    # -- reading -----------------------------------------------------------------------------

    async def _read(self, scope: Scope, uri: str) -> Contents:
        return (await self.resources.read(scope, uri))[0]

    async def _notebook(self, scope: Scope, path: str) -> tuple[str, dict[str, Any], Contents]:
        """The notebook resource of ``path``: how it is named, its cells' JSON, its contents."""
        shown = self._shown(scope, path)
        contents = await self._read(scope, format_uri("notebook", shown))
        return shown, json.loads(getattr(contents, "text", "{}")), contents

    def _shown(self, scope: Scope, path: str) -> str:
        return scope.ctx.relative(scope.ctx.resolve(path))

    # -- the prompts -------------------------------------------------------------------------

    async def _explain_notebook(
        self, scope: Scope, arguments: dict[str, str]
    ) -> list[types.PromptMessage]:
        shown, notebook, contents = await self._notebook(scope, arguments["pathInProject"])
        return [
            _embedded(contents),
            _text(
                f"Explain what the notebook {shown} does, cell by cell. The notebook is above "
                f"as JSON: {notebook.get('cellCount', 0)} cells with their ids, sources, execution "
                "counts and outputs (as text). For each cell (by index and id), say in a "
                "sentence or two what it does and what its output shows; then say what the "
                "notebook as a whole computes or shows, what it needs (data files, packages, "
                "a kernel's state), and any cell whose output looks wrong or stale (an error, "
                "an execution count out of order)."
            ),
        ]

    async def _fix_failing_cell(
        self, scope: Scope, arguments: dict[str, str]
    ) -> list[types.PromptMessage]:
        shown, notebook, _ = await self._notebook(scope, arguments["pathInProject"])
        cells = notebook.get("cells", [])
        wanted = arguments.get("cellId")
        if wanted:
            target = next((c for c in cells if c.get("cellId") == wanted), None)
            if target is None:
                raise PromptError(
                    f"Prompt fix_failing_cell: {shown} has no cell with id {wanted!r}"
                )
        else:
            target = next((c for c in cells if _last_error(c) is not None), None)
            if target is None:
                raise PromptError(
                    f"Prompt fix_failing_cell: no cell of {shown} has an error as its last output; "
                    "give the cell's cellId"
                )
        cell_id = str(target["cellId"])
        error = _last_error(target)
        messages = [_embedded(await self._read(scope, format_uri("cell", shown, cell_id)))]
        needed = depends_on(cells, int(target["index"]))
        for dependency in needed:
            uri = format_uri("cell", shown, str(cells[dependency]["cellId"]))
            messages.append(_embedded(await self._read(scope, uri)))
        failure = (
            f"fails with {error.get('ename')}: {error.get('evalue')}"
            if error is not None
            else "does not do what it should (its outputs are above)"
        )
        shown_deps = ", ".join(f"{cells[i]['cellId']} (index {i})" for i in needed) or "none"
        messages.append(
            _text(
                f"Cell {cell_id} (index {target['index']}) of the notebook {shown} {failure}. "
                "Above: the cell with its outputs and traceback, then the earlier cells that "
                f"define the names it uses ({shown_deps}). Find the cause and fix it:\n"
                f"1. Change the cell with edit_notebook_cell (pathInProject {shown!r}, cellId "
                f"{cell_id!r}, expectedSource set to its source as shown, so that an edit the "
                "user made meanwhile is not overwritten); if the cause is in a cell it depends "
                "on, fix that cell the same way.\n"
                "2. Run the changed cells with execute_notebook_cells (cellIds), the cells it "
                "depends on first when they changed or never ran.\n"
                "3. Check that the cell's outputs now show no error and what the cell is meant "
                "to show; say what the cause was and what you changed."
            )
        )
        return messages

    async def _debug_cell(
        self, scope: Scope, arguments: dict[str, str]
    ) -> list[types.PromptMessage]:
        shown = self._shown(scope, arguments["pathInProject"])
        cell_id = arguments["cellId"]
        contents = await self._read(scope, format_uri("cell", shown, cell_id))
        cell = json.loads(getattr(contents, "text", "{}"))
        first_line = await self._view_line(scope, shown, cell_id)
        where = (
            f"line {first_line} of the notebook's percent-format view is the cell's first line"
            if first_line is not None
            else "the cell's lines are lines of the notebook's percent-format view"
        )
        return [
            _embedded(contents),
            _text(
                f"Debug cell {cell_id} (index {cell.get('index')}) of the notebook {shown} with "
                "the kernel's debugger (the cell is above). Use the tools one step at a time:\n"
                f"1. toggle_debugger_breakpoint with pathInProject {shown!r} and a line where "
                f"the code should stop ({where}; get_file_text_by_path shows the view).\n"
                f"2. debug_session action 'start' (pathInProject {shown!r}), then action "
                f"'run_cell' with cellId {cell_id!r}: it answers where the code stopped (cellId, "
                "line, code) with a frameId.\n"
                "3. Look around: action 'stack', 'variables' (frameId, then variablesReference "
                "to expand), 'evaluate' (expression, frameId).\n"
                "4. Move: 'step_over', 'step_into', 'step_out', 'continue'; each answers the "
                "next stop or that the cell finished (with its outputs).\n"
                "5. End with action 'stop' (the cell runs to its end) and say what you found: "
                "where the values first differ from what the code expects, and the fix."
            ),
        ]

    async def _view_line(self, scope: Scope, shown: str, cell_id: str) -> int | None:
        """The view line of the cell's first line (its marker's next)."""
        try:
            text = (await self._read(scope, format_uri("file", shown))).model_dump().get("text")
        except ResourceError:
            return None
        if not isinstance(text, str):
            return None
        from ..documents.notebook_view import cell_marker_lines, parse_view

        try:
            nb = await asyncio.to_thread(parse_view, text)
        except Exception:
            return None
        notebook = (await self._notebook(scope, shown))[1]
        ids = [c.get("cellId") for c in notebook.get("cells", [])]
        markers = cell_marker_lines(nb, text)
        if markers is None or cell_id not in ids or len(markers) != len(ids):
            return None
        return markers[ids.index(cell_id)] + 1

    async def _review_changes(
        self, scope: Scope, arguments: dict[str, str]
    ) -> list[types.PromptMessage]:
        base = (arguments.get("base") or "HEAD").strip()
        diff, files, cut = await asyncio.to_thread(_working_tree_diff, scope, base)
        # The changed files as they are now: embedded while they fit, then as links.
        messages: list[types.PromptMessage] = []
        room = EMBEDDED_LIMIT
        for shown in files[:DIFF_FILES]:
            if not await asyncio.to_thread((scope.ctx.root_dir / shown).is_file):
                continue  # deleted: the diff says so
            if room > 0 and scope.allows("get_file_text_by_path"):
                contents = await self._read(scope, format_uri("file", shown))
                text = getattr(contents, "text", None)
                if isinstance(text, str) and len(text) <= room:
                    messages.append(_embedded(contents))
                    room -= len(text)
                    continue
            link = _link(scope, shown)
            if link is not None:
                messages.append(link)
        listing = "\n".join(f"- {f}" for f in files) or "(none)"
        note = "(The diff was cut here; get_file_diff gives each file's.)" if cut else ""
        messages.append(
            _text(
                f"Review the changes of the working tree since {base} ({len(files)} files):\n"
                f"{listing}\n\n"
                "The diff (notebooks as their percent-format cells, outputs left out):\n\n"
                f"{diff or '(no differences)'}\n{note}\n"
                "For each file, say what changed and what may be wrong with it: bugs, "
                "unhandled cases, missing tests, a notebook whose cells no longer run in order, "
                "left-over debugging code. End with what must change before committing."
            )
        )
        return messages

    async def _tidy_notebook(
        self, scope: Scope, arguments: dict[str, str]
    ) -> list[types.PromptMessage]:
        shown, notebook, contents = await self._notebook(scope, arguments["pathInProject"])
        cells = notebook.get("cells", [])
        hints = hidden_state(cells)
        facts = "\n".join(f"- {h}" for h in hints) or "- none found by reading the cells"
        return [
            _embedded(contents),
            _text(
                f"Tidy the notebook {shown} (its cells are above) so that it runs from top to "
                "bottom in a fresh kernel:\n"
                f"1. kernel_action 'restart' (pathInProject {shown!r}).\n"
                "2. execute_notebook_cells with no cellIds (every code cell, in order); it stops "
                "at the first cell that raises.\n"
                "3. Report each cell that fails (its id, the error) and each that depends on "
                "hidden state: names it uses that no earlier cell defines, outputs that differ "
                "from the saved ones, files it needs that the notebook does not make.\n"
                f"What reading the saved notebook already suggests:\n{facts}\n"
                "Propose the smallest changes that make it run in order (move or add cells); "
                "make them only once the user agrees."
            ),
        ]


def _text(text: str) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))


def _link(scope: Scope, shown: str) -> types.PromptMessage | None:
    """A link to a project file's resource (None where the connection may not read it)."""
    if not scope.allows("get_file_text_by_path"):
        return None
    return types.PromptMessage(
        role="user",
        content=types.ResourceLink(
            type="resource_link",
            uri=format_uri("file", shown),
            name=shown.rpartition("/")[2],
            title=shown,
            mime_type=mime_type(shown),
        ),
    )


def _embedded(contents: Contents) -> types.PromptMessage:
    return types.PromptMessage(
        role="user", content=types.EmbeddedResource(type="resource", resource=contents)
    )


def _last_error(cell: dict[str, Any]) -> dict[str, Any] | None:
    outputs = cell.get("outputs") or []
    if outputs and outputs[-1].get("outputType") == "error":
        return dict(outputs[-1])
    return None


# -- what a cell's code uses and defines ---------------------------------------------------------

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BUILTINS = frozenset(dir(builtins)) | IPYTHON_BUILTINS


def names_of(source: str) -> tuple[set[str], set[str]]:
    """``(used, defined)``: the names a cell reads before defining them, and those it binds
    (assignments, ``def``, ``class``, imports, loop targets)."""
    code = cell_as_python(source)
    if code is None:  # a cell magic (%%bash …): no Python names
        return set(), set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set(_NAME.findall(source)) - _BUILTINS, set()
    used: set[str] = set()
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                used.add(node.id)
            else:
                defined.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                defined.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
    return used - defined - _BUILTINS, defined


def depends_on(cells: list[dict[str, Any]], index: int) -> list[int]:
    """The indexes of the earlier code cells that last define a name cell ``index`` uses."""
    used, _ = names_of(str(cells[index].get("source", "")))
    found: set[int] = set()
    for name in used:
        for earlier in range(index - 1, -1, -1):
            cell = cells[earlier]
            if cell.get("cellType") == "code" and name in names_of(str(cell.get("source", "")))[1]:
                found.add(earlier)
                break
    return sorted(found)


def hidden_state(cells: list[dict[str, Any]]) -> list[str]:
    """What in a saved notebook suggests that it ran out of order or on hidden state."""
    hints: list[str] = []
    as_saved = [
        {
            "id": c.get("cellId"),
            "cell_type": c.get("cellType"),
            "execution_count": c.get("executionCount"),
        }
        for c in cells
    ]
    for problem in execution_order(as_saved, None):
        hints.append(f"cell {problem['cellId']}: {problem['message']}")
    defined: set[str] = set()
    for cell in cells:
        if cell.get("cellType") != "code":
            continue
        used, binds = names_of(str(cell.get("source", "")))
        missing = sorted(used - defined)
        if missing:
            hints.append(
                f"cell {cell['cellId']} (index {cell['index']}) uses "
                f"{', '.join(missing[:8])}{'…' if len(missing) > 8 else ''}, which no earlier "
                "cell defines"
            )
        defined |= binds
    for cell in cells:
        if _last_error(cell) is not None:
            error = _last_error(cell) or {}
            hints.append(
                f"cell {cell['cellId']} (index {cell['index']}) has an error output: "
                f"{error.get('ename')}: {error.get('evalue')}"
            )
    return hints


def _working_tree_diff(scope: Scope, base: str) -> tuple[str, list[str], bool]:
    """The diff of every changed file since ``base``, the files, and whether it was cut."""
    with open_repository(scope.ctx.root_dir, read_only=True) as repo:
        files = repo.changed_since(base)
        parts: list[str] = []
        size = 0
        cut = False
        for shown in files[:DIFF_FILES]:
            try:
                text = repo.diff(shown, base, None)
            except ToolError as e:
                text = f"# {shown}: {e}\n"
            if size + len(text) > DIFF_LIMIT:
                cut = True
                break
            parts.append(text)
            size += len(text)
        if len(files) > DIFF_FILES:
            cut = True
    return "".join(parts), files, cut
