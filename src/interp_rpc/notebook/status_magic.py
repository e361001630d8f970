"""%parallel_status: the table of workers (idle, busy, stuck, dead), kept
updated in place by a background watch, and a line for each %parallel_map
going on in any shell of the kernel, with how far it has got (what a
subshell console wants to know while a map blocks the notebook)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from interp_rpc.notebook import live, options, polled_view, running_maps

if TYPE_CHECKING:
    from interp_rpc.notebook.magics import ParallelMagics


@options.plain_help
@magic_arguments()
@kwds(usage="%(prog)s [--watch S | --stop]")
@argument("--watch", type=float, default=60.0,
          help="keep the table updated for this many seconds (default 60; 0: once), "
               f"in the background; on a dask cluster it asks every process every "
               f"{polled_view.WATCH_REFRESH_SECONDS:g} s; replaces an earlier watch")
@argument("--stop", action="store_true", help="stop updating the table of an earlier watch")
def parallel_status(self: ParallelMagics, line: str) -> None:
    """A table of workers (idle, busy, stuck, dead) that updates in place,
    after a line for each %parallel_map going on (how many items are done)."""
    args, rest = options.parse(parallel_status, line)
    if args is None:
        return
    if rest:
        raise UsageError(f"%parallel_status takes only options, not {rest!r}")
    if args.stop:
        live.stop_watch()
        return
    if args.watch < 0:
        raise UsageError(f"--watch must be 0 or more seconds, not {args.watch:g}")
    notebook = self.notebook_pool
    for running in running_maps.all_running():
        print(running.describe())
    if args.watch == 0:
        notebook.show_status()
        return
    pool = notebook.pool
    live.watch(live.LiveView(pool, stuck_after=notebook.stuck_after, duration=args.watch)
               if live.engine_in_this_process(pool) else
               polled_view.StatusWatch(pool, stuck_after=notebook.stuck_after,
                                        duration=args.watch))
