"""Run configurations: found in what the project already has, run through Jupyter kernels.

Sources, in listing order:

- ``.vscode/launch.json``: ``python``/``debugpy`` launch configurations (``program`` or
  ``module``, ``args``, ``cwd``, ``env``) and ``node`` ones with a ``program``;
- ``.vscode/tasks.json``: ``shell`` and ``process`` tasks (``command``, ``args``,
  ``options.cwd``/``options.env``, per-OS overrides) and ``npm`` tasks;
- ``package.json`` ``scripts`` (``npm run <name>``);
- the project's notebooks (``Run notebook <path>``: all code cells in order);
- ``pytest`` when the project has tests.

A configuration is listed under its own name (launch ``name``, task ``label``, script name);
only names that clash get a source prefix (``launch: Build``, ``task: Build``).

Each run gets a fresh kernel from the server's kernel manager, so it shows in JupyterLab's
running-kernels panel. Programs and tasks run as a subprocess of that kernel, in a session and
process group of their own, and stream their output through the kernel's iopub channel; stopping
the run, and the program's end, terminate that whole group (SIGTERM, then SIGKILL after a grace
period), so nothing the program started in the background outlives its run. Notebooks run cell
by cell in the kernel itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import itertools
import json
import os
import platform
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json5

from ..core.errors import ToolError
from ..core.paths import is_inside
from ..documents.facts import NOTEBOOK_SUFFIX, is_notebook
from ..kernels import managers
from ..kernels.execute import execute, kernel_name_for
from ..project.walk import iter_project_files
from .output import OutputBuffer, plain_text
from .processes import Activity, iso, kill_group

#: Placeholder for the kernel's own Python interpreter in an argv.
PYTHON = "${python}"
#: At most this many notebooks are offered, nearest the root first.
MAX_NOTEBOOKS = 200
#: How long a stopped program's process group has, after its one SIGTERM, to shut down cleanly
#: (a dev server closing its connections, a shell running its trap) before SIGKILL.
STOP_GRACE = 5.0
#: How long a stopped run's kernel has to answer the interrupt (its runner lets the program
#: shut down first, for up to STOP_GRACE) before the run is ended from the server.
INTERRUPT_TIMEOUT = STOP_GRACE + 5.0


@dataclass
class RunConfig:
    """One runnable configuration."""

    name: str
    source: str  # "launch", "task", "npm", "notebook" or "pytest"
    cwd: Path
    #: A program and its arguments (``PYTHON`` stands for the kernel's interpreter) …
    argv: list[str] | None = None
    #: … or a shell command line …
    shell: str | None = None
    #: … or a notebook whose code cells run in the kernel.
    notebook: Path | None = None
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """The command line, for output headers and progress titles."""
        if self.notebook is not None:
            return f"notebook {self.notebook.name}"
        if self.shell is not None:
            return self.shell
        return shlex.join(a if a != PYTHON else "python" for a in self.argv or [])


class _Unsupported(Exception):
    """A configuration that cannot run here (unknown variable, missing field …)."""


def _substitute(value: Any, root: Path, cfg_env: dict[str, str] | None = None) -> Any:
    """Replace VS Code variables (``${workspaceFolder}``, ``${env:NAME}`` …) in ``value``."""
    if isinstance(value, list):
        return [_substitute(v, root, cfg_env) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, root, cfg_env) for k, v in value.items()}
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in ("workspaceFolder", "workspaceRoot", "cwd"):
            return str(root)
        if name == "workspaceFolderBasename":
            return root.name
        if name == "userHome":
            return str(Path.home())
        if name == "pathSeparator" or name == "/":
            return os.sep
        if name.startswith("env:"):
            return os.environ.get(name[4:], "")
        raise _Unsupported(f"uses ${{{name}}}, which needs an editor context")

    return re.sub(r"\$\{([^}]+)\}", replace, value)


def _load_jsonc(path: Path) -> Any:
    """A JSON-with-comments file (VS Code's format: comments, trailing commas)."""
    return json5.loads(path.read_text(encoding="utf-8"))


def _cwd(value: Any, root: Path) -> Path:
    if not value:
        return root
    if not isinstance(value, str):
        raise _Unsupported("has a non-string cwd")
    path = Path(value)
    return Path(os.path.realpath(path if path.is_absolute() else root / path))


def _env(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {
        str(k): ("" if v is None else v if isinstance(v, str) else json.dumps(v))
        for k, v in value.items()
    }


def _env_file(value: Any, root: Path) -> dict[str, str]:
    """Variables of a launch configuration's ``envFile`` (``KEY=VALUE`` lines, ``#`` comments)."""
    if not isinstance(value, str) or not value:
        return {}
    path = Path(value) if Path(value).is_absolute() else root / value
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise _Unsupported(f"has an envFile that cannot be read ({e})") from e
    found = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, val = line.removeprefix("export ").partition("=")
        val = val.strip()
        if len(val) >= 2 and val[0] == val[-1] and val[0] in "'\"":
            val = val[1:-1]
        found[key.strip()] = val
    return found


def _args(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, list):
        return [a if isinstance(a, str) else json.dumps(a) for a in value]
    raise _Unsupported("has args that are neither a string nor a list")


def _vscode_file(root: Path, name: str, log: Any) -> Any:
    """The content of ``.vscode/<name>`` (JSON with comments); None when missing or unreadable."""
    path = root / ".vscode" / name
    if not path.is_file():
        return None
    try:
        return _load_jsonc(path)
    except (OSError, ValueError) as e:
        log.warning("Cannot read %s: %s", path, e)
        return None


def _launch_configs(root: Path, log: Any) -> list[RunConfig]:
    data = _vscode_file(root, "launch.json", log)
    found = []
    for raw in data.get("configurations", []) if isinstance(data, dict) else []:
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            continue
        try:
            cfg = _substitute(raw, root)
            if cfg.get("request", "launch") != "launch":
                raise _Unsupported("is not a launch request")
            args = _args(cfg.get("args"))
            kind = cfg.get("type")
            if kind in ("python", "debugpy"):
                if cfg.get("program"):
                    argv = [PYTHON, str(cfg["program"]), *args]
                elif cfg.get("module"):
                    argv = [PYTHON, "-m", str(cfg["module"]), *args]
                else:
                    raise _Unsupported("has neither program nor module")
            elif kind in ("node", "pwa-node") and cfg.get("program"):
                argv = [str(cfg.get("runtimeExecutable") or "node"), str(cfg["program"]), *args]
            else:
                raise _Unsupported(f"has type {kind!r}, which cannot run here")
            found.append(
                RunConfig(
                    name=raw["name"],
                    source="launch",
                    cwd=_cwd(cfg.get("cwd"), root),
                    argv=argv,
                    env={**_env_file(cfg.get("envFile"), root), **_env(cfg.get("env"))},
                )
            )
        except _Unsupported as e:
            log.debug("Skipping launch configuration %r: it %s", raw.get("name"), e)
    return found


_OS_KEY = {"Windows": "windows", "Darwin": "osx"}.get(platform.system(), "linux")


def _task_configs(root: Path, log: Any) -> list[RunConfig]:
    data = _vscode_file(root, "tasks.json", log)
    if not isinstance(data, dict):
        return []
    shared_options: dict[str, Any] = _dict(data.get("options"))
    found = []
    for raw in data.get("tasks", []):
        if not isinstance(raw, dict):
            continue
        task = dict(raw)
        if isinstance(task.get(_OS_KEY), dict):
            task.update(task[_OS_KEY])
        label = task.get("label") or task.get("taskName")
        try:
            task = _substitute(task, root)
            options = {**shared_options, **_dict(task.get("options"))}
            options = _substitute(options, root)
            cwd = _cwd(options.get("cwd"), root)
            env = _env(options.get("env"))
            kind = task.get("type", "shell")
            if kind == "npm" and task.get("script"):
                script = str(task["script"])
                label = label or f"npm: {script}"
                folder = _cwd(task.get("path"), root)
                config = RunConfig(label, "task", folder, argv=["npm", "run", script], env=env)
            elif kind in ("shell", "process"):
                command = task.get("command")
                if isinstance(command, dict):  # {"value": ..., "quoting": ...}
                    command = command.get("value")
                if not isinstance(command, str) or not command:
                    raise _Unsupported("has no command")
                raw_args = task.get("args") or []
                if isinstance(raw_args, str):
                    raw_args = shlex.split(raw_args)
                if not isinstance(raw_args, list):
                    raise _Unsupported("has args that are neither a string nor a list")
                values = [a.get("value") if isinstance(a, dict) else a for a in raw_args]
                args = [a if isinstance(a, str) else json.dumps(a) for a in values]
                label = label or command
                if kind == "shell":
                    line = " ".join([command, *(shlex.quote(a) for a in args)])
                    config = RunConfig(label, "task", cwd, shell=line, env=env)
                else:
                    config = RunConfig(label, "task", cwd, argv=[command, *args], env=env)
            else:
                raise _Unsupported(f"has type {kind!r}, which cannot run here")
            if not isinstance(label, str):
                raise _Unsupported("has no label")
            found.append(config)
        except _Unsupported as e:
            log.debug("Skipping task %r: it %s", label, e)
    return found


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _npm_configs(root: Path, log: Any) -> list[RunConfig]:
    path = root / "package.json"
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        log.warning("Cannot read %s: %s", path, e)
        return []
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return []
    return [
        RunConfig(name, "npm", root, argv=["npm", "run", name])
        for name, command in scripts.items()
        if isinstance(name, str) and isinstance(command, str)
    ]


def _scan_project(root: Path) -> tuple[list[Path], bool]:
    """The project's notebooks and whether it has test files, from one project walk (ignored
    files, VCS, tool and dependency folders and links leading outside the root left out)."""
    notebooks: list[Path] = []
    test_files = False
    for found in iter_project_files(root, (NOTEBOOK_SUFFIX, ".py"), skip_tool_dirs=True):
        path, name = found.path, found.path.name
        if is_notebook(name):
            notebooks.append(path)
        elif name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
            test_files = True
    return notebooks, test_files


def _notebook_configs(root: Path, notebooks: list[Path]) -> list[RunConfig]:
    found = sorted(notebooks, key=lambda p: (len(p.relative_to(root).parts), p.as_posix()))
    return [
        RunConfig(
            f"Run notebook {p.relative_to(root).as_posix()}", "notebook", p.parent, notebook=p
        )
        for p in found[:MAX_NOTEBOOKS]
    ]


def has_tests(root: Path, test_files: bool | None = None) -> bool:
    """Whether the project has pytest configuration or test files (``test_files``: whether
    the project walk found any, when the caller walked already)."""
    if (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        return True
    for name, marker in (
        ("pyproject.toml", "[tool.pytest"),
        ("setup.cfg", "[tool:pytest]"),
        ("tox.ini", "[pytest]"),
    ):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if marker in (root / name).read_text(encoding="utf-8"):
                return True
    if (root / "tests").is_dir() or (root / "test").is_dir():
        return True
    if test_files is None:
        test_files = _scan_project(root)[1]
    return test_files


def discover(root: Path, log: Any) -> list[RunConfig]:
    """Every run configuration of the project, named uniquely, in source order."""
    root = Path(os.path.realpath(root))
    notebooks, test_files = _scan_project(root)
    configs = [
        *_launch_configs(root, log),
        *_task_configs(root, log),
        *_npm_configs(root, log),
        *_notebook_configs(root, notebooks),
    ]
    if has_tests(root, test_files):
        configs.append(RunConfig("pytest", "pytest", root, argv=[PYTHON, "-m", "pytest"]))
    counts: dict[str, int] = {}
    for config in configs:
        counts[config.name] = counts.get(config.name, 0) + 1
    seen: dict[str, int] = {}
    for config in configs:
        if counts[config.name] > 1:
            name = f"{config.source}: {config.name}"
            seen[name] = seen.get(name, 0) + 1
            config.name = name if seen[name] == 1 else f"{name} ({seen[name]})"
    return configs


# --- running -------------------------------------------------------------------------------

#: The display-data type the runner uses to tell the server its process group.
PGID_MIME = "application/vnd.jupyter-mcp.run-pgid+json"

#: Code run in the kernel for programs and tasks: a subprocess whose output is streamed.
#: The subprocess starts its own session, so its process group holds the program and whatever
#: it starts in the background; the runner reports that group's id (``PGID_MIME``) so the server
#: can stop all of it. Once the program exits, its output may drain for a second (a background
#: child that keeps the pipe open must not hold the run), then the runner returns its exit code.
#: On an interrupt the runner sends the group its one SIGTERM and keeps reading the output until
#: every process of the group has closed it, for up to ``grace`` seconds: closing the pipe early
#: would kill a process that writes while it shuts down (SIGPIPE: a shell reporting its killed
#: job, a server logging its shutdown) before its clean-up ran. The server then kills what is
#: left (SIGKILL after its own grace period); it never sends a second SIGTERM.
_RUNNER = r"""
def __mcp_run(argv, shell, cwd, env, mime, grace):
    import codecs, os, signal, subprocess, sys, time
    if argv:
        argv = [sys.executable if a == "${python}" else a for a in argv]
    full_env = dict(os.environ)
    full_env.update(env)
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    proc = subprocess.Popen(
        shell if shell is not None else argv, shell=shell is not None, cwd=cwd, env=full_env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    posix = hasattr(os, "killpg")
    if posix:
        from IPython.display import publish_display_data
        publish_display_data({mime: {"pgid": proc.pid}})
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = proc.stdout.fileno()
    try:
        drain_until = None
        while True:
            if posix:
                import select
                if proc.poll() is not None:
                    if drain_until is None:
                        drain_until = time.monotonic() + 1.0
                    elif time.monotonic() > drain_until:
                        break
                if not select.select([fd], [], [], 0.1)[0]:
                    continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            sys.stdout.write(decoder.decode(chunk))
            sys.stdout.flush()
        return proc.wait()
    except BaseException:
        if posix:
            import select
            for sig in (signal.SIGTERM, signal.SIGCONT):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + grace
            try:
                while time.monotonic() < deadline:
                    if not select.select([fd], [], [], 0.1)[0]:
                        continue
                    chunk = os.read(fd, 65536)
                    if not chunk:
                        break
                    sys.stdout.write(decoder.decode(chunk))
                    sys.stdout.flush()
            except BaseException:
                pass  # interrupted again: stop reading, the server ends the group
        else:
            proc.terminate()
            try:
                proc.wait(3)
            except BaseException:
                proc.kill()
        raise
    finally:
        proc.stdout.close()
"""


@dataclass
class Run:
    """One run of a configuration: its kernel, output and exit state."""

    id: str
    config: RunConfig
    started: float = field(default_factory=time.time)
    ended: float | None = None
    #: starting, running, succeeded, failed, stopped or error.
    status: str = "starting"
    exit_code: int | None = None
    error: str | None = None
    kernel_id: str | None = None
    output: OutputBuffer = field(default_factory=OutputBuffer)
    task: asyncio.Task[None] | None = None
    stop_requested: bool = False
    #: The process group of a program or task (its own session), once the kernel reports it.
    pgid: int | None = None
    #: True once the runner sent that group its SIGTERM (it was interrupted).
    group_terminated: bool = False
    #: Ending the group and the kernel, once the run is over (see RunManager._clean_up).
    cleanup: asyncio.Future[None] | None = None

    @property
    def running(self) -> bool:
        """True until the run has finished, failed or been stopped."""
        return self.status in ("starting", "running")

    def activity(self) -> Activity:
        """The run as a progress indicator source."""
        return Activity(
            0, f"Run configuration: {self.config.name}", "runConfiguration", self.started
        )

    def report(self, since: int | None = None) -> dict[str, Any]:
        """Status, exit code, times and output (from offset ``since``) of the run."""
        chunk = self.output.read(since or 0)
        end = self.ended or time.time()
        return {
            "configName": self.config.name,
            "runId": self.id,
            "status": self.status,
            "exitCode": self.exit_code,
            "error": self.error,
            "command": self.config.describe(),
            "kernelId": self.kernel_id,
            "startTime": iso(self.started),
            "endTime": iso(self.ended) if self.ended else None,
            "elapsedMs": round((end - self.started) * 1000),
            "output": chunk.text,
            "nextOffset": chunk.next_offset,
            "truncated": chunk.truncated,
        }


class RunManager:
    """Starts, follows and stops runs of configurations in kernels of the server."""

    def __init__(self, serverapp: Any, root_dir: Path, log: Any) -> None:
        self.serverapp = serverapp
        self.root_dir = root_dir
        self.log = log
        self.runs: dict[str, Run] = {}  # by configuration name, the latest run of each
        self._ids = itertools.count(1)

    @property
    def kernel_manager(self) -> Any:
        """The server's kernel manager (a clear error outside a server)."""
        if getattr(self.serverapp, "kernel_manager", None) is None:
            raise ToolError("Run configurations need a Jupyter server with a kernel manager")
        return managers.kernel_manager(self.serverapp)

    def running(self) -> list[Run]:
        """The runs that have not finished yet, oldest first."""
        return sorted((r for r in self.runs.values() if r.running), key=lambda r: r.started)

    def find(self, name: str, configs: list[RunConfig]) -> RunConfig:
        """The configuration called ``name``; a clear error listing close matches otherwise."""
        for config in configs:
            if config.name == name:
                return config
        names = [c.name for c in configs]
        if not names:
            raise ToolError(
                f"Unknown run configuration: {name!r}; this project has none (add "
                ".vscode/launch.json, .vscode/tasks.json, package.json scripts, notebooks or tests)"
            )
        close = difflib.get_close_matches(name, names, n=5, cutoff=0.4)
        lowered = [n for n in names if name.lower() in n.lower() and n not in close]
        hint = close + lowered[: max(0, 5 - len(close))]
        if hint:
            return_text = ", ".join(repr(n) for n in hint)
            raise ToolError(f"Unknown run configuration: {name!r}. Did you mean: {return_text}?")
        listed = ", ".join(repr(n) for n in names[:20])
        raise ToolError(f"Unknown run configuration: {name!r}. Available: {listed}")

    def latest(self, name: str | None) -> Run:
        """The latest run of ``name`` (or of any configuration when ``name`` is None)."""
        if name is None:
            if not self.runs:
                raise ToolError("No run configuration has been run yet")
            return max(self.runs.values(), key=lambda r: r.started)
        run = self.runs.get(name)
        if run is None:
            raise ToolError(f"Run configuration {name!r} has not been run since the server started")
        return run

    async def start(self, config: RunConfig) -> Run:
        """Start ``config`` in a new kernel and return once the kernel is up."""
        previous = self.runs.get(config.name)
        if previous is not None and previous.running:
            raise ToolError(
                f"Run configuration {config.name!r} is already running (started "
                f"{iso(previous.started)}); stop it with stop_run_configuration first"
            )
        if not is_inside(self.root_dir, config.cwd):
            raise ToolError(
                f"Run configuration {config.name!r} has a working directory outside the project: "
                f"{config.cwd}"
            )
        if not config.cwd.is_dir():
            raise ToolError(f"Working directory of {config.name!r} does not exist: {config.cwd}")
        manager = self.kernel_manager
        specs = await managers.kernel_specs(self.serverapp)
        run = Run(id=str(next(self._ids)), config=config)
        self.runs[config.name] = run
        run.output.append(f"> {config.describe()}\n")
        api_path = config.cwd.relative_to(self.root_dir).as_posix()
        try:
            kwargs: dict[str, Any] = {"path": "" if api_path == "." else api_path}
            shown = (
                config.notebook.relative_to(self.root_dir).as_posix() if config.notebook else None
            )
            kernel_name = await asyncio.to_thread(
                kernel_name_for, config.notebook, specs, manager.default_kernel_name, shown=shown
            )
            if kernel_name:
                kwargs["kernel_name"] = kernel_name
            run.kernel_id = await managers.start_kernel(self.serverapp, **kwargs)
        except Exception as e:
            why = managers.describe(e)
            self._finish(run, "error", None, f"Could not start a kernel: {why}")
            raise ToolError(f"Could not start a kernel for {config.name!r}: {why}") from e
        run.status = "running"
        run.task = asyncio.create_task(self._execute(run))
        return run

    async def stop(self, name: str) -> Run:
        """Interrupt the run of ``name``; kill its kernel when it does not stop in time."""
        run = self.latest(name)
        if not run.running:
            raise ToolError(f"Run configuration {name!r} is not running (it {run.status})")
        run.stop_requested = True
        if run.kernel_id is not None:
            with contextlib.suppress(Exception):
                await managers.interrupt_kernel(self.serverapp, run.kernel_id)
        if run.task is not None:
            done, _ = await asyncio.wait({run.task}, timeout=INTERRUPT_TIMEOUT)
            if not done:  # the kernel did not answer the interrupt: end the run from here
                run.task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await run.task
        if run.cleanup is not None:
            # The program's group shutting down within its grace, then the kernel.
            with contextlib.suppress(Exception):
                await asyncio.shield(run.cleanup)
        if run.running:
            self._finish(run, "stopped", None, None)
        return run

    async def _execute(self, run: Run) -> None:
        assert run.kernel_id is not None
        try:
            async with managers.connected_client(self.serverapp, run.kernel_id) as client:
                if run.config.notebook is not None:
                    status, code, error = await self._run_notebook(run, client)
                else:
                    status, code, error = await self._run_process(run, client)
            self._finish(run, status, code, error)
        except asyncio.CancelledError:
            self._finish(run, "stopped", None, None)
        except Exception as e:  # the kernel died, the notebook is unreadable …
            self.log.warning("Run %s failed: %s", run.config.name, e)
            self._finish(run, "stopped" if run.stop_requested else "error", None, str(e))
        finally:
            # Shielded and kept on the run: a stop that cancels this task still waits for it.
            run.cleanup = asyncio.ensure_future(self._clean_up(run))
            await asyncio.shield(run.cleanup)

    async def _clean_up(self, run: Run) -> None:
        """End what the run leaves: its process group, then its kernel."""
        manager = self.kernel_manager
        if run.pgid is not None:
            # Whatever the program left running (``sleep 1000 &``, a dev server) ends with the
            # run: one SIGTERM to its group (the runner sent it already when it was
            # interrupted), SIGKILL for what is left after the grace period.
            await kill_group(run.pgid, grace=STOP_GRACE, terminate=not run.group_terminated)
        if run.kernel_id is not None and run.kernel_id in manager:
            with contextlib.suppress(Exception):
                await managers.shutdown_kernel(
                    self.serverapp, run.kernel_id, now=run.stop_requested
                )

    def _finish(self, run: Run, status: str, code: int | None, error: str | None) -> None:
        if not run.running:
            return
        if run.stop_requested and status != "succeeded":
            status = "stopped"
        run.status, run.exit_code, run.error, run.ended = status, code, error, time.time()
        tail = f"exit code {code}" if code is not None else status
        run.output.append(f"\n[{run.config.name} {status}: {error or tail}]\n")

    async def _run_process(self, run: Run, client: Any) -> tuple[str, int | None, str | None]:
        config = run.config
        params = {
            "argv": config.argv,
            "shell": config.shell,
            "cwd": str(config.cwd),
            "env": config.env,
            "mime": PGID_MIME,
            "grace": STOP_GRACE,
        }
        code = (
            f"{_RUNNER}\n__mcp_rc = __mcp_run(**__import__('json').loads({json.dumps(params)!r}))"
        )
        reply = await self._execute_code(run, client, code, {"rc": "__mcp_rc"})
        content = reply.get("content", {})
        if content.get("status") != "ok":
            # The runner failed or was interrupted after starting the program: it sent the
            # program's group its SIGTERM on the way out.
            run.group_terminated = run.pgid is not None
            if content.get("ename") == "KeyboardInterrupt" or run.stop_requested:
                return "stopped", None, None
            return "error", None, f"{content.get('ename')}: {content.get('evalue')}"
        rc = content.get("user_expressions", {}).get("rc", {})
        try:
            exit_code = int(rc["data"]["text/plain"])
        except (KeyError, TypeError, ValueError):
            return "error", None, "the kernel did not report an exit code"
        if run.stop_requested:
            return "stopped", exit_code, None
        return ("succeeded" if exit_code == 0 else "failed"), exit_code, None

    async def _run_notebook(self, run: Run, client: Any) -> tuple[str, int | None, str | None]:
        import nbformat

        notebook = run.config.notebook
        assert notebook is not None
        raw = await asyncio.to_thread(notebook.read_text, encoding="utf-8")
        nb = nbformat.reads(raw, as_version=4)
        cells = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
        for number, cell in enumerate(cells, 1):
            if run.stop_requested:
                return "stopped", None, None
            reply = await self._execute_code(run, client, cell.source, None)
            content = reply.get("content", {})
            if content.get("status") != "ok":
                if content.get("ename") == "KeyboardInterrupt" or run.stop_requested:
                    return "stopped", None, None
                return (
                    "failed",
                    1,
                    f"code cell {number} of {len(cells)} raised "
                    f"{content.get('ename')}: {content.get('evalue')}",
                )
        return "succeeded", 0, None

    async def _execute_code(
        self, run: Run, client: Any, code: str, expressions: dict[str, str] | None
    ) -> dict[str, Any]:
        """Execute ``code``, streaming its output into the run; return the reply."""
        manager = self.kernel_manager

        def on_message(kind: str, content: dict[str, Any]) -> None:
            if kind == "stream":
                run.output.append(content.get("text", ""))
            elif (
                kind == "display_data"
                and run.config.notebook is None
                and PGID_MIME in content.get("data", {})
            ):
                run.pgid = _pgid(content["data"][PGID_MIME], run.pgid)
            elif kind in ("execute_result", "display_data"):
                text = content.get("data", {}).get("text/plain")
                if text:
                    run.output.append(text + "\n")
            elif kind == "error":
                run.output.append(plain_text("\n".join(content.get("traceback", []))) + "\n")

        assert run.kernel_id is not None
        kernel = managers.kernel(self.serverapp, run.kernel_id)
        connected_to = managers.incarnation(kernel)

        async def is_alive() -> bool:
            return run.kernel_id in manager and await managers.client_alive(
                client, kernel, connected_to
            )

        return await execute(
            client, code, on_message=on_message, is_alive=is_alive, user_expressions=expressions
        )

    def groups(self) -> list[int]:
        """The process groups of the running runs' programs (their kernels are the server's
        kernels, ended with those)."""
        return [run.pgid for run in self.running() if run.pgid is not None]

    async def shutdown(self) -> None:
        """Stop every run (the server is stopping)."""
        for run in self.running():
            with contextlib.suppress(Exception):
                await self.stop(run.config.name)


def _pgid(reported: Any, known: int | None) -> int | None:
    """The process group a runner reported, if it is a plausible one to signal."""
    if known is not None or not isinstance(reported, dict):
        return known
    pgid = reported.get("pgid")
    if isinstance(pgid, int) and not isinstance(pgid, bool) and pgid > 1:
        if pgid != os.getpgrp():  # never the server's own group
            return pgid
    return None
