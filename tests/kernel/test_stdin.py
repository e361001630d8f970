"""input() and getpass.getpass() ask the frontend over the stdin channel."""

from __future__ import annotations

import queue
import time

import pytest
from conftest import Kernel, Message


def next_input_request(kernel: Kernel) -> Message:
    msg: Message = kernel.client.get_stdin_msg(timeout=30)
    assert msg["msg_type"] == "input_request"
    return msg


def test_input_round_trip(shared_kernel: Kernel) -> None:
    msg_id = shared_kernel.send("name = input('Your name? ')\nprint('hello', name)",
                                allow_stdin=True)
    request = next_input_request(shared_kernel)
    assert request["content"] == {"prompt": "Your name? ", "password": False}
    assert request["parent_header"]["msg_id"] == msg_id
    shared_kernel.client.input("Ada")
    execution = shared_kernel.collect(msg_id)
    assert execution.status == "ok"
    assert execution.stream() == "hello Ada\n"


def test_getpass_asks_for_a_password(shared_kernel: Kernel) -> None:
    msg_id = shared_kernel.send("import getpass\nsecret = getpass.getpass()\nprint(len(secret))",
                                allow_stdin=True)
    request = next_input_request(shared_kernel)
    assert request["content"] == {"prompt": "Password: ", "password": True}
    shared_kernel.client.input("hunter2")
    assert shared_kernel.collect(msg_id).stream() == "7\n"


def test_output_before_the_prompt_is_flushed_first(shared_kernel: Kernel) -> None:
    msg_id = shared_kernel.send("print('question coming', end='')\ninput()", allow_stdin=True)
    next_input_request(shared_kernel)
    seen = shared_kernel.drain_iopub(0.5)
    assert "question coming" in [
        m["content"].get("text") for m in seen if m["msg_type"] == "stream"
    ]
    shared_kernel.client.input("")
    assert shared_kernel.collect(msg_id).status == "ok"


def test_input_without_stdin_is_a_clear_error(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute("input('never answered')", allow_stdin=False)
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "StdinNotImplementedError"
    assert "does not support input requests" in execution.reply["content"]["evalue"]


def test_an_interrupt_ends_the_wait_for_input(shared_kernel: Kernel) -> None:
    msg_id = shared_kernel.send("input('waiting')", allow_stdin=True)
    next_input_request(shared_kernel)
    interrupted_at = time.monotonic()
    shared_kernel.manager.interrupt_kernel()
    execution = shared_kernel.collect(msg_id)
    assert execution.reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - interrupted_at < 1.0
    assert shared_kernel.execute("1 + 1").status == "ok"


def test_input_is_the_builtin_again_between_cells(shared_kernel: Kernel) -> None:
    shared_kernel.execute(
        "import builtins, getpass, threading, time\n"
        "seen = []\n"
        "def look_while_idle():\n"
        "    time.sleep(0.3)\n"
        "    seen.append((builtins.input.__module__, getpass.getpass.__module__))\n"
        "threading.Thread(target=look_while_idle).start()\n"
    )
    time.sleep(1.0)
    assert shared_kernel.execute("print(seen)").stream() == "[('builtins', 'getpass')]\n"


def test_a_reply_to_an_interrupted_input_does_not_answer_the_next(shared_kernel: Kernel) -> None:
    first_id = shared_kernel.send("input('first')", allow_stdin=True)
    first = next_input_request(shared_kernel)
    shared_kernel.manager.interrupt_kernel()
    assert shared_kernel.collect(first_id).reply["content"]["ename"] == "KeyboardInterrupt"

    second_id = shared_kernel.send("print(input('second'))", allow_stdin=True)
    second = next_input_request(shared_kernel)
    assert second["content"]["prompt"] == "second"
    session = shared_kernel.client.session
    # The frontend's late answer to the first prompt, then the answer to this one.
    late = session.msg("input_reply", {"value": "late"}, parent=first)
    shared_kernel.client.stdin_channel.send(late)
    answer = session.msg("input_reply", {"value": "answer"}, parent=second)
    shared_kernel.client.stdin_channel.send(answer)
    execution = shared_kernel.collect(second_id)
    assert execution.status == "ok", execution.reply
    assert execution.stream() == "answer\n"


THREAD_ASKS = (
    "import threading\n"
    "answers = []\n"
    "asker = threading.Thread(target=lambda: answers.append(input('from a thread? ')))\n"
    "asker.start()\n"
    "asker.join()\n"
    "print(answers)\n"
)


def test_input_from_a_thread_the_cell_started_asks_the_frontend(
        each_shared_kernel: Kernel) -> None:
    kernel = each_shared_kernel
    msg_id = kernel.send(THREAD_ASKS, allow_stdin=True)
    request = next_input_request(kernel)
    assert request["content"] == {"prompt": "from a thread? ", "password": False}
    assert request["parent_header"]["msg_id"] == msg_id
    kernel.client.input("yes")
    execution = kernel.collect(msg_id)
    assert execution.status == "ok", execution.reply
    assert execution.stream() == "['yes']\n"


def test_a_thread_of_a_cell_without_stdin_gets_the_clear_error(
        each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "import threading\nfound = []\n"
        "def ask():\n"
        "    try:\n        input('never sent')\n"
        "    except Exception as exc:\n        found.append(type(exc).__name__)\n"
        "asker = threading.Thread(target=ask)\nasker.start()\nasker.join()\nprint(found)\n",
        allow_stdin=False)
    assert execution.status == "ok", execution.reply
    assert execution.stream() == "['StdinNotImplementedError']\n"


def test_two_threads_asking_at_once_are_asked_one_after_the_other(
        shared_kernel: Kernel) -> None:
    """ipykernel's threads would share its stdin socket unguarded; here the
    second prompt is sent once the first is answered, and each answer
    reaches the thread that asked."""
    msg_id = shared_kernel.send(
        "import threading\nanswers = {}\n"
        "def ask(prompt):\n    answers[prompt] = input(prompt)\n"
        "askers = [threading.Thread(target=ask, args=(p,)) for p in ('a? ', 'b? ')]\n"
        "for asker in askers:\n    asker.start()\n"
        "for asker in askers:\n    asker.join()\n"
        "print(sorted(answers.items()))\n", allow_stdin=True)
    session = shared_kernel.client.session
    first = next_input_request(shared_kernel)
    with pytest.raises(queue.Empty):
        shared_kernel.client.get_stdin_msg(timeout=0.5)  # no second prompt yet
    shared_kernel.client.stdin_channel.send(
        session.msg("input_reply", {"value": "to " + first["content"]["prompt"]},
                    parent=first))
    second = next_input_request(shared_kernel)
    assert {first["content"]["prompt"], second["content"]["prompt"]} == {"a? ", "b? "}
    shared_kernel.client.stdin_channel.send(
        session.msg("input_reply", {"value": "to " + second["content"]["prompt"]},
                    parent=second))
    execution = shared_kernel.collect(msg_id)
    assert execution.status == "ok", execution.reply
    assert execution.stream() == "[('a? ', 'to a? '), ('b? ', 'to b? ')]\n"


def test_the_cell_asks_after_its_thread_was_answered(shared_kernel: Kernel) -> None:
    """The cell's own input() waits for its turn while a thread's prompt is
    open, and an interrupt ends that wait."""
    msg_id = shared_kernel.send(
        "import threading\nanswers = []\n"
        "asker = threading.Thread(target=lambda: answers.append(input('thread? ')))\n"
        "asker.start()\n"
        "import time\ntime.sleep(0.3)\n"
        "answers.append(input('cell? '))\nasker.join()\nprint(answers)\n",
        allow_stdin=True)
    first = next_input_request(shared_kernel)
    assert first["content"]["prompt"] == "thread? "
    with pytest.raises(queue.Empty):
        shared_kernel.client.get_stdin_msg(timeout=1.0)  # the cell waits its turn
    shared_kernel.client.input("t")
    assert next_input_request(shared_kernel)["content"]["prompt"] == "cell? "
    shared_kernel.client.input("c")
    assert shared_kernel.collect(msg_id).stream() == "['t', 'c']\n"

    # Interrupted while it waits for its turn: the cell ends; the thread,
    # which no interrupt reaches, still waits for its answer and gets it.
    msg_id = shared_kernel.send(
        "import threading, time\nanswers = []\n"
        "asker = threading.Thread(target=lambda: answers.append(input('thread? ')))\n"
        "asker.start()\ntime.sleep(0.3)\ninput('cell? ')\n", allow_stdin=True)
    next_input_request(shared_kernel)
    time.sleep(0.6)  # the cell is waiting for its turn
    shared_kernel.manager.interrupt_kernel()
    assert shared_kernel.collect(msg_id).reply["content"]["ename"] == "KeyboardInterrupt"
    assert shared_kernel.execute("print(asker.is_alive(), answers)").stream() == "True []\n"
    shared_kernel.client.input("late")
    execution = shared_kernel.execute("asker.join(10)\nprint(asker.is_alive(), answers)")
    assert execution.stream() == "False ['late']\n", execution.stream()
