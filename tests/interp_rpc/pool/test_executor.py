"""InterpreterPool is a concurrent.futures.Executor, and asyncio can use it."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import CancelledError, Executor
from pathlib import Path

import pooltasks
import pytest
from support import Gates, MakePool, wait_until

from interp_rpc import InterpreterPool, PoolClosedError


def test_it_is_an_executor(module_pool: InterpreterPool) -> None:
    assert isinstance(module_pool, Executor)


def test_submit_takes_fn_positional_only(module_pool: InterpreterPool) -> None:
    assert module_pool.submit(pooltasks.add, 1, b=2).result(timeout=30) == 3
    assert module_pool.submit(pooltasks.echo, 1, fn="kw").result(timeout=30) == (
        (1,), {"fn": "kw"})
    with pytest.raises(TypeError):
        module_pool.submit(fn=pooltasks.add)  # type: ignore[call-arg]


def test_map_like_executor_map(module_pool: InterpreterPool) -> None:
    expected = [a + b for a, b in zip(range(10), range(10, 20), strict=True)]
    assert list(module_pool.map(pooltasks.add, range(10), range(10, 20))) == expected
    assert list(module_pool.map(pooltasks.add, range(10), range(10, 20), timeout=30,
                                chunksize=1)) == expected
    assert list(module_pool.map(pooltasks.square, range(10), chunksize=3)) == [
        i * i for i in range(10)]


def test_shutdown_waits_for_work_and_refuses_new_calls() -> None:
    pool = InterpreterPool(workers=2, init="import pooltasks")
    futures = [pool.submit(pooltasks.sleep_then, 0.05, i) for i in range(6)]
    pool.shutdown(wait=True)
    assert [f.result(timeout=0) for f in futures] == list(range(6))
    assert pool.closed
    assert [w.state for w in pool.status()] == ["stopped", "stopped"]
    with pytest.raises(PoolClosedError):
        pool.submit(pooltasks.add, 1, 2)
    pool.shutdown()  # again: harmless


def test_shutdown_cancel_futures_cancels_what_is_queued(make_pool: MakePool, gates: Gates,
                                                       tmp_path: Path) -> None:
    pool = make_pool(workers=1)
    gate = gates.new()
    running = pool.submit(pooltasks.block, *gate.args("ran"))
    gate.wait_started()
    markers = [tmp_path / f"queued-{i}" for i in range(3)]
    queued = [pool.submit(pooltasks.touch, str(m)) for m in markers]
    pool.shutdown(wait=False, cancel_futures=True)  # returns at once
    wait_until(lambda: all(f.cancelled() for f in queued))
    for future in queued:
        with pytest.raises(CancelledError):
            future.result(timeout=0)
    assert not running.done()
    gate.release()
    assert running.result(timeout=30) == "ran"
    pool.close(timeout=30)  # joins the worker
    assert not any(m.exists() for m in markers)


def test_shutdown_without_wait_returns_while_a_call_runs(make_pool: MakePool,
                                                        gates: Gates) -> None:
    pool = make_pool(workers=1)
    gate = gates.new()
    running = pool.submit(pooltasks.block, *gate.args("done"))
    gate.wait_started()
    pool.shutdown(wait=False)
    assert pool.closed
    gate.release()
    assert running.result(timeout=30) == "done"
    pool.close(timeout=30)


def test_executor_context_manager_closes() -> None:
    with InterpreterPool(workers=1, init="import pooltasks") as pool:
        future = pool.submit(pooltasks.add, 2, 2)
    assert future.result(timeout=0) == 4
    assert pool.closed


def test_run_in_executor_with_asyncio(module_pool: InterpreterPool) -> None:
    async def main() -> list[object]:
        loop = asyncio.get_running_loop()
        calls = [loop.run_in_executor(module_pool, pooltasks.add, i, 100) for i in range(20)]
        calls.append(loop.run_in_executor(module_pool, "pooltasks.square", 9))
        return list(await asyncio.gather(*calls))

    assert asyncio.run(main()) == [i + 100 for i in range(20)] + [81]


def test_run_in_executor_with_a_partial_for_keyword_arguments(
        module_pool: InterpreterPool) -> None:
    async def main() -> object:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(module_pool, functools.partial(pooltasks.add, b=1), 1)

    assert asyncio.run(main()) == 2


def test_run_in_executor_propagates_remote_errors(module_pool: InterpreterPool) -> None:
    from interp_rpc import RemoteError

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(module_pool, pooltasks.fail, "async failure")

    with pytest.raises(RemoteError, match="async failure"):
        asyncio.run(main())


def test_asyncio_wait_for_timeout_leaves_the_pool_usable(pool: InterpreterPool,
                                                        gates: Gates) -> None:
    gate = gates.new()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await asyncio.wait_for(loop.run_in_executor(pool, pooltasks.block, *gate.args()), 0.2)

    with pytest.raises(TimeoutError):
        asyncio.run(main())
    gate.release()
    assert pool.call(pooltasks.add, 1, 1) == 2
