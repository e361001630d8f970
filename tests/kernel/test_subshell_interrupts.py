"""Ctrl-C while only a subshell runs code, side by side with ipykernel 7:
interrupts reach the main shell's code only, so an interrupt while the main
shell is idle does nothing, and the main shell's next cell runs.

(In our kernel a subshell's cell used to open the main thread's interrupt
window: the interrupt then tripped the main thread later, in IPython's
bookkeeping of its next cell, which failed; and one landing just after
IPython's history lock was taken leaked the lock, hanging every shell.)"""

from __future__ import annotations

import time

import pytest
from conftest import Kernel
from test_subshells import Traffic, create_subshell, outputs, result_of, text_of


@pytest.fixture
def traffic(each_kernel: Kernel) -> Traffic:
    return Traffic(each_kernel)


def test_an_interrupt_while_only_a_subshell_runs_spares_the_idle_main_shell(
        traffic: Traffic) -> None:
    """Nothing happens on the main shell: the next cell runs, and no cell's
    output gains anything. Tripping the idle main thread would raise the
    KeyboardInterrupt in its event loop, reported as "Exception ignored" in
    the output of the main shell's previous cell."""
    before = traffic.execute("'the main shell ran this'")
    assert result_of(traffic.done(before)) == "'the main shell ran this'"
    subshell = create_subshell(traffic.kernel)
    sleeping = traffic.execute("import time; time.sleep(2); 'slept'", subshell)
    traffic.busy(sleeping)
    traffic.kernel.manager.interrupt_kernel()
    time.sleep(0.5)  # the interrupt has been handled, or dropped, by now
    after = traffic.execute("6 * 7")
    messages = traffic.done(after)
    assert traffic.replies[after.msg_id]["content"]["status"] == "ok", messages
    assert result_of(messages) == "42"
    assert result_of(traffic.done(sleeping)) == "'slept'"
    assert not outputs(traffic.iopub[before.msg_id], "stream"), traffic.iopub[before.msg_id]
    every_text = [text_of(sent) for sent in traffic.iopub.values()]
    assert not any("KeyboardInterrupt" in text for text in every_text), every_text


SLOW_PRE_RUN_HOOK = """
import time
def slow_bookkeeping(info):
    # Busy, so that a tripped interrupt is raised at once, as in IPython's
    # own bookkeeping.
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        pass
get_ipython().events.register("pre_run_cell", slow_bookkeeping)
"""


def test_an_interrupt_outside_the_main_cells_code_waits_for_it_while_a_subshell_runs(
        kernel: Kernel) -> None:
    """Ours only: interrupts are raised in the user's code, never in
    IPython's own work around it (a pre_run_cell hook stands for that here;
    ipykernel interrupts the hook, reports "Error in callback", and runs the
    cell). One that comes meanwhile is kept for the cell's code, which it
    stops. A subshell running code must not change that, nor be stopped."""
    traffic = Traffic(kernel)
    subshell = create_subshell(kernel)
    assert traffic.reply(traffic.execute(SLOW_PRE_RUN_HOOK))["content"]["status"] == "ok"
    sleeping = traffic.execute("import time; time.sleep(4); 'slept'", subshell)
    traffic.busy(sleeping)
    main = traffic.execute("print('ran'); 6 * 7")
    traffic.busy(main)
    time.sleep(0.3)  # in the hook, which sleeps 1.5 s
    kernel.manager.interrupt_kernel()
    messages = traffic.done(main)
    assert traffic.replies[main.msg_id]["content"]["status"] == "error", messages
    assert traffic.replies[main.msg_id]["content"]["ename"] == "KeyboardInterrupt", messages
    assert [m["content"]["ename"] for m in outputs(messages, "error")] == ["KeyboardInterrupt"]
    assert "Error in callback" not in text_of(messages), messages
    assert "ran" not in text_of(messages), messages
    assert result_of(traffic.done(sleeping)) == "'slept'"
