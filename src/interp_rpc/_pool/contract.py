"""The contract every pool keeps: what InterpreterPool and ClusterPool both
offer, so that code written against one (the notebook layer, a user's
helper) runs on the other.

These are typing protocols: nothing inherits from them. Each pool's module
checks, for the type checker only, that its class conforms, so a method that
drifts on one pool fails ``mypy`` rather than a user's cell.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import Future
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from interp_rpc._pool.everywhere import Interrupted
    from interp_rpc.profiling.model import Profile
    from interp_rpc.records import CallRecord, PoolStats, WorkerStatus


class MapResults(Iterator[Any], Protocol):
    """The results of ``map``, in order; ``close()`` cancels what has not started."""

    def close(self) -> None: ...


class MapRunning(Protocol):
    """A map begun (``map_run``)."""

    def results(self) -> MapResults:
        """The results, in order: what ``map`` returns."""
        ...

    def request_stop(self) -> None:
        """From any thread: the thread reading the results gets a
        KeyboardInterrupt, as Ctrl-C there would raise (what %parallel_stop
        does from a subshell)."""
        ...

    @property
    def stops_running_chunks(self) -> bool:
        """Whether a stop ends the running chunks before their next item
        (else they run to their end)."""
        ...


class EverywhereRun(Protocol):
    """A call sent once to each of several workers (``run_everywhere``)."""

    def wait(self) -> dict[int, Any | BaseException]:
        """Each worker's result, or the error it stands for, by worker index."""
        ...

    def interrupt(self) -> Interrupted:
        """Withdraw what has not started; who finished, runs on, never ran."""
        ...

    def remember(self, label: str) -> None:
        """Run it too in workers that join the pool later (where they can)."""
        ...


class Pool(Protocol):
    """A pool of workers that run Python calls in parallel."""

    @property
    def workers(self) -> int: ...

    @property
    def closed(self) -> bool: ...

    @property
    def broken(self) -> bool: ...

    def submit(self, fn: Callable[..., Any] | str, /, *args: Any,
               **kwargs: Any) -> Future[Any]: ...

    def call(self, target: Callable[..., Any] | str, /, *args: Any,
             timeout: float | None = None, **kwargs: Any) -> Any: ...

    def map(self, fn: Callable[..., Any] | str, *iterables: Iterable[Any],
            timeout: float | None = None, chunksize: int | None = None,
            buffersize: int | None = None, errors: str = "raise") -> MapResults: ...

    def map_run(self, fn: Callable[..., Any] | str, iterables: tuple[Iterable[Any], ...], *,
                timeout: float | None, chunksize: int | None, buffersize: int | None,
                errors: str, output: Any = None,
                on_start: Callable[[MapRunning], None] | None = None) -> MapRunning:
        """``map``, whose items' prints go to ``output`` (an
        ``output_destination``) as they are printed. ``on_start(run)`` is
        called before the first chunk is sent: a caller interrupted while the
        map starts, before map_run returns, still holds the run to stop it."""
        ...

    def run_everywhere(self, target: Callable[..., Any] | str, args: tuple[Any, ...] = (),
                       kwargs: dict[str, Any] | None = None, *, timeout: float | None = None,
                       workers: Collection[int] | None = None) -> EverywhereRun: ...

    def output_destination(self, queue_id: int) -> Any:
        """What a request carries (a map's ``output``, a %%parallel cell's
        argument) so that what its workers print goes, as they print it, into
        the caller's cross-interpreter queue ``queue_id`` (notebook/relay.py)."""
        ...

    def output_labels(self) -> dict[int, int]:
        """Each worker's index, by the label that the output it relays
        into such a queue carries."""
        ...

    def worker_indices(self) -> list[int]:
        """The indices ``run_everywhere(workers=...)`` accepts, and that
        statuses, records and errors name workers by."""
        ...

    def profile(self, functions: bool = False) -> AbstractContextManager[Profile]: ...

    def status(self) -> list[WorkerStatus]: ...

    def stats(self) -> PoolStats: ...

    def call_records(self, after: int = 0) -> list[CallRecord]: ...

    def close(self, wait: bool = True, timeout: float | None = None) -> None: ...

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None: ...
