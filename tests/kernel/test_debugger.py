"""JupyterLab's debugger, driven through jupyter_client as JupyterLab drives
it: debug_request on the control channel, debug_event on IOPub. Each
session test runs against ipykernel too, and both kernels must pass it.

A session: initialize, attach, debugInfo, dumpCell and setBreakpoints for
each cell with breakpoints, configurationDone; a cell that reaches a
breakpoint stops, and the frontend asks for the stack, the scopes and the
variables, steps, and continues."""

from __future__ import annotations

import queue
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import KERNEL_NAME, Kernel, Message, start_kernel, stop_kernel

# Bounds on waits, never expectations of speed: starting debugpy's adapter
# takes seconds on a loaded machine.
WAIT = 60

# What JupyterLab's initialize request says.
JUPYTERLAB_INITIALIZE = {
    "clientID": "jupyterlab",
    "clientName": "JupyterLab",
    "adapterID": "python",
    "pathFormat": "path",
    "linesStartAt1": True,
    "columnsStartAt1": True,
    "supportsVariableType": True,
    "supportsVariablePaging": True,
    "supportsRunInTerminalRequest": True,
    "locale": "en",
}

# A cell whose function stops at line 2 when line 5 calls it.
CELL = """def add(a, b):
    c = a + b
    return c

total = add(2, 3)
print("total", total)
"""


# ipykernel chooses debugpy's port by binding a random port and letting it
# go; debugpy binds it again later. On a busy machine another process can
# take the port in between, and the peer's initialize fails with this error
# on IOPub. Ours has the system choose the port as debugpy binds it.
PEER_PORT_TAKEN = "Can't listen for client connections: [Errno 98] Address already in use"


class PeerPortTaken(Exception):
    """ipykernel's debugger did not start: its port was taken."""


class DebugClient:
    """The debugger side of a frontend, on one kernel's channels."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.seq = 0
        self.iopub: list[Message] = []  # IOPub messages read while waiting for events

    def send(self, command: str, arguments: dict[str, Any] | None = None) -> str:
        self.seq += 1
        content = {"type": "request", "seq": self.seq, "command": command,
                   "arguments": arguments or {}}
        msg = self.kernel.client.session.msg("debug_request", content)
        self.kernel.client.control_channel.send(msg)
        msg_id: str = msg["header"]["msg_id"]
        return msg_id

    def reply(self, msg_id: str, timeout: float = WAIT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            reply = self.kernel.client.get_control_msg(
                timeout=max(0.1, deadline - time.monotonic()))
            if reply["parent_header"].get("msg_id") == msg_id:
                assert reply["msg_type"] == "debug_reply"
                content: dict[str, Any] = reply["content"]
                return content

    def request(self, command: str, arguments: dict[str, Any] | None = None,
                timeout: float = WAIT) -> dict[str, Any]:
        """The response to one request, which must have succeeded."""
        response = self.reply(self.send(command, arguments), timeout)
        if not response.get("success"):
            if command == "initialize" and not self.kernel.is_ours and any(
                    PEER_PORT_TAKEN in str(e.get("evalue")) for e in self.iopub_errors()):
                raise PeerPortTaken(response)
            pytest.fail(f"{command} failed: {response}; the kernel's errors on IOPub: "
                        f"{self.iopub_errors()}", pytrace=False)
        if self.kernel.is_ours:
            # ipykernel answers copyToGlobals with the response to the
            # setExpression it sent debugpy, numbered seq + 1.
            assert response["command"] == command
            assert response["request_seq"] == self.seq
        return response

    def iopub_errors(self) -> list[dict[str, Any]]:
        """The error and stderr messages on IOPub, read until it is quiet for
        a second: ipykernel publishes there why its debugger did not start."""
        while True:
            try:
                self.iopub.append(self.kernel.client.get_iopub_msg(timeout=1.0))
            except queue.Empty:
                break
        return [m["content"] for m in self.iopub
                if m["msg_type"] == "error"
                or (m["msg_type"] == "stream" and m["content"]["name"] == "stderr")]

    def event(self, name: str, timeout: float = WAIT) -> dict[str, Any]:
        """The body of the next debug_event ``name`` on IOPub."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no '{name}' debug_event in {timeout} s; saw "
                                     f"{[m['msg_type'] for m in self.iopub][-20:]}")
            try:
                msg = self.kernel.client.get_iopub_msg(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            self.iopub.append(msg)
            if msg["msg_type"] == "debug_event" and msg["content"].get("event") == name:
                body: dict[str, Any] = msg["content"].get("body", {})
                return body

    def start(self) -> None:
        self.request("initialize", JUPYTERLAB_INITIALIZE)
        self.request("attach")
        self.request("debugInfo")

    def set_breakpoints(self, code: str, lines: list[int]) -> str:
        path: str = self.request("dumpCell", {"code": code})["body"]["sourcePath"]
        placed = self.request("setBreakpoints", {
            "source": {"path": path}, "breakpoints": [{"line": n} for n in lines],
            "sourceModified": False})["body"]["breakpoints"]
        assert [b["line"] for b in placed] == lines
        assert all(b["verified"] for b in placed)
        return path

    def top_frame(self, thread_id: int) -> dict[str, Any]:
        frames = self.request("stackTrace", {"threadId": thread_id})["body"]["stackFrames"]
        frame: dict[str, Any] = frames[0]
        return frame

    def locals_of(self, frame_id: int) -> dict[str, str]:
        scopes = self.request("scopes", {"frameId": frame_id})["body"]["scopes"]
        local_scope = next(s for s in scopes if s["name"] == "Locals")
        variables = self.request(
            "variables", {"variablesReference": local_scope["variablesReference"]}
        )["body"]["variables"]
        return {v["name"]: v["value"] for v in variables}

    def run_to_breakpoint(self, code: str) -> tuple[str, int]:
        """Sends the cell; returns its msg_id and the stopped thread."""
        msg_id = self.kernel.send(code)
        stopped = self.event("stopped")
        assert stopped["reason"] == "breakpoint"
        return msg_id, int(stopped["threadId"])


@pytest.fixture
def debugging(each_kernel: Kernel) -> Iterator[DebugClient]:
    debug = DebugClient(each_kernel)
    try:
        debug.start()
    except PeerPortTaken as taken:
        # ipykernel's own race, not the session under test: a new peer
        # draws a new port. Ours is never given a second chance. The
        # warning shows in the run's summary, so a repeat counts them.
        warnings.warn(f"ipykernel's debugger port was taken; a new peer kernel ({taken})",
                      stacklevel=1)
        replacement = start_kernel(each_kernel.name)
        try:
            debug = DebugClient(replacement)
            debug.start()
            yield debug
        finally:
            stop_kernel(replacement)
        return
    yield debug


def test_kernel_info_advertises_the_debugger(each_kernel: Kernel) -> None:
    client = each_kernel.client
    content = each_kernel.reply_to(client.kernel_info())
    assert "debugger" in content["supported_features"]
    if each_kernel.is_ours:
        assert content["debugger"] is True


def test_a_full_breakpoint_session(debugging: DebugClient) -> None:
    path = debugging.set_breakpoints(CELL, [2])
    debugging.request("configurationDone")
    info = debugging.request("debugInfo")["body"]
    assert info["isStarted"] is True
    assert {"source": path, "breakpoints": [{"line": 2}]} in info["breakpoints"]

    msg_id, thread = debugging.run_to_breakpoint(CELL)
    frame = debugging.top_frame(thread)
    assert (frame["name"], frame["line"], frame["source"]["path"]) == ("add", 2, path)
    assert debugging.locals_of(frame["id"]) == {"a": "2", "b": "3"}
    assert thread in debugging.request("debugInfo")["body"]["stoppedThreads"]

    debugging.request("next", {"threadId": thread})
    assert debugging.event("stopped")["reason"] == "step"
    frame = debugging.top_frame(thread)
    assert frame["line"] == 3
    assert debugging.locals_of(frame["id"])["c"] == "5"

    debugging.request("continue", {"threadId": thread})
    execution = debugging.kernel.collect(msg_id, timeout=WAIT)
    assert execution.status == "ok"
    assert debugging.kernel.execute("print(total)").stream() == "5\n"


def test_a_breakpoint_survives_a_rerun_of_its_cell(debugging: DebugClient) -> None:
    debugging.set_breakpoints(CELL, [2])
    debugging.request("configurationDone")
    for _ in range(2):
        msg_id, thread = debugging.run_to_breakpoint(CELL)
        assert debugging.top_frame(thread)["line"] == 2
        debugging.request("continue", {"threadId": thread})
        assert debugging.kernel.collect(msg_id, timeout=WAIT).status == "ok"


def test_a_cell_that_starts_with_empty_lines_stops_on_its_line(debugging: DebugClient) -> None:
    # IPython drops a cell's leading empty lines, unless a debugger runs.
    cell = "\n\nfirst = 1\nsecond = 2\n"
    path = debugging.set_breakpoints(cell, [4])
    debugging.request("configurationDone")
    msg_id, thread = debugging.run_to_breakpoint(cell)
    frame = debugging.top_frame(thread)
    assert (frame["source"]["path"], frame["line"]) == (path, 4)
    assert "first" in {v["name"] for v in debugging.request(
        "variables", {"variablesReference": next(
            s["variablesReference"] for s in debugging.request(
                "scopes", {"frameId": frame["id"]})["body"]["scopes"]
            if s["name"] in ("Locals", "Globals"))})["body"]["variables"]}
    debugging.request("continue", {"threadId": thread})
    assert debugging.kernel.collect(msg_id, timeout=WAIT).status == "ok"


def test_a_breakpoint_in_a_function_another_cell_calls(debugging: DebugClient) -> None:
    definition = "def scale(x):\n    y = x * 10\n    return y\n"
    path = debugging.set_breakpoints(definition, [2])
    debugging.request("configurationDone")
    assert debugging.kernel.execute(definition).status == "ok"

    msg_id, thread = debugging.run_to_breakpoint("result = scale(4)\n")
    frame = debugging.top_frame(thread)
    assert (frame["name"], frame["source"]["path"], frame["line"]) == ("scale", path, 2)
    assert debugging.locals_of(frame["id"]) == {"x": "4"}
    debugging.request("continue", {"threadId": thread})
    assert debugging.kernel.collect(msg_id, timeout=WAIT).status == "ok"


def test_the_call_stack_shows_the_users_frames_only(debugging: DebugClient) -> None:
    """JupyterLab's Call Stack lists every frame the kernel reports: the
    kernel's own (its wrapper around the cell's code too) stay hidden."""
    definition = "def halve(x):\n    y = x // 2\n    return y\n"
    debugging.set_breakpoints(definition, [2])
    debugging.request("configurationDone")
    assert debugging.kernel.execute(definition).status == "ok"

    msg_id, thread = debugging.run_to_breakpoint("halved = halve(8)\n")
    frames = debugging.request("stackTrace", {"threadId": thread})["body"]["stackFrames"]
    assert [f["name"] for f in frames] == ["halve", "<module>"], [
        (f["name"], f.get("source", {}).get("path")) for f in frames]
    debugging.request("continue", {"threadId": thread})
    assert debugging.kernel.collect(msg_id, timeout=WAIT).status == "ok"


def test_stepping_into_a_module_file(debugging: DebugClient, tmp_path: Path) -> None:
    module = tmp_path / "stepped_module.py"
    module.write_text("def triple(n):\n    m = n * 3\n    return m\n")
    setup = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nimport stepped_module\n"
    assert debugging.kernel.execute(setup).status == "ok"
    cell = "before = 1\nvalue = stepped_module.triple(7)\n"
    debugging.set_breakpoints(cell, [2])
    debugging.request("configurationDone")

    msg_id, thread = debugging.run_to_breakpoint(cell)
    debugging.request("stepIn", {"threadId": thread})
    assert debugging.event("stopped")["reason"] == "step"
    frame = debugging.top_frame(thread)
    assert (frame["name"], frame["source"]["path"]) == ("triple", str(module))
    source = debugging.request("source", {"source": {"path": str(module)}})["body"]
    assert source["content"] == module.read_text()
    debugging.request("continue", {"threadId": thread})
    assert debugging.kernel.collect(msg_id, timeout=WAIT).status == "ok"


def test_the_variables_panel_between_cells(debugging: DebugClient) -> None:
    assert debugging.kernel.execute("x = 21\ndata = {'key': [1, 2]}\n").status == "ok"
    variables = debugging.request("inspectVariables")["body"]["variables"]
    by_name = {v["name"]: v for v in variables}
    assert by_name["x"]["value"] == "21"
    assert by_name["x"]["type"] == "int"
    assert not any(name in by_name for name in ("In", "Out", "get_ipython", "exit"))
    children = debugging.request(
        "variables", {"variablesReference": by_name["data"]["variablesReference"]}
    )["body"]["variables"]
    assert any("key" in child["name"] and "[1, 2]" in child["value"] for child in children)

    rich = debugging.request("richInspectVariables", {"variableName": "x"})["body"]
    assert rich["data"]["text/plain"] == "21"


def test_rich_inspection_and_copy_to_globals_while_stopped(debugging: DebugClient) -> None:
    debugging.set_breakpoints(CELL, [3])
    debugging.request("configurationDone")
    msg_id, thread = debugging.run_to_breakpoint(CELL)
    frame = debugging.top_frame(thread)
    rich = debugging.request(
        "richInspectVariables", {"variableName": "c", "frameId": frame["id"]})["body"]
    assert rich["data"]["text/plain"] == "5"
    debugging.request("copyToGlobals", {
        "srcVariableName": "c", "dstVariableName": "copied", "srcFrameId": frame["id"]})
    debugging.request("continue", {"threadId": thread})
    assert debugging.kernel.collect(msg_id, timeout=WAIT).status == "ok"
    assert debugging.kernel.execute("print(copied)").stream() == "5\n"


def test_modules_source_and_dumped_cells(debugging: DebugClient) -> None:
    # ipykernel's response is its body alone, without success or command.
    modules = debugging.reply(
        debugging.send("modules", {"startModule": 0, "moduleCount": 10000}))["body"]
    assert modules["totalModules"] > 0
    assert any(m["name"] == "json" or m["name"].startswith("IPython") for m in modules["modules"])
    path = debugging.request("dumpCell", {"code": "x = 'é'\n"})["body"]["sourcePath"]
    assert Path(path).read_text(encoding="utf-8") == "x = 'é'\n"
    source = debugging.request("source", {"source": {"path": path}})["body"]
    assert source["content"] == "x = 'é'\n"
    info = debugging.request("debugInfo")["body"]
    assert path.startswith(info["tmpFilePrefix"]) and path.endswith(info["tmpFileSuffix"])
    assert info["hashMethod"] == "Murmur2"


def test_a_second_session_after_disconnect(debugging: DebugClient) -> None:
    debugging.set_breakpoints(CELL, [2])
    debugging.request("configurationDone")
    debugging.request("disconnect", {"restart": False, "terminateDebuggee": False})
    assert debugging.request("debugInfo")["body"]["breakpoints"] == []
    # Without a debugger the cell runs through.
    assert debugging.kernel.execute(CELL).stream() == "total 5\n"

    debugging.start()
    debugging.set_breakpoints(CELL, [2])
    debugging.request("configurationDone")
    msg_id, thread = debugging.run_to_breakpoint(CELL)
    debugging.request("continue", {"threadId": thread})
    assert debugging.kernel.collect(msg_id, timeout=WAIT).status == "ok"


# ipykernel 7.2 with debugpy 1.8.20 fails both interrupt tests: the
# KeyboardInterrupt ends the cell from inside debugpy's wait, which leaves the
# thread marked stopped, and the next cell stops at its first line with no
# stopped event, and never ends.
SLEEPS_AFTER_ITS_BREAKPOINT = """import time
def pause():
    here = 1
    time.sleep(120)
pause()
"""
BREAKPOINT_IN_A_LOOP = """for i in range(10**9):
    j = i
"""


def interrupt(kernel: Kernel) -> None:
    kernel.client.control_channel.send(kernel.client.session.msg("interrupt_request", {}))


@pytest.mark.parametrize("code, line", [(SLEEPS_AFTER_ITS_BREAKPOINT, 3),
                                        (BREAKPOINT_IN_A_LOOP, 2)])
def test_an_interrupt_while_stopped_ends_the_cell(kernel: Kernel, code: str, line: int) -> None:
    debugging = DebugClient(kernel)
    debugging.start()
    debugging.set_breakpoints(code, [line])
    debugging.request("configurationDone")
    msg_id, _ = debugging.run_to_breakpoint(code)
    interrupt(kernel)
    execution = kernel.collect(msg_id, timeout=WAIT)
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "KeyboardInterrupt"
    assert kernel.execute("print(1 + 1)", timeout=WAIT).stream() == "2\n"
    # The session goes on: the breakpoint still stops the cell.
    msg_id, thread = debugging.run_to_breakpoint(code)
    assert debugging.top_frame(thread)["line"] == line
    interrupt(kernel)
    assert kernel.collect(msg_id, timeout=WAIT).status == "error"


def test_a_restart_while_stopped(debugging: DebugClient) -> None:
    debugging.set_breakpoints(CELL, [2])
    debugging.request("configurationDone")
    debugging.run_to_breakpoint(CELL)
    kernel = debugging.kernel
    kernel.restart(timeout=WAIT)
    execution = kernel.execute("print(1 + 1)", timeout=WAIT)
    assert execution.stream() == "2\n", (execution.outputs, execution.others)


def test_a_shutdown_while_stopped_exits_cleanly() -> None:
    kernel = start_kernel(KERNEL_NAME)
    try:
        debug = DebugClient(kernel)
        debug.start()
        debug.set_breakpoints(CELL, [2])
        debug.request("configurationDone")
        debug.run_to_breakpoint(CELL)
        process = kernel.manager.provisioner.process  # type: ignore[union-attr]
        kernel.manager.shutdown_kernel(now=False)
        # jupyter_client kills a kernel that has not exited 5 s after its
        # shutdown request; a clean exit is code 0.
        assert process.wait(timeout=WAIT) == 0
    finally:
        stop_kernel(kernel)


def test_debugpy_loads_on_the_first_initialize(kernel: Kernel) -> None:
    check = "import sys; print('debugpy' in sys.modules)"
    assert kernel.execute(check).stream() == "False\n"
    debug = DebugClient(kernel)
    debug.request("debugInfo")
    debug.request("inspectVariables")
    assert kernel.execute(check).stream() == "False\n"
    debug.request("initialize", JUPYTERLAB_INITIALIZE)
    assert kernel.execute(check).stream() == "True\n"


def test_a_debug_request_at_startup_waits_for_ipythons_import(kernel: Kernel) -> None:
    """JupyterLab sends debugInfo as soon as the kernel is ready, while a
    thread still imports IPython. Importing the debugger on the control
    thread meanwhile handed that thread half-imported modules (dataclasses
    reads a ``typing`` that another thread is still running), and the
    kernel died at startup. The debugger now imports once IPython is in:
    sys.modules, which keeps the order of imports, shows which came first."""
    DebugClient(kernel).request("debugInfo")
    order = kernel.execute(
        "import sys; names = list(sys.modules)\n"
        "print([name for name in ('IPython', 'comm', 'interp_rpc_kernel.event_loop')\n"
        "       if names.index(name) > names.index('interp_rpc_kernel.debugger')])"
    ).stream()
    assert order == "[]\n", f"imported after the debugger: {order}"


@pytest.mark.parametrize("content", [
    {}, {"command": 3}, {"command": "stackTrace"}, {"command": "no such command", "seq": 4},
    {"command": "dumpCell", "arguments": {"code": 5}}, {"command": "source", "arguments": []},
])
def test_bad_debug_requests_get_an_error_response(shared_kernel: Kernel,
                                                  content: dict[str, Any]) -> None:
    debug = DebugClient(shared_kernel)
    msg = shared_kernel.client.session.msg("debug_request", content)
    shared_kernel.client.control_channel.send(msg)
    response = debug.reply(msg["header"]["msg_id"])
    assert response["type"] == "response"
    assert response["success"] is False
    assert response["message"]


def test_debug_requests_on_the_shell_channel_are_refused(shared_kernel: Kernel) -> None:
    msg = shared_kernel.client.session.msg(
        "debug_request", {"type": "request", "seq": 1, "command": "debugInfo"})
    shared_kernel.client.shell_channel.send(msg)
    reply = shared_kernel.reply_to(msg["header"]["msg_id"])
    assert reply["status"] == "error"
    assert "control channel" in reply["evalue"]
