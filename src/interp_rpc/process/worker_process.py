"""One worker of a ProcessPool: its OS process and the pipes to it.

The process is forked by the worker template (spawn.py) and runs child.py.
Three pipes join it to the pool: requests (the pool writes), replies (read
by whoever holds ``reading``: the pool's reader thread for this worker, or
a caller reading its own reply), and a lifeline that the worker watches so
that it exits when the pool's process is gone. Beside them, a socket passes
the descriptors of new shared memory segments, both ways, and the pool's
side of those segments is ``memory`` (see framing.py and segments.py); the
process also maps the pool's stop board (stop_board.py). A pidfd (the
template's, for this process) tells the reader thread that the process
ended while it was not reading, and an eventfd wakes it when a call is left
to it.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import threading
import time
from typing import TYPE_CHECKING

from interp_rpc.process import framing, spawn
from interp_rpc.process.segments import SharedMemory

if TYPE_CHECKING:
    from interp_rpc.process.handle import ProcessCallHandle

#: What wait_as_reader() saw.
WOKEN, ENDED, READABLE = "woken", "ended", "readable"

#: After terminate(), how long a worker gets before it is killed.
TERMINATE_GRACE_SECONDS = 1.0


class WorkerProcess:
    """A started worker process; the pool's engine decides what it runs."""

    def __init__(self, index: int, stop_board: int) -> None:
        """``stop_board``: the descriptor of the pool's stop board
        (stop_board.py), which the process maps."""
        self.index = index
        request_read, self._request_fd = os.pipe()
        self.reply_fd, reply_write = os.pipe()
        lifeline_read, self._lifeline_fd = os.pipe()
        self.files, files_end = framing.file_sockets()
        ends = (request_read, reply_write, lifeline_read, files_end.fileno(), stop_board)
        try:
            self.process = spawn.start_worker(list(ends))
        except BaseException:
            for fd in (self._request_fd, self.reply_fd, self._lifeline_fd):
                os.close(fd)
            self.files.close()
            raise
        finally:
            for fd in (request_read, reply_write, lifeline_read):
                os.close(fd)
            files_end.close()
        self.pid = self.process.pid
        self.memory = SharedMemory()
        self.receiver = framing.Receiver(self.reply_fd, self.files, self.memory)
        #: Held by the one thread that reads the reply pipe (through ``receiver``).
        self.reading = threading.Lock()
        #: Set, under ``reading``, once the pipes are closed: their numbers
        #: may already name a replacement's pipes.
        self.ended = False
        self._wake_lock = threading.Lock()
        self._replies = select.poll()
        self._replies.register(self.reply_fd, select.POLLIN)
        self._ended = self.process.pidfd
        self._wake = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self._reader_events = select.poll()
        self._watching_replies = select.poll()
        for fd in (self._ended, self._wake):
            self._reader_events.register(fd, select.POLLIN)
            self._watching_replies.register(fd, select.POLLIN)
        self._watching_replies.register(self.reply_fd, select.POLLIN)
        self._send_lock = threading.Lock()
        self._request_open = True
        self.started_at = time.monotonic()
        #: Set when the pool stops this worker on purpose: why, for the call it held.
        self.stop_reason: str | None = None

    def send(self, tag: int, parts: list[object]) -> bool:
        """Write a message; False if the worker can no longer read (it died,
        or is being stopped): its reader finds out why."""
        with self._send_lock:
            if not self._request_open:
                return False
            try:
                framing.send(self._request_fd, self.files, self.memory, tag, parts)
            except BrokenPipeError:
                return False
            except BaseException as exc:
                # The message could not be made or was cut short (no memory
                # for a segment, Ctrl-C during a large copy): the channel may
                # be out of step, so the worker is replaced, and the call it
                # was sent fails saying why, rather than wait for a reply.
                self.kill(f"its call could not be sent to it ({type(exc).__name__}: {exc})")
                if not isinstance(exc, Exception):
                    raise
                return False
        return True

    def send_call(self, handle: ProcessCallHandle) -> bool:
        data = handle.data
        if data is None:
            return False
        return self.send(handle.id, [data, *handle.buffers])

    def reply_ready(self, spin_ns: int, deadline: float | None) -> bool:
        """Whether the reply pipe has something to read (or is at its end)
        by ``deadline`` (time.monotonic(); None: no limit). Watches it for
        ``spin_ns`` without sleeping first: a short call's reply is read
        without waiting to be woken. Only the holder of ``reading`` calls
        this. Reads nothing, so an interrupt here loses nothing."""
        poll = self._replies.poll
        clock = time.monotonic_ns
        until = clock() + spin_ns
        while True:
            if poll(0):
                return True
            if clock() >= until:
                break
        while True:
            if deadline is None:
                return bool(poll())
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if poll(math.ceil(left * 1000)):
                return True

    def wake_reader(self) -> None:
        """Wake the reader thread where it waits in ``wait_as_reader``."""
        with self._wake_lock:
            if not self.ended:
                os.eventfd_write(self._wake, 1)

    def wait_as_reader(self, watch_replies: bool) -> str:
        """The reader thread's wait while no call is left to it: until it
        is woken (``WOKEN``), the process has ended (``ENDED``), or, with
        ``watch_replies``, the reply pipe has something to read
        (``READABLE``)."""
        poll = self._watching_replies if watch_replies else self._reader_events
        woke = READABLE
        for fd, _ in poll.poll():
            if fd == self._ended:
                return ENDED
            if fd == self._wake:
                woke = WOKEN
                with contextlib.suppress(BlockingIOError):
                    os.eventfd_read(self._wake)
        return woke

    def finish_requests(self) -> None:
        """No more requests: the worker exits once it has replied to the last."""
        with self._send_lock:
            if self._request_open:
                self._request_open = False
                os.close(self._request_fd)

    def kill(self, reason: str) -> None:
        """End the process now (SIGKILL); ``reason`` is what its call is told."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self.process.kill()

    def terminate(self, reason: str) -> None:
        """SIGTERM, then SIGKILL if it has not ended in a moment."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self.process.terminate()
        try:
            self.process.wait(TERMINATE_GRACE_SECONDS)
        except TimeoutError:
            self.process.kill()

    def reap(self) -> str:
        """Wait for the process to end (its reply pipe is at its end) and
        release every pipe; how it ended."""
        returncode = self.process.wait()
        self.finish_requests()
        with self.reading, self._wake_lock:  # no caller reads, nobody wakes: then close
            self.ended = True
            for fd in (self.reply_fd, self._lifeline_fd, self._wake):
                os.close(fd)
            self.process.close()
            self.files.close()
            self.memory.close()
        return f"worker {self.index} (pid {self.pid}) {spawn.exit_description(returncode)}"
