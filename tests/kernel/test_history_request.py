"""history_request and kernel_info's help links, as ipykernel answers them.

ipykernel passes the request's fields to IPython's history with its own
defaults: a range without a stop runs to the end, a search without n returns
every match. (It numbers the current session 0 in a range, as IPython does;
this kernel keeps the session's number, see the range test.)"""

from __future__ import annotations

import uuid
from typing import Any

from conftest import Kernel, Message

CELL_COUNT = 12  # more than xeus's default 10


def history(kernel: Kernel, **content: Any) -> Message:
    msg_id = kernel.client.history(**content)
    while True:
        reply: Message = kernel.client.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def run_cells(kernel: Kernel) -> tuple[str, list[str]]:
    """Runs cells no other kernel ran (the tests' kernels share one history
    database); returns their names' prefix, and the cells."""
    prefix = f"counted_{uuid.uuid4().hex[:8]}_"
    cells = [f"{prefix}{i} = {i}" for i in range(CELL_COUNT)]
    for cell in cells:
        assert kernel.execute(cell).status == "ok"
    return prefix, cells


def test_a_range_without_a_stop_runs_to_the_end(each_kernel: Kernel) -> None:
    _, cells = run_cells(each_kernel)
    reply = history(each_kernel, hist_access_type="range", session=0, start=1)
    assert reply["content"]["status"] == "ok"
    entries = reply["content"]["history"]
    assert [entry[2] for entry in entries] == cells
    sessions = {entry[0] for entry in entries}
    if each_kernel.is_ours:
        # Deliberately different: the session's own number, as in a tail or
        # a search, which jupyter_kernel_test's conformance suite requires
        # (a range asked for session s answers entries of session s).
        [session] = sessions
        assert session > 0
    else:
        # ipykernel passes on IPython's 0 for the current session.
        assert sessions == {0}
    assert [entry[1] for entry in entries] == list(range(1, CELL_COUNT + 1))


def test_a_search_without_n_returns_every_match(each_kernel: Kernel) -> None:
    prefix, cells = run_cells(each_kernel)
    reply = history(each_kernel, hist_access_type="search", pattern=f"{prefix}*")
    assert reply["content"]["status"] == "ok"
    assert [entry[2] for entry in reply["content"]["history"]] == cells


def test_a_tail_keeps_its_n(each_kernel: Kernel) -> None:
    _, cells = run_cells(each_kernel)
    reply = history(each_kernel, hist_access_type="tail", n=3)
    assert [entry[2] for entry in reply["content"]["history"]] == cells[-3:]


def test_help_links_are_ipykernels(each_shared_kernel: Kernel) -> None:
    each_shared_kernel.client.kernel_info()
    reply = each_shared_kernel.client.get_shell_msg(timeout=30)
    links = reply["content"]["help_links"]
    assert [link["text"] for link in links] == [
        "Python Reference",
        "IPython Reference",
        "NumPy Reference",
        "SciPy Reference",
        "Matplotlib Reference",
        "SymPy Reference",
        "pandas Reference",
    ]
    if each_shared_kernel.is_ours:
        # Deliberately: the same pages at their current addresses, where
        # some of ipykernel's are redirects or plain http.
        assert all(link["url"].startswith("https://") for link in links)
