"""The program the fault tests run in a fresh process, under a fault.

It creates a pool, makes its first calls, closes it, then checks that a
second pool serves, and reports each step as one JSON line on stdout. Which
fault, and when, is set from outside:

- ``--fail-thread STEP N`` (with fail_pthread_create preloaded): the Nth
  thread started from the beginning of STEP ("create", "call" or "close")
  cannot start;
- INTERP_RPC_FAIL_INTERPRETER (the engine's fault hook): a worker's
  interpreter cannot be created.

Without a fault it reports how many threads each step started, which is how
the tests learn which N fall inside each step.
"""

from __future__ import annotations

import argparse
import concurrent.interpreters
import ctypes
import json
import operator
import queue
import sys
from typing import Any

from interp_rpc import InterpreterPool

#: The steps of the first pool, in order; a thread fault is armed at the start of one.
STEPS = ("create", "call", "close")
WORKERS = 3
#: Far less than the tests' limits, far more than a step takes.
STEP_TIMEOUT = 10.0


class ThreadFaults:
    """The preloaded fail_pthread_create library, if there is one."""

    def __init__(self) -> None:
        process = ctypes.CDLL(None)
        self._lib = process if hasattr(process, "interp_rpc_fail_pthread_create") else None

    def arm(self, nth: int) -> None:
        if self._lib is not None:
            self._lib.interp_rpc_fail_pthread_create(ctypes.c_long(nth))

    def counts(self) -> dict[str, int]:
        if self._lib is None:
            return {}
        return {"threads": self._lib.interp_rpc_pthread_create_calls(),
                "failed": self._lib.interp_rpc_pthread_create_failures()}


def report(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def error_fields(exc: BaseException) -> dict[str, str]:
    return {"error": type(exc).__name__, "message": str(exc)}


def called_back(pool: InterpreterPool) -> object:
    """What a done-callback saw of a future the engine settled."""
    seen: queue.Queue[object] = queue.Queue()
    future = pool.submit(operator.neg, 4)
    future.add_done_callback(lambda f: seen.put(f.result()))
    return seen.get(timeout=STEP_TIMEOUT)


def first_pool(faults: ThreadFaults, fail_step: str | None, nth: int) -> None:
    def step_starts(step: str) -> None:
        faults.arm(nth if step == fail_step else 0)

    step_starts("create")
    try:
        pool = InterpreterPool(workers=WORKERS)
    except Exception as exc:
        report("create", **error_fields(exc), **faults.counts())
        return
    report("create", **faults.counts())
    step_starts("call")
    try:
        results = [pool.call(operator.add, 1, 2),
                   pool.submit(operator.mul, 2, 3).result(timeout=STEP_TIMEOUT),
                   list(pool.map(abs, [-1, -2, -3])), called_back(pool)]
    except Exception as exc:
        report("call", **error_fields(exc), **faults.counts())
    else:
        report("call", results=results, **faults.counts())
    step_starts("close")
    try:
        pool.close()
    except Exception as exc:
        report("close", **error_fields(exc), **faults.counts())
    else:
        report("close", **faults.counts())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-thread", nargs=2, metavar=("STEP", "N"))
    args = parser.parse_args()
    fail_step, nth = (None, 0)
    if args.fail_thread:
        fail_step, nth = args.fail_thread[0], int(args.fail_thread[1])
    faults = ThreadFaults()
    first_pool(faults, fail_step, nth)
    faults.arm(0)
    with InterpreterPool(workers=2) as pool:
        report("second pool", result=pool.call(operator.add, 2, 3))
    report("end", interpreters=[i.id for i in concurrent.interpreters.list_all()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
