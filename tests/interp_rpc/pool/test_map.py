"""map(): order, several iterables, chunking, errors and the whole-map deadline."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support import Gates, MakePool, wait_until

from interp_rpc import (
    CallTimeoutError,
    InterpreterPool,
    InterpRpcError,
    PoolClosedError,
    RemoteError,
)


def test_results_come_back_in_order(module_pool: InterpreterPool) -> None:
    assert list(module_pool.map("pooltasks.square", range(100))) == [i * i for i in range(100)]


def test_map_accepts_any_iterable(module_pool: InterpreterPool) -> None:
    assert list(module_pool.map("pooltasks.square", (i for i in range(5)))) == [0, 1, 4, 9, 16]
    assert list(module_pool.map("pooltasks.identity", "abc")) == ["a", "b", "c"]


def test_map_with_several_iterables_calls_target_with_one_item_of_each(
        module_pool: InterpreterPool) -> None:
    assert list(module_pool.map("pooltasks.add", [1, 2, 3], [10, 20, 30])) == [11, 22, 33]
    # Like the builtin map, the shortest iterable wins.
    assert list(module_pool.map("pooltasks.add", [1, 2, 3], [10, 20])) == [11, 22]
    assert list(module_pool.map("pooltasks.echo", "ab", [1, 2], (None, True))) == [
        (("a", 1, None), {}), (("b", 2, True), {})]


def test_empty_map_returns_an_empty_list(module_pool: InterpreterPool) -> None:
    before = module_pool.stats().calls
    assert list(module_pool.map("pooltasks.square", [])) == []
    assert list(module_pool.map("pooltasks.add", [], [1])) == []
    assert module_pool.stats().calls == before


def test_map_without_iterables_is_empty_as_executor_map(module_pool: InterpreterPool) -> None:
    assert list(module_pool.map("pooltasks.square")) == []


def test_map_is_a_lazy_iterator_in_order(module_pool: InterpreterPool) -> None:
    results = module_pool.map("pooltasks.square", range(5))
    assert next(results) == 0
    assert list(results) == [1, 4, 9, 16]


def test_buffersize_makes_an_infinite_iterable_work(module_pool: InterpreterPool) -> None:
    results = module_pool.map("pooltasks.square", itertools.count(), buffersize=3)
    assert [next(results) for _ in range(20)] == [i * i for i in range(20)]
    results.close()


def test_buffersize_bounds_what_is_read_ahead(make_pool: MakePool) -> None:
    pool = make_pool(workers=1)
    items = iter(range(10))
    results = pool.map("pooltasks.square", items, buffersize=2)
    pool.close(timeout=60)
    assert next(items) == 2  # only two items were taken from the input
    results.close()


@pytest.mark.parametrize(("buffersize", "error", "words"), [
    (0, ValueError, "buffersize must be None or > 0"),
    (-1, ValueError, "buffersize must be None or > 0"),
    (2.0, TypeError, "buffersize must be an integer or None"),
    ("3", TypeError, "buffersize must be an integer or None"),
])
def test_bad_buffersize_is_refused_as_executor_map_does(
        module_pool: InterpreterPool, buffersize: object, error: type[Exception],
        words: str) -> None:
    with pytest.raises(error, match=words):
        module_pool.map("pooltasks.square", [1], buffersize=buffersize)  # type: ignore[arg-type]


def test_timeout_runs_from_the_call_and_is_raised_by_next(pool: InterpreterPool,
                                                          gates: Gates) -> None:
    gate = gates.new()
    results = pool.map("pooltasks.map_item", [("ok", 1), gate.map_item(2)], chunksize=1,
                       timeout=0.5)
    assert next(results) == 1
    with pytest.raises(CallTimeoutError):
        next(results)
    gate.release()


@pytest.mark.parametrize("taken", [1, 0], ids=["after a result", "before any result"])
def test_closing_the_iterator_cancels_what_has_not_started(
        pool: InterpreterPool, gates: Gates, tmp_path: Path, taken: int) -> None:
    """Also before the first result: a generator closed before its first
    next() runs nothing of its body, so it could cancel nothing."""
    first, second = gates.new(), gates.new()
    touched = [tmp_path / f"touched-{i}" for i in range(6)]
    items = [*[("ok", i) for i in range(taken)], first.map_item(1), second.map_item(2),
             *[("touch", str(path)) for path in touched]]
    results = pool.map("pooltasks.map_item", items, chunksize=1)
    assert [next(results) for _ in range(taken)] == list(range(taken))
    first.wait_started()
    second.wait_started()  # both workers are busy: the rest is queued
    results.close()
    gates.release_all()
    assert list(pool.map("pooltasks.square", [3])) == [9]  # queued behind nothing now
    assert not any(path.exists() for path in touched)
    with pytest.raises(StopIteration):
        next(results)


def test_closing_the_iterator_stops_a_running_chunk_before_its_next_item(
        make_pool: MakePool, gates: Gates, tmp_path: Path) -> None:
    pool = make_pool(workers=1)
    held = gates.new()
    touched = [tmp_path / f"touched-{i}" for i in range(5)]
    # Chunks of 3: [0, 1, 2], [held, touch 0, touch 1], [touch 2-4].
    items = [("ok", 0), ("ok", 1), ("ok", 2), held.map_item(3),
             *[("touch", str(path)) for path in touched]]
    results = pool.map("pooltasks.map_item", items, chunksize=3)
    assert next(results) == 0
    held.wait_started()  # the second chunk is running, inside its first item
    results.close()
    held.release()
    wait_until(lambda: all(w.state == "idle" for w in pool.status()), what="workers idle")
    assert not any(path.exists() for path in touched)


def test_errors_collect_puts_each_failure_in_its_place(pool: InterpreterPool,
                                                        tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    ready.touch()
    items = [("ok", 0), ("fail_after", str(ready), "one"), ("ok", 2),
             ("fail_after", str(ready), "three"), ("ok", 4)]
    results = list(pool.map("pooltasks.map_item", items, chunksize=2, errors="collect"))
    assert [results[i] for i in (0, 2, 4)] == [0, 2, 4]
    for index, message in ((1, "one"), (3, "three")):
        assert isinstance(results[index], RemoteError)
        assert isinstance(results[index], ValueError)
        assert results[index].item_index == index
        assert message in str(results[index])


def _batches_sent(pool: InterpreterPool, monkeypatch: pytest.MonkeyPatch,
                  run: Callable[[], object]) -> list[int]:
    """How many chunks each send of ``run``'s map queued at once."""
    encoded = 0
    sends: list[tuple[int, int]] = []  # (chunks encoded by then, chunks sent)
    encode, submit, submit_many = pool._encode, pool._submit, pool._submit_many

    def counting_encode(*args: Any, **kwargs: Any) -> Any:
        nonlocal encoded
        encoded += 1
        return encode(*args, **kwargs)

    def recording_submit(*args: Any, **kwargs: Any) -> Any:
        sends.append((encoded, 1))
        return submit(*args, **kwargs)

    def recording_submit_many(batch: Any) -> Any:
        sends.append((encoded, len(batch)))
        return submit_many(batch)

    monkeypatch.setattr(pool, "_encode", counting_encode)
    monkeypatch.setattr(pool, "_submit", recording_submit)
    monkeypatch.setattr(pool, "_submit_many", recording_submit_many)
    run()
    monkeypatch.undo()
    assert sends[0] == (1, 1)  # the first chunk went out before the second was encoded
    assert [at for at, _ in sends] == list(itertools.accumulate(n for _, n in sends))
    return [n for _, n in sends]


def test_chunks_of_an_input_read_up_front_are_sent_in_doubling_batches(
        make_pool: MakePool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first chunk goes out at once (workers start while the rest is
    encoded); later ones are sent together in batches that double, so that a
    worker draining the queue finds its next call instead of sleeping and
    being woken for every one."""
    pool = make_pool(workers=2)
    expected = [i * i for i in range(100)]

    def run() -> None:
        assert list(pool.map("pooltasks.square", range(100), chunksize=1)) == expected

    assert _batches_sent(pool, monkeypatch, run) == [1, 2, 4, 8, 16, 32, 37]


def test_chunks_of_a_lazy_input_are_sent_as_soon_as_encoded(
        make_pool: MakePool, monkeypatch: pytest.MonkeyPatch) -> None:
    """With buffersize the input may yield slowly (a stream): no chunk waits
    for later items to be read."""
    pool = make_pool(workers=2)
    expected = [i * i for i in range(100)]

    def run() -> None:
        results = pool.map("pooltasks.square", iter(range(100)), chunksize=1, buffersize=50)
        assert list(results) == expected

    assert _batches_sent(pool, monkeypatch, run) == [1] * 100


def test_a_batch_the_engine_refuses_raises_pool_closed_and_queues_nothing(
        make_pool: MakePool) -> None:
    pool = make_pool(workers=1)
    batch = [(i, 1, pool._encode("pooltasks.square", ([i],), {}, "chunk", i)) for i in range(3)]
    calls_before = pool.stats().calls
    pool._engine.close(cancel_pending=True, timeout=60)  # closed below the Python layer
    with pytest.raises(PoolClosedError, match="closed"):
        pool._submit_many(batch)
    assert pool.stats().calls == calls_before


@pytest.mark.parametrize("chunksize", [1, 2, 7, 1000])
def test_explicit_chunksize(module_pool: InterpreterPool, chunksize: int) -> None:
    before = module_pool.stats()
    assert list(module_pool.map("pooltasks.square", range(50), chunksize=chunksize)) == [
        i * i for i in range(50)]
    after = module_pool.stats()
    assert after.items - before.items == 50
    assert after.calls - before.calls == -(-50 // chunksize)  # one request per chunk


@pytest.mark.parametrize("chunksize", [0, -1, 1.5, True, "2"])
def test_bad_chunksize_is_refused(module_pool: InterpreterPool, chunksize: object) -> None:
    with pytest.raises(ValueError, match="chunksize must be a positive int"):
        list(module_pool.map("pooltasks.square", range(3), chunksize=chunksize))  # type: ignore[arg-type]


def test_large_map(module_pool: InterpreterPool) -> None:
    n = 20_000
    assert list(module_pool.map("pooltasks.square", range(n))) == [i * i for i in range(n)]
    items = [{"n": i} for i in range(n)]
    assert list(module_pool.map("mymodule.process", items)) == [
        {"n": i, "squared": i * i} for i in range(n)]


def test_map_error_names_the_first_failing_item(module_pool: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as info:
        list(module_pool.map("pooltasks.fail_on_any", range(40), [(7, 13, 30)] * 40, chunksize=5))
    err = info.value
    assert err.item_index == 7
    assert err.remote_type_name == "ValueError"
    assert err.remote_message == "bad value 7"
    assert "item 7" in str(err)
    assert isinstance(err, InterpRpcError)


@pytest.mark.parametrize("chunksize", [None, 1, 3, 64])
def test_map_error_index_with_any_chunking(module_pool: InterpreterPool,
                                           chunksize: int | None) -> None:
    with pytest.raises(RemoteError) as info:
        list(module_pool.map("pooltasks.fail_on", range(100), [57] * 100, chunksize=chunksize))
    assert info.value.item_index == 57
    assert info.value.remote_message == "bad value 57"


def test_map_error_cancels_queued_chunks(pool: InterpreterPool, gates: Gates) -> None:
    # Item 0 fails once item 1 holds the other worker. Every later item
    # blocks when it runs, so the worker that ran item 0 can take at most one
    # of them before the caller has cancelled the rest.
    holder = gates.new()
    later = [gates.new() for _ in range(8)]
    items = [("fail_after", str(holder.started), "item zero failed"), holder.map_item("one"),
             *[gate.map_item(i) for i, gate in enumerate(later, start=2)]]
    with pytest.raises(RemoteError) as info:
        list(pool.map("pooltasks.map_item", items, chunksize=1))
    assert info.value.item_index == 0
    assert info.value.remote_message == "item zero failed"
    gates.release_all()

    def outcomes() -> list[str]:
        return [r.outcome for r in pool.call_records() if r.target == "pooltasks.map_item"]

    # Every item ends up replied or cancelled; then nothing else can run.
    wait_until(lambda: len(outcomes()) == len(items), what="every item accounted for")
    assert list(pool.map("pooltasks.square", [1, 2], chunksize=1)) == [1, 4]
    started = [gate.has_started() for gate in later]
    assert sum(started) <= 1
    final = outcomes()
    # At most one later item left the queue before the rest was cancelled: it
    # ran, or the map's stop reached it first and it replied without running.
    assert 2 + sum(started) <= final.count("replied") <= 3
    assert final.count("cancelled") == len(items) - final.count("replied")


def test_map_timeout_is_a_deadline_for_the_whole_map(pool: InterpreterPool) -> None:
    # Six items of 0.4 s on two workers take at least 1.2 s in all, although
    # each one alone is well within the 1 s timeout.
    with pytest.raises(CallTimeoutError) as info:
        list(pool.map("pooltasks.sleep_then", [0.4] * 6, chunksize=1, timeout=1.0))
    err = info.value
    assert err.timeout == 1.0
    assert err.total == 6
    assert err.completed is not None and err.completed < 6
    assert "6 items" in str(err) and "did not finish within 1 s" in str(err)
    assert isinstance(err, TimeoutError)


def test_map_timeout_reports_progress_and_cancels_the_rest(
        pool: InterpreterPool, gates: Gates, tmp_path: Path) -> None:
    first, second = gates.new(), gates.new()
    touched = tmp_path / "never"
    items = [("ok", 0), ("ok", 1), first.map_item(), second.map_item(),
             ("touch", str(touched))]
    with pytest.raises(CallTimeoutError) as info:
        list(pool.map("pooltasks.map_item", items, chunksize=1, timeout=1.5))
    err = info.value
    assert (err.completed, err.total) == (2, 5)
    assert err.target == "pooltasks.map_item"
    assert "2 of 5 items done" in str(err)
    first.release()
    second.release()
    assert list(pool.map("pooltasks.square", [1, 2])) == [1, 4]
    assert pool.call("pooltasks.add", 1, 1) == 2
    assert not touched.exists()


def test_map_timeout_argument_is_checked(module_pool: InterpreterPool) -> None:
    with pytest.raises(ValueError, match="timeout must be a non-negative number"):
        list(module_pool.map("pooltasks.square", [1], timeout=-1))


@pytest.mark.parametrize("errors", ["raise", "collect"])
def test_a_failing_items_traceback_starts_in_the_target(
        module_pool: InterpreterPool, tmp_path: Path, errors: str) -> None:
    ready = tmp_path / "ready"
    ready.touch()
    items = [("ok", 0), ("ok", 1), ("fail_after", str(ready), "boom"), ("ok", 3)]
    if errors == "raise":
        with pytest.raises(RemoteError) as caught:
            list(module_pool.map("pooltasks.map_item", items, chunksize=4))
        failure = caught.value
    else:
        failure = list(module_pool.map("pooltasks.map_item", items, chunksize=4,
                                       errors="collect"))[2]
    assert isinstance(failure, RemoteError)
    assert failure.item_index == 2
    frames = [line for line in failure.remote_traceback.splitlines()
              if line.lstrip().startswith("File ")]
    # The map's own machinery (the chunk loop, the stop check) is not shown.
    assert "pooltasks.py" in frames[0], failure.remote_traceback
    assert not any("/interp_rpc/_" in frame for frame in frames), failure.remote_traceback
