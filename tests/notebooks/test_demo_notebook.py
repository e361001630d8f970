"""notebooks/demo.ipynb, executed end to end with nbclient, in both kernels.

Under ipykernel the extension is loaded with %load_ext; the interp-rpc kernel
loads it at startup. The assertions read what a user would see: the
renderings' MIME types, the path inside the shareability tree, the remote
error's type name, live status updates while a slow map runs, and the
profile's SVG timeline.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


class CountingClient(NotebookClient):
    """Counts update_display_data messages per cell. nbclient only hands a
    cell the messages whose parent is that cell's request, so these counts
    also prove the live view's messages carry the right parent header."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.updates: dict[int, int] = {}

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg["msg_type"] == "update_display_data":
            self.updates[cell_index] = self.updates.get(cell_index, 0) + 1
        return super().process_message(msg, cell, cell_index)


def execute_demo(kernel_name: str) -> tuple[Any, dict[int, int], int]:
    """(executed notebook, update counts per cell, offset of the demo's cells)."""
    nb = nbformat.read(NOTEBOOKS / "demo.ipynb", as_version=4)
    nb = copy.deepcopy(nb)
    offset = 0
    if kernel_name != "interp-rpc":
        nb.cells.insert(0, nbformat.v4.new_code_cell("%load_ext interp_rpc"))
        offset = 1
    client = CountingClient(nb, kernel_name=kernel_name, timeout=120,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    return nb, client.updates, offset


def cell_with(nb: Any, text: str) -> tuple[int, Any]:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and text in cell.source:
            return index, cell
    raise AssertionError(f"no cell contains {text!r}")


def mime_types(cell: Any) -> set[str]:
    return {mime for out in cell.outputs for mime in out.get("data", {})}


@pytest.fixture(scope="module", params=["python3", "interp-rpc"])
def executed(request: pytest.FixtureRequest) -> tuple[Any, dict[int, int]]:
    nb, updates, _ = execute_demo(request.param)
    return nb, updates


def test_speedup_cell_runs_the_map_and_shows_live_status(executed: Any) -> None:
    nb, _ = executed
    _, cell = cell_with(nb, "count_primes [N] * TASKS")
    text = "".join(out.get("text", "") for out in cell.outputs)
    assert "faster on 2 workers" in text
    assert {"text/html", "text/plain"} <= mime_types(cell)
    html = "".join(out.get("data", {}).get("text/html", "") for out in cell.outputs)
    assert "interp-rpc-status" in html and "interp-rpc-progress" in html


def test_remote_error_is_rendered_with_its_type_name(executed: Any) -> None:
    nb, _ = executed
    _, cell = cell_with(nb, "checked_sqrt")
    (error,) = [out for out in cell.outputs if out.output_type == "error"]
    assert error.ename == "RemoteError"
    traceback = "\n".join(error.traceback)
    assert "NegativeInputError" in traceback
    assert "item 2" in traceback  # the header names the failing item


def test_shareability_error_shows_the_path_in_a_tree(executed: Any) -> None:
    nb, _ = executed
    _, cell = cell_with(nb, "threading.Lock()")
    (error,) = [out for out in cell.outputs if out.output_type == "error"]
    assert error.ename == "ShareabilityError"
    html = "".join(out.get("data", {}).get("text/html", "") for out in cell.outputs)
    assert "interp-rpc-shareability" in html
    assert "interp-rpc-culprit" in html
    assert "[&#x27;handle&#x27;]" in html  # the culprit's own segment, highlighted
    plain = "".join(out.get("data", {}).get("text/plain", "") for out in cell.outputs)
    assert "['handle']  ◀" in plain


def test_slow_map_updates_its_status_live_and_flags_the_stuck_worker(executed: Any) -> None:
    nb, updates = executed
    index, cell = cell_with(nb, "demo_work.nap")
    assert updates.get(index, 0) > 1, "the status of a 2.5 s map was not updated while it ran"
    html = "".join(out.get("data", {}).get("text/html", "") for out in cell.outputs)
    assert "interp-rpc-progress" in html


def test_profile_shows_an_svg_timeline(executed: Any) -> None:
    nb, _ = executed
    _, cell = cell_with(nb, "%parallel_profile")
    assert "image/svg+xml" in mime_types(cell)
    svg = "".join(out.get("data", {}).get("image/svg+xml", "") for out in cell.outputs)
    assert "interp-rpc-gantt" in svg and "worker 1" in svg
