"""get_ipython().kernel's io_loop and set_parent, which libraries use of
ipykernel's kernel object. Each test runs against both kernels."""

from __future__ import annotations

import time

from conftest import Kernel


def test_io_loop_add_callback_from_a_thread_runs_on_the_main_thread_loop(
        each_shared_kernel: Kernel) -> None:
    started = each_shared_kernel.execute(
        "import asyncio, threading\n"
        "kernel = get_ipython().kernel\n"
        "ran = []\n"
        "def on_loop(tag, *, twice):\n"
        "    ran.append((tag * twice, threading.current_thread() is threading.main_thread(),\n"
        "                asyncio.get_running_loop() is loop))\n"
        "loop = asyncio.get_running_loop()\n"
        "threading.Thread(target=kernel.io_loop.add_callback,\n"
        "                 args=(on_loop, 'a'), kwargs={'twice': 2}).start()"
    )
    assert started.status == "ok", started.reply["content"]
    time.sleep(0.3)
    after = each_shared_kernel.execute("print(ran)")
    assert after.stream() == "[('aa', True, True)]\n"


def test_io_loop_add_callback_runs_a_coroutine_it_returns(each_shared_kernel: Kernel) -> None:
    started = each_shared_kernel.execute(
        "import asyncio\n"
        "done = []\n"
        "async def work():\n"
        "    await asyncio.sleep(0)\n"
        "    done.append('awaited')\n"
        "get_ipython().kernel.io_loop.add_callback(work)"
    )
    assert started.status == "ok", started.reply["content"]
    time.sleep(0.3)
    assert each_shared_kernel.execute("print(done)").stream() == "['awaited']\n"


def test_set_parent_sends_the_output_to_that_request(each_kernel: Kernel) -> None:
    first_id = each_kernel.send("first = get_ipython().kernel.get_parent()")
    first = each_kernel.collect(first_id)
    assert first.status == "ok", first.reply["content"]
    second_id = each_kernel.send(
        "kernel = get_ipython().kernel\n"
        "kernel.set_parent([], first)\n"
        "print('to the first cell', flush=True)\n"
        "print(kernel.get_parent()['header']['msg_id'] == first['header']['msg_id'])"
    )
    assert each_kernel.reply_to(second_id)["status"] == "ok"
    # Read by parent only: ipykernel also sends the second cell's idle
    # status to the first cell, this kernel to the second.
    texts: list[str] = []
    deadline = time.monotonic() + 30
    while "".join(texts) != "to the first cell\nTrue\n" and time.monotonic() < deadline:
        for msg in each_kernel.drain_iopub(0.2):
            if msg["msg_type"] == "stream" and msg["parent_header"].get("msg_id") == first_id:
                texts.append(msg["content"]["text"])
    assert "".join(texts) == "to the first cell\nTrue\n"
