"""%%parallel output streams while the cell runs, in both kernels and from
workers that are subinterpreters, processes or a dask cluster's: a display updated in place
shows it (grouped by worker) before the cell ends; then the grouped output is
printed for good and the display is emptied."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel


@pytest.mark.parametrize("pool", ["-n 2", "--processes -n 2", "--dask local:2"])
@pytest.mark.parametrize("kernel_name", ["python3", "interp-rpc"])
def test_parallel_output_shows_while_the_cell_runs(kernel_name: str, pool: str,
                                                   tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    manager, client = start_new_kernel(kernel_name=kernel_name, startup_timeout=60)
    try:
        if kernel_name != "interp-rpc":
            client.execute_interactive("%load_ext interp_rpc", timeout=60)
        reply = client.execute_interactive(f"%parallel_pool {pool}", timeout=60)
        assert reply["content"]["status"] == "ok", reply
        messages: list[dict[str, Any]] = []

        def seen(message: dict[str, Any]) -> None:
            messages.append(message)
            data = message["content"].get("data", {})
            if message["msg_type"] == "update_display_data" and \
                    "early" in data.get("text/plain", ""):
                gate.touch()  # the cell goes on only once its output was seen

        # The workers wait for the gate (at most a minute, so that a failure
        # does not hang): the gate opens only on a live update with "early".
        cell = ("%%parallel\nimport os, time\nprint('early')\ndeadline = time.time() + 60\n"
                f"while not os.path.exists({str(gate)!r}) and time.time() < deadline:\n"
                "    time.sleep(0.01)\nprint('late')\n")
        reply = client.execute_interactive(cell, timeout=120, output_hook=seen)
        assert reply["content"]["status"] == "ok", reply
        assert gate.exists(), [m["msg_type"] for m in messages]
        updates = [m["content"]["data"]["text/plain"] for m in messages
                   if m["msg_type"] == "update_display_data"]
        # Whichever worker's output arrived first, under its heading.
        assert any(re.fullmatch(r"\[workers? [0-9-]+\]\nearly\n", u) for u in updates), updates
        assert updates[-1] == ""  # emptied once the grouped output is printed
        streamed = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
        assert streamed == "[workers 0-1]\nearly\nlate\n"
    finally:
        client.stop_channels()
        # Gracefully, as a user shuts a kernel down: killing its process group
        # leaves the named semaphores of the dask cluster it started behind.
        manager.shutdown_kernel()
