"""SIGINT and the kernel's child processes, against ipykernel side by side.

ipykernel runs cells with the usual signal mask, so the processes a cell
starts can be interrupted, and its interrupt_request sends SIGINT to the
kernel's process group. A SIGINT sent to the kernel process raises
KeyboardInterrupt in the cell. The same must hold here, although the kernel
takes SIGINT with its own handler (src/kernel/sigint_relay.hpp)."""

from __future__ import annotations

import os
import platform
import signal
import time
import uuid
from pathlib import Path

import pytest
from conftest import BOTH_KERNELS, Execution, Kernel, start_kernel, stop_kernel

# How long a process the kernel interrupted may take to end, as a test can
# wait for it on a loaded machine; the processes interrupted here would
# otherwise run for 600 s.
ENDS_WITHIN_SECONDS = 20.0
SIGINT_BIT = 1 << (signal.SIGINT - 1)


def kernel_pid(kernel: Kernel) -> int:
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    pid: int = provisioner.process.pid  # type: ignore[attr-defined]
    return pid


def proc_stat(pid: int) -> tuple[str, int] | None:
    """The state letter and process group of a process; None once gone."""
    try:
        line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = line[line.rindex(")") + 2 :].split()
    return fields[0], int(fields[2])


def processes_running(argv: list[str], group: int) -> list[int]:
    """The live (not zombie) processes of the process group whose command
    line is argv."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if [part.decode(errors="replace") for part in cmdline] != argv:
            continue
        stat = proc_stat(int(entry.name))
        if stat is not None and stat[0] != "Z" and stat[1] == group:
            found.append(int(entry.name))
    return found


def wait_until(condition: object, what: str, seconds: float = ENDS_WITHIN_SECONDS) -> None:
    assert callable(condition)
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.02)


def unique_sleep() -> list[str]:
    """A `sleep` command line no other test's process has."""
    return ["sleep", f"{600 + uuid.uuid4().int % 10_000 / 10_000:.4f}"]


def interrupt_child(kernel: Kernel, code: str, child: list[str]) -> Execution:
    """Runs code, which starts `child` in the kernel's process group; once
    the child runs, interrupts the kernel as the frontend does (ours by
    message, ipykernel by SIGINT to its process group), and returns the cell's
    execution once the child has ended."""
    group = kernel_pid(kernel)
    msg_id = kernel.send(code)
    wait_until(lambda: processes_running(child, group), f"{child} to start")
    kernel.manager.interrupt_kernel()
    wait_until(lambda: not processes_running(child, group), f"{child} to end")
    return kernel.collect(msg_id, timeout=ENDS_WITHIN_SECONDS)


def test_interrupting_os_system_ends_its_child(each_kernel: Kernel) -> None:
    child = unique_sleep()
    code = f"import os\nstatus = os.system({' '.join(child)!r})\nprint('after', status)"
    execution = interrupt_child(each_kernel, code, child)
    if each_kernel.is_ours:
        # Deliberately different: the interrupt also ends the cell. The
        # child's SIGINT ends os.system, and the cell's KeyboardInterrupt is
        # raised as it returns, so a loop of commands stops too.
        assert execution.status == "error"
        assert execution.reply["content"]["ename"] == "KeyboardInterrupt"
    else:
        # ipykernel's SIGINT is ignored by glibc's system() in the kernel
        # while it waits: os.system returns the child's status and the cell
        # goes on.
        assert execution.status == "ok", execution.reply["content"]
        assert execution.stream().startswith("after ")


def test_interrupting_a_bash_cell_ends_its_script(each_kernel: Kernel) -> None:
    child = unique_sleep()
    code = f"%%bash\n{' '.join(child)}\necho after the sleep\n"
    execution = interrupt_child(each_kernel, code, child)
    assert "after the sleep" not in execution.stream()
    assert each_kernel.execute("1 + 1").status == "ok"


CHILD_WAITING_FOR_SIGINT = (
    "import time\n"
    "try:\n"
    "    print('ready', flush=True)\n"
    "    time.sleep(600)\n"
    "except KeyboardInterrupt:\n"
    "    print('child interrupted')\n"
)


def test_a_child_ends_on_send_signal_sigint(each_kernel: Kernel) -> None:
    code = (
        "import signal, subprocess, sys\n"
        f"child = subprocess.Popen([sys.executable, '-c', {CHILD_WAITING_FOR_SIGINT!r}],\n"
        "                         stdout=subprocess.PIPE, text=True)\n"
        "assert child.stdout.readline() == 'ready\\n'\n"
        "child.send_signal(signal.SIGINT)\n"
        f"out, _ = child.communicate(timeout={ENDS_WITHIN_SECONDS})\n"
        "print(out.strip(), child.returncode)\n"
    )
    execution = each_kernel.execute(code, timeout=ENDS_WITHIN_SECONDS + 30)
    assert execution.status == "ok", execution.reply["content"]
    assert execution.stream() == "child interrupted 0\n"


# Each spawns `grep SigBlk /proc/self/status` its own way, which prints the
# child's blocked signals as hex; the cell prints that.
SPAWNERS = {
    "subprocess": (
        "import subprocess\n"
        "print(subprocess.run(['grep', 'SigBlk', '/proc/self/status'],\n"
        "                     capture_output=True, text=True).stdout, end='')\n"
    ),
    "subprocess from a thread": (
        "import subprocess, threading\n"
        "out = []\n"
        "t = threading.Thread(target=lambda: out.append(subprocess.run(\n"
        "    ['grep', 'SigBlk', '/proc/self/status'], capture_output=True, text=True).stdout))\n"
        "t.start(); t.join()\n"
        "print(out[0], end='')\n"
    ),
    "os.system": (
        "import os, tempfile\n"
        "with tempfile.NamedTemporaryFile('r') as f:\n"
        "    os.system(f'grep SigBlk /proc/self/status > {f.name}')\n"
        "    print(f.read(), end='')\n"
    ),
    "os.posix_spawn": (
        "import os\n"
        "r, w = os.pipe()\n"
        "pid = os.posix_spawnp('grep', ['grep', 'SigBlk', '/proc/self/status'], os.environ,\n"
        "                      file_actions=[(os.POSIX_SPAWN_DUP2, w, 1)])\n"
        "os.close(w); os.waitpid(pid, 0)\n"
        "print(os.read(r, 100).decode(), end='')\n"
    ),
}


@pytest.mark.parametrize("spawner", SPAWNERS)
def test_children_start_with_sigint_unblocked(each_shared_kernel: Kernel, spawner: str) -> None:
    execution = each_shared_kernel.execute(SPAWNERS[spawner])
    assert execution.status == "ok", execution.reply["content"]
    label, mask = execution.stream().split()
    assert label == "SigBlk:"
    assert int(mask, 16) & SIGINT_BIT == 0, f"SIGINT blocked in the child: {mask}"


def test_threads_a_cell_starts_have_sigint_unblocked(each_shared_kernel: Kernel) -> None:
    code = (
        "import signal, threading\n"
        "def sigint_blocked():\n"
        "    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])\n"
        "seen = []\n"
        "t = threading.Thread(target=lambda: seen.append(sigint_blocked()))\n"
        "t.start(); t.join()\n"
        "print(seen, sigint_blocked())\n"
    )
    execution = each_shared_kernel.execute(code)
    assert execution.status == "ok", execution.reply["content"]
    assert execution.stream() == "[False] False\n"


# The number of clock_nanosleep, the system call time.sleep blocks in.
CLOCK_NANOSLEEP = {"x86_64": 230, "aarch64": 115}.get(platform.machine())


def in_clock_nanosleep(pid: int) -> bool:
    """Whether the main thread of process pid blocks in time.sleep."""
    return Path(f"/proc/{pid}/syscall").read_text().split()[0] == str(CLOCK_NANOSLEEP)


@pytest.mark.skipif(CLOCK_NANOSLEEP is None, reason="clock_nanosleep's number unknown here")
def test_kill_int_to_the_kernel_interrupts_a_sleep(each_kernel: Kernel) -> None:
    msg_id = each_kernel.send("import time\nprint('started', flush=True)\ntime.sleep(600)")
    wait_for_started(each_kernel, msg_id)
    # Once the sleep has begun: in CPython (and so in both kernels) a SIGINT
    # that lands inside the call to time.sleep, after its last check for
    # signals and before clock_nanosleep, is seen only when the sleep ends.
    pid = kernel_pid(each_kernel)
    wait_until(lambda: in_clock_nanosleep(pid), "the kernel to sleep")
    os.kill(pid, signal.SIGINT)
    execution = each_kernel.collect(msg_id)
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "KeyboardInterrupt"
    assert [e["content"]["ename"] for e in execution.of_type("error")] == ["KeyboardInterrupt"]
    assert each_kernel.execute("1 + 1").status == "ok"


def wait_for_started(kernel: Kernel, msg_id: str) -> None:
    while True:
        msg = kernel.client.get_iopub_msg(timeout=30)
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "stream"
            and "started" in msg["content"]["text"]
        ):
            return


def test_a_cell_that_sends_itself_sigint_is_interrupted(each_shared_kernel: Kernel) -> None:
    # CPython delivers a SIGINT a thread sends its own process before kill()
    # returns, and os.kill checks for it at once: the sleep never begins.
    execution = each_shared_kernel.execute(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(600)"
    )
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "KeyboardInterrupt"
    assert [e["content"]["ename"] for e in execution.of_type("error")] == ["KeyboardInterrupt"]


def test_a_caught_sigint_raises_once(each_shared_kernel: Kernel) -> None:
    # A second KeyboardInterrupt would come from a second trip of Python's
    # handler for the same signal; it would be raised at the loop's next
    # check, which the busy loop makes sure comes (for 0.5 s).
    code = (
        "import os, signal, time\n"
        "caught = 0\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(600)\n"
        "except KeyboardInterrupt:\n"
        "    caught += 1\n"
        "end = time.monotonic() + 0.5\n"
        "while time.monotonic() < end:\n"
        "    pass\n"
        "print('caught', caught)\n"
    )
    execution = each_shared_kernel.execute(code)
    assert execution.status == "ok", execution.reply["content"]
    assert execution.stream() == "caught 1\n"


def test_the_users_sigint_handler_runs(each_shared_kernel: Kernel) -> None:
    code = (
        "import os, signal\n"
        "seen = []\n"
        "previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))\n"
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "finally:\n"
        "    signal.signal(signal.SIGINT, previous)\n"
        "print(seen, previous is signal.default_int_handler)\n"
    )
    execution = each_shared_kernel.execute(code)
    assert execution.status == "ok", execution.reply["content"]
    assert execution.stream() == f"[{int(signal.SIGINT)}] True\n"
    after = each_shared_kernel.execute(
        "try:\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(600)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted')\n"
    )
    assert after.stream() == "interrupted\n"


# The address of the C function that handles SIGINT in the kernel process.
C_SIGINT_HANDLER = (
    "import ctypes, signal\n"
    "action = ctypes.create_string_buffer(512)  # a struct sigaction, and more\n"
    "assert ctypes.CDLL(None, use_errno=True).sigaction(signal.SIGINT, None, action) == 0\n"
    "print(ctypes.c_void_p.from_buffer(action).value)\n"
)


def test_restoring_default_int_handler_restores_the_kernels_c_handler(
    each_shared_kernel: Kernel,
) -> None:
    # Ours: signal.signal(SIGINT, default_int_handler) installs CPython's C
    # handler; the kernel takes SIGINT back once the cell has run. ipykernel
    # has CPython's all along.
    before = each_shared_kernel.execute(C_SIGINT_HANDLER)
    assert before.status == "ok", before.reply
    changed = each_shared_kernel.execute(
        "import signal\n"
        "signal.signal(signal.SIGINT, lambda *args: None)\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    )
    assert changed.status == "ok", changed.reply
    after = each_shared_kernel.execute(C_SIGINT_HANDLER)
    assert after.stream() == before.stream()


@pytest.mark.parametrize("handler", ["lambda signum, frame: None", "signal.SIG_IGN"])
def test_a_users_sigint_handler_lasts_for_its_cell(
    each_shared_kernel: Kernel, handler: str
) -> None:
    # As ipykernel: whatever a cell made of SIGINT, the next cell can be
    # interrupted.
    execution = each_shared_kernel.execute(
        f"import os, signal, time\nsignal.signal(signal.SIGINT, {handler})\n"
    )
    assert execution.status == "ok", execution.reply["content"]
    after = each_shared_kernel.execute(
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(600)\n"
    )
    assert after.stream() == "True\n"
    assert after.reply["content"]["ename"] == "KeyboardInterrupt"


PAGER_VARIABLES = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "TERM": "xterm-color",
    "CLICOLOR": "1",
    "CLICOLOR_FORCE": "1",
    "FORCE_COLOR": "1",
}


@pytest.mark.parametrize("name", BOTH_KERNELS)
def test_children_get_ipykernels_environment(name: str) -> None:
    # As ipykernel: set when the shell starts, over what the kernel was
    # started with (a PAGER=less from a login shell would bring the pager
    # back); a cell may still change them.
    env = {**os.environ, "PAGER": "less", "TERM": "dumb"}
    kernel = start_kernel(name, env=env)
    try:
        execution = kernel.execute("!env")
        assert execution.status == "ok", execution.reply["content"]
        seen = dict(
            line.split("=", 1)
            for line in execution.stream().splitlines()
            if line.split("=", 1)[0] in PAGER_VARIABLES
        )
        assert seen == PAGER_VARIABLES
        changed = kernel.execute("%env PAGER=more\n!env")
        assert "PAGER=more\n" in changed.stream()
    finally:
        stop_kernel(kernel)
