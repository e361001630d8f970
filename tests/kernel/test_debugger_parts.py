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
