"""A program that runs a pool under an address-space limit (RLIMIT_AS) of
LIMIT_HEADROOM above what the process maps once its pool is up, and asks for
more memory than that: in a worker, and as a result the worker must pickle
and the caller copy. Each step is reported as a JSON line: the error (if any)
and whether the pool still answers afterwards.
"""

from __future__ import annotations

import json
import resource

from interp_rpc import InterpreterPool

MiB = 1 << 20
LIMIT_HEADROOM = 600 * MiB
#: (step, target, argument): each needs more memory than the headroom.
STEPS = [
    ("worker allocates 4 GiB", bytearray, 4096 * MiB),
    ("350 MiB result", bytes, 350 * MiB),
    ("350 MiB bytearray result", bytearray, 350 * MiB),
]


def mapped_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def report(event: str, **fields: object) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def main() -> None:
    with InterpreterPool(workers=2) as pool:
        pool.call(len, b"every worker started")
        limit = mapped_bytes() + LIMIT_HEADROOM
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
        for step, target, size in STEPS:
            try:
                pool.call(target, size)
            except Exception as exc:
                report(step, error=type(exc).__name__, memory_error=isinstance(exc, MemoryError),
                       message=str(exc).splitlines()[0], then=pool.call(sum, [1, 2]))
            else:
                report(step, error=None, then=pool.call(sum, [1, 2]))
    report("end")


if __name__ == "__main__":
    main()
