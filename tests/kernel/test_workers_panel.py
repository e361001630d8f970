"""The Workers panel's comm (docs/workers-panel.md), driven as JupyterLab
drives it: opened on the target ``interp-rpc.workers`` from a subshell of its
own, while cells run on the main shell. Side by side: our kernel and
ipykernel with ``%load_ext interp_rpc``."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import Kernel, Message

TARGET = "interp-rpc.workers"

# Items that sleep: a map of them runs for a known while with busy workers.
SLEEPER = "def nap(x):\n    import time\n    time.sleep(x)\n    return x\n"


def control(kernel: Kernel, msg_type: str, content: dict[str, Any] | None = None) -> Message:
    msg = kernel.client.session.msg(msg_type, content or {})
    kernel.client.control_channel.send(msg)
    deadline = time.monotonic() + 30
    while True:
        reply: Message = kernel.client.get_control_msg(
            timeout=max(0.1, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply


@dataclass
class Ran:
    reply: Message
    outputs: list[Message]
    # Each output's place among the panel's messages: how many had come before it.
    places: list[int] = field(default_factory=list)

    def place_of(self, text: str) -> int:
        """How many panel messages came before the stream output ``text``."""
        for msg, place in zip(self.outputs, self.places, strict=True):
            if msg["msg_type"] == "stream" and text in msg["content"]["text"]:
                return place
        raise AssertionError(f"no output {text!r} in {self.outputs}")

    @property
    def stderr(self) -> str:
        return "".join(m["content"]["text"] for m in self.outputs
                       if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")


@dataclass
class Panel:
    """A frontend's Workers panel: its comm, on a subshell as JupyterLab
    opens it, and every message the kernel sent on it (with when it came)."""

    kernel: Kernel
    comm_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    subshell: str = ""
    received: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    closed_by_kernel: bool = False

    def _shell(self, msg_type: str, content: dict[str, Any]) -> str:
        msg = self.kernel.client.session.msg(msg_type, content)
        if self.subshell:
            msg["header"]["subshell_id"] = self.subshell
        self.kernel.client.shell_channel.send(msg)
        return str(msg["header"]["msg_id"])

    def open(self) -> dict[str, Any]:
        reply = control(self.kernel, "create_subshell_request")
        self.subshell = reply["content"]["subshell_id"]
        self._shell("comm_open", {"comm_id": self.comm_id, "target_name": TARGET, "data": {}})
        return self.next_message()

    def send(self, data: Any) -> None:
        self._shell("comm_msg", {"comm_id": self.comm_id, "data": data})

    def close(self) -> None:
        self._shell("comm_close", {"comm_id": self.comm_id, "data": {}})

    def _file(self, msg: Message) -> bool:
        """Keeps a message of this comm; True if it was one."""
        content = msg["content"]
        if content.get("comm_id") != self.comm_id:
            return False
        if msg["msg_type"] == "comm_msg":
            self.received.append((time.monotonic(), content["data"]))
            return True
        if msg["msg_type"] == "comm_close":
            self.closed_by_kernel = True
            return True
        return False

    def mark(self) -> int:
        """Where the messages received from now on start (for next_message)."""
        return len(self.received)

    def next_message(self, kind: str | None = None, timeout: float = 30,
                     since: int | None = None) -> dict[str, Any]:
        """The first message of type ``kind`` the kernel sent on the comm
        since ``since`` (a mark()), by default from now on."""
        start = len(self.received) if since is None else since
        deadline = time.monotonic() + timeout
        while True:
            for _, data in self.received[start:]:
                if kind is None or data.get("type") == kind:
                    return data
            start = len(self.received)
            assert not self.closed_by_kernel, "the kernel closed the comm"
            msg = self.kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            self._file(msg)

    def run(self, code: str, timeout: float = 120, during: Any = None) -> Ran:
        """Runs a cell on the main shell, keeping this comm's messages;
        ``during(panel)`` is called once the cell's first output arrived."""
        msg_id = self.kernel.send(code)
        outputs: list[Message] = []
        places: list[int] = []
        deadline = time.monotonic() + timeout
        called = during is None
        while True:
            msg = self.kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if self._file(msg) or msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status":
                if msg["content"]["execution_state"] == "idle":
                    break
                continue
            if msg["msg_type"] != "execute_input":
                outputs.append(msg)
                places.append(len(self.received))
                if not called:
                    called = True
                    during(self)
        return Ran(self.kernel.reply_to(msg_id, timeout=30), outputs, places)

    def statuses(self, since: float = 0.0) -> list[dict[str, Any]]:
        return [d for t, d in self.received if d.get("type") == "status" and t >= since]


def setup(kernel: Kernel, *lines: str) -> None:
    for line in ("%load_ext interp_rpc", SLEEPER, *lines):
        result = kernel.execute(line, timeout=120)
        assert result.status == "ok", (line, result.reply["content"])


def assert_status_shape(status: dict[str, Any]) -> None:
    assert status["version"] == 1
    assert set(status) == {"type", "version", "pool", "totals", "groups", "map"}
    assert set(status["pool"]) == {"kind", "workers", "stuck_after", "last_profile"}
    assert {"idle", "busy", "stuck", "dead", "debugging"} <= set(status["totals"])
    rows = [row for group in status["groups"] for row in group["workers"]]
    assert len(rows) == status["pool"]["workers"]
    assert sum(status["totals"].values()) == len(rows)
    for row in rows:
        assert set(row) == {"index", "state", "target", "item", "seconds", "calls_done",
                            "detail"}
        assert isinstance(row["seconds"], float | int) and row["seconds"] >= 0


def test_without_a_pool_it_says_so_and_then_follows_the_first_map(each_kernel: Kernel) -> None:
    setup(each_kernel)
    panel = Panel(each_kernel)
    first = panel.open()
    assert first["type"] == "no_pool", first
    assert "%parallel_map" in first["message"]
    # Nothing more while there is no pool.
    each_kernel.execute("1 + 1")
    time.sleep(1.0)
    each_kernel.drain_iopub(0.5)
    assert [d["type"] for _, d in panel.received] == ["no_pool"]

    started = time.monotonic()
    ran = panel.run("%parallel_map nap [0.5] * 16")  # 2 s on 4 workers at least
    finished = time.monotonic()
    assert ran.reply["status"] == "ok", ran.reply
    during = [s for s in panel.statuses(started) if s["map"] is not None]
    # At least 2 a second while it runs: counted, not timed.
    assert len(during) >= max(3, int(finished - started)), [s["map"] for s in during]
    for status in during:
        assert_status_shape(status)
        assert status["map"]["target"].endswith("nap") and status["map"]["total"] == 16
    assert any(s["totals"]["busy"] + s["totals"]["stuck"] > 0 for s in during)
    busy_rows = [row for s in during for g in s["groups"] for row in g["workers"]
                 if row["state"] == "busy"]
    assert busy_rows and all(row["target"].endswith("nap") for row in busy_rows)
    # Afterwards: every worker idle, and no map.
    after = panel.statuses()[-1]
    if after["map"] is not None:  # the map's end is sent at once; else the next heartbeat
        after = panel.next_message("status")
    assert after["map"] is None
    assert after["totals"]["idle"] == after["pool"]["workers"]
    assert after["pool"]["last_profile"] is True


def test_stop_map_ends_the_map_with_the_error_ctrl_c_gives(each_kernel: Kernel) -> None:
    setup(each_kernel, "%parallel_pool -n 2")
    panel = Panel(each_kernel)
    assert panel.open()["type"] == "status"

    interrupted = panel.run("%parallel_map nap [1.0] * 60",
                            during=lambda p: (time.sleep(1.0),
                                              p.kernel.manager.interrupt_kernel()))
    mark = panel.mark()
    stopped = panel.run("%parallel_map nap [1.0] * 60",
                        during=lambda p: (time.sleep(1.0), p.send({"action": "stop_map"})))
    answer = panel.next_message("stop_map", since=mark)
    assert answer["stopped"] is True, answer
    for ran in (interrupted, stopped):
        assert ran.reply["status"] == "error"
        assert "Interrupted:" in ran.stderr
    assert stopped.reply["ename"] == interrupted.reply["ename"]
    assert "KeyboardInterrupt" in stopped.reply["ename"]
    # With no map running, it stops nothing.
    mark = panel.mark()
    panel.send({"action": "stop_map"})
    assert panel.next_message("stop_map", since=mark)["stopped"] is False
    assert each_kernel.execute("1 + 1").status == "ok"


@pytest.mark.parametrize("data", [
    {},
    {"action": None},
    {"action": "rm -rf /" * 1000},
    {"action": ["stop_map"]},
])
def test_a_malformed_panel_message_gets_an_error_and_breaks_nothing(
        each_shared_kernel: Kernel, data: Any) -> None:
    kernel = each_shared_kernel
    setup(kernel, "%parallel_pool -n 1")
    panel = Panel(kernel)
    assert panel.open()["type"] == "status"
    mark = panel.mark()
    panel.send(data)
    error = panel.next_message("error", since=mark)
    assert "action" in error["message"] and len(error["message"]) < 300, error
    mark = panel.mark()
    panel.send({"action": "refresh"})
    assert panel.next_message("status", since=mark)["pool"]["workers"] == 1
    assert kernel.execute("2 + 2").status == "ok"
    panel.close()


@pytest.mark.parametrize("data", [[1, 2], "stop_map", None])
def test_panel_data_that_is_not_an_object_breaks_nothing(
        each_shared_kernel: Kernel, data: Any) -> None:
    """The protocol wants an object: our kernel refuses anything else before
    any handler runs (it logs why), ipykernel hands it over and the panel's
    handler names the problem. Either way the panel and kernel go on."""
    kernel = each_shared_kernel
    setup(kernel, "%parallel_pool -n 1")
    panel = Panel(kernel)
    assert panel.open()["type"] == "status"
    mark = panel.mark()
    panel.send(data)
    if not kernel.is_ours:
        error = panel.next_message("error", since=mark)
        assert "JSON object with an 'action'" in error["message"], error
    mark = panel.mark()
    panel.send({"action": "refresh"})
    assert panel.next_message("status", since=mark)["pool"]["workers"] == 1
    assert kernel.execute("2 + 2").status == "ok"
    panel.close()


def test_open_profile_sends_the_last_runs_profile(each_shared_kernel: Kernel) -> None:
    kernel = each_shared_kernel
    setup(kernel, "%parallel_pool -n 1")  # a new pool: no profile yet
    panel = Panel(kernel)
    panel.open()
    mark = panel.mark()
    panel.send({"action": "open_profile"})
    empty = panel.next_message("profile", since=mark)
    assert empty["data"] is None and "%parallel_map" in empty["message"]
    assert panel.run("%parallel_map nap [0.01] * 5").reply["status"] == "ok"
    mark = panel.mark()
    panel.send({"action": "open_profile"})
    profile = panel.next_message("profile", since=mark)["data"]
    data = profile["application/vnd.interp-rpc.profile+json"]
    assert data["version"] >= 1
    assert "nap" in profile["text/plain"]
    panel.close()


def test_closing_the_comm_stops_the_updates(each_kernel: Kernel) -> None:
    setup(each_kernel, "%parallel_pool -n 2")
    panel = Panel(each_kernel)
    assert panel.open()["type"] == "status"
    panel.close()
    each_kernel.drain_iopub(0.5)
    closed_at = time.monotonic()
    ran = panel.run("%parallel_map nap [0.5] * 8")
    assert ran.reply["status"] == "ok"
    assert panel.statuses(closed_at) == []


# Holds the main GIL for seconds in one C call (sum over a range never
# reaches the eval loop, where the GIL would be handed over), while a worker
# of the pool sleeps in its own interpreter.
# The worker stays busy until the hold is over, however long the hold takes
# (a fixed nap ended first on a loaded machine, and the worker showed idle).
HOLD_THE_GIL = """
import os, tempfile
from interp_rpc.notebook import current_pool
released = os.path.join(tempfile.mkdtemp(), "released")
running = current_pool().submit(wait_for_file, released, 120.0)
print("holding the GIL", flush=True)
sum(range(150_000_000))
print("released the GIL", flush=True)
open(released, "w").close()
running.result()
"""
# A worker's target that returns once `path` exists (or `limit` seconds
# passed): busy for as long as the cell takes to create it.
FILE_WAITER = """
def wait_for_file(path, limit):
    import os, time
    deadline = time.monotonic() + limit
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return path
"""


def test_our_kernel_sends_updates_while_the_main_thread_holds_the_gil(kernel: Kernel) -> None:
    setup(kernel, FILE_WAITER, "%parallel_pool -n 1")
    panel = Panel(kernel)
    assert panel.open()["type"] == "status"
    ran = panel.run(HOLD_THE_GIL)
    assert ran.reply["status"] == "ok", ran.reply
    start, end = ran.place_of("holding the GIL"), ran.place_of("released the GIL")
    during = [d for _, d in panel.received[start:end] if d["type"] == "status"]
    # A Python thread could send nothing while the GIL is held; the kernel's
    # C++ thread keeps sending, the worker busy.
    assert len(during) >= 3, [d["totals"] for d in during]
    assert all(d["totals"]["busy"] + d["totals"]["stuck"] == 1 for d in during)


def test_a_process_pool_is_asked_for_its_status_and_shows_its_map(each_kernel: Kernel) -> None:
    """A pool of other processes has no board in this one: a Python thread
    asks it for its status, in both kernels, in the same shape."""
    setup(each_kernel, "%parallel_pool -n 2 --processes")
    panel = Panel(each_kernel)
    first = panel.open()
    assert first["type"] == "status", first
    assert first["pool"]["kind"] == "ProcessPool"
    started = time.monotonic()
    ran = panel.run("%parallel_map nap [1.0] * 6")
    assert ran.reply["status"] == "ok", ran.reply
    during = [s for s in panel.statuses(started) if s["map"] is not None]
    assert len(during) >= 3, [s["map"] for s in during]
    for status in during:
        assert_status_shape(status)
    assert any(s["totals"]["busy"] + s["totals"]["stuck"] > 0 for s in during)
    assert max(s["map"]["done"] for s in during) <= 6


def test_unloading_the_extension_closes_the_panels_comm(each_kernel: Kernel) -> None:
    setup(each_kernel, "%parallel_pool -n 1")
    panel = Panel(each_kernel)
    assert panel.open()["type"] == "status"
    ran = panel.run("%unload_ext interp_rpc")
    assert ran.reply["status"] == "ok", ran.reply
    deadline = time.monotonic() + 30
    while not panel.closed_by_kernel and time.monotonic() < deadline:
        panel._file(each_kernel.client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic())))
    assert panel.closed_by_kernel, "the kernel left the panel's comm open"
    # Reloaded, it serves a new panel again.
    assert each_kernel.execute("%load_ext interp_rpc").status == "ok"
    assert Panel(each_kernel).open()["type"] in ("status", "no_pool")


def test_a_panel_opened_before_the_first_cell_is_served(kernel: Kernel) -> None:
    """JupyterLab opens the panel's comm on the main shell as soon as the
    kernel answers, with no cell run yet: after a restart made from another
    tab or a script, too. Our kernel registers the target as its shell
    starts, so the comm must not find it missing."""
    panel = Panel(kernel)
    panel._shell("comm_open", {"comm_id": panel.comm_id, "target_name": TARGET, "data": {}})
    first = panel.next_message()
    assert first["type"] == "no_pool", first


def test_during_a_map_open_profile_sends_the_last_finished_profile(
        each_kernel: Kernel) -> None:
    # The map's own profile is still recording: reading it raised, and the
    # panel's button got no answer. The panel now gets the last finished one.
    setup(each_kernel, "%parallel_pool -n 1")
    panel = Panel(each_kernel)
    panel.open()
    assert panel.run("%parallel_map abs [-1, -2]").reply["status"] == "ok"
    marks: list[int] = []

    def ask(p: Panel) -> None:
        marks.append(p.mark())
        p.send({"action": "open_profile"})

    assert panel.run("%parallel_map nap [0.5] * 4", during=ask).reply["status"] == "ok"
    answer = panel.next_message("profile", since=marks[0])
    assert answer["data"] is not None, answer
    assert "abs" in answer["data"]["text/plain"] and "nap" not in answer["data"]["text/plain"]
    mark = panel.mark()
    panel.send({"action": "open_profile"})
    assert "nap" in panel.next_message("profile", since=mark)["data"]["text/plain"]
    panel.close()


def test_the_status_that_says_a_map_ended_offers_its_profile(each_kernel: Kernel) -> None:
    # The map's end went out before its profile was kept: the panel showed
    # the map over with its profile button off, until the status after.
    setup(each_kernel)
    panel = Panel(each_kernel)
    panel.open()
    for _ in range(3):
        # A new pool has no profile yet (and a --profile run takes longest
        # to keep its own: it gathers every worker's cProfile first).
        assert each_kernel.execute("%parallel_pool -n 2", timeout=120).status == "ok"
        position = panel.mark()
        assert panel.run("%parallel_map --profile nap [0.2] * 4").reply["status"] == "ok"
        seen_map = False
        ended: dict[str, Any] | None = None
        while ended is None:  # the first status without the map, after one with it
            if position == len(panel.received):
                panel.next_message(since=position)  # waits for one more
            data = panel.received[position][1]
            position += 1
            if data.get("type") != "status":
                continue
            if data["map"] is not None:
                seen_map = True
            elif seen_map:
                ended = data
        assert ended["pool"]["last_profile"] is True, ended
    panel.close()


def test_every_status_describes_the_pool_also_right_after_it_was_replaced(
        each_kernel: Kernel) -> None:
    # Our kernel's publisher started sending as it started, before it was
    # told which pool it served: its first status had an empty "pool".
    setup(each_kernel)
    panel = Panel(each_kernel)
    panel.open()
    for _ in range(4):
        assert each_kernel.execute("%parallel_pool -n 2", timeout=120).status == "ok"
        assert panel.run("%parallel_map abs [-1, -2, -3]").reply["status"] == "ok"
    each_kernel.drain_iopub(0.5)
    panel.close()
    statuses = panel.statuses()
    assert len(statuses) >= 4
    for status in statuses:
        assert set(status["pool"]) == {"kind", "workers", "stuck_after", "last_profile"}, status
