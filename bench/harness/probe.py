"""The body of ready_probe.py: one cold start of one contender's pool, with init.

It imports only the contenders and the workloads, and the contender's own
library before the clock starts, so the time is the pool's: constructor,
every worker's init as far as the pool waits for it, and the first result.
"""

from __future__ import annotations

import sys
import time

import workloads

from harness.contenders import ALL_KEYS, make_contender

# What init imports: had this process imported them already, an init that
# runs in this very interpreter (threads) would cost nothing.
INIT_MODULES = {"json", "decimal"}
# The harness bounds the whole probe; this only has to be longer.
CALL_TIMEOUT_S = 3600.0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ALL_KEYS or not argv[1].isdigit():
        print(f"usage: ready_probe.py {{{','.join(ALL_KEYS)}}} WORKERS", file=sys.stderr)
        return 2
    workers = int(argv[1])
    contender = make_contender(argv[0], workers)
    contender.preload()
    already = INIT_MODULES & sys.modules.keys()
    if contender.init_in_caller and already:
        print(f"ready_probe: {sorted(already)} imported before the clock started; "
              "the threads' init would be free", file=sys.stderr)
        return 1
    started = time.perf_counter()
    session = contender.open(workers, CALL_TIMEOUT_S, init=True)
    result = session.submit_result(workloads.identity, 1)
    seconds = time.perf_counter() - started
    session.close()
    contender.shutdown()
    if result != 1:
        print(f"ready_probe: identity(1) returned {result!r}", file=sys.stderr)
        return 1
    print(f"ready_seconds {seconds!r}")
    return 0
