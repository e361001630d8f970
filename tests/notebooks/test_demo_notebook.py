"""notebooks/demo.ipynb, executed end to end with nbclient, in both kernels.

Under ipykernel the extension is loaded with %load_ext; the interp-rpc kernel
loads it at startup. The assertions read what a user would see: the
renderings' MIME types, the path inside the shareability tree, the remote
error's type name, live status updates while a slow map runs, and the
profile's SVG timeline.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


class CountingClient(NotebookClient):
    """Keeps the update_display_data messages of each cell. nbclient only
    hands a cell the messages whose parent is that cell's request, so these
    also prove the live view's messages carry the right parent header."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.updates: dict[int, list[dict[str, Any]]] = {}
        self.displays: dict[int, list[dict[str, Any]]] = {}

    def process_message(self, msg: dict[str, Any], cell: Any, cell_index: int) -> Any:
        if msg["msg_type"] == "update_display_data":
            self.updates.setdefault(cell_index, []).append(msg["content"]["data"])
        if msg["msg_type"] == "display_data":
            self.displays.setdefault(cell_index, []).append(msg["content"]["data"])
        return super().process_message(msg, cell, cell_index)


Frames = dict[int, list[dict[str, Any]]]


def execute_demo(kernel_name: str) -> tuple[Any, Frames, Frames, int]:
    """(executed notebook, updates and displays per cell, offset of the demo's cells)."""
    nb = nbformat.read(NOTEBOOKS / "demo.ipynb", as_version=4)
    nb = copy.deepcopy(nb)
    offset = 0
    if kernel_name != "interp-rpc":
        nb.cells.insert(0, nbformat.v4.new_code_cell("%load_ext interp_rpc"))
        offset = 1
    client = CountingClient(nb, kernel_name=kernel_name, timeout=120,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    return nb, client.updates, client.displays, offset


def cell_with(nb: Any, text: str) -> tuple[int, Any]:
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and text in cell.source:
            return index, cell
    raise AssertionError(f"no cell contains {text!r}")


def mime_types(cell: Any) -> set[str]:
    return {mime for out in cell.outputs for mime in out.get("data", {})}


@pytest.fixture(scope="module", params=["python3", "interp-rpc"])
def executed(request: pytest.FixtureRequest) -> tuple[Any, Frames, Frames]:
    nb, updates, displays, _ = execute_demo(request.param)
    return nb, updates, displays


def test_speedup_cell_runs_the_map_and_shows_live_status(executed: Any) -> None:
    nb, _, displays = executed
    _, cell = cell_with(nb, "count_primes [N] * TASKS")
    text = "".join(out.get("text", "") for out in cell.outputs)
    # The measured figure, whatever it is: no fixed word claims a speed-up.
    figure = re.search(r"serial ([0-9.]+) s, parallel ([0-9.]+) s on 2 workers: "
                       r"speed-up ([0-9.]+)x", text)
    assert figure is not None, text
    assert "faster" not in text
    # While it ran: the status table and progress; once done: one line.
    index, _ = cell_with(nb, "count_primes [N] * TASKS")
    first = "".join(frame.get("text/html", "") for frame in displays.get(index, []))
    assert "interp-rpc-status" in first and "interp-rpc-progress" in first
    (final,) = [out for out in cell.outputs if out.output_type == "display_data"]
    assert "interp-rpc-summary" in final.data["text/html"]
    assert re.fullmatch(r"demo_work\.count_primes: 8 of 8 items in [0-9.]+ s on 2 workers, "
                        r"[0-9.]+ items/s", final.data["text/plain"]), final.data


def test_remote_error_is_rendered_with_its_type_name(executed: Any) -> None:
    nb, _, _ = executed
    _, cell = cell_with(nb, "checked_sqrt")
    (error,) = [out for out in cell.outputs if out.output_type == "error"]
    assert error.ename == "RemoteError"
    traceback = "\n".join(error.traceback)
    assert "NegativeInputError" in traceback
    assert "item 2" in traceback  # the header names the failing item


def test_shareability_error_shows_the_path_in_a_tree_once(executed: Any) -> None:
    nb, _, _ = executed
    _, cell = cell_with(nb, "threading.Lock()")
    (error,) = [out for out in cell.outputs if out.output_type == "error"]
    assert error.ename == "ShareabilityError"
    shown = "\n".join(error.traceback) + "".join(
        str(out.get("data", "")) for out in cell.outputs)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert plain.count("── ['handle']") == 1, plain  # the tree's culprit line, once
    assert "['handle']  ◀ lock" in plain


def test_slow_map_updates_its_status_live_and_flags_the_stuck_worker(executed: Any) -> None:
    nb, updates, _ = executed
    index, _ = cell_with(nb, "demo_work.nap")
    frames = updates.get(index, [])
    assert len(frames) > 1, "the status of a 2.5 s map was not updated while it ran"
    assert any("interp-rpc-progress" in frame.get("text/html", "") for frame in frames)
    # The 2.5 s item outlives --stuck-after 1: some frame while it ran says so.
    assert any("stuck" in frame.get("text/plain", "") for frame in frames), frames


def test_profile_shows_an_svg_timeline(executed: Any) -> None:
    nb, _, _ = executed
    _, cell = cell_with(nb, "%parallel_profile")
    assert "image/svg+xml" in mime_types(cell)
    svg = "".join(out.get("data", {}).get("image/svg+xml", "") for out in cell.outputs)
    assert "interp-rpc-gantt" in svg and "worker 1" in svg
