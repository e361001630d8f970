"""Every error pickles itself: an error raised in another process (a dask
worker's) reaches the caller as the same error, with the same attributes,
and a remote exception is still caught by ``except Original`` there."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import pytest

from interp_rpc import (
    MISSING,
    CallTimeoutError,
    InterpreterPool,
    InterpRpcError,
    PoolBrokenError,
    PoolClosedError,
    PoolInitError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
    WorkerDiedError,
    WorkerInitFailure,
)
from interp_rpc._pool.remote_classes import remote_error


def round_trip[E: BaseException](error: E) -> E:
    copy: E = pickle.loads(pickle.dumps(error))
    return copy


def remote(type_name: str, module: str = "builtins", **fields: object) -> RemoteError:
    return remote_error(remote_type_name=type_name, remote_module=module,
                        remote_message="it failed", remote_traceback="Traceback (...)\n",
                        **fields)


ERRORS: list[InterpRpcError] = [
    ShareabilityError("args[0]['key']", "function", "functions do not cross", item_index=4,
                      tree=[("arguments", ["args[0]"], 0), ("dict", ["'key'"], 0)]),
    TargetResolutionError("cannot import 'nope'", target="nope.f", failed_part="nope"),
    CallTimeoutError("mymodule.slow", 2.5, worker=1, running_seconds=2.6, completed=3,
                     total=10),
    WorkerDiedError("mymodule.crash", "worker 0 died"),
    PoolBrokenError("every worker of the pool has died"),
    PoolClosedError("the pool is closed"),
    PoolInitError([WorkerInitFailure(0, timed_out=True, error=None),
                   WorkerInitFailure(1, timed_out=False, error=remote("ImportError"))],
                  init_timeout=3.0),
    InterpRpcError("plain"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_every_error_round_trips_with_its_attributes(error: InterpRpcError) -> None:
    copy = round_trip(error)
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.args == error.args
    plain = {k: v for k, v in vars(error).items() if k != "failures"}
    assert {k: v for k, v in vars(copy).items() if k != "failures"} == plain


def test_init_failures_keep_their_remote_error() -> None:
    error = next(e for e in ERRORS if isinstance(e, PoolInitError))
    copy = round_trip(error)
    assert [f.worker for f in copy.failures] == [0, 1]
    assert copy.failures[0].timed_out and copy.failures[1].error is not None
    assert isinstance(copy.failures[1].error, ImportError)
    assert str(copy) == str(error)


def test_a_remote_error_comes_back_combined_with_its_class() -> None:
    error = remote("ZeroDivisionError", target="f", worker=1, item_index=7)
    error.partial_results = [1, MISSING]
    copy = round_trip(error)
    assert type(copy).__qualname__ == "RemoteError[ZeroDivisionError]"
    assert isinstance(copy, ZeroDivisionError) and isinstance(copy, RemoteError)
    assert (copy.target, copy.worker, copy.item_index) == ("f", 1, 7)
    assert copy.partial_results == [1, MISSING]
    assert str(copy) == str(error)


def test_an_unresolvable_class_stays_a_plain_remote_error() -> None:
    copy = round_trip(remote("Gone", module="no_such_module_here"))
    assert type(copy) is RemoteError
    assert copy.remote_type == "no_such_module_here.Gone"


def test_the_message_follows_the_fields() -> None:
    """A relaying process names where the error was raised after it was made."""
    error = remote("ValueError", target="f", worker=0)
    error.worker = 5
    assert "worker 5" in str(error) and "worker 0" not in str(error)


def test_a_pool_error_crosses_into_another_process(pool: InterpreterPool) -> None:
    with pytest.raises(ValueError) as caught:
        pool.call("errortasks.raise_builtin", "ValueError", "bad value")
    data = pickle.dumps(caught.value)
    script = textwrap.dedent("""
        import pickle, sys
        error = pickle.loads(sys.stdin.buffer.read())
        try:
            raise error
        except ValueError as caught:
            print(type(caught).__qualname__, caught.target, caught.worker in (0, 1),
                  caught.remote_message)
    """)
    done = subprocess.run([sys.executable, "-c", script], input=data, capture_output=True,
                          timeout=60, check=True)
    assert done.stdout.decode().split() == [
        "RemoteError[ValueError]", "errortasks.raise_builtin", "True", "bad", "value"]
