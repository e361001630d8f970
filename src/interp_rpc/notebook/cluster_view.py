"""What the magics show for a pool on a dask cluster (``%parallel_pool --dask``).

The local pool's live view is rendered by its engine from a status board read
without any GIL; a cluster's status is an answer from every dask worker
process instead (``ClusterPool.status()``), so it is rendered here, grouped by
host and process, with the local table's columns, states and colours.
``%parallel_status --watch`` asks for it again every ``WATCH_REFRESH_SECONDS``
from a background thread (StatusWatch). A map's progress counts the results
received, in order, and is updated by the thread that receives them.
"""

from __future__ import annotations

import html
import sys
import threading
import uuid
from collections.abc import Iterable
from itertools import groupby
from time import monotonic
from typing import TYPE_CHECKING, Any

from interp_rpc._pool.engine import _core
from interp_rpc.notebook import live
from interp_rpc.records import WorkerStatus

if TYPE_CHECKING:
    from interp_rpc.dask import ClusterPool

_COLUMNS = ("worker", "state", "target", "item", "running for", "calls done")

#: How often a watch asks the cluster for its status. Each ask is a round trip
#: to every dask worker process (a few ms on one machine, more across a
#: network or under load), so it is slower than the local pool's view.
WATCH_REFRESH_SECONDS = 0.5

#: An unanswered status request older than this is shown as late; start()
#: waits this long for the first answer, at most, before showing the table.
LATE_ANSWER_SECONDS = 2.0


def _process_of(w: WorkerStatus) -> tuple[str, int, str]:
    """(host, pid, dask worker address) of a cluster worker's process."""
    index: Any = w.index
    return (str(getattr(index, "host", "?")), int(getattr(index, "pid", 0)),
            str(getattr(index, "address", "?")))


def _cells(w: WorkerStatus, stuck_after: float) -> tuple[str, ...]:
    busy = w.state == "busy"
    target = (w.target or "") if busy else (w.detail or "") if w.state == "dead" else ""
    item = str(w.item_index) if busy and w.item_index is not None else ""
    return (str(int(w.index)), w.displayed_state(stuck_after), target, item,
            _core.seconds_text(w.busy_seconds) if busy else "", str(w.calls_done))


def status_bundle(statuses: Iterable[WorkerStatus], stuck_after: float,
                  note: str = "") -> dict[str, str]:
    """The status table of a cluster's subinterpreters, one group per process,
    and a note under it (a watch's state) if any."""
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
            marker = _core.state_marker(state)
            shown_target = f"<code>{html.escape(target)}</code>" if target else ""
            parts.append(f'<tr class="interp-rpc-{state}"><td>{worker}</td>'
                         f'<td style="border-left:4px solid {marker};font-weight:bold">{state}</td>'
                         f"<td>{shown_target}</td><td>{item}</td><td>{running}</td>"
                         f"<td>{calls}</td></tr>")
            text.append(f"  {worker:<6}{state:<9}{target:<32}{item:<10}{running:<13}{calls}")
    if not rows:
        text.append("no dask worker process serves the pool")
        parts.append(f'<tr><td colspan="{len(_COLUMNS)}">no dask worker process serves '
                     "the pool</td></tr>")
    parts.append("</tbody></table>")
    if note:
        parts.append(_note_html(note))
        text.append(note)
    parts.append("</div>")
    return {"text/html": "".join(parts), "text/plain": "\n".join(text) + "\n"}


def _note_html(note: str) -> str:
    return ('<div class="interp-rpc-note" style="color:var(--jp-content-font-color2, '
            f'#59636e)">{html.escape(note)}</div>')


def show_status(pool: ClusterPool, stuck_after: float) -> None:
    from IPython.display import display

    display(status_bundle(pool.status(), stuck_after), raw=True)


class StatusWatch:
    """``%parallel_status --watch S`` on a cluster: the table, updated in place
    from a background thread until ``stop()``, for ``duration`` seconds, or
    until the pool is closed; then its last state, saying it is not updated
    any more.

    One status request at a time, on a thread of its own, so that a slow or
    hung answer never blocks the view: it shows the last answer, saying how
    late the next one is; a failed request shows its error under the last
    answer, and the next refresh asks again.
    """

    def __init__(self, pool: ClusterPool, *, stuck_after: float, duration: float | None,
                 refresh: float = WATCH_REFRESH_SECONDS) -> None:
        self._pool = pool
        self._stuck_after = stuck_after
        self._duration = duration
        self._refresh = refresh
        self._display_id = f"interp-rpc-{uuid.uuid4().hex}"
        self._changed = threading.Condition()
        # Guarded by _changed:
        self._stopping = False
        self._asking = False
        self._asked_at = 0.0
        self._statuses: list[WorkerStatus] | None = None
        self._answered_at = 0.0
        self._error: Exception | None = None
        # The thread that publishes (stop() once it has joined it):
        self._thread: threading.Thread | None = None
        self._last_frame: dict[str, str] | None = None
        self._shown = False
        self._finished = False
        self.updates = 0

    # ------------------------------------------------------------ requests

    def _ask(self) -> None:
        """Ask every process for its status, unless a request is in flight."""
        with self._changed:
            if self._asking:
                return
            self._asking = True
            self._asked_at = monotonic()
        threading.Thread(target=self._answer, name="interp-rpc cluster status",
                         daemon=True).start()

    def _answer(self) -> None:
        statuses: list[WorkerStatus] | None = None
        error: Exception | None = None
        try:
            statuses = self._pool.status()
        except Exception as exc:  # shown in the view; the next refresh asks again
            error = exc
        with self._changed:
            self._asking = False
            if statuses is not None:
                self._statuses, self._answered_at = statuses, monotonic()
            self._error = error
            self._changed.notify_all()

    def _wait(self, seconds: float, *, for_answer: bool) -> bool:
        """Wait up to ``seconds`` (for the request in flight to be answered,
        if ``for_answer``); returns whether the watch is stopping."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._stopping or (for_answer and not self._asking), max(0.0, seconds))
            return self._stopping

    # ------------------------------------------------------------- frames

    def frame(self, ended: str = "") -> dict[str, str]:
        """The table of the last answer, with a note on its state: late,
        failed, or (``ended``) no longer updated, and why."""
        now = monotonic()
        with self._changed:
            statuses, error = self._statuses, self._error
            late = now - self._asked_at if self._asking else 0.0
            age = now - self._answered_at
        notes = []
        if late >= LATE_ANSWER_SECONDS:  # what happens now, before how the last ask ended
            notes.append(f"Waiting {late:.0f} s for the cluster's status.")
        elif error is not None:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
            notes.append(f"The cluster's status failed: {type(error).__name__}"
                         f"{': ' + reason if reason else ''}.")
        if statuses is not None and (notes or ended):
            notes.append(f"The table is from {age:.1f} s ago.")
        if ended:
            notes.append(f"Not updated any more ({ended}): run %parallel_status again "
                         "to refresh it.")
        note = " ".join(notes)
        if statuses is None:
            note = ("No answer from the cluster yet. " if error is None else "") + note
            return {"text/html": f'<div class="interp-rpc-live">{_note_html(note)}</div>',
                    "text/plain": note + "\n"}
        return status_bundle(statuses, self._stuck_after, note)

    def _publish(self, frame: dict[str, str]) -> None:
        """Update the display, unless the frame is the one already shown."""
        from IPython.display import update_display

        if frame == self._last_frame:
            return
        update_display(frame, raw=True, display_id=self._display_id)
        self._last_frame = frame
        self.updates += 1

    # ---------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Show the table (after the first answer, or ``LATE_ANSWER_SECONDS``)
        and keep it updated; a terminal, which cannot update in place, gets it
        once."""
        from IPython.display import display

        self._ask()
        self._wait(LATE_ANSWER_SECONDS, for_answer=True)
        if live.in_terminal():
            display(self.frame(), raw=True)
            self._finished = True
            return
        self._last_frame = self.frame()
        display(self._last_frame, raw=True, display_id=self._display_id)
        self._shown = True
        self._thread = live.cell_thread(self._run, "interp-rpc cluster status watch")
        self._thread.start()

    def _run(self) -> None:
        deadline = None if self._duration is None else monotonic() + self._duration
        while True:
            pause = self._refresh if deadline is None else min(self._refresh,
                                                               deadline - monotonic())
            if self._wait(pause, for_answer=False):
                return
            if self._pool.closed:
                self._publish(self.frame(ended="the pool was closed"))
                self._finished = True
                return
            if deadline is not None and monotonic() >= deadline:
                self._publish(self.frame(ended=f"watched for {self._duration:g} s"))
                self._finished = True
                return
            # An answer within a period is shown at once; a later one at a
            # later refresh (no other request is made while it is awaited).
            self._ask()
            if self._wait(self._refresh, for_answer=True):
                return
            self._publish(self.frame())

    def stop(self) -> None:
        """Stop updating, and show the last state, saying so (nothing if the
        watch ended on its own, which showed it then)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()
        if self._shown and not self._finished:
            self._publish(self.frame(ended="stopped"))
        self._finished = True


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
                  f"{_core.seconds_text(monotonic() - self._started_at)}")
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
