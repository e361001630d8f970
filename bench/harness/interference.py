"""How much CPU other processes took while a measure ran.

The benchmark VM is shared: a neighbour's compile can take a core from a
2-worker pool, halve its speedup and stretch every wake-up. That cannot be
prevented from in here, but it can be measured and reported next to the
numbers it disturbed.

Others' CPU = all CPU time the machine spent (/proc/stat, including time the
hypervisor stole) minus the CPU time of this process and its descendants
(/proc/PID/stat), over the measured interval. A descendant that exits inside
the interval would count as "other", so intervals end before pools close.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
# CPU time is counted in ticks (10 ms): a shorter block gives no usable share.
_SHORTEST_BLOCK_S = 1.0


def _machine_ticks() -> int:
    """Busy ticks of all CPUs: user, nice, system, irq, softirq and steal."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return user + nice + system + irq + softirq + steal


def _own_ticks() -> int:
    """CPU ticks of this process (all its threads) and every live descendant."""
    parent_of: dict[int, int] = {}
    ticks_of: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                # The command name may hold spaces and parentheses: split after it.
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while we looked
        pid = int(entry.name)
        parent_of[pid] = int(fields[1])
        ticks_of[pid] = int(fields[11]) + int(fields[12])  # utime + stime
    me = os.getpid()
    total = 0
    for pid, ticks in ticks_of.items():
        ancestor = pid
        while ancestor not in (me, 0, 1) and ancestor in parent_of:
            ancestor = parent_of[ancestor]
        if ancestor == me:
            total += ticks
    return total


@dataclass
class Interference:
    """Filled in when the measured block ends."""

    # % of the whole machine's CPU used by others; None for a block too short.
    others_cpu_pct: float | None = None


@contextmanager
def metered() -> Iterator[Interference]:
    """Measures others' CPU use during the block, as a % of all cores."""
    result = Interference()
    machine, own, started = _machine_ticks(), _own_ticks(), time.monotonic()
    yield result
    others = (_machine_ticks() - machine) - (_own_ticks() - own)
    elapsed = time.monotonic() - started
    if elapsed >= _SHORTEST_BLOCK_S:
        capacity = elapsed * _TICKS_PER_SECOND * (os.cpu_count() or 1)
        # Clamped: tick rounding can push a share a little outside 0-100.
        result.others_cpu_pct = min(100.0, max(0.0, 100.0 * others / capacity))
