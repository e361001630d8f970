"""map(): order, several iterables, chunking, errors and the whole-map deadline."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import Gates, wait_until

from interp_rpc import CallTimeoutError, InterpreterPool, InterpRpcError, RemoteError


def test_results_come_back_in_order(module_pool: InterpreterPool) -> None:
    assert module_pool.map("pooltasks.square", range(100)) == [i * i for i in range(100)]


def test_map_accepts_any_iterable(module_pool: InterpreterPool) -> None:
    assert module_pool.map("pooltasks.square", (i for i in range(5))) == [0, 1, 4, 9, 16]
    assert module_pool.map("pooltasks.identity", "abc") == ["a", "b", "c"]


def test_map_with_several_iterables_calls_target_with_one_item_of_each(
        module_pool: InterpreterPool) -> None:
    assert module_pool.map("pooltasks.add", [1, 2, 3], [10, 20, 30]) == [11, 22, 33]
    # Like the builtin map, the shortest iterable wins.
    assert module_pool.map("pooltasks.add", [1, 2, 3], [10, 20]) == [11, 22]
    assert module_pool.map("pooltasks.echo", "ab", [1, 2], (None, True)) == [
        (("a", 1, None), {}), (("b", 2, True), {})]


def test_empty_map_returns_an_empty_list(module_pool: InterpreterPool) -> None:
    before = module_pool.stats().calls
    assert module_pool.map("pooltasks.square", []) == []
    assert module_pool.map("pooltasks.add", [], [1]) == []
    assert module_pool.stats().calls == before


def test_map_needs_an_iterable(module_pool: InterpreterPool) -> None:
    with pytest.raises(TypeError):
        module_pool.map("pooltasks.square")


@pytest.mark.parametrize("chunksize", [1, 2, 7, 1000])
def test_explicit_chunksize(module_pool: InterpreterPool, chunksize: int) -> None:
    before = module_pool.stats()
    assert module_pool.map("pooltasks.square", range(50), chunksize=chunksize) == [
        i * i for i in range(50)]
    after = module_pool.stats()
    assert after.items - before.items == 50
    assert after.calls - before.calls == -(-50 // chunksize)  # one request per chunk


@pytest.mark.parametrize("chunksize", [0, -1, 1.5, True, "2"])
def test_bad_chunksize_is_refused(module_pool: InterpreterPool, chunksize: object) -> None:
    with pytest.raises(ValueError, match="chunksize must be a positive int"):
        module_pool.map("pooltasks.square", range(3), chunksize=chunksize)  # type: ignore[arg-type]


def test_large_map(module_pool: InterpreterPool) -> None:
    n = 20_000
    assert module_pool.map("pooltasks.square", range(n)) == [i * i for i in range(n)]
    items = [{"n": i} for i in range(n)]
    assert module_pool.map("mymodule.process", items) == [
        {"n": i, "squared": i * i} for i in range(n)]


def test_map_error_names_the_first_failing_item(module_pool: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as info:
        module_pool.map("pooltasks.fail_on_any", range(40), [(7, 13, 30)] * 40, chunksize=5)
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
        module_pool.map("pooltasks.fail_on", range(100), [57] * 100, chunksize=chunksize)
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
        pool.map("pooltasks.map_item", items, chunksize=1)
    assert info.value.item_index == 0
    assert info.value.remote_message == "item zero failed"
    gates.release_all()

    def outcomes() -> list[str]:
        return [r.outcome for r in pool.call_records() if r.target == "pooltasks.map_item"]

    # Every item ends up replied or cancelled; then nothing else can run.
    wait_until(lambda: len(outcomes()) == len(items), what="every item accounted for")
    assert pool.map("pooltasks.square", [1, 2], chunksize=1) == [1, 4]
    started = [gate.has_started() for gate in later]
    assert sum(started) <= 1
    final = outcomes()
    assert final.count("cancelled") == len(later) - sum(started)
    assert final.count("replied") == 2 + sum(started)


def test_map_timeout_is_a_deadline_for_the_whole_map(pool: InterpreterPool) -> None:
    # Six items of 0.4 s on two workers take at least 1.2 s in all, although
    # each one alone is well within the 1 s timeout.
    with pytest.raises(CallTimeoutError) as info:
        pool.map("pooltasks.sleep_then", [0.4] * 6, chunksize=1, timeout=1.0)
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
        pool.map("pooltasks.map_item", items, chunksize=1, timeout=1.5)
    err = info.value
    assert (err.completed, err.total) == (2, 5)
    assert err.target == "pooltasks.map_item"
    assert "2 of 5 items done" in str(err)
    first.release()
    second.release()
    assert pool.map("pooltasks.square", [1, 2]) == [1, 4]
    assert pool.call("pooltasks.add", 1, 1) == 2
    assert not touched.exists()


def test_map_timeout_argument_is_checked(module_pool: InterpreterPool) -> None:
    with pytest.raises(ValueError, match="timeout must be a non-negative number"):
        module_pool.map("pooltasks.square", [1], timeout=-1)
