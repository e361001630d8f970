"""Kernel subshells (JEP 91), side by side with ipykernel 7.

A subshell is a second thread of execution in the kernel, with its own shell
queue and the same user namespace. The control channel creates, lists and
deletes them; a shell request whose header has ``subshell_id`` runs on that
subshell, while the main shell may be busy with a long cell. Each test runs
against both kernels unless it says what ipykernel does differently."""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import Kernel, Message, start_kernel, stop_kernel

# How fast a subshell must answer while the main shell is busy. ipykernel
# answers in about 0.01 s; the bound leaves room for a loaded machine.
SUBSHELL_ANSWER_BOUND_S = 0.5


def control(kernel: Kernel, msg_type: str, content: dict[str, Any] | None = None) -> Message:
    """Sends a control request; returns its reply."""
    msg = kernel.client.session.msg(msg_type, content or {})
    kernel.client.control_channel.send(msg)
    deadline = time.monotonic() + 30
    while True:
        remaining = max(0.1, deadline - time.monotonic())
        reply: Message = kernel.client.get_control_msg(timeout=remaining)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply


def send_to_subshell(kernel: Kernel, subshell: str, msg_type: str,
                     content: dict[str, Any]) -> str:
    """Sends a shell message of ``msg_type`` to ``subshell``; returns its id."""
    msg = kernel.client.session.msg(msg_type, content)
    msg["header"]["subshell_id"] = subshell
    kernel.client.shell_channel.send(msg)
    msg_id: str = msg["header"]["msg_id"]
    return msg_id


def create_subshell(kernel: Kernel) -> str:
    reply = control(kernel, "create_subshell_request")
    assert reply["msg_type"] == "create_subshell_reply"
    assert reply["content"]["status"] == "ok", reply["content"]
    subshell_id = reply["content"]["subshell_id"]
    assert isinstance(subshell_id, str) and subshell_id
    return subshell_id


def list_subshells(kernel: Kernel) -> list[str]:
    reply = control(kernel, "list_subshell_request")
    assert reply["msg_type"] == "list_subshell_reply"
    assert reply["content"]["status"] == "ok", reply["content"]
    ids: list[str] = reply["content"]["subshell_id"]
    return ids


def delete_subshell(kernel: Kernel, subshell_id: str) -> Message:
    return control(kernel, "delete_subshell_request", {"subshell_id": subshell_id})


@dataclass
class Request:
    msg_id: str
    sent_at: float


@dataclass
class Traffic:
    """Every reply and IOPub message of a kernel, filed by the request they
    answer: the main shell's and the subshells' arrive interleaved."""

    kernel: Kernel
    replies: dict[str, Message] = field(default_factory=dict)
    reply_times: dict[str, float] = field(default_factory=dict)
    iopub: dict[str, list[Message]] = field(default_factory=dict)

    def execute(self, code: str, subshell_id: str | None = None, **content: Any) -> Request:
        body = {"code": code, "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        body.update(content)
        msg = self.kernel.client.session.msg("execute_request", body)
        if subshell_id is not None:
            msg["header"]["subshell_id"] = subshell_id
        self.kernel.client.shell_channel.send(msg)
        return Request(msg["header"]["msg_id"], time.monotonic())

    def pump(self, timeout: float) -> None:
        """Files what arrives within ``timeout`` seconds."""
        client = self.kernel.client
        end = time.monotonic() + timeout
        while True:
            got = False
            for getter, is_reply in ((client.get_shell_msg, True), (client.get_iopub_msg, False)):
                try:
                    msg = getter(timeout=0.01)
                except queue.Empty:
                    continue
                got = True
                parent = msg["parent_header"].get("msg_id", "")
                if is_reply:
                    self.replies[parent] = msg
                    self.reply_times[parent] = time.monotonic()
                else:
                    self.iopub.setdefault(parent, []).append(msg)
            if not got and time.monotonic() >= end:
                return

    def reply(self, request: Request, timeout: float = 30) -> Message:
        deadline = time.monotonic() + timeout
        while request.msg_id not in self.replies:
            if time.monotonic() > deadline:
                raise AssertionError(f"no reply to {request.msg_id} in {timeout} s")
            self.pump(0.02)
        return self.replies[request.msg_id]

    def done(self, request: Request, timeout: float = 30) -> list[Message]:
        """The request's IOPub messages, once its idle status and its reply
        are in."""
        self.reply(request, timeout)
        deadline = time.monotonic() + timeout
        while not any(m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                      for m in self.iopub.get(request.msg_id, [])):
            if time.monotonic() > deadline:
                raise AssertionError(f"no idle status for {request.msg_id} in {timeout} s")
            self.pump(0.02)
        return self.iopub[request.msg_id]

    def busy(self, request: Request, timeout: float = 30) -> None:
        """Waits until the request has started to run."""
        deadline = time.monotonic() + timeout
        while not any(m["msg_type"] == "execute_input"
                      for m in self.iopub.get(request.msg_id, [])):
            if time.monotonic() > deadline:
                raise AssertionError(f"{request.msg_id} did not start in {timeout} s")
            self.pump(0.02)


def outputs(messages: list[Message], msg_type: str) -> list[Message]:
    return [m for m in messages if m["msg_type"] == msg_type]


def text_of(messages: list[Message]) -> str:
    return "".join(m["content"]["text"] for m in outputs(messages, "stream"))


def result_of(messages: list[Message]) -> str:
    results = outputs(messages, "execute_result")
    assert len(results) == 1, messages
    value: str = results[0]["content"]["data"]["text/plain"]
    return value


@pytest.fixture
def traffic(each_kernel: Kernel) -> Traffic:
    return Traffic(each_kernel)


def test_kernel_info_advertises_subshells(each_shared_kernel: Kernel) -> None:
    reply = each_shared_kernel.client.kernel_info(reply=True, timeout=30)
    assert "kernel subshells" in reply["content"]["supported_features"]


def test_create_list_delete(each_shared_kernel: Kernel) -> None:
    kernel = each_shared_kernel
    before = list_subshells(kernel)
    first = create_subshell(kernel)
    second = create_subshell(kernel)
    assert first != second
    assert list_subshells(kernel) == [*before, first, second]
    reply = delete_subshell(kernel, first)
    assert reply["msg_type"] == "delete_subshell_reply"
    assert reply["content"]["status"] == "ok"
    assert list_subshells(kernel) == [*before, second]
    assert delete_subshell(kernel, second)["content"]["status"] == "ok"
    assert list_subshells(kernel) == before


def test_deleting_an_unknown_subshell_is_an_error(each_shared_kernel: Kernel) -> None:
    reply = delete_subshell(each_shared_kernel, "no-such-subshell")
    assert reply["msg_type"] == "delete_subshell_reply"
    assert reply["content"]["status"] == "error"
    # ipykernel's evalue is the KeyError's, the id in quotes.
    assert "'no-such-subshell'" in reply["content"]["evalue"]


def test_deleting_twice_is_an_error(each_shared_kernel: Kernel) -> None:
    kernel = each_shared_kernel
    subshell = create_subshell(kernel)
    assert delete_subshell(kernel, subshell)["content"]["status"] == "ok"
    again = delete_subshell(kernel, subshell)["content"]
    assert again["status"] == "error"
    assert subshell in again["evalue"]


def test_deleting_a_busy_subshell_answers_once_its_cell_has_ended(traffic: Traffic) -> None:
    """ipykernel stops the subshell's loop, which ends after the running cell,
    and joins its thread before it answers: the delete reply waits for the
    cell, and the cell is not interrupted."""
    kernel = traffic.kernel
    subshell = create_subshell(kernel)
    running = traffic.execute("import time; time.sleep(1.5); deleted_cell_finished = True",
                              subshell)
    traffic.busy(running)
    assert delete_subshell(kernel, subshell)["content"]["status"] == "ok"
    # The shared namespace shows whether the cell had ended by then.
    check = traffic.execute("deleted_cell_finished")
    assert result_of(traffic.done(check)) == "True"
    assert subshell not in list_subshells(kernel)


def test_control_replies_come_between_busy_and_idle(each_shared_kernel: Kernel) -> None:
    kernel = each_shared_kernel
    kernel.drain_iopub(0.2)
    msg = kernel.client.session.msg("list_subshell_request", {})
    kernel.client.control_channel.send(msg)
    kernel.client.get_control_msg(timeout=30)
    states = []
    deadline = time.monotonic() + 30
    while "idle" not in states and time.monotonic() < deadline:
        m = kernel.client.get_iopub_msg(timeout=30)
        if m["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            states.append(m["content"]["execution_state"])
    assert states == ["busy", "idle"]


def test_a_subshell_answers_while_the_main_shell_runs_a_cell(traffic: Traffic) -> None:
    subshell = create_subshell(traffic.kernel)
    # Warm: the first request of a subshell may start things up.
    assert traffic.reply(traffic.execute("0", subshell))["content"]["status"] == "ok"
    main = traffic.execute("import time; time.sleep(3); 'main done'")
    traffic.busy(main)
    asked = traffic.execute("6 * 7", subshell)
    answer = traffic.done(asked)
    took = traffic.reply_times[asked.msg_id] - asked.sent_at
    assert result_of(answer) == "42"
    assert main.msg_id not in traffic.replies, "the main shell's 3 s cell ended first"
    assert took < SUBSHELL_ANSWER_BOUND_S, f"the subshell answered after {took:.2f} s"
    assert result_of(traffic.done(main)) == "'main done'"
    assert delete_subshell(traffic.kernel, subshell)["content"]["status"] == "ok"


def test_a_subshell_created_while_the_main_shell_runs_a_cell_answers_at_once(
        traffic: Traffic) -> None:
    """JupyterLab creates a console's subshell when the console opens, which
    may be in the middle of a long cell."""
    main = traffic.execute("import time; time.sleep(5); 'main done'")
    traffic.busy(main)
    subshell = create_subshell(traffic.kernel)
    answer = traffic.done(traffic.execute("6 * 7", subshell))
    assert result_of(answer) == "42"
    assert main.msg_id not in traffic.replies, "the main shell's 5 s cell ended first"
    assert result_of(traffic.done(main)) == "'main done'"
    assert delete_subshell(traffic.kernel, subshell)["content"]["status"] == "ok"


def test_requests_to_both_shells_at_once_are_all_answered(kernel: Kernel) -> None:
    """The shell socket carries both shells' requests and replies: a reply a
    subshell sends while a request for the main shell arrives must not make
    that request wait for ever.

    Ours only: ipykernel 7.2 has this very bug (upstream's "Shell reply sent
    raw on the ROUTER can drop the ZMQStream wake-up"). Under CPU load, 2 of
    25 runs of this exchange stalled after about 150 replies and got no
    other in the next 60 s."""
    traffic = Traffic(kernel)
    subshell = create_subshell(traffic.kernel)
    sent = []
    for i in range(150):
        sent.append(traffic.execute(f"x = {i}"))
        sent.append(traffic.execute(f"y = {i}", subshell))
    for request in sent:
        assert traffic.reply(request, timeout=60)["content"]["status"] == "ok"
    assert delete_subshell(traffic.kernel, subshell)["content"]["status"] == "ok"


def test_subshell_output_carries_its_request_as_parent(traffic: Traffic) -> None:
    subshell = create_subshell(traffic.kernel)
    code = ("import sys\n"
            "print('to stdout')\n"
            "print('to stderr', file=sys.stderr)\n"
            "from IPython.display import display\n"
            "display({'text/plain': 'shown'}, raw=True)\n"
            "'result'")
    request = traffic.execute(code, subshell)
    messages = traffic.done(request)
    assert traffic.replies[request.msg_id]["content"]["status"] == "ok"
    states = [m["content"]["execution_state"] for m in outputs(messages, "status")]
    assert states == ["busy", "idle"]
    assert text_of(messages) == "to stdout\nto stderr\n"
    assert [m["content"]["data"]["text/plain"] for m in outputs(messages, "display_data")] == [
        "shown"]
    assert result_of(messages) == "'result'"
    assert outputs(messages, "execute_input")[0]["content"]["code"] == code

    failing = traffic.execute("1 / 0", subshell)
    messages = traffic.done(failing)
    reply = traffic.replies[failing.msg_id]["content"]
    assert reply["status"] == "error" and reply["ename"] == "ZeroDivisionError"
    errors = outputs(messages, "error")
    assert len(errors) == 1 and errors[0]["content"]["ename"] == "ZeroDivisionError"
    # Nothing of either request went to another parent.
    for msg_id, messages in traffic.iopub.items():
        if msg_id not in (request.msg_id, failing.msg_id):
            assert not outputs(messages, "stream"), messages
            assert not outputs(messages, "error"), messages


THREAD_PRINTS = """
import threading
worker = threading.Thread(target=print, args=("from a thread of the subshell",))
worker.start()
worker.join()
"""


def test_a_thread_started_by_a_subshell_cell_prints_into_that_cell(traffic: Traffic) -> None:
    subshell = create_subshell(traffic.kernel)
    main = traffic.execute("import time; time.sleep(3)")
    traffic.busy(main)
    request = traffic.execute(THREAD_PRINTS, subshell)
    assert text_of(traffic.done(request)) == "from a thread of the subshell\n"
    assert main.msg_id not in traffic.replies, "the main shell's 3 s cell ended first"
    assert not outputs(traffic.done(main), "stream"), "the thread printed into the main cell"


def test_the_namespace_is_shared(traffic: Traffic) -> None:
    subshell = create_subshell(traffic.kernel)
    traffic.done(traffic.execute("from_main = 41"))
    assert result_of(traffic.done(traffic.execute("from_main + 1", subshell))) == "42"
    traffic.done(traffic.execute("from_subshell = 'set in a subshell'", subshell))
    assert result_of(traffic.done(traffic.execute("from_subshell"))) == "'set in a subshell'"


def test_execution_counts_are_shared(traffic: Traffic) -> None:
    """One IPython shell, one count: a subshell's cell that stores history
    takes the next number, as on the main shell."""
    subshell = create_subshell(traffic.kernel)

    def count(subshell_id: str | None, **content: Any) -> tuple[int, int]:
        request = traffic.execute("1", subshell_id, **content)
        messages = traffic.done(request)
        announced = outputs(messages, "execute_input")[0]["content"]["execution_count"]
        return announced, traffic.replies[request.msg_id]["content"]["execution_count"]

    first, first_reply = count(None)
    assert first == first_reply
    assert count(subshell) == (first + 1, first + 1)
    assert count(None) == (first + 2, first + 2)
    # store_history=False takes no number, on a subshell either.
    assert count(subshell, store_history=False)[1] == first + 2
    assert count(None) == (first + 3, first + 3)


def test_a_subshell_cells_input_goes_to_the_history(traffic: Traffic) -> None:
    subshell = create_subshell(traffic.kernel)
    marker = "subshell_history_marker = 12345"
    traffic.done(traffic.execute(marker, subshell))
    msg_id = traffic.kernel.client.history(hist_access_type="tail", n=10, output=False)
    reply = traffic.kernel.reply_to(msg_id)
    assert reply["status"] == "ok"
    assert marker in [entry[2] for entry in reply["history"]]


def test_input_in_a_subshell_asks_with_the_subshells_request(traffic: Traffic) -> None:
    """While the main shell runs a cell, a subshell's input() asks the
    frontend with the subshell's request as parent, and gets its answer."""
    subshell = create_subshell(traffic.kernel)
    main = traffic.execute("import time\ntime.sleep(1.5)")
    traffic.busy(main)
    request = traffic.execute("print('got', input('in a subshell? '))", subshell,
                              allow_stdin=True)
    prompt = traffic.kernel.client.get_stdin_msg(timeout=30)
    assert prompt["msg_type"] == "input_request"
    assert prompt["content"] == {"prompt": "in a subshell? ", "password": False}
    assert prompt["parent_header"]["msg_id"] == request.msg_id
    traffic.kernel.client.input("yes")
    assert text_of(traffic.done(request)) == "got yes\n"
    assert traffic.reply(request)["content"]["status"] == "ok"
    traffic.done(main)


def test_stop_on_error_aborts_only_that_subshells_queue(traffic: Traffic) -> None:
    subshell = create_subshell(traffic.kernel)
    failing = traffic.execute("import time; time.sleep(0.5); 1 / 0", subshell)
    queued = traffic.execute("'queued behind the error'", subshell)
    on_main = traffic.execute("'the main shell runs'")
    assert traffic.reply(failing)["content"]["status"] == "error"
    assert traffic.reply(queued)["content"]["status"] == "aborted"
    assert result_of(traffic.done(on_main)) == "'the main shell runs'"
    # The subshell takes requests again once the queue was aborted.
    after = traffic.execute("'after the abort'", subshell)
    assert result_of(traffic.done(after)) == "'after the abort'"


PRINTING_TARGET = """
import comm

def printing_target(c, open_msg):
    c.on_msg(lambda msg: print("handled", msg["content"]["data"]["n"]))

comm.get_comm_manager().register_target("subshell_printer", printing_target)
"""


def test_a_comm_message_queued_behind_a_failing_cell_keeps_its_own_output(
    traffic: Traffic,
) -> None:
    """stop_on_error aborts the queued execute requests only: a comm message
    queued behind them is handled, and what its handler prints belongs to
    it, not to the cell that failed."""
    kernel = traffic.kernel
    subshell = create_subshell(kernel)
    traffic.done(traffic.execute(PRINTING_TARGET))

    def to_subshell(msg_type: str, content: dict[str, Any]) -> str:
        return send_to_subshell(kernel, subshell, msg_type, content)

    to_subshell("comm_open", {"comm_id": "printer-1", "target_name": "subshell_printer",
                              "data": {}})
    failing = traffic.execute("import time; time.sleep(0.5); 1 / 0", subshell)
    queued = to_subshell("comm_msg", {"comm_id": "printer-1", "data": {"n": 1}})
    failed = traffic.done(failing)
    assert traffic.replies[failing.msg_id]["content"]["status"] == "error"
    deadline = time.monotonic() + 30
    while "handled 1\n" not in text_of(traffic.iopub.get(queued, [])):
        assert time.monotonic() < deadline, (
            f"no output for the comm message; the failed cell's: {text_of(failed)!r}")
        traffic.pump(0.02)
    assert "handled" not in text_of(failed)


def test_an_interrupt_ends_the_main_cell_not_the_subshells(traffic: Traffic) -> None:
    subshell = create_subshell(traffic.kernel)
    main = traffic.execute("import time; time.sleep(30)")
    traffic.busy(main)
    in_subshell = traffic.execute("import time; time.sleep(1.5); 'subshell done'", subshell)
    traffic.busy(in_subshell)
    time.sleep(0.3)
    traffic.kernel.manager.interrupt_kernel()
    assert traffic.reply(main)["content"]["ename"] == "KeyboardInterrupt"
    assert traffic.reply(in_subshell)["content"]["status"] == "ok"
    assert result_of(traffic.done(in_subshell)) == "'subshell done'"


ECHO_TARGET = """
import comm, threading

def echo_target(c, open_msg):
    def on_msg(msg):
        c.send({"echo": msg["content"]["data"],
                "main_thread": threading.current_thread() is threading.main_thread()})
    c.on_msg(on_msg)

comm.get_comm_manager().register_target("subshell_echo", echo_target)
"""


def test_a_comm_on_a_subshell_answers_while_the_main_shell_sleeps(traffic: Traffic) -> None:
    """JupyterLab sends each comm target's messages to a subshell of its own:
    a widget's callback then runs while a cell runs."""
    kernel = traffic.kernel
    subshell = create_subshell(kernel)
    traffic.done(traffic.execute(ECHO_TARGET))

    def to_subshell(msg_type: str, content: dict[str, Any]) -> str:
        return send_to_subshell(kernel, subshell, msg_type, content)

    to_subshell("comm_open", {"comm_id": "echo-1", "target_name": "subshell_echo", "data": {}})
    main = traffic.execute("import time; time.sleep(3)")
    traffic.busy(main)
    sent_at = time.monotonic()
    asked = to_subshell("comm_msg", {"comm_id": "echo-1", "data": {"value": 7}})
    deadline = sent_at + 30
    while not any(m["msg_type"] == "comm_msg" for m in traffic.iopub.get(asked, [])):
        assert time.monotonic() < deadline, "no echo from the comm"
        traffic.pump(0.02)
    took = time.monotonic() - sent_at
    assert main.msg_id not in traffic.replies, "the main shell's 3 s cell ended first"
    echo = outputs(traffic.iopub[asked], "comm_msg")[0]["content"]
    assert echo["comm_id"] == "echo-1"
    assert echo["data"] == {"echo": {"value": 7}, "main_thread": False}
    assert took < SUBSHELL_ANSWER_BOUND_S, f"the comm answered after {took:.2f} s"
    traffic.done(main)


# ------------------------------------------------ the pool, from a subshell

SLOW_MAP_SETUP = """
%parallel_pool -n 2
"""

SLOW_TARGET = """%%parallel
def slow(x):
    import time
    time.sleep(3)
    return x
"""


def test_parallel_status_answers_in_a_subshell_while_a_map_runs(kernel: Kernel) -> None:
    traffic = Traffic(kernel)
    for code in (SLOW_MAP_SETUP, SLOW_TARGET):
        request = traffic.execute(code)
        traffic.done(request, timeout=120)
        assert traffic.replies[request.msg_id]["content"]["status"] == "ok"
    subshell = create_subshell(kernel)
    # Warm the subshell, and the status table's first rendering.
    warm = traffic.execute("%parallel_status --watch 0", subshell)
    traffic.done(warm)
    mapping = traffic.execute("%parallel_map slow [1, 2]")
    traffic.busy(mapping)
    # The workers have taken their items once the live view says so.
    time.sleep(0.5)
    asked = traffic.execute("%parallel_status --watch 0", subshell)
    messages = traffic.done(asked)
    took = traffic.reply_times[asked.msg_id] - asked.sent_at
    assert mapping.msg_id not in traffic.replies, "the map ended before the status came"
    assert traffic.replies[asked.msg_id]["content"]["status"] == "ok"
    tables = [m["content"]["data"]["text/plain"] for m in outputs(messages, "display_data")]
    assert len(tables) == 1, messages
    assert tables[0].count("busy") >= 2, tables[0]
    assert took < SUBSHELL_ANSWER_BOUND_S, f"%parallel_status answered after {took:.2f} s"
    assert result_of(traffic.done(mapping, timeout=60)) == "[1, 2]"


# ---------------------------------------------------------------- ours only

def test_a_deleted_subshell_finishes_its_cell_first(shared_kernel: Kernel) -> None:
    """As ipykernel, deleting a subshell lets its running cell end, then
    answers the delete. ipykernel then loses that cell's execute_reply (the
    subshell's socket to the shell channel closes with the reply in it);
    here the reply comes."""
    traffic = Traffic(shared_kernel)
    subshell = create_subshell(traffic.kernel)
    running = traffic.execute("import time; time.sleep(1); 'finished'", subshell)
    traffic.busy(running)
    assert delete_subshell(traffic.kernel, subshell)["content"]["status"] == "ok"
    assert result_of(traffic.done(running)) == "'finished'"
    assert subshell not in list_subshells(traffic.kernel)



def test_results_shown_by_both_shells_at_once_go_to_their_own_cells(
        shared_kernel: Kernel) -> None:
    """Both shells share IPython's display hook. It kept the result being
    shown in itself, so a cell's Out[n] could go to the other shell's cell,
    or be lost. (ipykernel 7.2's hook keeps its message in itself too: under
    it, this test fails on a message its client receives twice.)"""
    traffic = Traffic(shared_kernel)
    subshell = create_subshell(traffic.kernel)
    sent = []
    for i in range(150):
        sent.append((traffic.execute(f"{i} * 2"), f"{i * 2}"))
        sent.append((traffic.execute(f"{i} * 3", subshell), f"{i * 3}"))
    for request, expected in sent:
        assert result_of(traffic.done(request, timeout=60)) == expected
    assert delete_subshell(traffic.kernel, subshell)["content"]["status"] == "ok"


def test_a_request_for_an_unknown_subshell_gets_an_error_reply(shared_kernel: Kernel) -> None:
    """ipykernel logs the request and answers nothing, so a client would wait
    for ever; here it gets an error reply that names the id."""
    traffic = Traffic(shared_kernel)
    request = traffic.execute("1", "no-such-subshell")
    reply = traffic.reply(request)["content"]
    assert reply["status"] == "error"
    assert reply["ename"] == "SubshellNotFound"
    assert "'no-such-subshell'" in reply["evalue"]


def _busy_subshell_kernel() -> tuple[Kernel, Any]:
    """A kernel whose one subshell sleeps in a cell for ten minutes, and the
    kernel's process."""
    kernel = start_kernel()
    try:
        traffic = Traffic(kernel)
        subshell = create_subshell(kernel)
        traffic.busy(traffic.execute("import time; time.sleep(600)", subshell))
        provisioner = kernel.manager.provisioner
        assert provisioner is not None
        return kernel, provisioner.process  # type: ignore[attr-defined]
    except BaseException:
        stop_kernel(kernel)
        raise


def test_shutdown_with_a_busy_subshell_does_not_hang() -> None:
    kernel, process = _busy_subshell_kernel()
    try:
        started = time.monotonic()
        kernel.manager.shutdown_kernel(now=False)
        took = time.monotonic() - started
        # jupyter_client kills a kernel that has not exited 5 s after its
        # shutdown request: an exit code of 0 says it ended by itself.
        assert process.returncode == 0
        assert took < 5, f"the shutdown took {took:.1f} s"
    finally:
        stop_kernel(kernel)


def test_restart_with_a_busy_subshell_does_not_hang() -> None:
    kernel, process = _busy_subshell_kernel()
    try:
        started = time.monotonic()
        kernel.manager.restart_kernel(now=False)
        took = time.monotonic() - started
        assert process.returncode == 0
        assert took < 10, f"the restart took {took:.1f} s"
        # The new kernel has no subshells, and runs cells.
        kernel.client.wait_for_ready(timeout=60)
        assert list_subshells(kernel) == []
        assert kernel.execute("6 * 7").status == "ok"
    finally:
        stop_kernel(kernel)
