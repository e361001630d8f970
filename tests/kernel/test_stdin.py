"""input() and getpass.getpass() ask the frontend over the stdin channel."""

from __future__ import annotations

import time

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
