"""What a ProcessPool's map sends its workers: chunks cut for processes.

A worker process pays for every chunk (a wake-up, a read, a reply), and it
gets a copy of what it is sent, never a view of the caller's memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from interp_rpc import InterpreterPool, ProcessPool, RemoteError

Sent = list[tuple[int, int]]  # (items, out-of-band buffers) of each chunk, in order


def spy_on_chunks(pool: InterpreterPool | ProcessPool, monkeypatch: pytest.MonkeyPatch) -> Sent:
    """Every chunk the pool submits from now on."""
    sent: Sent = []
    submit, submit_many = pool._submit, pool._submit_many

    def spy_one(encoded: Any, **options: Any) -> Any:
        sent.append((options["item_count"], len(encoded.buffers)))
        return submit(encoded, **options)

    def spy_many(batch: list[tuple[int, int, Any]]) -> Any:
        sent.extend((count, len(encoded.buffers)) for _, count, encoded in batch)
        return submit_many(batch)

    monkeypatch.setattr(pool, "_submit", spy_one)
    monkeypatch.setattr(pool, "_submit_many", spy_many)
    return sent


def test_a_chunk_carries_its_stop_flag_to_a_worker_process_as_an_index(
        process_pool: ProcessPool, monkeypatch: pytest.MonkeyPatch) -> None:
    # A process would read its own copy of a byte of the caller's memory,
    # which never changes: the chunk names its map's byte of the stop board
    # (stop_board.py), which no buffer carries.
    sent = spy_on_chunks(process_pool, monkeypatch)
    assert list(process_pool.map(abs, range(-500, 500), chunksize=10)) == \
        [abs(x) for x in range(-500, 500)]
    assert len(sent) == 100
    assert [buffers for _, buffers in sent] == [0] * 100


def test_a_chunk_still_carries_the_stop_flag_to_a_subinterpreter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # There the worker reads the caller's byte itself: a stopped map's
    # running chunks end before their next item.
    with InterpreterPool(workers=1) as pool:
        sent = spy_on_chunks(pool, monkeypatch)
        assert list(pool.map(abs, range(-50, 50), chunksize=10)) == [abs(x) for x in range(-50, 50)]
    assert [buffers for _, buffers in sent] == [1] * 10


@pytest.mark.parametrize("make", [InterpreterPool, ProcessPool], ids=["interpreters", "processes"])
def test_chunks_grow_faster_on_processes_until_the_item_cost_is_known(
        make: Callable[..., InterpreterPool | ProcessPool],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The second chunk is cut before any chunk can have measured the item
    # cost: its size is the first one's times the pool's growth.
    with make(workers=1) as pool:
        sent = spy_on_chunks(pool, monkeypatch)
        items = list(range(10_000))
        assert list(pool.map(abs, items)) == items
    sizes = [items for items, _ in sent]
    assert sum(sizes) == 10_000
    growth = 8 if make is ProcessPool else 2
    assert sizes[:2] == [4, 4 * growth]


def test_a_failing_item_raises_in_order(process_pool: ProcessPool) -> None:
    # The chunks after a failure are cancelled, stopped or their results dropped.
    results = process_pool.map(divmod, [7] * 3000, [1] * 1500 + [0] + [1] * 1499)
    taken = []
    with pytest.raises(RemoteError) as caught:
        taken.extend(results)
    assert isinstance(caught.value, ZeroDivisionError)
    assert taken == [(7, 0)] * 1500
