"""NumPy arrays and bytes between the pool and its worker processes: any
dtype, shape and memory order arrives equal, writable and owned by its
receiver; large buffers cross as memory files that nothing outlives."""

from __future__ import annotations

import gc
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from process_support import SRC_PATHS, alive, dedent, shared_memory_names, wait_ended
from processtasks import memory_file_ids, memory_file_ids_of, memory_files_of
from support import wait_until

from interp_rpc import ProcessPool, WorkerDiedError
from interp_rpc.process import framing, segments
from interp_rpc.process.segments import SharedMemory

numpy = pytest.importorskip("numpy")
numpy_strategies = pytest.importorskip("hypothesis.extra.numpy")

LARGE = framing.SHARED_THRESHOLD // 8 + 1  # float64 items: just past the threshold


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPool]:
    with ProcessPool(workers=2) as shared:
        yield shared


def same_array(got: Any, sent: Any) -> bool:
    """Same type, dtype, shape and bits (so NaN payloads and -0.0 count) as
    pickle gives in one process: what the pool promises is that crossing
    changes nothing pickle keeps (NumPy's pickle drops the byte order of
    datetime64 and timedelta64 dtypes, and so does every process pool)."""
    expected = pickle.loads(pickle.dumps(sent, protocol=5))
    if (type(got) is not numpy.ndarray or got.dtype != expected.dtype
            or got.shape != expected.shape):
        return False
    if expected.dtype.hasobject:
        return bool(got.tolist() == expected.tolist())
    return bool(numpy.ascontiguousarray(got).tobytes()
                == numpy.ascontiguousarray(expected).tobytes())


DTYPES = (numpy_strategies.scalar_dtypes()
          | numpy_strategies.array_dtypes(numpy_strategies.scalar_dtypes(), max_size=3)
          | st.just(numpy.dtype(object)))


@st.composite
def arrays(draw: st.DrawFn) -> Any:
    """Arrays of any dtype and shape (0-d and empty too), in C order, in
    Fortran order, or a non-contiguous view."""
    dtype = draw(DTYPES)
    shape = draw(numpy_strategies.array_shapes(min_dims=0, max_dims=3, min_side=0,
                                               max_side=4))
    elements = st.integers() | st.text(max_size=3) | st.none() if dtype.hasobject else None
    array = draw(numpy_strategies.arrays(dtype, shape, elements=elements))
    layout = draw(st.sampled_from(["C", "F", "strided"]))
    if layout == "F":
        return numpy.asfortranarray(array)
    if layout == "strided" and array.ndim:
        return array[..., ::2]
    return array


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(array=arrays())
def test_any_array_crosses_both_ways_equal_and_writable(pool: ProcessPool, array: Any) -> None:
    kind, writable, returned = pool.call("processtasks.echo_info", array)
    assert kind == "ndarray" and writable
    assert same_array(returned, array)
    assert returned.flags.writeable
    if array.flags.c_contiguous or array.flags.f_contiguous:
        assert returned.flags.c_contiguous == array.flags.c_contiguous
        assert returned.flags.f_contiguous == array.flags.f_contiguous


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=st.lists(arrays(), max_size=5))
def test_arrays_as_map_items(pool: ProcessPool, items: list[Any]) -> None:
    results = list(pool.map("processtasks.echo", items, chunksize=2))
    assert len(results) == len(items)
    assert all(same_array(got, sent) for got, sent in zip(results, items, strict=True))


@pytest.mark.parametrize("array", [
    numpy.arange(LARGE, dtype=numpy.float64),
    numpy.asfortranarray(numpy.arange(4 * LARGE, dtype=numpy.int16).reshape(4, LARGE)),
    numpy.arange(2 * LARGE, dtype=numpy.float64)[::2],
    numpy.zeros(LARGE, dtype=[("x", "<f8"), ("n", "<i4")]),
    numpy.full(LARGE // 64, "text", dtype=object),
], ids=["float64", "fortran-int16", "strided", "record", "object"])
def test_a_large_array_crosses_both_ways_as_it_was_sent(pool: ProcessPool, array: Any) -> None:
    kind, writable, returned = pool.call("processtasks.echo_info", array)
    assert kind == "ndarray" and writable
    assert same_array(returned, array) and returned.flags.writeable


def test_a_large_argument_is_the_workers_own_and_writable(make_process_pool: Any) -> None:
    pool = make_process_pool(workers=1)  # one worker: keep and kept meet
    array = numpy.ones(LARGE)
    assert pool.call("processtasks.add_in_place", array, 2.0) == 3.0 * LARGE
    assert float(array.sum()) == LARGE  # the worker changed its own copy
    pool.call("processtasks.keep", array)
    array[...] = 0  # the sender changes its array after the call
    assert float(pool.call("processtasks.kept").sum()) == LARGE


def test_a_large_result_is_the_callers_own_and_writable(make_process_pool: Any) -> None:
    pool = make_process_pool(workers=1)  # one worker: keep_new and fill_kept meet
    result = pool.call("processtasks.keep_new", LARGE)
    pool.call("processtasks.fill_kept", 5.0)  # the worker changes the array it returned
    assert float(result.sum()) == LARGE
    result[0] = 7.0
    assert float(pool.call("processtasks.kept").sum()) == 5.0 * LARGE


def test_large_parts_cross_as_memory_files_that_the_pool_reuses(
        make_process_pool: Any) -> None:
    before = memory_file_ids()
    pool = make_process_pool(workers=1)
    held = pool.call("processtasks.memory_files_while_holding", numpy.ones(LARGE))
    assert held and all("interp-rpc-part" in line for line in held)
    (worker,) = pool.worker_pids()
    segments = memory_file_ids_of(worker)
    ours = memory_file_ids() - before
    for value in (2.0, 3.0):  # the same segments again, both ways
        assert pool.call("processtasks.add_in_place", numpy.ones(LARGE), value) \
            == (1.0 + value) * LARGE
        result = pool.call("processtasks.full", LARGE, value)
        assert float(result.sum()) == value * LARGE
        del result
        gc.collect()
    assert memory_file_ids_of(worker) == segments | (memory_file_ids() - before)
    assert memory_file_ids() - before >= ours
    pool.close()
    gc.collect()
    assert memory_file_ids() - before == set()  # nothing outlives the pool
    assert memory_file_ids_of(worker) == set()


def test_a_large_arguments_segment_serves_the_very_next_call(make_process_pool: Any) -> None:
    """The reply says the argument's segment is free: the next call's
    argument goes into it, not into new memory (it went into a new segment,
    the release coming only with the reply after)."""
    before = memory_file_ids()
    pool = make_process_pool(workers=1)
    assert pool.call("processtasks.add_in_place", numpy.ones(LARGE), 1.0) == 2.0 * LARGE
    segments = memory_file_ids() - before
    for value in (2.0, 3.0):
        assert pool.call("processtasks.add_in_place", numpy.ones(LARGE), value) \
            == (1.0 + value) * LARGE
        assert memory_file_ids() - before == segments


def test_an_argument_still_held_keeps_its_segment(make_process_pool: Any) -> None:
    """The worker keeps a large argument: the next one of the same size
    must not be written over it."""
    pool = make_process_pool(workers=1)
    pool.call("processtasks.keep", numpy.full(LARGE, 2.0))
    assert pool.call("processtasks.add_in_place", numpy.full(LARGE, 5.0), 1.0) == 6.0 * LARGE
    assert float(pool.call("processtasks.kept").sum()) == 2.0 * LARGE
    pool.call("processtasks.keep", None)  # its segment is free again: used, not grown
    (worker,) = pool.worker_pids()
    segments = memory_file_ids_of(worker)
    for value in (7.0, 8.0):
        assert pool.call("processtasks.add_in_place", numpy.full(LARGE, value), 0.0) \
            == value * LARGE
    assert memory_file_ids_of(worker) == segments


def test_a_result_still_held_keeps_its_segment(make_process_pool: Any) -> None:
    """The caller keeps a large result: the worker must not write the next
    one over it; once the caller lets go, the segment serves again."""
    pool = make_process_pool(workers=1)
    first = pool.call("processtasks.full", LARGE, 1.0)
    second = pool.call("processtasks.full", LARGE, 2.0)
    assert float(first.sum()) == 1.0 * LARGE and float(second.sum()) == 2.0 * LARGE
    first[0] = 100.0  # the caller's own: the worker's next result does not see it
    (worker,) = pool.worker_pids()
    segments = memory_file_ids_of(worker)
    del first
    gc.collect()
    pool.call("processtasks.pid")  # carries the release to the worker
    third = pool.call("processtasks.full", LARGE, 3.0)
    assert float(third.sum()) == 3.0 * LARGE and float(second.sum()) == 2.0 * LARGE
    assert memory_file_ids_of(worker) == segments  # the first one's segment, again


@pytest.mark.parametrize("size", [0, 1, 64 * 1024, framing.SHARED_THRESHOLD - 1,
                                  framing.SHARED_THRESHOLD, framing.SHARED_THRESHOLD + 1,
                                  8 * framing.SHARED_THRESHOLD])
@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_bytes_stay_bytes_at_every_size(pool: ProcessPool, size: int,
                                        kind: type[bytes] | type[bytearray]) -> None:
    value = kind(os.urandom(size))
    received, _, returned = pool.call("processtasks.echo_info", value)
    assert received == kind.__name__
    assert type(returned) is kind and returned == value


def test_a_worker_dying_with_a_large_argument_leaves_no_memory_file(
        make_process_pool: Any) -> None:
    before = memory_file_ids()
    pool = make_process_pool(workers=1)
    with pytest.raises(WorkerDiedError, match="exited with code 4"):
        pool.call("processtasks.exit_holding", numpy.ones(LARGE), 4)
    gc.collect()
    assert memory_file_ids() - before == set()
    assert pool.call("processtasks.memory_files") == []


def test_a_sigkilled_parent_leaves_no_memory_file(tmp_path: Path) -> None:
    """Its workers hold large arguments, it holds a large result: after
    SIGKILL no process maps a memory file of theirs, and no named segment
    appeared."""
    script = tmp_path / "holding.py"
    script.write_text(dedent(f"""
        import time, numpy
        from interp_rpc import ProcessPool
        if __name__ == "__main__":
            pool = ProcessPool(workers=2)
            held = pool.call("numpy.ones", {LARGE})
            for _ in range(2):
                pool.submit("processtasks.sleep_then", 600, numpy.ones({LARGE}))
            print(*pool.worker_pids(), flush=True)
            time.sleep(600)
    """))
    before = shared_memory_names()
    env_path = ":".join([str(Path(__file__).parent), *SRC_PATHS])
    parent = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, text=True,
                              stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": env_path})
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2
        wait_until(lambda: all(memory_files_of(p) for p in pids),
                   what="both workers holding their large argument")
        assert memory_files_of(parent.pid)  # the result it holds
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_ended(pids, "the workers of a SIGKILLed parent ending")
    finally:
        parent.kill()
        parent.wait()
    assert not any(alive(p) for p in pids)
    assert shared_memory_names() == before


def test_a_message_with_more_large_parts_than_one_send_passes_files(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past Linux's 253 descriptors per message, the parts that need a new
    segment go through the pipe."""
    monkeypatch.setattr(framing, "SHARED_THRESHOLD", 16)
    parts = [bytes([n % 256]) * (16 + n) for n in range(300)]
    read_end, write_end = os.pipe()
    sending, receiving = framing.file_sockets()
    try:
        receiver = framing.Receiver(read_end, receiving, SharedMemory())
        writer = threading.Thread(target=framing.send,
                                  args=(write_end, sending, SharedMemory(), 9, parts))
        writer.start()
        tag, got = receiver.receive()
        writer.join()
    finally:
        for fd in (read_end, write_end):
            os.close(fd)
        sending.close()
        receiving.close()
    assert tag == 9
    assert [bytes(p) for p in got] == parts
    assert sum(isinstance(p, memoryview) for p in got) == 253


@pytest.mark.parametrize("kind", [bytes, bytearray])
def test_a_large_bytes_result_goes_beside_its_pickle(kind: type[bytes] | type[bytearray]) -> None:
    """As a worker process pickles a result: the large bytes out of band
    (pickled in band, 64 MiB costs pickle half a second), small ones in."""
    from interp_rpc._worker import wire

    large, small = kind(b"x" * framing.SHARED_THRESHOLD), kind(b"y" * 10)
    for result, chunk in ((wire.bytes_apart(large, framing.SHARED_THRESHOLD), False),
                          ((wire.chunk_bytes_apart([small, large], framing.SHARED_THRESHOLD),
                            -1, None), True)):
        out_of_band = wire.OutOfBand(framing.SHARED_THRESHOLD)
        data = wire.dumps_result(result, out_of_band)
        assert len(out_of_band.buffers) == 1 and len(data) < 1024
        loaded = wire.loads(data, [b.raw() for b in out_of_band.buffers])
        values = loaded[0] if chunk else [loaded]
        assert [type(v) for v in values] == [kind] * len(values)
        assert values[-1] == large and (not chunk or values[0] == small)


class _Ends:
    """Two sides joined as a pool and a worker are: a pipe each way and a
    file socket, each side with its SharedMemory."""

    def __init__(self) -> None:
        self.fds = [*os.pipe(), *os.pipe()]  # a->b read, write; b->a read, write
        self.sockets = framing.file_sockets()
        self.memory = (SharedMemory(), SharedMemory())
        self.receivers = (framing.Receiver(self.fds[2], self.sockets[0], self.memory[0]),
                          framing.Receiver(self.fds[0], self.sockets[1], self.memory[1]))

    def send(self, side: int, parts: list[Any]) -> list[Any]:
        """``side`` sends ``parts``; what the other side receives."""
        fd = self.fds[1] if side == 0 else self.fds[3]
        framing.send(fd, self.sockets[side], self.memory[side], 1, parts)
        return self.receivers[1 - side].receive()[1]

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        for end in self.sockets:
            end.close()
        for memory in self.memory:
            memory.close()


def test_free_segments_past_the_cache_are_closed_on_both_sides(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "SHARED_THRESHOLD", 16)
    monkeypatch.setattr(segments, "CACHED_BYTES", 0)
    ends = _Ends()
    try:
        (part,) = ends.send(0, [b"a" * 100])
        assert bytes(part) == b"a" * 100 and not part.readonly
        assert ends.memory[1].segments()["peers"] == 1
        assert ends.memory[0].segments() == {"own": 1, "free": 0, "peers": 0}
        del part
        gc.collect()
        ends.send(1, [b"released"])  # tells side 0; past the cache, it is closed
        assert ends.memory[0].segments() == {"own": 0, "free": 0, "peers": 0}
        ends.send(0, [b"retired"])  # tells side 1, which unmaps it
        assert ends.memory[1].segments()["peers"] == 0
    finally:
        ends.close()


def test_a_released_segment_serves_the_next_part(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(framing, "SHARED_THRESHOLD", 16)
    ends = _Ends()
    try:
        (first,) = ends.send(0, [b"a" * 100])
        (second,) = ends.send(0, [b"b" * 100])  # the first still held: a new segment
        assert ends.memory[0].segments()["own"] == 2
        assert bytes(first) == b"a" * 100
        del first
        gc.collect()
        ends.send(1, [b"released"])
        (third,) = ends.send(0, [b"c" * 90])
        assert ends.memory[0].segments() == {"own": 2, "free": 0, "peers": 0}
        assert bytes(third) == b"c" * 90 and bytes(second) == b"b" * 100
    finally:
        ends.close()


def test_large_arrays_from_threads_at_once_each_come_back_as_sent(
        make_process_pool: Any) -> None:
    """Segments are reused while other threads send and receive: each echo
    returns its own array, and one kept by the caller never changes."""
    pool = make_process_pool(workers=2)
    kept = [pool.call("processtasks.full", LARGE, -1.0)]
    failures: list[str] = []

    def echo_many(seed: int) -> None:
        for round_number in range(15):
            value = float(seed * 100 + round_number)
            returned = pool.call("processtasks.echo", numpy.full(LARGE, value))
            if not (returned == value).all():
                failures.append(f"thread {seed} round {round_number}")

    threads = [threading.Thread(target=echo_many, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert failures == []
    assert (kept[0] == -1.0).all()
    mapped = list(pool.map("processtasks.echo", [numpy.full(LARGE, float(i)) for i in range(8)],
                           chunksize=1))
    assert [float(a[0]) for a in mapped] == [float(i) for i in range(8)]


def test_a_call_that_cannot_be_sent_fails_and_the_pool_goes_on(
        make_process_pool: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No memory for a new segment: the call fails with an error that says
    so (its worker, whose channel may be out of step, is replaced) instead
    of waiting for a reply that never comes."""
    pool = make_process_pool(workers=1)

    def no_memory(*args: object) -> object:
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(SharedMemory, "_create", no_memory)
    with pytest.raises(WorkerDiedError, match=r"could not be sent to it.*Cannot allocate memory"):
        pool.call("processtasks.echo", numpy.ones(LARGE), timeout=60)
    monkeypatch.undo()
    assert float(pool.call("processtasks.echo", numpy.ones(LARGE)).sum()) == LARGE
