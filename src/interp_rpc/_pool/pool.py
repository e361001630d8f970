"""InterpreterPool: the executor, the Python face of the C++ engine.

Its parts live beside it in this package: futures (the Future of a call),
map, encoding (a request, encoded), replies (what a reply means), exit_policy
(engines still running at exit) and engine (the C++ module); what a pool
reports is interp_rpc.records.
"""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, Self

from interp_rpc._pool import exit_policy, replies, targets
from interp_rpc._pool.chunks import chunk_results
from interp_rpc._pool.encoding import EncodedCall, encode_call
from interp_rpc._pool.engine import WORKER_SOURCE, _core, require_engine
from interp_rpc._pool.everywhere import EverywhereRun
from interp_rpc._pool.futures import CallFuture
from interp_rpc._pool.map import MapIterator, MapRun
from interp_rpc._pool.validation import check_init, check_timeout, check_workers
from interp_rpc._worker import wire
from interp_rpc.errors import (
    CallTimeoutError,
    PoolClosedError,
    PoolInitError,
    RemoteError,
    WorkerInitFailure,
)
from interp_rpc.profiling.recorder import ProfileRecorder, ProfileSession
from interp_rpc.records import CallRecord, EngineRecord, PoolStats, WorkerStatus

__all__ = ["InterpreterPool"]

class InterpreterPool(Executor):
    """A warm pool of subinterpreters, each on its own OS thread with its own GIL.

    ``init`` is source code run once in every worker before it serves calls;
    ``init_timeout`` bounds how long the constructor waits for every worker to
    be ready (None: no limit). ``max_workers``, the Executor spelling of
    ``workers``, takes precedence when given.
    """

    def __init__(self, workers: int = 4, init: str | None = None,
                 init_timeout: float | None = 30.0, *, max_workers: int | None = None) -> None:
        if max_workers is not None:  # the Executor spelling, which wins
            workers = check_workers("max_workers", max_workers)
        else:
            check_workers("workers", workers)
        check_init(init)
        check_timeout("init_timeout", init_timeout)
        require_engine()
        self._lock = threading.Lock()
        self._closed = False
        self._profiling = ProfileRecorder()
        exit_policy.prepare()  # before the engine exists: it is stopped at exit whatever happens
        setup = {"sys_path": list(sys.path), "main": targets.main_module_spec(), "init": init}
        self._engine = _core.Engine(workers, WORKER_SOURCE.read_text(), str(WORKER_SOURCE),
                                    wire.dumps(setup))
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

    @staticmethod
    def _init_failure(report: dict[str, Any]) -> WorkerInitFailure:
        index = int(report["index"])
        if not report["finished"]:
            return WorkerInitFailure(index, timed_out=True, error=None)
        kind, reply = report["kind"], report["reply"]
        if kind == wire.SETUP_FAILED:
            return WorkerInitFailure(index, timed_out=False, error=replies.remote_error(
                wire.loads(reply), target="init", worker=index))
        return WorkerInitFailure(index, timed_out=False, error=None,
                                 detail=reply.decode("utf-8", "replace"))

    # ------------------------------------------------------------------ calls

    def submit(self, fn: Callable[..., Any] | str, /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Dispatch ``fn(*args, **kwargs)`` without blocking."""
        future = CallFuture(self, fn, args, kwargs)
        future._attach(self._dispatch(fn, args, kwargs, owner=future))
        return future

    def call(self, target: Callable[..., Any] | str, /, *args: Any,
             timeout: float | None = None, **kwargs: Any) -> Any:
        """Dispatch ``target(*args, **kwargs)`` and block until it returns.

        With ``timeout``, raise CallTimeoutError when it has not returned in
        time; the call itself goes on running in its worker.
        """
        check_timeout("timeout", timeout)
        return self._call(self._encode(target, args, kwargs), timeout, target, args, kwargs)

    def _call(self, encoded: EncodedCall, timeout: float | None, target: object,
              args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run an encoded call; ``target``, ``args`` and ``kwargs`` are what
        was encoded, to name what failed."""
        name = encoded.name
        status, kind, reply, worker, call_id = self._engine.call(
            name, encoded.data, encoded.buffers, timeout, encoded.submitted_ns,
            encoded.serialize_ns)
        if status == _core.STATUS_TIMED_OUT:
            assert timeout is not None
            self._profiling.gave_up(call_id)
            busy_worker, seconds = self._busy_worker(call_id)
            raise CallTimeoutError(name, timeout, worker=busy_worker, running_seconds=seconds)
        if status in (_core.STATUS_CLOSED, _core.STATUS_BROKEN):
            raise replies.refusal(status, name)
        assert reply is not None
        return replies.reply_value(status, kind, reply, worker, target, args, kwargs)

    def map(self, fn: Callable[..., Any] | str, *iterables: Iterable[Any],
            timeout: float | None = None, chunksize: int | None = None,
            buffersize: int | None = None, errors: str = "raise") -> MapIterator:
        """``fn(item)`` for every item, in parallel: an iterator over the
        results, in order, as ``Executor.map``.

        With several iterables, ``fn(*items)`` for each tuple of items, as the
        builtin ``map``. The work is submitted by the call (all of it, or
        ``buffersize`` items ahead of the consumer, so infinite iterables
        work); ``timeout`` runs from the call and is raised by ``__next__``.
        Items go out in chunks, adaptive unless ``chunksize`` is given. The
        first failing item raises, in order; that, a timeout, or closing the
        iterator cancels the chunks that have not started. With
        ``errors="collect"`` a failing item's RemoteError takes its place among
        the results instead, and the map goes on.
        """
        return MapRun(self, fn, iterables, timeout=timeout, chunksize=chunksize,
                      buffersize=buffersize, errors=errors).results()

    def run_everywhere(self, target: Callable[..., Any] | str, args: tuple[Any, ...] = (),
                       kwargs: dict[str, Any] | None = None, *, timeout: float | None = None,
                       workers: Collection[int] | None = None) -> EverywhereRun:
        """Send ``target(*args, **kwargs)`` once to each worker (or each of
        ``workers``), for code that defines things everywhere, as %%parallel
        does. ``wait()`` on the run gives each worker's result or the error it
        stands for; ``timeout`` is a deadline for all of them."""
        check_timeout("timeout", timeout)
        encoded = self._encode(target, args, kwargs or {})
        chosen = range(self.workers) if workers is None else workers
        return EverywhereRun(self, encoded, target, timeout, chosen)

    # ---------------------- work another pool encoded (a ClusterPool's, sent here)

    def call_encoded(self, encoded: EncodedCall) -> Any:
        """Run a call another pool encoded (encoding.encode_call), as its
        bytes came: its value, or the error it stands for, raised."""
        self._check_open(encoded.name)
        return self._call(encoded, None, encoded.name, (), {})

    def map_chunk_encoded(self, encoded: EncodedCall, items: int,
                          on_submitted: Callable[[int], None] | None = None
                          ) -> tuple[list[Any], RemoteError | None]:
        """Run a map chunk of ``items`` items another pool encoded (its
        arguments from chunks.chunk_arguments, its first item numbered 0):
        its results and the error of its failing item, as
        chunks.chunk_results gives them. ``on_submitted(call id)`` runs once
        it is queued, before it can finish."""
        self._check_open(encoded.name)
        handle = self._submit(encoded, item_index=0, item_count=items)
        if on_submitted is not None:
            on_submitted(handle.id)
        handle.wait(None)
        return chunk_results(handle, self._profiling, encoded.name, encoded.name, 0)

    def run_everywhere_encoded(self, encoded: EncodedCall, *, timeout: float | None = None,
                               workers: Collection[int] | None = None) -> EverywhereRun:
        """run_everywhere() of a call another pool encoded."""
        check_timeout("timeout", timeout)
        self._check_open(encoded.name)
        chosen = range(self.workers) if workers is None else workers
        return EverywhereRun(self, encoded, encoded.name, timeout, chosen)

    # -------------------------------------------------------------- lifecycle

    def close(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop accepting calls and shut every worker down.

        ``wait=True`` lets queued calls finish first; ``wait=False`` cancels
        them. Running calls cannot be stopped: after ``timeout`` seconds (None:
        no limit), close() gives up on workers still running a call, cancels
        the calls still queued (they would wait for those workers), warns
        with a RuntimeWarning naming each worker, and returns.
        """
        check_timeout("timeout", timeout)
        left = self._stop(cancel=not wait, timeout=timeout)
        if not left:
            return
        # A queued call would wait for a worker that may never be free.
        left = self._engine.close(cancel_pending=True, timeout=0)
        if any(target for _, target, _ in left):  # not only threads that are ending
            warnings.warn(_gave_up_message(timeout, left), RuntimeWarning, stacklevel=2)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """The Executor spelling of close(): ``wait=False`` returns at once,
        leaving the workers to finish queued calls on their own."""
        self._stop(cancel=cancel_futures, timeout=None if wait else 0)

    def _stop(self, *, cancel: bool, timeout: float | None) -> list[tuple[int, str, float]]:
        """Close the engine. Returns the workers whose threads had not ended
        when ``timeout`` ran out: (index, target or "", seconds running)."""
        with self._lock:
            self._closed = True
        return list(self._engine.close(cancel_pending=cancel, timeout=timeout))

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
                list(pool.map(f, items))
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

        The engine keeps the last ``CALL_LOG_CAPACITY`` (16384). ``after`` is a ``seq`` seen before:
        polling with the largest ``seq`` seen so far returns every record
        exactly once.
        """
        return [EngineRecord._make(r).public() for r in self._engine.records(after)]

    # ----------------------------------------- for live views (the notebook's)

    def log_position(self) -> tuple[int, int]:
        """(the newest call record's ``seq``, the id the next call gets): a
        run started after this reads its own calls from ``call_records(seq)``
        with ``id`` at least that one, never another's that finishes meanwhile."""
        records = self.call_records()
        return (records[-1].seq if records else 0), int(self._engine.last_call_id) + 1

    def render_status(self, target: str = "", total: int = 0, baseline: int = 0,
                      started_ns: int = 0, stuck_after: float | None = None
                      ) -> tuple[str, str]:
        """The status table (HTML, text) as the engine draws it, with a
        progress line for a run of ``total`` items of ``target`` begun at
        ``started_ns``: its items done are the pool's minus ``baseline``. A
        worker busy for ``stuck_after`` seconds (None: the engine's default)
        is "stuck"."""
        if stuck_after is None:
            stuck_after = _core.DEFAULT_STUCK_AFTER
        html_text, text = self._engine.render_live(target, total, baseline, started_ns,
                                                   stuck_after)
        return str(html_text), str(text)

    def map_item_counter(self, since: tuple[int, int]) -> _core.MapItemCounter:
        """Counts the items of one map done so far (its ``update()``), for a
        map begun at ``since`` (``log_position()`` then): items of its replied
        chunks only, never those of a call that finished before it or of
        another map. The engine's rule, which the kernel's live view applies
        too; each update reads only what was logged since the last."""
        return self._engine.map_item_counter(*since)

    def live_feed(self) -> object:
        """The engine's status feed, for a publisher that reads it without
        the GIL (the interp-rpc kernel's live view)."""
        return self._engine.live_feed()

    def worker_indices(self) -> list[int]:
        """0 to workers - 1: the indices ``run_everywhere(workers=...)``
        accepts, and that statuses, records and errors name workers by."""
        return list(range(self.workers))

    def interpreter_ids(self) -> list[int]:
        """Each worker's interpreter id, by worker index."""
        return [int(i) for i in self._engine.interpreter_ids]

    def __repr__(self) -> str:
        state = "closed" if self._closed else "broken" if self.broken else "open"
        return f"<InterpreterPool workers={self.workers} {state}>"

    # -------------------------------------------------------------- internals

    def _encode(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any],
                mode: str = "call", item_index: int = -1,
                normalized: tuple[targets.TargetSpec, str] | None = None
                ) -> EncodedCall:
        """The request, encoded (see encoding.encode_call)."""
        return encode_call(target, args, kwargs, mode=mode, item_index=item_index,
                           normalized=normalized, check_open=self._check_open)

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise PoolClosedError(f"the pool is closed; cannot call {name!r}")

    def _dispatch(self, target: object, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                  owner: object = None) -> _core.CallHandle:
        return self._submit(self._encode(target, args, kwargs), owner=owner)

    def _submit(self, encoded: EncodedCall, *, owner: object = None,
                item_index: int = -1, item_count: int = 1, worker: int = -1) -> _core.CallHandle:
        status, handle = self._engine.submit(encoded.name, encoded.data, encoded.buffers,
                                             item_index, item_count, owner,
                                             encoded.submitted_ns, encoded.serialize_ns, worker)
        if handle is None:
            raise replies.refusal(status, encoded.name)
        return handle

    def _submit_many(self, batch: list[tuple[int, int, EncodedCall]]) -> list[_core.CallHandle]:
        """Queue a map's chunks together, all or none: each is (its first
        item's index, its item count, the encoded chunk)."""
        status, handles = self._engine.submit_many([
            (e.name, e.data, e.buffers, start, count, e.submitted_ns, e.serialize_ns)
            for start, count, e in batch])
        if handles is None:
            raise replies.refusal(status, batch[0][2].name)
        return handles

    def _busy_worker(self, call_id: int) -> tuple[int | None, float | None]:
        """(worker, seconds) of the worker running call ``call_id``, if one is."""
        for w in self._engine.status():
            if w["call_id"] == call_id:
                return int(w["index"]), float(w["busy_seconds"])
        return None, None


def _gave_up_message(timeout: float | None, left: list[tuple[int, str, float]]) -> str:
    running = [f"worker {index} running {target!r} for {seconds:.1f} s"
               for index, target, seconds in left if target]
    ending = [f"worker {index}" for index, target, _ in left if not target]
    message = (f"InterpreterPool.close() gave up after {timeout:g} s on {len(running)} stuck "
               f"worker(s): {'; '.join(running)}. A running call cannot be interrupted; its "
               "thread is left to finish on its own. Calls still queued were cancelled.")
    if ending:
        message += f" Still ending, with no call running: {', '.join(ending)}."
    return message


if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool

    _KEEPS_THE_CONTRACT: type[Pool] = InterpreterPool
