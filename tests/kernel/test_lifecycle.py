"""Startup, shutdown and restart: clean, with exit code 0, whatever the kernel
was doing (xpython aborts on every shutdown with a pybind11 GIL error)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Kernel, Message, start_kernel, stop_kernel

# What a loaded machine or a cold disk does to the kernel's startup, made
# certain: every IPython module takes this much longer to import, about 12 s
# in all (IPython is some 120 modules). jupyter_client kills a kernel that has
# not exited 5 s after its shutdown request.
SLOW_IMPORT_SECONDS_PER_MODULE = 0.1
SLOW_IPYTHON_SITECUSTOMIZE = f"""
import sys, time

class SlowIPythonImports:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] == "IPython":
            time.sleep({SLOW_IMPORT_SECONDS_PER_MODULE})
        return None

sys.meta_path.insert(0, SlowIPythonImports)
"""

# A loaded machine's other way to delay a first cell: the loader thread that
# imports IPython keeps the GIL while the cell is announced. The loader waits
# (GIL released) until the test writes HOLD into the switch file, then spins
# in Python without letting another thread in (a huge switch interval; reading
# an mmap never releases the GIL) until the test writes RELEASE. It holds the
# GIL where the test says:
# - "during": as it starts importing IPython. Once released, the cell takes
#   the GIL when the import next lets go of it, mid-import or at its end.
# - "after": with IPython imported and the import announced done, before the
#   thread ends. The cell then finds the import done and its Ctrl-C kept.
HOLD, RELEASE = 1, 2
GIL_HOLDING_IPYTHON_SITECUSTOMIZE = """
import mmap, sys, threading, time

SWITCH = {switch!r}
HOLDING = {holding!r}
WHERE = {where!r}

def hold_the_gil():
    with open(SWITCH, "r+b") as file:
        switch = mmap.mmap(file.fileno(), 1)
    deadline = time.monotonic() + 120
    while switch[0] != {hold} and time.monotonic() < deadline:
        time.sleep(0.01)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e6)
    open(HOLDING, "w").close()
    while switch[0] != {release} and time.monotonic() < deadline:
        pass
    sys.setswitchinterval(interval)

class GILHoldingIPythonImport:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name != "IPython":
            return None
        sys.meta_path.remove(GILHoldingIPythonImport)
        hold_the_gil()
        return None

run = threading.Thread.run

def run_then_hold_the_gil(self):
    try:
        run(self)
    finally:
        if self.name == "interp-rpc-import":
            hold_the_gil()

if WHERE == "during":
    sys.meta_path.insert(0, GILHoldingIPythonImport)
else:
    threading.Thread.run = run_then_hold_the_gil
"""


def logged(tmp_path: Path, **kwargs: Any) -> Iterator[tuple[Kernel, Path]]:
    """A kernel whose stdout and stderr go to a file."""
    log = tmp_path / "kernel.log"
    # Open as long as the kernel lives: a restart launches with it again.
    with log.open("w") as sink:
        kernel = start_kernel(stdout=sink, stderr=subprocess.STDOUT, **kwargs)
        try:
            yield kernel, log
        finally:
            stop_kernel(kernel)


@pytest.fixture
def logged_kernel(tmp_path: Path) -> Iterator[tuple[Kernel, Path]]:
    yield from logged(tmp_path)


@pytest.fixture
def slow_import_kernel(tmp_path: Path) -> Iterator[tuple[Kernel, Path]]:
    """A logged kernel whose import of IPython takes about 12 s (a
    sitecustomize module on its PYTHONPATH slows it down)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_IPYTHON_SITECUSTOMIZE)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    yield from logged(tmp_path, env=env)


@pytest.fixture(params=["during", "after"])
def gil_holding_import_kernel(
        tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Kernel, Path, Path]]:
    """A logged kernel whose loader thread holds the GIL between the test's
    HOLD and RELEASE, during IPython's import or after it (see
    GIL_HOLDING_IPYTHON_SITECUSTOMIZE); also yields the switch file."""
    site = tmp_path / "site"
    site.mkdir()
    switch = tmp_path / "switch"
    switch.write_bytes(b"\0")
    (site / "sitecustomize.py").write_text(GIL_HOLDING_IPYTHON_SITECUSTOMIZE.format(
        switch=str(switch), holding=str(tmp_path / "holding"), where=request.param,
        hold=HOLD, release=RELEASE))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    kernels = logged(tmp_path, env=env)
    kernel, log = next(kernels)
    try:
        yield kernel, log, switch
    finally:
        flip(switch, RELEASE)
        kernels.close()


def flip(switch: Path, state: int) -> None:
    """In place: the kernel maps the file (truncating it would kill it)."""
    with switch.open("r+b") as file:
        file.write(bytes([state]))


def shut_down(kernel: Kernel, keep_channels: bool = False) -> int | None:
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    process = provisioner.process  # type: ignore[attr-defined]
    if not keep_channels:
        kernel.client.stop_channels()
    kernel.manager.shutdown_kernel(now=False)
    code: int | None = process.returncode
    return code


def assert_clean_exit(kernel: Kernel, log: Path, keep_channels: bool = False) -> str:
    """Shuts the kernel down; returns what it wrote. keep_channels: the
    client may still read what the kernel sent before it exited."""
    code = shut_down(kernel, keep_channels)
    text = log.read_text()
    assert code == 0, f"exit code {code}; the kernel wrote, at the end:\n{text[-4000:]}"
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


def wait_for_execute_input(kernel: Kernel, msg_id: str) -> None:
    """Until the kernel has taken the request msg_id in hand."""
    while True:
        msg: Message = kernel.client.get_iopub_msg(timeout=60)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
            return


def test_shutdown_while_a_cell_awaits(logged_kernel: tuple[Kernel, Path]) -> None:
    kernel, log = logged_kernel
    msg_id = kernel.send("import asyncio\nprint('started', flush=True)\nawait asyncio.sleep(60)")
    while True:
        msg = kernel.client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            break
    assert_clean_exit(kernel, log)


def test_shutdown_while_a_task_runs_in_the_background(
        logged_kernel: tuple[Kernel, Path]) -> None:
    # The kernel is idle in its event loop, which runs the task.
    kernel, log = logged_kernel
    started = kernel.execute(
        "import asyncio\n"
        "async def forever():\n"
        "    while True:\n"
        "        await asyncio.sleep(0.01)\n"
        "background = asyncio.ensure_future(forever())"
    )
    assert started.status == "ok", started.reply
    assert_clean_exit(kernel, log)


def test_shutdown_with_cells_waiting(slow_import_kernel: tuple[Kernel, Path]) -> None:
    # Sent while IPython is still being imported: the first cell waits for the
    # import, the others behind it. They must not hold the exit up.
    kernel, log = slow_import_kernel
    for _ in range(3):
        kernel.send("import time; time.sleep(60)")
    assert_clean_exit(kernel, log)


def test_a_cell_waiting_for_ipython_at_shutdown_is_aborted(
        slow_import_kernel: tuple[Kernel, Path]) -> None:
    # The cell in hand never ran: it is answered "aborted". (The kernel never
    # reads the cells behind it: like ipykernel, it does not answer them.)
    # jupyter_client interrupts before it asks for the shutdown; this is the
    # shutdown request alone, then its wait and kill.
    kernel, log = slow_import_kernel
    msg_ids = [kernel.send("import time; time.sleep(60)") for _ in range(2)]
    wait_for_execute_input(kernel, msg_ids[0])
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    process = provisioner.process  # type: ignore[attr-defined]
    kernel.client.shutdown()
    kernel.manager.finish_shutdown()  # kills it after shutdown_wait_time
    kernel.manager.cleanup_resources()
    assert process.returncode == 0, log.read_text()
    reply = kernel.client.get_shell_msg(timeout=10)
    assert reply["parent_header"]["msg_id"] == msg_ids[0]
    assert reply["content"]["status"] == "aborted"


def test_interrupt_while_ipython_is_imported(slow_import_kernel: tuple[Kernel, Path]) -> None:
    # Ctrl-C on a first cell that waits for IPython: it ends at once with a
    # KeyboardInterrupt, and the next cell runs once IPython has started.
    kernel, log = slow_import_kernel
    msg_id = kernel.send("print('never')")
    wait_for_execute_input(kernel, msg_id)
    kernel.manager.interrupt_kernel()
    execution = kernel.collect(msg_id, timeout=30)
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "KeyboardInterrupt"
    assert [e["content"]["ename"] for e in execution.of_type("error")] == ["KeyboardInterrupt"]
    assert execution.stream() == ""
    after = kernel.execute("print(6 * 7)", timeout=180)
    assert after.status == "ok", after.reply
    assert after.stream() == "42\n"
    assert_clean_exit(kernel, log)


def test_interrupt_while_the_first_cell_waits_for_the_gil(
        gil_holding_import_kernel: tuple[Kernel, Path, Path]) -> None:
    # The cell is announced (execute_input), then waits for the GIL that
    # the loader holds; the interrupt comes and is answered meanwhile. It is
    # the cell's, as if it had come a moment later: the cell ends with a
    # KeyboardInterrupt once the loader lets go, and does not run, whether
    # IPython's import was still running then or was done ("after": it was
    # lost, and the cell ran).
    kernel, log, switch = gil_holding_import_kernel
    flip(switch, HOLD)
    holding = switch.parent / "holding"
    deadline = time.monotonic() + 60
    while not holding.exists():
        assert time.monotonic() < deadline, "the import never started holding the GIL"
        time.sleep(0.01)
    msg_id = kernel.send("print('never')")
    wait_for_execute_input(kernel, msg_id)
    interrupt = kernel.client.session.msg("interrupt_request", {})
    kernel.client.control_channel.send(interrupt)
    while kernel.client.get_control_msg(timeout=60)["parent_header"].get("msg_id") != (
            interrupt["header"]["msg_id"]):
        pass
    flip(switch, RELEASE)
    execution = kernel.collect(msg_id, timeout=60)
    assert execution.status == "error", execution.reply
    assert execution.reply["content"]["ename"] == "KeyboardInterrupt"
    assert execution.stream() == ""
    after = kernel.execute("print(6 * 7)", timeout=180)
    assert after.status == "ok", after.reply
    assert after.stream() == "42\n"
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


def test_threads_writing_hard_while_the_kernel_exits(logged_kernel: tuple[Kernel, Path]) -> None:
    # Daemon threads that never stop writing to both streams while Python
    # finalizes. Writing through Python's buffered sys.__stderr__ there, one
    # of them can hold its lock when the final flush wants it, and CPython
    # aborts: "could not acquire lock for <_io.BufferedWriter name='<stderr>'>
    # at interpreter shutdown, possibly due to daemon threads" (exit code -6;
    # once in about 50 runs of the widgets test above, under load).
    kernel, log = logged_kernel
    execution = kernel.execute(
        "import sys, threading\n"
        "def flood(stream, text):\n"
        "    while True:\n"
        "        stream.write(text)\n"
        "for n in range(4):\n"
        "    for stream in (sys.stdout, sys.stderr):\n"
        "        threading.Thread(target=flood, args=(stream, f'{n}' * 400 + '\\n'),\n"
        "                         daemon=True).start()\n"
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


def test_shutdown_during_a_slow_import_of_ipython(slow_import_kernel: tuple[Kernel, Path]) -> None:
    # The exit cancels the import rather than waiting for it.
    kernel, log = slow_import_kernel
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
