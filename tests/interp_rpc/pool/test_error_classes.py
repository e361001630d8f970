"""Every error interp-rpc raises is an InterpRpcError."""

from __future__ import annotations

import pytest

import interp_rpc
from interp_rpc import (
    CallTimeoutError,
    InterpRpcError,
    PoolBrokenError,
    PoolClosedError,
    PoolInitError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
    WorkerDiedError,
)


@pytest.mark.parametrize("cls", [CallTimeoutError, PoolBrokenError, PoolClosedError,
                                 PoolInitError, RemoteError, ShareabilityError,
                                 TargetResolutionError, WorkerDiedError])
def test_every_error_is_an_interp_rpc_error(cls: type[Exception]) -> None:
    assert issubclass(cls, InterpRpcError)
    assert issubclass(cls, Exception)
    assert cls.__name__ in interp_rpc.__all__


def test_call_timeout_error_is_a_timeout_error() -> None:
    assert issubclass(CallTimeoutError, TimeoutError)
    err = CallTimeoutError("mymodule.slow", 5.0, worker=1, running_seconds=5.2)
    assert (err.target, err.timeout, err.worker) == ("mymodule.slow", 5.0, 1)
    assert "worker 1 is still running it (5.2 s so far)" in str(err)


def test_worker_died_error_attributes() -> None:
    err = WorkerDiedError("mymodule.process", "worker 0 died: its thread failed")
    assert (err.target, err.detail) == ("mymodule.process", "worker 0 died: its thread failed")
    assert "mymodule.process" in str(err) and err.detail in str(err)


def test_the_fault_injection_hook_is_documented() -> None:
    import interp_rpc.testing

    assert interp_rpc.testing.__doc__ and "kill_worker" in interp_rpc.testing.__doc__
    assert interp_rpc.testing.kill_worker.__doc__
