"""Views of a pool whose status is asked for, not read from a local board:
a dask cluster's (``%parallel_pool --dask``), or any pool of the contract
(_pool/contract.py) other than a local InterpreterPool.

A local pool's live view is rendered by its engine from a status board read
without any GIL (live.py). Another pool's status is an answer it gives
(``pool.status()``: for a cluster, a round trip to every dask worker
process). The engine's renderer draws that too (``_core.render_status``),
with a title over each process's rows when the workers say where they live
(a cluster's ClusterWorker): one table, with one set of columns, states and
colours, for every pool. ``%parallel_status --watch`` asks for it again
every ``WATCH_REFRESH_SECONDS`` from a background thread (StatusWatch). A
map's view (MapView) is a watch too, with the map's progress above the
table: the results received, in order, counted by the thread that receives
them.
"""

from __future__ import annotations

import sys
import threading
import uuid
from collections.abc import Callable, Iterable
from itertools import groupby
from time import monotonic
from typing import TYPE_CHECKING, Any

from interp_rpc._pool.engine import _core
from interp_rpc.notebook import live
from interp_rpc.records import WorkerStatus

if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool

#: How often a watch asks the pool for its status. On a cluster each ask is a
#: round trip to every dask worker process (a few ms on one machine, more
#: across a network or under load), so it is slower than the local pool's view.
WATCH_REFRESH_SECONDS = 0.5

#: An unanswered status request older than this is shown as late; start()
#: waits this long for the first answer, at most, before showing the table.
LATE_ANSWER_SECONDS = 2.0


def process_of(w: WorkerStatus) -> tuple[str, int, str] | None:
    """(host, pid, dask worker address) of a cluster worker's process; None
    for a worker that does not say where it lives."""
    index: Any = w.index
    if not hasattr(index, "address"):
        return None
    return str(index.host), int(index.pid), str(index.address)


def render(statuses: Iterable[WorkerStatus] | None, stuck_after: float, *, note: str = "",
           progress: tuple[str, int, int, float] | None = None) -> dict[str, str]:
    """The status table, one group of rows per process where workers say
    which, drawn by the engine's renderer (the local pool's table); a note
    under it, and ``progress`` (target, done, total, seconds) above it.
    ``statuses`` None: no table (no answer yet, or a map's progress alone)."""
    rows: list[tuple[int, str, str, int, float, int, str]] = []
    groups: list[tuple[int, str]] = []

    def order(w: WorkerStatus) -> tuple[str, int, int]:
        where = process_of(w)
        return ("", 0, int(w.index)) if where is None else (where[0], where[1], int(w.index))

    for where, group in groupby(sorted(statuses or (), key=order), key=process_of):
        if where is not None:
            host, pid, address = where
            groups.append((len(rows), f"{host} · process {pid} · dask worker {address}"))
        rows.extend((int(w.index), w.state, w.target or "",
                     -1 if w.item_index is None else w.item_index, w.busy_seconds,
                     w.calls_done, w.detail or "") for w in group)
    target, done, total, seconds = progress or ("", 0, 0, 0.0)
    html_text, text = _core.render_status(
        rows, groups=groups, target=target, done=done, total=total, elapsed_seconds=seconds,
        stuck_after=stuck_after, table=statuses is not None,
        empty_text="no worker serves the pool", note=note)
    return {"text/html": html_text, "text/plain": text}


def show_status(pool: Pool, stuck_after: float) -> None:
    from IPython.display import display

    display(render(pool.status(), stuck_after), raw=True)


class StatusWatch:
    """``%parallel_status --watch S`` on a pool whose status is asked for:
    the table, updated in place from a background thread until ``stop()``,
    for ``duration`` seconds, or until the pool is closed; then its last
    state, saying it is not updated any more.

    One status request at a time, on a thread of its own, so that a slow or
    hung answer never blocks the view: it shows the last answer, saying how
    late the next one is; a failed request shows its error under the last
    answer, and the next refresh asks again.
    """

    def __init__(self, pool: Pool, *, stuck_after: float, duration: float | None,
                 refresh: float = WATCH_REFRESH_SECONDS,
                 progress: Callable[[], tuple[str, int, int, float]] | None = None,
                 first_answer_wait: float = LATE_ANSWER_SECONDS) -> None:
        """``progress()``: (target, done, total, seconds) of the map shown
        above the table, if one is. ``first_answer_wait``: how long start()
        waits for the first answer before it shows the view."""
        self._pool = pool
        self._stuck_after = stuck_after
        self._duration = duration
        self._refresh = refresh
        self._progress = progress
        self._first_answer_wait = first_answer_wait
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
        threading.Thread(target=self._answer, name="interp-rpc status request",
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
            notes.append(f"Waiting {late:.0f} s for the pool's status.")
        elif error is not None:
            reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
            notes.append(f"The pool's status failed: {type(error).__name__}"
                         f"{': ' + reason if reason else ''}.")
        if statuses is not None and (notes or ended):
            notes.append(f"The table is from {age:.1f} s ago.")
        if ended:
            notes.append(live.ended_note(ended))
        note = " ".join(notes)
        if statuses is None:
            note = ("No answer from the pool yet. " if error is None else "") + note
        progress = None if self._progress is None else self._progress()
        return render(statuses, self._stuck_after, note=note, progress=progress)

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
        self._wait(self._first_answer_wait, for_answer=True)
        if live.in_terminal():
            display(self.frame(), raw=True)
            self._finished = True
            return
        self._last_frame = self.frame()
        display(self._last_frame, raw=True, display_id=self._display_id)
        self._shown = True
        self._thread = live.cell_thread(self._run, "interp-rpc status watch")
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

    def stop(self, final: dict[str, str] | None = None) -> None:
        """Stop updating, and show ``final``, or else the last state, saying
        so (nothing if the watch ended on its own, which showed it then)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()
        if self._shown and (final is not None or not self._finished):
            self._publish(final if final is not None else self.frame(ended="stopped"))
        self._finished = True


class MapView:
    """A map's progress, results received so far, in order
    (counted by the thread that receives them), over the pool's status
    table as a watch shows it; then a one-line summary. A terminal, which
    cannot update in place, gets the summary alone."""

    def __init__(self, pool: Pool, target: str, total: int, stuck_after: float) -> None:
        self._target = target
        self._total = total
        self._workers = pool.workers
        self._started_at = monotonic()
        self._done = 0
        self._started = False
        self._watch: StatusWatch | None = None
        if not live.in_terminal():
            self._watch = StatusWatch(pool, stuck_after=stuck_after, duration=None,
                                      progress=self._progress,
                                      first_answer_wait=live.REFRESH_SECONDS)

    def _progress(self) -> tuple[str, int, int, float]:
        return self._target, self._done, self._total, monotonic() - self._started_at

    def start(self) -> None:
        self._started = True
        if self._watch is not None:
            self._watch.start()

    def advance(self, done: int) -> None:
        """``done`` results received (the view shows it at its next refresh)."""
        self._done = done

    def stop(self) -> None:
        """The summary in the view's place (nothing if the map never started)."""
        from IPython.display import display

        if not self._started:
            return
        final = live.summary(self._target, self._done, self._total,
                             monotonic() - self._started_at, self._workers)
        if self._watch is None:
            display(final, raw=True)
        else:
            self._watch.stop(final)
        sys.stdout.flush()
