"""Profiling inside a worker: the times of a chunk's items, and a function profiler.

A worker loads this file by path (as it loads ``wire``) the first time a
request asks to be profiled, so pools that never profile never pay for it.
The caller imports it as ``interp_rpc._worker.profiling`` for the request
flag and to read the item times back. Standard library only.
"""

from __future__ import annotations

import time
from array import array

TYPE_CHECKING = False  # as in main.py: a worker starts without typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

#: Appended to a chunk request's mode: its reply carries the items' times,
#: as ``(results, failed_index, error, marks)`` (see run_chunk_timed).
ITEM_TIMES = "+items"

#: Items are timed one by one when they take at least this long. Shorter ones
#: are timed in groups that last about this long, and their times are the
#: group's average. Each group but a chunk's last costs a slice (a copy per
#: item) and a few dozen bytecodes: on the 20,000-item map of identity, groups
#: of 20 µs cost the worker 1.2 % of the map's instructions (callgrind, with
#: the groups' sizes of a native run), 50 µs ones 0.3 % (profile_bench.py).
MIN_GROUP_NS = 50_000

# A group grows at most this much from one measurement to the next (one
# unusually fast item must not make the next group huge).
_MAX_GROWTH = 8

# The group size each target's last chunk ended with, so that the next chunk
# starts with the right size instead of timing its first items one by one.
_group_sizes: dict[object, int] = {}

# How marks cross to the caller: one bytes object of int64s pickles in a
# tenth of the time a list of large ints does.
_MARK_TYPE = "q"


def run_chunk_timed(fn: Callable[..., Any], items: list[Any], star: bool, key: object,
                    stopped: type[BaseException], stop: memoryview | None = None,
                    first_index: int = 0) -> tuple[list[Any], int, BaseException | None,
                                                   bytes]:
    """Runs fn on each item until one raises: (results so far, index of the
    failed item or -1, its exception, ``marks``). Marks are the start time,
    then for each group of items the chunk offset it ended before and the
    time it ended (``[t0, end1, t1, end2, t2, ...]``, ``time.monotonic_ns()``
    values), as int64 bytes (read_marks reads them); a failed item ends the
    last group, an item that raised ``stopped`` (its map was stopped before
    it) did not run and is not in the marks. The exception is returned, not
    described, so that the worker describes it after the function profiler
    stopped.

    ``stop`` is the map's stop flag, read before every item (raising
    ``stopped``, as _run_chunk's stoppable_items does): inline, because a
    wrapper around fn doubled the cost of a timed tiny item."""
    clock = time.monotonic_ns
    results: list[Any] = []
    append = results.append
    total = len(items)
    size = _group_sizes.get(key, 1)
    last = clock()
    marks = [last]
    mark = marks.append
    pos = 0  # the group's first item
    # Nothing is counted per item, and the last group of the chunk (with a
    # remainder under half a group, which joins it) runs over the chunk
    # itself, not a copy: a slice costs a copy per item, an islice over one
    # iterator costs more per item than that copy. The builtins this loop
    # calls are _RUNNER_BUILTINS, left out of the function profile unless
    # the user's frames call them too.
    while True:
        end = pos + size
        group: Iterable[Any]
        if end + (size >> 1) <= total:
            group = items[pos:end]
        else:
            tail: Any = iter(items)  # a list iterator, set to start at pos
            tail.__setstate__(pos)
            group = tail
            end = total
        try:
            if stop is not None and star:
                for item in group:
                    if stop[0]:
                        raise stopped("the map was stopped before item "
                                      f"{first_index + len(results)}")
                    append(fn(*item))
            elif stop is not None:
                for item in group:
                    if stop[0]:
                        raise stopped("the map was stopped before item "
                                      f"{first_index + len(results)}")
                    append(fn(item))
            elif star:
                for item in group:
                    append(fn(*item))
            else:
                for item in group:
                    append(fn(item))
        except BaseException as exc:
            index = len(results)  # the item that failed, or (stopped) did not start
            ran = index if isinstance(exc, stopped) else index + 1
            if ran > pos:
                mark(ran)
                mark(clock())
            _group_sizes[key] = size
            return results, index, exc, array(_MARK_TYPE, marks).tobytes()
        now = clock()
        mark(end)
        mark(now)
        if end == total:
            break
        count = end - pos
        size = count * MIN_GROUP_NS // (now - last or 1) or 1
        if size > count * _MAX_GROWTH:
            size = count * _MAX_GROWTH
        pos = end
        last = now
    _group_sizes[key] = size
    return results, -1, None, array(_MARK_TYPE, marks).tobytes()


def read_marks(marks: bytes) -> list[int]:
    """A chunk's marks as run_chunk_timed made them: ``[t0, end1, t1, ...]``."""
    return array(_MARK_TYPE, marks).tolist()


def group_count(marks: bytes) -> int:
    """How many groups a chunk's items were timed in (each read the clock once)."""
    return len(marks) // (2 * array(_MARK_TYPE).itemsize)


def item_spans(marks: bytes) -> list[tuple[int, int, int]]:
    """``(start_ns, end_ns, group_size)`` per item, from a chunk's marks."""
    spans: list[tuple[int, int, int]] = []
    values = read_marks(marks)
    start, first = values[0], 0
    for index in range(1, len(values) - 1, 2):
        end_item, end = values[index], values[index + 1]
        count = end_item - first
        step = (end - start) / count
        spans.extend((start + round(step * k), start + round(step * (k + 1)), count)
                     for k in range(count))
        start, first = end, end_item
    return spans


def group_spans(marks: bytes) -> list[tuple[int, int]]:
    """Per item, ``(start_ns, end_ns)`` of the group it was timed in."""
    spans: list[tuple[int, int]] = []
    values = read_marks(marks)
    start, first = values[0], 0
    for index in range(1, len(values) - 1, 2):
        end_item, end = values[index], values[index + 1]
        spans += [(start, end)] * (end_item - first)
        start, first = end, end_item
    return spans


# ----------------------------------------------------------- function profiler

# C functions the worker's own code calls while the profiler is on (to run a
# chunk and to stop the profiler): calls to them from the worker's frames are
# taken out of the stats; calls from the user's code stay.
_RUNNER_BUILTINS = frozenset({
    "<method 'append' of 'list' objects>", "<method 'get' of 'dict' objects>",
    "<built-in method time.monotonic_ns>", "<method 'disable' of '_lsprof.Profiler' objects>",
    "<method 'startswith' of 'str' objects>", "<built-in method builtins.len>"})


# The profiler's cost in this worker, measured by the first FunctionProfiler.
_calibration: tuple[float, float] | None = None


class FunctionProfiler:
    """cProfile, on only while a target runs (never over the worker's own
    unpickling and pickling), with its own cost measured once."""

    def __init__(self, worker_files: tuple[str, ...]) -> None:
        import cProfile

        self._worker_files = (*worker_files, __file__)
        self._profile_type = cProfile.Profile
        global _calibration
        if _calibration is None:
            _calibration = self._calibrate()
        self.overhead_per_call_ns, self.overhead_per_run_ns = _calibration
        self._profiler = cProfile.Profile()
        self.runs = 0

    def enable(self) -> None:
        self.runs += 1
        self._profiler.enable()

    def disable(self) -> None:
        self._profiler.disable()

    def _calibrate(self) -> tuple[float, float]:
        """(ns added per profiled function call, ns per enable+disable pair):
        the best of a few tries, since other work on the machine only adds."""
        clock = time.perf_counter_ns

        def nothing() -> None:
            pass

        calls = 2000
        per_call = per_run = float("inf")
        for _ in range(3):
            start = clock()
            for _ in range(calls):
                nothing()
            plain = clock() - start
            profiler = self._profile_type()
            start = clock()
            profiler.enable()
            for _ in range(calls):
                nothing()
            profiler.disable()
            profiled = clock() - start
            start = clock()
            for _ in range(20):
                profiler.enable()
                profiler.disable()
            per_run = min(per_run, (clock() - start) / 20)
            per_call = min(per_call, max(0.0, (profiled - plain) / calls))
        return per_call, per_run

    def results(self) -> dict[str, Any]:
        """The stats (pstats' dict) without the worker's own frames, and the
        profiler's estimated cost."""
        self._profiler.create_stats()
        raw: dict[tuple[str, int, str], tuple[Any, ...]] = self._profiler.stats
        worker_frames = {func for func in raw if func[0] in self._worker_files}
        stats = {}
        calls = 0
        for func, (cc, nc, tt, ct, callers) in raw.items():
            if func in worker_frames:
                continue
            mine = {c: v for c, v in callers.items() if c not in worker_frames}
            if func[0] == "~" and func[2] in _RUNNER_BUILTINS:
                # Only what the user's frames called counts.
                cc, nc, tt, ct = (sum(v[i] for v in mine.values()) for i in range(4))
                if nc == 0:
                    continue
            calls += nc
            stats[func] = (cc, nc, tt, ct, mine)
        overhead = calls * self.overhead_per_call_ns + self.runs * self.overhead_per_run_ns
        return {"stats": stats, "overhead_ns": int(overhead), "runs": self.runs}
