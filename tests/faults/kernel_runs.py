"""Running the interp-rpc kernel under a fault, for the fault tests.

The kernel is started as JupyterLab starts it (jupyter_client, its
kernelspec), with a fault library preloaded. Every wait has a hard limit, so
that a kernel that hangs under the fault fails its test within seconds: it
must answer or exit within START_LIMIT, answer a cell within REPLY_LIMIT, and
exit within EXIT_LIMIT of a shutdown request.
"""

from __future__ import annotations

import os
import queue
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

#: How long the kernel may take to answer kernel_info or to exit, from its start.
START_LIMIT = 60.0
#: How long a cell may take to be answered.
REPLY_LIMIT = 60.0
#: How long the kernel may take to exit after a shutdown request, or after it
#: went silent.
EXIT_LIMIT = 15.0
POLL_SECONDS = 0.2
KERNEL_NAME = "interp-rpc"


@dataclass
class Cell:
    status: str  # "ok" or "error"
    stdout: str
    error: str  # ename: evalue, for an error


@dataclass(repr=False)
class KernelRun:
    """A kernel process under a fault, and what it said."""

    process: subprocess.Popen[bytes]
    stderr_file: Any
    client: BlockingKernelClient | None = None
    cells: list[Cell] = field(default_factory=list)

    @property
    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return str(self.stderr_file.read().decode(errors="replace"))

    def __repr__(self) -> str:
        return (f"kernel pid {self.process.pid}, exit code {self.process.poll()}\n"
                f"cells: {self.cells}\n--- stderr\n{self.stderr}")

    def serving(self) -> bool:
        """Waits until the kernel answers kernel_info (True) or exits
        (False); fails the test if it does neither within START_LIMIT."""
        assert self.client is not None
        deadline = time.monotonic() + START_LIMIT
        msg_id = self.client.kernel_info()
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                reply = self.client.get_shell_msg(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                return True
        pytest.fail(f"the kernel neither answered nor exited in {START_LIMIT:g} s "
                    f"(a hang):\n{self}")

    def execute(self, code: str) -> Cell:
        """Runs a cell; fails the test if the kernel does not answer it
        within REPLY_LIMIT."""
        assert self.client is not None
        msg_id = self.client.execute(code)
        deadline = time.monotonic() + REPLY_LIMIT
        stdout: list[str] = []
        reply: dict[str, Any] | None = None
        idle = False
        while not (reply is not None and idle):
            if time.monotonic() > deadline:
                pytest.fail(f"no answer to {code!r} in {REPLY_LIMIT:g} s (a hang):\n{self}")
            if self.process.poll() is not None:
                pytest.fail(f"the kernel exited while running {code!r}:\n{self}")
            try:
                msg = self.client.get_iopub_msg(timeout=POLL_SECONDS)
                if msg["parent_header"].get("msg_id") == msg_id:
                    if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
                        stdout.append(msg["content"]["text"])
                    if (msg["msg_type"] == "status"
                            and msg["content"]["execution_state"] == "idle"):
                        idle = True
            except queue.Empty:
                pass
            if reply is None:
                try:
                    shell = self.client.get_shell_msg(timeout=0)
                except queue.Empty:
                    continue
                if shell["parent_header"].get("msg_id") == msg_id:
                    reply = shell
        content = reply["content"]
        failed = content["status"] != "ok"
        error = f"{content.get('ename')}: {content.get('evalue')}" if failed else ""
        cell = Cell(content["status"], "".join(stdout), error)
        self.cells.append(cell)
        return cell

    def control(self, msg_type: str, content: dict[str, Any] | None = None) -> dict[str, Any]:
        """Sends a control request; returns its reply's content, failing the
        test if none comes within REPLY_LIMIT."""
        assert self.client is not None
        msg = self.client.session.msg(msg_type, content or {})
        self.client.control_channel.send(msg)
        deadline = time.monotonic() + REPLY_LIMIT
        while time.monotonic() < deadline:
            try:
                reply = self.client.get_control_msg(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                answer: dict[str, Any] = reply["content"]
                return answer
        pytest.fail(f"no answer to {msg_type} in {REPLY_LIMIT:g} s (a hang):\n{self}")

    def shut_down(self) -> int:
        """Asks the kernel to shut down; returns its exit code, failing the
        test if it has not exited within EXIT_LIMIT."""
        assert self.client is not None
        self.client.shutdown()
        return self.exit_code()

    def exit_code(self) -> int:
        try:
            return self.process.wait(timeout=EXIT_LIMIT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the kernel did not exit within {EXIT_LIMIT:g} s (a hang):\n{self}")


@contextmanager
def kernel_under(library: Path, env: dict[str, str]) -> Iterator[KernelRun]:
    """A kernel started with ``library`` preloaded (after whatever is
    preloaded already) and ``env``; killed on the way out if still running."""
    preload = " ".join(filter(None, [os.environ.get("LD_PRELOAD", ""), str(library)]))
    manager = KernelManager(kernel_name=KERNEL_NAME)
    with tempfile.TemporaryFile() as stderr:
        manager.start_kernel(env={**os.environ, "LD_PRELOAD": preload, **env},
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
        process = manager.provisioner.process  # type: ignore[union-attr]
        run = KernelRun(process, stderr)
        client = manager.client()
        client.start_channels()
        run.client = client
        try:
            yield run
        finally:
            client.stop_channels()
            if process.poll() is None:
                process.kill()
            process.wait()
            manager.cleanup_resources()
            manager.context.destroy(linger=0)  # each manager has its own: its sockets' fds
