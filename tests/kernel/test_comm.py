"""Comms: what ipywidgets talk through. The kernel provides them to Python
through the `comm` package, as xeus-python and ipykernel do."""

from __future__ import annotations

import time
import uuid
from typing import Any

from conftest import Kernel, Message


def send_to_kernel(kernel: Kernel, msg_type: str, content: dict[str, Any],
                   buffers: list[bytes] | None = None) -> str:
    """Sends a shell message as a frontend would; returns its msg_id."""
    msg = kernel.client.session.msg(msg_type, content)
    msg["buffers"] = buffers or []
    kernel.client.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


def iopub_until(kernel: Kernel, predicate: Any, timeout: float = 10) -> list[Message]:
    """IOPub messages up to and including the first that satisfies predicate."""
    seen = []
    deadline = time.monotonic() + timeout
    while True:
        msg = kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        seen.append(msg)
        if predicate(msg):
            return seen


def test_an_ipywidget_opens_a_comm_and_receives_a_message(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute(
        "import ipywidgets as widgets\nslider = widgets.IntSlider(value=3)\nslider"
    )
    assert execution.status == "ok"
    opens = [m for m in execution.outputs if m["msg_type"] == "comm_open"]
    slider_open = next(m for m in opens if m["content"]["data"]["state"].get("value") == 3)
    assert slider_open["content"]["target_name"] == "jupyter.widget"
    comm_id = slider_open["content"]["comm_id"]
    # The frontend moves the slider.
    send_to_kernel(shared_kernel, "comm_msg", {
        "comm_id": comm_id,
        "data": {"method": "update", "state": {"value": 7}, "buffer_paths": []},
    })
    result = shared_kernel.execute("slider.value").of_type("execute_result")
    assert result[0]["content"]["data"]["text/plain"] == "7"


def test_a_widget_callback_prints_to_its_comm_message(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute(
        "import ipywidgets as widgets\n"
        "button = widgets.Button()\n"
        "button.on_click(lambda b: print('clicked'))\n"
        "button.comm.comm_id"
    )
    comm_id = execution.of_type("execute_result")[0]["content"]["data"]["text/plain"].strip("'")
    click_id = send_to_kernel(shared_kernel, "comm_msg", {
        "comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}},
    })
    seen = iopub_until(shared_kernel, lambda m: m["msg_type"] == "stream")
    assert seen[-1]["content"]["text"] == "clicked\n"
    assert seen[-1]["parent_header"]["msg_id"] == click_id


def test_the_output_widget_captures_the_cell_it_runs_in(shared_kernel: Kernel) -> None:
    msg_id = shared_kernel.send(
        "import ipywidgets as widgets\n"
        "out = widgets.Output()\n"
        "with out:\n"
        "    print('captured')\n"
    )
    execution = shared_kernel.collect(msg_id)
    states = [m["content"]["data"].get("state", {}) for m in execution.of_type("comm_msg")]
    # The Output widget tells the frontend which request's output to capture.
    assert {"msg_id": msg_id} in states
    assert execution.stream() == "captured\n"


def test_the_frontend_opens_messages_and_closes_a_comm(shared_kernel: Kernel) -> None:
    shared_kernel.execute(
        "import comm\n"
        "events = []\n"
        "def echo_target(c, msg):\n"
        "    events.append(('open', msg['content']['data']))\n"
        "    def echo(m):\n"
        "        c.send({'echo': m['content']['data'],\n"
        "                'buffers': [bytes(b).decode() for b in m['buffers']]},\n"
        "               buffers=[b'from the kernel'])\n"
        "    c.on_msg(echo)\n"
        "    c.on_close(lambda m: events.append(('close', m['content']['data'])))\n"
        "comm.get_comm_manager().register_target('echo', echo_target)\n"
    )
    comm_id = uuid.uuid4().hex
    send_to_kernel(shared_kernel, "comm_open",
                   {"comm_id": comm_id, "target_name": "echo", "data": {"hello": 1}})
    msg_id = send_to_kernel(shared_kernel, "comm_msg", {"comm_id": comm_id, "data": {"x": 2}},
                            [b"from the frontend"])
    seen = iopub_until(shared_kernel, lambda m: m["msg_type"] == "comm_msg")
    echo = seen[-1]
    assert echo["parent_header"]["msg_id"] == msg_id
    assert echo["content"]["comm_id"] == comm_id
    assert echo["content"]["data"] == {"echo": {"x": 2}, "buffers": ["from the frontend"]}
    assert [bytes(b) for b in echo["buffers"]] == [b"from the kernel"]

    shared_kernel.client.comm_info(target_name="echo")
    info = shared_kernel.client.get_shell_msg(timeout=10)
    assert info["content"]["comms"] == {comm_id: {"target_name": "echo"}}

    send_to_kernel(shared_kernel, "comm_close", {"comm_id": comm_id, "data": {"bye": 3}})
    assert shared_kernel.execute("print(events)").stream() == (
        "[('open', {'hello': 1}), ('close', {'bye': 3})]\n"
    )
    shared_kernel.client.comm_info(target_name="echo")
    assert shared_kernel.client.get_shell_msg(timeout=10)["content"]["comms"] == {}


def test_a_comm_to_an_unknown_target_is_closed(shared_kernel: Kernel) -> None:
    comm_id = uuid.uuid4().hex
    send_to_kernel(shared_kernel, "comm_open",
                   {"comm_id": comm_id, "target_name": "nobody-listens", "data": {}})
    seen = iopub_until(shared_kernel, lambda m: m["msg_type"] == "comm_close")
    assert seen[-1]["content"]["comm_id"] == comm_id


def test_the_kernel_opens_sends_and_closes(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute(
        "import comm\n"
        "c = comm.create_comm(target_name='kernel-side', data={'a': 1}, metadata={'m': 2})\n"
        "c.send({'b': 2})\n"
        "c.close()\n"
        "c.send({'after': 'close'})\n"
    )
    kinds = [(m["msg_type"], m["content"]["data"]) for m in execution.outputs]
    assert kinds == [("comm_open", {"a": 1}), ("comm_msg", {"b": 2}), ("comm_close", {})]
    assert execution.outputs[0]["metadata"] == {"m": 2}
    assert execution.outputs[0]["content"]["target_name"] == "kernel-side"


def test_widgets_closed_from_their_own_callback(shared_kernel: Kernel) -> None:
    # The callback drops the last reference to the widget that called it.
    execution = shared_kernel.execute(
        "import ipywidgets as widgets, gc\n"
        "button = widgets.Button()\n"
        "def close_me(b):\n"
        "    global button\n"
        "    b.close(); button = None; gc.collect()\n"
        "button.on_click(close_me)\n"
        "button.comm.comm_id"
    )
    comm_id = execution.of_type("execute_result")[0]["content"]["data"]["text/plain"].strip("'")
    send_to_kernel(shared_kernel, "comm_msg", {
        "comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}},
    })
    iopub_until(shared_kernel, lambda m: m["msg_type"] == "comm_close")
    assert shared_kernel.execute("import gc; gc.collect(); 'alive'").status == "ok"


def comm_ids_listed(kernel: Kernel, target_name: str) -> set[str]:
    msg_id = send_to_kernel(kernel, "comm_info_request", {"target_name": target_name})
    while True:
        reply = kernel.client.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            return set(reply["content"]["comms"])


def test_a_comm_closed_by_the_kernel_is_gone_at_once(shared_kernel: Kernel) -> None:
    # comm_info is asked right after the cell, before any other cell could
    # tidy up.
    execution = shared_kernel.execute(
        "import comm, gc, weakref\n"
        "class Callback:\n"
        "    def __call__(self, msg): pass\n"
        "callback = Callback()\n"
        "released = weakref.ref(callback)\n"
        "closing = comm.create_comm(target_name='closing')\n"
        "closing.on_msg(callback)\n"
        "del callback\n"
        "closing.close()\n"
        "gc.collect()\n"
        "print(released() is None, comm.get_comm_manager().get_comm(closing.comm_id))\n"
        "closing.comm_id"
    )
    assert execution.status == "ok", execution.reply["content"]
    assert execution.stream() == "True None\n"
    comm_id = execution.of_type("execute_result")[0]["content"]["data"]["text/plain"].strip("'")
    assert comm_id not in comm_ids_listed(shared_kernel, "closing")


def test_a_comm_closed_in_a_comm_callback_is_gone_when_it_returns(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute(
        "import comm\n"
        "selfclosing = comm.create_comm(target_name='selfclosing')\n"
        "selfclosing.on_msg(lambda msg: selfclosing.close())\n"
        "selfclosing.comm_id"
    )
    comm_id = execution.of_type("execute_result")[0]["content"]["data"]["text/plain"].strip("'")
    assert comm_id in comm_ids_listed(shared_kernel, "selfclosing")
    send_to_kernel(shared_kernel, "comm_msg", {"comm_id": comm_id, "data": {}})
    # comm_info comes after the comm_msg on the same socket: no cell ran between.
    assert comm_id not in comm_ids_listed(shared_kernel, "selfclosing")


def test_get_comm_finds_an_open_comm(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute(
        "import comm\n"
        "found = comm.create_comm(target_name='found')\n"
        "manager = comm.get_comm_manager()\n"
        "print(manager.get_comm(found.comm_id) is found, manager.get_comm('no such id'))"
    )
    assert execution.stream() == "True None\n"


def test_strided_buffers_are_sent_in_c_order(shared_kernel: Kernel) -> None:
    execution = shared_kernel.execute(
        "import comm\n"
        "strided = comm.create_comm(target_name='strided')\n"
        "data = bytes(range(12))\n"
        "strided.send({}, buffers=[memoryview(data)[::2], memoryview(bytearray(b'ab'))])\n"
    )
    assert execution.status == "ok", execution.reply["content"]
    [sent] = [m for m in execution.outputs if m["msg_type"] == "comm_msg"]
    assert [bytes(b) for b in sent["buffers"]] == [bytes(range(0, 12, 2)), b"ab"]


def test_comms_opened_from_threads_while_the_frontend_talks(shared_kernel: Kernel) -> None:
    # Threads open and close comms (writing the registry) while the main
    # thread dispatches comm messages (reading it), until all have arrived.
    # (Each comm opened and closed is two IOPub messages: the pause keeps
    # their number within what the test client reads quickly.)
    messages = 200
    execution = shared_kernel.execute(
        "import comm, threading, time\n"
        "received = []\n"
        "def churn():\n"
        "    deadline = time.monotonic() + 120\n"
        f"    while len(received) < {messages} and time.monotonic() < deadline:\n"
        "        comm.create_comm(target_name='churn').close()\n"
        "        time.sleep(0.001)\n"
        "churners = [threading.Thread(target=churn) for _ in range(4)]\n"
        "for t in churners: t.start()\n"
        "steady = comm.create_comm(target_name='steady')\n"
        "steady.on_msg(received.append)\n"
        "steady.comm_id"
    )
    comm_id = execution.of_type("execute_result")[0]["content"]["data"]["text/plain"].strip("'")
    for i in range(messages):
        send_to_kernel(shared_kernel, "comm_msg", {"comm_id": comm_id, "data": {"i": i}})
    result = shared_kernel.execute(
        "for t in churners: t.join()\nprint(len(received))", timeout=180
    )
    assert result.stream() == f"{messages}\n"
