"""The %parallel magics.

    %parallel_pool [-n N] [--init CODE] [--init-timeout S] [--stuck-after S]
                   [--dask ADDRESS | --dask local[:N] | --local] [--connect-timeout S]
    %%parallel [--timeout S] [--targets I,J]        (or %parallel [...] STATEMENT)
    %parallel_map [--timeout S] [--chunksize K] [-o NAME] [--errors raise|collect]
                  [--profile] TARGET ITEMS
    %parallel_status [--watch S | --stop]
    %parallel_profile [--functions] [--export PATH] [-o NAME]

Options come first, as with %timeit; what follows them is Python, taken
verbatim (see options.py). Each magic answers --help (and ``%magic?``). The
notebook has one pool, created on first use with one worker per CPU this
process may use (or by %parallel_pool); ``current_pool()`` returns it.
With ``--dask`` that pool is a ClusterPool instead: one InterpreterPool in
each process of a dask.distributed cluster, and the same magics run there.
"""

from __future__ import annotations

import argparse
import contextlib
import keyword
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import (
    Magics,
    line_cell_magic,
    line_magic,
    magics_class,
    no_var_expand,
)
from IPython.core.magic_arguments import argument, kwds, magic_arguments
from IPython.display import display

from interp_rpc._pool import replies
from interp_rpc._pool import targets as _targets
from interp_rpc._pool.everywhere import Interrupted
from interp_rpc._pool.map import MapRun
from interp_rpc._pool.pool import InterpreterPool
from interp_rpc.display import errors as error_display
from interp_rpc.errors import (
    MISSING,
    PoolInitError,
    RemoteError,
)
from interp_rpc.notebook import cluster_view, live, options, profile_view, worker_output
from interp_rpc.notebook.errors import ParallelCellError
from interp_rpc.profiling.model import Profile

if TYPE_CHECKING:
    from interp_rpc.dask import ClusterPool

#: Either kind of pool the magics run on.
type Pool = InterpreterPool | ClusterPool

_RUN_CELL = "_interp_rpc_worker.run_cell"  # defined by _worker/main.py in every worker

# A word that looks like an option, left after ITEMS: a hint when ITEMS fails.
_TRAILING_OPTION = re.compile(r"\s--?[A-Za-z]")

# --dask local, --dask local:N
_LOCAL_CLUSTER = re.compile(r"local(?::(.*))?\Z", re.DOTALL)

#: Seconds %parallel_pool --dask ADDRESS waits for the scheduler by default.
CONNECT_TIMEOUT = 10.0

__all__ = ["ParallelMagics", "current_pool", "load_ipython_extension",
           "unload_ipython_extension"]


def default_workers() -> int:
    """One worker per CPU this process may run on (its affinity, not the machine's count)."""
    return os.process_cpu_count() or 2


def _cluster_options(spec: str, connect_timeout: float | None) -> dict[str, Any]:
    """ClusterPool's options for ``--dask SPEC``: a scheduler address, or
    ``local[:N]`` for a LocalCluster of N processes on this machine."""
    spec = spec.strip()
    if not spec:
        raise UsageError("--dask needs a scheduler address such as tcp://host:8786, "
                         "or local[:N] for N processes on this machine")
    match = _LOCAL_CLUSTER.match(spec)
    if match is None:
        return {"cluster": spec, "processes": None,
                "connect_timeout": connect_timeout or CONNECT_TIMEOUT}
    count = match.group(1)
    if count is None:
        return {"cluster": None, "processes": default_workers(), "connect_timeout": None}
    if not count.strip().isdigit():
        raise UsageError(f"--dask local:N needs a whole number of processes, not {count!r}")
    if int(count) < 1:
        raise UsageError(f"--dask local:N needs at least 1 process, not {int(count)}")
    return {"cluster": None, "processes": int(count), "connect_timeout": None}


def _worker_list(text: str) -> list[int]:
    """--targets "0,2": worker indices (validated against the pool later)."""
    try:
        indices = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--targets must be worker numbers such as 0,2, not {text!r}") from None
    if not indices:
        raise UsageError("--targets names no worker")
    return sorted(set(indices))


@magics_class
class ParallelMagics(Magics):
    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell)
        self._pool: Pool | None = None
        self._options: dict[str, Any] = {"workers": default_workers(), "init": None,
                                         "init_timeout": 30.0}
        # ClusterPool's own options while the pool is on a dask cluster:
        # cluster, processes, connect_timeout, workers_per_process.
        self._cluster: dict[str, Any] | None = None
        self.stuck_after = 10.0
        self.last_profile: Profile | None = None  # of the last %parallel_map or %%parallel

    # ------------------------------------------------------------------ pool

    @property
    def pool(self) -> Pool:
        """The notebook's pool, created on first use."""
        if self._pool is None or self._pool.closed:
            self._pool = self._new_pool(self._options, self._cluster)
            self.last_profile = None
        return self._pool

    @staticmethod
    def _new_pool(local: dict[str, Any], cluster: dict[str, Any] | None) -> Pool:
        if cluster is None:
            return InterpreterPool(**local)
        try:
            from interp_rpc.dask import ClusterPool
        except ImportError as exc:  # pragma: no cover - distributed is in the dev root
            raise UsageError(f"--dask needs dask.distributed ({exc}); install it with "
                             "pip install 'interp-rpc[dask]'") from None
        where = cluster["cluster"] or f"a LocalCluster of {cluster['processes']} processes"
        try:
            return ClusterPool(cluster["cluster"], processes=cluster["processes"],
                               connect_timeout=cluster["connect_timeout"],
                               workers_per_process=cluster["workers_per_process"],
                               init=local["init"], init_timeout=local["init_timeout"])
        except ValueError as exc:
            raise UsageError(f"--dask {where}: {exc}") from None
        except ConnectionError as exc:
            raise UsageError(f"{exc} (within {cluster['connect_timeout']:g} s; "
                             "--connect-timeout S waits longer)") from None

    def close(self) -> None:
        live.stop_watch()
        if self._pool is not None:
            self._pool.close(wait=False, timeout=1.0)
            self._pool = None

    @options.plain_help
    @magic_arguments()
    @kwds(usage="%(prog)s [-n N] [--init CODE] [--init-timeout S] [--stuck-after S]\n"
                "       [--dask ADDRESS | --dask local[:N] | --local] [--connect-timeout S]")
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
              help="run in this process again, after --dask (the default)")
    @argument("--connect-timeout", type=float,
              help=f"seconds to wait for the --dask scheduler (default {CONNECT_TIMEOUT:g})")
    @line_magic
    def parallel_pool(self, line: str) -> Pool | None:
        """Create or replace the notebook's pool; with no options, show it.

        A new pool replaces the current one only once it has started: if it
        fails (a bad --init, an unreachable --dask scheduler), the current
        pool and its options stay. A replaced pool is closed, and so is a
        LocalCluster it started.
        """
        args, rest = options.parse(self.parallel_pool, line)
        if args is None:
            return None
        if rest:
            raise UsageError(f"%parallel_pool takes only options, not {rest!r}")
        if args.workers is not None and args.workers < 1:
            raise UsageError(f"-n/--workers must be at least 1, not {args.workers}")
        options.positive("--init-timeout", args.init_timeout)
        options.positive("--stuck-after", args.stuck_after)
        options.positive("--connect-timeout", args.connect_timeout)
        if args.dask is not None and args.local:
            raise UsageError("--dask and --local name different pools: give one of them")
        if args.connect_timeout is not None and args.dask is None:
            raise UsageError("--connect-timeout is for --dask ADDRESS")
        if args.init is not None:
            try:
                compile(args.init, "<init>", "exec")
            except SyntaxError as exc:
                raise UsageError(f"--init is not valid Python: {exc.msg} in {args.init!r}") \
                    from None
        cluster = self._cluster
        if args.dask is not None:
            cluster = {**_cluster_options(args.dask, args.connect_timeout),
                       "workers_per_process": args.workers}
        elif args.local:
            cluster = None
        elif cluster is not None and args.workers is not None:
            cluster = {**cluster, "workers_per_process": args.workers}
        changes = {k: v for k, v in (("init", args.init), ("init_timeout", args.init_timeout))
                   if v is not None}
        if args.workers is not None and cluster is None:
            changes["workers"] = args.workers
        if (changes or cluster != self._cluster or args.dask is not None
                or self._pool is None or self._pool.closed):
            self._replace_pool({**self._options, **changes}, cluster)
        if args.stuck_after is not None:
            self.stuck_after = args.stuck_after
        pool = self.pool
        self._show_status(pool)
        return pool

    def _replace_pool(self, new_options: dict[str, Any], cluster: dict[str, Any] | None) -> None:
        current = self._pool if self._pool is not None and not self._pool.closed else None
        try:
            new = self._new_pool(new_options, cluster)
        except (PoolInitError, UsageError):
            if current is not None:
                print(f"The new pool did not start; the current one ({current.workers} "
                      "workers) is still in use.", file=sys.stderr)
            raise
        live.stop_watch()  # it shows the old pool, which is closed below
        old, self._pool = self._pool, new
        self._options = new_options
        self._cluster = cluster
        self.last_profile = None
        if old is not None:
            old.close(wait=False, timeout=1.0)

    def _show_status(self, pool: Pool) -> None:
        if isinstance(pool, InterpreterPool):
            display(live.LiveView(pool, stuck_after=self.stuck_after).render(), raw=True)
        else:
            cluster_view.show_status(pool, self.stuck_after)

    # ------------------------------------------------------------- %%parallel

    @no_var_expand
    @options.plain_help
    @magic_arguments()
    @kwds(usage="%%%(prog)s [--timeout S] [--targets I,J]\n       "
                "%%%(prog)s [--timeout S] [--targets I,J] STATEMENT")
    @argument("--timeout", type=float, help="seconds to wait for every worker")
    @argument("--targets", help="only these workers, e.g. 0,2 (default: all)")
    @line_cell_magic
    def parallel(self, line: str, cell: str | None = None) -> None:
        """Run this cell (or one statement) in every worker's __main__.

        Imports and definitions made there are every worker's: names it
        defines become targets of %parallel_map and pool.call("name", ...),
        and redefining one takes effect at once. Output and errors are shown
        once per distinct text, headed by the workers that produced it.

        On a dask cluster, a cell run without --targets that raised nowhere
        is also replayed, in order, in every process that joins later, before
        it takes a call; a cell run with --targets is not."""
        args, rest = options.parse(self.parallel, line)
        if args is None:
            return
        from_cell = cell is not None
        if cell is None:
            if not rest:
                raise UsageError("%parallel needs a statement (or use %%parallel for a cell)")
            cell = rest
        elif rest:
            raise UsageError(f"%%parallel takes only options on its first line, not {rest!r}")
        options.positive("--timeout", args.timeout)
        assert self.shell is not None
        pool = self.pool
        existing = _worker_indices(pool)
        targets = _worker_list(args.targets) if args.targets is not None else existing
        unknown = sorted(set(targets) - set(existing))
        if unknown:
            raise UsageError(f"--targets names worker {unknown[0]}, but the pool has "
                             f"{error_display.worker_ranges(existing)}")
        # IPython syntax becomes Python, and a syntax error shows once, here.
        # A cell's body starts on the cell's second line: its line numbers
        # are the cell's. IPython's compiler names it, so that tracebacks
        # show "Cell In[N]" for it as for the cell itself.
        source = ("\n" if from_cell else "") + self.shell.transform_cell(cell)
        # IPython counts a cell before running it: this one is In[count - 1].
        cell_number = self.shell.execution_count - 1
        filename = self.shell.compile.cache(source, cell_number, raw_code=source)
        compile(source, filename, "exec")
        # Streamed while it runs where a display can be updated in place (a
        # local pool's workers print into this process).
        streamed = (worker_output.CellOutput(pool)
                    if isinstance(pool, InterpreterPool) and not live.in_terminal() else None)
        run_args = (source, filename) if streamed is None else (source, filename,
                                                                 streamed.relay.id)
        everywhere = args.targets is None
        if streamed is not None:
            streamed.start()
        try:
            with pool.profile() as self.last_profile:
                run = pool.run_everywhere(_RUN_CELL, run_args, timeout=args.timeout,
                                          workers=None if everywhere else targets)
                try:
                    # run_cell's outcome is a dict; errors are InterpRpcErrors.
                    outcomes = cast(dict[int, dict[str, Any] | Exception], run.wait())
                except KeyboardInterrupt:
                    _report_interrupted_cell(run.interrupt())
                    raise
        finally:
            if streamed is not None:
                streamed.stop()
        if everywhere and outcomes and all(
                isinstance(o, dict) and o["error"] is None for o in outcomes.values()):
            # Replayed in workers that join the pool later (a dask cluster's).
            run.remember(f"the %%parallel {'cell' if from_cell else 'line'} In[{cell_number}]")
        _show_outputs({i: o["stdout"] for i, o in outcomes.items() if isinstance(o, dict)},
                      sys.stdout)
        _show_outputs({i: o["stderr"] for i, o in outcomes.items() if isinstance(o, dict)},
                      sys.stderr)
        errors: dict[int, Exception] = {}
        for index, outcome in outcomes.items():
            if isinstance(outcome, Exception):
                errors[index] = outcome
            elif outcome["error"] is not None:
                errors[index] = _cell_error(outcome["error"], index)
        if errors:
            raise ParallelCellError(errors, workers=len(targets))

    # --------------------------------------------------------- %parallel_map

    @no_var_expand
    @options.plain_help
    @magic_arguments()
    @kwds(usage="%(prog)s [--timeout S] [--chunksize K] [-o NAME] [--errors raise|collect] "
                "[--profile] TARGET ITEMS",
          epilog="TARGET: a function of the notebook, a name defined in the workers "
                 "(%%parallel), or a dotted path they can import. ITEMS: any Python "
                 "expression, taken verbatim, that gives the items.")
    @argument("--timeout", type=float, help="deadline in seconds for the whole map")
    @argument("--chunksize", type=int, help="items per request (default: adaptive)")
    @argument("-o", "--out", metavar="NAME",
              help="store the results in this variable instead of returning them")
    @argument("--errors", choices=("raise", "collect"), default="raise",
              help="raise (default): the first failing item raises, and the map stops; "
                   "collect: each failing item's RemoteError takes its place among the "
                   "results, and the map goes on")
    @argument("--profile", action="store_true",
              help="profile the functions the workers run (cProfile in each, merged), and "
                   "show the top functions; %%parallel_profile shows the run again")
    @line_magic
    def parallel_map(self, line: str) -> list[Any] | None:
        """Call TARGET on every item of ITEMS in parallel, with live progress and
        status; what the workers print shows in the cell, under the worker
        and item that printed it."""
        args, rest = options.parse(self.parallel_map, line)
        if args is None:
            return None
        options.positive("--timeout", args.timeout)
        if args.chunksize is not None and args.chunksize < 1:
            raise UsageError(f"--chunksize must be at least 1, not {args.chunksize}")
        if args.out is not None and (not args.out.isidentifier() or keyword.iskeyword(args.out)):
            raise UsageError(f"-o NAME must be a Python identifier, not {args.out!r}")
        name, source = options.first_word(rest)
        if not name:
            raise UsageError("TARGET and ITEMS are missing: %parallel_map TARGET ITEMS")
        if not all(part.isidentifier() for part in name.split(".")):
            raise UsageError(f"TARGET must be a name or dotted path, not {name!r}")
        if not source:
            raise UsageError(f"ITEMS is missing after TARGET {name!r}")
        assert self.shell is not None
        target = self._target(name)
        items = self._items(source)
        pool = self.pool
        if isinstance(pool, InterpreterPool):
            results = self._map_locally(pool, target, items, args)
        else:
            with pool.profile(functions=args.profile) as self.last_profile:
                results = self._map_on_cluster(pool, target, items, args.timeout,
                                               args.chunksize, args.errors, args.out)
        if args.errors == "collect":
            _report_collected(results)
        if args.profile:
            assert self.last_profile is not None  # both ways of mapping profiled it
            profile_view.show(self.last_profile, functions=True)
        if args.out:
            self.shell.user_ns[args.out] = results
            return None
        return results

    def _map_locally(self, pool: InterpreterPool, target: Callable[..., Any] | str,
                     items: list[Any], args: argparse.Namespace) -> list[Any]:
        """%parallel_map on this process's pool: a live view of its progress
        and status, and what the workers print, under the item that printed it."""
        first = pool.log_position()
        view = live.LiveView(pool, target=_targets.describe(target), total=len(items),
                             stuck_after=self.stuck_after, since=first)
        printed = worker_output.WorkerOutput(pool)
        printed.start()
        run: MapRun | None = None
        try:
            with pool.profile(functions=args.profile) as self.last_profile:
                run = MapRun(pool, target, (items,), timeout=args.timeout,
                             chunksize=args.chunksize, buffersize=None,
                             on_dispatched=view.start, errors=args.errors,
                             output=printed.relay.id)
                results = run.collect()
        except KeyboardInterrupt:
            self._report_interrupted(pool, run, len(items))
            raise
        except RemoteError as failure:
            self._keep_partial_results(failure, args.out)
            raise
        finally:
            printed.stop()
            view.stop()
        return results

    def _keep_partial_results(self, failure: RemoteError, name: str | None) -> None:
        """-o NAME: a failed map still stores the results before the failed item."""
        assert self.shell is not None
        if name and failure.partial_results is not None:
            self.shell.user_ns[name] = failure.partial_results
            done = sum(r is not MISSING for r in failure.partial_results)
            print(f"{name}: the {done} results before the failed item are stored; "
                  "the other items hold interp_rpc.MISSING.", file=sys.stderr)

    def _map_on_cluster(self, pool: ClusterPool, target: Callable[..., Any] | str,
                        items: list[Any], timeout: float | None, chunksize: int | None,
                        errors: str, out: str | None) -> list[Any]:
        """%parallel_map on a dask cluster: results read as they arrive, in
        order, with their count shown as progress."""
        progress = cluster_view.Progress(_targets.describe(target), len(items), pool.workers)
        results: list[Any] = []
        try:
            # Closed at once on an error or Ctrl-C: chunks not started are cancelled.
            with contextlib.closing(pool.map(target, items, timeout=timeout,
                                             chunksize=chunksize, errors=errors)) as received:
                progress.start()
                for value in received:
                    results.append(value)
                    progress.advance(len(results))
        except KeyboardInterrupt:
            print(f"Interrupted: {len(results)} of {len(items)} items had completed (in order); "
                  "chunks not started were cancelled, running ones finish on their own.",
                  file=sys.stderr)
            raise
        except RemoteError as failure:
            failure.partial_results = [*results, *[MISSING] * (len(items) - len(results))]
            self._keep_partial_results(failure, out)
            raise
        finally:
            progress.stop()
        return results

    def _target(self, name: str) -> Callable[..., Any] | str:
        """A function of the notebook by that name, else the name itself for
        the workers to resolve (their __main__ first, then as an import)."""
        assert self.shell is not None
        if "." in name or name not in self.shell.user_ns:
            return name
        value = self.shell.user_ns[name]
        if isinstance(value, type(sys)):
            return name  # a module imported here: the workers import it too
        if not callable(value):
            raise UsageError(f"TARGET {name!r} is a {type(value).__name__} in this notebook, "
                             "not a function")
        return value  # type: ignore[no-any-return]

    def _items(self, source: str) -> list[Any]:
        """ITEMS evaluated in the notebook's namespace, as a list."""
        assert self.shell is not None
        hint = " (options go before TARGET)" if _TRAILING_OPTION.search(source) else ""
        try:
            code = compile(source, "<ITEMS>", "eval")
        except SyntaxError as exc:
            raise UsageError(f"ITEMS {source!r} is not a Python expression: {exc.msg}{hint}") \
                from None
        try:
            value = eval(code, self.shell.user_ns)
        except Exception as exc:
            raise UsageError(f"ITEMS {source!r} raised {type(exc).__name__}: {exc}{hint}") \
                from None
        try:
            return list(value)
        except TypeError as exc:
            if not hasattr(value, "__iter__"):
                raise UsageError(f"ITEMS {source!r} is a {type(value).__name__}, which is not "
                                 "iterable") from None
            raise UsageError(f"iterating ITEMS {source!r} raised TypeError: {exc}") from None
        except Exception as exc:
            raise UsageError(f"iterating ITEMS {source!r} raised {type(exc).__name__}: "
                             f"{exc}") from None

    @staticmethod
    def _report_interrupted(pool: InterpreterPool, run: MapRun | None, total: int) -> None:
        done = 0 if run is None else run.finished_items
        busy = [w for w in pool.status() if w.state == "busy"]
        print(f"Interrupted: {done} of {total} items had completed; queued items were "
              "cancelled.", file=sys.stderr)
        for w in busy:
            print(f"  worker {w.index} is still running {w.target} (its chunk from item "
                  f"{w.item_index}, for {w.busy_seconds:.1f} s); it stops after its current "
                  "item, which cannot be interrupted.", file=sys.stderr)

    # ------------------------------------------------------- status, profile

    @options.plain_help
    @magic_arguments()
    @kwds(usage="%(prog)s [--watch S | --stop]")
    @argument("--watch", type=float, default=60.0,
              help="keep the table updated for this many seconds (default 60; 0: once), "
                   f"in the background; on a dask cluster it asks every process every "
                   f"{cluster_view.WATCH_REFRESH_SECONDS:g} s; replaces an earlier watch")
    @argument("--stop", action="store_true", help="stop updating the table of an earlier watch")
    @line_magic
    def parallel_status(self, line: str) -> None:
        """A table of workers (idle, busy, stuck, dead) that updates in place."""
        args, rest = options.parse(self.parallel_status, line)
        if args is None:
            return
        if rest:
            raise UsageError(f"%parallel_status takes only options, not {rest!r}")
        if args.stop:
            live.stop_watch()
            return
        if args.watch < 0:
            raise UsageError(f"--watch must be 0 or more seconds, not {args.watch:g}")
        pool = self.pool
        if args.watch == 0:
            self._show_status(pool)
            return
        live.watch(live.LiveView(pool, stuck_after=self.stuck_after, duration=args.watch)
                   if isinstance(pool, InterpreterPool) else
                   cluster_view.StatusWatch(pool, stuck_after=self.stuck_after,
                                            duration=args.watch))

    @options.plain_help
    @magic_arguments()
    @kwds(usage="%(prog)s [--functions] [--export PATH] [-o NAME]")
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
        args, rest = options.parse(self.parallel_profile, line)
        if args is None:
            return
        if rest:
            raise UsageError(f"%parallel_profile takes only options, not {rest!r}")
        if args.out is not None and (not args.out.isidentifier() or keyword.iskeyword(args.out)):
            raise UsageError(f"-o NAME must be a Python identifier, not {args.out!r}")
        last = self.last_profile
        if last is None:
            print("No parallel run to profile yet: run %parallel_map or %%parallel first.")
            return
        if args.out:
            assert self.shell is not None
            self.shell.user_ns[args.out] = last
        if args.export:
            print(profile_view.export(last, args.export))
        if args.export or args.out:
            return
        profile_view.show(last, functions=args.functions)


def _show_outputs(texts: dict[int, str], stream: Any) -> None:
    """Each distinct non-empty text once, headed by the workers that printed it."""
    stream.write(worker_output.grouped(texts))
    stream.flush()


def _report_collected(results: list[Any]) -> None:
    """--errors=collect: which items failed (their errors are among the results)."""
    failed = [i for i, r in enumerate(results) if isinstance(r, RemoteError)]
    if not failed:
        return
    shown = ", ".join(map(str, failed[:10])) + (", ..." if len(failed) > 10 else "")
    kinds = sorted({type(results[i]).__name__ for i in failed})
    print(f"{len(failed)} of {len(results)} items failed (item{'s' if len(failed) > 1 else ''} "
          f"{shown}: {', '.join(kinds)}); their errors are in the results, in their place.",
          file=sys.stderr)


def _worker_indices(pool: Pool) -> list[int]:
    """The indices --targets may name: 0..N-1 locally, each live
    subinterpreter's cluster index on a dask cluster."""
    if isinstance(pool, InterpreterPool):
        return list(range(pool.workers))
    return [int(w) for w in pool.subinterpreters()]


def _report_interrupted_cell(state: Interrupted) -> None:
    """After Ctrl-C in %%parallel: what the finished workers printed, and
    which workers still run the cell or never will."""
    finished = {i: o for i, o in state.finished.items() if isinstance(o, dict)}
    _show_outputs({i: o["stdout"] for i, o in finished.items()}, sys.stdout)
    _show_outputs({i: o["stderr"] for i, o in finished.items()}, sys.stderr)
    if state.running:
        shown = (f"; what {error_display.worker_ranges(finished)}, which finished, "
                 "printed is above" if finished else "")
        print(f"Interrupted: {error_display.worker_ranges(state.running)} still running the "
              f"cell (it cannot be stopped there and will finish on its own){shown}.",
              file=sys.stderr)
    if state.withdrawn:
        print(f"{error_display.worker_ranges(state.withdrawn).capitalize()} had not started "
              "the cell; it will not run there.", file=sys.stderr)


def _cell_error(info: dict[str, str], worker: int) -> Exception:
    return replies.remote_error(info, target="%%parallel", worker=worker)


def current_pool() -> Pool:
    """The notebook's pool (what the %parallel magics use)."""
    shell = InteractiveShell.instance()
    magics = shell.magics_manager.registry.get("ParallelMagics")
    if not isinstance(magics, ParallelMagics):
        raise RuntimeError("the interp_rpc extension is not loaded: run %load_ext interp_rpc")
    return magics.pool


def load_ipython_extension(shell: InteractiveShell) -> None:
    # Errors render themselves (their _render_traceback_), so no exception
    # handler of the shell is replaced.
    shell.register_magics(ParallelMagics(shell))


def unload_ipython_extension(shell: InteractiveShell) -> None:
    magics = shell.magics_manager.registry.get("ParallelMagics")
    if isinstance(magics, ParallelMagics):
        magics.close()
