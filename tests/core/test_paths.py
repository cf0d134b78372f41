"""The path jail: what every tool's path goes through before any file is touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.core.paths import (
    SEALED_ENV,
    checked_path_argument,
    is_inside,
    os_encodable,
    relative_path,
    resolve_in_root,
    seal,
    sealed_names,
    worker_environment,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "proj2").mkdir()  # a sibling that shares the root's name as a prefix
    (tmp_path / "proj2" / "secret.txt").write_text("no\n")
    return project.resolve()


def test_is_inside_compares_whole_components(root: Path) -> None:
    assert is_inside(root, root)
    assert is_inside(root, root / "pkg" / "mod.py")
    assert not is_inside(root, root.parent / "proj2" / "secret.txt")
    assert not is_inside(root, root.parent)


@pytest.mark.parametrize("given", ["", " ", "/", ".", "./"])
def test_the_root_has_several_spellings(root: Path, given: str) -> None:
    assert resolve_in_root(root, given) == root


def test_relative_absolute_and_backslash_paths_inside_resolve(root: Path) -> None:
    target = root / "pkg" / "mod.py"
    assert resolve_in_root(root, "pkg/mod.py") == target
    assert resolve_in_root(root, str(target)) == target
    assert resolve_in_root(root, "pkg\\mod.py") == target
    assert resolve_in_root(root, "pkg/../pkg/mod.py", must_exist=True) == target
    assert relative_path(root, target) == "pkg/mod.py"
    assert relative_path(root, root) == ""


@pytest.mark.parametrize(
    "given",
    ["..", "../proj2/secret.txt", "pkg/../../proj2/secret.txt", "/etc/passwd", "\\"],
)
def test_paths_outside_the_root_are_refused(root: Path, given: str) -> None:
    with pytest.raises(ToolError, match="outside the project root"):
        resolve_in_root(root, given)


def test_links_are_followed_before_the_check(root: Path) -> None:
    (root / "out").symlink_to(root.parent / "proj2")
    (root / "in").symlink_to(root / "pkg")
    with pytest.raises(ToolError, match="outside the project root"):
        resolve_in_root(root, "out/secret.txt")
    assert resolve_in_root(root, "in/mod.py") == root / "pkg" / "mod.py"


def test_missing_files_are_refused_only_when_they_must_exist(root: Path) -> None:
    assert resolve_in_root(root, "new.txt") == root / "new.txt"
    with pytest.raises(ToolError, match="File not found: new.txt"):
        resolve_in_root(root, "new.txt", must_exist=True)


def test_arguments_the_os_cannot_take_are_refused_with_their_reason(root: Path) -> None:
    with pytest.raises(ToolError, match="must be a string"):
        checked_path_argument(root, 3)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="NUL"):
        resolve_in_root(root, "a\x00b")
    with pytest.raises(ToolError, match="over the file system's limit"):
        resolve_in_root(root, "n" * 300)
    with pytest.raises(ToolError, match="cannot be a file name"):
        resolve_in_root(root, "bad\ud800name")
    assert checked_path_argument(root, "  pkg/mod.py \n") == "pkg/mod.py"


def test_os_encodable_takes_surrogate_escaped_bytes_but_not_lone_surrogates() -> None:
    assert os_encodable(os.fsdecode(b"caf\xe9"))  # a non-UTF-8 file name, as Python reads it
    assert not os_encodable("\ud800")
    assert os_encodable("plain")


def test_the_servers_folders_are_sealed_inside_the_root(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As under JupyterHub with the root at $HOME: Jupyter's folders are inside the project.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(root / ".local" / "runtime"))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(root / ".jupyter"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(root / ".local" / "data"))
    monkeypatch.delenv(SEALED_ENV, raising=False)
    seal([root / "elsewhere" / "oauth.json"])
    (root / ".local" / "runtime").mkdir(parents=True)
    (root / ".local" / "runtime" / "jpserver-1.json").write_text('{"token": "t"}')
    (root / "link.json").symlink_to(root / ".local" / "runtime" / "jpserver-1.json")

    for given in (
        ".local/runtime/jpserver-1.json",
        ".local/runtime",
        ".jupyter/jupyter_server_config.py",
        ".local/data/jupyter_mcp/oauth.json",
        "elsewhere/oauth.json",
        "link.json",  # a link into a sealed folder is the folder's file
        str(root / ".jupyter"),
    ):
        with pytest.raises(ToolError, match="credentials folder"):
            resolve_in_root(root, given)
    # Beside them, and above them, the project is as it was.
    assert resolve_in_root(root, ".local") == root / ".local"
    assert resolve_in_root(root, ".local/data/kernels") == root / ".local/data/kernels"
    assert resolve_in_root(root, "elsewhere/notes.txt") == root / "elsewhere/notes.txt"
    assert sealed_names(root) == {
        ".local/runtime",
        ".jupyter",
        ".local/data/jupyter_mcp",
        "elsewhere/oauth.json",
    }
    # What a worker process needs to seal the same.
    assert worker_environment() == {SEALED_ENV: str(root / "elsewhere" / "oauth.json")}


def test_a_root_inside_a_sealed_folder_is_served(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A server started to serve (a folder of) its configuration folder: its files are the
    # project; the runtime folder inside it is still sealed.
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(root.parent))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(root / "runtime"))
    monkeypatch.delenv(SEALED_ENV, raising=False)

    assert resolve_in_root(root, "pkg/mod.py") == root / "pkg" / "mod.py"
    with pytest.raises(ToolError, match="credentials folder"):
        resolve_in_root(root, "runtime/jpserver-1.json")
