"""What the magics show for a pool on a dask cluster (``%parallel_pool --dask``).

The local pool's live view is rendered by its engine from a status board read
without any GIL; a cluster's status is an answer from every dask worker
process instead (``ClusterPool.status()``), so it is rendered here, grouped by
host and process, with the local table's columns, states and colours. A map's
progress counts the results received, in order, and is updated by the thread
that receives them.
"""

from __future__ import annotations

import html
import sys
from collections.abc import Iterable
from itertools import groupby
from time import monotonic
from typing import TYPE_CHECKING, Any

from interp_rpc._records import WorkerStatus
from interp_rpc.notebook import live

if TYPE_CHECKING:
    from interp_rpc.dask import ClusterPool

#: Colours of the states, as in the local pool's table: each passes WCAG AA as
#: text in JupyterLab's light and dark themes; a stuck worker is told apart
#: from a dead one by its word.
_STATE_COLOURS = {"busy": "var(--jp-success-color0, #1a7f37)",
                  "stuck": "var(--jp-error-color1, #b42318)",
                  "dead": "var(--jp-error-color1, #b42318)"}
_QUIET = "var(--jp-content-font-color2, #57606a)"

_COLUMNS = ("worker", "state", "target", "item", "running for", "calls done")


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _state(w: WorkerStatus, stuck_after: float) -> str:
    return "stuck" if w.state == "busy" and w.busy_seconds >= stuck_after else w.state


def _process_of(w: WorkerStatus) -> tuple[str, int, str]:
    """(host, pid, dask worker address) of a cluster worker's process."""
    index: Any = w.index
    return (str(getattr(index, "host", "?")), int(getattr(index, "pid", 0)),
            str(getattr(index, "address", "?")))


def _cells(w: WorkerStatus, stuck_after: float) -> tuple[str, ...]:
    busy = w.state == "busy"
    target = (w.target or "") if busy else (w.detail or "") if w.state == "dead" else ""
    item = str(w.item_index) if busy and w.item_index is not None else ""
    return (str(int(w.index)), _state(w, stuck_after), target, item,
            _seconds(w.busy_seconds) if busy else "", str(w.calls_done))


def status_bundle(statuses: Iterable[WorkerStatus], stuck_after: float) -> dict[str, str]:
    """The status table of a cluster's subinterpreters, one group per process."""
    rows = sorted(statuses, key=lambda w: (_process_of(w)[:2], int(w.index)))
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    parts = ['<div class="interp-rpc-live"><table class="interp-rpc-status">'
             f"<thead><tr>{head}</tr></thead><tbody>"]
    text = []
    for (host, pid, address), group in groupby(rows, key=_process_of):
        title = f"{host} · process {pid} · dask worker {address}"
        parts.append(f'<tr class="interp-rpc-process"><th colspan="{len(_COLUMNS)}" '
                     f'style="text-align:left">{html.escape(title)}</th></tr>')
        text.append(title)
        for w in group:
            worker, state, target, item, running, calls = _cells(w, stuck_after)
            colour = _STATE_COLOURS.get(state, _QUIET)
            shown_target = f"<code>{html.escape(target)}</code>" if target else ""
            parts.append(f'<tr class="interp-rpc-{state}"><td>{worker}</td>'
                         f'<td style="color:{colour};font-weight:bold">{state}</td>'
                         f"<td>{shown_target}</td><td>{item}</td><td>{running}</td>"
                         f"<td>{calls}</td></tr>")
            text.append(f"  {worker:<6}{state:<9}{target:<32}{item:<10}{running:<13}{calls}")
    if not rows:
        text.append("no dask worker process serves the pool")
        parts.append(f'<tr><td colspan="{len(_COLUMNS)}">no dask worker process serves '
                     "the pool</td></tr>")
    parts.append("</tbody></table></div>")
    return {"text/html": "".join(parts), "text/plain": "\n".join(text) + "\n"}


def show_status(pool: ClusterPool, stuck_after: float) -> None:
    from IPython.display import display

    display(status_bundle(pool.status(), stuck_after), raw=True)


class Progress:
    """A map's progress on a cluster: results received so far, in order,
    shown in place by the thread that receives them (at most every
    ``live.REFRESH_SECONDS``), then a one-line summary."""

    def __init__(self, target: str, total: int, workers: int) -> None:
        import uuid

        self._target = target
        self._total = total
        self._workers = workers
        self._display_id = f"interp-rpc-{uuid.uuid4().hex}"
        self._started_at = monotonic()
        self._shown_at = 0.0
        self._done = 0
        self._terminal = live.in_terminal()
        self._started = False
        self._shown = False

    def _frame(self) -> dict[str, str]:
        fraction = self._done / self._total if self._total else 1.0
        counts = (f"{self._done}/{self._total} items ({fraction:.0%}), "
                  f"{_seconds(monotonic() - self._started_at)}")
        bar = ('<div style="background:var(--jp-layout-color3, #d0d7de);height:8px;'
               'width:320px;border-radius:4px"><div style="background:'
               'var(--jp-success-color1, #1a7f37);height:8px;border-radius:4px;'
               f'width:{int(fraction * 320)}px"></div></div>')
        filled = int(fraction * 30)
        return {"text/html": f'<div class="interp-rpc-progress"><b>{html.escape(self._target)}'
                             f"</b> {counts}{bar}</div>",
                "text/plain": f"{self._target} [{'#' * filled}{'.' * (30 - filled)}] {counts}"}

    def start(self) -> None:
        from IPython.display import display

        self._started = True
        if self._terminal:
            return  # a terminal cannot update in place: the summary is printed once
        display(self._frame(), raw=True, display_id=self._display_id)
        self._shown = True
        self._shown_at = monotonic()

    def advance(self, done: int) -> None:
        from IPython.display import update_display

        self._done = done
        if not self._shown or monotonic() - self._shown_at < live.REFRESH_SECONDS:
            return
        update_display(self._frame(), raw=True, display_id=self._display_id)
        self._shown_at = monotonic()

    def stop(self) -> None:
        from IPython.display import display, update_display

        if not self._started:
            return
        final = live.summary(self._target, self._done, self._total,
                             monotonic() - self._started_at, self._workers)
        if self._shown:
            update_display(final, raw=True, display_id=self._display_id)
        else:
            display(final, raw=True)
        sys.stdout.flush()
