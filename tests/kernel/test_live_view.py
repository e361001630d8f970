"""The pool's live status view in this kernel: published by a C++ thread that
needs no GIL, parented to the cell that started it."""

from __future__ import annotations

import time

from conftest import Kernel, Message

# Holds the main GIL for about a second in one C call (sum over a range runs
# without ever reaching the eval loop, where the GIL would be handed over).
HOLD_THE_GIL = "sum(range(40_000_000))"

LIVE_VIEW_WHILE_HOLDING_THE_GIL = f"""
from interp_rpc import InterpreterPool
from interp_rpc.notebook import live

pool = InterpreterPool(workers=1)
assert live._kernel_publisher() is not None, "not the kernel's C++ publisher"
view = live.LiveView(pool, target="nothing", refresh=0.05)
view.start()
print("holding the GIL", flush=True)
{HOLD_THE_GIL}
print("released the GIL", flush=True)
view.stop()
pool.close()
"""


def test_the_live_view_updates_while_the_main_thread_holds_the_gil(kernel: Kernel) -> None:
    result = kernel.execute(LIVE_VIEW_WHILE_HOLDING_THE_GIL, timeout=60)
    assert result.status == "ok", result.reply
    kinds = [m["msg_type"] if m["msg_type"] != "stream" else m["content"]["text"].strip()
             for m in result.outputs]
    start, end = kinds.index("holding the GIL"), kinds.index("released the GIL")
    during = kinds[start:end].count("update_display_data")
    # A Python thread could publish nothing while the GIL is held; the
    # kernel's C++ thread keeps publishing.
    assert during >= 3, kinds


def test_updates_belong_to_the_cell_that_started_the_view(kernel: Kernel) -> None:
    code = """
from interp_rpc import InterpreterPool
from interp_rpc.notebook import live
pool = InterpreterPool(workers=1)
view = live.LiveView(pool, target="t", refresh=0.05, duration=0.6)
view.start()
"""
    first = kernel.send(code)
    started = kernel.collect(first)
    assert started.status == "ok"
    # The view keeps updating after its cell ended, while another cell runs:
    # its messages must still name the first cell as their parent.
    second = kernel.collect(kernel.send("import time; time.sleep(1.0)"))
    assert second.status == "ok"
    assert not second.of_type("update_display_data")
    late = [m for m in second.others if m["msg_type"] == "update_display_data"]
    assert late, "no update arrived while the second cell ran"
    assert {m["parent_header"]["msg_id"] for m in late} == {first}
    kernel.execute("pool.close()")


def updates_of(messages: list[Message], parent: str) -> int:
    return sum(
        1 for m in messages
        if m["msg_type"] == "update_display_data" and m["parent_header"].get("msg_id") == parent
    )


def wait_for_updates(kernel: Kernel, parent: str, count: int) -> None:
    deadline = time.monotonic() + 60
    seen = 0
    while seen < count:
        msg = kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        seen += updates_of([msg], parent)


def test_a_watch_updates_after_its_cell_until_replaced_or_stopped(kernel: Kernel) -> None:
    first = kernel.send("%parallel_status --watch 120")
    assert kernel.collect(first, timeout=60).status == "ok"
    # The table keeps updating in place while the kernel is idle.
    wait_for_updates(kernel, first, 2)

    # A new watch replaces the first one: only the new one updates.
    second = kernel.send("%parallel_status --watch 120")
    assert kernel.collect(second, timeout=60).status == "ok"
    window = kernel.execute("import time; time.sleep(1)")  # an observation window
    assert updates_of(window.others, first) == 0
    assert updates_of(window.others, second) >= 1

    stopped = kernel.execute("%parallel_status --stop")
    assert stopped.status == "ok"
    window = kernel.execute("import time; time.sleep(1)")
    assert updates_of(window.others, second) == 0


def texts_of_updates(messages: list[Message], parent: str) -> list[str]:
    return [m["content"]["data"]["text/plain"] for m in messages
            if m["msg_type"] == "update_display_data"
            and m["parent_header"].get("msg_id") == parent]


def test_a_watch_says_when_its_table_is_not_updated_any_more(kernel: Kernel) -> None:
    # Published by the kernel's C++ view when its seconds run out, and by
    # the notebook's view when stopped: the table must not look live.
    ended = kernel.send("%parallel_status --watch 1")
    assert kernel.collect(ended, timeout=60).status == "ok"
    window = kernel.execute("import time; time.sleep(2.5)")
    texts = texts_of_updates(window.others, ended)
    assert texts and "Not updated any more (watched for 1 s)" in texts[-1], texts
    assert all("Not updated any more" not in t for t in texts[:-1]), texts

    stopped = kernel.send("%parallel_status --watch 120")
    assert kernel.collect(stopped, timeout=60).status == "ok"
    stop = kernel.send("%parallel_status --stop")
    stopping = kernel.collect(stop, timeout=60)
    assert stopping.status == "ok"
    # The last table goes out from the cell that stopped the watch.
    texts = texts_of_updates(stopping.outputs, stop)
    assert texts and "Not updated any more (stopped)" in texts[-1], texts


def test_shutdown_with_a_watch_running_is_clean(kernel: Kernel) -> None:
    watch = kernel.send("%parallel_status --watch 120")
    assert kernel.collect(watch, timeout=60).status == "ok"
    wait_for_updates(kernel, watch, 1)
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    process = provisioner.process  # type: ignore[attr-defined]
    kernel.client.stop_channels()
    kernel.manager.shutdown_kernel(now=False)
    assert process.returncode == 0


def test_progress_counts_only_the_maps_own_items(kernel: Kernel) -> None:
    """A call made before the map that finishes while the map's view runs is
    not one of its items: the C++ publisher must never show it as done."""
    code = """
import time
from interp_rpc import InterpreterPool
from interp_rpc.notebook import live
pool = InterpreterPool(workers=1)
earlier = pool.submit(time.sleep, 0.3)
records = pool.call_records()
since = ((records[-1].seq if records else 0), int(pool._engine.last_call_id) + 1)
view = live.LiveView(pool, target="next map", total=3, refresh=0.05, since=since)
view.start()
earlier.result()
time.sleep(0.5)  # the view publishes while the cell waits
view._kernel_view.stop()
pool.close()
"""
    result = kernel.execute(code, timeout=60)
    assert result.status == "ok", result.reply
    frames = [m["content"]["data"]["text/plain"] for m in result.outputs
              if m["msg_type"] == "update_display_data"]
    assert frames, "the C++ view published nothing"
    assert all("0/3 items" in frame for frame in frames), frames
