"""Kernel chaos with subshells: random cells on the main shell and on two
subshells at once, with Ctrl-C at random moments, for a while. Nothing may
hang (every request is answered, with its idle status) and no output may be
lost or go astray (what a cell printed arrives once, under that cell).

INTERP_RPC_SUBSHELL_CHAOS_SECONDS sets how long it runs (default 40; the
issue's acceptance run is 600), INTERP_RPC_SUBSHELL_CHAOS_SEED replays a run
(the seed is printed)."""

from __future__ import annotations

import collections
import os
import random
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import Kernel, Message
from test_subshells import Request, Traffic, create_subshell

SECONDS = float(os.environ.get("INTERP_RPC_SUBSHELL_CHAOS_SECONDS", "40"))
# A request unanswered this long is a hang (cells here last under a second,
# a map under a few on a loaded machine).
HANG_SECONDS = 90.0
# Requests each shell has queued or running at a time.
DEPTH = 2
# Seconds between two Ctrl-C, at random.
INTERRUPT_EVERY = (0.5, 3.0)

SETUP = ("%load_ext interp_rpc", "%parallel_pool -n 2",
         "%%parallel\ndef chaos_echo(tag):\n    print(tag)\n    return 0\n")

TOKEN = re.compile(r"chaos-\d+-tok")

# What each kind of cell runs, given its token; the token is printed first,
# so that a cell that ran at all has shown it unless Ctrl-C came at once.
CELLS: dict[str, Callable[[str], str]] = {
    "print": lambda t: f"print({t!r})",
    "sleep": lambda t: f"print({t!r})\nimport time, random\ntime.sleep(random.random() / 2)",
    "stderr": lambda t: f"import sys\nprint({t!r}, file=sys.stderr)",
    "display": lambda t: ("from IPython.display import display\n"
                          f"display({{'text/plain': {t!r}}}, raw=True)"),
    "error": lambda t: f"print({t!r})\nraise ValueError('chaos')",
    # A name of its own: the shells share the namespace.
    "thread": lambda t: ("import threading\n"
                         f"{t.replace('-', '_')} = threading.Thread(target=print, args=({t!r},))\n"
                         f"{t.replace('-', '_')}.start()\n{t.replace('-', '_')}.join()"),
    "map": lambda t: f"%parallel_map --chunksize 1 chaos_echo [{t!r}]",
    "status": lambda t: "%parallel_status --watch 0",
    "stop": lambda t: "%parallel_stop --timeout 5",
}
WEIGHTS = {"print": 4, "sleep": 3, "stderr": 2, "display": 2, "error": 1, "thread": 2,
           "map": 2, "status": 1, "stop": 1}
# Kinds that print no token.
TOKENLESS = {"status", "stop"}


@dataclass
class Cell:
    request: Request
    shell: str  # "main" or a subshell's id
    kind: str
    token: str


def shown_tokens(messages: list[Message]) -> list[str]:
    """The tokens in what these messages show (not in the code they echo,
    nor in a traceback, which quotes the code)."""
    found: list[str] = []
    for m in messages:
        if m["msg_type"] == "stream":
            found += TOKEN.findall(m["content"]["text"])
        elif m["msg_type"] == "display_data":
            found += TOKEN.findall(m["content"]["data"].get("text/plain", ""))
    return found


def finished(traffic: Traffic, request: Request) -> bool:
    return request.msg_id in traffic.replies and any(
        m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
        for m in traffic.iopub.get(request.msg_id, []))


def check(traffic: Traffic, cells: list[Cell]) -> collections.Counter[str]:
    """Every cell's token where it belongs; the outcomes, counted."""
    where: dict[str, list[str]] = collections.defaultdict(list)
    for parent, messages in traffic.iopub.items():
        for token in shown_tokens(messages):
            where[token].append(parent)
    outcomes: collections.Counter[str] = collections.Counter()
    for cell in cells:
        reply = traffic.replies[cell.request.msg_id]["content"]
        status = reply["status"]
        outcomes[f"{cell.kind} {status} {reply.get('ename', '')}".strip()] += 1
        if cell.kind in TOKENLESS:
            continue
        seen = where.get(cell.token, [])
        own = cell.request.msg_id
        context = f"{cell.kind} cell {cell.token} on {cell.shell}: {status} {reply}"
        if status == "aborted":
            assert not seen, f"an aborted {context} showed output"
            continue
        if cell.kind == "thread":
            # Another thread's output goes to the latest cell of any shell.
            assert len(seen) <= 1, f"{context}: shown {len(seen)} times"
            if status == "ok":
                assert len(seen) == 1, f"{context}: its thread's output was lost"
            continue
        assert all(parent == own for parent in seen), f"{context}: shown under {seen}"
        assert len(seen) <= 1, f"{context}: shown {len(seen)} times"
        interrupted = reply.get("ename") == "KeyboardInterrupt"
        if not interrupted and status in ("ok", "error"):
            assert len(seen) == 1, f"{context}: its output was lost"
    return outcomes


def describe(traffic: Traffic, cell: Cell) -> str:
    reply = traffic.replies.get(cell.request.msg_id, {}).get("content")
    seen = [m["msg_type"] if m["msg_type"] != "status"
            else m["content"]["execution_state"]
            for m in traffic.iopub.get(cell.request.msg_id, [])]
    return (f"{cell.token} {cell.kind} on {cell.shell}, sent "
            f"{time.monotonic() - cell.request.sent_at:.0f} s ago: reply {reply}, iopub {seen}")


# Run in a new subshell when a request hangs: every thread's Python stack.
STACKS = """
import sys, threading, traceback
names = {t.ident: t.name for t in threading.enumerate()}
for ident, frame in sys._current_frames().items():
    print(f"--- thread {ident} {names.get(ident, '?')}")
    print("".join(traceback.format_stack(frame)))
"""


# Run first: on SIGUSR1, the kernel writes every thread's Python stack to
# a file, without needing the GIL (for a hang where no cell can run).
DUMP_STACKS_ON_SIGUSR1 = """
import faulthandler, signal
_chaos_stacks = open({path!r}, "w")
faulthandler.register(signal.SIGUSR1, file=_chaos_stacks, all_threads=True)
"""


def native_stacks(kernel: Kernel, stacks: Path) -> str:
    """The kernel's Python stacks (faulthandler) and its threads' native
    ones (gdb, if there is one), for a hang."""
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    pid = provisioner.process.pid  # type: ignore[attr-defined]
    os.kill(pid, signal.SIGUSR1)
    time.sleep(1)
    found = [f"python stacks (faulthandler):\n{stacks.read_text()}"]
    if shutil.which("gdb"):
        gdb = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                             capture_output=True, text=True, timeout=120, check=False)
        found.append(f"native stacks (gdb):\n{gdb.stdout}")
    return "\n".join(found)


def diagnose(traffic: Traffic, cells: list[Cell], hung: list[Cell], stacks: Path) -> str:
    """What the hung requests got, the last cells of each shell, and the
    kernel's stacks (also written to stacks.parent / "hang.txt")."""
    lines = ["hung:", *(describe(traffic, c) for c in hung), "last cells of each shell:"]
    for shell in dict.fromkeys(c.shell for c in cells):
        lines += [describe(traffic, c) for c in cells if c.shell == shell][-4:]
    lines.append(native_stacks(traffic.kernel, stacks))
    try:
        probe = traffic.execute(STACKS, create_subshell(traffic.kernel))
        lines += ["stacks:", "".join(m["content"]["text"] for m in
                                     traffic.done(probe, timeout=30)
                                     if m["msg_type"] == "stream")]
    except Exception as exc:  # the probe may hang as well: say so, keep the rest
        lines.append(f"no stacks from a new subshell: {exc!r}")
    report = "\n".join(lines)
    (stacks.parent / "hang.txt").write_text(report)
    return report


@pytest.mark.timeout(SECONDS + 600)
def test_random_cells_on_three_shells_with_interrupts(kernel: Kernel, tmp_path: Path) -> None:
    seed = int(os.environ.get("INTERP_RPC_SUBSHELL_CHAOS_SEED", random.randrange(2**32)))
    print(f"seed {seed}, {SECONDS:g} s")
    chance = random.Random(seed)
    traffic = Traffic(kernel)
    stacks = tmp_path / "stacks.txt"
    for code in (DUMP_STACKS_ON_SIGUSR1.format(path=str(stacks)), *SETUP):
        request = traffic.execute(code)
        traffic.done(request, timeout=120)
        assert traffic.replies[request.msg_id]["content"]["status"] == "ok", code
    shells = ["main", create_subshell(kernel), create_subshell(kernel)]
    cells: list[Cell] = []
    open_cells: dict[str, list[Cell]] = {shell: [] for shell in shells}
    kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
    interrupts = 0
    next_interrupt = time.monotonic() + chance.uniform(*INTERRUPT_EVERY)
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        for shell in shells:
            open_cells[shell] = [c for c in open_cells[shell] if not finished(traffic, c.request)]
            while len(open_cells[shell]) < DEPTH:
                kind = chance.choices(kinds, weights)[0]
                if kind == "stop" and shell == "main":
                    kind = "print"  # the main shell has nothing to stop: its map is its own
                token = f"chaos-{len(cells)}-tok"
                request = traffic.execute(CELLS[kind](token),
                                          None if shell == "main" else shell,
                                          stop_on_error=chance.random() < 0.5)
                cell = Cell(request, shell, kind, token)
                cells.append(cell)
                open_cells[shell].append(cell)
        if time.monotonic() >= next_interrupt:
            kernel.manager.interrupt_kernel()
            interrupts += 1
            next_interrupt = time.monotonic() + chance.uniform(*INTERRUPT_EVERY)
        traffic.pump(0.02)
        hung = [c for c in cells if not finished(traffic, c.request)
                and time.monotonic() - c.request.sent_at > HANG_SECONDS]
        if hung:
            pytest.fail(f"seed {seed}: unanswered for {HANG_SECONDS:g} s:\n"
                        f"{diagnose(traffic, cells, hung, stacks)}")
    for cell in cells:
        if not finished(traffic, cell.request):
            try:
                traffic.done(cell.request, timeout=HANG_SECONDS)
            except AssertionError:
                pytest.fail(f"seed {seed}: unanswered after the end:\n"
                            f"{diagnose(traffic, cells, [cell], stacks)}")
    traffic.pump(1.0)  # output of threads that outlived their cell
    outcomes = check(traffic, cells)
    print(f"{len(cells)} cells, {interrupts} interrupts:")
    for outcome, count in sorted(outcomes.items()):
        print(f"  {count:6d}  {outcome}")
    # Still usable, on every shell.
    for shell in shells:
        request = traffic.execute("print('after the chaos')",
                                  None if shell == "main" else shell)
        assert shown_tokens(traffic.done(request)) == []
        assert traffic.replies[request.msg_id]["content"]["status"] == "ok"
    assert kernel.process_exit_code is None
