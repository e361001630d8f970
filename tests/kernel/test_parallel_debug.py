"""%debug and %parallel_debug after a remote error, in both kernels: pdb runs
inside the worker that raised, and every prompt travels over the stdin
channel, as a local %debug's does."""

from __future__ import annotations

import time
from typing import Any

import pytest
from conftest import Kernel, Message

SETUP = ("%load_ext interp_rpc", "%parallel_pool -n 2")

CRUNCH = """%%parallel
def crunch(x):
    secret = x * 7
    return secret // (x - 3)
"""

OUTER = """%%parallel
def outer(x):
    outer_value = x + 100
    return inner(x) + outer_value

def inner(x):
    inner_value = x * 2
    raise ValueError(inner_value)
"""


def prepared(kernel: Kernel, *cells: str) -> None:
    for code in (*SETUP, *cells):
        execution = kernel.execute(code, timeout=120)
        assert execution.status == "ok", execution.outputs


def failed(kernel: Kernel, code: str) -> None:
    execution = kernel.execute(code, timeout=120)
    assert execution.status == "error"
    assert execution.reply["content"]["ename"].startswith("RemoteError")


def converse(kernel: Kernel, code: str, commands: list[str], *,
             then: str = "reply") -> tuple[dict[str, Any], str, list[str]]:
    """Run ``code``, answer each input request with the next command; when
    none is left, interrupt the kernel if ``then`` is "interrupt". Returns
    (execute reply, the cell's stdout, the prompts)."""
    msg_id = kernel.send(code, allow_stdin=True)
    prompts: list[str] = []
    left = list(commands)
    while True:
        try:
            request: Message = kernel.client.get_stdin_msg(timeout=1)
        except Exception:  # no input request now: has the cell ended?
            reply = kernel.client.get_shell_msg(timeout=120)
            assert reply["parent_header"]["msg_id"] == msg_id
            break
        assert request["msg_type"] == "input_request"
        prompts.append(request["content"]["prompt"])
        if left:
            kernel.client.input(left.pop(0))
        elif then == "interrupt":
            kernel.manager.interrupt_kernel()
        else:
            kernel.client.input("q")
    outputs = kernel.drain_iopub(1.0)
    text = "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
                   and m["parent_header"].get("msg_id") == msg_id)
    return reply, text, prompts


def test_debug_after_a_remote_error_shows_the_worker_locals(each_kernel: Kernel) -> None:
    prepared(each_kernel, CRUNCH)
    failed(each_kernel, "%parallel_map crunch range(6)")
    reply, text, prompts = converse(each_kernel, "%debug", ["p secret", "p x", "where", "q"])
    assert reply["content"]["status"] == "ok", reply["content"]
    assert prompts == ["(Pdb) "] * 4
    assert "-> return secret // (x - 3)" in text
    assert "\n21\n" in text and "\n3\n" in text  # the worker's values, not a NameError
    assert "NameError" not in text
    # The kernel is ready for the next cell, and the worker serves again.
    assert each_kernel.execute("%parallel_map crunch [4, 5]").status == "ok"


def test_parallel_debug_walks_up_and_down_the_second_failing_worker(
        each_kernel: Kernel) -> None:
    prepared(each_kernel, CRUNCH, OUTER)
    # Worker 0 fails in crunch, then worker 1 in outer.
    both = each_kernel.execute(
        "from interp_rpc.notebook import current_pool\n"
        "outcomes = [current_pool().run_everywhere(t, (a,), workers=[w]).wait()[w]\n"
        "            for t, a, w in (('crunch', 3, 0), ('outer', 4, 1))]\n"
        "print([o.worker for o in outcomes])", timeout=60)
    assert both.stream() == "[0, 1]\n", both.outputs
    reply, text, _ = converse(each_kernel, "%parallel_debug --worker 1",
                              ["p inner_value", "up", "p outer_value", "list", "down",
                               "where", "q"])
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "\n8\n" in text and "\n104\n" in text
    assert "outer_value = x + 100" in text  # list, in outer's frame
    reply, text, _ = converse(each_kernel, "%parallel_debug --worker 0", ["p secret", "q"])
    assert "\n21\n" in text


def test_ctrl_c_ends_the_session_and_the_worker_serves_again(each_kernel: Kernel) -> None:
    prepared(each_kernel, CRUNCH)
    failed(each_kernel, "%parallel_map crunch range(6)")
    _, text, prompts = converse(each_kernel, "%debug", ["p secret"], then="interrupt")
    assert "\n21\n" in text
    assert len(prompts) == 2
    assert each_kernel.execute("%parallel_map crunch [4, 5]").status == "ok"
    status = each_kernel.execute("%parallel_status --watch 0")
    assert "debugging" not in str(status.outputs)


def test_the_status_says_debugging_during_a_session(each_kernel: Kernel) -> None:
    prepared(each_kernel, CRUNCH)
    failed(each_kernel, "%parallel_map crunch range(6)")
    assert each_kernel.execute("%parallel_status --watch 60").status == "ok"
    msg_id = each_kernel.send("%parallel_debug", allow_stdin=True)
    request = each_kernel.client.get_stdin_msg(timeout=60)
    assert request["content"]["prompt"] == "(Pdb) "
    deadline = time.monotonic() + 30
    tables = ""
    while "debugging" not in tables and time.monotonic() < deadline:
        for message in each_kernel.drain_iopub(0.5):
            data = message["content"].get("data") or {}
            tables += data.get("text/plain", "")
    each_kernel.client.input("q")
    reply = each_kernel.client.get_shell_msg(timeout=60)
    assert reply["parent_header"]["msg_id"] == msg_id
    assert "debugging" in tables
    assert "post-mortem of crunch" in tables
    each_kernel.execute("%parallel_status --stop")


def test_clear_releases_the_failure(each_kernel: Kernel) -> None:
    prepared(each_kernel, CRUNCH)
    failed(each_kernel, "%parallel_map crunch range(6)")
    cleared = each_kernel.execute("%parallel_debug --clear")
    assert "Released the kept failure of worker(s)" in cleared.stream()
    execution = each_kernel.execute("%debug", allow_stdin=True)
    assert execution.status == "ok"
    assert "keeps no failure to debug" in str(execution.outputs)


@pytest.mark.parametrize("kind", ["--processes"])
def test_a_process_pool_says_why_it_cannot(each_kernel: Kernel, kind: str) -> None:
    assert each_kernel.execute("%load_ext interp_rpc").status == "ok"
    assert each_kernel.execute(f"%parallel_pool -n 1 {kind}", timeout=120).status == "ok"
    execution = each_kernel.execute("%parallel_debug")
    assert execution.status == "ok"
    said = execution.stream("stderr")
    assert "whose workers are processes of their own" in said
    assert "%parallel_debug --local re-runs the last error's failing call here" in said


LOCAL_CRUNCH = """def crunch(x):
    secret = x * 7
    return secret // (x - 3)
"""


def test_local_re_runs_a_process_pool_failure_in_the_kernel(each_kernel: Kernel) -> None:
    for code in ("%load_ext interp_rpc", "%parallel_pool -n 1 --processes", LOCAL_CRUNCH):
        assert each_kernel.execute(code, timeout=120).status == "ok"
    failed(each_kernel, "%parallel_map crunch range(6)")
    # %debug says why the worker's frames cannot be reached, and what to do.
    execution = each_kernel.execute("%debug", allow_stdin=True)
    assert "a ProcessPool's worker keeps no frames" in str(execution.outputs)
    assert "%parallel_debug --local" in str(execution.outputs)
    reply, text, prompts = converse(each_kernel, "%parallel_debug --local", ["p secret, x", "q"])
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "Re-running __main__.crunch here with the arguments that failed in worker 0" in text
    assert "(21, 3)" in text
    assert len(prompts) == 2  # pdb's, as the kernel's input() asks them
