"""What happens to engines still running when the interpreter exits.

CPython's finalization ends every subinterpreter still alive, even one a
thread is running in, and that thread then crashes the process when its call
returns. So at exit, every engine the C++ registry still holds (open pools,
pools that were garbage-collected, pools whose ``init`` failed or timed out)
is closed first, by an atexit routine. As the stdlib executors do, work
submitted and never waited for still runs: queued and running calls get
EXIT_TIMEOUT seconds, all engines together. Then the calls still queued are cancelled and
those still running get a SystemExit raised in them (pure-Python code stops
at once). If a worker is still stuck
after that (blocked in C code), the process ends at once with os._exit and
the program's own exit status (exit_status), instead of crashing.
"""

from __future__ import annotations

import atexit
import time
import warnings
from typing import TYPE_CHECKING

from interp_rpc._pool import exit_status

if TYPE_CHECKING:
    from interp_rpc._pool.engine import _core

#: How long, at interpreter exit, an engine that is still open lets its queued
#: and running calls go on before it cancels and stops them.
EXIT_TIMEOUT = 1.0


def prepare() -> None:
    """Called before a pool's engine starts: from then on, how the program
    ends is watched, so that a forced exit keeps its status."""
    exit_status.watch()


def _running(engines: list[_core.Engine]) -> str:
    def doing(w: dict[str, object]) -> str:
        what = "still in init" if w["state"] == "starting" else f"running {w['target']!r}"
        return f"worker {w['index']} {what} for {w['busy_seconds']:.1f} s"

    return "; ".join(doing(w) for engine in engines for w in engine.status()
                     if w["state"] in ("busy", "starting"))


def _close_engines_at_exit() -> None:
    """Stop every engine still registered (see the module docstring)."""
    from interp_rpc._pool.engine import ENGINE_UNAVAILABLE, _core

    if ENGINE_UNAVAILABLE is not None:
        return
    engines = _core.open_engines()
    for engine in engines:
        engine.close(cancel_pending=False, timeout=0)  # no new calls, anywhere
    deadline = time.monotonic() + EXIT_TIMEOUT
    left = [engine for engine in engines
            if engine.close(cancel_pending=False, timeout=max(0.0, deadline - time.monotonic()))]
    # Whatever is still queued would wait for workers that are being stopped.
    left = [engine for engine in left if engine.close(cancel_pending=True, timeout=0)]
    if not left:
        return
    busy = [[w["index"] for w in engine.status() if w["state"] in ("busy", "starting")]
            for engine in left]
    if any(busy):
        warnings.warn(f"interp-rpc: at interpreter exit, call(s) still running after "
                      f"{EXIT_TIMEOUT:g} s ({_running(left)}) are being stopped with SystemExit;"
                      " calls still queued were cancelled.", RuntimeWarning, stacklevel=1)
    for engine, indices in zip(left, busy, strict=True):
        if indices:
            engine.interrupt(indices, EXIT_TIMEOUT)
    still = [engine for engine in left
             if engine.close(cancel_pending=True, timeout=EXIT_TIMEOUT)]
    if not still:
        return
    code = exit_status.program_exit_code()
    warnings.warn(
        f"interp-rpc: at interpreter exit, call(s) could not be stopped ({_running(still)}): "
        "they are blocked outside Python code. Ending the process now (exit code "
        f"{code}) rather than let CPython's finalization crash under them.",
        RuntimeWarning, stacklevel=1)
    exit_status.end_process(code)


atexit.register(_close_engines_at_exit)
