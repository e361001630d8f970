"""A Python thread that a cell starts, updating a display of that cell after
the cell ended (as %parallel_status --watch does on a dask cluster): run
through _interp_rpc_kernel.cell_parent(), its messages belong to that cell,
also while a later cell runs (a plain thread's go to the latest cell)."""

from __future__ import annotations

from conftest import Kernel

START_A_THREAD = """
import threading, time
import _interp_rpc_kernel
from IPython.display import display, update_display
stop = threading.Event()
display("0", display_id="watched")
def refresh():
    n = 0
    while not stop.wait(0.05):
        n += 1
        update_display(str(n), display_id="watched")
cell = _interp_rpc_kernel.cell_parent()
thread = threading.Thread(target=cell.run, args=(refresh,), daemon=True)
thread.start()
"""


def test_a_python_threads_updates_belong_to_the_cell_that_started_it(kernel: Kernel) -> None:
    first = kernel.send(START_A_THREAD)
    assert kernel.collect(first).status == "ok"
    second = kernel.collect(kernel.send("time.sleep(0.6)"))
    assert second.status == "ok"
    assert not second.of_type("update_display_data"), "an update went to the later cell"
    late = [m for m in second.others if m["msg_type"] == "update_display_data"]
    assert late, "no update arrived while the later cell ran"
    assert {m["parent_header"]["msg_id"] for m in late} == {first}
    kernel.execute("stop.set(); thread.join()")
