"""InterpreterPool: the executor, the Python face of the C++ engine.

What it shares with ProcessPool is engine_pool.EnginePool's. Its parts live
beside it in this package: futures (the Future of a call), map, encoding (a
request, encoded), replies (what a reply means), exit_policy (engines still
running at exit) and engine (the C++ module); what a pool reports is
interp_rpc.records.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from interp_rpc._pool import exit_policy, post_mortem, replies
from interp_rpc._pool.chunks import chunk_results
from interp_rpc._pool.encoding import EncodedCall
from interp_rpc._pool.engine import WORKER_SOURCE, _core, require_engine
from interp_rpc._pool.engine_pool import EnginePool
from interp_rpc._pool.everywhere import EverywhereRun
from interp_rpc._pool.validation import check_timeout
from interp_rpc.errors import CallTimeoutError, RemoteError

__all__ = ["InterpreterPool"]


class InterpreterPool(EnginePool["_core.CallHandle"]):
    """A warm pool of subinterpreters, each on its own OS thread with its own GIL.

    ``init`` is source code run once in every worker before it serves calls;
    ``init_timeout`` bounds how long the constructor waits for every worker to
    be ready (None: no limit). ``max_workers``, the Executor spelling of
    ``workers``, takes precedence when given.
    """

    _engine: _core.Engine

    def __init__(self, workers: int = 4, init: str | None = None,
                 init_timeout: float | None = 30.0, *, max_workers: int | None = None) -> None:
        super().__init__(workers, init, init_timeout, max_workers)
        post_mortem.register_pool(self)

    def _start_engine(self, workers: int, setup: bytes) -> _core.Engine:
        require_engine()
        exit_policy.prepare()  # before the engine exists: it is stopped at exit whatever happens
        return _core.Engine(workers, WORKER_SOURCE.read_text(), str(WORKER_SOURCE), setup)

    # ------------------------------------------------------------------ calls

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

    # ----------------------------------------- for live views (the notebook's)

    def log_position(self) -> tuple[int, int]:
        """(the newest call record's ``seq``, the id the next call gets): a
        run started after this reads its own calls from ``call_records(seq)``
        with ``id`` at least that one, never another's that finishes meanwhile."""
        records = self.call_records()
        return (records[-1].seq if records else 0), int(self._engine.last_call_id) + 1

    def render_status(self, target: str = "", total: int = 0, baseline: int = 0,
                      started_ns: int = 0, stuck_after: float | None = None,
                      note: str = "") -> tuple[str, str]:
        """The status table (HTML, text) as the engine draws it, with a
        progress line for a run of ``total`` items of ``target`` begun at
        ``started_ns``: its items done are the pool's minus ``baseline``. A
        worker busy for ``stuck_after`` seconds (None: the engine's default)
        is "stuck". ``note``: a line under the table."""
        if stuck_after is None:
            stuck_after = _core.DEFAULT_STUCK_AFTER
        html_text, text = self._engine.render_live(target, total, baseline, started_ns,
                                                   stuck_after, note)
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

    def output_labels(self) -> dict[int, int]:
        """Each worker's index, by the label of the output it relays: its
        interpreter's id."""
        return {int(i): index for index, i in enumerate(self._engine.interpreter_ids)}

    def __repr__(self) -> str:
        state = "closed" if self._closed else "broken" if self.broken else "open"
        return f"<InterpreterPool workers={self.workers} {state}>"


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
