"""The %parallel magics as a notebook runs them, in both kernels (nbclient):
what users type, and what the frontend receives for errors."""

from __future__ import annotations

import re
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

ANSI = re.compile(r"\x1b\[[0-9;]*m")

CELLS = {
    "init": "%parallel_pool -n 2 --init \"FLAG = 'a  b'; import math\"",
    "define": "%%parallel\ndef glob(x):\n    return FLAG + x\n",
    "map": 'glued = %parallel_map glob ["  x  y"]\nprint(glued)',
    "help": "%parallel_map --help",
    "usage": "%parallel_map glob 1/0",
    "cell_error": "%%parallel\nprint('before')\nraise ValueError('in every worker')\n",
    "tree": "import threading\n%parallel_map len [{'h': threading.Lock()}]",
    "remote": "%%parallel\ndef boom(x):\n    raise KeyError(x)\n",
    "remote_call": "first = 1\n%parallel_map boom ['k']",
    "statement": "%parallel print(FLAG)",
    "chatty_def": "%%parallel\ndef chatty(x):\n    print('chatty', x)\n    return x\n",
    "chatty": "%parallel_map --chunksize 1 chatty [0, 1, 2]",
    "collect": "%parallel_map --errors=collect boom ['a', 'b']",
}


def run_notebook(kernel_name: str) -> dict[str, Any]:
    nb = nbformat.v4.new_notebook()
    if kernel_name != "interp-rpc":
        nb.cells.append(nbformat.v4.new_code_cell("%load_ext interp_rpc"))
    for source in CELLS.values():
        nb.cells.append(nbformat.v4.new_code_cell(source))
    NotebookClient(nb, kernel_name=kernel_name, timeout=120, allow_errors=True).execute()
    by_source = {cell.source: cell for cell in nb.cells}
    return {name: by_source[source] for name, source in CELLS.items()}


@pytest.fixture(scope="module", params=["python3", "interp-rpc"])
def cells(request: pytest.FixtureRequest) -> dict[str, Any]:
    return run_notebook(request.param)


def stream(cell: Any) -> str:
    return "".join(out.get("text", "") for out in cell.outputs if out.output_type == "stream")


def error(cell: Any) -> tuple[str, str]:
    (out,) = [out for out in cell.outputs if out.output_type == "error"]
    return out.ename, ANSI.sub("", "\n".join(out.traceback))


def test_init_ran_and_items_and_names_are_the_users(cells: dict[str, Any]) -> None:
    assert stream(cells["map"]) == "['a  b  x  y']\n"
    assert stream(cells["statement"]) == "[workers 0-1]\na  b\n"


def test_help_prints_the_usage(cells: dict[str, Any]) -> None:
    assert stream(cells["help"]).startswith("usage: %parallel_map")


def test_a_bad_items_expression_is_a_one_line_usage_error(cells: dict[str, Any]) -> None:
    # IPython shows a UsageError as one line on stderr, with no traceback.
    assert ANSI.sub("", stream(cells["usage"])) == (
        "UsageError: ITEMS '1/0' raised ZeroDivisionError: division by zero\n")
    assert not [out for out in cells["usage"].outputs if out.output_type == "error"]


def test_a_cell_error_in_every_worker_is_shown_once(cells: dict[str, Any]) -> None:
    ename, text = error(cells["cell_error"])
    assert ename == "ParallelCellError"
    assert text.count("ValueError: in every worker") == 1, text
    assert "RemoteError in workers 0-1 · %%parallel" in text
    assert stream(cells["cell_error"]) == "[workers 0-1]\nbefore\n"


def test_the_shareability_tree_is_shown_once(cells: dict[str, Any]) -> None:
    ename, text = error(cells["tree"])
    assert ename == "ShareabilityError"
    shown = text + "".join(str(out.get("data", "")) for out in cells["tree"].outputs)
    assert shown.count("── ['h']") == 1, shown  # the tree's culprit line


def test_a_remote_error_keeps_the_cell_line_that_made_the_call(cells: dict[str, Any]) -> None:
    ename, text = error(cells["remote_call"])
    # KeyError resolves in the caller: the error is both a RemoteError and a KeyError.
    assert ename == "RemoteError[KeyError]"
    assert re.search(r"Cell In\[\d+\], line 2", text), text
    assert text.count("KeyError: 'k'") == 1, text
    # The remote frame is the %%parallel cell's third line, named as IPython does.
    assert re.search(r"Cell In\[\d+\], line 3, in boom\n\s+raise KeyError\(x\)", text), text


def test_what_workers_print_in_a_map_shows_in_the_cell_by_worker_and_item(
        cells: dict[str, Any]) -> None:
    shown = stream(cells["chatty"])
    for item in range(3):
        assert re.search(rf"\[worker \d, item {item}\]\nchatty {item}\n", shown), shown


def test_errors_collect_returns_the_failures_in_place(cells: dict[str, Any]) -> None:
    cell = cells["collect"]
    assert not [out for out in cell.outputs if out.output_type == "error"]
    assert "2 of 2 items failed (items 0, 1: RemoteError[KeyError])" in stream(cell)
    (result,) = [out for out in cell.outputs if out.output_type == "execute_result"]
    assert result.data["text/plain"].count("KeyError") >= 2
