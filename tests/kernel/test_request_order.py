"""A burst of cells sent at once (JupyterLab's Run All) runs in the order
sent, and each cell's replies and outputs come in that order too.

Two threads of the kernel read the shell socket: the main thread while it is
idle, the shell router thread while it runs a cell. Each must route what it
read before the other routes later requests, or cells run out of order
(kernel_server_shell.cpp). Whether the two threads' reads interleave depends
on timing, so a kernel that had lost that order would fail this test in some
runs, not every one: a burst sent before any is read gives the threads many
chances to meet."""

from __future__ import annotations

from conftest import Kernel

CELLS = 300


def test_a_burst_of_cells_runs_in_the_order_sent(shared_kernel: Kernel) -> None:
    shared_kernel.execute("ran_in_order = []")
    sent = [shared_kernel.send(f"ran_in_order.append({i})") for i in range(CELLS)]
    # Each cell's idle status and reply come before the next cell's: collect()
    # keeps what belongs to other cells aside, and would time out on a cell
    # whose messages came early.
    executions = [shared_kernel.collect(msg_id, timeout=60) for msg_id in sent]
    assert [e.status for e in executions] == ["ok"] * CELLS
    assert [e.others for e in executions] == [[]] * CELLS
    result = shared_kernel.execute(f"print(ran_in_order == list(range({CELLS})))")
    assert result.stream() == "True\n", result.reply


def test_cells_count_in_the_order_sent(shared_kernel: Kernel) -> None:
    """The execution counts, which IPython gives in the order cells run."""
    first = shared_kernel.execute("pass").reply["content"]["execution_count"]
    sent = [shared_kernel.send("pass") for _ in range(CELLS)]
    counts = [shared_kernel.collect(msg_id, timeout=60).reply["content"]["execution_count"]
              for msg_id in sent]
    assert counts == list(range(first + 1, first + 1 + CELLS))
