"""anyio.to_interpreter.run_sync: the other subinterpreter pool users pick today.

anyio has no pool object: ``await run_sync(fn, *args, limiter=...)`` borrows an
idle subinterpreter (or creates one), runs the call in one of anyio's worker
threads, and keeps the interpreter for the next call of the same event loop.
A ``CapacityLimiter`` of W tokens is how its users ask for W workers.

So this contender runs one event loop for its whole life (a blocking portal, a
thread running the loop, which is how synchronous code drives anyio), and
every session drives ``run_sync`` from coroutines on it, the way async code
does:

- many calls at once (CPU rounds, map): a task group of W tasks, sharing the
  session's limiter, each awaiting one call after another (see _gather);
- latency: the sampling loop itself runs inside the event loop, timing each
  ``await run_sync(identity, i)``, so no portal hop is counted;
- a single call from the harness (payloads, the ready probe's first result):
  one ``run_sync`` through the portal.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, ClassVar

import anyio
import anyio.from_thread
import anyio.to_interpreter
import workloads

from harness.contenders import ANYIO_KEY, CallLost, Contender, Session
from harness.sampling import Sampling, sample_awaiting


class _AnyioSession(Session):
    def __init__(self, portal: anyio.from_thread.BlockingPortal, workers: int,
                 call_timeout: float) -> None:
        super().__init__(call_timeout)
        self._portal = portal
        self._workers = workers
        # Created in the loop: a limiter belongs to its event loop's backend.
        self._limiter: anyio.CapacityLimiter = portal.call(anyio.CapacityLimiter, workers)
        self._completed = 0  # calls finished so far; tells a slow batch from a lost call

    async def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        result = await anyio.to_interpreter.run_sync(fn, *args, limiter=self._limiter)
        self._completed += 1
        return result

    async def _gather(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Every call, by W tasks that each await one run_sync at a time.

        Not one task per call: run_sync takes a limiter token to borrow an
        interpreter, gives it back, then queues for a token again to run the
        call, behind every other task. So with one task per call, each call
        borrows before any call returns an interpreter, and anyio creates one
        new interpreter per call (40 calls on W=2 made 40 interpreters here).
        """
        results: list[Any] = [None] * len(calls)
        pending = iter(enumerate(calls))

        async def worker() -> None:
            for index, args in pending:
                results[index] = await self._call(fn, *args)

        async with anyio.create_task_group() as group:
            for _ in range(min(self._workers, len(calls))):
                group.start_soon(worker)
        return results

    def _wait[T](self, future: Future[T]) -> T:
        """The result, waiting as long as calls keep finishing: CallLost when
        none has finished for call_timeout (a batch of 20,000 may take longer)."""
        while True:
            seen = self._completed
            try:
                return future.result(self.call_timeout)
            except TimeoutError:
                if self._completed == seen:
                    future.cancel()
                    raise CallLost(self.call_timeout) from None

    def run_all(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        return self._wait(self._portal.start_task_soon(self._gather, fn, calls))

    def submit_result(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self._wait(self._portal.start_task_soon(functools.partial(self._call, fn, *args)))

    def submit_latency_us(self, identity: Callable[[int], int], plan: Sampling) -> list[float]:
        return self._wait(self._portal.start_task_soon(
            functools.partial(sample_awaiting, functools.partial(self._call, identity), plan)))

    def map(self, fn: Callable[..., Any], items: list[Any], chunksize: int | None) -> list[Any]:
        return self.run_all(fn, [(item,) for item in items])

    def close(self) -> None:
        pass  # the interpreters stay with the event loop, for the next session


class AnyioInterpreters(Contender):
    key = ANYIO_KEY
    label = "anyio.to_interpreter.run_sync"
    short = "anyio"
    submit_way = "await run_sync"
    not_applicable: ClassVar[Mapping[str, str]] = {
        "call_p50_us": "call() is interp-rpc's own API",
        "call_p99_us": "call() is interp-rpc's own API",
        "items_per_s_chunksize1": "no map: W tasks await one run_sync per item, "
                                  "so there are no chunks",
    }

    def __init__(self) -> None:
        self._portal_scope: contextlib.AbstractContextManager[
            anyio.from_thread.BlockingPortal] | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None

    def open(self, workers: int, call_timeout: float, init: bool = False) -> Session:
        if self._portal is None:
            self._portal_scope = anyio.from_thread.start_blocking_portal()
            self._portal = self._portal_scope.__enter__()
        session = _AnyioSession(self._portal, workers, call_timeout)
        if init:
            # No initializer either: the first run_sync creates an interpreter,
            # which runs the init; the next call reuses that idle interpreter.
            # Executors too start one worker for their first task.
            session.submit_result(workloads.import_json_decimal)
        return session

    def shutdown(self) -> None:
        """Stops the event loop. anyio destroys the idle interpreters at exit."""
        if self._portal_scope is not None:
            self._portal_scope.__exit__(None, None, None)
        self._portal_scope = self._portal = None
