"""The time in message headers, which the kernel's threads stamp at once:
each thread formats its own time (src/kernel/thread_safe_gmtime.cpp), not
another thread's, as C's gmtime() and its one static buffer would have it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conftest import Kernel

GMTIME_BUFFERS = """
import ctypes, threading
c_library = ctypes.CDLL(None)  # the kernel process's symbols, its executable's first
c_library.gmtime.restype = ctypes.c_void_p
now = ctypes.c_long(0)
buffers = []
def stamp():
    buffers.append(c_library.gmtime(ctypes.byref(now)))
thread = threading.Thread(target=stamp)
thread.start()
thread.join()
stamp()
print(len(set(buffers)))
"""


def test_each_thread_of_the_kernel_gets_its_own_gmtime_buffer(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(GMTIME_BUFFERS)
    assert result.status == "ok", result.reply
    assert result.stream() == "2\n"


def test_output_from_threads_at_once_carries_the_time_it_was_sent(shared_kernel: Kernel) -> None:
    started = datetime.now(UTC)
    result = shared_kernel.execute(
        "import threading\n"
        "def chatter():\n"
        "    for _ in range(200): print('x', flush=True)\n"
        "threads = [threading.Thread(target=chatter) for _ in range(4)]\n"
        "for t in threads: t.start()\n"
        "for t in threads: t.join()\n", timeout=120)
    ended = datetime.now(UTC)
    assert result.status == "ok", result.reply
    dates = [m["header"]["date"] for m in result.outputs]
    assert dates
    # jupyter_client parses the ISO 8601 stamp; a torn stamp would fall
    # outside the cell's run (a minute or an hour off at a boundary).
    slack = timedelta(seconds=5)
    assert all(started - slack <= d <= ended + slack for d in dates), dates
