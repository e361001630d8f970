"""A print loop through a real jupyter_server, as JupyterLab sees it.

jupyter_server drops IOPub output above its rate limit (by default 1,000
messages a second over a 3 s window) and says "IOPub message rate
exceeded". A kernel that sends one message per line loses lines of a loop
printing 3,000 of them; one that coalesces, as ipykernel does, loses none.

ipykernel 7.2, the peer here, now and then never reads a shell request that
arrives while it sends another reply (its "shell ROUTER wedge", fixed
upstream after its 7.3.0 release): the cell never starts and nothing comes
back. That is the peer's bug, not the output rate compared here, so the
peer, and only the peer, gets a second kernel when its request was never
read. Our kernel gets none: a request it never reads fails the test."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.error import URLError
from urllib.request import Request, urlopen

import pytest
from conftest import BOTH_KERNELS, PEER_KERNEL_NAME
from tornado.websocket import websocket_connect

LINES = 3000
TOKEN = uuid.uuid4().hex
SILENCE_SECONDS = 60


class RequestNeverRead(AssertionError):
    """Not one message about the request came back: the kernel never read it."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    def __init__(self, port: int) -> None:
        self.base = f"127.0.0.1:{port}"

    def request(self, method: str, path: str, body: object = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = Request(
            f"http://{self.base}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
        )
        with urlopen(request, timeout=60) as response:
            text = response.read()
        return json.loads(text) if text else None


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """jupyter_server with its default rate limits, on a free port."""
    port = free_port()
    root = tmp_path_factory.mktemp("server")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "jupyter_server",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0", "--ServerApp.open_browser=False",
            "--ServerApp.allow_root=True",
            f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
        ],
        env=dict(os.environ, JUPYTER_RUNTIME_DIR=str(root / "runtime")),
        stdout=subprocess.DEVNULL,
        stderr=(root / "server.log").open("w"),
    )
    try:
        server = Server(port)
        deadline = time.monotonic() + 60
        while True:
            try:
                server.request("GET", "/api/status")
                break
            except (URLError, ConnectionError):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(Path(root / "server.log").read_text()) from None
                time.sleep(0.1)  # the server is starting: no event to wait on
        yield server
    finally:
        process.terminate()
        process.wait(timeout=30)


def execute_request(code: str, session: str) -> dict[str, Any]:
    return {
        "header": {
            "msg_id": uuid.uuid4().hex, "msg_type": "execute_request", "session": session,
            "username": "test", "version": "5.3", "date": "2026-01-01T00:00:00Z",
        },
        "parent_header": {}, "metadata": {}, "buffers": [], "channel": "shell",
        "content": {
            "code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True,
        },
    }


async def run_through_websocket(server: Server, kernel_id: str, code: str) -> list[dict[str, Any]]:
    """The IOPub messages of one execute request, until its idle status."""
    session = uuid.uuid4().hex
    url = f"ws://{server.base}/api/kernels/{kernel_id}/channels?session_id={session}&token={TOKEN}"
    connection = await websocket_connect(url)
    try:
        request = execute_request(code, session)
        await connection.write_message(json.dumps(request))
        msg_id = request["header"]["msg_id"]
        messages: list[dict[str, Any]] = []
        while True:
            try:
                raw = await asyncio.wait_for(connection.read_message(), timeout=SILENCE_SECONDS)
            except TimeoutError:
                if not messages:
                    raise RequestNeverRead(f"nothing about it in {SILENCE_SECONDS} s") from None
                raise AssertionError(
                    f"silent for {SILENCE_SECONDS} s after {len(messages)} messages,"
                    f" the last {messages[-1]['msg_type']}"
                ) from None
            assert isinstance(raw, str), "the websocket closed"
            message: dict[str, Any] = json.loads(raw)
            if message["channel"] != "iopub" or message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                return messages
            messages.append(message)
    finally:
        connection.close()


def run_in_new_kernel(server: Server, kernel_name: str, code: str) -> list[dict[str, Any]]:
    kernel = server.request("POST", "/api/kernels", {"name": kernel_name})
    try:
        return asyncio.run(run_through_websocket(server, kernel["id"], code))
    finally:
        server.request("DELETE", f"/api/kernels/{kernel['id']}")


@pytest.mark.parametrize("kernel_name", BOTH_KERNELS)
def test_a_loop_of_3000_lines_arrives_whole(server: Server, kernel_name: str) -> None:
    try:
        messages = run_in_new_kernel(server, kernel_name, f"for i in range({LINES}): print(i)")
    except RequestNeverRead:
        if kernel_name != PEER_KERNEL_NAME:
            raise
        messages = run_in_new_kernel(server, kernel_name, f"for i in range({LINES}): print(i)")
    text = "".join(
        m["content"]["text"]
        for m in messages
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout"
    )
    assert "IOPub message rate exceeded" not in json.dumps(messages)
    assert text == "".join(f"{i}\n" for i in range(LINES))
