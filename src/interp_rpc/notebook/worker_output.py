"""What the workers print, shown in the cell as it arrives.

During %parallel_map (WorkerOutput), each piece goes under a
"[worker W, item I]" heading (repeated only when the worker or item
changes), each worker's output in the order it printed it, stderr to the
cell's stderr.

During %%parallel (CellOutput), workers usually print the same things: a
display updated in place shows what arrived so far, grouped by identical
output ("[workers 0-3]"); when the cell ends it is emptied, and the grouped
output is printed for good.

A thread takes the output from the relay (relay.py) while the
cell's main thread waits on the workers; what it shows goes to this cell
(live.cell_thread), also while a map of another shell (a subshell) runs.
"""

from __future__ import annotations

import sys
import threading
import uuid

from interp_rpc._pool.contract import Pool
from interp_rpc.display import errors
from interp_rpc.notebook import live
from interp_rpc.notebook.relay import OutputRelay, Printed

#: How often the thread looks for new output.
POLL_SECONDS = 0.05


def grouped(texts: dict[int, str]) -> str:
    """Each distinct non-empty text once, headed by the workers that printed it."""
    shown = []
    for workers, text in errors.group_by_worker({i: t for i, t in texts.items() if t}):
        shown.append(f"[{errors.worker_ranges(workers)}]\n{text}")
        if not text.endswith("\n"):
            shown.append("\n")
    return "".join(shown)


def heading(printed: Printed) -> str:
    worker = "worker ?" if printed.worker is None else f"worker {printed.worker}"
    return f"[{worker}]" if printed.item is None else f"[{worker}, item {printed.item}]"


class WorkerOutput:
    """Shows the workers' output of one map while it runs (``start()`` before
    the map, ``stop()`` after it: stop shows what is still on its way)."""

    def __init__(self, pool: Pool) -> None:
        self.relay = OutputRelay(pool)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_heading = {"stdout": "", "stderr": ""}
        self._at_line_start = {"stdout": True, "stderr": True}
        self._streams = {"stdout": sys.stdout, "stderr": sys.stderr}

    def start(self) -> None:
        self._thread = live.cell_thread(self._run, "interp-rpc worker output")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self.show(self.relay.take())

    def show(self, arrived: list[Printed]) -> None:
        touched = set()
        for printed in arrived:
            stream = self._streams[printed.stream]
            label = heading(printed)
            if label != self._last_heading[printed.stream]:
                # A heading starts a line, even after output that did not end one.
                start = "" if self._at_line_start[printed.stream] else "\n"
                stream.write(f"{start}{label}\n")
                self._last_heading[printed.stream] = label
            stream.write(printed.text)
            self._at_line_start[printed.stream] = printed.text.endswith("\n")
            touched.add(printed.stream)
        for name in touched:
            self._streams[name].flush()

    def stop(self) -> None:
        """Stop the thread, then show what arrived meanwhile, ending its last
        line. A worker still running an item (after Ctrl-C) may print more:
        that is dropped."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.show(self.relay.take())
        for name, stream in self._streams.items():
            if not self._at_line_start[name]:  # what follows the map starts a line
                stream.write("\n")
                stream.flush()


class CellOutput:
    """The live display of a %%parallel cell's output (``start()`` before the
    cell runs, ``stop()`` after it: stop empties the display)."""

    def __init__(self, pool: Pool) -> None:
        self.relay = OutputRelay(pool)
        self._texts: dict[str, dict[int, str]] = {"stdout": {}, "stderr": {}}
        self._display_id = f"interp-rpc-cell-{uuid.uuid4().hex}"
        self._shown = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        from IPython.display import display

        display({"text/plain": ""}, raw=True, display_id=self._display_id)
        self._thread = live.cell_thread(self._run, "interp-rpc cell output")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            self._update()

    def render(self) -> str:
        """What arrived so far: stdout's groups, then stderr's."""
        return grouped(self._texts["stdout"]) + grouped(self._texts["stderr"])

    def _update(self) -> None:
        from IPython.display import update_display

        for printed in self.relay.take():
            if printed.worker is not None:
                texts = self._texts[printed.stream]
                texts[printed.worker] = texts.get(printed.worker, "") + printed.text
        text = self.render()
        if text != self._shown:
            update_display({"text/plain": text}, raw=True, display_id=self._display_id)
            self._shown = text

    def stop(self) -> None:
        from IPython.display import update_display

        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown:
            update_display({"text/plain": ""}, raw=True, display_id=self._display_id)
