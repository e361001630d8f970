"""Each worker is a subinterpreter of its own, on a dedicated OS thread, with its own GIL."""

from __future__ import annotations

import _interpreters
import concurrent.interpreters
import threading
from pathlib import Path

from interp_rpc import InterpreterPool


def run_concurrently(pool: InterpreterPool, directory: Path, parties: int) -> list[tuple[int, int]]:
    """One call per worker, all provably running at the same time: each call
    waits until every other one has arrived."""
    directory.mkdir()
    futures = [pool.submit("pooltasks.rendezvous", str(directory), parties)
               for _ in range(parties)]
    return [f.result(timeout=60) for f in futures]


def test_workers_are_distinct_subinterpreters_on_distinct_threads(
        pool: InterpreterPool, tmp_path: Path) -> None:
    seen = run_concurrently(pool, tmp_path / "meet", 2)
    interpreter_ids = {interp for interp, _ in seen}
    thread_idents = {ident for _, ident in seen}

    assert len(interpreter_ids) == 2
    assert len(thread_idents) == 2
    main_id = concurrent.interpreters.get_main().id
    assert main_id not in interpreter_ids
    assert threading.get_ident() not in thread_idents
    live = {i.id for i in concurrent.interpreters.list_all()}
    assert interpreter_ids <= live


def test_each_worker_keeps_its_thread_across_calls(pool: InterpreterPool, tmp_path: Path) -> None:
    pairs = set(run_concurrently(pool, tmp_path / "first", 2))
    pairs |= {pool.call("pooltasks.whoami") for _ in range(50)}
    pairs |= set(run_concurrently(pool, tmp_path / "second", 2))
    # Exactly one thread per interpreter, and one interpreter per thread.
    assert len(pairs) == 2
    assert len({interp for interp, _ in pairs}) == 2
    assert len({ident for _, ident in pairs}) == 2


def test_four_workers_run_four_calls_at_once(tmp_path: Path) -> None:
    with InterpreterPool(workers=4, init="import pooltasks") as pool:
        seen = run_concurrently(pool, tmp_path / "meet", 4)
    assert len({interp for interp, _ in seen}) == 4
    assert len({ident for _, ident in seen}) == 4


def test_every_worker_has_its_own_gil(pool: InterpreterPool, tmp_path: Path) -> None:
    seen = run_concurrently(pool, tmp_path / "meet", 2)
    for interp, _ in seen:
        config = _interpreters.get_config(interp)
        assert config.gil == "own"
        assert not config.use_main_obmalloc
        assert config.check_multi_interp_extensions
    # The same, as the worker sees itself.
    assert pool.call("pooltasks.get_config_of_current") == {
        "gil": "own", "use_main_obmalloc": False, "check_multi_interp_extensions": True}
    assert pool.call("pooltasks.interpreter_is_main") is False


def test_a_new_worker_has_not_imported_typing() -> None:
    """The worker's own code loads no module a call does not need: typing
    alone took a fresh worker 3 to 4 ms to import, of every pool's start."""
    with InterpreterPool(workers=1) as pool:
        assert pool.call("sys.modules.__contains__", "typing") is False
