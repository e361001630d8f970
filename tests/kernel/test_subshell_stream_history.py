"""What a cell printed, as the history records it (``%history -o``), when
cells on the main shell and a subshell overlap.

IPython records it by replacing the stream's write for each cell and putting
back, at the cell's end, the write it found: when a subshell's cell starts
during a main shell's cell and ends after it, the main cell's replacement is
put back for good. Every later write then also goes into that old cell's
record, and replacements pile up with each such overlap until ``print``
raises RecursionError (a subshell chaos run got there in minutes)."""

from __future__ import annotations

from conftest import Kernel
from test_subshells import Traffic, create_subshell, result_of

# How many times each cell's record holds a line ``text``, over every cell.
TIMES_RECORDED = ("sum(''.join(o.bundle['stream']).count({text!r}) "
                  "for outputs in get_ipython().history_manager.outputs.values() "
                  "for o in outputs if o.output_type == 'out_stream')")


def test_a_later_print_is_recorded_once_after_cells_overlapped(kernel: Kernel) -> None:
    """Ours only: ipykernel 7.2 (with IPython 9.11) records it twice, in the
    later cell and in the main shell's overlapped one, and so piles up."""
    traffic = Traffic(kernel)
    subshell = create_subshell(traffic.kernel)
    first = traffic.execute("import time\nprint('first')\ntime.sleep(1.5)")
    traffic.busy(first)
    second = traffic.execute("import time\nprint('second')\ntime.sleep(3)", subshell)
    traffic.busy(second)
    traffic.done(first)
    traffic.done(second)
    assert traffic.reply_times[first.msg_id] < traffic.reply_times[second.msg_id], \
        "the subshell's cell did not end last"
    for _ in range(3):
        traffic.done(traffic.execute("print('later')"))
    recorded = traffic.done(traffic.execute(TIMES_RECORDED.format(text="later\n")))
    assert result_of(recorded) == "3"
