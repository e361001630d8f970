"""What happens to pools still open when the interpreter exits.

CPython's finalization ends every subinterpreter still alive, even one a
thread is running in, and that thread then crashes the process when its call
returns. So every open pool is stopped first, by an atexit routine.
"""

from __future__ import annotations

import atexit
import warnings
import weakref
from typing import TYPE_CHECKING

from interp_rpc import _exit_status

if TYPE_CHECKING:
    from interp_rpc._pool import InterpreterPool

#: How long, at interpreter exit, a pool that is still open waits for running
#: calls before giving up on them (queued calls are cancelled at once).
EXIT_TIMEOUT = 1.0

_live_pools: weakref.WeakSet[InterpreterPool] = weakref.WeakSet()


def register(pool: InterpreterPool) -> None:
    """Stop ``pool`` at exit if it is still open then."""
    _live_pools.add(pool)
    _exit_status.watch()


def unregister(pool: InterpreterPool) -> None:
    """Every worker of ``pool`` has exited: nothing is left to stop."""
    _live_pools.discard(pool)


def _close_open_pools_at_exit() -> None:
    """Stop every open pool before CPython destroys leftover interpreters.

    Queued calls are cancelled and running calls get EXIT_TIMEOUT seconds;
    calls still running then get a SystemExit raised in them (pure-Python
    code stops at once). If a worker is still stuck after that (blocked in C
    code), the process ends at once with os._exit and the program's own exit
    code, instead of crashing.
    """
    stuck = [pool for pool in list(_live_pools)
             if pool._stop(wait=False, timeout=EXIT_TIMEOUT, warn=False)]
    if not stuck:
        return
    running = "; ".join(f"worker {w.index} running {w.target!r} for {w.busy_seconds:.1f} s"
                        for pool in stuck for w in pool.status() if w.state == "busy")
    warnings.warn(f"interp-rpc: at interpreter exit, call(s) still running after "
                  f"{EXIT_TIMEOUT:g} s ({running}) are being stopped with SystemExit.",
                  RuntimeWarning, stacklevel=1)
    for pool in stuck:
        busy = [w.index for w in pool.status() if w.state == "busy"]
        pool._engine.interrupt(busy, EXIT_TIMEOUT)
    still = [pool for pool in stuck if pool._stop(wait=False, timeout=EXIT_TIMEOUT, warn=False)]
    names = "; ".join(f"worker {w.index} running {w.target!r} for {w.busy_seconds:.1f} s"
                      for pool in still for w in pool.status() if w.state == "busy")
    if not still:
        return
    code = _exit_status.program_exit_code()
    warnings.warn(
        f"interp-rpc: at interpreter exit, call(s) could not be stopped ({names}): they are "
        "blocked outside Python code. Ending the process now (exit code "
        f"{code}) rather than let CPython's finalization crash under them.",
        RuntimeWarning, stacklevel=1)
    _exit_status.end_process(code)


atexit.register(_close_open_pools_at_exit)
