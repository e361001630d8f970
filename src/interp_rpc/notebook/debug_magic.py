"""%parallel_debug, and %debug after a remote error: pdb inside the worker
that raised, on its own frames (see interp_rpc/_pool/post_mortem.py).

IPython's %debug opens its debugger on ``sys.last_traceback``, which for a
RemoteError holds only the notebook's frames (the magic's, the map's). The
extension registers its own line magic under the name ``debug``: when the
last error is a RemoteError, it opens the session in the worker that raised
it, or says why it cannot (IPython's debugger would only show the
notebook's frames); in every other case it hands the line to IPython's own
%debug, unchanged (and ``%%debug`` is IPython's alone).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from interp_rpc._pool import local_rerun, post_mortem
from interp_rpc._pool.pool import InterpreterPool
from interp_rpc.errors import DebugUnavailableError, RemoteError
from interp_rpc.notebook import options

if TYPE_CHECKING:
    from interp_rpc.notebook.magics import ParallelMagics


def last_error() -> BaseException | None:
    """The error the last cell raised, as IPython keeps it for %debug."""
    error = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return error if isinstance(error, BaseException) else None


@options.plain_help
@magic_arguments()
@kwds(usage="%(prog)s [--worker W] [--clear] [--local]")
@argument("--worker", type=int, metavar="W",
          help="debug worker W's last failure (default: the worker that raised the last "
               "error, or the one worker that keeps a failure)")
@argument("--clear", action="store_true",
          help="release the kept failures (worker W's, or every worker's) instead: each "
               "holds its failing call's local variables alive")
@argument("--local", action="store_true",
          help="re-run the last error's failing call here, in the notebook's interpreter, "
               "and open pdb where it raises (any pool: for a ProcessPool's or a dask "
               "worker's error, or when the worker's frames are gone)")
def parallel_debug(self: ParallelMagics, line: str) -> None:
    """pdb inside a worker, on the frames of its last failure: ``p name``
    shows the worker's value; up, down, list, where and q work; Ctrl-C ends
    the session. Each worker keeps only its last failure."""
    args, rest = options.parse(parallel_debug, line)
    if args is None:
        return
    if rest:
        raise UsageError(f"%parallel_debug takes only options, not {rest!r}")
    if args.local:
        if args.clear or args.worker is not None:
            raise UsageError("--local re-runs the last error's call: it takes no --worker "
                             "or --clear")
        _rerun_last_error()
        return
    notebook = self.notebook_pool
    if not notebook.started:
        print("No pool is open: nothing has failed in a worker yet.")
        return
    pool = notebook.pool
    if not isinstance(pool, InterpreterPool):
        _cannot(_unreachable(pool))
        return
    if args.worker is not None and args.worker not in pool.worker_indices():
        raise UsageError(f"--worker {args.worker}: the pool's workers are 0 to "
                         f"{pool.workers - 1}")
    if args.clear:
        workers = None if args.worker is None else [args.worker]
        cleared = post_mortem.clear_failures(pool, workers)
        print(f"Released the kept failure of worker(s) {', '.join(map(str, cleared))}."
              if cleared else "No worker kept a failure.")
        return
    _open_session(pool, args.worker)


def _open_session(pool: InterpreterPool, worker: int | None) -> None:
    """The session on ``worker``, or on the worker that raised the last
    error (then on that very failure), or on the one worker keeping one."""
    try:
        if worker is None:
            error = last_error()
            if isinstance(error, RemoteError):
                post_mortem.debug_error(error)
                return
            kept = post_mortem.kept_failures(pool)
            if not kept:
                print("No worker keeps a failure to debug.")
                return
            if len(kept) > 1:
                listed = "; ".join(f"worker {w}: {d['error']} in {d['target']}"
                                   for w, d in kept.items())
                raise UsageError(f"several workers keep a failure ({listed}); choose one with "
                                 "--worker W")
            worker = next(iter(kept))
        post_mortem.debug_worker(pool, worker)
    except DebugUnavailableError as exc:
        _cannot(str(exc))


def _cannot(why: str) -> None:
    """Say why no session opens, as a message: raised, it would become the
    last error, and the RemoteError that --local re-runs would be lost."""
    print(f"%parallel_debug: {why}", file=sys.stderr)


def _rerun_last_error() -> None:
    error = last_error()
    if not isinstance(error, RemoteError):
        raise UsageError("--local re-runs the call of the last error, which must be a "
                         "RemoteError; the last error is "
                         f"{'none' if error is None else type(error).__name__}")
    try:
        local_rerun.rerun_locally(error)
    except DebugUnavailableError as exc:
        _cannot(str(exc))


def _unreachable(pool: object) -> str:
    kind = type(pool).__name__
    where = ("processes of a dask cluster" if kind == "ClusterPool" else "processes of their own")
    return (f"%parallel_debug opens pdb inside a worker of a local InterpreterPool; this "
            f"notebook's pool is a {kind}, whose workers are {where}: their frames cannot "
            "be reached from this kernel. %parallel_debug --local re-runs the last error's "
            "failing call here, under pdb.")


class RemoteDebug:
    """The ``%debug`` line magic while the extension is loaded: a session in
    the worker when the last error is a RemoteError, else IPython's own
    ``ipython_debug``, given the line unchanged."""

    def __init__(self, ipython_debug: Callable[..., Any]) -> None:
        self.ipython_debug = ipython_debug
        self.__doc__ = (ipython_debug.__doc__ or "") + (
            "\n\nAfter a RemoteError, %debug opens pdb inside the worker that raised it, on "
            "its own frames (see %parallel_debug).")

    def __call__(self, line: str = "") -> Any:
        error = last_error()
        if line.strip() or not isinstance(error, RemoteError):
            return self.ipython_debug(line)
        try:
            post_mortem.debug_error(error)
        except DebugUnavailableError as exc:
            print(f"%debug cannot open pdb on the worker's frames: {exc}", file=sys.stderr)
        return None
