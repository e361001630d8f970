"""Nothing from the network crashes or hangs the kernel.

Whoever can reach its ports but lacks the key (anything unsigned, badly
framed or badly signed) is ignored: the message is dropped with a line on the
kernel's stderr. A signed request that xeus would misread gets an error reply
that names the problem, between busy and idle statuses. These tests talk to
the sockets directly, with pyzmq, so that they can send what no client would.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import zmq
from conftest import Kernel, Message, start_kernel, stop_kernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jupyter_client.session import Session

DELIMITER = b"<IDS|MSG>"
REPLY_TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def target() -> Iterator[Kernel]:
    """A kernel of this module's own: if a test kills it, the others say so."""
    k = start_kernel()
    try:
        yield k
    finally:
        stop_kernel(k)


@pytest.fixture(scope="module")
def context() -> Iterator[zmq.Context[Any]]:
    ctx: zmq.Context[Any] = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def endpoint(kernel: Kernel, channel: str) -> str:
    manager = kernel.manager
    port = getattr(manager, f"{channel}_port")
    return f"{manager.transport}://{manager.ip}:{port}"


def dealer(context: zmq.Context[Any], kernel: Kernel, channel: str) -> zmq.Socket[Any]:
    sock: zmq.Socket[Any] = context.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(endpoint(kernel, channel))
    return sock


def session_of(kernel: Kernel) -> Session:
    """A session with the kernel's key, of its own: its message ids never
    collide with those of the kernel's client (both count from 1 per
    session id)."""
    if not hasattr(kernel, "hostile_session"):
        key = kernel.manager.session.key
        kernel.hostile_session = Session(key=key)  # type: ignore[attr-defined]
    session: Session = kernel.hostile_session  # type: ignore[attr-defined]
    return session


def signed(kernel: Kernel, msg_type: str, content: dict[str, Any]) -> tuple[str, list[bytes]]:
    """A correctly signed message with arbitrary content; returns its id."""
    session = session_of(kernel)
    msg = session.msg(msg_type, content)
    frames: list[bytes] = session.serialize(msg)
    return str(msg["header"]["msg_id"]), frames


def reply_to(kernel: Kernel, sock: zmq.Socket[Any], msg_id: str) -> Message:
    """The reply to msg_id on sock, skipping replies to earlier messages."""
    session = session_of(kernel)
    while True:
        assert sock.poll(REPLY_TIMEOUT_MS), f"no reply to {msg_id}"
        frames = sock.recv_multipart()
        _, body = session.feed_identities(frames)
        msg: Message = session.deserialize(body)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg


def still_answers_first(kernel: Kernel, sock: zmq.Socket[Any]) -> None:
    """Sends kernel_info after whatever was sent on sock: the kernel handles a
    socket's messages in order, so its reply proves that those were handled
    (or dropped) and that the kernel lives."""
    msg_id, frames = signed(kernel, "kernel_info_request", {})
    sock.send_multipart(frames)
    assert reply_to(kernel, sock, msg_id)["msg_type"] == "kernel_info_reply"


def assert_alive(kernel: Kernel) -> None:
    info = kernel.client.kernel_info(reply=True, timeout=30)
    assert info["content"]["status"] == "ok"
    execution = kernel.execute("1 + 1")
    assert execution.status == "ok"
    (result,) = execution.of_type("execute_result")
    assert result["content"]["data"]["text/plain"] == "2"


def test_a_truncated_unsigned_message_does_not_kill_the_kernel(
        target: Kernel, context: zmq.Context[Any]) -> None:
    # The review's reproduction: xeus-zmq popped frames that were not there
    # and libzmq aborted the kernel.
    with dealer(context, target, "shell") as sock:
        sock.send_multipart([DELIMITER, b"x"])
        still_answers_first(target, sock)
    assert_alive(target)


def unsigned_junk(kernel: Kernel) -> list[list[bytes]]:
    _, good = signed(kernel, "kernel_info_request", {})
    signature = good[1]
    return [
        [],
        [b""],
        [DELIMITER],
        [DELIMITER, b"x"],
        [b"no delimiter", b"{}", b"{}"],
        [DELIMITER, signature, *good[2:5]],  # a frame short
        [DELIMITER, b"", *good[2:]],  # no signature
        [DELIMITER, signature[:8], *good[2:]],  # a short signature
        [DELIMITER, signature + b"00", *good[2:]],  # a long one
        [DELIMITER, b"0" * len(signature), *good[2:]],  # a wrong one
        [DELIMITER, signature, good[2], good[3], good[4], b'{"tampered": 1}'],
    ]


def test_unsigned_and_badly_framed_messages_are_dropped(
        target: Kernel, context: zmq.Context[Any]) -> None:
    for channel in ("shell", "control"):
        with dealer(context, target, channel) as sock:
            for frames in unsigned_junk(target):
                if frames:
                    sock.send_multipart(frames)
            still_answers_first(target, sock)
    assert_alive(target)


def signed_raw(kernel: Kernel, header: bytes, content: bytes,
               parent: bytes = b"{}") -> list[bytes]:
    """Signed frames whose JSON is whatever the test says, valid or not."""
    parts = [header, parent, b"{}", content]
    return [DELIMITER, session_of(kernel).sign(parts), *parts]


def test_signed_frames_that_are_not_messages_are_dropped(
        target: Kernel, context: zmq.Context[Any]) -> None:
    header = json.dumps({"msg_id": "x", "msg_type": "execute_request", "session": "s",
                         "username": "u", "version": "5.4", "date": ""}).encode()
    with dealer(context, target, "shell") as sock:
        for frames in (
            signed_raw(target, b"not json", b"{}"),
            signed_raw(target, header, b"[]"),
            signed_raw(target, header, b"{}", parent=b"null"),
            signed_raw(target, b'{"msg_id": "x", "msg_type": 7}', b"{}"),
            signed_raw(target, b'{"msg_id": "x"}', b"{}"),
            signed_raw(target, header, b'{"code": "\xff"}'),
            signed_raw(target, header, b'{"code": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        ):
            sock.send_multipart(frames)
        still_answers_first(target, sock)
    assert_alive(target)


MALFORMED_REQUESTS = [
    ("execute_request", {"code": 1}, "'code' must be a string"),
    ("execute_request", {"code": "1", "silent": "no"}, "'silent' must be a boolean"),
    ("execute_request", {"code": "1", "user_expressions": {"x": 1}}, "user expression 'x'"),
    ("comm_open", {"comm_id": "c1", "data": {}}, "comm_open has no 'target_name'"),
    ("comm_msg", {"data": {}}, "comm_msg has no 'comm_id'"),
    ("history_request", {"hist_access_type": "tail", "n": None}, "'n' must be an integer"),
    ("history_request", {"hist_access_type": "range", "output": None},
     "'output' must be a boolean"),
    ("history_request", {"hist_access_type": "everything"}, "unknown hist_access_type"),
    ("complete_request", {"code": None, "cursor_pos": 1}, "'code' must be a string"),
    ("inspect_request", {"code": "x", "cursor_pos": "1"}, "'cursor_pos' must be an integer"),
]


@pytest.mark.parametrize(("msg_type", "content", "problem"), MALFORMED_REQUESTS)
def test_a_signed_malformed_request_gets_an_error_reply(
        target: Kernel, context: zmq.Context[Any], msg_type: str, content: dict[str, Any],
        problem: str) -> None:
    with dealer(context, target, "shell") as sock:
        msg_id, frames = signed(target, msg_type, content)
        sock.send_multipart(frames)
        reply = reply_to(target, sock, msg_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "BadRequest"
    assert problem in reply["content"]["evalue"]
    # busy and idle around it, so that a client waiting for idle goes on.
    states: list[str] = []
    while len(states) < 2:
        msg = target.client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status":
            states.append(msg["content"]["execution_state"])
    assert states == ["busy", "idle"]
    assert_alive(target)


def test_requests_that_run_python_are_refused_on_control(
        target: Kernel, context: zmq.Context[Any]) -> None:
    with dealer(context, target, "control") as sock:
        msg_id, frames = signed(target, "execute_request", {"code": "1"})
        sock.send_multipart(frames)
        reply = reply_to(target, sock, msg_id)
    assert reply["content"]["status"] == "error"
    assert "shell channel only" in reply["content"]["evalue"]


def test_the_iopub_welcome_has_a_dict_parent_header(
        target: Kernel, context: zmq.Context[Any]) -> None:
    # jupyter_client reads msg["parent_header"].get(...) on every IOPub message.
    sub: zmq.Socket[Any] = context.socket(zmq.SUB)
    with sub:
        sub.linger = 0
        sub.subscribe(b"")
        sub.connect(endpoint(target, "iopub"))
        session = session_of(target)
        while True:
            assert sub.poll(REPLY_TIMEOUT_MS), "no iopub_welcome"
            _, body = session.feed_identities(sub.recv_multipart())
            msg = session.deserialize(body)
            if msg["msg_type"] == "iopub_welcome":
                break
    assert msg["parent_header"] == {}
    assert msg["content"] == {"subscription": ""}


# Field values a hostile or buggy client may send, of every JSON type.
json_values = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False), st.text(max_size=8), st.just([]), st.just({}),
    st.just({"a": [1, {"b": None}]}))
# Every request type a client may send but shutdown_request (which would end
# the test), plus one that does not exist. Code is never a string that runs.
msg_types = st.sampled_from([
    "execute_request", "complete_request", "inspect_request", "is_complete_request",
    "history_request", "comm_info_request", "comm_open", "comm_msg", "comm_close",
    "kernel_info_request", "interrupt_request", "debug_request", "no_such_request"])
field_names = st.sampled_from([
    "code", "silent", "store_history", "user_expressions", "allow_stdin", "stop_on_error",
    "cursor_pos", "detail_level", "hist_access_type", "n", "raw", "output", "session",
    "start", "stop", "pattern", "unique", "target_name", "comm_id", "data", "restart"])
contents = st.dictionaries(field_names, json_values, max_size=6).map(
    lambda c: {k: v for k, v in c.items() if not (k == "code" and isinstance(v, str))})
raw_frames = st.lists(st.binary(max_size=40), max_size=8)


@st.composite
def hostile_messages(draw: st.DrawFn, kernel: Kernel) -> list[bytes]:
    kind = draw(st.sampled_from(["raw", "raw after delimiter", "signed", "signed and cut"]))
    if kind == "raw":
        return draw(raw_frames)
    if kind == "raw after delimiter":
        return [DELIMITER, *draw(raw_frames)]
    msg_id = str(uuid.uuid4())
    header: dict[str, Any] = {"msg_id": msg_id, "msg_type": draw(msg_types), "session": "fuzz",
                              "username": "fuzz", "version": "5.4", "date": ""}
    if draw(st.booleans()):
        header[draw(st.sampled_from(["msg_id", "msg_type", "session"]))] = draw(json_values)
    frames = signed_raw(kernel, json.dumps(header).encode(), json.dumps(draw(contents)).encode())
    if kind == "signed and cut":
        frames = frames[: draw(st.integers(min_value=0, max_value=len(frames) - 1))]
    return frames


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_random_and_truncated_frames_never_crash_the_kernel(
        target: Kernel, context: zmq.Context[Any], data: st.DataObject) -> None:
    channel = data.draw(st.sampled_from(["shell", "control"]))
    messages = data.draw(st.lists(hostile_messages(target), min_size=1, max_size=4))
    with dealer(context, target, channel) as sock:
        for frames in messages:
            if frames:
                sock.send_multipart(frames)
        still_answers_first(target, sock)


def test_the_kernel_works_after_the_fuzzing(target: Kernel) -> None:
    assert_alive(target)
