"""Packaging: the wheel carries the JupyterLab extension, enables the server extension, and
installs next to its peers.

Given the repository with its labextension built (``make test`` builds it first; the wheel's
build hook reuses the assets through ``skip-if-exists``), when a wheel is built and installed into
a fresh prefix, then JupyterLab and Jupyter Server, pointed at that prefix, report both halves
enabled. A running server also loads the extension and serves the built bundle. Datalayer's
``jupyter-mcp-server`` (a pinned wheel from PyPI, cached under ``.cache/peer-wheels``) installs
none of our console scripts, extension names or config files, and the two install side by side.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILT_LABEXTENSION = REPO / "jupyter_mcp" / "labextension"
DATA_IN_WHEEL = "jupyter_mcp_ide-0.1.0.data/data/"
LABEXT_IN_WHEEL = DATA_IN_WHEEL + "share/jupyter/labextensions/jupyter-mcp/"
SERVER_CONFIG_IN_WHEEL = DATA_IN_WHEEL + "etc/jupyter/jupyter_server_config.d/jupyter_mcp.json"
#: Datalayer's jupyter-mcp-server, pinned by version and content: the peer users install most.
PEER = "jupyter-mcp-server==2.2.4"
PEER_WHEEL = "jupyter_mcp_server-2.2.4-py3-none-any.whl"
PEER_SHA256 = "fbf009bada56175802f4eef779a255b92653f6ff898c7a44648718c1ad4e30b1"
PEER_CACHE = REPO / ".cache" / "peer-wheels"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _env_with_venv_bin() -> dict[str, str]:
    """The environment with this interpreter's scripts (jlpm, jupyter) first on PATH."""
    env = dict(os.environ)
    scripts = sysconfig.get_path("scripts")
    env["PATH"] = scripts + os.pathsep + env.get("PATH", "")
    return env


def _run(args: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> str:
    """Run a command, failing the test with its output when it fails."""
    proc = subprocess.run(
        args,
        env=env or _env_with_venv_bin(),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return ANSI.sub("", proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from the repository, as ``pip wheel --no-deps --no-build-isolation``."""
    out = tmp_path_factory.mktemp("wheel")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ]
    )
    wheels = list(out.glob("jupyter_mcp_ide-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _sections(output: str) -> dict[str, str]:
    """Split ``jupyter ... list`` output into the text under each absolute directory line."""
    sections: dict[str, str] = {}
    current = None
    for line in output.splitlines():
        stripped = line.strip()
        if stripped.startswith("Config dir:"):
            stripped = stripped.split(":", 1)[1].strip()
        if stripped.startswith(os.sep) and " " not in stripped:
            current = os.path.realpath(stripped)
            sections.setdefault(current, "")
        elif current is not None:
            sections[current] += line + "\n"
    return sections


@pytest.mark.slow
def test_wheel_contains_labextension_and_server_config(wheel: Path) -> None:
    """The wheel ships the prebuilt labextension and the config that enables the server side."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        package_json = json.loads(zf.read(LABEXT_IN_WHEEL + "package.json"))
        server_config = json.loads(zf.read(SERVER_CONFIG_IN_WHEEL))
        install_json = json.loads(zf.read(LABEXT_IN_WHEEL + "install.json"))

    assert package_json["name"] == "jupyter-mcp"
    load = package_json["jupyterlab"]["_build"]["load"]
    assert re.fullmatch(r"static/remoteEntry\.[0-9a-f]+\.js", load), load
    assert LABEXT_IN_WHEEL + load in names
    assert any(re.fullmatch(re.escape(LABEXT_IN_WHEEL) + r"static/style\.js", n) for n in names)
    assert server_config == {"ServerApp": {"jpserver_extensions": {"jupyter_mcp": True}}}
    assert install_json["packageName"] == "jupyter-mcp"
    # The Python package itself, without a second copy of the assets inside it.
    assert "jupyter_mcp/__init__.py" in names
    assert "jupyter_mcp/app.py" in names
    # The lab socket's request list, which the server reads at import.
    assert "jupyter_mcp/lab/protocol.json" in names
    # The MCP Apps view pages (built, git-ignored, named as artifacts).
    for view in ("cell-outputs", "variables", "diff"):
        assert f"jupyter_mcp/views/static/{view}.html" in names, view
    assert not any(n.startswith("jupyter_mcp/labextension/") for n in names)


@pytest.mark.slow
def test_installed_wheel_enables_both_extensions(wheel: Path, tmp_path: Path) -> None:
    """Installed into a fresh venv, Jupyter finds both extensions in it, enabled.

    The venv borrows the dependencies (jupyter_server, jupyterlab, ...) from this environment
    through a ``.pth`` line, which does not activate this environment's editable install, so
    ``jupyter_mcp`` and its data files come from the wheel alone.
    """
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = str(venv / "bin" / "python")
    site = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp_path
    ).strip()
    Path(site, "_outer_env.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # --ignore-installed: never uninstall the outer environment's editable copy.
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--no-deps",
            "--no-compile",
            "--ignore-installed",
            "--disable-pip-version-check",
            "-q",
            str(wheel),
        ],
        cwd=tmp_path,
    )
    config_dir = venv / "etc" / "jupyter"
    labext = venv / "share" / "jupyter" / "labextensions" / "jupyter-mcp"
    assert json.loads(
        (config_dir / "jupyter_server_config.d" / "jupyter_mcp.json").read_text()
    ) == {"ServerApp": {"jpserver_extensions": {"jupyter_mcp": True}}}
    assert json.loads((labext / "package.json").read_text())["name"] == "jupyter-mcp"
    assert list((labext / "static").glob("remoteEntry.*.js"))

    env = dict(os.environ)
    for name in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "PYTHONPATH"):
        env.pop(name, None)
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp_path / "user-config"),
        JUPYTER_DATA_DIR=str(tmp_path / "user-data"),
        JUPYTER_PREFER_ENV_PATH="1",
    )
    probe = "import jupyter_mcp; print(jupyter_mcp.__file__)"
    imported = _run([python, "-c", probe], env, cwd=tmp_path).strip()
    assert Path(imported).resolve().is_relative_to(venv.resolve()), imported

    servers = _sections(
        _run([python, "-m", "jupyter_server.extension.serverextension", "list"], env, tmp_path)
    )
    ours = servers.get(os.path.realpath(config_dir), "")
    assert re.search(r"jupyter_mcp\s+enabled", ours), servers
    assert re.search(r"jupyter_mcp 0\.1\.0 OK", ours), servers

    labs = _sections(_run([python, "-m", "jupyterlab.labextensions", "list"], env, tmp_path))
    ours = labs.get(os.path.realpath(labext.parent), "")
    assert re.search(r"jupyter-mcp v0\.1\.0 enabled\s+OK", ours), labs


@pytest.fixture(scope="module")
def peer_wheel() -> Path:
    """Datalayer's jupyter-mcp-server wheel at the pinned version, downloaded once into .cache/."""
    wheel = PEER_CACHE / PEER_WHEEL
    if not wheel.exists():
        PEER_CACHE.mkdir(parents=True, exist_ok=True)
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "-q",
                "-d",
                str(PEER_CACHE),
                PEER,
            ]
        )
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert digest == PEER_SHA256, f"{wheel} is not the pinned {PEER} (sha256 {digest})"
    return wheel


def wheel_footprint(path: Path) -> dict[str, set[str]]:
    """What installing a wheel puts where another package's files could be: its console and GUI
    scripts, the jupyter_server extensions it enables, its config files and labextensions."""
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        parser = configparser.ConfigParser(delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep the case
        parser.read_string(zf.read(entry_points).decode())
        scripts = {
            name
            for section in ("console_scripts", "gui_scripts")
            if parser.has_section(section)
            for name in parser[section]
        }
        config_files = {
            n.split(".data/data/", 1)[1]
            for n in names
            if ".data/data/etc/jupyter/" in n and n.endswith(".json")
        }
        extensions = set()
        for n in names:
            if ".data/data/etc/jupyter/jupyter_server_config.d/" in n and n.endswith(".json"):
                config = json.loads(zf.read(n))
                extensions.update(config.get("ServerApp", {}).get("jpserver_extensions", {}))
        labextensions = {
            n.split("share/jupyter/labextensions/", 1)[1].split("/", 1)[0]
            for n in names
            if ".data/data/share/jupyter/labextensions/" in n
        }
    return {
        "console scripts": scripts,
        "jupyter_server extensions": extensions,
        "Jupyter config files": config_files,
        "labextensions": labextensions,
    }


@pytest.mark.slow
def test_nothing_we_install_is_installed_by_jupyter_mcp_server(
    wheel: Path, peer_wheel: Path
) -> None:
    """No console script, server extension, config file or labextension of ours is also one of
    datalayer's jupyter-mcp-server, so neither package replaces the other's."""
    ours, theirs = wheel_footprint(wheel), wheel_footprint(peer_wheel)
    # The peer's wheel is read for real: it installs `jupyter-mcp`, the name we gave up.
    assert "jupyter-mcp" in theirs["console scripts"], theirs
    assert "jupyter_mcp_server" in theirs["jupyter_server extensions"], theirs
    assert ours["console scripts"] == {"jupyter-mcp-ide"}
    assert ours["jupyter_server extensions"] == {"jupyter_mcp"}
    overlaps = {kind: ours[kind] & theirs[kind] for kind in ours if ours[kind] & theirs[kind]}
    assert not overlaps, f"installed by both jupyter-mcp-ide and {PEER}: {overlaps}"


@pytest.mark.slow
def test_wheel_installs_next_to_jupyter_mcp_server(
    wheel: Path, peer_wheel: Path, tmp_path: Path
) -> None:
    """Both wheels in one fresh venv: our command answers as `jupyter-mcp-ide` and as
    `jupyter mcp-ide`, the peer's `jupyter-mcp` is still the peer's, and Jupyter finds both
    server extensions enabled (ours loads).

    The peer's own dependencies (typer, pycrdt, jupyter-collaboration …) are not installed here,
    so its commands are checked by what they run, not run.
    """
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path)
    python = str(venv / "bin" / "python")
    site = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp_path
    ).strip()
    Path(site, "_outer_env.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # The peer first: ours installed after it must not replace anything of its own.
    for installed in (peer_wheel, wheel):
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                python,
                "install",
                "--no-deps",
                "--no-compile",
                "--ignore-installed",
                "--disable-pip-version-check",
                "-q",
                str(installed),
            ],
            cwd=tmp_path,
        )
    bin_dir = venv / "bin"
    for script in ("jupyter-mcp", "jupyter-mcp-server"):
        assert "jupyter_mcp_server.cli.cli" in (bin_dir / script).read_text(), script
    assert "jupyter_mcp.cli.main" in (bin_dir / "jupyter-mcp-ide").read_text()

    env = dict(os.environ)
    for name in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "PYTHONPATH"):
        env.pop(name, None)
    env.update(
        # Only the venv's scripts: `jupyter mcp-ide` must find the one this wheel installed.
        PATH=str(bin_dir) + os.pathsep + os.defpath,
        JUPYTER_CONFIG_DIR=str(tmp_path / "user-config"),
        JUPYTER_DATA_DIR=str(tmp_path / "user-data"),
        JUPYTER_PREFER_ENV_PATH="1",
    )
    direct = _run([str(bin_dir / "jupyter-mcp-ide"), "--help"], env, tmp_path)
    assert "usage: jupyter-mcp-ide" in direct and "stdio" in direct
    through_jupyter = _run([python, "-m", "jupyter_core.command", "mcp-ide", "--help"], env)
    assert through_jupyter == direct

    config_dir = venv / "etc" / "jupyter" / "jupyter_server_config.d"
    assert {p.name for p in config_dir.iterdir()} >= {"jupyter_mcp.json", "jupyter_mcp_server.json"}
    servers = _sections(
        _run([python, "-m", "jupyter_server.extension.serverextension", "list"], env, tmp_path)
    )
    listed = servers.get(os.path.realpath(config_dir.parent), "")
    assert re.search(r"jupyter_mcp\s+enabled", listed), servers
    assert re.search(r"jupyter_mcp_server\s+enabled", listed), servers
    assert re.search(r"jupyter_mcp 0\.1\.0 OK", listed), servers


@pytest.fixture
def jp_server_config(jp_data_dir: Path) -> dict[str, Any]:
    """JupyterLab and jupyter_mcp, with the built labextension linked as `develop` would."""
    if not (BUILT_LABEXTENSION / "package.json").exists():
        pytest.fail("the labextension is not built: run `make test` (or `make labextension`)")
    labextensions = jp_data_dir / "labextensions"
    labextensions.mkdir(parents=True, exist_ok=True)
    (labextensions / "jupyter-mcp").symlink_to(BUILT_LABEXTENSION, target_is_directory=True)
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_mcp": True, "jupyterlab": True},
            "allow_unauthenticated_access": False,
        }
    }


async def test_running_server_loads_extension_and_serves_bundle(
    jp_serverapp: Any, jp_fetch: Any
) -> None:
    """The server loaded jupyter_mcp, answers its routes and serves the labextension bundle."""
    manager = jp_serverapp.extension_manager
    assert manager.extensions["jupyter_mcp"].enabled
    apps = manager.extension_apps["jupyter_mcp"]
    assert len(apps) == 1
    app = next(iter(apps))
    assert type(app).__name__ == "JupyterMCP"
    assert app.registry.all(), "the extension loaded but built no tools"

    response = await jp_fetch("mcp", "list_tools", method="GET")
    tools = json.loads(response.body)
    assert isinstance(tools, list) and tools
    assert "get_file_text_by_path" in {tool["name"] for tool in tools}

    # JupyterLab's page lists the federated extensions it will load in the browser.
    response = await jp_fetch("lab", method="GET")
    page = response.body.decode()
    match = re.search(
        r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert match, page[:2000]
    federated = {ext["name"]: ext for ext in json.loads(match.group(1))["federated_extensions"]}
    assert "jupyter-mcp" in federated, sorted(federated)
    load = federated["jupyter-mcp"]["load"]
    assert re.fullmatch(r"static/remoteEntry\.[0-9a-f]+\.js", load), federated["jupyter-mcp"]

    response = await jp_fetch("lab", "extensions", "jupyter-mcp", *load.split("/"))
    assert response.code == 200
    assert b"jupyter-mcp" in response.body
