"""The pool from a subshell, side by side with ipykernel 7: while a
%parallel_map blocks the main shell, a subshell console reads how far it has
got (%parallel_status) and stops it (%parallel_stop) as Ctrl-C would; two
subshells map on the same pool at once, each map's output under its cell."""

from __future__ import annotations

import re
import time

import pytest
from conftest import Kernel, Message
from test_subshells import Request, Traffic, create_subshell, outputs, result_of, text_of

SETUP = ("%load_ext interp_rpc", "%parallel_pool -n 2")

NAP = """%%parallel
def nap(seconds):
    import time
    time.sleep(seconds)
    return seconds
"""

SHOUT = """%%parallel
def shout(tag):
    import time
    time.sleep(0.3)
    print(tag)
    return tag
"""

# One short item, then items long enough that the map is still running when
# the subshell looks; each chunk is one item.
NAPPING_MAP = "%parallel_map --chunksize 1 nap [0.1, 5, 5, 5]"
PROGRESS = re.compile(r"map (\d+): (\S*nap), 1 of 4 items done")


@pytest.fixture
def traffic(each_kernel: Kernel) -> Traffic:
    return Traffic(each_kernel)


def run_ok(traffic: Traffic, code: str, subshell: str | None = None) -> list[Message]:
    request = traffic.execute(code, subshell)
    messages = traffic.done(request, timeout=120)
    reply = traffic.replies[request.msg_id]["content"]
    assert reply["status"] == "ok", (code, reply, text_of(messages))
    return messages


def shown(traffic: Traffic, request: Request) -> str:
    """Everything a cell showed as text: its streams and its error's value."""
    messages = traffic.done(request, timeout=120)
    return text_of(messages) + "".join(m["content"]["evalue"]
                                       for m in outputs(messages, "error"))


def test_a_subshell_reads_a_maps_progress_and_stops_it_as_ctrl_c_would(
        traffic: Traffic) -> None:
    for code in (*SETUP, NAP):
        run_ok(traffic, code)
    subshell = create_subshell(traffic.kernel)
    mapping = traffic.execute(NAPPING_MAP)
    traffic.busy(mapping)
    deadline = time.monotonic() + 30
    while True:
        status = text_of(run_ok(traffic, "%parallel_status --watch 0", subshell))
        found = PROGRESS.search(status)
        if found:
            break
        assert time.monotonic() < deadline, f"no progress line: {status!r}"
        time.sleep(0.1)
    assert mapping.msg_id not in traffic.replies, "the map ended before it was stopped"

    stop = text_of(run_ok(traffic, "%parallel_stop", subshell))
    assert stop == f"Stopped map {found.group(1)} ({found.group(2)}): 1 of 4 items had completed.\n"
    stopped = traffic.reply(mapping, timeout=30)["content"]
    assert stopped["status"] == "error" and stopped["ename"] == "KeyboardInterrupt", stopped
    assert "Interrupted: 1 of 4 items had completed" in text_of(traffic.done(mapping))
    assert PROGRESS.search(text_of(run_ok(traffic, "%parallel_status --watch 0", subshell))) \
        is None, "a stopped map is still listed"

    # Ctrl-C on the same kind of map fails its cell the same way.
    interrupted = traffic.execute(NAPPING_MAP)
    traffic.busy(interrupted)
    time.sleep(0.5)
    traffic.kernel.manager.interrupt_kernel()
    by_ctrl_c = traffic.reply(interrupted, timeout=30)["content"]
    assert (by_ctrl_c["status"], by_ctrl_c["ename"], by_ctrl_c["evalue"]) == (
        stopped["status"], stopped["ename"], stopped["evalue"])


def test_parallel_stop_says_what_is_wrong_with_its_input(traffic: Traffic) -> None:
    for code in SETUP:
        run_ok(traffic, code)
    subshell = create_subshell(traffic.kernel)
    nothing = shown(traffic, traffic.execute("%parallel_stop", subshell))
    assert "no %parallel_map is running in another shell" in nothing
    word = shown(traffic, traffic.execute("%parallel_stop first", subshell))
    assert "MAP must be a map's number, as %parallel_status lists it, not 'first'" in word
    unknown = shown(traffic, traffic.execute("%parallel_stop 99", subshell))
    assert "no map 99 is running" in unknown
    timeout = shown(traffic, traffic.execute("%parallel_stop --timeout 0", subshell))
    assert "--timeout must be greater than 0, not 0" in timeout


def test_two_subshells_map_on_the_same_pool_at_once(traffic: Traffic) -> None:
    for code in (*SETUP, SHOUT):
        run_ok(traffic, code)
    first, second = create_subshell(traffic.kernel), create_subshell(traffic.kernel)
    tags = {name: [f"{name}{i}" for i in range(6)] for name in ("a", "b")}
    maps = {name: traffic.execute(f"%parallel_map --chunksize 1 shout {tags[name]!r}", subshell)
            for name, subshell in (("a", first), ("b", second))}
    traffic.busy(maps["b"])
    assert maps["a"].msg_id not in traffic.replies, "the first map ended before the second began"
    for name, request in maps.items():
        messages = traffic.done(request, timeout=120)
        assert result_of(messages) == repr(tags[name])
        printed = [line for line in text_of(messages).splitlines()
                   if not line.startswith("[")]
        assert sorted(printed) == tags[name], f"map {name} showed {printed}"
