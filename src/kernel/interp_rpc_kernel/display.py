"""Display publisher and display hook that hand what IPython shows to the
kernel, which sends it as Jupyter messages (display_data,
update_display_data, clear_output, execute_result).

The kernel sets the `send_*` callables once the shell exists; until then (or
once the kernel has detached) IPython's own behaviour applies: text on
stdout.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher

# data, metadata, transient, update
SendDisplayData = Callable[[dict[str, Any], dict[str, Any], dict[str, Any], bool], None]
# execution count, data, metadata
SendExecuteResult = Callable[[int, dict[str, Any], dict[str, Any]], None]


class KernelDisplayPublisher(DisplayPublisher):
    """display() and clear_output(), as messages."""

    send_display_data: SendDisplayData | None = None
    send_clear_output: Callable[[bool], None] | None = None

    def publish(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any] | None = None,
        source: object = None,
        *,
        transient: dict[str, Any] | None = None,
        update: bool = False,
        **kwargs: Any,
    ) -> None:
        if self.send_display_data is None:
            super().publish(data, metadata, transient=transient, update=update, **kwargs)
            return
        # As ipykernel: a clear TypeError for data or metadata that is not a dict.
        self._validate_data(data, metadata)
        self.send_display_data(data, metadata or {}, transient or {}, update)

    def clear_output(self, wait: bool = False) -> None:
        if self.send_clear_output is None:
            super().clear_output(wait)
            return
        self.send_clear_output(wait)


class _ResultBeingShown(threading.local):
    """What one thread's display hook call has formatted so far."""

    data: dict[str, Any]
    metadata: dict[str, Any]

    def __init__(self) -> None:
        self.data = {}
        self.metadata = {}


class KernelDisplayHook(DisplayHook):
    """A cell's result, as an execute_result message. The frontend shows the
    Out[n] prompt, so none is written.

    The main shell and each subshell share this hook and may show results at
    the same moment: what a call has formatted is kept per thread, so that a
    cell's result goes out once, with its own request as parent."""

    send_execute_result: SendExecuteResult | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shown = _ResultBeingShown()

    def start_displayhook(self) -> None:
        self._shown.data = {}
        self._shown.metadata = {}
        if self.send_execute_result is None:
            super().start_displayhook()

    def write_output_prompt(self) -> None:
        if self.send_execute_result is None:
            super().write_output_prompt()

    def write_format_data(
        self, format_dict: dict[str, Any], md_dict: dict[str, Any] | None = None
    ) -> None:
        if self.send_execute_result is None:
            super().write_format_data(format_dict, md_dict)
            return
        self._shown.data = format_dict
        self._shown.metadata = md_dict or {}

    def finish_displayhook(self) -> None:
        if self.send_execute_result is None:
            super().finish_displayhook()
            return
        # Text the cell printed before its result shows before it.
        sys.stdout.flush()
        sys.stderr.flush()
        # As ipykernel: a result with no data (an object that displayed
        # itself through _ipython_display_) is no Out[n].
        shown = self._shown
        if shown.data:
            self.send_execute_result(self.prompt_count, shown.data, shown.metadata)
        shown.data = {}
        shown.metadata = {}
