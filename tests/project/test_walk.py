"""The one project walk (``jupyter_mcp.project.walk``) on real folders, git repositories and links.

Search, code analysis and run configurations all take their files from it; the tool tests
(test_search, test_code, test_runs) check each of them through a server, these check the walk.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from jupyter_mcp.project.walk import iter_project_files


def _files(root: Path, *suffixes: str, **options: bool) -> list[str]:
    real = Path(os.path.realpath(root))
    found = iter_project_files(root, suffixes or None, **options)
    return sorted(f.path.relative_to(real).as_posix() for f in found)


def _write(root: Path, rel: str, text: str = "x\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_gitignore_rules_nested_negated_and_from_the_repository(tmp_path: Path) -> None:
    # Given a git repository whose project folder is a sub-folder, with rules above it, in
    # info/exclude, at the project root and below it (one re-including a file)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".git" / "info").mkdir(exist_ok=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("*.secret\n")
    (tmp_path / ".gitignore").write_text("project/generated/\n")
    root = tmp_path / "project"
    _write(root, ".gitignore", "build/\n*.log\n")
    _write(root, "src/.gitignore", "*.tmp\n!keep.tmp\n")
    for rel in (
        "main.py",
        "notes.secret",
        "run.log",
        "build/lib/pkg/mod.py",
        "generated/out.py",
        "src/a.py",
        "src/b.tmp",
        "src/keep.tmp",
    ):
        _write(root, rel)

    # When the project is walked
    # Then ignored files and folders are left out, the re-included one is in
    assert _files(root) == [".gitignore", "main.py", "src/.gitignore", "src/a.py", "src/keep.tmp"]


def test_vcs_folders_links_and_special_files(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _write(root, "a.py")
    _write(root, ".hg/store.py")
    _write(root, ".ipynb_checkpoints/a-checkpoint.ipynb")
    _write(root, "pkg/real.py")
    outside = _write(tmp_path, "outside/theirs.py")
    (root / "inside_link.py").symlink_to(root / "pkg" / "real.py")
    (root / "outside_link.py").symlink_to(outside)
    (root / "dangling.py").symlink_to(root / "missing.py")
    (root / "folder_link").symlink_to(root / "pkg", target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    os.mkfifo(root / "pipe.py")

    # Only the link to a regular file inside the root counts; no linked folder is entered
    assert _files(root) == ["a.py", "inside_link.py", "pkg/real.py"]


def test_suffixes_and_tool_folders(tmp_path: Path) -> None:
    root = tmp_path
    for rel in (
        "a.py",
        "B.PY",
        "c.ipynb",
        "d.txt",
        ".github/scripts/x.py",
        "node_modules/pkg/y.py",
        "env2/pyvenv.cfg",
        "env2/lib/z.py",
        "pkg/__pycache__/m.py",
        "pkg/m.py",
    ):
        _write(root, rel)

    assert _files(root, ".py", ".ipynb") == [
        ".github/scripts/x.py",
        "B.PY",
        "a.py",
        "c.ipynb",
        "env2/lib/z.py",
        "node_modules/pkg/y.py",
        "pkg/__pycache__/m.py",
        "pkg/m.py",
    ]
    # With skip_tool_dirs, hidden folders, virtualenvs and dependency folders are not walked
    assert _files(root, ".py", ".ipynb", skip_tool_dirs=True) == [
        "B.PY",
        "a.py",
        "c.ipynb",
        "pkg/m.py",
    ]
