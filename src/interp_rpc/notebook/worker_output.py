"""What the workers print during %parallel_map, shown in the cell as it
arrives: each piece under a "[worker W, item I]" heading (the heading is
repeated only when the worker or item changes), each worker's output in the
order it printed it, stderr to the cell's stderr.

A thread takes the output from the relay (interp_rpc._relay) while the
cell's main thread waits on the map, and writes it with the cell's
sys.stdout and sys.stderr; it runs in a copy of the cell's context, so that
ipykernel sends it to this cell.
"""

from __future__ import annotations

import contextvars
import sys
import threading

from interp_rpc._pool import InterpreterPool
from interp_rpc._relay import OutputRelay, Printed

#: How often the thread looks for new output.
POLL_SECONDS = 0.05


def heading(printed: Printed) -> str:
    worker = "worker ?" if printed.worker is None else f"worker {printed.worker}"
    return f"[{worker}]" if printed.item is None else f"[{worker}, item {printed.item}]"


class WorkerOutput:
    """Shows the workers' output of one map while it runs (``start()`` before
    the map, ``stop()`` after it: stop shows what is still on its way)."""

    def __init__(self, pool: InterpreterPool) -> None:
        self.relay = OutputRelay(pool)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_heading = {"stdout": "", "stderr": ""}
        self._at_line_start = {"stdout": True, "stderr": True}
        self._streams = {"stdout": sys.stdout, "stderr": sys.stderr}

    def start(self) -> None:
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run,),
                                        name="interp-rpc worker output", daemon=True)
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
