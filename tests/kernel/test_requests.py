"""Requests beyond the everyday ones: every request gets a reply.

ipykernel answers usage_request (on the control channel: JupyterLab's
resource indicator) and connect_request, and ignores any type it does not
know. This kernel answers the same two on either channel, and any unknown
type with an error reply that names it, so that a client waiting for a reply
never hangs."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Kernel, Message

VIRTUAL_MEMORY_FIELDS = {
    "total",
    "available",
    "percent",
    "used",
    "free",
    "active",
    "inactive",
    "buffers",
    "cached",
    "shared",
    "slab",
}


def request(kernel: Kernel, msg_type: str, channel: str, content: Any = None) -> Message:
    """Sends a request; returns the next reply on that channel, which must be
    its answer."""
    msg = kernel.client.session.msg(msg_type, content or {})
    getattr(kernel.client, f"{channel}_channel").send(msg)
    reply: Message = getattr(kernel.client, f"get_{channel}_msg")(timeout=30)
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    return reply


def test_usage_request_on_control(each_shared_kernel: Kernel) -> None:
    # A second request: CPU percentages are measured since the previous one.
    request(each_shared_kernel, "usage_request", "control")
    each_shared_kernel.execute("sum(range(2_000_000))")
    reply = request(each_shared_kernel, "usage_request", "control")
    assert reply["msg_type"] == "usage_reply"
    content = reply["content"]
    provisioner = each_shared_kernel.manager.provisioner
    assert content["pid"] == provisioner.process.pid  # type: ignore[union-attr]
    assert isinstance(content["hostname"], str) and content["hostname"]
    assert isinstance(content["kernel_cpu"], int | float) and content["kernel_cpu"] >= 0
    # The kernel's own memory alone is tens of megabytes.
    assert isinstance(content["kernel_memory"], int) and content["kernel_memory"] > 10_000_000
    assert isinstance(content["cpu_count"], int) and content["cpu_count"] >= 1
    if "host_cpu_percent" in content:  # left out when 0.0
        assert 0 < content["host_cpu_percent"] <= 100
    memory = content["host_virtual_memory"]
    assert set(memory) == VIRTUAL_MEMORY_FIELDS
    assert 0 < memory["available"] <= memory["total"]
    assert 0 <= memory["percent"] <= 100


def test_usage_request_counts_the_kernels_children(each_shared_kernel: Kernel) -> None:
    # A child that holds 200 MB of written memory shows in kernel_memory.
    start = each_shared_kernel.execute(
        "import subprocess, sys\n"
        "hog = subprocess.Popen([sys.executable, '-c',\n"
        "    'import sys; b = bytearray(200_000_000); print(1, flush=True); sys.stdin.read()'],\n"
        "    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)\n"
        "assert hog.stdout.readline() == '1\\n'\n"
    )
    assert start.status == "ok", start.reply
    try:
        with_child = request(each_shared_kernel, "usage_request", "control")["content"]
    finally:
        each_shared_kernel.execute("hog.stdin.close(); hog.wait()")
    without = request(each_shared_kernel, "usage_request", "control")["content"]
    assert with_child["kernel_memory"] - without["kernel_memory"] > 150_000_000


def test_connect_request_names_the_ports(each_shared_kernel: Kernel) -> None:
    reply = request(each_shared_kernel, "connect_request", "shell")
    assert reply["msg_type"] == "connect_reply"
    info = each_shared_kernel.manager.get_connection_info()
    content = reply["content"]
    assert content["status"] == "ok"
    for name in ("shell", "iopub", "stdin", "hb", "control"):
        assert content[f"{name}_port"] == info[f"{name}_port"]


@pytest.mark.parametrize("channel", ["shell", "control"])
def test_an_unknown_request_type(each_shared_kernel: Kernel, channel: str) -> None:
    client = each_shared_kernel.client
    unknown = client.session.msg("frobnicate_request", {})
    getattr(client, f"{channel}_channel").send(unknown)
    # Then a request both kernels answer, on the same channel: the replies
    # come in order.
    known = client.session.msg("kernel_info_request", {})
    getattr(client, f"{channel}_channel").send(known)
    replies = []
    while not replies or replies[-1]["msg_type"] != "kernel_info_reply":
        replies.append(getattr(client, f"get_{channel}_msg")(timeout=30))
    if each_shared_kernel.is_ours:
        # Deliberately different: an error reply naming the type, so that a
        # client waiting for it does not hang.
        first, _ = replies
        assert first["parent_header"]["msg_id"] == unknown["header"]["msg_id"]
        assert first["msg_type"] == "frobnicate_reply"
        assert first["content"]["status"] == "error"
        assert first["content"]["ename"] == "UnknownRequest"
        assert "frobnicate_request" in first["content"]["evalue"]
    else:
        # ipykernel logs it and answers nothing.
        assert [r["msg_type"] for r in replies] == ["kernel_info_reply"]
