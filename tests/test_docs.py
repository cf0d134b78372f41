"""The README documents what users can configure."""

from __future__ import annotations

from pathlib import Path

from jupyter_server.extension.application import ExtensionApp

from jupyter_mcp.app import JupyterMCP

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
