"""%%parallel (and %parallel STATEMENT): run a cell in every worker's __main__,
and show each distinct output and error once, headed by its workers."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

from IPython.core.error import UsageError
from IPython.core.magic import no_var_expand
from IPython.core.magic_arguments import argument, kwds, magic_arguments
from IPython.display import display

from interp_rpc._pool import replies
from interp_rpc._pool.everywhere import Interrupted
from interp_rpc.display import errors as error_display
from interp_rpc.notebook import live, options, worker_output
from interp_rpc.notebook.errors import ParallelCellError

if TYPE_CHECKING:
    from interp_rpc.notebook.magics import ParallelMagics

_RUN_CELL = "_interp_rpc_worker.run_cell"  # defined by _worker/main.py in every worker


@no_var_expand
@options.plain_help
@magic_arguments()
@kwds(usage="%%%(prog)s [--timeout S] [--targets I,J-K]\n       "
            "%%%(prog)s [--timeout S] [--targets I,J-K] STATEMENT")
@argument("--timeout", type=float, help="seconds to wait for every worker")
@argument("--targets", help="only these workers, e.g. 0,2 or 0-3 (default: all)")
def parallel(self: ParallelMagics, line: str, cell: str | None = None) -> None:
    """Run this cell (or one statement) in every worker's __main__.

    Imports and definitions made there are every worker's: names it
    defines become targets of %parallel_map and pool.call("name", ...),
    and redefining one takes effect at once. Output, errors and the
    cell's result (its last expression, as in IPython) are shown once per
    distinct text, headed by the workers that produced it.

    On a dask cluster, a cell run without --targets that raised nowhere
    is also replayed, in order, in every process that joins later, before
    it takes a call; a cell run with --targets is not."""
    args, rest = options.parse(parallel, line)
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
    notebook = self.notebook_pool
    pool = notebook.pool
    existing = pool.worker_indices()
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
    # Streamed while it runs where a display can be updated in place.
    streamed = worker_output.CellOutput(pool) if not live.in_terminal() else None
    run_args = (source, filename) if streamed is None else (source, filename,
                                                             streamed.relay.destination)
    everywhere = args.targets is None
    if streamed is not None:
        streamed.start()
    try:
        with notebook.profiling(pool):
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
    _show_results({i: o["result"] for i, o in outcomes.items()
                   if isinstance(o, dict) and o["result"] is not None})
    errors: dict[int, Exception] = {}
    for index, outcome in outcomes.items():
        if isinstance(outcome, Exception):
            errors[index] = outcome
        elif outcome["error"] is not None:
            errors[index] = _cell_error(outcome["error"], index)
    if errors:
        raise ParallelCellError(errors, workers=len(targets))


def _worker_list(text: str) -> list[int]:
    """--targets "0,2" or "0-3,5", as errors name workers: worker indices
    (validated against the pool later)."""
    indices: list[int] = []
    try:
        for part in filter(None, (part.strip() for part in text.split(","))):
            first, dash, last = part.partition("-")
            if not dash:
                indices.append(int(part))
            elif int(first) <= int(last):
                indices += range(int(first), int(last) + 1)
            else:
                raise UsageError(f"--targets range {part!r} runs backwards: write "
                                 f"{last}-{first}")
    except ValueError:
        raise UsageError(f"--targets must be worker numbers such as 0,2 or 0-3, "
                         f"not {text!r}") from None
    if not indices:
        raise UsageError("--targets names no worker")
    return sorted(set(indices))


def _show_outputs(texts: dict[int, str], stream: Any) -> None:
    """Each distinct non-empty text once, headed by the workers that printed it."""
    stream.write(worker_output.grouped(texts))
    stream.flush()


def _show_results(reprs: dict[int, str]) -> None:
    """The cell's result in each worker, as IPython shows a cell's result:
    each distinct one once, headed by its workers (a result several lines
    long starts on the line after its heading)."""
    for workers, text in error_display.group_by_worker(reprs):
        separator = "\n" if "\n" in text else " "
        display({"text/plain": f"Out[{error_display.worker_ranges(workers)}]:{separator}{text}"},
                raw=True)


def _report_interrupted_cell(state: Interrupted) -> None:
    """After Ctrl-C in %%parallel: what the finished workers printed, and
    which workers still run the cell or never will."""
    finished = {i: o for i, o in state.finished.items() if isinstance(o, dict)}
    _show_outputs({i: o["stdout"] for i, o in finished.items()}, sys.stdout)
    _show_outputs({i: o["stderr"] for i, o in finished.items()}, sys.stderr)
    _show_results({i: o["result"] for i, o in finished.items() if o["result"] is not None})
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
