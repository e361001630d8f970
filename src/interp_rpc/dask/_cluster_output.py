"""What a cluster's subinterpreters print, relayed into the caller's notebook cell.

On a local pool, a worker puts what it prints straight into the caller's
cross-interpreter queue (notebook/relay.py), whose id the request carries.
A dask worker process cannot reach that queue, so the request carries an
``OutputDestination`` instead: it pickles as ``int.from_bytes`` of an
out-of-band 8-byte buffer. The process that runs the request (the plugin)
swaps that buffer for one holding the id of a queue of its own, so its
subinterpreters see a queue id, as on a local pool, and need nothing new. A
``Forwarder`` thread there sends what arrives in that queue to the caller
as dask events (``Worker.log_event``); the caller's ``OutputReceiver``
(subscribed to the pool's topic) puts it into the cell's queue, labelled
with the worker's index across the cluster and the item's index in the map.

A job's last event goes out before its task returns. Its result travels
another way (the caller fetches it), so the caller waits for that last
event, briefly, before it settles the job: a map ends with all its output
shown.
"""

from __future__ import annotations

import contextlib
import pickle
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from distributed import Client, Worker

    from interp_rpc._pool.encoding import EncodedCall
    from interp_rpc.dask._jobs import Job

#: How often a Forwarder sends what its job's subinterpreters printed.
FORWARD_INTERVAL = 0.05

#: How long the caller waits for a finished job's last output: it normally
#: arrives before the job's result; longer, the scheduler lost it.
LAST_OUTPUT_GRACE = 5.0

#: The size of a destination's buffer: a queue id, little-endian.
ID_BYTES = 8


def topic(pool_name: str) -> str:
    """The dask event topic a pool's output travels on."""
    return f"{pool_name}-output"


class _Slot(bytearray):
    """A destination's buffer; says which caller's queue it stands for."""

    queue_id: int


class OutputDestination:
    """Where the workers of a request print to (ClusterPool.output_destination):
    put in a request where a local pool takes a queue id."""

    def __init__(self, queue_id: int) -> None:
        self._slot = _Slot(ID_BYTES)
        self._slot.queue_id = queue_id

    def __reduce__(self) -> tuple[Any, ...]:
        return int.from_bytes, (pickle.PickleBuffer(self._slot), "little")


def destination_in(request: EncodedCall) -> tuple[int, int] | None:
    """(index among the request's buffers, caller's queue id) of the
    destination the request carries, if it carries one."""
    for index, buffer in enumerate(request.buffers):
        if isinstance(buffer, pickle.PickleBuffer):
            slot = buffer.raw().obj
            if isinstance(slot, _Slot):
                return index, slot.queue_id
    return None


# ------------------------------------------------------- the dask worker's side

class Forwarder:
    """Sends what one job's subinterpreters print to the caller, while it runs."""

    def __init__(self, worker: Worker, pool_name: str, job: int,
                 labels: Callable[[], dict[int, int]]) -> None:
        from concurrent import interpreters

        self._empty = interpreters.QueueEmpty
        self._queue = interpreters.create_queue()
        self._worker = worker
        self._topic = topic(pool_name)
        self._job = job
        self._labels = labels  # interpreter id -> subinterpreter index
        self._known = labels()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="interp-rpc-output-forwarder",
                                        daemon=True)
        self._thread.start()

    @property
    def buffer(self) -> pickle.PickleBuffer:
        """What the request's destination buffer becomes here: this queue's id."""
        return pickle.PickleBuffer(bytearray(self._queue.id.to_bytes(ID_BYTES, "little")))

    def _run(self) -> None:
        while not self._stop.wait(FORWARD_INTERVAL):
            self._send(last=False)

    def _send(self, *, last: bool) -> None:
        printed: list[list[Any]] = []
        while True:
            try:
                sent = self._queue.get_nowait()
            except self._empty:
                break
            if not isinstance(sent, tuple):  # left by an interpreter gone since
                continue
            interpreter, item, stream, text = sent
            if interpreter not in self._known:
                self._known = self._labels()  # a subinterpreter replaced since
            printed.append([self._known.get(interpreter), item, stream, text])
        if printed or last:
            self._worker.log_event(self._topic, {"job": self._job, "printed": printed,
                                                 "last": last})

    def close(self) -> None:
        """After the job: send what is left, marked as the job's last."""
        self._stop.set()
        self._thread.join()
        self._send(last=True)


# ------------------------------------------------------------- the caller's side

class JobOutput:
    """Where one job's output goes in the caller, and whether all of it came."""

    def __init__(self, queue_id: int, item_offset: int,
                 label: Callable[[int], int | None]) -> None:
        self.queue_id = queue_id
        self.item_offset = item_offset
        self.label = label  # subinterpreter index -> the worker's index in the cluster
        self.complete = threading.Event()
        self.queue: Any = None  # the caller's queue, once found


class OutputReceiver:
    """Receives the pool's output events and puts each piece into the queue of
    the job it belongs to. Subscribes on the first job that relays output:
    the subscription reaches the scheduler before that job's task does."""

    def __init__(self, client: Client, pool_name: str) -> None:
        self._client = client
        self._topic = topic(pool_name)
        self._lock = threading.Lock()
        self._subscribed = False
        self._jobs: dict[int, JobOutput] = {}

    def attach(self, job: Job) -> None:
        """If the job's request carries a destination, expect its output."""
        found = destination_in(job.request)
        if found is None:
            return
        job.output_buffer, queue_id = found

        def label(subinterpreter: int) -> int | None:
            return None if job.process is None else int(job.process.worker(subinterpreter))

        job.output = JobOutput(queue_id, job.item_offset, label)
        with self._lock:
            if not self._subscribed:
                self._client.subscribe_topic(self._topic, self._received)
                self._subscribed = True
            self._jobs[job.id] = job.output

    def forget(self, job: Job) -> None:
        if job.output is not None:
            with self._lock:
                self._jobs.pop(job.id, None)

    def close(self) -> None:
        with self._lock:
            subscribed, self._subscribed = self._subscribed, False
            self._jobs.clear()
        if subscribed:
            # A client that is closing drops its handlers itself.
            with contextlib.suppress(Exception):
                self._client.unsubscribe_topic(self._topic)

    def _received(self, event: tuple[float, dict[str, Any]]) -> None:
        """Runs on the client's event loop: quick, and never raises."""
        _, message = event
        with self._lock:
            output = self._jobs.get(message["job"])
        if output is None:
            return  # a job settled already, or given up on
        try:
            if output.queue is None:
                from concurrent import interpreters

                output.queue = interpreters.Queue(output.queue_id)
            for subinterpreter, item, stream, text in message["printed"]:
                worker = None if subinterpreter is None else output.label(subinterpreter)
                output.queue.put((worker, None if item is None else output.item_offset + item,
                                  stream, text))
        except Exception:
            pass  # the cell's relay has ended (its queue is gone): nobody shows it
        finally:
            if message["last"]:
                output.complete.set()
