"""A program whose wait for a future is interrupted (Ctrl-C) just as the call
finishes: the future must still be settled, though nobody asks for its
result again.

The signal handler runs between two slices of result()'s wait, while the
waiter still counts as the call's direct waiter (core/call.hpp): it lets the
call finish and the completion thread see it first, then interrupts the wait.
"""

from __future__ import annotations

import json
import signal
import time
from types import FrameType

from interp_rpc import InterpreterPool

CALL_SECONDS = 0.2
#: Far more than the completion thread takes to see a finished call.
COMPLETION_GRACE = 0.2
SETTLE_LIMIT = 5.0


def report(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


with InterpreterPool(workers=1) as pool:
    future = pool.submit(time.sleep, CALL_SECONDS)
    handle = future._handle
    assert handle is not None

    def interrupt_once_finished(signum: int, frame: FrameType | None) -> None:
        deadline = time.monotonic() + SETTLE_LIMIT
        while not handle.done and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(COMPLETION_GRACE)
        raise KeyboardInterrupt

    signal.signal(signal.SIGALRM, interrupt_once_finished)
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS / 4)
    try:
        future.result()
    except KeyboardInterrupt:
        report("interrupted", call_done=handle.done)
    deadline = time.monotonic() + SETTLE_LIMIT
    while not future.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    settled = future.done()
    report("settled", done=settled, result=future.result(timeout=0) if settled else None)
report("end")
