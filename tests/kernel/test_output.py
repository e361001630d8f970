"""Output: streams, display, errors, and output from threads.

Output from the main thread belongs to the request it runs; output from any
other thread belongs to the current execute request (as with ipykernel: a cell
that has finished cannot show output in JupyterLab anyway). Whatever thread
publishes, every message must arrive, intact and in order."""

from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

from conftest import Kernel


def test_a_partial_line_is_published_when_the_cell_ends(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute("print('no newline', end='')")
    assert execution.stream() == "no newline"


def test_streams_and_displays_keep_their_order(shared_kernel: Kernel) -> None:
    code = (
        "from IPython.display import display\n"
        "import sys\n"
        "print('one')\n"
        "display('two')\n"
        "print('three', file=sys.stderr)\n"
        "print('four', end='')\n"
        "display('five')\n"
    )
    execution = shared_kernel.execute(code)
    kinds = [
        (m["msg_type"], m["content"].get("text") or m["content"]["data"]["text/plain"])
        for m in execution.outputs
    ]
    assert kinds == [
        ("stream", "one\n"),
        ("display_data", "'two'"),
        ("stream", "three\n"),
        ("stream", "four"),
        ("display_data", "'five'"),
    ]


def test_update_display_and_clear_output(shared_kernel: Kernel) -> None:
    code = (
        "from IPython.display import display, clear_output\n"
        "handle = display('first', display_id=True)\n"
        "handle.update('second')\n"
        "clear_output(wait=True)\n"
    )
    execution = shared_kernel.execute(code)
    display, update, clear = execution.outputs
    assert display["msg_type"] == "display_data"
    assert update["msg_type"] == "update_display_data"
    display_id = display["content"]["transient"]["display_id"]
    assert update["content"]["transient"]["display_id"] == display_id
    assert update["content"]["data"]["text/plain"] == "'second'"
    assert clear["msg_type"] == "clear_output"
    assert clear["content"]["wait"] is True


def test_an_error_names_its_class_and_has_a_coloured_traceback(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute("def f():\n    raise KeyError('missing')\nf()")
    assert execution.status == "error"
    reply = execution.reply["content"]
    assert reply["ename"] == "KeyError"
    assert reply["evalue"] == "'missing'"
    (error,) = execution.of_type("error")
    assert error["content"]["ename"] == "KeyError"
    traceback = "\n".join(error["content"]["traceback"])
    assert "\x1b[" in traceback  # IPython's colours
    plain = re.sub(r"\x1b\[[0-9;]*m", "", traceback)
    assert re.search(r"Cell In\[\d+\], line 3", plain)
    assert "raise KeyError('missing')" in plain


def test_a_syntax_error_is_an_error_reply(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute("1 +* 2")
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "SyntaxError"


def test_a_silent_cell_shows_only_its_error_and_keeps_the_count(shared_kernel: Kernel) -> None:
    before = shared_kernel.execute("1").reply["content"]["execution_count"]
    silent = shared_kernel.execute("1 / 0", silent=True)
    assert silent.status == "error"
    assert [m["msg_type"] for m in silent.outputs] == ["error"]
    after = shared_kernel.execute("1").reply["content"]["execution_count"]
    assert after == before + 1


def test_in_and_out_follow_the_execution_count(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute("'marker'")
    count = execution.reply["content"]["execution_count"]
    (result,) = execution.of_type("execute_result")
    assert result["content"]["execution_count"] == count
    out = shared_kernel.execute(f"Out[{count}], In[{count}]")
    (result,) = out.of_type("execute_result")
    assert result["content"]["data"]["text/plain"] == "('marker', \"'marker'\")"


def test_user_expressions_are_evaluated(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute("x = 21", user_expressions={"double": "x * 2"})
    double = execution.reply["content"]["user_expressions"]["double"]
    assert double["status"] == "ok"
    assert double["data"]["text/plain"] == "42"


def test_stdout_behaves_like_a_text_stream(shared_kernel: Kernel) -> None:
    code = (
        "import sys\n"
        "n = sys.stdout.write('hé\\n')\n"
        "print(n, sys.stdout.isatty(), sys.stdout.encoding, sys.stdout.fileno(),"
        " sys.stderr.fileno(), sys.stdout.writable())\n"
        "sys.stdout.writelines(['x', 'y\\n'])\n"
    )
    assert shared_kernel.execute(code).stream() == "hé\n3 False utf-8 1 2 True\nxy\n"
    assert shared_kernel.execute("import sys; sys.stdout.write(1)").status == "error"


def test_output_of_a_thread_goes_to_the_cell_running_it(shared_kernel: Kernel) -> None:
    code = (
        "import threading\n"
        "from IPython.display import display\n"
        "def work():\n"
        "    print('from the thread')\n"
        "    display('displayed by the thread')\n"
        "t = threading.Thread(target=work)\n"
        "t.start(); t.join()\n"
    )
    execution = shared_kernel.execute(code)
    assert execution.stream() == "from the thread\n"
    (display,) = execution.of_type("display_data")
    assert display["content"]["data"]["text/plain"] == "'displayed by the thread'"


def test_a_thread_that_outlives_its_cell_prints_to_the_current_cell(shared_kernel: Kernel) -> None:
    shared_kernel.execute(
        "import threading\n"
        "go = threading.Event()\n"
        "done = threading.Event()\n"
        "def later():\n"
        "    go.wait()\n"
        "    print('late output')\n"
        "    done.set()\n"
        "threading.Thread(target=later, daemon=True).start()\n"
    )
    execution = shared_kernel.execute("go.set(); done.wait(10)")
    assert execution.stream() == "late output\n"


def test_a_thread_printing_while_the_kernel_is_idle(shared_kernel: Kernel) -> None:
    msg_id = shared_kernel.send(
        "import threading, time, sys\n"
        "def idle_print():\n"
        "    time.sleep(0.3)\n"
        "    print('while idle')\n"
        "    sys.stdout.flush()\n"
        "threading.Thread(target=idle_print).start()\n"
    )
    assert shared_kernel.collect(msg_id).status == "ok"
    messages = shared_kernel.drain_iopub(2.0)
    streams = [m for m in messages if m["msg_type"] == "stream"]
    assert [m["content"]["text"] for m in streams] == ["while idle\n"]
    assert streams[0]["parent_header"]["msg_id"] == msg_id


def test_many_threads_printing_at_once_lose_nothing(shared_kernel: Kernel) -> None:
    threads, lines = 8, 300
    code = (
        "import threading\n"
        "def spam(n):\n"
        f"    for i in range({lines}):\n"
        "        print(f'<{n}:{i}>')\n"
        f"ts = [threading.Thread(target=spam, args=(n,)) for n in range({threads})]\n"
        "for t in ts: t.start()\n"
        f"for i in range({lines}): print(f'<main:{{i}}>')\n"
        "for t in ts: t.join()\n"
    )
    started = time.monotonic()
    execution = shared_kernel.execute(code, timeout=120)
    assert execution.status == "ok"
    text = execution.stream()
    # print() writes the text and the newline separately, so lines of
    # different threads may interleave, as in a terminal; nothing is lost.
    tokens = Counter(re.findall(r"<(\w+):(\d+)>", text))
    expected = Counter((str(n), str(i)) for n in range(threads) for i in range(lines))
    expected.update(("main", str(i)) for i in range(lines))
    assert tokens == expected
    assert text.count("\n") == (threads + 1) * lines
    assert time.monotonic() - started < 120


def test_load_puts_code_in_the_next_cell(shared_kernel: Kernel, tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("answer = 42\n")
    execution = shared_kernel.execute(f"%load {script}")
    (payload,) = execution.reply["content"]["payload"]
    assert payload["source"] == "set_next_input"
    assert payload["text"].endswith("answer = 42\n")
    assert payload["replace"] is True
