"""%parallel_map TARGET ITEMS: call TARGET on every item in parallel, with live
progress and status, and what the workers print under the item that printed
it."""

from __future__ import annotations

import argparse
import contextlib
import keyword
import re
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import no_var_expand
from IPython.core.magic_arguments import argument, kwds, magic_arguments

from interp_rpc._pool import targets as _targets
from interp_rpc._pool.map import MapRun
from interp_rpc._pool.pool import InterpreterPool
from interp_rpc.errors import MISSING, RemoteError
from interp_rpc.notebook import (
    live,
    options,
    polled_view,
    profile_view,
    running_maps,
    worker_output,
)

if TYPE_CHECKING:
    from interp_rpc._pool.contract import MapRunning, Pool
    from interp_rpc.notebook.magics import ParallelMagics

# A word that looks like an option, left after ITEMS: a hint when ITEMS fails.
_TRAILING_OPTION = re.compile(r"\s--?[A-Za-z]")


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
def parallel_map(self: ParallelMagics, line: str) -> list[Any] | None:
    """Call TARGET on every item of ITEMS in parallel, with live progress and
    status; what the workers print shows in the cell, under the worker
    and item that printed it."""
    args, rest = options.parse(parallel_map, line)
    if args is None:
        return None
    options.positive("--timeout", args.timeout)
    if args.chunksize is not None and args.chunksize < 1:
        raise UsageError(f"--chunksize must be at least 1, not {args.chunksize}")
    if args.out is not None and (not args.out.isidentifier() or keyword.iskeyword(args.out)):
        raise UsageError(f"-o NAME must be a Python identifier, not {args.out!r}")
    name, source = options.first_word(rest)
    if len(name) > 1 and name[0] == name[-1] and name[0] in "'\"":
        name = name[1:-1]  # 'mymodule.process', as the pool's own calls take it
    if not name:
        raise UsageError("TARGET and ITEMS are missing: %parallel_map TARGET ITEMS")
    if not all(part.isidentifier() for part in name.split(".")):
        raise UsageError(f"TARGET must be a name or dotted path, not {name!r}")
    if not source:
        raise UsageError(f"ITEMS is missing after TARGET {name!r}")
    shell = self.shell
    assert shell is not None
    target = _target(shell.user_ns, name)
    items = _items(shell.user_ns, source)
    notebook = self.notebook_pool
    pool = notebook.pool
    # Profiled inside the map's listing: the Workers panel's status that
    # says the map ended also says its profile is there to open.
    profiled = notebook.profiling(pool, functions=args.profile)
    try:
        if live.engine_in_this_process(pool):
            results = _map_locally(pool, target, items, args, notebook.stuck_after, profiled)
        else:
            results = _map_polled(pool, target, items, args, notebook.stuck_after, profiled)
    except RemoteError as failure:
        _keep_partial_results(shell.user_ns, failure, args.out)
        raise
    if args.errors == "collect":
        _report_collected(results)
    if args.profile:
        assert notebook.last_profile is not None  # both ways of mapping profiled it
        profile_view.show(notebook.last_profile, functions=True)
    if args.out:
        shell.user_ns[args.out] = results
        return None
    return results


def _map_locally(pool: InterpreterPool, target: Callable[..., Any] | str, items: list[Any],
                 args: argparse.Namespace, stuck_after: float,
                 profiled: contextlib.AbstractContextManager[object]) -> list[Any]:
    """%parallel_map on this process's pool, inside ``profiled``: a live view
    of its progress and status, and what the workers print, under the item
    that printed it."""
    first = pool.log_position()
    view = live.LiveView(pool, target=_targets.describe(target), total=len(items),
                         stuck_after=stuck_after, since=first)
    printed = worker_output.WorkerOutput(pool)
    printed.start()
    succeeded: int | None = None  # when the map did not finish
    started: running_maps.StopOnceStarted[MapRun] = running_maps.StopOnceStarted()
    try:
        with running_maps.running(_targets.describe(target), len(items),
                                  _item_count(pool, first, len(items)), started, since=first), \
                profiled:
            run = MapRun(pool, target, (items,), timeout=args.timeout,
                         chunksize=args.chunksize, buffersize=None,
                         on_dispatched=view.start, errors=args.errors,
                         output=printed.relay.destination, on_start=started.started)
            return run.collect()
    except RemoteError as failure:
        succeeded = sum(r is not MISSING for r in failure.partial_results or ())
        raise
    except KeyboardInterrupt:
        started.close_started()  # it may have come before collect() began
        _report_interrupted(pool, started.run, len(items))
        raise
    except Exception:  # a target that did not resolve, a timeout, a dead worker
        succeeded = 0 if started.run is None else started.run.delivered
        raise
    finally:
        printed.stop()
        view.stop(done=succeeded)


def _map_polled(pool: Pool, target: Callable[..., Any] | str, items: list[Any],
                args: argparse.Namespace, stuck_after: float,
                profiled: contextlib.AbstractContextManager[object]) -> list[Any]:
    """%parallel_map on a pool whose status is asked for (a ProcessPool, a
    dask cluster): results read as they arrive, in order, their count shown
    as progress over the pool's live status, and what the workers print,
    under the item that printed it."""
    progress = polled_view.MapView(pool, _targets.describe(target), len(items), stuck_after)
    printed = worker_output.WorkerOutput(pool)
    results: list[Any] = []
    started: running_maps.StopOnceStarted[MapRunning] = running_maps.StopOnceStarted()
    try:
        printed.start()
        with running_maps.running(_targets.describe(target), len(items), lambda: len(results),
                                  started), profiled:
            try:
                run = pool.map_run(target, (items,), timeout=args.timeout,
                                   chunksize=args.chunksize, buffersize=None, errors=args.errors,
                                   output=printed.relay.destination, on_start=started.started)
                received = run.results()
            except BaseException:  # Ctrl-C as it started, before this thread had its results
                started.close_started()
                raise
            # Closed at once on an error or Ctrl-C: chunks not started are cancelled.
            with contextlib.closing(received):
                progress.start()
                for value in received:
                    results.append(value)
                    progress.advance(len(results))
    except KeyboardInterrupt:
        begun = started.run
        running = ("stop before their next item"
                   if begun is not None and begun.stops_running_chunks else "finish on their own")
        print(f"Interrupted: {len(results)} of {len(items)} items had completed (in order); "
              f"chunks not started were cancelled, running ones {running}.", file=sys.stderr)
        raise
    except RemoteError as failure:
        failure.partial_results = [*results, *[MISSING] * (len(items) - len(results))]
        raise
    finally:
        printed.stop()
        progress.stop()
    return results


def _keep_partial_results(namespace: dict[str, Any], failure: RemoteError,
                          name: str | None) -> None:
    """-o NAME: a failed map still stores the results before the failed item."""
    if name and failure.partial_results is not None:
        namespace[name] = failure.partial_results
        done = sum(r is not MISSING for r in failure.partial_results)
        print(f"{name}: the {done} results before the failed item are stored; "
              "the other items hold interp_rpc.MISSING.", file=sys.stderr)


def _target(namespace: dict[str, Any], name: str) -> Callable[..., Any] | str:
    """A function of the notebook by that name, else the name itself for
    the workers to resolve (their __main__ first, then as an import)."""
    if "." in name or name not in namespace:
        return name
    value = namespace[name]
    if isinstance(value, type(sys)):
        return name  # a module imported here: the workers import it too
    if not callable(value):
        raise UsageError(f"TARGET {name!r} is a {type(value).__name__} in this notebook, "
                         "not a function")
    return value  # type: ignore[no-any-return]


def _items(namespace: dict[str, Any], source: str) -> list[Any]:
    """ITEMS evaluated in the notebook's namespace, as a list."""
    hint = " (options go before TARGET)" if _TRAILING_OPTION.search(source) else ""
    try:
        code = compile(source, "<ITEMS>", "eval")
    except SyntaxError as exc:
        raise UsageError(f"ITEMS {source!r} is not a Python expression: {exc.msg}{hint}") \
            from None
    try:
        value = eval(code, namespace)
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


def _item_count(pool: InterpreterPool, since: tuple[int, int], total: int) -> Callable[[], int]:
    """Items of the map begun at ``since`` done so far, for any thread (the
    live view counts with a counter of its own)."""
    counter = pool.map_item_counter(since)
    lock = threading.Lock()

    def done() -> int:
        with lock:
            return min(total, int(counter.update()))

    return done


def _report_interrupted(pool: InterpreterPool, run: MapRun | None, total: int) -> None:
    done = 0 if run is None else run.finished_items
    busy = [w for w in pool.status() if w.state == "busy"]
    print(f"Interrupted: {done} of {total} items had completed; queued items were "
          "cancelled.", file=sys.stderr)
    for w in busy:
        print(f"  worker {w.index} is still running {w.target} (its chunk from item "
              f"{w.item_index}, for {w.busy_seconds:.1f} s); it stops after its current "
              "item, which cannot be interrupted.", file=sys.stderr)


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
