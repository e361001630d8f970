"""%parallel_stop [MAP]: stop a %parallel_map that runs in another shell of
the kernel (typed in a subshell console while the map blocks the notebook),
as Ctrl-C in that shell would: its cell fails with KeyboardInterrupt, after
saying how many items had completed."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from interp_rpc.notebook import options, running_maps

if TYPE_CHECKING:
    from interp_rpc.notebook.magics import ParallelMagics

#: How long %parallel_stop waits for the map to end before it says it has not.
STOP_WAIT_SECONDS = 10.0
_POLL_SECONDS = 0.02


@options.plain_help
@magic_arguments()
@kwds(usage="%(prog)s [--timeout S] [MAP]",
      epilog="MAP: the map's number, as %parallel_status lists it; without it, "
             "the one map running in another shell.")
@argument("--timeout", type=float, default=STOP_WAIT_SECONDS,
          help=f"how long to wait for the map to end (default {STOP_WAIT_SECONDS:g} s)")
def parallel_stop(self: ParallelMagics, line: str) -> None:
    """Stop a %parallel_map running in another shell (the notebook, while
    this is a subshell console), as Ctrl-C there would."""
    args, rest = options.parse(parallel_stop, line)
    if args is None:
        return
    options.positive("--timeout", args.timeout)
    target = _chosen(rest)
    target.stop()
    deadline = time.monotonic() + args.timeout
    while target in running_maps.all_running():
        if time.monotonic() >= deadline:
            print(f"Asked map {target.number} ({target.target}) to stop; it has not ended "
                  f"within {args.timeout:g} s.")
            return
        time.sleep(_POLL_SECONDS)
    print(f"Stopped map {target.number} ({target.target}): {target.done()} of "
          f"{target.total} items had completed.")


def _chosen(rest: str) -> running_maps.RunningMap:
    """The map MAP names, or the only one running in another shell."""
    others = running_maps.others()
    listing = "; ".join(m.describe() for m in others)
    if not rest:
        if not others:
            raise UsageError("no %parallel_map is running in another shell")
        if len(others) > 1:
            raise UsageError(f"{len(others)} maps are running, say which: {listing}")
        return others[0]
    try:
        number = int(rest)
    except ValueError:
        raise UsageError(f"MAP must be a map's number, as %parallel_status lists it, "
                         f"not {rest!r}") from None
    for candidate in others:
        if candidate.number == number:
            return candidate
    running = f"; running: {listing}" if others else "; no map is running in another shell"
    raise UsageError(f"no map {number} is running{running}")
