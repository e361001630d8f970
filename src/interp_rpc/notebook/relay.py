"""What the workers print, sent back to the caller while a map runs.

A map given ``output=relay.destination`` (Pool.map_run) has every worker of its chunks
send what its targets print, line by line as printed, into a
cross-interpreter queue (``concurrent.interpreters``); the caller takes the
lines from here, labelled with the worker and the item that printed them
(the worker side is _worker/output_relay.py). A ProcessPool's workers send
theirs over their reply pipes, and the pool puts it into the queue; a
cluster's processes send theirs as dask events (dask/_cluster_output.py).
Without it, workers print where the process prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool


class Printed(NamedTuple):
    """Text that a worker printed, in the order it printed it."""

    worker: int | None  # None: an interpreter that is no longer the pool's
    item: int | None  # the map item being run, None outside any item
    stream: str  # "stdout" or "stderr"
    text: str


class OutputRelay:
    """The queue the workers' output goes into, and what has arrived."""

    def __init__(self, pool: Pool) -> None:
        # Imported on first use: the notebook extension loads while a kernel
        # starts, and must not make its startup (or a shutdown then) slower.
        from concurrent import interpreters

        self._empty = interpreters.QueueEmpty
        self._queue = interpreters.create_queue()
        self._pool = pool
        # Workers label their output: a subinterpreter with its id.
        self._workers = pool.output_labels()
        self.destination = pool.output_destination(self.id)
        """What a map's ``output`` takes, or a %%parallel cell's argument."""

    @property
    def id(self) -> int:
        """The queue's id."""
        return int(self._queue.id)

    def take(self) -> list[Printed]:
        """Everything that arrived since the last take, oldest first
        (each worker's output in the order it was printed)."""
        arrived: list[Printed] = []
        while True:
            try:
                sent = self._queue.get_nowait()
            except self._empty:
                return arrived
            if not isinstance(sent, tuple):  # what an interpreter gone since left behind
                continue
            interpreter, item, stream, text = sent
            if interpreter not in self._workers:
                self._workers = self._pool.output_labels()  # a worker that joined since
            arrived.append(Printed(self._workers.get(interpreter), item, stream, text))
