"""A program that ends while a worker still runs a call, with the first
thread started at exit made to fail (fail_pthread_create preloaded): the
thread that interp-rpc's exit routine starts to interrupt that call.

Registered after interp_rpc's own exit routine, the atexit handler here runs
before it (atexit runs handlers last in, first out).
"""

from __future__ import annotations

import atexit
import ctypes
import json

from interp_rpc import InterpreterPool


def fail_the_next_thread() -> None:
    ctypes.CDLL(None).interp_rpc_fail_pthread_create(ctypes.c_long(1))


pool = InterpreterPool(workers=1)
pool.submit(exec, "while True: pass")  # pure Python: a SystemExit stops it
atexit.register(fail_the_next_thread)
print(json.dumps({"event": "end"}), flush=True)
