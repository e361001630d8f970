"""%parallel_pool: create or replace the notebook's pool, or show it."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from interp_rpc.notebook import options
from interp_rpc.notebook.notebook_pool import CONNECT_TIMEOUT, Pool, cluster_options

if TYPE_CHECKING:
    from interp_rpc.notebook.magics import ParallelMagics


@options.plain_help
@magic_arguments()
@kwds(usage="%(prog)s [-n N] [--init CODE] [--init-timeout S] [--stuck-after S]\n"
            "       [--local | --processes [--kill-on-timeout] | --dask ADDRESS | "
            "--dask local[:N]]\n"
            "       [--connect-timeout S]")
@argument("-n", "--workers", type=int,
          help="number of workers (default: one per CPU); with --dask, subinterpreters "
               "per dask worker process (default: its thread count)")
@argument("--init", help="source code every worker runs before serving calls; quote it: "
                         '--init "import mymodule; mymodule.setup()"')
@argument("--init-timeout", type=float, help="seconds to wait for init (default 30)")
@argument("--stuck-after", type=float,
          help="seconds after which a busy worker shows as stuck (default 10)")
@argument("--dask", metavar="CLUSTER",
          help="run on a dask.distributed cluster: a scheduler address such as "
               "tcp://host:8786, or local[:N] for a LocalCluster of N processes on this "
               "machine (default: one per CPU), closed with the pool; each dask worker "
               "process hosts one pool")
@argument("--local", action="store_true",
          help="subinterpreters in this process (the default), again after --processes "
               "or --dask")
@argument("--processes", action="store_true",
          help="workers that are processes (interp_rpc.ProcessPool), for modules that "
               "refuse subinterpreters, such as numpy: slower to start and to call, "
               "but a crash fails only its own call")
@argument("--kill-on-timeout", action=argparse.BooleanOptionalAction,
          help="with --processes: a call or map past its --timeout has its worker "
               "processes terminated and replaced (default: no, the call goes on)")
@argument("--connect-timeout", type=float,
          help=f"seconds to wait for the --dask scheduler (default {CONNECT_TIMEOUT:g})")
def parallel_pool(self: ParallelMagics, line: str) -> Pool | None:
    """Create or replace the notebook's pool; with no options, show it.

    A new pool replaces the current one only once it has started: if it
    fails (a bad --init, an unreachable --dask scheduler), the current
    pool and its options stay. A replaced pool is closed, and so is a
    LocalCluster it started.
    """
    args, rest = options.parse(parallel_pool, line)
    if args is None:
        return None
    if rest:
        raise UsageError(f"%parallel_pool takes only options, not {rest!r}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"-n/--workers must be at least 1, not {args.workers}")
    options.positive("--init-timeout", args.init_timeout)
    options.positive("--stuck-after", args.stuck_after)
    options.positive("--connect-timeout", args.connect_timeout)
    given = [name for name, on in (("--local", args.local), ("--processes", args.processes),
                                   ("--dask", args.dask is not None)) if on]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} name different pools: give one of them")
    if args.connect_timeout is not None and args.dask is None:
        raise UsageError("--connect-timeout is for --dask ADDRESS")
    if args.init is not None:
        try:
            compile(args.init, "<init>", "exec")
        except SyntaxError as exc:
            raise UsageError(f"--init is not valid Python: {exc.msg} in {args.init!r}") \
                from None
    notebook = self.notebook_pool
    cluster = notebook.cluster
    processes = _process_options(notebook.processes, args)
    if args.dask is not None:
        cluster = {**cluster_options(args.dask, args.connect_timeout),
                   "workers_per_process": args.workers}
    elif args.local or args.processes:
        cluster = None
    elif cluster is not None and args.workers is not None:
        cluster = {**cluster, "workers_per_process": args.workers}
    changes = {k: v for k, v in (("init", args.init), ("init_timeout", args.init_timeout))
               if v is not None}
    if args.workers is not None and cluster is None:
        changes["workers"] = args.workers
    if (changes or cluster != notebook.cluster or processes != notebook.processes
            or args.dask is not None or not notebook.started):
        notebook.replace({**notebook.options, **changes}, cluster, processes)
    if args.stuck_after is not None:
        notebook.stuck_after = args.stuck_after
    notebook.show_status()
    return notebook.pool


def _process_options(current: dict[str, Any] | None,
                     args: argparse.Namespace) -> dict[str, Any] | None:
    """ProcessPool's own options after this %parallel_pool, or None if the
    pool's workers are not to be processes. Switching to processes starts
    from the defaults; staying keeps what was given before."""
    processes = current
    if args.local or args.dask is not None:
        processes = None
    elif args.processes and processes is None:
        processes = {"kill_on_timeout": False}
    if args.kill_on_timeout is not None:
        if processes is None:
            raise UsageError("--kill-on-timeout is for workers that are processes: "
                             "add --processes")
        processes = {**processes, "kill_on_timeout": args.kill_on_timeout}
    return processes
