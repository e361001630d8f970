"""What a ProcessPool's workers print into a notebook cell: relayed over
their reply pipes into the caller's queue (notebook/relay.py), labelled with
the worker's index and the item, as a subinterpreter's output is."""

from __future__ import annotations

import gc
from collections.abc import Callable

from interp_rpc import ProcessPool
from interp_rpc._pool.map import MapRun
from interp_rpc.notebook.relay import OutputRelay, Printed


def relayed_map(pool: ProcessPool, relay: OutputRelay | None, target: str,
                items: list[object], output: int | None = None) -> list[object]:
    run = MapRun(pool, target, (items,), timeout=None, chunksize=1, buffersize=None,
                 errors="raise", output=relay.id if relay is not None else output)
    return run.collect()


def test_each_item_prints_under_its_worker_and_item(process_pool: ProcessPool) -> None:
    relay = OutputRelay(process_pool)
    assert relayed_map(process_pool, relay, "processtasks.chatty", list(range(6))) \
        == list(range(6))
    printed = relay.take()  # each chunk's output arrives before its reply
    for stream, word in (("stdout", "item"), ("stderr", "warning")):
        lines = [p for p in printed if p.stream == stream]
        assert sorted(p.item for p in lines) == list(range(6)), printed
        assert all(p.text == f"{word} {p.item}\n" for p in lines), printed
    assert {p.worker for p in printed} <= {0, 1}


def test_a_replaced_worker_keeps_its_index_as_label(
        make_process_pool: Callable[..., ProcessPool]) -> None:
    pool = make_process_pool(workers=1)
    relay = OutputRelay(pool)
    first = pool.worker_pids()
    pool.submit("processtasks.exit_with", 3).exception(timeout=60)
    assert relayed_map(pool, relay, "processtasks.chatty", [7]) == [7]
    assert pool.worker_pids() != first
    assert relay.take() == [Printed(0, 0, "stdout", "item 7\n"),
                            Printed(0, 0, "stderr", "warning 7\n")]


def test_lines_printed_by_threads_at_once_arrive_whole(process_pool: ProcessPool) -> None:
    relay = OutputRelay(process_pool)
    assert relayed_map(process_pool, relay, "processtasks.print_from_threads", [4]) \
        == [800]
    text = "".join(p.text for p in relay.take())
    lines = text.splitlines()
    assert sorted(lines) == sorted(f"thread {t} line {n}" for t in range(4) for n in range(200))


def test_text_that_is_not_utf8_crosses_unchanged(process_pool: ProcessPool) -> None:
    relay = OutputRelay(process_pool)
    odd = "a lone surrogate \udcff, a NUL \x00 and \u00e9\n"
    assert relayed_map(process_pool, relay, "processtasks.print_text", [odd]) == [odd]
    assert "".join(p.text for p in relay.take()) == odd


def test_output_for_a_relay_that_is_gone_is_dropped(process_pool: ProcessPool) -> None:
    relay = OutputRelay(process_pool)
    gone = relay.id
    del relay
    gc.collect()
    # The worker prints for a queue that no longer exists: the map and the
    # worker go on.
    assert relayed_map(process_pool, None, "processtasks.chatty", [1, 2], output=gone) == [1, 2]
    assert process_pool.call("processtasks.chatty", 3) == 3
