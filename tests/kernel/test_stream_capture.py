"""Output as ipykernel shows it: text without a newline shows while the cell
runs (timed flush); what is written to file descriptors 1 and 2 (subprocesses,
C code, forked workers) shows in the running cell; requests other than execute
publish under their own parent; a thread printing while the kernel is idle
never shows in the next cell."""

from __future__ import annotations

import time
from pathlib import Path

from conftest import Kernel, Message

# Generous: these are "eventually" bounds, under CPU load.
EVENTUALLY = 60


def next_stream(kernel: Kernel, parent: str) -> Message:
    deadline = time.monotonic() + EVENTUALLY
    while True:
        msg = kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == parent and msg["msg_type"] == "stream":
            return msg


def wait_for_file(path: Path) -> str:
    return (
        "import os, time\n"
        f"deadline = time.monotonic() + {EVENTUALLY}\n"
        f"while not os.path.exists({str(path)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
    )


def test_text_without_newline_shows_while_the_cell_runs(
    shared_kernel: Kernel, tmp_path: Path
) -> None:
    steps = 3
    code = "\n".join(
        f"print('{i}', end='')\n" + wait_for_file(tmp_path / str(i)) for i in range(steps)
    )
    msg_id = shared_kernel.send(code)
    for i in range(steps):
        # The cell waits for this file, so the text came from the timed flush.
        assert next_stream(shared_kernel, msg_id)["content"]["text"] == str(i)
        (tmp_path / str(i)).touch()
    result = shared_kernel.collect(msg_id, timeout=EVENTUALLY)
    assert result.status == "ok"


def test_file_descriptor_output_shows_in_the_cell(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "import os, subprocess, sys\n"
        "print('python')\n"
        "os.write(1, b'fd one\\n')\n"
        "os.write(2, b'fd two\\n')\n"
        "subprocess.run(['echo', 'from a child'], check=True)\n"
        "subprocess.run([sys.executable, '-c', 'import sys; sys.stderr.write(\"child err\\\\n\")'],"
        " check=True)\n"
        "print('end')"
    )
    assert result.status == "ok", result.reply["content"]
    assert result.stream("stdout") == "python\nfd one\nfrom a child\nend\n"
    assert result.stream("stderr") == "fd two\nchild err\n"


def test_c_stdio_output_shows_in_the_cell(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "import ctypes\n"
        "libc = ctypes.CDLL(None)\n"
        "libc.printf(b'from C %d\\n', 42)"
    )
    assert result.status == "ok", result.reply["content"]
    assert "from C 42\n" in result.stream("stdout")


def test_descriptor_and_python_writes_keep_their_order(shared_kernel: Kernel) -> None:
    # The stream's thread read the pipe when it got to it: a print right
    # after a write to the descriptor (or after a forked worker's line) could
    # be published before that write. ipykernel 7.2 still does (docs/kernel.md).
    result = shared_kernel.execute(
        "import os, sys\n"
        "for i in range(300):\n"
        "    os.write(1, b'fd %d\\n' % i)\n"
        "    print('python', i)\n"
        "    os.write(2, b'fd err %d\\n' % i)\n"
        "    print('python err', i, file=sys.stderr)\n",
        timeout=EVENTUALLY,
    )
    assert result.status == "ok", result.reply["content"]
    assert result.stream("stdout") == "".join(f"fd {i}\npython {i}\n" for i in range(300))
    assert result.stream("stderr") == "".join(
        f"fd err {i}\npython err {i}\n" for i in range(300))


def test_forked_workers_print_into_the_cell(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "import multiprocessing\n"
        "with multiprocessing.get_context('fork').Pool(2) as pool:\n"
        "    pool.map(print, ['worker a', 'worker b'])\n"
        "print('done')",
        timeout=EVENTUALLY,
    )
    assert result.status == "ok", result.reply["content"]
    lines = result.stream("stdout").splitlines()
    assert sorted(lines) == ["done", "worker a", "worker b"]
    assert lines[-1] == "done"


def test_bytes_that_are_not_utf8_become_replacement_characters(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "import os\n"
        "os.write(1, b'bad \\xff byte, split \\xc3')\n"
        "os.write(1, b'\\xa9 ok\\n')"
    )
    assert result.status == "ok", result.reply["content"]
    assert result.stream() == "bad \ufffd byte, split \u00e9 ok\n"


def test_a_thread_printing_while_idle_stays_in_its_cell(
    shared_kernel: Kernel, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    first = shared_kernel.send(
        "import threading\n"
        "def later():\n" + "".join("    " + line + "\n" for line in wait_for_file(go).splitlines())
        + "    print('late', end='')\n"
        "threading.Thread(target=later, daemon=True).start()"
    )
    assert shared_kernel.collect(first).status == "ok"
    go.touch()  # the kernel is idle now
    assert next_stream(shared_kernel, first)["content"]["text"] == "late"
    second = shared_kernel.execute("print('second')")
    assert second.stream() == "second\n"


def test_completion_output_belongs_to_the_completion_request(shared_kernel: Kernel) -> None:
    # A completer that prints (as some libraries' __dir__ or properties do).
    shared_kernel.execute(
        "class Noisy:\n"
        "    def __dir__(self):\n"
        "        print('completing')\n"
        "        return ['alpha']\n"
        "noisy = Noisy()"
    )
    msg_id = shared_kernel.client.complete("noisy.al", 8)
    reply = shared_kernel.client.get_shell_msg(timeout=EVENTUALLY)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert any(match.endswith("alpha") for match in reply["content"]["matches"])
    assert next_stream(shared_kernel, msg_id)["content"]["text"] == "completing\n"
