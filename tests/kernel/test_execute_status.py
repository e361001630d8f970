"""An execute request's reply, as ipykernel makes it: the status comes from
what run_cell returns (error_before_exec, error_in_exec), not from whether a
traceback was shown; silent and store_history apply to their own request;
execution counts follow IPython's and never drift; the cell id and the whole
request reach IPython and the kernel object."""

from __future__ import annotations

import json
import re
from typing import Any

from conftest import Kernel


def send_execute(kernel: Kernel, code: str, metadata: dict[str, Any] | None = None,
                 **content: Any) -> str:
    """An execute request with exactly these fields (jupyter_client's
    execute() always adds its own defaults)."""
    msg = kernel.client.session.msg(
        "execute_request", {"code": code, **content}, metadata=metadata or {}
    )
    kernel.client.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


def test_a_traceback_the_cell_handled_is_not_a_failure(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "try:\n    1/0\nexcept ZeroDivisionError:\n    get_ipython().showtraceback()"
    )
    assert result.status == "ok", result.reply["content"]
    # It was shown, as ipykernel shows it.
    [error] = result.of_type("error")
    assert error["content"]["ename"] == "ZeroDivisionError"


def test_an_error_reply_names_the_exception(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute("def f():\n    return 1/0\nf()")
    content = result.reply["content"]
    assert content["status"] == "error"
    assert content["ename"] == "ZeroDivisionError"
    assert content["evalue"] == "division by zero"
    text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(content["traceback"]))  # no colours
    assert "return 1/0" in text


def test_a_syntax_error_fails_before_execution(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute("1 +* 2")
    assert result.reply["content"]["status"] == "error"
    assert result.reply["content"]["ename"] == "SyntaxError"


def test_a_silent_error_is_replied_and_shown(shared_kernel: Kernel) -> None:
    # As ipykernel: silent means no execute_input, result or history, but
    # the error is published (test_data_and_errors.py runs it on both).
    result = shared_kernel.execute("1/0", silent=True)
    assert result.reply["content"]["status"] == "error"
    assert result.reply["content"]["ename"] == "ZeroDivisionError"
    assert [m["msg_type"] for m in result.outputs] == ["error"]
    # The next, non silent, cell shows its errors again.
    assert len(shared_kernel.execute("1/0").of_type("error")) == 1


def execute_input_count(kernel: Kernel, msg_id: str) -> tuple[int, int]:
    """(execute_input's count, execute_reply's count) of a request."""
    counts = []
    while True:
        msg = kernel.client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "execute_input":
            counts.append(msg["content"]["execution_count"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while True:
        reply = kernel.client.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            [input_count] = counts
            return input_count, reply["content"]["execution_count"]


def test_execution_counts_follow_ipython_and_skip_nothing(kernel: Kernel) -> None:
    assert execute_input_count(kernel, kernel.send("1")) == (1, 1)
    # store_history=False: no number of its own (ipykernel shows the next
    # number as input and the last one in the reply).
    assert execute_input_count(kernel, kernel.send("2", store_history=False)) == (2, 1)
    assert execute_input_count(kernel, kernel.send("3")) == (2, 2)
    # silent: no execute_input at all, and no number.
    assert kernel.execute("4", silent=True).reply["content"]["execution_count"] == 2
    result = kernel.execute("print(get_ipython().execution_count, In[1:])")
    assert result.reply["content"]["execution_count"] == 3
    assert result.stream() == "4 ['1', '3', 'print(get_ipython().execution_count, In[1:])']\n"


def test_the_cell_id_reaches_ipython(shared_kernel: Kernel) -> None:
    shared_kernel.execute(
        "seen_cell_ids = []\n"
        "get_ipython().events.register('pre_run_cell',"
        " lambda info: seen_cell_ids.append(info.cell_id))"
    )
    msg_id = send_execute(shared_kernel, "pass", metadata={"cellId": "cell-42"})
    assert shared_kernel.collect(msg_id).status == "ok"
    result = shared_kernel.execute("print(seen_cell_ids[-2:])")
    assert result.stream() == "['cell-42', None]\n"


def test_get_parent_returns_the_whole_request(shared_kernel: Kernel) -> None:
    code = (
        "import json\n"
        "parent = get_ipython().kernel.get_parent()\n"
        "print(json.dumps({k: parent[k] for k in"
        " ('msg_id', 'msg_type', 'metadata', 'content')}))"
    )
    msg_id = send_execute(shared_kernel, code, metadata={"cellId": "c1"}, silent=False)
    result = shared_kernel.collect(msg_id)
    assert result.status == "ok", result.reply["content"]
    parent = json.loads(result.stream())
    assert parent == {
        "msg_id": msg_id, "msg_type": "execute_request", "metadata": {"cellId": "c1"},
        "content": {"code": code, "silent": False},
    }


def test_get_parent_from_a_thread_is_the_cell_that_started_it(shared_kernel: Kernel) -> None:
    msg_id = shared_kernel.send(
        "import threading\n"
        "found = []\n"
        "t = threading.Thread(target=lambda: found.append("
        "get_ipython().kernel.get_parent()['header']['msg_id']))\n"
        "t.start(); t.join()\n"
        "print(found[0])"
    )
    assert shared_kernel.collect(msg_id).stream() == f"{msg_id}\n"
