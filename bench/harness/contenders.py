"""The contenders: one way each to run Python functions on W workers.

A ``Contender`` starts ``Session``s (a pool of W warm workers) and says which
metrics do not apply to it. Every session offers the same four operations, so
the measures are written once, whatever runs underneath.

This module is imported by ready_probe.py before it starts its clock, so it
imports nothing that a contender's init would import (json, decimal), and
ipyparallel and anyio only when that contender is used.
"""

from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.pool
import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import (
    Executor,
    Future,
    InterpreterPoolExecutor,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
)
from typing import Any, ClassVar

import workloads

from harness.sampling import Sampling, sample_blocking
from interp_rpc import InterpreterPool

# Both process contenders use forkserver: the safe default on Linux since 3.14
# (fork is unsafe in a process with threads), and far cheaper than spawn.
START_METHOD = "forkserver"

# The init every contender runs in each worker before it is "ready" (measure 5).
INIT_SOURCE = "import json, decimal"

BENCH_DIR = os.path.dirname(os.path.abspath(workloads.__file__))


class CallLost(TimeoutError):
    """A call gave no result in time: lost, or hung in its worker."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no result after {seconds:g} s (a lost completion, or a hung worker)")


class Session(ABC):
    """W started workers, warm or about to be.

    Waits for a result are bounded by ``call_timeout``: a lost call then
    becomes a CallLost error for its measure, and the run goes on.
    """

    def __init__(self, call_timeout: float) -> None:
        self.call_timeout = call_timeout

    @abstractmethod
    def run_all(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Submits every call at once, then waits for all the results, in order."""

    @abstractmethod
    def submit_result(self, fn: Callable[..., Any], *args: Any) -> Any:
        """One call, submitted then waited for: ``submit(...).result()``."""

    @abstractmethod
    def map(self, fn: Callable[..., Any], items: list[Any], chunksize: int | None) -> list[Any]:
        """The contender's own map, with its default chunking when chunksize is None."""

    def submit_latency_us(self, identity: Callable[[int], int], plan: Sampling) -> list[float]:
        """Sorted microseconds of single calls ``identity(i)``, one at a time, each
        submitted then waited for, the way this contender's users make one call."""
        return sample_blocking(functools.partial(self.submit_result, identity), plan)

    @abstractmethod
    def close(self) -> None: ...


class Contender(ABC):
    key: ClassVar[str]  # the name --only takes and the JSON uses
    label: ClassVar[str]  # for tables
    short: ClassVar[str]  # for the chart
    # How its users make one call and wait for it (the latency's first way).
    submit_way: ClassVar[str] = "submit→result"
    # Metric (or whole measure) -> why it does not apply to this contender.
    not_applicable: ClassVar[Mapping[str, str]] = {}
    # Calls take milliseconds (ipyparallel): the measures take fewer samples.
    slow: ClassVar[bool] = False
    # Its init runs in the caller's own interpreter (threads), so the ready
    # probe must check json and decimal are not imported already.
    init_in_caller: ClassVar[bool] = False

    def na_reason(self, measure: str, metric: str) -> str | None:
        return self.not_applicable.get(metric) or self.not_applicable.get(measure)

    def preload(self) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """Imports what the contender needs, so a timed start does not pay for it."""

    @abstractmethod
    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        """A session of ``workers`` workers; with ``init``, each imports json and decimal."""

    def shutdown(self) -> None:  # noqa: B027 - an optional hook, a no-op by default
        """Releases what sessions share (ipyparallel's cluster)."""


_CALL_NA = "call() is interp-rpc's own API"


# ------------------------------------------------------------------ sequential


class _SequentialSession(Session):
    def run_all(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        return [fn(*args) for args in calls]

    def submit_result(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    def map(self, fn: Callable[..., Any], items: list[Any], chunksize: int | None) -> list[Any]:
        return list(map(fn, items))

    def close(self) -> None:
        pass


class Sequential(Contender):
    key = "sequential"
    label = "sequential (no pool)"
    short = "sequential"
    not_applicable: ClassVar[Mapping[str, str]] = {
        "latency": "no handoff: a plain function call",
        "items_per_s_chunksize1": "the builtin map has no chunks",
        "payload": "nothing crosses a boundary",
        "ready": "no pool to start",
    }

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        return _SequentialSession(call_timeout)


# ------------------------------------------------------------------ executors


class _ExecutorSession(Session):
    def __init__(self, executor: Executor, call_timeout: float) -> None:
        super().__init__(call_timeout)
        self._executor = executor

    def run_all(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        futures = [self._executor.submit(fn, *args) for args in calls]
        return [self._result(future) for future in futures]

    def submit_result(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._result(self._executor.submit(fn, *args))

    def _result(self, future: Future[Any]) -> Any:
        try:
            return future.result(self.call_timeout)
        except TimeoutError:
            raise CallLost(self.call_timeout) from None

    def map(self, fn: Callable[..., Any], items: list[Any], chunksize: int | None) -> list[Any]:
        if chunksize is None:
            return list(self._executor.map(fn, items))
        return list(self._executor.map(fn, items, chunksize=chunksize))

    def close(self) -> None:
        self._executor.shutdown(wait=True)


class Threads(Contender):
    key = "threads"
    label = "threads (ThreadPoolExecutor)"
    short = "threads"
    not_applicable: ClassVar[Mapping[str, str]] = {
        "call_p50_us": _CALL_NA,
        "call_p99_us": _CALL_NA,
        "items_per_s_chunksize1": "ThreadPoolExecutor.map ignores chunksize",
    }
    init_in_caller = True

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        initializer = workloads.import_json_decimal if init else None
        return _ExecutorSession(ThreadPoolExecutor(workers, initializer=initializer),
                                call_timeout)


class InterpRpcSession(_ExecutorSession):
    """interp-rpc's pool is an Executor, and it also has call() and a list map()."""

    def __init__(self, pool: InterpreterPool, call_timeout: float) -> None:
        super().__init__(pool, call_timeout)
        self._pool = pool

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        # No timeout here: pool.call(timeout=) would cost the hot path a
        # deadline check, and call() waits on the engine itself, without a
        # Future that could be left unsettled.
        return self._pool.call(fn, *args)

    def map(self, fn: Callable[..., Any], items: list[Any], chunksize: int | None) -> list[Any]:
        return list(self._pool.map(fn, items, chunksize=chunksize))


class InterpRpc(Contender):
    key = "interp-rpc"
    label = "interp-rpc (InterpreterPool)"
    short = "interp-rpc"

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        return InterpRpcSession(InterpreterPool(workers, init=INIT_SOURCE if init else None),
                                call_timeout)


class StdlibInterpreters(Contender):
    key = "ipe"
    label = "InterpreterPoolExecutor (stdlib)"
    short = "InterpreterPoolExecutor"
    not_applicable: ClassVar[Mapping[str, str]] = {
        "call_p50_us": _CALL_NA,
        "call_p99_us": _CALL_NA,
        "items_per_s_chunksize1": "InterpreterPoolExecutor.map ignores chunksize",
    }

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        initializer = workloads.import_json_decimal if init else None
        return _ExecutorSession(InterpreterPoolExecutor(workers, initializer=initializer),
                                call_timeout)


class Processes(Contender):
    key = "processes"
    label = f"ProcessPoolExecutor ({START_METHOD})"
    short = "ProcessPoolExecutor"
    not_applicable: ClassVar[Mapping[str, str]] = {
        "call_p50_us": _CALL_NA,
        "call_p99_us": _CALL_NA,
        "items_per_s_chunksize1": "its default chunksize is already 1",
    }

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        initializer = workloads.import_json_decimal if init else None
        return _ExecutorSession(ProcessPoolExecutor(
            workers, mp_context=multiprocessing.get_context(START_METHOD),
            initializer=initializer), call_timeout)


# ------------------------------------------------------------------ multiprocessing.Pool


def _async_result(result: Any, timeout: float) -> Any:
    """The value of an mp.Pool or ipyparallel AsyncResult, waiting at most ``timeout``."""
    result.wait(timeout)
    if not result.ready():
        raise CallLost(timeout)
    return result.get()


class _MpPoolSession(Session):
    def __init__(self, pool: multiprocessing.pool.Pool, call_timeout: float) -> None:
        super().__init__(call_timeout)
        self._pool = pool

    def run_all(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        pending = [self._pool.apply_async(fn, args) for args in calls]
        return [_async_result(result, self.call_timeout) for result in pending]

    def submit_result(self, fn: Callable[..., Any], *args: Any) -> Any:
        return _async_result(self._pool.apply_async(fn, args), self.call_timeout)

    def map(self, fn: Callable[..., Any], items: list[Any], chunksize: int | None) -> list[Any]:
        return self._pool.map(fn, items, chunksize)

    def close(self) -> None:
        self._pool.close()
        self._pool.join()


class MpPool(Contender):
    key = "mp-pool"
    label = f"multiprocessing.Pool ({START_METHOD})"
    short = "mp.Pool"
    not_applicable: ClassVar[Mapping[str, str]] = {
        "call_p50_us": _CALL_NA,
        "call_p99_us": _CALL_NA,
    }

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        initializer = workloads.import_json_decimal if init else None
        context = multiprocessing.get_context(START_METHOD)
        return _MpPoolSession(context.Pool(workers, initializer=initializer), call_timeout)


# ------------------------------------------------------------------ ipyparallel


class _IpyparallelSession(Session):
    """A load-balanced view for single calls (one task per engine at a time),
    and a direct view for map, which is how ipyparallel maps across engines."""

    def __init__(self, client: Any, engine_ids: list[int], call_timeout: float) -> None:
        super().__init__(call_timeout)
        self._balanced = client.load_balanced_view(targets=engine_ids)
        self._direct = client[engine_ids]

    def run_all(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        pending = [self._balanced.apply_async(fn, *args) for args in calls]
        return [_async_result(result, self.call_timeout) for result in pending]

    def submit_result(self, fn: Callable[..., Any], *args: Any) -> Any:
        return _async_result(self._balanced.apply_async(fn, *args), self.call_timeout)

    def map(self, fn: Callable[..., Any], items: list[Any], chunksize: int | None) -> list[Any]:
        return list(self._direct.map_sync(fn, items))

    def close(self) -> None:
        pass  # the engines belong to the contender's cluster, reused by the next session


class Ipyparallel(Contender):
    """A local ipyparallel cluster (controller + engines as processes).

    Starting one takes seconds, so one cluster serves every session: a
    W-worker session uses the first W engines and leaves the others idle.
    """

    key = "ipyparallel"
    label = "ipyparallel (local cluster)"
    short = "ipyparallel"
    not_applicable: ClassVar[Mapping[str, str]] = {
        "call_p50_us": _CALL_NA,
        "call_p99_us": _CALL_NA,
        "items_per_s_chunksize1": "DirectView.map splits the items evenly; no chunksize",
    }
    slow = True

    def __init__(self, max_workers: int) -> None:
        self._max_workers = max_workers
        self._cluster: Any = None
        self._client: Any = None

    def preload(self) -> None:
        import ipyparallel  # type: ignore[import-untyped]  # noqa: F401

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        if init:
            # The ready probe: a fresh cluster of exactly W engines, each
            # initialised like every other contender's workers.
            self.shutdown()
            self._start(workers)
            self._client[:].execute(INIT_SOURCE, block=True)
        elif self._client is None:
            self._start(max(workers, self._max_workers))
        return _IpyparallelSession(self._client, self._client.ids[:workers], call_timeout)

    def _start(self, engines: int) -> None:
        import ipyparallel

        with warnings.catch_warnings():
            # IPython warns that the sandbox's HOME is read-only and that the
            # host name does not resolve; neither affects a local cluster.
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            self._cluster = ipyparallel.Cluster(n=engines, log_level=40)
            self._client = self._cluster.start_and_connect_sync(activate=False)
        # Engines are separate processes started by ipengine: they must be told
        # where workloads.py is, and import it so calls find it by reference.
        self._client[:].execute(
            f"import sys; sys.path.insert(0, {BENCH_DIR!r}); import workloads", block=True)

    def shutdown(self) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.stop_cluster_sync()
        self._cluster = self._client = None


ANYIO_KEY = "anyio"
DEFAULT_KEYS = ("sequential", "threads", "interp-rpc", "ipe", ANYIO_KEY, "processes", "mp-pool")
ALL_KEYS = (*DEFAULT_KEYS, "ipyparallel")


def make_contender(key: str, max_workers: int) -> Contender:
    """The contender named ``key`` (one of ALL_KEYS)."""
    simple: dict[str, type[Contender]] = {
        c.key: c for c in (Sequential, Threads, InterpRpc, StdlibInterpreters, Processes, MpPool)}
    if key == Ipyparallel.key:
        return Ipyparallel(max_workers)
    if key == ANYIO_KEY:
        # Imported here, not at the top: the ready probe of every other
        # contender must not pay for importing anyio.
        from harness.anyio_contender import AnyioInterpreters

        return AnyioInterpreters()
    return simple[key]()
