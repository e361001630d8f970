"""stop_on_error as the Jupyter protocol says and ipykernel does: true unless
the request says otherwise; once a cell fails, the execute requests already
queued are answered "aborted", each between a busy and an idle status, and
every other queued request is handled normally."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import Kernel, Message


def waiting_cell(release: Path) -> str:
    """A cell that runs until the test has queued its requests behind it."""
    return (
        "import os, time\n"
        "deadline = time.monotonic() + 120\n"
        f"while not os.path.exists({str(release)!r}) and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)"
    )


def send(kernel: Kernel, msg_type: str, content: dict[str, Any]) -> str:
    msg = kernel.client.session.msg(msg_type, content)
    kernel.client.shell_channel.send(msg)
    return str(msg["header"]["msg_id"])


def replies(kernel: Kernel, msg_ids: list[str]) -> dict[str, Message]:
    found: dict[str, Message] = {}
    while len(found) < len(msg_ids):
        reply = kernel.client.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") in msg_ids:
            found[reply["parent_header"]["msg_id"]] = reply
    return found


def iopub_until_idle(kernel: Kernel, msg_ids: list[str]) -> dict[str, list[Message]]:
    """IOPub messages of each request, until each one's idle status."""
    seen: dict[str, list[Message]] = {msg_id: [] for msg_id in msg_ids}
    idle: set[str] = set()
    while idle != set(msg_ids):
        msg = kernel.client.get_iopub_msg(timeout=60)
        parent = msg["parent_header"].get("msg_id")
        if parent in seen:
            seen[parent].append(msg)
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                idle.add(parent)
    return seen


def kinds(messages: list[Message]) -> list[str]:
    return [
        m["content"]["execution_state"] if m["msg_type"] == "status" else m["msg_type"]
        for m in messages
    ]


def test_queued_executes_are_aborted_after_an_error(kernel: Kernel, tmp_path: Path) -> None:
    release = tmp_path / "release"
    waiting = kernel.send(waiting_cell(release))
    # No stop_on_error field: it defaults to true.
    failing = send(kernel, "execute_request", {"code": "1/0"})
    queued = send(kernel, "execute_request", {"code": "print('must not run')"})
    info = send(kernel, "kernel_info_request", {})
    comms = send(kernel, "comm_info_request", {})
    queued_too = kernel.send("print('nor this')")
    release.touch()

    ids = [waiting, failing, queued, info, comms, queued_too]
    found = replies(kernel, ids)
    assert found[waiting]["content"]["status"] == "ok"
    assert found[failing]["content"]["status"] == "error"
    for aborted in (queued, queued_too):
        assert found[aborted]["content"]["status"] == "aborted"
    assert found[info]["msg_type"] == "kernel_info_reply"
    assert found[info]["content"]["status"] == "ok"
    assert found[comms]["content"]["status"] == "ok"

    published = iopub_until_idle(kernel, ids)
    for aborted in (queued, queued_too):
        assert kinds(published[aborted]) == ["busy", "idle"]
    assert kinds(published[info]) == ["busy", "idle"]

    # The abort ended with the queue: the next cell runs.
    after = kernel.execute("print('runs')")
    assert after.status == "ok"
    assert after.stream() == "runs\n"


def test_stop_on_error_false_keeps_the_queue(kernel: Kernel, tmp_path: Path) -> None:
    release = tmp_path / "release"
    waiting = kernel.send(waiting_cell(release))
    failing = kernel.send("1/0", stop_on_error=False)
    queued = kernel.send("print('runs')")
    release.touch()
    found = replies(kernel, [waiting, failing, queued])
    assert found[failing]["content"]["status"] == "error"
    assert found[queued]["content"]["status"] == "ok"


def test_a_silent_error_aborts_nothing(kernel: Kernel, tmp_path: Path) -> None:
    release = tmp_path / "release"
    waiting = kernel.send(waiting_cell(release))
    failing = kernel.send("1/0", silent=True)
    queued = kernel.send("print('runs')")
    release.touch()
    found = replies(kernel, [waiting, failing, queued])
    assert found[failing]["content"]["status"] == "error"
    assert found[queued]["content"]["status"] == "ok"
