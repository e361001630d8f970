"""Starting the "Python (interp-rpc)" kernel the way JupyterLab does, through
jupyter_client and its kernelspec, and talking to it."""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager
from kernel_ports import claimed_ports

KERNEL_NAME = "interp-rpc"
# ipykernel, as Debian's python3-ipykernel installs it: the kernel ours is
# compared with. A parity test runs against both and must pass on both.
PEER_KERNEL_NAME = "python3"
# Under a sanitizer (tests/sanitized_runs.py) a parity test runs on our kernel
# alone: ipykernel is not instrumented, so its half of the cases would check
# nothing of ours, at the cost of a kernel start and the case's time each.
# What ipykernel does is checked by every run of ./dev test.
UNDER_SANITIZER = bool(os.environ.get("INTERP_RPC_TEST_SANITIZER"))
BOTH_KERNELS = (KERNEL_NAME,) if UNDER_SANITIZER else (KERNEL_NAME, PEER_KERNEL_NAME)
Message = dict[str, Any]
MB = 1024 * 1024


@dataclass
class Execution:
    """What one execute request produced."""

    reply: Message
    # IOPub messages whose parent is the request, without the busy and idle
    # statuses and execute_input.
    outputs: list[Message]
    # IOPub messages with another parent, seen while waiting.
    others: list[Message] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.reply["content"]["status"])

    def stream(self, name: str = "stdout") -> str:
        return "".join(
            m["content"]["text"]
            for m in self.outputs
            if m["msg_type"] == "stream" and m["content"]["name"] == name
        )

    def of_type(self, msg_type: str) -> list[Message]:
        return [m for m in self.outputs if m["msg_type"] == msg_type]


class Kernel:
    def __init__(
        self, manager: KernelManager, client: BlockingKernelClient, name: str = KERNEL_NAME
    ) -> None:
        self.manager = manager
        self.client = client
        self.name = name

    @property
    def is_ours(self) -> bool:
        return self.name == KERNEL_NAME

    def send(self, code: str, **kwargs: Any) -> str:
        msg_id: str = self.client.execute(code, **kwargs)
        return msg_id

    def collect(self, msg_id: str, timeout: float = 30) -> Execution:
        """Reads IOPub until the request's idle status, then its reply."""
        deadline = time.monotonic() + timeout
        outputs: list[Message] = []
        others: list[Message] = []
        while True:
            msg = self.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") != msg_id:
                others.append(msg)
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    break
                continue
            if msg["msg_type"] != "execute_input":
                outputs.append(msg)
        while True:
            reply = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                return Execution(reply, outputs, others)

    def reply_to(self, msg_id: str, timeout: float = 60) -> dict[str, Any]:
        """The content of the shell reply to request ``msg_id``."""
        deadline = time.monotonic() + timeout
        while True:
            reply = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                content: dict[str, Any] = reply["content"]
                return content

    def complete(self, code: str) -> dict[str, Any]:
        """The content of the complete_reply for ``code``, cursor at its end."""
        return self.reply_to(self.client.complete(code, len(code)))

    def execute(self, code: str, timeout: float = 30, **kwargs: Any) -> Execution:
        return self.collect(self.send(code, **kwargs), timeout)

    def restart(self, timeout: float = 60) -> None:
        """Restart the kernel, and return once it runs cells and this
        client hears its IOPub again. The client's IOPub socket reconnects
        to the new kernel on ZeroMQ's own schedule, and what the kernel
        publishes before the subscription takes is lost: on a loaded
        machine, ipykernel's first cell after a restart showed no output."""
        self.manager.restart_kernel(now=False)
        self.client.wait_for_ready(timeout=timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.execute("print('heard')", timeout=5).stream() == "heard\n":
                    return
            except queue.Empty:  # even its idle status came before the subscription
                continue
        raise TimeoutError("no output from the restarted kernel reached IOPub")

    def drain_iopub(self, seconds: float = 0.2) -> list[Message]:
        messages = []
        end = time.monotonic() + seconds
        while True:
            try:
                remaining = max(0.01, end - time.monotonic())
                messages.append(self.client.get_iopub_msg(timeout=remaining))
            except queue.Empty:
                return messages

    def rss_bytes(self) -> int:
        """The kernel process's resident memory now."""
        provisioner = self.manager.provisioner
        assert provisioner is not None
        pid = provisioner.process.pid  # type: ignore[attr-defined]
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"/proc/{pid}/status has no VmRSS")

    @property
    def process_exit_code(self) -> int | None:
        provisioner = self.manager.provisioner
        assert provisioner is not None
        process = provisioner.process  # type: ignore[attr-defined]
        code: int | None = process.poll()
        return code


@pytest.fixture(autouse=True, scope="session")
def own_ipython_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Kernels started by the tests keep their IPython history (and profile)
    apart from the developer's, and share it only with each other."""
    saved = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(tmp_path_factory.mktemp("ipython"))
    yield
    if saved is None:
        del os.environ["IPYTHONDIR"]
    else:
        os.environ["IPYTHONDIR"] = saved


def start_kernel(name: str = KERNEL_NAME, **kwargs: Any) -> Kernel:
    """A kernel started as jupyter_client's start_new_kernel starts it, but
    on ports that no other process is handed before it binds them."""
    with claimed_ports(5) as ports:
        # Without cache_ports, which would draw other ports as it starts.
        manager = KernelManager(kernel_name=name, cache_ports=False)
        (manager.shell_port, manager.iopub_port, manager.stdin_port, manager.hb_port,
         manager.control_port) = ports
        manager.start_kernel(**kwargs)
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
        except RuntimeError:
            client.stop_channels()
            manager.shutdown_kernel()
            raise
    return Kernel(manager, client, name)


def stop_kernel(kernel: Kernel) -> None:
    kernel.client.stop_channels()
    if kernel.manager.is_alive():
        kernel.manager.shutdown_kernel(now=False)


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    """A kernel of its own, for tests that may break or stop it."""
    k = start_kernel()
    try:
        yield k
    finally:
        stop_kernel(k)


@pytest.fixture(scope="module")
def shared_kernel() -> Iterator[Kernel]:
    """One kernel for the tests of a module that leave it usable."""
    k = start_kernel()
    try:
        yield k
    finally:
        stop_kernel(k)


@pytest.fixture(params=BOTH_KERNELS)
def each_kernel(request: pytest.FixtureRequest) -> Iterator[Kernel]:
    """A kernel of its own, once ours and once ipykernel: the same test
    runs against both, and both must pass it."""
    k = start_kernel(request.param)
    try:
        yield k
    finally:
        stop_kernel(k)


@pytest.fixture(params=BOTH_KERNELS, scope="module")
def each_shared_kernel(request: pytest.FixtureRequest) -> Iterator[Kernel]:
    """One kernel of each kind for the parity tests of a module that leave
    it usable."""
    k = start_kernel(request.param)
    try:
        yield k
    finally:
        stop_kernel(k)
