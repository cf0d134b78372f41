"""How ``%mcp`` reads its line and ``%%mcp`` its cell, and how results fall back for frontends
without the labextension: plain functions, no server (the notebooks in test_ipython.py run
the magics for real)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from jupyter_mcp.ide.api import docstring_of, signature_of
from jupyter_mcp.ide.client import Answer, ToolInfo, value_of
from jupyter_mcp.ide.magics import arguments_of, split_line
from jupyter_mcp.ide.results import bundle, html_of, shown, text_of

TOOL = ToolInfo(
    name="edit_notebook_cell",
    title="Edit notebook cell",
    description="Edit a notebook cell.",
    schema={
        "type": "object",
        "properties": {
            "pathInProject": {"type": "string", "description": "The notebook."},
            "index": {"type": "integer", "minimum": 0},
            "replaceAll": {"type": "boolean", "default": False},
            "cellIds": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "object"},
            "cellType": {"type": "string", "enum": ["code", "markdown", "raw"]},
            "timeoutMs": {"type": "number"},
            "resultStart": {"type": "integer"},
        },
        "required": ["pathInProject"],
        "additionalProperties": False,
    },
    read_only=False,
    destructive=False,
    toolset="notebooks",
    view="diff",
)


def parse(line: str, body: str | None = None) -> dict[str, object]:
    return arguments_of(TOOL, split_line(line), body)


def test_values_are_read_as_the_schema_says():
    assert parse(
        "pathInProject=2024.ipynb index=3 replaceAll=true cellIds=a1,b2 timeoutMs=1.5 "
        'options={"newName": "total", "n": [1, 2]} cellType=markdown'
    ) == {
        "pathInProject": "2024.ipynb",  # a text argument stays text, digits or not
        "index": 3,
        "replaceAll": True,
        "cellIds": ["a1", "b2"],
        "timeoutMs": 1.5,
        "options": {"newName": "total", "n": [1, 2]},
        "cellType": "markdown",
    }


def test_quotes_keep_text_and_lists_take_json_or_python():
    assert parse('pathInProject="my notes.ipynb" cellIds=\'["a b", "c"]\' index="2"') == {
        "pathInProject": "my notes.ipynb",
        "cellIds": ["a b", "c"],  # quoted for its spaces, still the list the tool takes
        "index": 2,
    }
    assert parse("pathInProject='it\\'s.ipynb' cellIds=['x', 'y z']") == {
        "pathInProject": "it's.ipynb",
        "cellIds": ["x", "y z"],
    }


def test_a_bare_value_fills_the_first_required_argument():
    assert parse("notes.ipynb index=0") == {"pathInProject": "notes.ipynb", "index": 0}
    with pytest.raises(UsageError, match="write them as name=value"):
        parse("notes.ipynb other.ipynb")


def test_the_cell_is_json_or_yaml_arguments_or_one_text():
    assert parse("index=1", "pathInProject: a.ipynb\nreplaceAll: yes\n") == {
        "index": 1,
        "pathInProject": "a.ipynb",
        "replaceAll": True,
    }
    assert parse("", '{"pathInProject": "b.ipynb", "cellIds": ["x"]}') == {
        "pathInProject": "b.ipynb",
        "cellIds": ["x"],
    }
    assert parse("pathInProject=c.ipynb --body options", "x = 1\n") == {
        "pathInProject": "c.ipynb",
        "options": "x = 1\n",
    }


@pytest.mark.parametrize(
    ("line", "body", "message"),
    [
        ('pathInProject="open', None, "not closed"),
        ("options={1: ", None, "not closed"),
        ("index=three", None, "the tool takes int there"),
        ("options={nope}", None, "neither JSON nor a Python literal"),
        ("pathInProject=a --bogus x", None, "Unknown option --bogus"),
        ("pathInProject=a --body text", None, "use it with %%mcp"),
        ("", "- just\n- a list\n", "must be the tool's arguments"),
        ("", "{not json", "not valid JSON"),
    ],
)
def test_bad_lines_and_cells_are_usage_errors_that_say_why(line, body, message):
    with pytest.raises(UsageError, match=message):
        parse(line, body)


def test_the_method_signature_and_docstring_come_from_the_schema():
    signature = signature_of(TOOL)
    assert str(signature) == (
        "(self, /, *, pathInProject: str, index: int = None, replaceAll: bool = False, "
        "cellIds: list = None, options: dict = None, "
        "cellType: Literal['code', 'markdown', 'raw'] = None, timeoutMs: float = None) -> Any"
    )
    doc = docstring_of(TOOL)
    assert doc.startswith("Edit a notebook cell.\n\nEdit notebook cell · tool set notebooks")
    assert "pathInProject : str\n    The notebook." in doc
    assert "replaceAll : bool, optional\n    (default False)" in doc
    assert "resultStart" not in doc  # the client reads whole answers itself
    assert "shown as the diff view" in doc


def test_values_are_json_data_or_the_text_a_tool_answered():
    assert value_of({"a": 1}, '{"a": 1}', whole=True) == {"a": 1}
    assert value_of(None, '[{"a": 1}]', whole=True) == [{"a": 1}]
    # A whole object comes as structured content too: one that does not was a text.
    assert value_of(None, '{"a": 1}', whole=True) == '{"a": 1}'
    assert value_of(None, '{"a": 1}', whole=False) == {"a": 1}
    assert value_of(None, "42", whole=True) == "42"
    assert value_of(None, "def main():", whole=True) == "def main():"


def test_results_are_python_data_that_show_themselves():
    rows = [{"path": "b.py", "line": 2}, {"path": "a.py", "line": 1}]
    result = shown(Answer(tool="search", value=rows, result={"content": []}))
    assert isinstance(result, list) and result == rows and result.answer.tool == "search"
    data = result._repr_mimebundle_()
    assert set(data) == {"application/vnd.jupyter-mcp.result+json", "text/html", "text/plain"}
    assert data["application/vnd.jupyter-mcp.result+json"]["order"] == {"columns": ["path", "line"]}
    assert data["text/plain"].splitlines() == ["path  line", "b.py  2", "a.py  1"]
    text = shown(Answer(tool="read", value="x = 1\n", result={"content": []}))
    assert (
        isinstance(text, str)
        and text == "x = 1\n"
        and "<pre" in text._repr_mimebundle_()["text/html"]
    )


def test_the_html_fallback_escapes_what_outputs_carry():
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    answer = Answer(
        tool="execute_notebook_cells",
        value={"status": "ok"},
        result={
            "content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}],
            "_meta": {
                "jupyter-mcp/view": {
                    "view": "cell-outputs",
                    "cells": [
                        {
                            "cellId": "c1",
                            "executionCount": 1,
                            "outputs": [
                                {"outputType": "stream", "name": "stdout", "text": hostile},
                                {
                                    "outputType": "display_data",
                                    "data": {"text/html": hostile, "text/plain": "<HTML>"},
                                },
                                {"outputType": "display_data", "data": {}, "contentImage": 0},
                                {
                                    "outputType": "error",
                                    "ename": "ValueError",
                                    "evalue": hostile,
                                    "traceback": ["\x1b[31mValueError\x1b[0m: " + hostile],
                                },
                            ],
                        }
                    ],
                }
            },
        },
    )
    html = html_of(answer)
    assert (
        "<script" not in html
        and "<img src=x" not in html
        and "onerror=alert" not in html.replace("onerror=alert(2)&gt;", "")
    )
    assert "&lt;script&gt;" in html and "data:image/png;base64,iVBORw0KGgo=" in html
    assert "\x1b" not in html
    assert bundle(answer)["text/plain"]  # something readable for a terminal


def test_diffs_fall_back_as_unified_text():
    answer = Answer(
        tool="edit_notebook_cell",
        value={"cellId": "c1", "diff": "..."},
        result={
            "_meta": {
                "jupyter-mcp/view": {
                    "view": "diff",
                    "files": [
                        {"path": "n.ipynb · cell c1", "before": "a = 1\n", "after": "a = 2\n"}
                    ],
                }
            }
        },
    )
    assert "-a = 1\n+a = 2" in text_of(answer)
    assert 'style="background:#dafbe1">+a = 2</span>' in html_of(answer)
