"""Project tools: types from marker files, extensions, dependencies."""

from __future__ import annotations

import json


async def test_project_types_from_markers(ok, jp_root_dir):
    (jp_root_dir / "package.json").write_text("{}")
    (jp_root_dir / "pyproject.toml").write_text("[project]\nname='x'\n")
    (jp_root_dir / "go.mod").write_text("module x\n")
    (jp_root_dir / "Cargo.toml").write_text("[package]\n")
    (jp_root_dir / "a.ipynb").write_text("{}")
    status = await ok("get_project_modules")
    assert status["types"] == ["python", "node", "go", "rust", "jupyter"]


async def test_extensions_list_enabled_server_and_lab_extensions(ok):
    status = await ok("get_project_modules")
    assert "jupyter_mcp" in status["extensions"]
    assert status["extensions"] == sorted(status["extensions"])


async def test_empty_project_has_no_types(ok):
    assert (await ok("get_project_modules"))["types"] == []


async def test_node_dependencies(ok, jp_root_dir):
    (jp_root_dir / "package.json").write_text(
        json.dumps(
            {
                "dependencies": {"express": "^4.18.2", "lodash": "^4.17.21"},
                "devDependencies": {"typescript": "^5.0.0"},
            }
        )
    )
    status = await ok("get_project_dependencies")
    assert status["type"] == "node"
    assert status["dependencies"] == {"express": "^4.18.2", "lodash": "^4.17.21"}
    assert status["devDependencies"] == {"typescript": "^5.0.0"}
    assert status["others"] == []


async def test_python_dependencies_from_pyproject_and_requirements(ok, jp_root_dir):
    (jp_root_dir / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["requests>=2.31", "numpy"]\n'
        '[project.optional-dependencies]\ntest = ["pytest>=8"]\n'
    )
    (jp_root_dir / "requirements.txt").write_text("pandas==2.2.0  # data\n-r other.txt\n\nflask\n")
    (jp_root_dir / "requirements-dev.txt").write_text("ruff>=0.6\n")
    (jp_root_dir / "package.json").write_text('{"dependencies": {"left-pad": "1.0.0"}}')
    status = await ok("get_project_dependencies")
    assert status["type"] == "python"
    assert status["dependencies"] == {
        "requests": ">=2.31",
        "numpy": "*",
        "pandas": "==2.2.0",
        "flask": "*",
    }
    assert status["devDependencies"] == {"pytest": ">=8", "ruff": ">=0.6"}
    assert status["sources"] == ["pyproject.toml", "requirements-dev.txt", "requirements.txt"]
    assert status["others"][0]["type"] == "node"
    assert status["others"][0]["dependencies"] == {"left-pad": "1.0.0"}


async def test_no_dependency_files(fails):
    assert "No dependency files" in await fails("get_project_dependencies")


async def test_broken_package_json(fails, jp_root_dir):
    (jp_root_dir / "package.json").write_text("{oops")
    assert "Cannot read package.json" in await fails("get_project_dependencies")


async def test_broken_pyproject(fails, jp_root_dir):
    (jp_root_dir / "pyproject.toml").write_text("[project\n")
    assert "Cannot read pyproject.toml" in await fails("get_project_dependencies")
