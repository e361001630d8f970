"""The %parallel magics, case by case, on every kind of pool: subinterpreters
(--local), processes (--processes) and a dask cluster. Each test runs once
with the notebook's pool on each kind and expects what the user sees to be
the same (where a kind must differ, such as a cluster's process titles or
numpy loading in processes, the test says so)."""

from __future__ import annotations

import _thread
import contextlib
import json
import pstats
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from shell_support import (
    Ran,
    Run,
    Shown,
    cell_runner,
    check_errors_collect,
    notebook_frontend,
    shell_with_extension,
    updates_of,
)
from support import wait_until

from interp_rpc import (
    MISSING,
    CallTimeoutError,
    InterpreterPool,
    ProcessPool,
    RemoteError,
    ShareabilityError,
)
from interp_rpc.dask import ClusterPool
from interp_rpc.notebook import ParallelCellError, current_pool, map_magic, running_maps

pytestmark = pytest.mark.timeout(300)

#: How the notebook's pool is made, for each kind: two workers either way.
POOL_MAGICS = {
    "local": f"--local -n 2 --init {INIT!r}",
    "processes": f"--processes -n 2 --init {INIT!r}",
    "dask": f"--dask local:2 --init {INIT!r}",
}
POOL_CLASSES = {"local": InterpreterPool, "processes": ProcessPool, "dask": ClusterPool}


@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    yield from shell_with_extension()


@pytest.fixture(scope="module", params=sorted(POOL_MAGICS))
def kind(request: pytest.FixtureRequest, shell: InteractiveShell) -> str:
    """The notebook's pool, of this kind, for the tests of this kind."""
    shell.run_line_magic("parallel_pool", POOL_MAGICS[request.param])
    pool = current_pool()
    assert type(pool) is POOL_CLASSES[request.param]
    assert pool.workers == 2
    return str(request.param)


@pytest.fixture
def frontend(kind: str, shell: InteractiveShell,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Shown]]:
    yield from notebook_frontend(shell, monkeypatch)


@contextlib.contextmanager
def gate_opened_once(shown: Callable[[], bool], gate: Path, what: str) -> Iterator[None]:
    """While the block runs a cell whose workers wait for ``gate``, a thread
    opens it once ``shown()`` (at the latest after CLUSTER_LIMIT), and the
    gate is open when the block ends, whatever happened."""
    def open_when_shown() -> None:
        try:
            wait_until(shown, CLUSTER_LIMIT, what)
        finally:
            gate.touch()

    opener = threading.Thread(target=open_when_shown)
    opener.start()
    try:
        yield
    finally:
        gate.touch()
        opener.join()


@pytest.fixture
def run(kind: str, shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> Run:
    return cell_runner(shell, capsys)


def test_parallel_defines_names_that_become_map_targets(run: Run) -> None:
    ran = run("%%parallel\ndef doubled_by_workers(x):\n    return 2 * x\n")
    assert ran.error is None, ran.shown
    ran = run("found = %parallel_map doubled_by_workers range(10)")
    assert ran.error is None, ran.shown
    assert InteractiveShell.instance().user_ns["found"] == [2 * i for i in range(10)]
    ran = run("%parallel print(doubled_by_workers(21))")
    assert ran.out == "[workers 0-1]\n42\n", ran.shown


def test_a_notebook_function_travels_by_value(run: Run) -> None:
    ran = run("def tripled(x):\n    return 3 * x\nfound = %parallel_map tripled range(6)")
    assert ran.error is None, ran.shown
    assert InteractiveShell.instance().user_ns["found"] == [0, 3, 6, 9, 12, 15]
    # Redefined: the new body runs.
    ran = run("def tripled(x):\n    return -x\nfound = %parallel_map tripled range(3)")
    assert InteractiveShell.instance().user_ns["found"] == [0, -1, -2]


def test_a_notebook_lambda_and_partial_are_map_targets(run: Run) -> None:
    # As under joblib and dask's own client.map.
    ran = run("import functools\n"
              "from interp_rpc.notebook import current_pool\n"
              "doubled = list(current_pool().map(lambda v: 2 * v, range(4)))\n"
              "def nested():\n"
              "    def power(base, exponent):\n"
              "        return base ** exponent\n"
              "    return power\n"
              "squared = list(current_pool().map(functools.partial(nested(), exponent=2), "
              "range(4)))\n")
    assert ran.error is None, ran.shown
    assert InteractiveShell.instance().user_ns["doubled"] == [0, 2, 4, 6]
    assert InteractiveShell.instance().user_ns["squared"] == [0, 1, 4, 9]


def test_errors_collect(shell: InteractiveShell, run: Run) -> None:
    check_errors_collect(shell, run)


def test_except_the_original_class_around_a_map(run: Run) -> None:
    ran = run("%%parallel\ndef inverse_by_workers(x):\n    return 1 / x\n")
    assert ran.error is None, ran.shown
    ran = run("try:\n"
              "    %parallel_map --chunksize 1 inverse_by_workers [1, 2, 0, 4]\n"
              "except ZeroDivisionError as error:\n"
              "    caught = error\n")
    assert ran.error is None, ran.shown
    caught = InteractiveShell.instance().user_ns["caught"]
    assert isinstance(caught, RemoteError) and caught.item_index == 2
    assert caught.partial_results == [1.0, 0.5, MISSING, MISSING]


def test_a_failed_map_keeps_its_results_in_out(run: Run) -> None:
    ran = run("%parallel_map -o roots --chunksize 2 math.sqrt [1.0, 4.0, 9.0, -1.0, 16.0]")
    assert isinstance(ran.error, RemoteError) and ran.error.item_index == 3
    assert InteractiveShell.instance().user_ns["roots"] == [1.0, 2.0, 3.0, MISSING, MISSING]
    assert "roots: the 3 results before the failed item are stored" in ran.err
    # The summary counts what succeeded, not the failed item's whole chunk.
    assert "math.sqrt: 3 of 5 items in " in ran.out, ran.shown


def test_an_item_that_cannot_cross_is_named_before_anything_runs(run: Run) -> None:
    ran = run("import threading\n%parallel_map pooltasks.identity [1, threading.Lock()]")
    assert isinstance(ran.error, ShareabilityError), ran.shown
    assert ran.error.item_index == 1
    assert "lock" in ran.error.value_type


def test_timeout_stops_waiting_and_says_how_far_the_map_got(run: Run) -> None:
    ran = run("%parallel_map --timeout 0.2 --chunksize 1 pooltasks.sleep_then [3.0]")
    assert isinstance(ran.error, CallTimeoutError), ran.shown
    assert ran.error.completed == 0 and ran.error.total == 1


def test_profile_records_every_item_and_merges_functions(run: Run) -> None:
    ran = run("%parallel_map --profile --chunksize 4 pooltasks.square range(20)")
    assert ran.error is None, ran.shown
    assert "square" in ran.out, ran.out
    ran = run("%parallel_profile -o prof")
    assert ran.error is None, ran.shown
    prof = InteractiveShell.instance().user_ns["prof"]
    assert sorted(r.item for r in prof.records) == list(range(20))
    assert prof.stats is not None


def test_targets_runs_a_cell_in_the_chosen_worker_only(run: Run) -> None:
    ran = run("%%parallel --targets 1\nprint('here')\n")
    assert ran.error is None, ran.shown
    assert ran.out == "[worker 1]\nhere\n", ran.shown


def test_a_cells_last_expression_is_its_result_in_each_worker(run: Run) -> None:
    ran = run("%%parallel\nanswer = 6 * 7\nanswer\n")
    assert ran.error is None, ran.shown
    assert ran.out == "Out[workers 0-1]: 42\n", ran.shown
    ran = run("%%parallel --targets 0\nanswer;\n")
    assert ran.error is None and ran.out == "", ran.shown


def test_a_cell_error_is_caught_as_its_class_in_each_worker(run: Run) -> None:
    ran = run("%%parallel\nraise KeyError('gone')\n")
    assert isinstance(ran.error, ParallelCellError)
    assert sorted(ran.error.errors) == [0, 1]
    for error in ran.error.errors.values():
        assert isinstance(error, KeyError) and isinstance(error, RemoteError)
    assert ran.shown.count("KeyError: 'gone'") == 1, ran.shown


def test_status_shows_every_worker_idle(kind: str, run: Run) -> None:
    ran = run("%parallel_status --watch 0")
    assert ran.error is None, ran.shown
    header = "worker  state    target                          item      running for  calls done"
    assert ran.out.startswith(header), ran.out
    assert ran.out.count("idle") == 2, ran.out
    # A cluster's table says which process holds its workers.
    assert (" · process " in ran.out) == (kind == "dask"), ran.out


@pytest.mark.parametrize(("line", "message"), [
    ("--chunksize 0 abs [1]", "--chunksize must be at least 1, not 0"),
    ("--timeout -1 abs [1]", "--timeout"),
    ("--errors ignore abs [1]", "invalid choice: 'ignore'"),
    ("abs", "ITEMS is missing after TARGET 'abs'"),
])
def test_bad_options_are_the_same_usage_errors(run: Run, line: str, message: str) -> None:
    ran = run(f"%parallel_map {line}")
    assert isinstance(ran.error, UsageError) or message in ran.shown, ran.shown
    assert message in (str(ran.error) if ran.error else ran.shown)


def test_a_map_shows_its_progress_over_the_live_table(
        kind: str, run: Run, frontend: list[Shown], tmp_path: Path) -> None:
    # Progress, and below it what every worker runs, updated in place, then
    # a one-line summary in the view's place. A cluster's view once showed
    # the progress alone.
    gate = tmp_path / "gate"
    items = [("block", str(tmp_path / f"started-{i}"), str(gate), i) for i in range(4)]

    def busy_table_shown() -> bool:
        return any(s.update and s.data["text/plain"].count("busy") == 2
                   and "pooltasks.map_item" in s.data["text/plain"] for s in list(frontend))

    with gate_opened_once(busy_table_shown, gate, "a table with both workers busy"):
        ran = run(f"found = %parallel_map --chunksize 1 pooltasks.map_item {items!r}")
    assert ran.error is None, ran.shown
    assert InteractiveShell.instance().user_ns["found"] == [0, 1, 2, 3]
    (first,) = [s for s in frontend if not s.update and s.display_id]
    assert first.display_id is not None
    assert "pooltasks.map_item [" in first.data["text/plain"]  # the progress line
    texts = updates_of(frontend, first.display_id)
    busy = [t for t in texts if t.count("busy") == 2]
    assert busy, texts
    assert "items (" in busy[0], busy[0]
    assert (" · process " in busy[0]) == (kind == "dask"), busy[0]
    assert texts[-1].startswith("pooltasks.map_item: 4 of 4 items in"), texts[-1]


def test_what_workers_print_during_a_map_shows_under_worker_and_item(
        kind: str, run: Run) -> None:
    assert run("%%parallel\nimport sys\ndef chatty_everywhere(x):\n"
               "    print('working on', x)\n"
               "    print('warning', x, file=sys.stderr)\n    return x\n").error is None
    ran = run("%parallel_map --chunksize 2 chatty_everywhere range(6)")
    assert ran.error is None, ran.shown
    blocks = re.findall(r"\[worker (\d), item (\d)\]\nworking on (\d)\n", ran.out)
    assert sorted(int(item) for _, item, _ in blocks) == list(range(6)), ran.out
    assert all(item == printed for _, item, printed in blocks), ran.out
    assert {int(w) for w, _, _ in blocks} <= {0, 1}, ran.out
    assert len(re.findall(r"\[worker \d, item \d\]\nwarning \d\n", ran.err)) == 6, ran.err


def test_what_a_cell_prints_shows_while_it_runs_then_grouped(
        run: Run, frontend: list[Shown], tmp_path: Path) -> None:
    """The workers wait for a gate that opens only once a display updated
    in place has shown what they printed first."""
    gate = tmp_path / "gate"

    def early_shown() -> bool:
        return any(s.update and "early" in s.data["text/plain"] for s in list(frontend))

    with gate_opened_once(early_shown, gate, "a live display of 'early'"):
        ran = run("%%parallel\nimport os, time\nprint('early')\n"
                  f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.01)\n"
                  "print('late')\n")
    assert ran.error is None, ran.shown
    assert ran.out == "[workers 0-1]\nearly\nlate\n", ran.shown
    live = [s.data["text/plain"] for s in frontend if s.update]
    assert any(re.fullmatch(r"\[workers? [0-9-]+\]\nearly\n", text) for text in live), live
    assert live[-1] == ""  # emptied once the grouped output is printed


def test_a_cell_importing_numpy_says_first_what_to_use_instead(kind: str, run: Run) -> None:
    pytest.importorskip("numpy")
    if kind == "processes":
        # What the fix is for: numpy loads in a worker process.
        ran = run("%%parallel\nimport numpy\nprint(int(numpy.arange(4).sum()))\n")
        assert ran.error is None, ran.shown
        assert ran.out == "[workers 0-1]\n6\n", ran.shown
        return
    ran = run("%%parallel\nimport numpy\n")
    assert isinstance(ran.error, ParallelCellError), ran.shown
    shown = [line for line in ran.shown.splitlines() if line.strip()]
    assert shown[0].startswith("numpy does not support subinterpreters"), ran.shown
    assert shown[0].endswith("(in a notebook: %parallel_pool --processes)."), ran.shown
    assert ran.shown.count("does not support subinterpreters (") == 1, ran.shown
    ran = run("def uses_numpy(x):\n    import numpy\n    return x\n"
              "%parallel_map uses_numpy [1]")
    assert isinstance(ran.error, RemoteError), ran.shown
    # The error's first line comes right after the map's summary.
    shown = [line for line in ran.shown.splitlines()
             if line.strip() and not line.startswith("__main__.uses_numpy: ")]
    assert shown[0].startswith("numpy does not support subinterpreters"), ran.shown


def test_profile_exports_a_chrome_trace_and_pstats_and_shows_functions(
        run: Run, tmp_path: Path) -> None:
    ran = run("%parallel_map --profile --chunksize 3 pooltasks.square range(12)")
    assert ran.error is None, ran.shown
    ran = run("%parallel_profile --functions")
    assert ran.error is None, ran.shown
    assert "square" in ran.out, ran.out  # the merged function profile, as %prun lists it
    trace = tmp_path / "trace.json"
    ran = run(f"%parallel_profile --export {str(trace)!r}")
    assert ran.error is None, ran.shown
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in events if e["ph"] == "X" and e["cat"] == "item") == 12
    stats_path = tmp_path / "run.pstats"
    assert run(f"%parallel_profile --export {str(stats_path)!r}").error is None
    stats = pstats.Stats(str(stats_path))
    assert any(name == "square" for _, _, name in stats.stats), sorted(stats.stats)[:5]


def test_a_watch_ends_after_its_seconds_and_stop_ends_it_sooner(
        run: Run, frontend: list[Shown]) -> None:
    assert run("%parallel_status --watch 1").error is None
    display_id = next(s.display_id for s in frontend if not s.update and s.display_id)
    assert display_id is not None
    wait_until(lambda: any("Not updated any more (watched for 1 s)" in t
                           for t in updates_of(frontend, display_id)),
               CLUSTER_LIMIT, "the one-second watch to end")
    assert updates_of(frontend, display_id)[-1].count("idle") == 2
    frontend.clear()
    assert run("%parallel_status --watch 600").error is None
    display_id = next(s.display_id for s in frontend if not s.update and s.display_id)
    assert display_id is not None
    assert run("%parallel_status --stop").error is None
    wait_until(lambda: any("Not updated any more (stopped)" in t
                           for t in updates_of(frontend, display_id)),
               CLUSTER_LIMIT, "the stopped watch to say so")


def test_a_cell_past_its_timeout_stops_the_wait_and_names_the_workers(run: Run) -> None:
    ran = run("%%parallel --timeout 0.5\nimport time\ntime.sleep(3)\n")
    assert isinstance(ran.error, ParallelCellError), ran.shown
    assert sorted(ran.error.errors) == [0, 1], ran.shown
    assert all(isinstance(e, CallTimeoutError) for e in ran.error.errors.values()), ran.shown
    # The workers finish the cell on their own, then serve again.
    wait_until(lambda: run("%parallel print('back')").out == "[workers 0-1]\nback\n",
               CLUSTER_LIMIT, "both workers to serve again")


HELD_MAP_TARGET = """%%parallel
import os, pathlib, time
def held(x, ran_in={ran_in!r}, started={started!r}, gate={gate!r}):
    pathlib.Path(ran_in, f"ran-{{x}}").touch()
    if x == 0:
        pathlib.Path(started).touch()
        while not os.path.exists(gate):
            time.sleep(0.01)
    return x
"""


def define_held(run: Run, tmp_path: Path) -> tuple[Path, Path]:
    """A target ``held`` whose item 0 waits for a gate: (started, gate)."""
    started, gate = tmp_path / "started", tmp_path / "gate"
    ran = run(HELD_MAP_TARGET.format(ran_in=str(tmp_path), started=str(started),
                                     gate=str(gate)))
    assert ran.error is None, ran.shown
    return started, gate


def ran_items(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("ran-*"))


def check_the_running_chunk(kind: str, tmp_path: Path) -> None:
    """After a stop of a map of one chunk (held over range(10)) in item 0:
    the chunk ran no item after it, but on a dask cluster, where it runs
    to its end."""
    pool = current_pool()
    wait_until(lambda: all(w.state == "idle" for w in pool.status()), CLUSTER_LIMIT,
               "the workers idle")
    if kind == "dask":
        wait_until(lambda: len(ran_items(tmp_path)) == 10, CLUSTER_LIMIT, "the chunk's end")
    else:
        assert ran_items(tmp_path) == ["ran-0"]


def map_held_while(run: Run, tmp_path: Path, act: Callable[[], None]) -> Ran:
    """Runs ``%parallel_map`` of ``held`` over range(10), one chunk, and,
    once its item 0 runs, ``act()`` in another thread (as Ctrl-C or a
    subshell would); then lets item 0 end."""
    started, gate = define_held(run, tmp_path)
    failed: list[BaseException] = []

    def act_once_item_0_runs() -> None:
        try:
            wait_until(started.exists, CLUSTER_LIMIT, "item 0 starting")
            act()
        except BaseException as exc:  # the test's thread reports it
            failed.append(exc)
            gate.touch()  # the map ends, and the test fails now, not at its timeout

    actor = threading.Thread(target=act_once_item_0_runs)
    actor.start()
    try:
        ran = run("%parallel_map --chunksize 10 held range(10)")
    finally:
        actor.join()
        gate.touch()
    assert not failed, failed
    assert isinstance(ran.error, KeyboardInterrupt), ran.shown
    assert "Interrupted: 0 of 10 items had completed" in ran.err, ran.err
    return ran


def test_map_run_gives_on_start_the_run_it_returns(kind: str) -> None:
    given: list[object] = []
    run = current_pool().map_run("math.sqrt", ([1.0, 4.0],), timeout=None, chunksize=None,
                                 buffersize=None, errors="raise", on_start=given.append)
    assert given == [run]
    assert list(run.results()) == [1.0, 2.0]


def test_a_map_is_listed_before_it_sends_its_first_chunk(
        kind: str, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """Else %parallel_stop or %parallel_status, in another shell, could find
    no map while its first items already run (a ProcessPool's did)."""
    listed_when_sent: list[list[str]] = []

    def sending(make: Callable[..., Any]) -> Callable[..., Any]:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            listed_when_sent.append([m.target for m in running_maps.all_running()])
            return make(*args, **kwargs)
        return recorded

    if kind == "local":  # a local map sends its chunks as its MapRun is made
        monkeypatch.setattr(map_magic, "MapRun", sending(map_magic.MapRun))
    else:
        pool = current_pool()
        monkeypatch.setattr(pool, "map_run", sending(pool.map_run))
    ran = run("%parallel_map math.sqrt [1.0, 4.0]")
    assert ran.error is None, ran.shown
    assert listed_when_sent == [["math.sqrt"]]


def test_ctrl_c_as_a_map_starts_stops_it_as_ctrl_c_later_would(
        kind: str, run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C that lands after the map sent its chunk but before the magic
    holds the map (as the pool's map_run returns) used to leave the chunk
    running to its end, and said so wrongly on a ProcessPool."""
    started, gate = define_held(run, tmp_path)

    def interrupted_as_it_returns(make: Callable[..., Any]) -> Callable[..., Any]:
        def made_then_interrupted(*args: Any, **kwargs: Any) -> Any:
            make(*args, **kwargs)
            wait_until(started.exists, CLUSTER_LIMIT, "item 0 starting")
            raise KeyboardInterrupt
        return made_then_interrupted

    if kind == "local":
        monkeypatch.setattr(map_magic, "MapRun", interrupted_as_it_returns(map_magic.MapRun))
    else:
        pool = current_pool()
        monkeypatch.setattr(pool, "map_run", interrupted_as_it_returns(pool.map_run))
    try:
        ran = run("%parallel_map --chunksize 10 held range(10)")
    finally:
        gate.touch()
    assert isinstance(ran.error, KeyboardInterrupt), ran.shown
    assert "Interrupted: 0 of 10 items had completed" in ran.err, ran.err
    said = {"local": "it stops after its current item",
            "processes": "running ones stop before their next item.",
            "dask": "running ones finish on their own."}[kind]
    assert said in ran.err, ran.err
    monkeypatch.undo()
    check_the_running_chunk(kind, tmp_path)


def test_ctrl_c_during_a_map_stops_its_running_chunk_before_its_next_item(
        kind: str, run: Run, tmp_path: Path) -> None:
    ran = map_held_while(run, tmp_path, _thread.interrupt_main)
    # What it says of the running chunk (a local pool names its workers).
    said = {"local": "it stops after its current item",
            "processes": "running ones stop before their next item.",
            "dask": "running ones finish on their own."}[kind]
    assert said in ran.err, ran.err
    check_the_running_chunk(kind, tmp_path)


def test_parallel_stop_from_another_shell_stops_a_map_as_ctrl_c_would(
        kind: str, shell: InteractiveShell, run: Run, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # A subshell is another thread of the kernel: %parallel_stop there.
    ran = map_held_while(run, tmp_path,
                         lambda: shell.run_line_magic("parallel_stop", "--timeout 60"))
    # The stopping shell says so once the map has ended (maybe after the
    # map's cell did).
    stopping_shell = ran.out + capsys.readouterr().out
    assert re.search(r"Stopped map \d+ \(\S*held\): 0 of 10 items had completed\.",
                     stopping_shell), stopping_shell
    check_the_running_chunk(kind, tmp_path)
