"""What every pool's map checks and works out before it sends anything.

``map(fn, *iterables, timeout=, chunksize=, buffersize=, errors=)`` means the
same on every pool: the options are checked with the same messages, the
target is resolved once (an unusable one fails before anything runs), the
deadline runs from the call, and without ``buffersize`` the input is read
whole, as Executor.map reads it, so its length is known.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from interp_rpc._pool import targets
from interp_rpc._pool.validation import (
    check_buffersize,
    check_chunksize,
    check_errors,
    check_timeout,
)


@dataclass(frozen=True, slots=True)
class MapSpec:
    fn: Callable[..., Any] | str
    normalized: tuple[targets.TargetSpec, str]  # targets.normalize(fn), shared by the chunks
    name: str  # how errors name the target
    timeout: float | None
    deadline: float | None  # on time.monotonic()'s clock
    mode: str  # "chunk", or "starchunk" when each item is a tuple of arguments
    chunksize: int | None
    buffersize: int | None
    collect: bool  # errors="collect": a failing item's RemoteError is its result
    # The items: a list when the input was read whole (no buffersize), the
    # range itself when it was one range, else an iterator read as the map
    # goes.
    items: list[Any] | range | Iterator[Any]

    @property
    def total(self) -> int | None:
        """How many items there are, if the input was read whole."""
        return len(self.items) if isinstance(self.items, (list, range)) else None


def map_spec(fn: Callable[..., Any] | str, iterables: tuple[Iterable[Any], ...], *,
             timeout: float | None, chunksize: int | None, buffersize: int | None,
             errors: str, check_open: Callable[[str], None]) -> MapSpec:
    """A map's arguments, checked; raises what a bad one should.
    ``check_open(name)`` raises if the pool cannot take the map: before the
    input is read, so a closed pool consumes none of it."""
    check_timeout("timeout", timeout)
    check_errors(errors)
    check_chunksize(chunksize)
    check_buffersize(buffersize)
    normalized = targets.normalize(fn)
    name = targets.describe(fn)
    check_open(name)
    deadline = None if timeout is None else time.monotonic() + timeout  # before reading
    star = len(iterables) != 1  # none: zip() of nothing, as Executor.map
    items: Iterable[Any] = zip(*iterables, strict=False) if star else iterables[0]
    # Everything is submitted now, as Executor.map does, unless buffersize
    # asks for a lazy read; knowing the count lets chunks be balanced.
    # A range is immutable and sliced into ranges: each chunk crosses as
    # range(start, stop, step), and no int is made until the worker's loop.
    read: list[Any] | range | Iterator[Any] = (
        iter(items) if buffersize is not None else items if type(items) is range else list(items))
    return MapSpec(fn=fn, normalized=normalized, name=name, timeout=timeout,
                   deadline=deadline,
                   mode="starchunk" if star else "chunk", chunksize=chunksize,
                   buffersize=buffersize, collect=errors == "collect", items=read)
