"""interp-rpc: a warm pool of PEP 734 subinterpreters for Python 3.14.

    from interp_rpc import InterpreterPool

    with InterpreterPool(workers=4, init="import mymodule") as pool:
        result = pool.call("mymodule.process", {"n": 7})
        results = pool.map("mymodule.process", [{"n": i} for i in range(1000)])
"""

import sys

if sys.version_info < (3, 14):  # noqa: UP036 - a clear error on old Pythons
    raise RuntimeError(
        "interp-rpc needs Python 3.14 or newer: it is built on concurrent.interpreters "
        f"(PEP 734), which this Python ({sys.version.split()[0]}) does not have."
    )

from interp_rpc._pool.engine import build_info
from interp_rpc._pool.pool import InterpreterPool
from interp_rpc._version import __version__
from interp_rpc._worker.wire import borrow
from interp_rpc.errors import (
    MISSING,
    CallTimeoutError,
    DebugUnavailableError,
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
from interp_rpc.process import ProcessPool
from interp_rpc.profiling import ItemRecord, Profile
from interp_rpc.records import CallRecord, PoolStats, WorkerStatus


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext interp_rpc``: the %parallel magics and rich error displays."""
    from interp_rpc.notebook import load_ipython_extension as load

    load(ipython)  # type: ignore[arg-type]


def unload_ipython_extension(ipython: object) -> None:
    from interp_rpc.notebook import unload_ipython_extension as unload

    unload(ipython)  # type: ignore[arg-type]


__all__ = [
    "MISSING",
    "CallRecord",
    "CallTimeoutError",
    "DebugUnavailableError",
    "InterpRpcError",
    "InterpreterPool",
    "ItemRecord",
    "PoolBrokenError",
    "PoolClosedError",
    "PoolInitError",
    "PoolStats",
    "ProcessPool",
    "Profile",
    "RemoteError",
    "ShareabilityError",
    "TargetResolutionError",
    "WorkerDiedError",
    "WorkerInitFailure",
    "WorkerStatus",
    "__version__",
    "borrow",
    "build_info",
    "load_ipython_extension",
    "unload_ipython_extension",
]
