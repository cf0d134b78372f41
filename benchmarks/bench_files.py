"""get_file_text_by_path over seed REST versus the server's own contents API.

Both go to the same server over one keep-alive connection each, alternating call by call,
so the figures share the machine's state. Target: REST p50 at most half of the
contents API's.

    .venv/bin/python benchmarks/bench_files.py [--calls 500]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
from _server import jupyter_server, percentiles  # noqa: E402


def make_files(root: Path) -> None:
    (root / "module.py").write_text(
        "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(300))
    )
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i in range(40):
        nb.cells.append(nbformat.v4.new_markdown_cell(f"## Step {i}\nSome explanation."))
        nb.cells.append(
            nbformat.v4.new_code_cell(
                f"x{i} = {i}\nprint(x{i})",
                outputs=[nbformat.v4.new_output("stream", name="stdout", text=f"{i}\n")],
            )
        )
    nbformat.write(nb, root / "analysis.ipynb")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, jupyter_server(Path(tmp)) as server:
        make_files(Path(tmp))
        rest, contents = server.connection(), server.connection()
        print(f"{'file':<16} {'client':<40} {'p50 ms':>8} {'p99 ms':>8}")
        for name in ("module.py", "analysis.ipynb"):
            ours: list[float] = []
            theirs: list[float] = []
            for i in range(args.calls + 20):
                t0 = time.perf_counter()
                server.call(rest, "get_file_text_by_path", pathInProject=name)
                t1 = time.perf_counter()
                code, _ = server.request(contents, "GET", f"/api/contents/{name}?content=1")
                t2 = time.perf_counter()
                assert code == 200
                if i >= 20:  # warm-up
                    ours.append(t1 - t0)
                    theirs.append(t2 - t1)
            for label, samples in (
                ("seed REST POST /mcp/get_file_text_by_path", ours),
                ("GET /api/contents/<file> (reference)", theirs),
            ):
                p50, p99 = percentiles(samples)
                print(f"{name:<16} {label:<40} {p50:8.2f} {p99:8.2f}")
            ratio = percentiles(ours)[0] / percentiles(theirs)[0]
            print(f"{name:<16} {'ratio of p50 (target <= 0.5)':<40} {ratio:8.2f}")


if __name__ == "__main__":
    main()
