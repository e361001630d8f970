"""The debugger's parts that need no kernel: the cells' file names (which
must be the ones JupyterLab computes, as ipykernel's are), the DAP framing,
and the Variables panel's view of a namespace."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ipykernel.compiler import get_tmp_hash_seed, murmur2_x86

from interp_rpc_kernel.cell_files import (
    CELL_FILE_SUFFIX,
    HASH_SEED,
    cell_file_name,
    cell_file_prefix,
)
from interp_rpc_kernel.cell_files import murmur2_x86 as our_murmur2
from interp_rpc_kernel.dap_connection import (
    DapConnection,
    DapConnectionClosed,
    DapProtocolError,
)
from interp_rpc_kernel.debugger import KernelDebugger
from interp_rpc_kernel.namespace_variables import NamespaceVariables, is_shown


@given(st.text())
def test_cell_hashes_are_ipykernels(code: str) -> None:
    # ipykernel's hashes the UTF-8 text (JupyterLab's computes the same);
    # a lone surrogate is not UTF-8 and ipykernel fails on it.
    encodable = code.encode("utf-8", "replace").decode("utf-8")
    assert get_tmp_hash_seed() == HASH_SEED
    assert our_murmur2(encodable.encode(), HASH_SEED) == murmur2_x86(encodable, HASH_SEED)


def test_the_debugger_imports_no_ipython() -> None:
    # It may be imported while the kernel imports IPython on another
    # thread: two threads importing IPython's circular modules deadlock.
    code = ("import sys; import interp_rpc_kernel.debugger; "
            "assert not [m for m in sys.modules if m.startswith('IPython')], 'IPython'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_cell_file_name() -> None:
    name = cell_file_name("1 + 1")
    assert name == f"{cell_file_prefix()}{murmur2_x86('1 + 1', HASH_SEED)}{CELL_FILE_SUFFIX}"
    assert cell_file_name("\ud800") == cell_file_name("\ufffd")


def connected_pair() -> tuple[DapConnection, socket.socket]:
    ours, theirs = socket.socketpair()
    return DapConnection(ours), theirs


def test_dap_messages_cross_in_pieces_and_together() -> None:
    connection, peer = connected_pair()
    body = b'{"type": "event", "event": "stopped", "body": {"text": "\xc3\xa9"}}'
    whole = b"Content-Length: %d\r\n\r\n" % len(body) + body
    peer.sendall(whole[:10])
    assert connection.receive(0.05) is None
    peer.sendall(whole[10:] + whole)
    assert connection.receive(5) == {"type": "event", "event": "stopped", "body": {"text": "é"}}
    assert connection.has_buffered_message()
    assert connection.receive(0)["event"] == "stopped"  # type: ignore[index]
    assert not connection.has_buffered_message()
    connection.send({"command": "next", "arguments": {"text": "é"}})
    received = peer.recv(1000)
    assert received.startswith(b"Content-Length: ")
    peer.close()
    with pytest.raises(DapConnectionClosed):
        connection.receive(5)


@pytest.mark.parametrize("garbage", [
    b"Content-Length: x\r\n\r\n{}", b"Nothing: 2\r\n\r\n{}", b"Content-Length: 2\r\n\r\n[]",
    b"x" * 2000,
])
def test_dap_garbage_is_a_protocol_error(garbage: bytes) -> None:
    connection, peer = connected_pair()
    peer.sendall(garbage)
    with pytest.raises(DapProtocolError):
        connection.receive(5)


def test_a_waiting_receive_gets_a_late_message() -> None:
    connection, peer = connected_pair()
    body = b'{"seq": 1}'
    timer = threading.Timer(0.2, peer.sendall, [b"Content-Length: 10\r\n\r\n" + body])
    timer.start()
    assert connection.receive(30) == {"seq": 1}
    timer.join()


def test_the_variables_panel_hides_the_shells_names() -> None:
    assert is_shown("x") and is_shown("_private")
    for name in ("In", "Out", "_", "_3", "_i", "_i3", "_ih", "get_ipython", "__builtins__"):
        assert not is_shown(name), name


def test_the_variables_panel_expands_containers() -> None:
    class Point:
        def __init__(self) -> None:
            self.x = 1

    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    view = NamespaceVariables()
    namespace = {"n": 1, "items": [10, "a"], "mapping": {"k": (1,)}, "point": Point(),
                 "broken": Broken(), "empty": [], "_": 3}
    top = {v["name"]: v for v in view.top_level(namespace)}
    assert set(top) == {"n", "items", "mapping", "point", "broken", "empty"}
    assert top["n"] == {"name": "n", "value": "1", "type": "int", "variablesReference": 0,
                        "evaluateName": "n"}
    assert top["empty"]["variablesReference"] == 0
    assert "Broken" in top["broken"]["value"]  # reprlib names a failing repr
    items = view.children(top["items"]["variablesReference"])
    assert [(v["name"], v["value"]) for v in items] == [("0", "10"), ("1", "'a'")]
    mapping = view.children(top["mapping"]["variablesReference"])
    assert [(v["name"], v["value"]) for v in mapping] == [("'k'", "(1,)")]
    assert view.children(mapping[0]["variablesReference"])[0]["value"] == "1"
    assert [v["name"] for v in view.children(top["point"]["variablesReference"])] == ["x"]
    view.reset()
    with pytest.raises(KeyError):
        view.children(top["items"]["variablesReference"])


class FakeAdapter:
    """A debug adapter that answers every request with success, and, as
    debugpy does, answers attach only after its initialized event has been
    followed by a configurationDone."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.endpoint: tuple[str, int] = self.server.getsockname()[:2]
        self.received: list[dict[str, object]] = []
        self.connections = 0
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                sock, _ = self.server.accept()
            except OSError:
                return
            self.connections += 1
            connection = DapConnection(sock)
            pending_attach = None
            seq = 100
            try:
                while (message := connection.receive(None)) is not None:
                    self.received.append(message)
                    command = message["command"]
                    if command == "closeConnection":
                        connection.close()
                        break
                    if command == "attach":
                        pending_attach = message
                        connection.send({"type": "event", "seq": seq, "event": "initialized"})
                        continue
                    connection.send({"type": "response", "seq": seq, "success": True,
                                     "request_seq": message["seq"], "command": command})
                    if command == "configurationDone" and pending_attach is not None:
                        connection.send({"type": "response", "seq": seq, "success": True,
                                         "request_seq": pending_attach["seq"],
                                         "command": "attach"})
                        pending_attach = None
            except (DapConnectionClosed, OSError):
                pass


def test_the_debugger_renumbers_requests_and_finishes_attach_itself() -> None:
    adapter = FakeAdapter()
    events: list[dict[str, object]] = []
    debugger = KernelDebugger(events.append)
    debugger._adapter_endpoint = adapter.endpoint  # as debugpy.listen() would set it
    try:
        response = debugger.handle({"type": "request", "seq": 7, "command": "initialize"})
        assert (response["success"], response["request_seq"]) == (True, 7)
        response = debugger.handle({"type": "request", "seq": 8, "command": "attach"})
        assert (response["success"], response["request_seq"]) == (True, 8)
        assert [m["command"] for m in adapter.received] == [
            "initialize", "attach", "configurationDone"]
        assert [e["event"] for e in events] == ["initialized"]
        # The frontend's own configurationDone is answered without debugpy.
        response = debugger.handle({"type": "request", "seq": 9, "command": "configurationDone"})
        assert response["success"] and len(adapter.received) == 3

        # The adapter goes away: the request fails, and a new initialize
        # connects again.
        response = debugger.handle({"type": "request", "seq": 10, "command": "closeConnection"})
        assert response["success"] is False
        response = debugger.handle({"type": "request", "seq": 11, "command": "threads"})
        assert response["success"] is False and "not connected" in response["message"]
        response = debugger.handle({"type": "request", "seq": 12, "command": "initialize"})
        assert (response["success"], response["request_seq"]) == (True, 12)
        assert adapter.connections == 2
    finally:
        debugger.handle({"type": "request", "seq": 13, "command": "disconnect"})
        adapter.server.close()


@pytest.mark.parametrize("request_", [
    {"seq": 1}, {"seq": 1, "command": 5}, {"seq": 1, "command": "stackTrace"},
    {"seq": 1, "command": "dumpCell", "arguments": {"code": 1}},
    {"seq": 1, "command": "source", "arguments": {"source": "x"}},
    {"seq": 1, "command": "variables", "arguments": {"variablesReference": 99}},
    {"seq": 1, "command": "modules", "arguments": {"startModule": "a"}},
    {"seq": 1, "command": "copyToGlobals", "arguments": {"srcVariableName": "a"}},
])
def test_bad_requests_get_a_response_that_names_the_problem(request_: dict[str, object]) -> None:
    response = KernelDebugger(lambda event: None).handle(request_)
    assert response["type"] == "response"
    assert response["success"] is False
    assert response["message"]
