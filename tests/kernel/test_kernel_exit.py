"""exit() and quit() in a cell, as ipykernel (IPython's ZMQExitAutocall): the
cell's reply carries an ask_exit payload, and then the kernel process ends
(a Jupyter server restarts it). exit(keep_kernel=True) only asks the
frontend to close: the kernel goes on."""

from __future__ import annotations

import pytest
from conftest import Kernel

EXIT_WITHIN_SECONDS = 30


def kernel_process_exit_code(kernel: Kernel) -> int:
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    code: int = provisioner.process.wait(timeout=EXIT_WITHIN_SECONDS)  # type: ignore[attr-defined]
    return code


@pytest.mark.parametrize("call", ["exit()", "quit()"])
def test_exit_ends_the_kernel_after_its_reply(each_kernel: Kernel, call: str) -> None:
    execution = each_kernel.execute(call)
    assert execution.status == "ok", execution.reply
    assert execution.reply["content"]["payload"] == [{"source": "ask_exit", "keepkernel": False}]
    assert kernel_process_exit_code(each_kernel) == 0


def test_exit_keep_kernel_leaves_the_kernel_running(each_kernel: Kernel) -> None:
    execution = each_kernel.execute("exit(keep_kernel=True)")
    assert execution.status == "ok", execution.reply
    assert execution.reply["content"]["payload"] == [{"source": "ask_exit", "keepkernel": True}]
    after = each_kernel.execute("print(6 * 7)")
    assert after.stream() == "42\n"
