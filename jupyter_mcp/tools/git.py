"""Git tools and the grouped ``branch_action``, on the repository of the project.

The git work lives in :mod:`jupyter_mcp.git.repo`; these declarations open the repository
(holding its lock), call one operation and tell open editors about files a branch switch,
pull or merge changed. Before such an operation rewrites files, :func:`_protect_files` refuses
it when one of them has unsaved edits in JupyterLab and holds those files' locks meanwhile.
Every function is plain, so the registry runs it in a worker thread.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet
from ..documents.files import notify_written, transaction
from ..git.repo import GitProject, open_repository

tools = ToolSet("git")

READ: dict[str, Any] = {"read_only": True, "idempotent": True}

PATH = {
    "type": "string",
    "description": "File path relative to the project root.",
}


@contextlib.contextmanager
def _protect_files(ctx: ToolContext, paths: list[Path]) -> Iterator[None]:
    """Hold the file locks of ``paths`` and refuse when one has unsaved edits in JupyterLab.

    A branch switch, pull or merge calls this with the files it is about to rewrite, before
    touching any: an editor with unsaved changes would otherwise skip the reload and its next
    save would silently put the old version back. The locks of the
    :func:`~jupyter_mcp.documents.files.transaction` keep file tools from writing one of them
    while git does; git itself writes the files, and :func:`_with_repo` announces them.
    """
    resolved: set[Path] = set()
    for path in paths:
        try:
            resolved.add(ctx.resolve(str(path)))
        except ToolError:
            continue  # a link that leads outside the root: not a file the tools edit
    with transaction(ctx, resolved) as tx:
        try:
            tx.check_unsaved()
        except ToolError as e:
            raise ToolError(
                f"{e.message}. The git operation would rewrite it, so nothing was changed"
            ) from e
        yield


def _with_repo(
    ctx: ToolContext, work: Callable[[GitProject], Any], *, read_only: bool = False
) -> Any:
    """``work`` on the project's repository; a ``read_only`` one alongside other reads."""
    protect = functools.partial(_protect_files, ctx)
    with open_repository(ctx.root_dir, protect, read_only=read_only) as repo:
        result = work(repo)
    if isinstance(result, dict):
        for path in result.pop("_changed", []):
            notify_written(ctx, path)
    return result


@tools.tool(
    "get_project_vcs_status",
    "Git status: each changed file of the project with pathInProject and type "
    "(MODIFICATION, ADDITION, DELETION, MOVED, UNVERSIONED), staged and unstaged, conflict "
    "marking unmerged files; ignored files are left out.",
    title="Git status",
    **READ,
)
def get_project_vcs_status(ctx: ToolContext) -> list[dict[str, Any]]:
    """The project's changed files."""
    return _with_repo(ctx, lambda repo: repo.status(), read_only=True)


@tools.tool(
    "find_commit_by_message",
    "Commits on any branch or tag whose message has every word of text, case-insensitive: "
    "full hashes, newest first.",
    {"text": {"type": "string"}},
    required=["text"],
    title="Find commits by message",
    **READ,
)
def find_commit_by_message(ctx: ToolContext, text: str) -> list[str]:
    """Full hashes of the matching commits."""
    return _with_repo(ctx, lambda repo: repo.find_commits(text), read_only=True)


@tools.tool(
    "get_file_history",
    "The current branch's commits that changed a file, newest first, following renames "
    "(pathInProject: its name in each).",
    {"pathInProject": PATH, "maxEntries": {"type": "integer", "minimum": 1, "default": 100}},
    required=["pathInProject"],
    title="File history",
    **READ,
)
def get_file_history(
    ctx: ToolContext, pathInProject: str, maxEntries: int = 100
) -> list[dict[str, Any]]:
    """The file's commits."""
    return _with_repo(ctx, lambda repo: repo.history(pathInProject, maxEntries), read_only=True)


@tools.tool(
    "get_file_diff",
    "Unified diff of one file between commit1 and commit2 (hashes, HEAD~n, branch or tag "
    "names). A notebook is diffed as its percent-format text, outputs left out. An empty "
    "string means no difference.",
    {
        "pathInProject": PATH,
        "commit1": {"type": "string", "description": "Older revision; default HEAD."},
        "commit2": {"type": "string", "description": "Newer one; default the working tree."},
    },
    required=["pathInProject"],
    title="File diff",
    **READ,
)
def get_file_diff(
    ctx: ToolContext, pathInProject: str, commit1: str | None = None, commit2: str | None = None
) -> str:
    """The diff text."""
    return _with_repo(ctx, lambda repo: repo.diff(pathInProject, commit1, commit2), read_only=True)


@tools.tool(
    "get_branch_info",
    "The current branch (null when HEAD is detached), local and remote branches, mainBranch "
    "and headCommit.",
    title="Branch info",
    **READ,
)
def get_branch_info(ctx: ToolContext) -> dict[str, Any]:
    """Current and available branches."""
    return _with_repo(ctx, lambda repo: repo.branch_info(), read_only=True)


@tools.tool(
    "get_commit_details",
    "One commit: hash, message, author, date, parents and the files it changed.",
    {"commitHash": {"type": "string", "description": "Hash, short hash, HEAD~n or branch."}},
    required=["commitHash"],
    title="Commit details",
    **READ,
)
def get_commit_details(ctx: ToolContext, commitHash: str) -> dict[str, Any]:
    """The commit's metadata and changed files."""
    return _with_repo(ctx, lambda repo: repo.commit_details(commitHash), read_only=True)


@tools.tool(
    "commit_changes",
    "Commit: with files, exactly those paths as they are in the working tree (other staged "
    "changes stay staged); without, what is staged. Refused when there is nothing to commit.",
    {
        "message": {"type": "string"},
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Paths relative to the project root.",
        },
    },
    required=["message"],
    title="Commit changes",
    destructive=False,  # adds, never overwrites
)
def commit_changes(
    ctx: ToolContext, message: str, files: list[str] | None = None
) -> dict[str, Any]:
    """``{"success": true, "commitHash": ..., "branch": ..., "files": [...]}``."""
    return _with_repo(ctx, lambda repo: repo.commit(message, files))


@tools.tool(
    "pull_changes",
    "Pull into the current branch (fast-forward, merge, or rebase if pull.rebase). Refused "
    "when local changes would be overwritten; a conflicting pull is aborted, nothing changed. "
    "Never prompts for credentials.",
    {
        "remote": {"type": "string", "default": "origin"},
        "branch": {
            "type": "string",
            "description": "Remote branch; default the upstream, else the current one's name.",
        },
    },
    title="Pull changes",
    open_world=True,
    task_support=True,
)
def pull_changes(ctx: ToolContext, remote: str = "origin", branch: str | None = None) -> Any:
    """``{"success": true, "message": ..., "commitHash": ...}``."""
    return _with_repo(ctx, lambda repo: repo.pull(remote, branch))


@tools.tool(
    "switch_branch",
    "Check out an existing branch (one only on a remote is created tracking it). Refused "
    "when local changes would be overwritten.",
    {"branch": {"type": "string"}},
    required=["branch"],
    title="Switch branch",
)
def switch_branch(ctx: ToolContext, branch: str) -> dict[str, Any]:
    """``{"success": true, "branch": ..., "previousBranch": ...}``."""
    return _with_repo(ctx, lambda repo: repo.switch(branch))


@tools.tool(
    "create_branch",
    "Create a branch at the current commit; with checkout, switch to it too.",
    {"branch": {"type": "string"}, "checkout": {"type": "boolean", "default": False}},
    required=["branch"],
    title="Create branch",
    destructive=False,  # adds, never overwrites
)
def create_branch(ctx: ToolContext, branch: str, checkout: bool = False) -> dict[str, Any]:
    """``{"success": true, "branch": ..., "checkedOut": ...}``."""
    return _with_repo(ctx, lambda repo: repo.create_branch(branch, checkout=checkout))


# ------------------------------------------------------------------------ branch_action

#: Child fields of each action: name → (type, required, minLength, maxLength).
ACTION_FIELDS: dict[str, dict[str, tuple[type, bool, int | None, int | None]]] = {
    "list": {},
    "create": {
        "branchName": (str, True, 1, 80),
        "sourceBranch": (str, False, 1, None),
        "switchToBranch": (bool, False, None, None),
    },
    "switch": {"branchId": (str, True, 1, None)},
    "merge": {
        "sourceBranch": (str, False, 1, None),
        "targetBranch": (str, False, 1, None),
        "switchToTarget": (bool, False, None, None),
    },
    "mergeToMain": {},
}

MERGE_ACTIONS = ("merge", "mergeToMain")


def validate_branch_action(arguments: dict[str, Any]) -> dict[str, Any]:
    """The child fields of the chosen action, or a ToolError naming the bad field."""
    action = arguments.get("action")
    if action not in ACTION_FIELDS:
        options = ", ".join(ACTION_FIELDS)
        raise ToolError(f"action must be one of {options}")
    allowed = ACTION_FIELDS[action]
    fields = {k: v for k, v in arguments.items() if k != "action"}
    unknown = sorted(set(fields) - set(allowed))
    if unknown:
        takes = ", ".join(allowed) if allowed else "no fields"
        raise ToolError(
            f"Unknown field {', '.join(unknown)} for action={action} (it takes {takes})"
        )
    for name, (kind, required, min_length, max_length) in allowed.items():
        if name not in fields:
            if required:
                raise ToolError(f"{name} is required for action={action}")
            continue
        value = fields[name]
        if kind is bool and not isinstance(value, bool):
            raise ToolError(f"{name} must be a boolean for action={action}")
        if kind is str:
            if not isinstance(value, str):
                raise ToolError(f"{name} must be a string for action={action}")
            if min_length is not None and len(value) < min_length:
                raise ToolError(f"{name} must not be empty for action={action}")
            if max_length is not None and len(value) > max_length:
                raise ToolError(
                    f"{name} must be at most {max_length} characters for action={action}"
                )
    return fields


def _merge_needs_approval(arguments: dict[str, Any]) -> bool:
    # Validated before the approval dialog, so the user is never asked about a call that
    # would be refused anyway.
    validate_branch_action(arguments)
    return arguments.get("action") in MERGE_ACTIONS


@tools.tool(
    "branch_action",
    "Project branches. list: branches and the current one. create: branchName (1-80 "
    "characters), optional sourceBranch, switchToBranch (default true). switch: branchId. "
    "merge: sourceBranch (default the current branch) into targetBranch (default main, or "
    "master), switchToTarget (default false). mergeToMain: the current branch into main. "
    "Merges need the user's approval and are refused, nothing changed, when they would "
    "conflict.",
    {
        "action": {
            "type": "string",
            "enum": ["list", "create", "switch", "merge", "mergeToMain"],
        }
    },
    required=["action"],
    title="Branch actions",
    destructive=True,
    additional_properties=True,
    needs_approval=_merge_needs_approval,
)
def branch_action(ctx: ToolContext, action: str, **fields: Any) -> Any:
    """Dispatch one branch action."""
    fields = validate_branch_action({"action": action, **fields})

    def work(repo: GitProject) -> Any:
        if action == "list":
            return repo.branch_info()
        if action == "create":
            return repo.create_branch(
                fields["branchName"],
                source=fields.get("sourceBranch"),
                checkout=fields.get("switchToBranch", True),
            )
        if action == "switch":
            return repo.switch(fields["branchId"])
        if action == "merge":
            return repo.merge(
                fields.get("sourceBranch"),
                fields.get("targetBranch"),
                switch_to_target=fields.get("switchToTarget", False),
            )
        return repo.merge_to_main()

    return _with_repo(ctx, work)
