"""Jupyter's contents manager hands out the cell ids the tools give out (jupyter_contents).

JupyterLab's windows and jupyter-collaboration's shared documents load notebooks through the
contents API; without this, nbformat would give the cells of a v3 notebook, or of a v4.5 one
whose cells lack or share ids, other random ids at each load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_server.services.contents.filemanager import FileContentsManager
from public_notebooks import NBFORMAT, OTHERS, copy_into, nbformat_notebook, public_notebook

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.documents.jupyter_contents import serve_stable_ids

CASES = {
    "v3": nbformat_notebook(NBFORMAT["v3"]),
    "v4.4": nbformat_notebook(NBFORMAT["v4.4"]),
    "v4.5 with two cells sharing an id": nbformat_notebook(
        NBFORMAT["v4.5 with two cells sharing an id"]
    ),
    "v4.5 with one cell lacking an id": public_notebook(OTHERS["v4.5 with one cell lacking an id"]),
}


@pytest.mark.parametrize("what", list(CASES))
async def test_the_contents_api_gives_the_ids_the_tools_give(
    ok: Any, jp_fetch: Any, jp_root_dir: Path, what: str
) -> None:
    copy_into(CASES[what], jp_root_dir, "nb.ipynb")

    async def contents() -> Any:
        response = await jp_fetch("api", "contents", "nb.ipynb", params={"content": "1"})
        return json.loads(response.body)["content"]

    first, second = await contents(), await contents()
    listed = await ok("get_notebook_cells", pathInProject="nb.ipynb", includeOutputs=False)
    ids = [c["cellId"] for c in listed["cells"]]
    assert [c["id"] for c in first["cells"]] == ids
    assert [c["id"] for c in second["cells"]] == ids
    # Only the ids are the tools': the rest is what Jupyter reads
    assert [c["source"] for c in first["cells"]] == [c["source"] for c in listed["cells"]]


async def test_a_copy_made_by_jupyter_is_a_valid_notebook_with_those_ids(
    ok: Any, jp_fetch: Any, jp_root_dir: Path
) -> None:
    # Given a v4.4 notebook (JupyterLab's "Duplicate" copies through the contents API)
    copy_into(CASES["v4.4"], jp_root_dir, "nb.ipynb")
    listed = await ok("get_notebook_cells", pathInProject="nb.ipynb", includeOutputs=False)
    await jp_fetch("api", "contents", method="POST", body=json.dumps({"copy_from": "nb.ipynb"}))
    copy = jp_root_dir / "nb-Copy1.ipynb"
    # Then the copy stores the ids, as the valid nbformat 4.5 that has room for them
    saved = nbformat.read(copy, as_version=nbformat.NO_CONVERT)
    nbformat.validate(saved)
    assert (saved.nbformat, saved.nbformat_minor) == (4, 5)
    assert [c.id for c in saved.cells] == [c["cellId"] for c in listed["cells"]]


async def test_models_without_notebook_content_are_left_alone(
    jp_fetch: Any, jp_root_dir: Path
) -> None:
    copy_into(CASES["v3"], jp_root_dir, "nb.ipynb")
    (jp_root_dir / "notes.txt").write_text("hello")
    listing = json.loads(
        (await jp_fetch("api", "contents", "nb.ipynb", params={"content": "0"})).body
    )
    assert listing["content"] is None and listing["type"] == "notebook"
    text = json.loads((await jp_fetch("api", "contents", "notes.txt")).body)
    assert text["content"] == "hello"


def test_a_synchronous_contents_manager_is_wrapped_and_restored(tmp_path: Path) -> None:
    copy_into(CASES["v4.5 with two cells sharing an id"], tmp_path, "nb.ipynb")
    manager = FileContentsManager(root_dir=str(tmp_path))
    # Given Jupyter's own reading: nbformat repairs the duplicate with a new random id each time
    first, second = ([c["id"] for c in manager.get("nb.ipynb")["content"]["cells"]] for _ in "12")
    assert first[0] == second[0] == "dup" and first[1] != second[1]
    restore = serve_stable_ids(manager, ToolContext(tmp_path))
    assert restore is not None and serve_stable_ids(manager, ToolContext(tmp_path)) is None
    ids = [c["id"] for c in manager.get("nb.ipynb")["content"]["cells"]]
    assert ids == [c["id"] for c in manager.get("nb.ipynb")["content"]["cells"]]
    assert ids[0] == "dup" and len(set(ids)) == 2
    restore()
    assert "get" not in vars(manager)


def test_a_model_whose_cells_are_not_its_files_is_left_as_the_manager_made_it(
    tmp_path: Path,
) -> None:
    copy_into(CASES["v3"], tmp_path, "nb.ipynb")

    class Pairing(FileContentsManager):
        """A manager that makes the notebook's cells from somewhere else (as a pairing would)."""

        def get(self, path: str, content: bool = True, **kwargs: Any) -> Any:
            model = super().get(path, content=content, **kwargs)
            if content:
                model["content"]["cells"][0]["source"] = "from elsewhere"
                model["content"]["cells"][0]["id"] = "elsewhere"
            return model

    manager = Pairing(root_dir=str(tmp_path))
    serve_stable_ids(manager, ToolContext(tmp_path))
    assert manager.get("nb.ipynb")["content"]["cells"][0]["id"] == "elsewhere"


class TestWithJupytextsContentsManager:
    """jupytext's server extension (installed with jupytext, it enables itself) replaces the
    contents manager once the extensions are loaded: that one hands out the ids too."""

    @pytest.fixture
    def jp_server_config(self) -> dict[str, Any]:
        from server_configs import server_config

        config = server_config()
        config["ServerApp"]["jpserver_extensions"]["jupyterlab_jupytext"] = True
        return config

    async def test_the_contents_api_gives_the_ids_the_tools_give(
        self, ok: Any, jp_fetch: Any, jp_root_dir: Path, jp_serverapp: Any
    ) -> None:
        assert hasattr(jp_serverapp.contents_manager, "formats")  # jupytext's manager
        # What a running server does once every extension is loaded (its _post_start)
        await jp_serverapp.extension_manager.start_extension("jupyter_mcp")
        copy_into(CASES["v3"], jp_root_dir, "nb.ipynb")
        response = await jp_fetch("api", "contents", "nb.ipynb", params={"content": "1"})
        served = [c["id"] for c in json.loads(response.body)["content"]["cells"]]
        listed = await ok("get_notebook_cells", pathInProject="nb.ipynb", includeOutputs=False)
        assert served == [c["cellId"] for c in listed["cells"]]
