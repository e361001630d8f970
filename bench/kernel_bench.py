"""Compares the "Python (interp-rpc)" kernel with ipykernel and xeus-python
(xpython), in one run on one machine, the way JupyterLab drives them
(jupyter_client, their installed kernelspecs):

- first result (the headline): from launching the process to the reply to a
  first `1+1` sent as soon as the kernel is ready; what a user waits for
  before a notebook's first cell has run (a kernel may finish starting after
  "ready");
- ready: from launching the process to the kernel_info reply (what
  jupyter_client and JupyterLab wait for before calling a kernel ready);
- execute: round trip of `1+1`, from the request to both its reply and its
  idle status, p50 and p99;
- shutdown: from the shutdown request to the process's exit, and its exit code;
- interrupt: from the interrupt request (as the kernelspec asks for it) to the
  KeyboardInterrupt reply of a cell in time.sleep(30);
- print loop: `for i in range(100000): print(i)`, from the request to its
  reply and idle status, reading every stream message on the way (the
  lines received are counted: a kernel that drops output is caught);
- where one execute's time goes, in one session per kernel:
  - messaging: the round trip of a kernel_info request (zmq, the kernel's
    server and dispatch, busy and idle statuses; no Python code);
  - IPython: `run_cell('1+1')` timed inside the kernel, without storing
    history, and history: what storing it adds;
  - the rest of the execute round trip: what the kernel does for an execute
    request besides (execute_input, the reply, streams, payloads);
  - the kernel's CPU time per execute, by thread: the main thread, IPython's
    history saving thread, zmq's I/O threads, the others.

Kernels are measured in turns, round after round, so that a slow moment of the
machine hits all of them. Prints a markdown table and writes
bench/results/kernel.json.

    ./dev run -- python3 bench/kernel_bench.py [--rounds N] [--executes N]

Before and after a change: build the older checkout, give its kernel a
kernelspec of its own (its stage's ``bin/interp-rpc-kernel``, with that
stage's ``site-packages`` as PYTHONPATH in the spec's env), and name it with
``--also before=SPEC``. It is measured in the same turns as the others, and
the ratios then include ours over it. ``--output`` keeps such a run apart
from bench/results/kernel.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import queue
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zmq
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import KernelManager

KERNELS = {"interp-rpc": "interp-rpc", "ipykernel": "python3", "xpython": "xpython"}
# zmq retries a refused connection every 100 ms by default, which would round
# every startup up to that: all clients retry every 10 ms instead.
CONTEXT = zmq.Context()
CONTEXT.setsockopt(zmq.RECONNECT_IVL, 10)
RESULTS = Path(__file__).resolve().parent / "results" / "kernel.json"


@dataclass
class Samples:
    ready_s: list[float] = field(default_factory=list)
    first_result_s: list[float] = field(default_factory=list)
    execute_s: list[float] = field(default_factory=list)
    shutdown_s: list[float] = field(default_factory=list)
    exit_codes: list[int | None] = field(default_factory=list)
    interrupt_s: list[float | None] = field(default_factory=list)  # None: the kernel died
    print_loop_s: list[float | None] = field(default_factory=list)  # None: idle lost
    print_loop_lines: list[int] = field(default_factory=list)


PRINT_LOOP_LINES = 100_000
PRINT_LOOP_CELL = f"for i in range({PRINT_LOOP_LINES}): print(i)"
# How long after its reply the print loop's idle status may come.
PRINT_LOOP_IDLE_GRACE_S = 10


def shell_reply(client: Any, msg_id: str, timeout: float) -> dict[str, Any] | None:
    """The shell reply to msg_id, or None after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            reply: dict[str, Any] = client.get_shell_msg(
                timeout=max(0.001, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def drain(client: Any, seconds: float) -> None:
    time.sleep(seconds)
    for get in (client.get_shell_msg, client.get_iopub_msg):
        while True:
            try:
                get(timeout=0.01)
            except queue.Empty:
                break


def start(kernel_name: str) -> tuple[KernelManager, Any, float, float]:
    """Starts a kernel; returns it with its ready and first-result times."""
    manager = KernelManager(kernel_name=kernel_name, context=CONTEXT)
    started = time.perf_counter()
    manager.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = manager.client(context=CONTEXT)
    client.start_channels()
    # Not wait_for_ready(): it also waits for 0.2 s of silence on IOPub. One
    # request is enough: zmq delivers it once the kernel listens.
    if shell_reply(client, client.kernel_info(), timeout=60) is None:
        raise RuntimeError(f"{kernel_name} did not answer kernel_info in 60 s")
    ready = time.perf_counter() - started
    # Timed by its reply: IOPub (a SUB socket) may still be connecting.
    if shell_reply(client, client.execute("1+1"), timeout=60) is None:
        raise RuntimeError(f"{kernel_name} did not run a first cell in 60 s")
    first_result = time.perf_counter() - started
    # From now on cells are timed by their idle status: wait until IOPub works.
    while True:
        client.kernel_info()
        try:
            client.get_iopub_msg(timeout=0.5)
            break
        except queue.Empty:
            continue
    drain(client, 0.3)
    return manager, client, ready, first_result


def process_of(manager: KernelManager) -> subprocess.Popen[bytes]:
    provisioner = manager.provisioner
    assert provisioner is not None
    process: subprocess.Popen[bytes] = provisioner.process  # type: ignore[attr-defined]
    return process


def run_cell(client: Any, code: str, timeout: float = 30) -> tuple[dict[str, Any], float]:
    """Executes code; returns its reply and the time until reply and idle."""
    started = time.perf_counter()
    msg_id = client.execute(code)
    reply = None
    idle = False
    deadline = time.monotonic() + timeout
    while reply is None or not idle:
        remaining = max(0.01, deadline - time.monotonic())
        if reply is None:
            try:
                msg = client.get_shell_msg(timeout=0.0 if not idle else remaining)
                if msg["parent_header"].get("msg_id") == msg_id:
                    reply = msg
                continue
            except queue.Empty:
                pass
        msg = client.get_iopub_msg(timeout=remaining)
        if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            idle = True
    return reply, time.perf_counter() - started


def print_loop(client: Any, timeout: float = 300) -> tuple[float | None, int]:
    """Runs the print loop; returns the time until its reply and idle status
    (None if the idle status never came: xeus-zmq drops IOPub messages past
    its high-water mark, the idle status among them) and the number of lines
    received."""
    started = time.perf_counter()
    msg_id = client.execute(PRINT_LOOP_CELL)
    lines = 0
    replied_at: float | None = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if replied_at is None and shell_reply(client, msg_id, timeout=0.001) is not None:
            replied_at = time.monotonic()
            deadline = min(deadline, replied_at + PRINT_LOOP_IDLE_GRACE_S)
        try:
            msg = client.get_iopub_msg(timeout=0.1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            lines += msg["content"]["text"].count("\n")
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            if replied_at is None and shell_reply(client, msg_id, timeout=30) is None:
                raise RuntimeError("no reply to the print loop")
            return time.perf_counter() - started, lines
    return None, lines


def shut_down(manager: KernelManager, client: Any) -> tuple[float, int | None]:
    process = process_of(manager)
    started = time.perf_counter()
    client.shutdown()
    try:
        code: int | None = process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        code = None  # did not exit by itself
        process.kill()
        process.wait()
    elapsed = time.perf_counter() - started
    client.stop_channels()
    manager.cleanup_resources()
    return elapsed, code


def measure_session(kernel_name: str, executes: int, samples: Samples) -> None:
    manager, client, ready, first_result = start(kernel_name)
    samples.ready_s.append(ready)
    samples.first_result_s.append(first_result)
    for _ in range(20):  # warm up
        run_cell(client, "1+1")
    for _ in range(executes):
        reply, seconds = run_cell(client, "1+1")
        assert reply["content"]["status"] == "ok", reply
        samples.execute_s.append(seconds)
    loop_seconds, lines = print_loop(client)
    samples.print_loop_s.append(loop_seconds)
    samples.print_loop_lines.append(lines)
    elapsed, code = shut_down(manager, client)
    samples.shutdown_s.append(elapsed)
    samples.exit_codes.append(code)


# Times IPython's part of an execute inside the kernel: run_cell('1+1') as
# the kernel calls it for a cell, without and with storing history. The first
# run_cell stores '1+1' as the last input: IPython's display hook tokenizes the
# last stored input (to see whether it ends with ';'), which would otherwise be
# this whole cell, at ten times the cost of '1+1'.
IPYTHON_TIMING_CELL = """
import time as _time
def _per_run_cell(store_history, n):
    _ip = get_ipython()
    _started = _time.perf_counter()
    for _ in range(n):
        _ip.run_cell('1+1', store_history=store_history)
    return (_time.perf_counter() - _started) / n
get_ipython().run_cell('1+1', store_history=True)
_per_run_cell(False, 20)
_bench_timings = [_per_run_cell(False, {n}), _per_run_cell(True, {n})]
"""


def round_trip(client: Any, send: Any) -> float:
    """Seconds from sending a request to its reply."""
    started = time.perf_counter()
    if shell_reply(client, send(), timeout=30) is None:
        raise RuntimeError("no reply in 30 s")
    return time.perf_counter() - started


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """CPU seconds (user and system) of each thread of a process, by part:
    its main thread, IPython's history saving thread, zmq's I/O threads, the
    others (Linux's /proc)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parts = dict.fromkeys(("main", "history", "zmq", "other"), 0.0)
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except FileNotFoundError:
            continue  # ended meanwhile
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        seconds = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        if int(tid) == pid:
            parts["main"] += seconds
        elif name.startswith("IPythonHistory"):
            parts["history"] += seconds
        elif name.startswith("ZMQbg"):
            parts["zmq"] += seconds
        else:
            parts["other"] += seconds
    return parts


def measure_breakdown(kernel_name: str, count: int) -> dict[str, float]:
    """Milliseconds of one execute of `1+1`, by part (medians), and the
    kernel's CPU milliseconds per execute, by thread (means)."""
    manager, client, _, _ = start(kernel_name)
    for _ in range(20):  # warm up
        run_cell(client, "1+1")
    pid = process_of(manager).pid
    cpu_before = thread_cpu_seconds(pid)
    execute = statistics.median(run_cell(client, "1+1")[1] for _ in range(count))
    cpu_after = thread_cpu_seconds(pid)
    messaging = statistics.median(round_trip(client, client.kernel_info) for _ in range(count))
    reply, _ = run_cell(client, IPYTHON_TIMING_CELL.format(n=count), timeout=300)
    assert reply["content"]["status"] == "ok", reply
    drain(client, 0.3)  # the inner cells' results
    expression = client.execute("", user_expressions={"t": "_bench_timings"})
    answer = shell_reply(client, expression, timeout=30)
    assert answer is not None
    timings = json.loads(answer["content"]["user_expressions"]["t"]["data"]["text/plain"])
    shut_down(manager, client)
    ipython, with_history = timings
    return {
        "execute_round_trip_ms": 1000 * execute,
        "messaging_ms": 1000 * messaging,
        "ipython_run_cell_ms": 1000 * ipython,
        "history_ms": 1000 * (with_history - ipython),
        "rest_ms": 1000 * (execute - messaging - with_history),
        **{f"cpu_{part}_ms": 1000 * (cpu_after[part] - cpu_before[part]) / count
           for part in cpu_before},
    }


def measure_interrupt(kernel_name: str, samples: Samples) -> None:
    manager, client, _, _ = start(kernel_name)
    process = process_of(manager)
    msg_id = client.execute("import time; time.sleep(30)")
    while True:
        msg = client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
            break
    time.sleep(0.3)  # inside the sleep
    started = time.perf_counter()
    manager.interrupt_kernel()
    result: float | None = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and process.poll() is None:
        try:
            msg = client.get_shell_msg(timeout=0.01)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id:
            if msg["content"].get("ename") == "KeyboardInterrupt":
                result = time.perf_counter() - started
            break
    samples.interrupt_s.append(result)
    if process.poll() is None:
        shut_down(manager, client)
    else:
        client.stop_channels()
        manager.cleanup_resources()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summarize(samples: Samples) -> dict[str, Any]:
    interrupts = [s for s in samples.interrupt_s if s is not None]
    loops = [s for s in samples.print_loop_s if s is not None]
    return {
        "ready_s": {"median": statistics.median(samples.ready_s), "samples": samples.ready_s},
        "first_result_s": {"median": statistics.median(samples.first_result_s),
                           "samples": samples.first_result_s},
        "execute_ms": {"p50": 1000 * percentile(samples.execute_s, 0.50),
                       "p99": 1000 * percentile(samples.execute_s, 0.99),
                       "n": len(samples.execute_s)},
        "shutdown_s": {"median": statistics.median(samples.shutdown_s),
                       "samples": samples.shutdown_s},
        "exit_codes": samples.exit_codes,
        "print_loop_s": {"median": statistics.median(loops) if loops else None,
                         "samples": samples.print_loop_s,
                         "idle_lost": sum(s is None for s in samples.print_loop_s),
                         "lines_received": samples.print_loop_lines,
                         "lines_sent": PRINT_LOOP_LINES},
        "interrupt_ms": {
            "median": 1000 * statistics.median(interrupts) if interrupts else None,
            "died_or_failed": sum(s is None for s in samples.interrupt_s),
            "n": len(samples.interrupt_s),
        },
    }


def markdown(results: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| kernel | **first result** (median) | ready (median) | execute `1+1` p50 | p99 "
        "| shutdown (median) | exit codes | interrupt → reply "
        f"| print loop of {PRINT_LOOP_LINES:,} lines (median) | lines received |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        interrupt = r["interrupt_ms"]
        if interrupt["died_or_failed"]:
            answer = f"failed {interrupt['died_or_failed']}/{interrupt['n']}"
        else:
            answer = f"{interrupt['median']:.0f} ms"
        lines.append(
            f"| {name} | **{r['first_result_s']['median']:.3f} s** "
            f"| {r['ready_s']['median']:.3f} s "
            f"| {r['execute_ms']['p50']:.2f} ms "
            f"| {r['execute_ms']['p99']:.2f} ms | {r['shutdown_s']['median']:.3f} s "
            f"| {', '.join(str(c) for c in sorted(set(r['exit_codes']), key=str))} | {answer} "
            f"| {loop_time(r['print_loop_s'])} "
            f"| {min(r['print_loop_s']['lines_received']):,} (fewest) |"
        )
    return "\n".join(lines)


def loop_time(loop: dict[str, Any]) -> str:
    if loop["idle_lost"]:
        return f"idle status lost {loop['idle_lost']}/{len(loop['samples'])}"
    return f"{loop['median']:.3f} s"


def breakdown_markdown(breakdowns: dict[str, dict[str, float]]) -> str:
    lines = [
        "| kernel | execute round trip | messaging (kernel_info round trip) | IPython run_cell "
        "| history | rest |",
        "|---|---|---|---|---|---|",
    ]
    for name, b in breakdowns.items():
        lines.append(
            f"| {name} | {b['execute_round_trip_ms']:.2f} ms | {b['messaging_ms']:.2f} ms "
            f"| {b['ipython_run_cell_ms']:.2f} ms | {b['history_ms']:.2f} ms "
            f"| {b['rest_ms']:.2f} ms |")
    lines += [
        "",
        "| kernel | CPU per execute: main thread | history thread | zmq I/O | other threads |",
        "|---|---|---|---|---|",
    ]
    for name, b in breakdowns.items():
        lines.append(
            f"| {name} | {b['cpu_main_ms']:.2f} ms | {b['cpu_history_ms']:.2f} ms "
            f"| {b['cpu_zmq_ms']:.2f} ms | {b['cpu_other_ms']:.2f} ms |")
    return "\n".join(lines)


def labelled_kernel(text: str) -> tuple[str, str]:
    """``LABEL=KERNELSPEC`` from the command line."""
    label, equals, spec = text.partition("=")
    if not equals or not label or not spec:
        raise argparse.ArgumentTypeError(f"expected LABEL=KERNELSPEC, not {text!r}")
    if label in KERNELS:
        raise argparse.ArgumentTypeError(f"{label!r} already names one of {sorted(KERNELS)}")
    return label, spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--executes", type=int, default=200, help="per round and kernel")
    parser.add_argument("--interrupts", type=int, default=3)
    parser.add_argument("--breakdown", type=int, default=200,
                        help="executes timed for the per-part breakdown, per kernel")
    parser.add_argument("--also", action="append", default=[], metavar="LABEL=KERNELSPEC",
                        type=labelled_kernel,
                        help="one more kernel, measured in the same turns (an older build)")
    parser.add_argument("--output", type=Path, default=RESULTS,
                        help=f"where the JSON goes (default {RESULTS})")
    args = parser.parse_args()
    load_before = os.getloadavg()

    specs = KernelSpecManager()
    kernels = {}
    for label, name in {**KERNELS, **dict(args.also)}.items():
        try:
            specs.get_kernel_spec(name)
        except NoSuchKernel:
            print(f"skipping {label}: no kernelspec {name!r}")
            continue
        kernels[label] = name
    samples = {label: Samples() for label in kernels}
    for name in kernels.values():  # jupyter_client loads its plugins on first use
        measure_session(name, 1, Samples())
    for round_number in range(args.rounds):
        for label, name in kernels.items():
            measure_session(name, args.executes, samples[label])
        print(f"round {round_number + 1}/{args.rounds} done", flush=True)
    for _ in range(args.interrupts):
        for label, name in kernels.items():
            measure_interrupt(name, samples[label])
    breakdowns = {label: measure_breakdown(name, args.breakdown)
                  for label, name in kernels.items()}
    load_after = os.getloadavg()

    results = {label: summarize(s) for label, s in samples.items()}
    ours = results.get("interp-rpc")
    ratios = {}
    if ours and "ipykernel" in results:
        for measure in ("first_result_s", "ready_s", "print_loop_s"):
            if ours[measure]["median"] and results["ipykernel"][measure]["median"]:
                ratios[f"{measure[:-2]}_vs_ipykernel"] = (
                    ours[measure]["median"] / results["ipykernel"][measure]["median"])
    if ours and "xpython" in results:
        ratios["execute_p50_vs_xpython"] = (
            ours["execute_ms"]["p50"] / results["xpython"]["execute_ms"]["p50"])
    for label, _ in args.also:
        if ours and label in results:
            for measure in ("first_result_s", "ready_s", "print_loop_s"):
                if ours[measure]["median"] and results[label][measure]["median"]:
                    ratios[f"{measure[:-2]}_vs_{label}"] = (
                        ours[measure]["median"] / results[label][measure]["median"])
            ratios[f"execute_p50_vs_{label}"] = (
                ours["execute_ms"]["p50"] / results[label]["execute_ms"]["p50"])
    if ours:
        ratios["shutdown_s"] = ours["shutdown_s"]["median"]
    report = {
        "what": "kernel startup, execute round trip, shutdown and interrupt, via jupyter_client",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": load_after},
        "settings": vars(args),
        "targets": {"first_result_vs_ipykernel": "<= 0.75", "execute_p50_vs_xpython": "<= 0.8",
                    "shutdown_s": "<= 0.2, exit code 0",
                    "print_loop_vs_ipykernel": "<= 1.5, every line received"},
        "ratios": ratios,
        "kernels": results,
        "execute_breakdown_ms": breakdowns,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print()
    print(markdown(results))
    print()
    print(breakdown_markdown(breakdowns))
    print()
    print(f"load average (1, 5, 15 min): before {load_before}, after {load_after}")
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
