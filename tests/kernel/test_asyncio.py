"""asyncio in cells, as under ipykernel: cells run on a running event loop,
which keeps running while the kernel is idle. Each test runs against both
kernels and must pass on both."""

from __future__ import annotations

import time
import uuid

from conftest import Execution, Kernel


# What an interrupted cell awaits. ipykernel 7.2 sees the interrupt only when
# its loop wakes for something else (its SIGINT handler runs when the select
# returns), here when the sleep ends: it gets a short one. Ours is
# interrupted at once, so it gets one no test would wait for.
def await_seconds(kernel: Kernel) -> int:
    return 600 if kernel.is_ours else 3


# How long a test lets the kernel sit idle between two looks at a task's
# progress, and how long it looks before it calls the task stuck: a loaded
# machine makes the test slower, not red.
IDLE_SECONDS = 0.5
PROGRESS_DEADLINE_SECONDS = 60.0


def progressed_while_idle(kernel: Kernel, condition: str) -> bool:
    """Whether ``condition``, a Python expression, became true in the
    kernel, looked at after each idle pause. The looks do not await, so a
    task progresses only while the kernel is idle."""
    deadline = time.monotonic() + PROGRESS_DEADLINE_SECONDS
    while True:
        time.sleep(IDLE_SECONDS)
        look = kernel.execute(f"print({condition})")
        assert_ok(look)
        if look.stream() == "True\n":
            return True
        if time.monotonic() > deadline:
            return False


def assert_ok(execution: Execution) -> None:
    assert execution.status == "ok", execution.reply["content"]


def errors(execution: Execution) -> list[tuple[str, str]]:
    return [(e["content"]["ename"], e["content"]["evalue"]) for e in execution.of_type("error")]


def started_then_interrupted(kernel: Kernel, code: str) -> Execution:
    """Runs code, which prints 'started' before it blocks, and interrupts it
    once it has, with an interrupt_request: our kernelspec's interrupt mode.
    (ipykernel's kernelspec says "signal", and a SIGINT does not end an
    await under ipykernel 7.2: its cell runs on.)"""
    msg_id = kernel.send(code)
    while True:
        msg = kernel.client.get_iopub_msg(timeout=30)
        if (
            msg["parent_header"].get("msg_id") == msg_id
            and msg["msg_type"] == "stream"
            and "started" in msg["content"]["text"]
        ):
            break
    time.sleep(0.2)  # into the await
    kernel.client.control_channel.send(kernel.client.session.msg("interrupt_request", {}))
    return kernel.collect(msg_id, timeout=30)


def test_a_plain_cell_runs_on_a_running_loop(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "import asyncio\n"
        "loop = asyncio.get_running_loop()\n"
        "print(loop.is_running(), asyncio.get_event_loop() is loop)"
    )
    assert_ok(execution)
    assert execution.stream() == "True True\n"


def test_every_cell_runs_on_the_same_loop(each_shared_kernel: Kernel) -> None:
    assert_ok(each_shared_kernel.execute("import asyncio; first = asyncio.get_running_loop()"))
    execution = each_shared_kernel.execute("print(asyncio.get_running_loop() is first)")
    assert_ok(execution)
    assert execution.stream() == "True\n"


def test_ensure_future_in_a_plain_cell_runs_by_the_next_cell(
        each_shared_kernel: Kernel) -> None:
    started = each_shared_kernel.execute(
        "import asyncio\n"
        "future = asyncio.ensure_future(asyncio.sleep(0, 'slept'))\n"
        "print(type(future).__name__)"
    )
    assert_ok(started)
    assert started.stream() == "Task\n"
    time.sleep(0.1)
    after = each_shared_kernel.execute("print(future.done(), future.result())")
    assert_ok(after)
    assert after.stream() == "True slept\n"


def test_a_task_keeps_running_while_the_kernel_is_idle(each_shared_kernel: Kernel) -> None:
    started = each_shared_kernel.execute(
        "import asyncio\n"
        "ticks = []\n"
        "async def tick():\n"
        "    while True:\n"
        "        ticks.append(1)\n"
        "        await asyncio.sleep(0.01)\n"
        "ticker = asyncio.ensure_future(tick())\n"
        "at_start = len(ticks)"
    )
    assert_ok(started)
    assert progressed_while_idle(each_shared_kernel, "len(ticks) - at_start > 10")
    assert_ok(each_shared_kernel.execute("ticker.cancel()"))


def test_a_task_started_by_top_level_await_outlives_its_cell(
        each_shared_kernel: Kernel) -> None:
    started = each_shared_kernel.execute(
        "import asyncio\n"
        "event = asyncio.Event()\n"
        "async def later():\n"
        "    await event.wait()\n"
        "    return 'woken'\n"
        "waiter = asyncio.create_task(later())\n"
        "await asyncio.sleep(0)"
    )
    assert_ok(started)
    assert_ok(each_shared_kernel.execute("event.set()"))
    time.sleep(0.1)
    after = each_shared_kernel.execute("print(waiter.result())")
    assert_ok(after)
    assert after.stream() == "woken\n"


def test_output_of_a_task_while_idle_reaches_the_frontend(
        each_shared_kernel: Kernel) -> None:
    msg_id = each_shared_kernel.send(
        "import asyncio\n"
        "async def later():\n"
        "    await asyncio.sleep(0.2)\n"
        "    print('from the task', flush=True)\n"
        "printer = asyncio.ensure_future(later())"
    )
    assert_ok(each_shared_kernel.collect(msg_id))
    deadline = time.monotonic() + 30
    texts: list[str] = []
    while "from the task\n" not in "".join(texts) and time.monotonic() < deadline:
        for msg in each_shared_kernel.drain_iopub(0.2):
            if msg["msg_type"] == "stream":
                texts.append(msg["content"]["text"])
    assert "from the task\n" in "".join(texts)


def test_asyncio_run_in_a_cell_fails_as_in_a_running_loop(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "import asyncio\n"
        "async def main():\n"
        "    return 1\n"
        "coroutine = main()\n"
        "try:\n"
        "    asyncio.run(coroutine)\n"
        "finally:\n"
        "    coroutine.close()"
    )
    assert execution.status == "error"
    assert errors(execution) == [
        ("RuntimeError", "asyncio.run() cannot be called from a running event loop")
    ]


def test_run_until_complete_in_a_cell_fails_as_the_loop_runs(
        each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "import asyncio\n"
        "asyncio.get_event_loop().run_until_complete(asyncio.sleep(0))"
    )
    assert execution.status == "error"
    assert errors(execution) == [("RuntimeError", "This event loop is already running")]


def test_top_level_await_returns_its_value(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "import asyncio\n"
        "async def answer():\n"
        "    await asyncio.sleep(0.01)\n"
        "    return 42\n"
        "await answer()"
    )
    assert_ok(execution)
    [result] = execution.of_type("execute_result")
    assert result["content"]["data"]["text/plain"] == "42"


def test_an_error_after_an_await_fails_the_cell(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "import asyncio\nawait asyncio.sleep(0)\nraise ValueError('after the await')"
    )
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "ValueError"
    assert errors(execution) == [("ValueError", "after the await")]


def test_interrupting_an_await_ends_the_cell_there(each_shared_kernel: Kernel) -> None:
    # ipykernel cancels the cell's task: a CancelledError at the await.
    execution = started_then_interrupted(
        each_shared_kernel,
        "import asyncio\n"
        "print('started', flush=True)\n"
        "try:\n"
        f"    await asyncio.sleep({await_seconds(each_shared_kernel)})\n"
        "finally:\n"
        "    print('finally ran')\n"
        "print('resumed')",
    )
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "CancelledError"
    assert [name for name, _ in errors(execution)] == ["CancelledError"]
    assert execution.stream() == "finally ran\n"


def test_an_interrupted_await_does_not_resume_in_the_next_cell(
        each_shared_kernel: Kernel) -> None:
    # The next cell opens the gate the interrupted one waited at: a cell
    # left suspended by the interrupt would resume there.
    assert_ok(each_shared_kernel.execute("import asyncio; gate = asyncio.Event()"))
    interrupted = started_then_interrupted(
        each_shared_kernel,
        "print('started', flush=True)\n"
        f"await asyncio.wait_for(gate.wait(), {await_seconds(each_shared_kernel)})\n"
        "print('the interrupted cell resumed')",
    )
    assert interrupted.status == "error"
    after = each_shared_kernel.execute(
        "gate.set()\nawait asyncio.sleep(0.2)\nprint('next cell')"
    )
    assert_ok(after)
    assert after.stream() == "next cell\n"
    later = [
        m["content"]["text"]
        for m in after.others + each_shared_kernel.drain_iopub(0.3)
        if m["msg_type"] == "stream"
    ]
    assert "the interrupted cell resumed" not in "".join(later)


def test_interrupting_an_await_spares_the_background_tasks(each_shared_kernel: Kernel) -> None:
    started = each_shared_kernel.execute(
        "import asyncio\n"
        "beats = []\n"
        "async def beat():\n"
        "    while True:\n"
        "        beats.append(1)\n"
        "        await asyncio.sleep(0.01)\n"
        "heart = asyncio.ensure_future(beat())"
    )
    assert_ok(started)
    interrupted = started_then_interrupted(
        each_shared_kernel,
        "print('started', flush=True)\n"
        f"await asyncio.sleep({await_seconds(each_shared_kernel)})",
    )
    assert interrupted.status == "error"
    assert_ok(each_shared_kernel.execute("before = len(beats)"))
    assert progressed_while_idle(each_shared_kernel, "len(beats) - before > 10")
    after = each_shared_kernel.execute("print(heart.done()); heart.cancel()")
    assert_ok(after)
    assert after.stream() == "False\n"


def test_interrupting_a_blocking_call_in_an_async_cell_raises_keyboard_interrupt(
        shared_kernel: Kernel) -> None:
    # Not at an await: the cell's own code takes the KeyboardInterrupt, as in
    # a cell without await. Ours only: ipykernel's SIGINT handler during an
    # async cell only schedules the task's cancellation on the loop, which
    # the blocked cell does not reach, so the sleep runs to its end.
    execution = started_then_interrupted(
        shared_kernel,
        "import asyncio, time\n"
        "await asyncio.sleep(0)\n"
        "print('started', flush=True)\n"
        "time.sleep(600)",
    )
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "KeyboardInterrupt"


def test_a_comm_callback_runs_on_the_loop_and_may_start_a_task(
        each_shared_kernel: Kernel) -> None:
    # What a widget's on_click does when it starts asynchronous work.
    registered = each_shared_kernel.execute(
        "import asyncio, comm\n"
        "seen = []\n"
        "async def note(value):\n"
        "    seen.append(value)\n"
        "def target(c, msg):\n"
        "    def on_msg(m):\n"
        "        seen.append(asyncio.get_running_loop() is loop)\n"
        "        asyncio.ensure_future(note(m['content']['data']['n']))\n"
        "    c.on_msg(on_msg)\n"
        "loop = asyncio.get_running_loop()\n"
        "comm.get_comm_manager().register_target('asyncio-test', target)"
    )
    assert_ok(registered)
    client = each_shared_kernel.client
    comm_id = uuid.uuid4().hex
    for msg_type, content in (
        ("comm_open", {"comm_id": comm_id, "target_name": "asyncio-test", "data": {}}),
        ("comm_msg", {"comm_id": comm_id, "data": {"n": 7}}),
    ):
        client.shell_channel.send(client.session.msg(msg_type, content))
    time.sleep(0.3)
    after = each_shared_kernel.execute("print(seen)")
    assert_ok(after)
    assert after.stream() == "[True, 7]\n"


def test_a_loop_stop_while_a_cell_awaits_does_not_end_the_cell(shared_kernel: Kernel) -> None:
    # Ours only: ipykernel's loop stops, and with it the kernel.
    execution = shared_kernel.execute(
        "import asyncio\n"
        "asyncio.get_running_loop().call_soon(asyncio.get_running_loop().stop)\n"
        "await asyncio.sleep(0.1)\n"
        "print('after the stop')"
    )
    assert_ok(execution)
    assert execution.stream() == "after the stop\n"
