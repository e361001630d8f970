"""InterpreterPool: the Python face of the C++ engine."""

from __future__ import annotations

import atexit
import functools
import math
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import CancelledError, Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from interp_rpc import _exit_status, _targets, _wire
from interp_rpc._errors import (
    CallTimeoutError,
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
from interp_rpc._profiling import ProfileRecorder, ProfileSession

try:
    from interp_rpc import _core

    _ENGINE_UNAVAILABLE: str | None = None
except ImportError as exc:
    # In a worker (a script's __main__ imported there, or init= code), the
    # package imports but its engine does not: it runs in the main
    # interpreter only. Anything else is a broken installation.
    if "does not support loading in subinterpreters" not in str(exc):
        raise
    _ENGINE_UNAVAILABLE = (
        "InterpreterPool can only be created in the main interpreter, not inside a worker "
        "(if a script creates a pool at module level, put that code under "
        "'if __name__ == \"__main__\":', since workers import the script's module)"
    )

_WORKER_SOURCE = Path(__file__).with_name("_worker.py")

#: How long, at interpreter exit, a pool that is still open waits for running
#: calls before giving up on them (queued calls are cancelled at once).
EXIT_TIMEOUT = 1.0

# Adaptive chunking of map(): aim for this many chunks per worker, so work
# stays balanced, without sending more than this many items in one request.
_CHUNKS_PER_WORKER = 8
_MAX_CHUNK = 512


@dataclass(frozen=True)
class WorkerStatus:
    """One worker, as the engine's status board saw it (read without any GIL)."""

    index: int
    state: str  # "starting", "idle", "busy", "dead" or "stopped"
    target: str | None  # the running call's target
    item_index: int | None  # the running map item (first of its chunk)
    busy_seconds: float  # how long the running call has taken so far
    calls_done: int
    busy_seconds_total: float
    detail: str | None  # why a dead worker died
    call_id: int | None = None  # the running call's id (CallRecord.id once it finished)


@dataclass(frozen=True)
class CallRecord:
    """One finished request (a call, or a chunk of a map), for profiling.

    Times are ``time.monotonic_ns()`` values; costs are in nanoseconds.
    ``seq`` is the record's position in the log (the order calls finished);
    ``id`` the call's, in the order calls were submitted.
    """

    seq: int
    id: int
    worker: int
    target: str
    item_index: int | None
    item_count: int
    outcome: str
    submitted_ns: int
    enqueued_ns: int
    started_ns: int
    finished_ns: int
    serialize_ns: int
    deserialize_ns: int
    result_serialize_ns: int


@dataclass(frozen=True)
class PoolStats:
    """Totals since the pool started."""

    calls: int  # requests finished (a map chunk is one request)
    items: int  # items in them
    replied: int
    failed: int  # died, cancelled or broken
    queue_wait_seconds: float
    run_seconds: float
    serialize_seconds: float
    deserialize_seconds: float
    result_serialize_seconds: float


def _check_timeout(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__}")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number of seconds, not {value!r}")


class _CallFuture(Future[Any]):
    """A Future for a submitted call.

    ``result()`` waits on the engine directly, with the GIL released; the
    engine's completion thread settles the future for callbacks, waiters in
    ``concurrent.futures.wait`` and asyncio.
    """

    def __init__(self, pool: InterpreterPool, target: object, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> None:
        super().__init__()
        self._pool = pool
        self._target = target
        self._args = args
        self._kwargs = kwargs
        self._handle: _core.CallHandle | None = None
        # The engine can finish the call, and its completion thread call
        # _settle(), before submit() has attached the handle: _settle() then
        # leaves the work to _attach().
        self._attach_lock = threading.Lock()
        self._settle_deferred = False

    def _attach(self, handle: _core.CallHandle) -> None:
        with self._attach_lock:
            self._handle = handle
            deferred = self._settle_deferred
        if deferred:
            self._settle()

    def _settle(self) -> None:
        """Turn the reply into the future's outcome; the caller has claimed it."""
        with self._attach_lock:
            handle = self._handle
            if handle is None:
                self._settle_deferred = True
                return
        try:
            value = self._pool._reply_value(handle.status, handle.reply_kind, handle.reply,
                                            handle.worker, self._target, self._args, self._kwargs)
        except CancelledError:
            super().cancel()
        except BaseException as exc:
            self.set_exception(exc)
        else:
            self.set_result(value)
        finally:
            self._args, self._kwargs = (), {}

    def _wait_and_settle(self, timeout: float | None) -> None:
        handle = self._handle
        if handle is None or self.done():
            return
        if not handle.wait(timeout):
            raise TimeoutError()
        if handle.claim():
            self._settle()
            handle.release()

    def result(self, timeout: float | None = None) -> Any:
        self._wait_and_settle(timeout)
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait_and_settle(timeout)
        return super().exception(timeout)

    def cancel(self) -> bool:
        handle = self._handle
        if handle is None or self.done():
            return super().cancel()
        if not self._pool._engine.cancel(handle):
            return False  # already running: a call cannot be stopped
        if handle.claim():
            super().cancel()
            handle.release()
        return True


_live_pools: weakref.WeakSet[InterpreterPool] = weakref.WeakSet()


def _close_open_pools_at_exit() -> None:
    """Stop every open pool before CPython destroys leftover interpreters.

    CPython's finalization ends every subinterpreter still alive, even one a
    thread is running in, and that thread then crashes the process when its
    call returns. So at exit: queued calls are cancelled and running calls
    get EXIT_TIMEOUT seconds; calls still running then get a SystemExit
    raised in them (pure-Python code stops at once). If a worker is still
    stuck after that (blocked in C code), the process ends at once with
    os._exit and the program's own exit code, instead of crashing.
    """
    stuck = [pool for pool in list(_live_pools)
             if pool._stop(wait=False, timeout=EXIT_TIMEOUT, warn=False)]
    if not stuck:
        return
    running = "; ".join(f"worker {w.index} running {w.target!r} for {w.busy_seconds:.1f} s"
                        for pool in stuck for w in pool.status() if w.state == "busy")
    warnings.warn(f"interp-rpc: at interpreter exit, call(s) still running after "
                  f"{EXIT_TIMEOUT:g} s ({running}) are being stopped with SystemExit.",
                  RuntimeWarning, stacklevel=1)
    for pool in stuck:
        busy = [w.index for w in pool.status() if w.state == "busy"]
        pool._engine.interrupt(busy, EXIT_TIMEOUT)
    still = [pool for pool in stuck if pool._stop(wait=False, timeout=EXIT_TIMEOUT, warn=False)]
    names = "; ".join(f"worker {w.index} running {w.target!r} for {w.busy_seconds:.1f} s"
                      for pool in still for w in pool.status() if w.state == "busy")
    if not still:
        return
    code = _exit_status.program_exit_code()
    warnings.warn(
        f"interp-rpc: at interpreter exit, call(s) could not be stopped ({names}): they are "
        "blocked outside Python code. Ending the process now (exit code "
        f"{code}) rather than let CPython's finalization crash under them.",
        RuntimeWarning, stacklevel=1)
    _exit_status.end_process(code)


atexit.register(_close_open_pools_at_exit)


class InterpreterPool(Executor):
    """A warm pool of subinterpreters, each on its own OS thread with its own GIL.

    ``init`` is source code run once in every worker before it serves calls;
    ``init_timeout`` bounds how long the constructor waits for every worker to
    be ready (None: no limit).
    """

    def __init__(self, workers: int = 4, init: str | None = None,
                 init_timeout: float | None = 30.0) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise TypeError(f"workers must be an int, not {type(workers).__name__}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        if init is not None and not isinstance(init, str):
            raise TypeError(f"init must be source code (a str) or None, not {type(init).__name__}")
        _check_timeout("init_timeout", init_timeout)
        if _ENGINE_UNAVAILABLE is not None:
            raise InterpRpcError(_ENGINE_UNAVAILABLE)
        if init is not None:
            try:
                compile(init, "<init>", "exec")
            except SyntaxError as exc:
                raise ValueError(f"init is not valid Python: {exc}") from exc
        self._lock = threading.Lock()
        self._closed = False
        self._profiling = ProfileRecorder()
        setup = {"sys_path": list(sys.path), "main": _targets.main_module_spec(), "init": init}
        self._engine = _core.Engine(workers, _WORKER_SOURCE.read_text(), str(_WORKER_SOURCE),
                                    _wire.dumps(setup))
        try:
            reports = self._engine.wait_ready(init_timeout)
        except BaseException:
            self._engine.close(cancel_pending=True, timeout=0)
            raise
        failures = [self._init_failure(r) for r in reports if not r["ok"]]
        if failures:
            self._closed = True
            self._engine.close(cancel_pending=True, timeout=1.0)
            raise PoolInitError(failures, init_timeout=init_timeout)
        _live_pools.add(self)
        _exit_status.watch()

    @staticmethod
    def _init_failure(report: dict[str, Any]) -> WorkerInitFailure:
        index = int(report["index"])
        if not report["finished"]:
            return WorkerInitFailure(index, timed_out=True, error=None)
        kind, reply = report["kind"], report["reply"]
        if kind == _wire.SETUP_FAILED:
            return WorkerInitFailure(index, timed_out=False, error=_remote_error(
                _wire.loads(reply), target="init", worker=index))
        return WorkerInitFailure(index, timed_out=False, error=None,
                                 detail=reply.decode("utf-8", "replace"))

    # ------------------------------------------------------------------ calls

    def submit(self, fn: Callable[..., Any] | str, /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Dispatch ``fn(*args, **kwargs)`` without blocking."""
        future = _CallFuture(self, fn, args, kwargs)
        future._attach(self._dispatch(fn, args, kwargs, owner=future))
        return future

    def call(self, target: Callable[..., Any] | str, /, *args: Any,
             timeout: float | None = None, **kwargs: Any) -> Any:
        """Dispatch ``target(*args, **kwargs)`` and block until it returns.

        With ``timeout``, raise CallTimeoutError when it has not returned in
        time; the call itself goes on running in its worker.
        """
        _check_timeout("timeout", timeout)
        name, request, buffers, submitted, cost = self._encode(target, args, kwargs)
        status, kind, reply, worker, call_id = self._engine.call(
            name, request, buffers, timeout, submitted, cost)
        if status == _wire.STATUS_TIMED_OUT:
            assert timeout is not None
            self._profiling.gave_up(call_id)
            busy_worker, seconds = self._busy_worker(call_id)
            raise CallTimeoutError(name, timeout, worker=busy_worker, running_seconds=seconds)
        if status in (_wire.STATUS_CLOSED, _wire.STATUS_BROKEN):
            raise self._refusal(status, name)
        assert reply is not None
        return self._reply_value(status, kind, reply, worker, target, args, kwargs)

    def map(  # type: ignore[override]  # a list, not a lazy iterator: see docstring
            self, fn: Callable[..., Any] | str, *iterables: Iterable[Any],
            timeout: float | None = None, chunksize: int | None = None,
            buffersize: int | None = None) -> list[Any]:
        """``[fn(item) for item in iterable]`` in parallel, results in order.

        With several iterables, ``fn(*items)`` for each tuple of items, as the
        builtin ``map``. ``timeout`` is a deadline for the whole map. Items go
        out in chunks (adaptive unless ``chunksize`` is given); when an item
        raises, or on timeout or interrupt, chunks not yet started are
        cancelled. ``buffersize`` caps the number of chunks in flight.

        Unlike ``Executor.map``, which returns a lazy iterator, this returns
        the list of results once every item is done; iterating it works the
        same way.
        """
        return self._map(fn, iterables, timeout=timeout, chunksize=chunksize,
                         buffersize=buffersize)

    def _map(self, fn: Callable[..., Any] | str, iterables: tuple[Iterable[Any], ...], *,
             timeout: float | None = None, chunksize: int | None = None,
             buffersize: int | None = None,
             on_dispatched: Callable[[], None] | None = None) -> list[Any]:
        """map(), calling ``on_dispatched`` once the first chunk is queued (the
        notebook shows its live view only for a map that really started)."""
        if not iterables:
            raise TypeError("map() needs at least one iterable")
        _check_timeout("timeout", timeout)
        for name, value in (("chunksize", chunksize), ("buffersize", buffersize)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValueError(f"{name} must be a positive int or None, not {value!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        star = len(iterables) > 1
        items: list[Any] = list(zip(*iterables, strict=False)) if star else list(iterables[0])
        if not items:
            _targets.normalize(fn)
            return []
        size = chunksize or max(1, min(_MAX_CHUNK, math.ceil(
            len(items) / (self._engine.workers * _CHUNKS_PER_WORKER))))
        mode = self._profiling.chunk_mode("starchunk" if star else "chunk")
        # Every chunk is encoded before any is sent: an item that cannot cross
        # fails the map before anything runs.
        encoded = [(start, len(chunk), self._encode(fn, (chunk,), {}, mode, start))
                   for start in range(0, len(items), size)
                   for chunk in (items[start:start + size],)]
        pending: list[tuple[int, _core.CallHandle]] = []
        results: list[Any] = []
        chunks = iter(encoded)

        def send_next() -> bool:
            chunk = next(chunks, None)
            if chunk is None:
                return False
            start, count, request = chunk
            pending.append((start, self._submit(request, item_index=start, item_count=count)))
            return True

        try:
            while (buffersize is None or len(pending) < buffersize) and send_next():
                pass
            if on_dispatched is not None:
                on_dispatched()
            while pending:
                start, handle = pending.pop(0)
                remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not handle.wait(remaining):
                    assert timeout is not None
                    pending.insert(0, (start, handle))
                    self._profiling.gave_up(handle.id)
                    busy = self._busy_worker(handle.id)
                    raise CallTimeoutError(_targets.describe(fn), timeout, worker=busy[0],
                                           running_seconds=busy[1], completed=len(results),
                                           total=len(items))
                handle.claim()
                handle.release()
                values, failed, error, *marks = self._reply_value(
                    handle.status, handle.reply_kind, handle.reply, handle.worker, fn, (), {},
                    chunk_start=start)
                if marks:  # the chunk was profiled
                    self._profiling.item_marks(handle.id, marks[0], failed)
                results.extend(values)
                if failed >= 0:
                    raise _remote_error(_wire.loads(error), target=_targets.describe(fn),
                                        worker=handle.worker, item_index=start + failed)
                send_next()
        except BaseException:
            for _, handle in pending:
                self._engine.cancel(handle)
            raise
        return results

    def _on_every_worker(self, target: object, args: tuple[Any, ...] = (),
                         kwargs: dict[str, Any] | None = None, timeout: float | None = None
                         ) -> list[Any | BaseException]:
        """Run ``target`` once in each worker (for notebook cells that define
        things everywhere). One entry per worker: its result, or the error it
        stands for. ``timeout`` is a deadline for all of them."""
        kwargs = kwargs or {}
        deadline = None if timeout is None else time.monotonic() + timeout
        handles: list[_core.CallHandle | BaseException] = []
        for index in range(self.workers):
            try:
                handles.append(self._dispatch(target, args, kwargs, worker=index))
            except PoolBrokenError:
                handles.append(WorkerDiedError(_targets.describe(target),
                                               f"worker {index} is dead"))
        outcomes: list[Any | BaseException] = []
        for handle in handles:
            if isinstance(handle, BaseException):
                outcomes.append(handle)
                continue
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not handle.wait(remaining):
                assert timeout is not None
                busy, seconds = self._busy_worker(handle.id)
                outcomes.append(CallTimeoutError(_targets.describe(target), timeout,
                                                 worker=busy, running_seconds=seconds))
                continue
            handle.claim()
            handle.release()
            try:
                outcomes.append(self._reply_value(handle.status, handle.reply_kind, handle.reply,
                                                  handle.worker, target, args, kwargs))
            except InterpRpcError as exc:
                outcomes.append(exc)
        return outcomes

    # -------------------------------------------------------------- lifecycle

    def close(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls and shut every worker down.

        ``wait=True`` lets queued calls finish first; ``wait=False`` cancels
        them. Running calls cannot be stopped: after ``timeout`` seconds (None:
        no limit), close() gives up on workers still running a call, warns
        with a RuntimeWarning naming each of them, and returns.
        """
        _check_timeout("timeout", timeout)
        self._stop(wait=wait, timeout=timeout)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The Executor spelling of close(): ``wait=False`` returns at once,
        leaving the workers to finish queued calls on their own."""
        self._stop(wait=True, cancel=cancel_futures, timeout=None if wait else 0, warn=False)

    def _stop(self, *, wait: bool, timeout: float | None, cancel: bool | None = None,
              warn: bool = True, at_exit: bool = False) -> bool:
        """Close the engine; True if some worker was left running a call."""
        with self._lock:
            self._closed = True
        stuck = self._engine.close(cancel_pending=not wait if cancel is None else cancel,
                                   timeout=timeout)
        if not stuck:
            _live_pools.discard(self)  # every worker has exited
            return False
        if warn or at_exit:
            names = "; ".join(f"worker {index} running {target!r} for {seconds:.1f} s"
                              for index, target, seconds in stuck)
            who = "interp-rpc, at interpreter exit," if at_exit else "InterpreterPool.close()"
            warnings.warn(
                f"{who} gave up after {timeout:g} s on {len(stuck)} stuck worker(s): {names}. "
                "A running call cannot be interrupted; its thread is left to finish on its own.",
                RuntimeWarning, stacklevel=3)
        return True

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---------------------------------------------------------- observability

    @property
    def workers(self) -> int:
        return int(self._engine.workers)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def broken(self) -> bool:
        return bool(self._engine.broken)

    def status(self) -> list[WorkerStatus]:
        """What every worker is doing now."""
        return [WorkerStatus(index=w["index"], state=w["state"], target=w["target"],
                             item_index=w["item_index"], busy_seconds=w["busy_seconds"],
                             calls_done=w["calls_done"],
                             busy_seconds_total=w["busy_seconds_total"], detail=w["detail"],
                             call_id=w["call_id"] or None)
                for w in self._engine.status()]

    def stats(self) -> PoolStats:
        t = self._engine.totals()
        return PoolStats(calls=t["calls"], items=t["items"], replied=t["replied"],
                         failed=t["failed"], queue_wait_seconds=t["queue_wait_ns"] / 1e9,
                         run_seconds=t["run_ns"] / 1e9, serialize_seconds=t["serialize_ns"] / 1e9,
                         deserialize_seconds=t["deserialize_ns"] / 1e9,
                         result_serialize_seconds=t["result_serialize_ns"] / 1e9)

    def profile(self, functions: bool = False) -> ProfileSession:
        """Profile what the pool runs in a ``with`` block::

            with pool.profile(functions=True) as prof:
                pool.map(f, items)
            prof.stats.sort_stats("cumtime").print_stats(10)

        ``prof`` is a Profile: one record per map item or call (``.records``),
        a summary, ``export(path)`` (Chrome trace JSON or pstats) and, in a
        notebook, a timeline. Map items are timed one by one (short ones in
        groups). With ``functions=True`` every worker runs its calls under
        cProfile and ``prof.stats`` merges their stats.
        """
        return ProfileSession(self, self._profiling, functions)

    def call_records(self, after: int = 0) -> list[CallRecord]:
        """Finished requests, in the order they finished, oldest first.

        The engine keeps the last 16384. ``after`` is a ``seq`` seen before:
        polling with the largest ``seq`` seen so far returns every record
        exactly once.
        """
        return [CallRecord(seq=r["seq"], id=r["id"], worker=r["worker"], target=r["target"],
                           item_index=r["item_index"], item_count=r["item_count"],
                           outcome=r["outcome"], **r["timing"])
                for r in self._engine.records(after)]

    def __repr__(self) -> str:
        state = "closed" if self._closed else "broken" if self.broken else "open"
        return f"<InterpreterPool workers={self.workers} {state}>"

    # -------------------------------------------------------------- internals

    def _encode(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any],
                mode: str = "call", item_index: int = -1
                ) -> tuple[str, bytes, list[Any], int, int]:
        """(display name, request, out-of-band buffers, submitted ns, serialize ns)."""
        if mode == "call" and isinstance(target, functools.partial):
            target, args, kwargs = _targets.unwrap_partial(target, args, kwargs)
        spec, name = _targets.normalize(target)
        if self._closed:
            raise PoolClosedError(f"the pool is closed; cannot call {name!r}")
        submitted = _core.monotonic_ns()
        try:
            request, buffers = _wire.encode_request(spec, mode, args, kwargs)
        except Exception:
            raise self._argument_error(target, args, kwargs, mode, item_index) from None
        return name, request, buffers, submitted, _core.monotonic_ns() - submitted

    def _dispatch(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                  owner: object = None, worker: int = -1) -> _core.CallHandle:
        return self._submit(self._encode(target, args, kwargs), owner=owner, worker=worker)

    def _submit(self, encoded: tuple[str, bytes, list[Any], int, int], *, owner: object = None,
                item_index: int = -1, item_count: int = 1, worker: int = -1) -> _core.CallHandle:
        name, request, buffers, submitted, cost = encoded
        status, handle = self._engine.submit(name, request, buffers, item_index, item_count,
                                             owner, submitted, cost, worker)
        if handle is None:
            raise self._refusal(status, name)
        return handle

    @staticmethod
    def _refusal(status: str | int, name: str) -> InterpRpcError:
        if status in ("closed", _wire.STATUS_CLOSED):
            return PoolClosedError(f"the pool is closed; cannot call {name!r}")
        return PoolBrokenError(f"every worker of the pool has died; cannot call {name!r}")

    def _argument_error(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any],
                        mode: str, item_index: int) -> ShareabilityError:
        calls: list[tuple[int | None, tuple[Any, ...], dict[str, Any]]]
        calls = [(None, args, kwargs)] if mode == "call" else [
            (item_index + offset, tuple(item) if mode.startswith("starchunk") else (item,), {})
            for offset, item in enumerate(args[0])]
        for item, item_args, item_kwargs in calls:
            labels = _targets.argument_labels(target, item_args, item_kwargs)
            for position, (label, value) in enumerate(labels):
                culprit = _wire.find_culprit(value, label)
                if culprit is not None:
                    root = ("arguments", [name for name, _ in labels], position)
                    return ShareabilityError(culprit.path, culprit.value_type, culprit.reason,
                                             item_index=item, tree=[root, *culprit.levels])
        return ShareabilityError("the arguments", "tuple", "pickling the request failed")

    def _reply_value(self, status: int, kind: int, reply: bytes, worker: int, target: object,
                     args: tuple[Any, ...], kwargs: dict[str, Any],
                     chunk_start: int | None = None) -> Any:
        """The call's return value, or the error it stands for, raised."""
        if status == _wire.STATUS_REPLIED and kind == _wire.RETURNED:
            try:
                return _wire.loads(reply)
            except Exception as exc:
                raise ShareabilityError("return value", "unknown",
                                        f"it could not be loaded here: {exc}") from None
        name = _targets.describe(target)
        if status == _wire.STATUS_CANCELLED:
            raise CancelledError()
        if status == _wire.STATUS_WORKER_DIED:
            raise WorkerDiedError(name, reply.decode("utf-8", "replace"))
        if status == _wire.STATUS_POOL_BROKEN:
            raise PoolBrokenError(f"every worker of the pool has died; call to {name!r} "
                                  "never ran")
        if kind == _wire.RETURNED:
            try:
                return _wire.loads(reply)
            except Exception as exc:
                raise ShareabilityError("return value", "unknown",
                                        f"it could not be loaded here: {exc}") from None
        if kind == _wire.RAISED:
            raise _remote_error(_wire.loads(reply), target=name, worker=worker,
                                item_index=chunk_start)
        if kind == _wire.RESULT_UNSHAREABLE:
            culprit = _wire.loads(reply)
            item = None
            if chunk_start is not None:
                item = chunk_start + int(culprit.get("item_offset", 0))
            raise ShareabilityError(culprit["path"], culprit["value_type"], culprit["reason"],
                                    item_index=item, tree=culprit.get("levels"))
        if kind == _wire.TARGET_UNRESOLVED:
            info = _wire.loads(reply)
            raise TargetResolutionError(info["message"], target=name,
                                        failed_part=info["failed_part"])
        if kind == _wire.ARGUMENTS_UNLOADABLE:
            raise self._unloadable_argument_error(_wire.loads(reply), target, args, kwargs)
        raise InterpRpcError(f"internal error in the worker running {name!r}: "
                             f"{reply.decode('utf-8', 'replace')}")

    def _unloadable_argument_error(self, error: dict[str, str], target: object,
                                   args: tuple[Any, ...], kwargs: dict[str, Any]
                                   ) -> ShareabilityError:
        """The worker could not unpickle the arguments: find the value whose
        class (or function) the worker cannot import."""
        message = f"{error['type_name']}: {error['message']}"
        missing = _wire.unresolvable_reference(error["message"])
        if missing is not None:
            module, qualname = missing
            what = f"{module}.{qualname}" if qualname else f"module {module!r}"
            reason = f"the worker cannot import {what}: {message}"
            for label, value in _targets.argument_labels(target, args, kwargs):
                culprit = _wire.find_culprit(value, label, _wire.refers_to(module, qualname))
                if culprit is not None:
                    return ShareabilityError(culprit.path, culprit.value_type, reason)
            return ShareabilityError("an argument", "unknown", reason)
        return ShareabilityError("the arguments", "unknown",
                                 f"the worker could not load them: {message}")

    def _busy_worker(self, call_id: int) -> tuple[int | None, float | None]:
        """(worker, seconds) of the worker running call ``call_id``, if one is."""
        for w in self._engine.status():
            if w["call_id"] == call_id:
                return int(w["index"]), float(w["busy_seconds"])
        return None, None


def build_info() -> dict[str, object]:
    """The versions interp-rpc's C++ engine was compiled against."""
    if _ENGINE_UNAVAILABLE is not None:
        raise InterpRpcError(_ENGINE_UNAVAILABLE)
    return dict(_core.build_info())


def _remote_error(info: dict[str, str], *, target: str, worker: int | None,
                  item_index: int | None = None) -> RemoteError:
    return RemoteError(remote_type_name=info["type_name"], remote_module=info["module"],
                       remote_message=info["message"], remote_traceback=info["traceback"],
                       remote_qualname=info.get("qualname"), target=target, worker=worker,
                       item_index=item_index)
