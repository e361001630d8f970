"""The engine of a ProcessPool: who runs which call, and what they did.

It has the face of the C++ engine's ``Engine`` that the pool contract's
shared parts use (submit, cancel, status, records, totals, last_call_id),
with worker processes behind it. Its moving parts:

- **the dispatch**, in whichever thread makes a worker free: a call
  submitted while a worker is idle is written to that worker at once, from
  the submitting thread; otherwise it waits in the queue, and the thread
  that reads a worker's reply hands that worker its next call. A worker
  holds one call at a time, so a crash fails only that call.
- **a reader thread per worker**, which reads the worker's replies, and
  watches it: at the end of its reply pipe the process has ended, and the
  reader fails the call it held with WorkerDiedError, naming the exit code
  or signal, then starts a replacement (unless the pool is closing).
- **a caller reading its own reply**: ``call()`` on an idle worker reads
  the reply itself, rather than be woken by the reader thread once that has
  read it: one thread fewer to wake in each call. The reader waits aside
  meanwhile (on the worker's pidfd, so it still sees the process end), and
  takes the pipe back when the caller stops reading: at its timeout, at the
  first line of output the call relays, or when it is interrupted. A caller
  interrupted halfway through a message has left the pipe out of step, so
  that worker is replaced (that call's result was given up anyway).
- **close**, explicit and bounded: workers finish their calls (or queued
  calls are cancelled), are told there are no more requests, and exit;
  after ``timeout`` those still running are terminated.
"""

from __future__ import annotations

import collections
import functools
import threading
import time
from collections.abc import Callable
from concurrent import interpreters
from concurrent.interpreters._queues import QueueNotFoundError  # not re-exported in 3.14
from typing import Any

from interp_rpc._pool.engine import _core
from interp_rpc._worker import wire
from interp_rpc.process import framing
from interp_rpc.process.child import (
    OUTPUT_META,
    OUTPUT_STREAMS,
    OUTPUT_TAG,
    REPLY_META,
    SETUP_TAG,
)
from interp_rpc.process.handle import ProcessCallHandle
from interp_rpc.process.stop_board import StopBoard
from interp_rpc.process.worker_process import ENDED, WorkerProcess


@functools.cache
def _outcomes() -> dict[int, str]:
    """A record's outcome, by call status, as the C++ engine names them. Not
    at import: interp_rpc imports in a subinterpreter worker too (a script
    imported there), where the engine module is absent."""
    return {_core.STATUS_REPLIED: "replied", _core.STATUS_WORKER_DIED: "worker_died",
            _core.STATUS_CANCELLED: "cancelled", _core.STATUS_POOL_BROKEN: "pool_broken"}


#: How long a caller reading its own reply watches the pipe before it
#: sleeps: the worker's side of a short call (see child.REQUEST_SPIN_NS).
REPLY_SPIN_NS = 50_000

_reader = threading.local()
_Receive = Callable[[], tuple[int, list[Any]]]


def _with_buffers(parts: list[Any]) -> bytes:
    """A reply's pickle (``parts[1]``), with the out-of-band buffers that
    came after it, for wire.loads to read them with it."""
    if len(parts) <= 2:
        return bytes(parts[1])
    reply = wire.WithBuffers(parts[1])
    reply.buffers = parts[2:]
    return reply


def on_reader_thread() -> bool:
    """Whether this thread reads a worker's replies (and settles futures)."""
    return getattr(_reader, "on", False)


class _Slot:
    """Worker ``index``: its current process, state and running call."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.process: WorkerProcess | None = None
        self.state = "starting"
        self.call: ProcessCallHandle | None = None
        self.calls_done = 0
        self.busy_ns_total = 0
        self.detail: str | None = None
        self.pinned: collections.deque[ProcessCallHandle] = collections.deque()
        self.ready = threading.Event()
        self.setup_report: dict[str, Any] | None = None
        self.thread: threading.Thread | None = None
        #: Whether the reader thread reads the running call's reply (else
        #: its caller does); whether it waits to be woken, and watches the
        #: pipe meanwhile; whether it should (no caller reads its reply).
        self.reader_reads = True
        self.reader_parked = False
        self.reader_watching = False
        self.reader_watch = True


class ProcessEngine:
    """``workers`` worker processes, each set up with ``setup`` (the
    encoded config of _worker/main.py's setup())."""

    def __init__(self, workers: int, setup: bytes) -> None:
        self._setup = setup
        self._lock = threading.Lock()
        self._queue: collections.deque[ProcessCallHandle] = collections.deque()
        self._slots = [_Slot(i) for i in range(workers)]
        self._last_id = 0
        self._closing = False
        self._broken = False
        self._seq = 0
        self._log: collections.deque[tuple[Any, ...]] = collections.deque(
            maxlen=_core.CALL_LOG_CAPACITY)
        self._totals = dict.fromkeys(("calls", "items", "replied", "failed", "queue_wait_ns",
                                      "run_ns", "serialize_ns", "deserialize_ns",
                                      "result_serialize_ns"), 0)
        self.reader_threads: set[threading.Thread] = set()
        #: The maps' stop flags, which every worker process maps.
        self.stop_board = StopBoard()
        try:
            for slot in self._slots:
                self._start(slot)
        except BaseException:  # Ctrl-C as a worker starts: end those started
            self.close(cancel_pending=True, timeout=0)
            raise

    # -------------------------------------------------------------- starting

    def _start(self, slot: _Slot) -> None:
        """Start the worker's process and its reader thread."""
        slot.state, slot.call, slot.ready = "starting", None, threading.Event()
        slot.setup_report = None
        slot.reader_reads, slot.reader_parked = True, False
        slot.reader_watching, slot.reader_watch = False, True
        try:
            slot.process = WorkerProcess(slot.index, self.stop_board.fd)
            slot.process.send(SETUP_TAG, [self._setup])
        except OSError as exc:
            slot.process = None
            self._mark_dead(slot, f"worker {slot.index} could not start: {exc}")
            slot.setup_report = {"index": slot.index, "ok": False, "finished": True,
                                 "kind": _core.REPLY_ENGINE_ERROR,
                                 "reply": str(exc).encode()}
            slot.ready.set()
            return
        thread = threading.Thread(target=self._read, args=(slot, slot.process),
                                  name=f"interp-rpc process worker {slot.index} reader",
                                  daemon=True)
        slot.thread = thread
        # Added before the reader it replaces is discarded, since close()
        # joins every reader; and started under the lock, so that close()
        # never finds one that cannot be joined yet.
        with self._lock:
            self.reader_threads.add(thread)
            thread.start()

    def wait_ready(self, timeout: float | None) -> list[dict[str, Any]]:
        """Each worker's setup report, once every worker has one (or at the
        deadline: the missing ones say they did not finish)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        reports = []
        for slot in self._slots:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if slot.ready.wait(left) and slot.setup_report is not None:
                reports.append(slot.setup_report)
            else:
                reports.append({"index": slot.index, "ok": False, "finished": False})
        return reports

    # ---------------------------------------------------------------- calls

    def submit(self, target: str, request: bytes, buffers: list[Any], item_index: int = -1,
               item_count: int = 1, owner: object = None, submitted_ns: int = 0,
               serialize_ns: int = 0, worker: int = -1, *, read_here: bool = False
               ) -> tuple[str, ProcessCallHandle | None]:
        """Queue a call. ``read_here``: the submitting thread waits for it
        with ``wait_reply``, and reads the reply itself if a worker takes the
        call at once."""
        status, handles = self.submit_many(
            [(target, request, buffers, item_index, item_count, submitted_ns, serialize_ns)],
            owner=owner, worker=worker, read_here=read_here)
        return status, None if handles is None else handles[0]

    def submit_many(self, calls: list[tuple[str, bytes, list[Any], int, int, int, int]], *,
                    owner: object = None, worker: int = -1, read_here: bool = False
                    ) -> tuple[str, list[ProcessCallHandle] | None]:
        """Queue the calls together, all or none; each idle worker takes one now."""
        sends: list[tuple[WorkerProcess, ProcessCallHandle, bool]] = []
        with self._lock:
            if self._closing:
                return "closed", None
            if self._broken or (worker >= 0 and self._slots[worker].state == "dead"):
                return "broken", None
            handles = []
            for target, request, buffers, item_index, item_count, sub_ns, ser_ns in calls:
                self._last_id += 1
                handle = ProcessCallHandle(
                    self._last_id, target, request, buffers, item_index=item_index,
                    item_count=item_count, owner=owner, submitted_ns=sub_ns, serialize_ns=ser_ns,
                    pinned=worker)
                handles.append(handle)
                if worker >= 0:
                    self._slots[worker].pinned.append(handle)
                else:
                    self._queue.append(handle)
            for slot in self._slots:
                if slot.state == "idle":
                    assigned = self._assign_locked(slot)
                    if assigned is None:
                        continue
                    process, handle = assigned
                    if read_here and handle is handles[0]:
                        slot.reader_reads = slot.reader_watch = False
                        handle.read_by = process
                        # A reader watching the pipe would wake at the reply.
                        wake = slot.reader_watching
                        slot.reader_watching = False
                    else:
                        wake = self._reader_to_wake_locked(slot)
                    sends.append((process, handle, wake))
        for process, handle, wake in sends:
            process.send_call(handle)
            if wake:
                process.wake_reader()
        return "ok", handles

    def _reader_to_wake_locked(self, slot: _Slot) -> bool:
        """Whether the worker's reader thread must be woken to read its call."""
        wake = slot.reader_reads and slot.reader_parked
        if wake:
            slot.reader_parked = slot.reader_watching = False
        return wake

    def _assign_locked(self, slot: _Slot) -> tuple[WorkerProcess, ProcessCallHandle] | None:
        """The idle worker's next call (its pinned ones first), marked as its own."""
        for queue in (slot.pinned, self._queue):
            while queue:
                handle = queue.popleft()
                if handle.done:  # cancelled while it waited
                    continue
                assert slot.process is not None
                slot.state, slot.call = "busy", handle
                slot.reader_reads = slot.reader_watch = True
                handle.worker = slot.index
                handle.started_ns = time.monotonic_ns()
                return slot.process, handle
        return None

    def cancel(self, handle: ProcessCallHandle) -> bool:
        """Withdraw a call that no worker has started; False once one has."""
        with self._lock:
            if handle.done or handle.started_ns:
                return False
            self._finish_locked(handle, _core.STATUS_CANCELLED, _core.REPLY_ENGINE_ERROR,
                                b"cancelled", -1)
        handle.settle_owner()
        return True

    def stop_call(self, handle: ProcessCallHandle, reason: str) -> bool:
        """Kill the worker running ``handle`` (a replacement starts); False
        if no worker runs it now."""
        with self._lock:
            slot = next((s for s in self._slots if s.call is handle), None)
            if slot is None or slot.process is None:
                return False
            process = slot.process
        process.kill(reason)
        return True

    # ------------------------------------------------------------ the reader

    def _read(self, slot: _Slot, process: WorkerProcess) -> None:
        """Read this worker's replies until its process ends; then account
        for its end, and start its replacement if the pool goes on."""
        _reader.on = True
        receive = process.receiver.receive
        failure: BaseException | None = None
        try:
            with process.reading:
                serving = self._read_setup(slot, process, receive)
            while serving:
                with process.reading:
                    reads, watch = self._take_work(slot, process)
                    if reads:
                        self._read_replies(slot, process, receive)
                        continue
                    if watch and process.reply_ready(0, 0.0):
                        self._read_one(slot, process, receive)
                        continue
                serving = process.wait_as_reader(watch) != ENDED
            with process.reading:  # what it wrote before it ended, then the end
                while True:
                    self._read_one(slot, process, receive)
        except (framing.ChannelClosed, OSError):
            pass  # the process has ended
        except BaseException as exc:  # a fault here: end the worker, as its pipe is suspect
            failure = exc
            process.kill(f"the thread reading its replies failed ({type(exc).__name__}: {exc})")
        how = process.reap()
        try:
            self._ended(slot, process, how)
        finally:
            with self._lock:
                self.reader_threads.discard(threading.current_thread())
        if failure is not None:
            raise failure  # for threading.excepthook to report

    def _take_work(self, slot: _Slot, process: WorkerProcess) -> tuple[bool, bool]:
        """Whether the worker has a call whose reply this reader reads, and
        else whether the reader watches the pipe while it waits to be woken:
        for output printed between calls, by threads that calls started; not
        while callers read their own replies, which would wake it each time.
        An idle worker takes its next queued call first (a caller that read
        its own reply leaves that to the reader)."""
        with self._lock:
            following = None
            if slot.call is None and slot.state == "idle":
                following = self._assign_locked(slot)
                if following is None and self._closing:
                    slot.state = "stopping"
            reads = slot.call is not None and slot.reader_reads
            slot.reader_parked = not reads
            slot.reader_watching = watch = not reads and slot.call is None and slot.reader_watch
        if following is not None:
            process.send_call(following[1])
        elif slot.state == "stopping":
            process.finish_requests()
        return reads, watch

    def _receive(self, slot: _Slot, receive: _Receive) -> tuple[int, list[Any]]:
        """The worker's next reply; the output it relays meanwhile goes to
        the caller's queue."""
        while True:
            tag, parts = receive()
            if tag != OUTPUT_TAG:
                return tag, parts
            self._relay_output(slot, parts)

    def _relay_output(self, slot: _Slot, parts: list[Any]) -> None:
        """Put printed output into the caller's cross-interpreter queue,
        labelled with the worker's index (see ProcessPool.output_labels)."""
        queue_id, item, stream = OUTPUT_META.unpack(parts[0])
        text = parts[1].decode("utf-8", "surrogatepass")
        try:
            # The relay holds its queue, so this finds that object, not a new one.
            queue = interpreters.Queue(queue_id)
        except QueueNotFoundError:
            return  # its relay is gone: the map or cell it was for has ended
        queue.put((slot.index, None if item < 0 else item, OUTPUT_STREAMS[stream], text))

    def _read_setup(self, slot: _Slot, process: WorkerProcess, receive: _Receive) -> bool:
        _, parts = self._receive(slot, receive)
        kind = REPLY_META.unpack(parts[0])[0]
        ok = kind == 0
        slot.setup_report = {"index": slot.index, "ok": ok, "finished": True, "kind": kind,
                             "reply": bytes(parts[1])}
        sends = None
        with self._lock:
            if not ok:
                slot.state = "dead"
                slot.detail = f"worker {slot.index}'s init failed"
            elif self._closing:
                slot.state = "stopping"
            else:
                slot.state = "idle"
                sends = self._assign_locked(slot)
        slot.ready.set()
        if not ok or slot.state == "stopping":
            process.finish_requests()
            return False
        if sends is not None:
            sends[0].send_call(sends[1])
        return True

    def _read_replies(self, slot: _Slot, process: WorkerProcess, receive: _Receive) -> None:
        """Read replies and hand the worker its next call, until no call
        is left to it."""
        while True:
            tag, parts = self._receive(slot, receive)
            if not self._account(slot, process, tag, parts):
                return

    def _read_one(self, slot: _Slot, process: WorkerProcess, receive: _Receive) -> None:
        """Read one message: output to relay, or a reply."""
        tag, parts = receive()
        if tag == OUTPUT_TAG:
            self._relay_output(slot, parts)
        else:
            self._account(slot, process, tag, parts)

    def _account(self, slot: _Slot, process: WorkerProcess, tag: int, parts: list[Any]) -> bool:
        """Settle the call a reply is for, and hand the worker its next
        call: whether it has one."""
        kind, deserialize_ns, result_ns, started, finished = REPLY_META.unpack(parts[0])
        with self._lock:
            handle = slot.call
            assert handle is not None and handle.id == tag
            handle.started_ns, handle.finished_ns = started, finished
            handle.deserialize_ns, handle.result_serialize_ns = deserialize_ns, result_ns
            slot.calls_done += 1
            slot.busy_ns_total += finished - started
            slot.call, slot.state = None, "idle"
            owned = self._finish_locked(handle, _core.STATUS_REPLIED, kind,
                                        _with_buffers(parts), slot.index, signal=False)
            following = self._assign_locked(slot)
            if following is None and self._closing:
                slot.state = "stopping"
        del parts
        if following is not None:
            following[0].send_call(following[1])
        elif slot.state == "stopping":
            process.finish_requests()
        if owned:
            handle.settle_owner()
        # Last: a caller woken earlier would wait for this thread's GIL.
        handle.signal()
        return following is not None

    # ------------------------------------------------ a caller's own reply

    def wait_reply(self, handle: ProcessCallHandle, timeout: float | None) -> bool:
        """Wait for the call submitted with ``read_here`` by this thread:
        whether it ended within ``timeout``. Reads the reply itself when
        the worker took the call at once."""
        process, handle.read_by = handle.read_by, None
        if process is None:
            return handle.wait(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        slot = self._slots[handle.worker]
        try:
            with process.reading:  # the reader lets go once it has read the previous reply
                if self._read_own_reply(slot, process, handle, deadline):
                    return True
        finally:
            self._hand_back(slot, process, handle)  # unless it read the reply
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        return handle.wait(left)

    def _read_own_reply(self, slot: _Slot, process: WorkerProcess, handle: ProcessCallHandle,
                        deadline: float | None) -> bool:
        """Read the call's reply, and account for it as the reader would;
        False when the reader thread must read it instead (timeout, output
        first, the worker's end)."""
        if handle.done:  # the reader found the reply first, or the worker's end
            return True
        if process.ended:  # its pipes are closed: the reader accounts for its end
            return False
        if not process.reply_ready(REPLY_SPIN_NS, deadline):
            return False
        try:
            tag, parts = process.receiver.receive()
            if tag == OUTPUT_TAG:
                self._relay_output(slot, parts)
                return False
            self._settle_own_reply(slot, process, handle, tag, parts)
            return True
        except framing.ChannelClosed:
            return False  # the process ended: its reader accounts for that
        except BaseException:
            # An interrupt may have cut a message: the pipe is out of step.
            process.kill("its reply was being read when its caller was interrupted")
            raise

    def _settle_own_reply(self, slot: _Slot, process: WorkerProcess, handle: ProcessCallHandle,
                          tag: int, parts: list[Any]) -> None:
        """The reader's accounting for a reply, without taking the next
        call: an interrupt here must not leave a queued call half-taken. The
        worker turns idle last, so that until then its end (if an interrupt
        kills it) sees the call as its own and already done."""
        kind, deserialize_ns, result_ns, started, finished = REPLY_META.unpack(parts[0])
        with self._lock:
            assert slot.call is handle and handle.id == tag
            handle.started_ns, handle.finished_ns = started, finished
            handle.deserialize_ns, handle.result_serialize_ns = deserialize_ns, result_ns
            self._finish_locked(handle, _core.STATUS_REPLIED, kind, _with_buffers(parts),
                                slot.index, signal=False)
            slot.calls_done += 1
            slot.busy_ns_total += finished - started
            slot.call, slot.state, slot.reader_reads = None, "idle", True
            wake = slot.reader_parked and (self._closing or len(slot.pinned) + len(self._queue) > 0)
            if wake:
                slot.reader_parked = slot.reader_watching = False
        if wake:
            process.wake_reader()  # it hands the worker its next call, or lets it exit
        handle.signal()

    def _hand_back(self, slot: _Slot, process: WorkerProcess, handle: ProcessCallHandle) -> None:
        """Leave the call's reply to the reader thread."""
        with self._lock:
            if slot.call is not handle or slot.reader_reads:
                return
            slot.reader_reads = True
            wake = self._reader_to_wake_locked(slot)
        if wake:
            process.wake_reader()

    def _ended(self, slot: _Slot, process: WorkerProcess, how: str) -> None:
        """The worker's process has ended: fail the call it held, and
        replace it unless the pool is closing."""
        dead_calls: list[ProcessCallHandle] = []
        with self._lock:
            handle, slot.call = slot.call, None
            detail = how if process.stop_reason is None else f"{how}: {process.stop_reason}"
            if handle is not None and handle.done:  # its caller read the reply, then was stopped
                handle = None
            if handle is not None:
                self._finish_locked(handle, _core.STATUS_WORKER_DIED, _core.REPLY_ENGINE_ERROR,
                                    detail.encode(), slot.index)
                dead_calls.append(handle)
            if slot.setup_report is None:  # it died before it was set up: do not retry
                slot.setup_report = {"index": slot.index, "ok": False, "finished": True,
                                     "kind": _core.REPLY_ENGINE_ERROR,
                                     "reply": f"{detail} during init".encode()}
                slot.state = "dead"
            replace = not self._closing and slot.state != "dead"
            slot.process = None  # ended: no longer among the workers' processes
            if replace:
                slot.state = "starting"
            if self._closing:
                slot.state = "stopped"
                dead_calls += self._drop_locked(slot.pinned, _core.STATUS_CANCELLED)
            elif not replace:
                dead_calls += self._drop_locked(slot.pinned, _core.STATUS_WORKER_DIED)
                if all(s.state == "dead" for s in self._slots):
                    self._broken = True
                    dead_calls += self._drop_locked(self._queue, _core.STATUS_POOL_BROKEN)
            if handle is not None or replace:
                slot.detail = detail
        slot.ready.set()
        for dead in dead_calls:
            dead.settle_owner()
        if replace:
            self._start(slot)

    def _drop_locked(self, queue: collections.deque[ProcessCallHandle],
                     status: int) -> list[ProcessCallHandle]:
        dropped = []
        while queue:
            handle = queue.popleft()
            if not handle.done:
                self._finish_locked(handle, status, _core.REPLY_ENGINE_ERROR,
                                    b"the worker it was sent to is gone", -1)
                dropped.append(handle)
        return dropped

    def _finish_locked(self, handle: ProcessCallHandle, status: int, kind: int, reply: bytes,
                       worker: int, *, signal: bool = True) -> bool:
        """Record the call's end in the log and the totals; settle it
        (its waiters are woken by ``handle.signal()`` when not ``signal``)."""
        owned = handle.finish(status, kind, reply, worker, signal=signal)
        self._seq += 1
        t = self._totals
        t["calls"] += 1
        t["items"] += handle.item_count
        if status == _core.STATUS_REPLIED:
            t["replied"] += 1
            t["run_ns"] += handle.finished_ns - handle.started_ns
            t["queue_wait_ns"] += max(0, handle.started_ns - handle.enqueued_ns)
            t["deserialize_ns"] += handle.deserialize_ns
            t["result_serialize_ns"] += handle.result_serialize_ns
        else:
            t["failed"] += 1
        t["serialize_ns"] += handle.serialize_ns
        self._log.append((
            self._seq, handle.id, worker, handle.target,
            None if handle.item_index < 0 else handle.item_index, handle.item_count,
            _outcomes()[status], kind, handle.submitted_ns, handle.enqueued_ns,
            handle.started_ns if status == _core.STATUS_REPLIED else 0, handle.finished_ns,
            handle.serialize_ns, handle.deserialize_ns, handle.result_serialize_ns))
        return owned

    def _mark_dead(self, slot: _Slot, detail: str) -> None:
        with self._lock:
            slot.state, slot.detail = "dead", detail
            if all(s.state == "dead" for s in self._slots):
                self._broken = True

    # ----------------------------------------------------------------- close

    def close(self, cancel_pending: bool, timeout: float | None = None
              ) -> list[tuple[int, str, float]]:
        """Stop: cancel the queued calls (``cancel_pending``) or let workers
        finish them, then let every worker exit. After ``timeout`` seconds,
        cancel what is still queued and terminate the workers still
        running a call. Returns those: (index, target, seconds running)."""
        current = threading.current_thread()
        with self._lock:
            self._closing = True
            cancelled = self._cancel_queued_locked() if cancel_pending else []
            idle = [s for s in self._slots if s.state in ("idle", "starting") and s.call is None]
            for slot in self._slots:
                if slot.state == "idle":
                    slot.state = "stopping"
            threads = [t for t in self.reader_threads if t is not current]
        for handle in cancelled:
            handle.settle_owner()
        for slot in idle:
            if slot.process is not None and slot.state == "stopping":
                slot.process.finish_requests()
        deadline = None if timeout is None else time.monotonic() + timeout
        while threads:
            for thread in threads:
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if any(t.is_alive() for t in threads):
                left = self._terminate_running(timeout, current)
                self.stop_board.close()
                return left
            with self._lock:  # a replacement may have started meanwhile
                threads = [t for t in self.reader_threads if t is not current]
        self.stop_board.close()  # every reader has ended: no worker starts now
        return []

    def _cancel_queued_locked(self) -> list[ProcessCallHandle]:
        cancelled = self._drop_locked(self._queue, _core.STATUS_CANCELLED)
        for slot in self._slots:
            cancelled += self._drop_locked(slot.pinned, _core.STATUS_CANCELLED)
        return cancelled

    def _terminate_running(self, timeout: float | None, current: threading.Thread
                           ) -> list[tuple[int, str, float]]:
        now = time.monotonic_ns()
        with self._lock:
            cancelled = self._cancel_queued_locked()
            running = [(s, s.process, s.call) for s in self._slots if s.process is not None
                       and s.state not in ("stopped", "dead")]
        for handle in cancelled:
            handle.settle_owner()
        reason = f"terminated by close(timeout={timeout:g}) while running its call" \
            if timeout is not None else "terminated by close()"
        for _, process, _ in running:
            assert process is not None
            process.terminate(reason)
        with self._lock:
            threads = [t for t in self.reader_threads if t is not current]
        for thread in threads:
            thread.join()
        return [(slot.index, call.target if call is not None else "",
                 (now - call.started_ns) / 1e9 if call is not None else 0.0)
                for slot, _, call in running]

    # ---------------------------------------------------------- observation

    @property
    def workers(self) -> int:
        return len(self._slots)

    @property
    def broken(self) -> bool:
        return self._broken

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def last_call_id(self) -> int:
        return self._last_id

    def status(self) -> list[dict[str, Any]]:
        now = time.monotonic_ns()
        with self._lock:
            rows = []
            for s in self._slots:
                call = s.call
                state = "idle" if s.state == "stopping" else s.state
                rows.append({
                    "index": s.index, "state": state,
                    "target": call.target if call is not None else None,
                    "item_index": call.item_index if call is not None and call.item_index >= 0
                    else None,
                    "busy_seconds": (now - call.started_ns) / 1e9 if call is not None else 0.0,
                    "calls_done": s.calls_done, "busy_seconds_total": s.busy_ns_total / 1e9,
                    "detail": s.detail if s.state == "dead" else None,
                    "call_id": call.id if call is not None else 0})
            return rows

    def records(self, after: int = 0) -> list[tuple[Any, ...]]:
        with self._lock:
            return [r for r in self._log if r[0] > after]

    def totals(self) -> dict[str, int]:
        with self._lock:
            return dict(self._totals)

    def pids(self) -> list[int]:
        """The process ids of the workers' current processes."""
        with self._lock:
            return [s.process.pid for s in self._slots
                    if s.process is not None and s.state not in ("dead", "stopped")]

