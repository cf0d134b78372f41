"""The README documents what users can configure, and the tool sets."""

from __future__ import annotations

from pathlib import Path

from jupyter_server.extension.application import ExtensionApp

from jupyter_mcp.app import JupyterMCP
from jupyter_mcp.core.toolsets import TOOLSETS
from jupyter_mcp.tools import builtin_tools

README = Path(__file__).parent.parent / "README.md"


def test_every_setting_is_in_the_readme_table():
    inherited = ExtensionApp.class_traits(config=True)
    ours = [n for n in JupyterMCP.class_traits(config=True) if n not in inherited]
    text = README.read_text(encoding="utf-8")
    missing = [name for name in ours if f"| `{name}` |" not in text]
    assert not missing, f"settings missing from README's configuration table: {missing}"


def test_every_setting_has_help():
    inherited = ExtensionApp.class_traits(config=True)
    for name, trait in JupyterMCP.class_traits(config=True).items():
        if name not in inherited:
            assert trait.help and trait.help.rstrip().endswith((".", ")")), name


def _shown(value: object) -> set[str]:
    """How the README may write a default: as Python writes it, or in MiB."""
    shown = {f"`{value!r}`".replace("'", '"')}
    if isinstance(value, int) and not isinstance(value, bool) and value % (1024 * 1024) == 0:
        shown.add(f"{value // (1024 * 1024)} MiB")
    return shown


def test_the_readme_table_says_each_settings_default():
    inherited = ExtensionApp.class_traits(config=True)
    rows = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1]
    wrong = []
    for name, trait in JupyterMCP.class_traits(config=True).items():
        if name in inherited or name not in rows or rows[name] == "see below":
            continue
        default = trait.default()
        if rows[name] not in _shown(default):
            wrong.append(f"{name}: README says {rows[name]}, the default is {default!r}")
    assert not wrong, "\n".join(wrong)


def _toolset_rows() -> dict[str, tuple[list[str], str]]:
    """The README's tool set table: set → (tool names, size cell)."""
    rows: dict[str, tuple[list[str], str]] = {}
    lines = README.read_text(encoding="utf-8").split("| set | tools | size |", 1)[1].splitlines()
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        name, tools, size = (c.strip() for c in line.strip().strip("|").split("|"))
        listed = [t.strip().strip("`") for t in tools.split(",") if t.strip().startswith("`")]
        rows[name.strip("`")] = (listed, size)
    return rows


def test_the_readme_lists_every_tool_set_with_its_tools_and_size():
    rows = _toolset_rows()
    assert list(rows) == list(TOOLSETS)
    by_set: dict[str, list[str]] = {name: [] for name in TOOLSETS}
    for tool in builtin_tools():
        by_set[tool.toolset].append(tool.name)
    wrong = []
    for name, (listed, size) in rows.items():
        if name == "plugins":
            assert not by_set[name], "a built-in tool is in the plugins set"
            continue
        if sorted(listed) != sorted(by_set[name]) or size != str(len(by_set[name])):
            wrong.append(f"{name}: README lists {listed} ({size}), the registry {by_set[name]}")
    assert not wrong, "\n".join(wrong)


def test_every_notebook_tool_is_in_the_readme_table():
    from jupyter_mcp.tools import debug, kernels, notebooks

    text = README.read_text(encoding="utf-8")
    tools = [
        *notebooks.tools,
        *kernels.tools,
        *(t for t in debug.tools if t.name == "debug_session"),
    ]
    missing = [t.name for t in tools if f"| `{t.name}` |" not in text]
    assert not missing, f"notebook tools missing from README's table: {missing}"
