"""The Workers panel's feed on a dask cluster: one group of workers per dask
process, from the processes' own answers (a ClusterPool has no status board
in this process). The comm is a stand-in that keeps what is sent; the kernel
tests (tests/kernel/test_workers_panel.py) drive the real comm."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import INIT
from IPython.core.interactiveshell import InteractiveShell
from shell_support import shell_with_extension
from support import wait_until

from interp_rpc.notebook import workers_panel

pytestmark = pytest.mark.timeout(300)


class KeptComm:
    """What PanelFeed uses of a comm."""

    comm_id = "kept"
    _closed = False

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, data: dict[str, Any]) -> None:
        self.sent.append(data)

    def on_msg(self, callback: Callable[[dict[str, Any]], None]) -> None:
        self.handle = callback

    def on_close(self, callback: Callable[[dict[str, Any]], None]) -> None:
        pass

    def close(self) -> None:
        self._closed = True


@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    yield from shell_with_extension(f"--dask local:2 --init {INIT!r}")


def test_a_cluster_shows_one_group_per_dask_process(shell: InteractiveShell) -> None:
    notebook = shell.magics_manager.registry["ParallelMagics"].notebook_pool
    comm = KeptComm()
    feed = workers_panel.PanelFeed(comm, notebook, {}, lambda _: None)
    feed.start()
    try:
        status = wait_until(lambda: next((m for m in comm.sent if m["type"] == "status"), None),
                            what="the first status")
        comm.handle({"content": {"data": {"action": "nonsense"}}})
        error = wait_until(lambda: next((m for m in comm.sent if m["type"] == "error"), None),
                           what="the error for a bad action")
    finally:
        feed.stop()
    assert status["pool"]["kind"] == "ClusterPool"
    processes = [group["process"] for group in status["groups"]]
    assert len(processes) == 2, processes
    assert all(p is not None and p["address"].startswith("tcp://") for p in processes), processes
    assert len({p["pid"] for p in processes}) == 2
    rows = [row for group in status["groups"] for row in group["workers"]]
    assert len(rows) == status["pool"]["workers"]
    assert status["totals"]["idle"] == len(rows)
    assert "nonsense" in error["message"]
