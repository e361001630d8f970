"""Live status and progress in a notebook, updated in place while a cell blocks.

The view itself is rendered by the engine from a status snapshot
(``engine.render_live``). Who publishes it depends on the kernel:

- in the interp-rpc kernel, a C++ thread of the kernel publishes it without
  taking any GIL (``_interp_rpc_kernel.start_live_view``);
- under any other kernel (ipykernel), a Python thread does, through IPython's
  display machinery. While the notebook's main thread waits on the pool it
  has released the GIL, so that thread runs freely.

Progress also drives an ipywidgets bar when the frontend can show widgets;
the HTML then leaves its own bar out, so there is one. When a map ends its
display becomes a one-line summary, and the widget is closed. Terminal
IPython, which cannot update a display in place, gets the final table once.
"""

from __future__ import annotations

import contextvars
import html
import os
import sys
import threading
import uuid
from collections.abc import Callable
from time import monotonic_ns
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from interp_rpc._pool.engine import _core
from interp_rpc._pool.pool import InterpreterPool

if TYPE_CHECKING:
    from interp_rpc._pool.contract import Pool

#: How often the live view is refreshed (at least twice a second).
REFRESH_SECONDS = 0.25

#: Seconds after which a busy worker shows as stuck, until --stuck-after:
#: the engine's default, for every table.
STUCK_AFTER = _core.DEFAULT_STUCK_AFTER

# Debian's JupyterLab widgets extension ships without its stylesheet, which
# leaves a progress bar 0 px tall: the kernel styles its bars itself, once.
_WIDGET_STYLE = (
    "<style>.interp-rpc-widget-progress .progress{height:14px;flex-grow:1;"
    "background:var(--jp-layout-color3,#d0d7de);border-radius:4px;overflow:hidden}"
    ".interp-rpc-widget-progress .progress-bar{height:100%;"
    "background:var(--jp-success-color1,#1a7f37)}</style>"
)
_widget_style_shown = False


def ended_note(why: str) -> str:
    """The line under a status table that is not updated any more, and why
    ("stopped", "watched for 60 s"): for every kind of pool."""
    return f"Not updated any more ({why}): run %parallel_status again to refresh it."


def engine_in_this_process(pool: Pool) -> TypeGuard[InterpreterPool]:
    """Whether the pool's engine runs in this process, so that its status
    is read from the engine's feed, as it changes and without the GIL (a
    LiveView); any other pool is asked for its status (polled_view)."""
    return isinstance(pool, InterpreterPool)


def in_terminal() -> bool:
    """Terminal IPython (no kernel): displays cannot be updated in place."""
    from IPython.core.getipython import get_ipython

    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is None


def summary(target: str, done: int, total: int, seconds: float, workers: int) -> dict[str, str]:
    """The final frame of a map: one line."""
    rate = f", {done / seconds:.1f} items/s" if seconds > 0 and done else ""
    text = (f"{target}: {done} of {total} items in {seconds:.2f} s on {workers} "
            f"worker{'s' if workers != 1 else ''}{rate}")
    return {"text/plain": text,
            "text/html": '<div class="interp-rpc-summary" style="color:'
                         f'var(--jp-content-font-color1,#1f2328)">{html.escape(text)}</div>'}


def _kernel_publisher() -> Any | None:
    """The interp-rpc kernel's C++ publisher module, when running in that kernel."""
    try:
        import _interp_rpc_kernel  # type: ignore[import-not-found]  # embedded in the kernel
    except ImportError:
        return None
    return _interp_rpc_kernel if hasattr(_interp_rpc_kernel, "start_live_view") else None


def cell_thread(run: Callable[[], None], name: str) -> threading.Thread:
    """A daemon thread (not started) whose display output belongs to the cell
    running now, also after that cell ended and while later cells run.

    ipykernel keeps a cell's parent header in context variables, so the
    thread runs in a copy of this context. The interp-rpc kernel gives other
    threads' output to the latest cell instead, unless the thread pins it to
    a cell through ``_interp_rpc_kernel.cell_parent()``.
    """
    context = contextvars.copy_context()
    kernel = sys.modules.get("_interp_rpc_kernel")  # the kernel puts its module there
    if kernel is None:
        return threading.Thread(target=context.run, args=(run,), name=name, daemon=True)
    cell = kernel.cell_parent()
    return threading.Thread(target=context.run, args=(cell.run, run), name=name, daemon=True)


def widgets_supported() -> bool:
    """Whether progress should be an ipywidgets bar: ipywidgets is installed and
    the kernel was started by a Jupyter server for a notebook (JupyterLab and
    Notebook set JPY_SESSION_NAME; nbclient and consoles do not, and show text)."""
    if "JPY_SESSION_NAME" not in os.environ:
        return False
    try:
        import ipywidgets  # noqa: F401  # only whether it is installed
    except ImportError:
        return False
    return True


class LiveView:
    """A status (and, for a map, progress) display that refreshes itself.

    ``start()`` shows it and starts the refreshing, ``stop()`` shows the final
    state; both around the blocking call.
    """

    def __init__(self, pool: InterpreterPool, *, target: str = "", total: int = 0,
                 stuck_after: float = STUCK_AFTER, refresh: float = REFRESH_SECONDS,
                 duration: float | None = None, since: tuple[int, int] | None = None) -> None:
        """``since``: (call-log position, first call id) of the map shown, so
        that progress counts its items only, never those of another call
        that finishes meanwhile (a timed-out map's chunk, another thread's)."""
        self._pool = pool
        self._target = target
        self._total = total
        self._stuck_after = stuck_after
        self._refresh = refresh
        self._duration = duration
        self._display_id = f"interp-rpc-{uuid.uuid4().hex}"
        self._since = since
        self._counter = None if since is None else pool.map_item_counter(since)
        self._items_at_start = pool.stats().items
        self._started_ns = monotonic_ns()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._kernel_view: Any | None = None
        self._bar: Any | None = None
        self._bar_label: Any | None = None
        self._bar_box: Any | None = None
        self._started = False
        self._terminal = False
        self._last_frame: dict[str, str] | None = None
        self._ended = False  # a watch whose duration ran out, its last table shown
        self.updates = 0

    def render(self, note: str = "") -> dict[str, str]:
        # With a widget bar, the HTML leaves its own bar out.
        total = 0 if self._bar is not None else self._total
        # The engine counts done items as the pool's total minus a baseline:
        # a baseline that leaves out every other call's items.
        baseline = (self._items_at_start if self._since is None
                    else self._pool.stats().items - self.done())
        html_text, text = self._pool.render_status(
            self._target, total, baseline, self._started_ns, self._stuck_after, note)
        return {"text/html": html_text, "text/plain": text}

    def _duration_note(self) -> str:
        return "" if self._duration is None else ended_note(f"watched for {self._duration:g} s")

    def _progress_line(self) -> str:
        """The map's progress as the engine words it ("3/8 items (38%), 1.20 s,
        2.50 items/s, ETA 2.00 s"), without its target and text bar."""
        baseline = self._pool.stats().items - self.done()
        _, text = self._pool.render_status(self._target, self._total, baseline,
                                           self._started_ns, self._stuck_after)
        return text.splitlines()[0].rpartition("] ")[2]

    def done(self) -> int:
        """Items of this map done so far."""
        if self._counter is None:
            done = self._pool.stats().items - self._items_at_start
        else:
            done = self._counter.update()
        return min(self._total, done)

    def start(self) -> None:
        from IPython.display import display

        global _widget_style_shown
        self._started = True
        self._terminal = in_terminal()
        if self._terminal:
            return  # the table is printed once, by stop()
        if self._total and widgets_supported():
            import ipywidgets

            self._bar = ipywidgets.IntProgress(value=0, min=0, max=self._total,
                                               description=f"0/{self._total}")
            self._bar.add_class("interp-rpc-widget-progress")
            # Beside the bar: the counts, rate and ETA that the HTML leaves out.
            self._bar_label = ipywidgets.Label(value=self._progress_line())
            if not _widget_style_shown:
                display({"text/html": _WIDGET_STYLE}, raw=True)
                _widget_style_shown = True
            self._bar_box = ipywidgets.HBox([self._bar, self._bar_label])
            display(self._bar_box)
        self._last_frame = self.render()
        display(self._last_frame, raw=True, display_id=self._display_id)
        kernel = _kernel_publisher()
        if kernel is not None and self._bar is None:
            # It counts this map's items by the same rule as done().
            after_seq, first_id = self._since or self._pool.log_position()
            self._kernel_view = kernel.start_live_view(
                self._pool.live_feed(), self._display_id, self._target, self._total,
                after_seq, first_id, self._started_ns, self._stuck_after, self._refresh,
                self._duration, self._duration_note())
            return
        self._thread = cell_thread(self._run, "interp-rpc live view")
        self._thread.start()

    def _run(self) -> None:
        deadline = None if self._duration is None else monotonic_ns() + self._duration * 1e9
        while not self._stop.wait(self._refresh):
            if deadline is not None and monotonic_ns() >= deadline:
                self._publish(self.render(self._duration_note()))
                self._ended = True
                return
            self._publish()

    def _publish(self, frame: dict[str, str] | None = None) -> None:
        """Update the display, unless the frame is the one already shown."""
        from IPython.display import update_display

        frame = frame or self.render()
        if self._bar is not None:
            done = self.done()
            self._bar.value = done
            self._bar.description = f"{done}/{self._total}"
            if self._bar_label is not None:
                self._bar_label.value = self._progress_line()
        if frame == self._last_frame:
            return
        update_display(frame, raw=True, display_id=self._display_id)
        self._last_frame = frame
        self.updates += 1

    def stop(self, done: int | None = None) -> None:
        """Stop refreshing, and show the final state (nothing if never started):
        for a map, a one-line summary; for the status, the table. ``done``:
        the items that succeeded, when the map failed (the engine counts every
        item of a chunk that replied, the failed one and those after it too)."""
        if not self._started:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._kernel_view is not None:
            self.updates += int(self._kernel_view.stop())
            self._ended = bool(self._kernel_view.ended)
        if self._ended:
            return  # the watch ran its course and showed its last table then
        final = self.render(ended_note("stopped") if self._duration is not None else "")
        if self._total:
            seconds = (monotonic_ns() - self._started_ns) / 1e9
            final = summary(self._target, self.done() if done is None else done, self._total,
                            seconds, self._pool.workers)
        if self._terminal:
            from IPython.display import display

            display(final, raw=True)
            return
        if self._bar is not None:
            for widget in (self._bar_box, self._bar_label, self._bar):
                if widget is not None:
                    widget.close()
        self._publish(final)


class Watch(Protocol):
    """What ``%parallel_status --watch`` keeps updating: a LiveView of the
    local pool, or a polled_view.StatusWatch of another pool (a ClusterPool)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


#: The one watch running, whatever the pool's kind, kept alive here: in the
#: interp-rpc kernel, dropping a LiveView would stop the kernel's C++ view.
_watched: Watch | None = None


def watch(view: Watch) -> None:
    """Start ``view`` (it updates the status table in the background, the
    cell does not block), replacing any earlier watch."""
    global _watched
    stop_watch()
    view.start()
    _watched = view


def stop_watch() -> bool:
    """Stop the watched view, if any (it shows its final state); returns
    whether one was running."""
    global _watched
    view, _watched = _watched, None
    if view is None:
        return False
    view.stop()
    return True
