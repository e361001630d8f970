"""The %parallel magics.

    %parallel_pool [-n N] [--init CODE] [--init-timeout S] [--stuck-after S]
    %%parallel [--timeout S]
    %parallel_map TARGET ITEMS [--timeout S] [--chunksize K] [-o NAME] [--profile]
    %parallel_status [--watch S]
    %parallel_profile [--functions] [--export PATH] [-o NAME]

Each takes --help. The notebook has one pool, created on first use with one
worker per CPU (or by %parallel_pool); ``current_pool()`` returns it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from interp_rpc import _targets
from interp_rpc._errors import (
    CallTimeoutError,
    InterpRpcError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
)
from interp_rpc._pool import InterpreterPool
from interp_rpc._profile import Profile
from interp_rpc.notebook import live, profile, render

_RUN_CELL = "_interp_rpc_worker.run_cell"  # defined by _worker.py in every worker
_ERRORS_WITH_DISPLAYS = (RemoteError, ShareabilityError, CallTimeoutError)


class ParallelCellError(InterpRpcError):
    """%%parallel failed in one or more workers (each one's error is shown above)."""


@magics_class
class ParallelMagics(Magics):
    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell)
        self._pool: InterpreterPool | None = None
        self._options: dict[str, Any] = {"workers": os.cpu_count() or 2, "init": None,
                                         "init_timeout": 30.0}
        self.stuck_after = 10.0
        # The last run: log position before it, and its first and last call ids.
        self._last_run: tuple[int, int, int] | None = None
        self.last_profile: Profile | None = None  # of the last %parallel_map or %%parallel

    # ------------------------------------------------------------------ pool

    @property
    def pool(self) -> InterpreterPool:
        """The notebook's pool, created on first use."""
        if self._pool is None or self._pool.closed:
            self._pool = InterpreterPool(**self._options)
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close(wait=False, timeout=1.0)
            self._pool = None

    @magic_arguments()
    @argument("-n", "--workers", type=int, help="number of workers (default: one per CPU)")
    @argument("--init", help="source code every worker runs before serving calls")
    @argument("--init-timeout", type=float, help="seconds to wait for init (default 30)")
    @argument("--stuck-after", type=float,
              help="seconds after which a busy worker shows as stuck (default 10)")
    @line_magic
    def parallel_pool(self, line: str) -> InterpreterPool:
        """Create or replace the notebook's pool; with no arguments, show it."""
        args = parse_argstring(self.parallel_pool, line)
        if args.stuck_after is not None:
            if args.stuck_after <= 0:
                raise ValueError("--stuck-after must be a positive number of seconds")
            self.stuck_after = args.stuck_after
        changes = {k: v for k, v in (("workers", args.workers), ("init", args.init),
                                     ("init_timeout", args.init_timeout)) if v is not None}
        if changes:
            self.close()
            self._options.update(changes)
        pool = self.pool
        view = live.LiveView(pool, stuck_after=self.stuck_after)
        display(view.render(), raw=True)
        return pool

    # ------------------------------------------------------------- %%parallel

    @magic_arguments()
    @argument("--timeout", type=float, help="seconds to wait for every worker")
    @cell_magic
    def parallel(self, line: str, cell: str) -> None:
        """Run this cell in every worker's __main__ (imports, definitions).

        Names it defines become targets: %parallel_map f items, pool.call("f", x).
        Output is shown per worker."""
        args = parse_argstring(self.parallel, line)
        pool = self.pool
        first = self._run_starts()
        with pool.profile() as self.last_profile:
            outcomes = pool._on_every_worker(_RUN_CELL, (cell,), timeout=args.timeout)
        self._remember_run(first)
        failed = []
        for index, outcome in enumerate(outcomes):
            if isinstance(outcome, BaseException):
                failed.append(index)
                print(f"[worker {index}] {type(outcome).__name__}: {outcome}", file=sys.stderr)
                continue
            if outcome["stdout"]:
                print(f"[worker {index}]\n{outcome['stdout']}", end="")
            if outcome["stderr"]:
                print(f"[worker {index}]\n{outcome['stderr']}", end="", file=sys.stderr)
            if outcome["error"] is not None:
                failed.append(index)
                error = RemoteError(
                    remote_type_name=outcome["error"]["type_name"],
                    remote_module=outcome["error"]["module"],
                    remote_message=outcome["error"]["message"],
                    remote_traceback=outcome["error"]["traceback"],
                    remote_qualname=outcome["error"]["qualname"], target="%%parallel",
                    worker=index)
                print("\n".join(render.remote_error_lines(error)), file=sys.stderr)
        if failed:
            raise ParallelCellError(
                f"the cell failed in worker(s) {', '.join(map(str, failed))} of {len(outcomes)}; "
                "see each worker's error above")

    # --------------------------------------------------------- %parallel_map

    @magic_arguments()
    @argument("target", help="a function in the notebook, or a dotted path / name the workers "
                             "can resolve")
    @argument("items", nargs="+", help="an expression giving the items")
    @argument("--timeout", type=float, help="deadline in seconds for the whole map")
    @argument("--chunksize", type=int, help="items per request (default: adaptive)")
    @argument("-o", "--out", help="store the results in this variable instead of returning them")
    @argument("--profile", action="store_true",
              help="profile the functions the workers run (cProfile in each, merged), and "
                   "show the top functions; %%parallel_profile shows the run again")
    @line_magic
    def parallel_map(self, line: str) -> list[Any] | None:
        """Call TARGET on every item in parallel, with live progress and status."""
        args = parse_argstring(self.parallel_map, line)
        assert self.shell is not None
        user_ns = self.shell.user_ns
        target: object = user_ns.get(args.target, args.target)
        if not callable(target) and not isinstance(target, str):
            raise TargetResolutionError(f"{args.target!r} is a {type(target).__name__}, not a "
                                        "function", target=args.target)
        items = list(eval(" ".join(args.items), user_ns))
        name = _targets.describe(target)
        pool = self.pool
        first = self._run_starts()
        view = live.LiveView(pool, target=name, total=len(items), stuck_after=self.stuck_after)
        try:
            with pool.profile(functions=args.profile) as self.last_profile:
                results = pool._map(target, (items,), timeout=args.timeout,
                                    chunksize=args.chunksize, on_dispatched=view.start)
        except KeyboardInterrupt:
            self._remember_run(first)
            self._report_interrupted(pool, first, len(items))
            raise
        finally:
            view.stop()
            self._remember_run(first)
        if args.profile:
            profile.show(self.last_profile, functions=True)
        if args.out:
            user_ns[args.out] = results
            return None
        return results

    def _report_interrupted(self, pool: InterpreterPool, first: tuple[int, int],
                            total: int) -> None:
        after, first_id = first
        done = sum(r.item_count for r in pool.call_records(after)
                   if r.id >= first_id and r.outcome == "replied" and r.item_index is not None)
        busy = [w for w in pool.status() if w.state == "busy"]
        print(f"Interrupted: {done} of {total} items had completed; queued items were "
              "cancelled.", file=sys.stderr)
        for w in busy:
            print(f"  worker {w.index} is still running {w.target} (item {w.item_index}) for "
                  f"{w.busy_seconds:.1f} s; it cannot be stopped and will finish on its own.",
                  file=sys.stderr)

    # ------------------------------------------------------- status, profile

    @magic_arguments()
    @argument("--watch", type=float, default=60.0,
              help="keep the table updated for this many seconds (default 60; 0: once)")
    @line_magic
    def parallel_status(self, line: str) -> None:
        """A table of workers (idle, busy, stuck, dead) that updates in place."""
        args = parse_argstring(self.parallel_status, line)
        if args.watch <= 0:
            display(live.LiveView(self.pool, stuck_after=self.stuck_after).render(), raw=True)
            return
        live.watch(self.pool, seconds=args.watch, stuck_after=self.stuck_after)

    @magic_arguments()
    @argument("--functions", action="store_true",
              help="show the function profile (of a %%parallel_map --profile run)")
    @argument("--export", metavar="PATH",
              help="write the profile: .json as a Chrome trace (Perfetto, chrome://tracing), "
                   ".pstats as the merged function stats")
    @argument("-o", "--out", metavar="NAME", help="store the Profile in this variable")
    @line_magic
    def parallel_profile(self, line: str) -> None:
        """Timeline (one lane per worker, one bar per item), utilization, queue
        wait, serialization cost and slowest items of the last %parallel_map
        or %%parallel run; its function profile with --functions."""
        args = parse_argstring(self.parallel_profile, line)
        last = self.last_profile
        if last is None:
            print("No parallel run to profile yet: run %parallel_map or %%parallel first.")
            return
        if args.out:
            assert self.shell is not None
            self.shell.user_ns[args.out] = last
        if args.export:
            print(profile.export(last, args.export))
        if args.export or args.out:
            return
        profile.show(last, functions=args.functions)

    def _run_starts(self) -> tuple[int, int]:
        """(log position, first call id) of a run about to start."""
        records = self.pool.call_records()
        return (records[-1].seq if records else 0), int(self.pool._engine.last_call_id) + 1

    def _remember_run(self, start: tuple[int, int]) -> None:
        after, first = start
        self._last_run = (after, first, int(self.pool._engine.last_call_id))


def current_pool() -> InterpreterPool:
    """The notebook's pool (what the %parallel magics use)."""
    shell = InteractiveShell.instance()
    magics = shell.magics_manager.registry.get("ParallelMagics")
    if not isinstance(magics, ParallelMagics):
        raise RuntimeError("the interp_rpc extension is not loaded: run %load_ext interp_rpc")
    return magics.pool


def _show_error(shell: InteractiveShell, etype: type[BaseException], value: BaseException,
                tb: Any, tb_offset: int | None = None) -> list[str]:
    """IPython custom exception handler for the pool's errors.

    IPython ignores what a handler returns (run_code only calls it), so it
    shows the traceback itself, through _showtraceback: the method kernels
    override to publish the error message."""
    bundle = render.bundle_for(value)
    if bundle is not None:
        display(bundle, raw=True)
    lines = render.traceback_lines(value)
    if lines is None:  # pragma: no cover - only registered for our errors
        lines = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset)
    shell._showtraceback(etype, value, lines)
    return lines


def load_ipython_extension(shell: InteractiveShell) -> None:
    shell.register_magics(ParallelMagics(shell))
    shell.set_custom_exc(_ERRORS_WITH_DISPLAYS, _show_error)


def unload_ipython_extension(shell: InteractiveShell) -> None:
    magics = shell.magics_manager.registry.get("ParallelMagics")
    if isinstance(magics, ParallelMagics):
        magics.close()
    shell.set_custom_exc((), None)
