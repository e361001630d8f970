"""How what a cluster's subinterpreters print finds the caller's queue: the
destination a request carries, and the caller's receiver of the dask events
(the whole path, in a real cluster, is in test_both_pools_magics.py and
test_dask_lifecycle.py)."""

from __future__ import annotations

import pickle
from concurrent import interpreters
from typing import Any

import pytest

pytest.importorskip("distributed")

from interp_rpc._pool.encoding import encode_call
from interp_rpc.dask._cluster_output import (
    OutputDestination,
    OutputReceiver,
    destination_in,
)
from interp_rpc.dask._jobs import Job


class RecordingClient:
    """What the receiver uses of a dask client."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}
        self.unsubscribed: list[str] = []

    def subscribe_topic(self, topic: str, handler: Any) -> None:
        self.handlers[topic] = handler

    def unsubscribe_topic(self, topic: str) -> None:
        self.unsubscribed.append(topic)


class FakeProcess:
    """A process whose subinterpreter 0 is the cluster's worker 4."""

    def worker(self, subinterpreter: int) -> int:
        return 4 + subinterpreter


def test_a_destination_becomes_the_queue_id_the_running_process_puts_in() -> None:
    request = encode_call("print", ([1, 2], {"output": OutputDestination(7)}), {})
    assert destination_in(request) == (0, 7)
    # The process running it swaps the buffer for its own queue's id.
    ours = pickle.PickleBuffer(bytearray((123).to_bytes(8, "little")))
    _, _, args, _ = pickle.loads(request.data, buffers=[ours])
    assert args == ([1, 2], {"output": 123})


def test_a_request_without_a_destination_has_none_even_with_buffers() -> None:
    request = encode_call("len", (bytearray(1 << 20),), {})
    assert request.buffers  # a large argument crosses out of band
    assert destination_in(request) is None


def event(job: int, printed: list[list[Any]], last: bool) -> tuple[float, dict[str, Any]]:
    return 0.0, {"job": job, "printed": printed, "last": last}


def receiving(item_offset: int = 0) -> tuple[OutputReceiver, RecordingClient, Job, Any]:
    queue = interpreters.create_queue()
    client = RecordingClient()
    receiver = OutputReceiver(client, "pool-x")  # type: ignore[arg-type]
    request = encode_call("f", ([0], {"output": OutputDestination(queue.id)}), {},
                          mode="chunk")
    job = Job(3, request, item_offset, 0)
    job.process = FakeProcess()  # type: ignore[assignment]
    receiver.attach(job)
    return receiver, client, job, queue


def test_output_is_labelled_with_the_cluster_worker_and_the_map_item() -> None:
    receiver, client, job, queue = receiving(item_offset=10)
    assert job.output is not None and job.output_buffer == 0
    (handler,) = client.handlers.values()
    handler(event(3, [[1, 2, "stdout", "hi\n"], [0, None, "stderr", "w\n"]], False))
    assert queue.get_nowait() == (5, 12, "stdout", "hi\n")
    assert queue.get_nowait() == (4, None, "stderr", "w\n")
    assert not job.output.complete.is_set()
    handler(event(3, [], True))
    assert job.output.complete.is_set()
    receiver.close()
    assert client.unsubscribed == list(client.handlers)


def test_output_of_a_job_settled_already_is_dropped() -> None:
    receiver, client, job, queue = receiving()
    (handler,) = client.handlers.values()
    receiver.forget(job)
    handler(event(3, [[0, 0, "stdout", "late\n"]], True))
    with pytest.raises(interpreters.QueueEmpty):
        queue.get_nowait()


def test_a_relay_that_ended_does_not_break_the_event_loop() -> None:
    _, client, job, _ = receiving()
    (handler,) = client.handlers.values()
    assert job.output is not None
    job.output.queue_id = 1 << 40  # no such queue: the cell's relay is gone
    handler(event(3, [[0, 0, "stdout", "x\n"]], True))  # must not raise
    assert job.output.complete.is_set()
