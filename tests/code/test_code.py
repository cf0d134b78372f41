"""Code tools through a real Jupyter server, on a small but realistic project.

The fixture is a package ``shop`` (models with a class hierarchy, a service importing them, a
util module imported under an alias) and a notebook ``analysis.ipynb`` that imports the package,
has outputs and a ``%matplotlib inline`` magic. Refactorings are checked by reading the files
back, importing the package in a fresh interpreter and running the notebook's code cells.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.code.engine import neutralise

MODELS = '''\
"""Domain models."""

from __future__ import annotations

MAX_ITEMS = 100
default_currency = "EUR"


class Base:
    """Anything with a name."""

    kind = "base"

    def __init__(self, name: str) -> None:
        self.name = name

    def describe(self) -> str:
        return f"{self.kind}: {self.name}"


class Product(Base):
    """A thing for sale."""

    kind = "product"

    def __init__(self, name: str, price: float) -> None:
        super().__init__(name)
        self._price = price

    @property
    def price(self) -> float:
        return self._price

    def describe(self) -> str:
        return f"{super().describe()} at {self.price}"

    def discounted(self, rate: float = 0.1) -> float:
        return round(self.price * (1 - rate), 2)


class DigitalProduct(Product):
    """A download."""

    kind = "digital"

    def describe(self) -> str:
        return "digital " + super().describe()
'''

UTIL = '''\
"""Helpers."""


def fmt_price(value: float, currency: str = "EUR") -> str:
    """Format a price."""
    return f"{value:.2f} {currency}"


def total(prices):
    return sum(prices)
'''

SERVICE = '''\
"""Use cases."""

import shop.util as u
from shop.models import MAX_ITEMS, DigitalProduct, Product


def catalogue() -> list[Product]:
    items = [Product("book", 12.5), DigitalProduct("ebook", 7.0)]
    return items[:MAX_ITEMS]


def price_list() -> list[str]:
    lines = []
    for product in catalogue():
        lines.append(product.describe() + " = " + u.fmt_price(product.price))
    return lines


def checkout(products) -> str:
    amount = u.total(p.discounted(0.2) for p in products)
    return u.fmt_price(amount)
'''

NOTEBOOK_OUTPUT = ["12.50 EUR", "Out[0]: '15.60 EUR'"]
EXPECTED_PRICES = [
    "product: book at 12.5 = 12.50 EUR",
    "digital digital: ebook at 7.0 = 7.00 EUR",
]

# The notebook's text view (what get_file_text_by_path shows), line by line (0-based):
#  0 # %% [markdown]                     8
#  1 # # Shop analysis                   9 # %%
#  2                                    10 items = catalogue()
#  3 # %%                               11 print(u.fmt_price(items[0].price))
#  4 # %matplotlib inline               12
#  5 import shop.util as u              13 # %%
#  6 from shop.models import Product    14 checkout(items)
#  7 from shop.service import catalogue, checkout


def _notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Shop analysis"),
        nbformat.v4.new_code_cell(
            "%matplotlib inline\nimport shop.util as u\nfrom shop.models import Product\n"
            "from shop.service import catalogue, checkout"
        ),
        nbformat.v4.new_code_cell(
            "items = catalogue()\nprint(u.fmt_price(items[0].price))",
            execution_count=2,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="12.50 EUR\n")],
        ),
        nbformat.v4.new_code_cell(
            "checkout(items)",
            execution_count=3,
            outputs=[
                nbformat.v4.new_output(
                    "execute_result", data={"text/plain": "'15.60 EUR'"}, execution_count=3
                )
            ],
        ),
    ]
    return nb


@pytest.fixture(autouse=True)
def _stop_worker(mcp_app: Any) -> Iterator[None]:
    """Stop the server's jedi worker process when the test ends."""
    yield
    mcp_app.tool_context.services.code.close()


@pytest.fixture
def shop(jp_root_dir: Path) -> Path:
    """The fixture project in the server's root."""
    package = jp_root_dir / "shop"
    package.mkdir()
    (package / "__init__.py").write_text('"""A small shop."""\n')
    (package / "models.py").write_text(MODELS)
    (package / "util.py").write_text(UTIL)
    (package / "service.py").write_text(SERVICE)
    nbformat.write(_notebook(), jp_root_dir / "analysis.ipynb")
    (jp_root_dir / "README.md").write_text("# Shop\n")
    return jp_root_dir


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts
    }


def _run_python(root: Path, code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _run_notebook(root: Path, name: str = "analysis.ipynb") -> list[str]:
    """Execute the notebook's code cells in order in IPython; the printed lines."""
    out = _run_python(
        root,
        f"""
        import json, nbformat
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.register_magic_function(lambda line: None, "line", "matplotlib")
        nb = nbformat.read({name!r}, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                result = shell.run_cell(cell.source)
                if not result.success:
                    raise SystemExit(f"cell failed: {{cell.source!r}}: {{result.error_in_exec!r}}")
        """,
    )
    return out.splitlines()


def _lines(root: Path, path: str) -> list[str]:
    if path.endswith(".ipynb"):
        from jupyter_mcp.documents.notebook_view import notebook_view

        return notebook_view(nbformat.read(root / path, as_version=4)).split("\n")
    return (root / path).read_text().split("\n")


def _find(root: Path, path: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    """0-based (line, character) of the ``occurrence``-th ``needle`` in a file's text view."""
    seen = 0
    for number, line in enumerate(_lines(root, path)):
        start = line.find(needle)
        while start != -1:
            if seen == occurrence:
                return number, start
            seen += 1
            start = line.find(needle, start + 1)
    raise AssertionError(f"{needle!r} not found in {path}")


def _by_name(symbols: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in symbols}


# ------------------------------------------------------------------------------------------
# get_symbols_in_file


async def test_symbols_of_a_module_have_kinds_nesting_ranges_and_detail(shop: Path, ok) -> None:
    # Given the models module
    # When its symbols are listed
    symbols = _by_name((await ok("get_symbols_in_file", pathInProject="shop/models.py"))["symbols"])

    # Then top-level names come with VS Code kinds
    assert symbols["MAX_ITEMS"]["kind"] == "Constant"
    assert symbols["default_currency"]["kind"] == "Variable"
    assert symbols["annotations"]["kind"] == "Module"
    assert {symbols[c]["kind"] for c in ("Base", "Product", "DigitalProduct")} == {"Class"}
    # and a class spans its whole body, 0-based
    product = symbols["Product"]
    assert product["range"] == {
        "startLine": 20,
        "startCharacter": 0,
        "endLine": 37,
        "endCharacter": 48,
    }
    assert product["text"] == "Product"
    assert product["detail"] == "class Product(Base)"
    # and its members are nested, with the property starting at its decorator
    members = _by_name(product["children"])
    assert set(members) == {"kind", "__init__", "price", "describe", "discounted"}
    assert members["kind"]["kind"] == "Field"
    assert members["__init__"]["kind"] == "Constructor"
    assert members["describe"]["kind"] == "Method"
    assert members["price"]["kind"] == "Property"
    assert members["price"]["range"]["startLine"] == 29  # the @property line
    assert members["price"]["range"]["endLine"] == 31
    assert members["discounted"]["detail"] == "def discounted(self, rate: float = 0.1) -> float"
    # and the overriding method of the subclass is its own child
    assert [c["name"] for c in symbols["DigitalProduct"]["children"]] == ["kind", "describe"]
    # and every range starts where the text says it does
    lines = _lines(shop, "shop/models.py")
    for symbol in (product, members["discounted"], symbols["MAX_ITEMS"]):
        first = lines[symbol["range"]["startLine"]]
        assert symbol["name"] in first or first.strip().startswith("@")


async def test_symbols_of_a_notebook_use_lines_of_its_text_view(shop: Path, ok) -> None:
    # Given the notebook and its text view as the file tools show it
    view = (await ok("get_file_text_by_path", pathInProject="analysis.ipynb"))["content"]
    lines = view.split("\n")

    # When its symbols are listed
    symbols = _by_name((await ok("get_symbols_in_file", pathInProject="analysis.ipynb"))["symbols"])

    # Then imports and variables are found at lines of that view
    assert set(symbols) == {"u", "Product", "catalogue", "checkout", "items"}
    assert symbols["u"]["kind"] == "Module"
    assert symbols["items"]["kind"] == "Variable"
    for symbol in symbols.values():
        selection = symbol["selectionRange"]
        line = lines[selection["startLine"]]
        assert line[selection["startCharacter"] : selection["endCharacter"]] == symbol["name"]
    assert symbols["items"]["detail"] == "items = catalogue()"


async def test_symbols_refuse_other_languages_and_missing_files(shop: Path, fails) -> None:
    assert "supports Python files" in await fails("get_symbols_in_file", pathInProject="README.md")
    assert "File not found" in await fails("get_symbols_in_file", pathInProject="shop/nope.py")
    assert "outside the project" in await fails(
        "get_symbols_in_file", pathInProject="../elsewhere.py"
    )


# ------------------------------------------------------------------------------------------
# find_references


def _texts(root: Path, refs: list[dict[str, Any]]) -> set[str]:
    found = set()
    for ref in refs:
        line = _lines(root, ref["path"])[ref["line"]]
        assert ref["endLine"] == ref["line"]
        found.add(line[ref["character"] : ref["endCharacter"]])
    return found


async def test_references_span_modules_aliases_and_the_notebook(shop: Path, ok) -> None:
    # Given the definition of fmt_price, used as u.fmt_price in service.py and the notebook
    line, character = _find(shop, "shop/util.py", "fmt_price")

    # When its references are found
    refs = (
        await ok("find_references", pathInProject="shop/util.py", line=line, character=character)
    )["references"]

    # Then the definition, both aliased attribute uses and the notebook's use are there, sorted
    places = [(r["path"], r["line"]) for r in refs]
    assert places == [
        ("analysis.ipynb", 11),
        ("shop/service.py", 14),
        ("shop/service.py", 20),
        ("shop/util.py", 3),
    ]
    assert _texts(shop, refs) == {"fmt_price"}

    # And asking from the notebook's use gives the same answer
    nb_line, nb_character = _find(shop, "analysis.ipynb", "fmt_price")
    again = await ok(
        "find_references", pathInProject="analysis.ipynb", line=nb_line, character=nb_character + 3
    )
    assert again["references"] == refs


async def test_a_notebook_in_another_language_is_never_read_as_python(shop: Path, ok) -> None:
    # Given a bash notebook whose cell reads like Python's import of fmt_price, as a shell
    # script that feeds Python a here-document does
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "bash", "display_name": "Bash", "language": "bash"}
    nb.cells = [
        nbformat.v4.new_code_cell(
            "python <<'EOF'\nimport shop.util as u\nprint(u.fmt_price(1))\nEOF\necho done"
        )
    ]
    (shop / "deploy.ipynb").write_text(nbformat.writes(nb))
    line, character = _find(shop, "shop/util.py", "fmt_price")
    # When fmt_price's references are found, the bash notebook is not among them
    refs = (
        await ok("find_references", pathInProject="shop/util.py", line=line, character=character)
    )["references"]
    assert "deploy.ipynb" not in {r["path"] for r in refs}, refs
    assert "analysis.ipynb" in {r["path"] for r in refs}


async def test_references_of_a_property_include_attribute_uses(shop: Path, ok) -> None:
    line, character = _find(shop, "shop/models.py", "def price")
    refs = (
        await ok(
            "find_references", pathInProject="shop/models.py", line=line, character=character + 4
        )
    )["references"]
    assert {r["path"] for r in refs} == {"analysis.ipynb", "shop/models.py", "shop/service.py"}
    assert len(refs) == 5
    assert _texts(shop, refs) == {"price"}


async def test_references_of_a_class_cover_imports_and_subclassing(shop: Path, ok) -> None:
    line, character = _find(shop, "shop/models.py", "class Product")
    refs = (
        await ok(
            "find_references", pathInProject="shop/models.py", line=line, character=character + 6
        )
    )["references"]
    by_path: dict[str, int] = {}
    for ref in refs:
        by_path[ref["path"]] = by_path.get(ref["path"], 0) + 1
    # definition + DigitalProduct(Product); import + two uses; the notebook's import
    assert by_path == {"shop/models.py": 2, "shop/service.py": 3, "analysis.ipynb": 1}


async def test_references_refuse_positions_without_a_symbol(shop: Path, fails) -> None:
    line, _ = _find(shop, "shop/util.py", "def fmt_price")
    assert "No symbol at line 1, character 0 of shop/util.py" in await fails(
        "find_references", pathInProject="shop/util.py", line=1, character=0
    )
    assert "keyword 'def'" in await fails(
        "find_references", pathInProject="shop/util.py", line=line, character=1
    )
    assert "inside a string" in await fails(
        "find_references", pathInProject="shop/util.py", line=line + 1, character=8
    )
    assert "a comment" in await fails(
        "find_references", pathInProject="analysis.ipynb", line=4, character=6
    )
    assert "beyond the end of shop/util.py" in await fails(
        "find_references", pathInProject="shop/util.py", line=99, character=0
    )
    assert "Character 80 is beyond the end of line" in await fails(
        "find_references", pathInProject="shop/util.py", line=line, character=80
    )
    assert "must be an integer" in await fails(
        "find_references", pathInProject="shop/util.py", line="3", character=4
    )
    assert "missing required field 'character'" in await fails(
        "find_references", pathInProject="shop/util.py", line=3
    )


async def test_references_follow_file_changes(shop: Path, ok) -> None:
    # Given an answer that was computed (and cached) once
    line, character = _find(shop, "shop/util.py", "fmt_price")
    args = {"pathInProject": "shop/util.py", "line": line, "character": character}
    first = (await ok("find_references", **args))["references"]
    assert (await ok("find_references", **args))["references"] == first

    # When a new module and a new notebook start using the function
    (shop / "report.py").write_text("from shop.util import fmt_price\n\nprint(fmt_price(3))\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from shop import util\nutil.fmt_price(1)")]
    nbformat.write(nb, shop / "extra.ipynb")

    # Then the next answer includes them
    refs = (await ok("find_references", **args))["references"]
    added = [(r["path"], r["line"]) for r in refs if r not in first]
    assert added == [("extra.ipynb", 2), ("report.py", 0), ("report.py", 2)]


async def test_references_follow_a_file_replaced_by_an_older_copy(shop: Path, ok) -> None:
    # Given an answer computed with service.py parsed and cached
    line, character = _find(shop, "shop/util.py", "fmt_price")
    args = {"pathInProject": "shop/util.py", "line": line, "character": character}
    before = [r["line"] for r in (await ok("find_references", **args))["references"]]
    assert before == [11, 14, 20, 3]

    # When service.py is replaced by a version two lines longer whose timestamp is older
    service = shop / "shop/service.py"
    stat = service.stat()
    service.write_text("# moved\n# down\n" + SERVICE)
    os.utime(service, ns=(stat.st_atime_ns - 10**10, stat.st_mtime_ns - 10**10))

    # Then the references in it are found on their new lines
    refs = (await ok("find_references", **args))["references"]
    assert [(r["path"], r["line"]) for r in refs if r["path"] == "shop/service.py"] == [
        ("shop/service.py", 16),
        ("shop/service.py", 22),
    ]
    assert _texts(shop, refs) == {"fmt_price"}


# ------------------------------------------------------------------------------------------
# refactor_code_at_location: rename


async def test_rename_across_modules_and_notebook(
    shop: Path, ok, jp_serverapp: Any, mcp_app: Any
) -> None:
    written: list[str] = []
    mcp_app.tool_context.services.on_file_written = lambda p: written.append(Path(p).name)
    before_nb = nbformat.read(shop / "analysis.ipynb", as_version=4)
    line, character = _find(shop, "shop/util.py", "fmt_price")

    # When fmt_price is renamed
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/util.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "format_price"},
    )

    # Then every file using it changed, and nothing else
    assert result["success"] is True
    assert "format_price" in result["message"]
    assert result["changedFiles"] == ["analysis.ipynb", "shop/service.py", "shop/util.py"]
    assert result["edits"] == 4
    assert sorted(written) == ["analysis.ipynb", "service.py", "util.py"]
    assert "def format_price(" in (shop / "shop/util.py").read_text()
    service = (shop / "shop/service.py").read_text()
    assert "fmt_price" not in service and service.count("u.format_price(") == 2
    # And the package still works, and so does the notebook, run cell by cell
    assert (
        json.loads(
            _run_python(shop, "import json, shop.service as s; print(json.dumps(s.price_list()))")
        )
        == EXPECTED_PRICES
    )
    assert _run_notebook(shop) == NOTEBOOK_OUTPUT
    # And the notebook kept its cells and the outputs of cells that did not change
    after_nb = nbformat.read(shop / "analysis.ipynb", as_version=4)
    assert [c.id for c in after_nb.cells] == [c.id for c in before_nb.cells]
    assert after_nb.cells[2].source == "items = catalogue()\nprint(u.format_price(items[0].price))"
    assert after_nb.cells[3] == before_nb.cells[3]
    assert after_nb.cells[1] == before_nb.cells[1]  # the magic cell is untouched
    assert after_nb.cells[2].outputs == before_nb.cells[2].outputs


async def test_rename_reports_magic_lines_it_cannot_change(shop: Path, ok) -> None:
    # Given a notebook that also uses fmt_price inside an IPython magic
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import shop.util as u\n%timeit u.fmt_price(1)\nu.fmt_price(2)")
    ]
    nbformat.write(nb, shop / "timing.ipynb")
    line, character = _find(shop, "shop/util.py", "fmt_price")

    # When fmt_price is renamed
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/util.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "format_price"},
    )

    # Then the code line changed, and the magic line is reported, not silently skipped
    assert "timing.ipynb" in result["changedFiles"]
    assert result["notChanged"] == ["timing.ipynb line 2"]
    assert "timing.ipynb line 2" in result["message"]
    source = nbformat.read(shop / "timing.ipynb", as_version=4).cells[0].source
    assert source == "import shop.util as u\n%timeit u.fmt_price(1)\nu.format_price(2)"


async def test_rename_a_method_and_a_property(shop: Path, ok) -> None:
    line, character = _find(shop, "shop/models.py", "def discounted")
    await ok(
        "refactor_code_at_location",
        pathInProject="shop/models.py",
        line=line,
        character=character + 4,
        refactorType="rename",
        options={"newName": "sale_price"},
    )
    line, character = _find(shop, "shop/models.py", "def price")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/models.py",
        line=line,
        character=character + 4,
        refactorType="rename",
        options={"newName": "cost"},
    )
    assert result["changedFiles"] == ["analysis.ipynb", "shop/models.py", "shop/service.py"]
    out = _run_python(
        shop,
        """
        import shop.service as s
        from shop.models import Product
        print(s.checkout(s.catalogue()), Product("x", 10).cost, Product("x", 10).sale_price(0.5))
        """,
    )
    assert out.split() == ["15.60", "EUR", "10", "5.0"]
    assert _run_notebook(shop) == NOTEBOOK_OUTPUT


async def test_rename_an_alias_stays_in_its_file(shop: Path, ok) -> None:
    line, character = _find(shop, "analysis.ipynb", "as u")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="analysis.ipynb",
        line=line,
        character=character + 3,
        refactorType="rename",
        options={"newName": "util"},
    )
    assert result["changedFiles"] == ["analysis.ipynb"]
    assert result["edits"] == 2
    assert (shop / "shop/service.py").read_text() == SERVICE
    assert _run_notebook(shop) == NOTEBOOK_OUTPUT


async def test_rename_started_in_the_notebook_reaches_the_module(shop: Path, ok) -> None:
    # checkout is defined in service.py, imported and called in the notebook
    line, character = _find(shop, "analysis.ipynb", "checkout(items)")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="analysis.ipynb",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "pay"},
    )
    assert result["changedFiles"] == ["analysis.ipynb", "shop/service.py"]
    assert result["edits"] == 3
    assert "def pay(products) -> str:" in (shop / "shop/service.py").read_text()
    nb = nbformat.read(shop / "analysis.ipynb", as_version=4)
    assert nb.cells[1].source.endswith("from shop.service import catalogue, pay")
    assert nb.cells[3].source == "pay(items)"
    assert _run_notebook(shop) == NOTEBOOK_OUTPUT


@pytest.mark.parametrize(
    ("needle", "offset", "new_name", "message"),
    [
        ("fmt_price", 0, "1st", "not a valid Python identifier"),
        ("fmt_price", 0, "class", "is a Python keyword"),
        ("fmt_price", 0, "", "options.newName is required"),
        ("fmt_price", 0, "total", "total is already defined in the module (shop/util.py"),
        ("fmt_price", 0, "fmt_price", "already called fmt_price"),
        ("value: float", 0, "currency", "currency is already defined in function fmt_price"),
        ("str = ", 0, "text", "defined outside the project"),
    ],
)
async def test_rename_refusals_leave_files_untouched(
    shop: Path, fails, needle: str, offset: int, new_name: str, message: str
) -> None:
    before = _snapshot(shop)
    line, character = _find(shop, "shop/util.py", needle)
    error = await fails(
        "refactor_code_at_location",
        pathInProject="shop/util.py",
        line=line,
        character=character + offset,
        refactorType="rename",
        options={"newName": new_name},
    )
    assert message in error
    assert _snapshot(shop) == before


async def test_rename_refuses_a_name_taken_in_the_class(shop: Path, fails) -> None:
    before = _snapshot(shop)
    line, character = _find(shop, "shop/models.py", "def describe", occurrence=1)
    error = await fails(
        "refactor_code_at_location",
        pathInProject="shop/models.py",
        line=line,
        character=character + 4,
        refactorType="rename",
        options={"newName": "discounted"},
    )
    assert "discounted is already defined in class Product" in error
    assert _snapshot(shop) == before


async def test_rename_refuses_a_name_taken_where_it_is_imported(shop: Path, fails) -> None:
    # service.py and the notebook import Product and catalogue: Product -> catalogue would clash
    before = _snapshot(shop)
    line, character = _find(shop, "shop/models.py", "class Product")
    error = await fails(
        "refactor_code_at_location",
        pathInProject="shop/models.py",
        line=line,
        character=character + 6,
        refactorType="rename",
        options={"newName": "catalogue"},
    )
    assert "catalogue is already defined in the module (" in error
    assert "(analysis.ipynb, line 7" in error or "(shop/service.py, line 6" in error
    assert _snapshot(shop) == before


async def test_a_failed_write_restores_every_file(shop: Path, fails, monkeypatch) -> None:
    # Given a disk that fails on the second file of a rename
    from jupyter_mcp.documents.files import Transaction

    real_write = Transaction.write
    calls: list[str] = []

    def flaky(tx: Transaction, path: Path, shown: str, text: str, **kw: Any) -> bool:
        calls.append(shown)
        if len(calls) == 2:
            raise OSError("disk full")
        return real_write(tx, path, shown, text, **kw)

    monkeypatch.setattr(Transaction, "write", flaky)
    before = _snapshot(shop)
    line, character = _find(shop, "shop/util.py", "fmt_price")

    # When the rename is attempted
    error = await fails(
        "refactor_code_at_location",
        pathInProject="shop/util.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "format_price"},
    )

    # Then it fails, the first file written was restored, and nothing changed
    assert "disk full" in error and "no file was changed" in error
    assert len(calls) == 2
    assert _snapshot(shop) == before


async def test_a_file_refused_for_writing_stops_the_whole_rename(
    shop: Path, fails, mcp_app: Any
) -> None:
    from jupyter_mcp.core.errors import ToolError

    def guard(path: Path) -> None:
        if Path(path).name == "service.py":
            raise ToolError("shop/service.py has unsaved changes in JupyterLab")

    mcp_app.tool_context.services.before_file_write = guard
    before = _snapshot(shop)
    line, character = _find(shop, "shop/util.py", "fmt_price")
    error = await fails(
        "refactor_code_at_location",
        pathInProject="shop/util.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "format_price"},
    )
    assert "unsaved changes" in error
    assert _snapshot(shop) == before


# ------------------------------------------------------------------------------------------
# refactor_code_at_location: extract and inline


async def test_extract_variable(shop: Path, ok) -> None:
    line, character = _find(shop, "shop/service.py", "items[:MAX_ITEMS]")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/service.py",
        line=line,
        character=character,
        refactorType="extract_variable",
        options={"newName": "head", "endLine": line, "endCharacter": character + 17},
    )
    assert result["changedFiles"] == ["shop/service.py"]
    text = (shop / "shop/service.py").read_text()
    assert "    head = items[:MAX_ITEMS]\n    return head\n" in text
    out = _run_python(shop, "import json, shop.service as s; print(json.dumps(s.price_list()))")
    assert json.loads(out) == EXPECTED_PRICES


async def test_extract_function(shop: Path, ok) -> None:
    # round(self.price * (1 - rate), 2): extract "(1 - rate)"
    line, character = _find(shop, "shop/models.py", "(1 - rate)")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/models.py",
        line=line,
        character=character,
        refactorType="extract_function",
        options={"newName": "keep", "endLine": line, "endCharacter": character + 10},
    )
    assert result["changedFiles"] == ["shop/models.py"]
    text = (shop / "shop/models.py").read_text()
    assert "def keep(" in text and "keep(rate)" in text
    out = _run_python(
        shop,
        """
        import shop.service as s
        from shop.models import Product
        print(s.checkout(s.catalogue()), Product("x", 10).discounted(0.5))
        """,
    )
    assert out.split() == ["15.60", "EUR", "5.0"]


async def test_inline_a_variable(shop: Path, ok) -> None:
    line, character = _find(shop, "shop/service.py", "amount =")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/service.py",
        line=line,
        character=character,
        refactorType="inline",
    )
    assert result["changedFiles"] == ["shop/service.py"]
    text = (shop / "shop/service.py").read_text()
    assert "amount" not in text
    assert "return u.fmt_price(u.total(p.discounted(0.2) for p in products))" in text
    out = _run_python(shop, "import shop.service as s; print(s.checkout(s.catalogue()))")
    assert out.strip() == "15.60 EUR"


async def test_inline_in_a_notebook_keeps_magics_and_runs(shop: Path, ok) -> None:
    line, character = _find(shop, "analysis.ipynb", "items =")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="analysis.ipynb",
        line=line,
        character=character,
        refactorType="inline",
    )
    assert result["changedFiles"] == ["analysis.ipynb"]
    nb = nbformat.read(shop / "analysis.ipynb", as_version=4)
    assert nb.cells[1].source.startswith("%matplotlib inline\n")
    assert nb.cells[3].source == "checkout(catalogue())"
    assert _run_notebook(shop) == NOTEBOOK_OUTPUT


async def test_extract_in_a_notebook(shop: Path, ok) -> None:
    line, character = _find(shop, "analysis.ipynb", "items[0].price")
    await ok(
        "refactor_code_at_location",
        pathInProject="analysis.ipynb",
        line=line,
        character=character,
        refactorType="extract_variable",
        options={"newName": "first_price", "endLine": line, "endCharacter": character + 14},
    )
    nb = nbformat.read(shop / "analysis.ipynb", as_version=4)
    assert nb.cells[2].source == (
        "items = catalogue()\nfirst_price = items[0].price\nprint(u.fmt_price(first_price))"
    )
    assert _run_notebook(shop) == NOTEBOOK_OUTPUT


async def test_refactor_argument_errors(shop: Path, fails) -> None:
    base = {"pathInProject": "shop/service.py", "line": 8, "character": 11}
    error = await fails("refactor_code_at_location", **base, refactorType="explode")
    assert "Unknown refactorType 'explode'" in error
    assert "rename, extract_variable, extract_function, inline" in error
    assert "options.newName is required" in await fails(
        "refactor_code_at_location", **base, refactorType="rename"
    )
    assert "missing required field 'refactorType'" in await fails(
        "refactor_code_at_location", **base
    )
    assert "must be a string" in await fails(
        "refactor_code_at_location", **base, refactorType="rename", options={"newName": 3}
    )
    assert "unknown field 'options.name'" in await fails(
        "refactor_code_at_location", **base, refactorType="rename", options={"name": "x"}
    )
    assert "must be given together" in await fails(
        "refactor_code_at_location",
        **base,
        refactorType="extract_variable",
        options={"newName": "x", "endLine": 8},
    )
    assert "ends (line 8, character 2) before it starts" in await fails(
        "refactor_code_at_location",
        **base,
        refactorType="extract_variable",
        options={"newName": "x", "endLine": 8, "endCharacter": 2},
    )
    assert "failed: " in await fails(
        "refactor_code_at_location",
        pathInProject="shop/service.py",
        line=1,
        character=0,
        refactorType="inline",
    )


async def test_a_slow_analysis_is_stopped_with_a_clear_error(
    shop: Path, ok, fails, mcp_app: Any
) -> None:
    # Given a server whose code_timeout is far too short for any analysis
    mcp_app.code_timeout = 1e-6
    line, character = _find(shop, "shop/util.py", "fmt_price")

    # When references are asked for, the call fails and says why
    error = await fails(
        "find_references", pathInProject="shop/util.py", line=line, character=character
    )
    assert "did not finish within 1e-06 s" in error and "code_timeout" in error
    assert "stopped" in error

    # And with the usual limit the next call starts a fresh analysis and answers
    mcp_app.code_timeout = 30.0
    refs = await ok("find_references", pathInProject="shop/util.py", line=line, character=character)
    assert len(refs["references"]) == 4


# ------------------------------------------------------------------------------------------
# Neutralising IPython syntax


def test_neutralise_comments_ipython_lines_without_moving_text() -> None:
    text = "%time f()\nx = 1\n  !ls\nobj?\ny = (2\n% 3)\nz = a != b\n"
    result = neutralise(text)
    assert [len(a) for a in result.split("\n")] == [len(b) for b in text.split("\n")]
    assert result.split("\n")[:4] == ["#time f()", "x = 1", "  #ls", "#bj?"]
    assert result.split("\n")[4:] == ["y = (2", "% 3)", "z = a != b", ""]


# ------------------------------------------------------------------------------------------
# The kernel's interpreter


def test_the_kernel_interpreter_is_used_when_it_is_another_one(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from jupyter_mcp.code.client import kernel_python
    from jupyter_mcp.core.context import ToolContext

    other = tmp_path / "python3.99"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)

    def ctx_with(argv: list[str], language: str = "python") -> ToolContext:
        spec = SimpleNamespace(argv=argv, language=language)
        app = SimpleNamespace(
            kernel_spec_manager=SimpleNamespace(get_kernel_spec=lambda name: spec),
            kernel_manager=SimpleNamespace(default_kernel_name="python3"),
        )
        return ToolContext(root_dir=tmp_path, serverapp=app)

    assert kernel_python(ctx_with([str(other), "-m", "ipykernel_launcher"])) == str(other)
    assert kernel_python(ctx_with(["python", "-m", "ipykernel_launcher"])) is None
    assert kernel_python(ctx_with([sys.executable, "-m", "ipykernel_launcher"])) is None
    assert kernel_python(ctx_with([str(tmp_path / "missing")])) is None
    assert kernel_python(ctx_with([str(other)], language="R")) is None
    assert kernel_python(ToolContext(root_dir=tmp_path)) is None


def test_an_unusable_kernel_interpreter_falls_back_to_the_servers(tmp_path: Path) -> None:
    from jupyter_mcp.code.engine import Engine

    engine = Engine(tmp_path, environment_path=str(tmp_path / "no-such-python"))
    assert engine.project.get_environment().executable == sys.executable


# ------------------------------------------------------------------------------------------
# Which files take part: the project walk


REPORT = "import shop.util as u\n\nprint(u.fmt_price(1.0))\n"


async def test_ignored_copies_are_neither_referenced_nor_renamed(shop: Path, ok) -> None:
    # Given a git-ignored build copy of the package and an ignored script using fmt_price,
    # next to a script the rules do not ignore that uses it the same way
    (shop / ".gitignore").write_text("build/\n")
    copy = shop / "build" / "lib" / "shop"
    copy.mkdir(parents=True)
    for name in ("__init__.py", "models.py", "util.py", "service.py"):
        (copy / name).write_bytes((shop / "shop" / name).read_bytes())
    (shop / "build" / "report.py").write_text(REPORT)
    (shop / "scripts").mkdir()
    (shop / "scripts" / "report.py").write_text(REPORT)
    ignored_before = {p: p.read_bytes() for p in (shop / "build").rglob("*.py")}
    line, character = _find(shop, "shop/util.py", "fmt_price")

    # When the references of fmt_price are found
    refs = (
        await ok("find_references", pathInProject="shop/util.py", line=line, character=character)
    )["references"]

    # Then the script counts and nothing under build/ does
    paths = {r["path"] for r in refs}
    assert paths == {"analysis.ipynb", "scripts/report.py", "shop/service.py", "shop/util.py"}

    # And the references of a class defined in the copied models do not reach the copy
    line, character = _find(shop, "shop/models.py", "class Product")
    refs = (
        await ok(
            "find_references", pathInProject="shop/models.py", line=line, character=character + 6
        )
    )["references"]
    assert refs and not [r for r in refs if r["path"].startswith("build/")]

    # When fmt_price is renamed
    line, character = _find(shop, "shop/util.py", "fmt_price")
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/util.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "format_price"},
    )

    # Then the script changed and the ignored files did not
    assert result["changedFiles"] == [
        "analysis.ipynb",
        "scripts/report.py",
        "shop/service.py",
        "shop/util.py",
    ]
    assert "u.format_price(1.0)" in (shop / "scripts" / "report.py").read_text()
    assert {p: p.read_bytes() for p in (shop / "build").rglob("*.py")} == ignored_before


async def test_a_link_leading_outside_the_project_is_not_analysed_or_written(
    shop: Path, ok, fails, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # Given a module inside the project that is a symlink to a file outside it
    outside = tmp_path_factory.mktemp("elsewhere") / "theirs.py"
    outside.write_text(REPORT)
    (shop / "linked.py").symlink_to(outside)
    line, character = _find(shop, "shop/util.py", "fmt_price")

    # When fmt_price's references are found and it is renamed
    refs = (
        await ok("find_references", pathInProject="shop/util.py", line=line, character=character)
    )["references"]
    result = await ok(
        "refactor_code_at_location",
        pathInProject="shop/util.py",
        line=line,
        character=character,
        refactorType="rename",
        options={"newName": "format_price"},
    )

    # Then the link is neither reported nor written, and stays a link to the untouched file
    assert "linked.py" not in {r["path"] for r in refs}
    assert "linked.py" not in result["changedFiles"]
    assert (shop / "linked.py").is_symlink()
    assert outside.read_text() == REPORT

    # And the file itself cannot be analysed through the link
    error = await fails("get_symbols_in_file", pathInProject="linked.py")
    assert "outside the project" in error


def test_changes_are_written_to_the_real_file_behind_a_link(shop: Path, mcp_app: Any) -> None:
    from jupyter_mcp.code.client import apply_changes
    from jupyter_mcp.core.errors import ToolError

    ctx = mcp_app.tool_context
    util = shop / "shop" / "util.py"
    (shop / "util_link.py").symlink_to(util)
    outside = shop.parent / "outside_target.py"
    outside.write_text(UTIL)
    (shop / "out_link.py").symlink_to(outside)
    locked: list[Path] = []
    real_locks = ctx.locks

    def recording_locks(path: Path) -> Any:
        locked.append(Path(path))
        return real_locks(path)

    ctx.locks = recording_locks
    try:
        # A change computed for the link's path is written to the file it leads to
        apply_changes(
            ctx,
            {shop / "util_link.py": ("util_link.py", UTIL, UTIL + "\nX = 1\n")},
        )
        assert locked == [util]
        assert (shop / "util_link.py").is_symlink()
        assert util.read_text() == UTIL + "\nX = 1\n"

        # And one for a link leading outside the project is refused with nothing written
        with pytest.raises(ToolError, match="out_link.py leads outside the project"):
            apply_changes(
                ctx,
                {
                    util: ("shop/util.py", UTIL + "\nX = 1\n", UTIL),
                    shop / "out_link.py": ("out_link.py", UTIL, UTIL + "\nY = 2\n"),
                },
            )
        assert util.read_text() == UTIL + "\nX = 1\n"
        assert outside.read_text() == UTIL and (shop / "out_link.py").is_symlink()
    finally:
        ctx.locks = real_locks
