"""Re-running a failed call in the caller's interpreter under pdb
(interp_rpc/_pool/local_rerun.py): err.debug(local=True)."""

from __future__ import annotations

import builtins
import sys
from collections.abc import Iterator

import pytest
from support import pool_for_fixture

from interp_rpc import DebugUnavailableError, InterpreterPool, ProcessPool, RemoteError
from interp_rpc._pool.local_rerun import resolve_here

INIT = "import debugtasks"


@pytest.fixture(scope="module")
def pool() -> Iterator[InterpreterPool]:
    yield from pool_for_fixture(2, INIT)


def typed(monkeypatch: pytest.MonkeyPatch, *commands: str) -> list[str]:
    """input() answers with ``commands``; returns the prompts it was asked."""
    left = list(commands)
    prompts: list[str] = []

    def answer(prompt: str = "") -> str:
        prompts.append(prompt)
        if not left:
            raise EOFError
        return left.pop(0)

    monkeypatch.setattr(builtins, "input", answer)
    return prompts


def test_a_failed_map_item_is_re_run_here_and_pdb_opens_where_it_raises(
        pool: InterpreterPool, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RemoteError) as caught:
        list(pool.map("debugtasks.crunch", range(6)))
    prompts = typed(monkeypatch, "p secret, x", "where", "q")
    caught.value.debug(local=True)
    out = capsys.readouterr().out
    assert "Re-running debugtasks.crunch here with the arguments that failed in worker" in out
    assert "-> return secret // (x - 3)" in out
    assert "(21, 3)" in out
    assert "local_rerun.py" not in out.split("where", 1)[-1]  # only the target's frames
    assert prompts == ["(Pdb) "] * 3


def test_a_failed_call_with_keyword_arguments_is_re_run(
        pool: InterpreterPool, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RemoteError) as caught:
        pool.call("debugtasks.outer", x=4)
    typed(monkeypatch, "p inner_value", "q")
    caught.value.debug(local=True)
    assert "\n8\n" in capsys.readouterr().out


def test_a_process_pool_error_cannot_open_on_its_frames_but_re_runs_here(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with ProcessPool(workers=1, init=INIT) as processes, pytest.raises(RemoteError) as caught:
        processes.call("debugtasks.crunch", 3)
    with pytest.raises(DebugUnavailableError, match="a ProcessPool's worker keeps no frames"):
        caught.value.debug()
    typed(monkeypatch, "p secret", "q")
    caught.value.debug(local=True)
    assert "\n21\n" in capsys.readouterr().out


def test_a_call_that_does_not_fail_here_says_so(pool: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as caught:
        pool.call("debugtasks.fails_in_a_worker", 1)
    with pytest.raises(DebugUnavailableError, match="returned without an error: what failed "
                       "depends on the worker's own state"):
        caught.value.debug(local=True)


def test_arguments_too_large_to_send_back_are_named(pool: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as caught:
        pool.call("debugtasks.outer", "x" * (65 * 1024))
    with pytest.raises(DebugUnavailableError, match=r"arguments did not come back with it .* "
                       r"larger than the 64 KiB a failure's reply carries"):
        caught.value.debug(local=True)


def test_resolve_here_finds_targets_as_the_caller_names_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import debugtasks

    assert resolve_here("debugtasks.crunch") is debugtasks.crunch
    assert resolve_here("len") is len
    main = sys.modules["__main__"]
    monkeypatch.setattr(main, "notebook_function", debugtasks.inner, raising=False)
    assert resolve_here("notebook_function") is debugtasks.inner
    assert resolve_here("__main__.notebook_function") is debugtasks.inner
    with pytest.raises(DebugUnavailableError, match="'only_in_workers' is not defined in this "
                       r"interpreter \(a %%parallel cell"):
        resolve_here("only_in_workers")
    with pytest.raises(DebugUnavailableError, match="defined inside another, or a lambda"):
        resolve_here("debugtasks.f.<locals>.g")
    with pytest.raises(DebugUnavailableError, match="is a str here, not a function"):
        resolve_here("debugtasks.__name__")
