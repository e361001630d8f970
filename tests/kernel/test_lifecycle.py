"""Startup, shutdown and restart: clean, with exit code 0, whatever the kernel
was doing (xpython aborts on every shutdown with a pybind11 GIL error)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Kernel, start_kernel, stop_kernel


@pytest.fixture
def logged_kernel(tmp_path: Path) -> Iterator[tuple[Kernel, Path]]:
    """A kernel whose stdout and stderr go to a file."""
    log = tmp_path / "kernel.log"
    # Open as long as the kernel lives: a restart launches with it again.
    with log.open("w") as sink:
        kernel = start_kernel(stdout=sink, stderr=subprocess.STDOUT)
        try:
            yield kernel, log
        finally:
            stop_kernel(kernel)


def shut_down(kernel: Kernel) -> int | None:
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    process = provisioner.process  # type: ignore[attr-defined]
    kernel.client.stop_channels()
    kernel.manager.shutdown_kernel(now=False)
    code: int | None = process.returncode
    return code


def assert_clean_exit(kernel: Kernel, log: Path) -> str:
    """Shuts the kernel down; returns what it wrote."""
    assert shut_down(kernel) == 0
    text = log.read_text()
    for crash in ("terminate called", "Abort", "Segmentation", "GIL", "dec_ref"):
        assert crash not in text, text
    return text


def test_shutdown_exits_with_code_0(logged_kernel: tuple[Kernel, Path]) -> None:
    kernel, log = logged_kernel
    assert kernel.execute("x = 1").status == "ok"
    assert "Traceback" not in assert_clean_exit(kernel, log)


def test_shutdown_while_a_cell_runs(logged_kernel: tuple[Kernel, Path]) -> None:
    kernel, log = logged_kernel
    msg_id = kernel.send("print('started', flush=True); import time; time.sleep(60)")
    while True:
        msg = kernel.client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            break
    assert_clean_exit(kernel, log)


def test_shutdown_with_cells_waiting(logged_kernel: tuple[Kernel, Path]) -> None:
    # Sent before IPython has even started: they must not hold the exit up.
    kernel, log = logged_kernel
    for _ in range(3):
        kernel.send("import time; time.sleep(60)")
    assert_clean_exit(kernel, log)


def test_shutdown_with_live_widgets_comms_and_threads(logged_kernel: tuple[Kernel, Path]) -> None:
    # Python outlives the kernel's C++ side: at exit it finalizes widgets
    # (which close their comms) and threads still print. (IPython clears the
    # namespace at exit, so the thread and __del__ fail with NameErrors, as
    # they would under ipykernel.)
    kernel, log = logged_kernel
    execution = kernel.execute(
        "import ipywidgets as widgets, threading, time, sys, comm\n"
        "sliders = [widgets.IntSlider() for _ in range(5)]\n"
        "raw = comm.create_comm(target_name='raw')\n"
        "def chatter():\n"
        "    while True:\n"
        "        print('still here'); sys.stdout.flush(); time.sleep(0.01)\n"
        "threading.Thread(target=chatter, daemon=True).start()\n"
        "class NoisyAtExit:\n"
        "    def __del__(self):\n"
        "        print('finalized')\n"
        "        sliders[0].value = 3\n"
        "noisy = NoisyAtExit()\n"
    )
    assert execution.status == "ok"
    assert_clean_exit(kernel, log)


def test_restart_gives_a_fresh_kernel(logged_kernel: tuple[Kernel, Path]) -> None:
    kernel, log = logged_kernel
    kernel.execute("remembered = 42")
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    old_process = provisioner.process  # type: ignore[attr-defined]
    kernel.manager.restart_kernel(now=False)
    assert old_process.returncode == 0
    kernel.client.wait_for_ready(timeout=60)
    execution = kernel.execute("remembered")
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "NameError"
    assert kernel.execute("1 + 1").status == "ok"
    assert_clean_exit(kernel, log)


def test_shutdown_right_after_startup(logged_kernel: tuple[Kernel, Path]) -> None:
    # The kernel answers kernel_info while IPython is still being imported.
    kernel, log = logged_kernel
    assert "Traceback" not in assert_clean_exit(kernel, log)


def test_the_first_request_may_be_any_request(kernel: Kernel) -> None:
    # IPython starts on the first request that needs it, whichever it is.
    kernel.client.history(hist_access_type="tail", n=5)
    history = kernel.client.get_shell_msg(timeout=60)
    assert history["content"]["status"] == "ok"
    kernel.client.complete("pri", 3)
    complete = kernel.client.get_shell_msg(timeout=60)
    assert "print" in complete["content"]["matches"]
    assert kernel.execute("1 + 1").status == "ok"
