"""Workers never need the main interpreter's GIL to run calls."""

from __future__ import annotations

import ctypes
import os
import select
from pathlib import Path

from support import MakePool

POLLIN = select.POLLIN


class PollFd(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]


def poll_holding_the_gil(fd: int, timeout_ms: int) -> int:
    """poll(2) called through ctypes.PyDLL, which does NOT release the GIL:
    for up to ``timeout_ms`` nothing else runs in the main interpreter."""
    libc = ctypes.PyDLL(None)
    libc.poll.argtypes = [ctypes.POINTER(PollFd), ctypes.c_ulong, ctypes.c_int]
    libc.poll.restype = ctypes.c_int
    fds = PollFd(fd, POLLIN, 0)
    return int(libc.poll(ctypes.byref(fds), 1, timeout_ms))


def test_workers_run_calls_while_the_main_thread_holds_the_gil(make_pool: MakePool,
                                                                tmp_path: Path) -> None:
    pool = make_pool(workers=1)
    read_end, write_end = os.pipe()
    try:
        gate = tmp_path / "gate"
        first = pool.submit("pooltasks.wait_for_path", str(gate))
        second = pool.submit("os.write", write_end, b"x")  # queued behind the first
        gate.touch()
        # The worker must finish the first call, take the second from the
        # queue and run it while this thread holds the main GIL throughout.
        ready = poll_holding_the_gil(read_end, 20_000)
        assert ready == 1, "the worker needed the main GIL to go on"
        assert first.result(timeout=30) is None
        assert second.result(timeout=30) == 1
        assert os.read(read_end, 1) == b"x"
    finally:
        os.close(read_end)
        os.close(write_end)
