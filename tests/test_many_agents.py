"""A short run of ``benchmarks/bench_agents.py``: many agents at once, each answer right.

Agents running cells, each in its own notebook and kernel (both protocol eras), beside agents
on files, search and git, while the user's JupyterLab window (real, in Chromium) and the
user's scripted requests keep asking the server: every call answers, every output is in its
own agent's answers and notebook file, the user's requests and window get no error. Counts
are asserted, never times (the benchmark prints those).
"""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from bench_agents import USER_RUN, run  # noqa: E402


def test_many_agents_get_every_answer_and_every_output_in_their_own_notebook() -> None:
    outcome = run(
        ["--cell-agents", "4", "--cells", "3", "--other-agents", "4"]
        + ["--files", "20", "--idle", "3", "--settle", "1"]
    )
    assert outcome.problems == []
    calls = {tool: len(samples) for tool, samples in outcome.tally.samples.items()}
    # Every cell of every cell agent was inserted, run and read back, in both eras
    for tool in ("insert_notebook_cell", "execute_notebook_cells", "get_notebook_cell"):
        assert calls[tool] == 4 * 3, calls
    assert outcome.checked == 4 * 3
    # The other agents' calls ran alongside
    for tool in ("get_file_text_by_path", "search_in_files_content", "get_project_vcs_status"):
        assert calls.get(tool, 0) >= 1, calls
    # The user was there throughout: the scripted requests and the window's cell runs
    assert all(outcome.busy[label] for label in outcome.busy)
    assert outcome.window is not None
    assert outcome.window.samples["idle"][USER_RUN]
