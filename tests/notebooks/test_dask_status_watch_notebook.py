"""%parallel_status --watch on a dask LocalCluster, as a notebook runs it in
both kernels (nbclient): the table is updated in place from the background,
by messages that belong to the cell that started the watch, until it ends,
is replaced or is stopped."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete
from nbclient.util import ensure_async

pytest.importorskip("distributed")

pytestmark = pytest.mark.timeout(600)

CELLS = {
    "pool": "%parallel_pool --dask local:2",
    "define": "%%parallel\nimport time\ndef nap(seconds):\n    time.sleep(seconds)\n"
              "    return seconds\n",
    "watch": "%parallel_status --watch 3",
    # Both processes busy while the watch runs; its cell has ended.
    "busy": "naps = %parallel_map --chunksize 1 nap [1.5, 1.5]",
    "ends": "import time\ntime.sleep(3)",
    "first": "%parallel_status --watch 60",
    "second": "%parallel_status --watch 60",
    "busy again": "naps = %parallel_map --chunksize 1 nap [1.5, 1.5]",
    "stop": "%parallel_status --stop",
    "after": "naps = %parallel_map --chunksize 1 nap [1.5, 1.5]",
}

ENDED = "Not updated any more"


class WatchingClient(NotebookClient):
    """Keeps every display message, whichever cell is its parent, in order.
    nbclient hands a cell only the messages whose parent is that cell's
    request, and only while it runs; a watch's updates come later."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.messages: list[dict[str, Any]] = []
        self.cell_of: dict[str, int] = {}  # request msg_id: cell index

    async def _async_poll_output_msg(self, parent_msg_id: str, cell: Any,
                                     cell_index: int) -> None:
        # nbclient's own loop, keeping the display messages as they pass.
        assert self.kc is not None
        self.cell_of[parent_msg_id] = cell_index
        while True:
            msg = await ensure_async(self.kc.iopub_channel.get_msg(timeout=None))
            if msg["msg_type"] in ("display_data", "update_display_data"):
                self.messages.append(msg)
            if msg["parent_header"].get("msg_id") == parent_msg_id:
                try:
                    self.process_message(msg, cell, cell_index)
                except CellExecutionComplete:
                    return


class Run:
    """The notebook's cells by name, and the display messages it produced."""

    def __init__(self, kernel_name: str) -> None:
        nb = nbformat.v4.new_notebook()
        if kernel_name != "interp-rpc":
            nb.cells.append(nbformat.v4.new_code_cell("%load_ext interp_rpc"))
        offset = len(nb.cells)
        for source in CELLS.values():
            nb.cells.append(nbformat.v4.new_code_cell(source))
        client = WatchingClient(nb, kernel_name=kernel_name, timeout=240, allow_errors=True)
        client.execute()
        self.index = {name: offset + i for i, name in enumerate(CELLS)}
        self.cells = {name: nb.cells[offset + i] for i, name in enumerate(CELLS)}
        self.messages = client.messages
        self.cell_of = client.cell_of

    def cell(self, msg: dict[str, Any]) -> int | None:
        return self.cell_of.get(msg["parent_header"].get("msg_id", ""))

    def table_of(self, name: str) -> str:
        """The display id of the table the cell ``name`` showed."""
        (first,) = [m for m in self.messages if m["msg_type"] == "display_data"
                    and self.cell(m) == self.index[name] and display_id(m)]
        return display_id(first)

    def updates(self, table: str) -> list[dict[str, Any]]:
        """The updates of the display whose id is ``table``, in order."""
        return [m for m in self.messages if m["msg_type"] == "update_display_data"
                and display_id(m) == table]

    def position(self, name: str) -> int:
        """Index in self.messages of the first display message of cell ``name``."""
        return next(i for i, m in enumerate(self.messages) if self.cell(m) == self.index[name])


def display_id(msg: dict[str, Any]) -> str:
    return str(msg["content"].get("transient", {}).get("display_id", ""))


def text(msg: dict[str, Any]) -> str:
    return str(msg["content"]["data"]["text/plain"])


@pytest.fixture(scope="module", params=["python3", "interp-rpc"])
def run(request: pytest.FixtureRequest) -> Run:
    return Run(request.param)


def test_the_cells_ran(run: Run) -> None:
    for name, cell in run.cells.items():
        errors = [out for out in cell.outputs if out.output_type == "error"]
        assert not errors, (name, errors)


def test_a_watch_updates_its_table_after_its_cell_ended(run: Run) -> None:
    table = run.table_of("watch")
    updates = run.updates(table)
    texts = [text(m) for m in updates]
    # Several updates, each a different table: busy workers, their times.
    assert len(updates) >= 3, texts
    assert len(set(texts)) == len(texts), texts
    assert any(t.count("busy") == 2 for t in texts), texts
    (shown,) = [m for m in run.messages if m["msg_type"] == "display_data"
                and display_id(m) == table]
    assert "busy" not in text(shown)
    # Sent by its thread while later cells ran, they belong to its cell.
    assert {run.cell(m) for m in updates} == {run.index["watch"]}, \
        [m["parent_header"] for m in updates]
    assert f"{ENDED} (watched for 3 s)" in texts[-1], texts[-1]
    assert all(ENDED not in t for t in texts[:-1]), texts


def test_a_new_watch_replaces_the_last_one_until_stopped(run: Run) -> None:
    first, second = run.table_of("first"), run.table_of("second")
    assert first != second
    replaced = run.updates(first)
    assert replaced and f"{ENDED} (stopped)" in text(replaced[-1]), [text(m) for m in replaced]
    # Once replaced, it is not updated while the next map runs; the new one is.
    assert all(run.messages.index(m) < run.position("busy again") for m in replaced)
    watching = run.updates(second)
    assert any(text(m).count("busy") == 2 for m in watching), [text(m) for m in watching]
    stopped = [i for i, m in enumerate(watching) if ENDED in text(m)]
    assert stopped == [len(watching) - 1], [text(m) for m in watching]
    assert f"{ENDED} (stopped)" in text(watching[-1])
    # Nothing after --stop, while a map keeps both processes busy.
    assert run.cell(watching[-1]) == run.index["stop"]
    assert run.messages.index(watching[-1]) < run.position("after")
