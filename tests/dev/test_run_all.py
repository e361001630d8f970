"""tests/run_all.py: the complete pytest run goes as two halves side by side.
Together they run every test directory exactly once, and a failing half
fails the step and is shown whole."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

import run_all  # noqa: E402  (tests/ is not a package)
import sanitized_runs  # noqa: E402


@pytest.fixture(autouse=True)
def in_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_all runs from the repository's top, as ./dev starts it."""
    monkeypatch.chdir(TESTS.parent)


def paths_of(command: list[str]) -> list[str]:
    return [arg for arg in command if arg.startswith("tests/")]


def test_the_halves_run_every_test_directory_once() -> None:
    first, second = run_all.pytest_halves(["pytest", "-q"])
    assert first[:2] == second[:2] == ["pytest", "-q"]
    together = paths_of(first) + paths_of(second)
    assert sorted(together) == sorted(set(together)), together
    every = {str(d.relative_to(TESTS.parent)) for d in TESTS.iterdir()
             if d.is_dir() and any(d.rglob("test_*.py"))}
    assert set(together) == every
    assert "tests/kernel" in paths_of(first) and "tests/interp_rpc" in paths_of(second)


def test_each_half_has_a_cache_of_its_own() -> None:
    caches = [next(arg for arg in half if arg.startswith("cache_dir="))
              for half in run_all.pytest_halves(["pytest"])]
    assert len(set(caches)) == 2, caches


def test_each_half_names_its_slowest_tests() -> None:
    for half in run_all.pytest_halves(["pytest"]):
        assert f"--durations={run_all.SLOWEST_LISTED}" in half


def test_a_subset_runs_as_asked_in_one_pytest() -> None:
    options = run_all.parse(["tests/dev", "-k", "name"])
    steps = run_all.steps_of(options, "build")
    (pytest_step,) = [step for step in steps if step[0] == "pytest"]
    assert pytest_step[1] == [[sys.executable, "-m", "pytest", "tests/dev", "-k", "name"]]


def test_a_failing_half_fails_the_step_and_is_shown_whole(
        capsys: pytest.CaptureFixture[str]) -> None:
    passing = [sys.executable, "-c", "print('first line'); print('second line')"]
    failing = [sys.executable, "-c", "import sys; print('what failed'); sys.exit(3)"]
    assert run_all.call_side_by_side([passing, failing], {}).code == 3
    shown = capsys.readouterr().out
    assert "[1] first line\n" in shown and "[1] second line\n" in shown
    assert "[2] what failed\n" in shown
    assert "[1] === this half ended after " in shown
    assert shown.endswith("exited with 3; its whole output:\nwhat failed\n"), shown


def test_halves_that_pass_pass_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    quiet = [sys.executable, "-c", "pass"]
    assert run_all.call_side_by_side([quiet, quiet], {}).code == 0
    assert "whole output" not in capsys.readouterr().out


def test_the_tests_a_failing_half_names_are_listed_once_without_their_message(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A log cut to its last lines (a CI page) still says what failed."""
    summary = ("=== short test summary info ===\n"
               "ERROR tests/browser/test_a.py::test_one[light] - selenium...: Message: x\n"
               "ERROR tests/browser/test_a.py::test_one[light] - selenium...: Message: x\n"
               "FAILED tests/kernel/test_b.py::test_two - assert 1 == 2\n"
               "FAILED something that is not a test path\n")
    failing = [sys.executable, "-c", f"import sys; sys.stdout.write({summary!r}); sys.exit(1)"]
    passing = [sys.executable, "-c", "print('FAILED tests/not/this.py::test - it passed')"]
    together = run_all.call_side_by_side([passing, failing], {})
    assert together.failures == ["ERROR tests/browser/test_a.py::test_one[light]",
                                 "FAILED tests/kernel/test_b.py::test_two"]
    run_all.print_failures(together.failures)
    assert capsys.readouterr().out.endswith(
        "          ERROR tests/browser/test_a.py::test_one[light]\n"
        "          FAILED tests/kernel/test_b.py::test_two\n")


def sanitized_steps(kind: str) -> list[tuple[str, list[list[str]], dict[str, str]]]:
    options = run_all.parse([f"--sanitize={kind}"])
    return [(name, commands, env) for name, commands, env, _ in run_all.steps_of(options, "b")]


def test_under_asan_the_pool_and_kernel_suites_run_side_by_side() -> None:
    """As ./dev test's halves do: that is what makes the ASan run short
    enough for CI. Each pytest has a cache of its own and names its slowest
    tests, and each leaves the memory-growth suites to the step without
    quarantine."""
    _, side_by_side, _ = sanitized_steps("address")[1]
    assert [paths_of(argv) for argv in side_by_side] == [
        ["tests/interp_rpc", "tests/faults"], ["tests/kernel"]]
    caches = {next(arg for arg in argv if arg.startswith("cache_dir=")) for argv in side_by_side}
    assert len(caches) == 2, caches
    for argv in side_by_side:
        assert f"--durations={sanitized_runs.SLOWEST_LISTED}" in argv
        assert "--ignore=tests/kernel/test_memory.py" in argv


def test_under_tsan_the_suites_run_one_after_the_other() -> None:
    steps = sanitized_steps("thread")
    assert [len(commands) for _, commands, _ in steps] == [1, 1, 1]
    assert paths_of(steps[2][1][0]) == ["tests/kernel"]


@pytest.mark.parametrize("kind", ["address", "thread"])
def test_every_sanitized_process_is_told_which_sanitizer_runs(kind: str) -> None:
    """tests/kernel/conftest.py reads it: parity cases then run on our
    kernel alone."""
    for name, _, env in sanitized_steps(kind)[1:]:
        assert env[sanitized_runs.SANITIZER_VARIABLE] == kind, name


def test_only_the_rss_measuring_suites_run_without_quarantine_and_fake_stacks() -> None:
    """Both grow RSS by design: the suites that bound RSS growth would fail
    on ASan's memory rather than ours. Every other suite keeps them, since
    they are what finds a use after free and a use after return."""
    steps = sanitized_steps("address")[1:]
    rss_steps = [(commands, env) for name, commands, env in steps if "RSS" in name]
    assert sorted(path for commands, _ in rss_steps for path in paths_of(commands[0])) == sorted(
        sanitized_runs.RSS_MEASURING_SUITES)
    for _, env in rss_steps:
        assert "quarantine_size_mb=0" in env["ASAN_OPTIONS"]
        assert "detect_stack_use_after_return=0" in env["ASAN_OPTIONS"]
    for name, _, env in steps:
        if "RSS" not in name:
            assert "quarantine_size_mb" not in env["ASAN_OPTIONS"], name
            assert "detect_stack_use_after_return" not in env["ASAN_OPTIONS"], name


def test_a_sanitizer_run_repeats_every_python_step_and_the_cpp_tests_once() -> None:
    # It ran them once and then reported "run 3 of 6, after 2 passing".
    once = sanitized_steps("address")
    options = run_all.parse(["--sanitize=address", "--repeat", "3"])
    names = [name for name, _, _, _ in run_all.steps_of(options, "b")]
    python = [name for name, _, _ in once[1:]]
    assert names == [once[0][0]] + [f"{name}, run {n}/3" for n in (1, 2, 3) for name in python]


def summary(repeat: int, outcomes: list[tuple[str, bool]], not_run: int,
            capsys: pytest.CaptureFixture[str]) -> str:
    run_all.print_repeat_summary(
        repeat, [run_all.StepResult(name, ok) for name, ok in outcomes], not_run)
    return capsys.readouterr().out


def test_the_repeat_summary_names_the_failing_run(capsys: pytest.CaptureFixture[str]) -> None:
    passed = summary(2, [("C++", True), ("a, run 1/2", True), ("b, run 1/2", True),
                         ("a, run 2/2", True), ("b, run 2/2", True)], 0, capsys)
    assert passed == "  ok      C++\n  ok      pytest, 2 runs in a row\n"
    failed = summary(3, [("C++", True), ("a, run 1/3", True), ("b, run 1/3", True),
                         ("a, run 2/3", False)], 3, capsys)
    assert failed.endswith("  FAILED  a, run 2/3: run 2 of 3, after 1 passing\n"), failed
    plain = summary(3, [("pytest run 1/3", False)], 2, capsys)
    assert plain == "  FAILED  pytest run 1/3: run 1 of 3, after 0 passing\n"
    cpp_failed = summary(2, [("C++", False)], 4, capsys)
    assert cpp_failed == "  FAILED  C++\n  FAILED  the repeated runs did not start\n"


def test_whole_directories_alone_run_as_shards_of_their_files() -> None:
    # The kernel suite mostly waits: shards side by side take a fraction of
    # the time, which a 30-run repeat of it needs.
    options = run_all.parse(["tests/kernel"])
    (pytest_step,) = [step for step in run_all.steps_of(options, "b") if step[0] == "pytest"]
    shards = [paths_of(argv) for argv in pytest_step[1]]
    assert len(shards) == run_all.DIRECTORY_SHARDS and all(shards)
    together = [path for shard in shards for path in shard]
    files = sorted(str(f) for f in Path("tests/kernel").rglob("test_*.py"))
    assert sorted(together) == files  # each file once
    caches = {next(arg for arg in argv if arg.startswith("cache_dir=")) for argv in pytest_step[1]}
    assert len(caches) == run_all.DIRECTORY_SHARDS


@pytest.mark.parametrize("args", [
    ["tests/kernel", "-k", "name"],  # an option: as asked
    ["tests/kernel/test_lifecycle.py"],  # a file
    ["tests/kernel/test_lifecycle.py::test_shutdown_while_a_cell_awaits"],
])
def test_any_other_selection_runs_in_one_pytest(args: list[str]) -> None:
    options = run_all.parse(args)
    (pytest_step,) = [step for step in run_all.steps_of(options, "b") if step[0] == "pytest"]
    assert pytest_step[1] == [[sys.executable, "-m", "pytest", *args]]


def test_a_repeat_of_whole_directories_repeats_every_shard() -> None:
    options = run_all.parse(["--repeat", "2", "tests/kernel"])
    steps = run_all.steps_of(options, "b")
    assert [name for name, _, _, _ in steps] == ["pytest run 1/2", "pytest run 2/2"]
    assert all(len(commands) == run_all.DIRECTORY_SHARDS for _, commands, _, _ in steps)


def running(pid: int) -> bool:
    """Whether the process runs: neither gone nor a zombie left to reap."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_load_dies_with_a_run_killed_without_warning() -> None:
    # A test run stopped by SIGTERM or SIGKILL (a CI timeout, a user's kill)
    # must not leave its CPU hogs behind.
    script = (
        f"import sys, time; sys.path.insert(0, {str(TESTS)!r})\n"
        "import run_all\n"
        "with run_all.cpu_hog(True):\n"
        "    time.sleep(600)\n"
    )
    run = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL)
    hogs: list[int] = []
    deadline = time.monotonic() + 60
    while len(hogs) < (os.process_cpu_count() or 1) and time.monotonic() < deadline:
        hogs = [int(pid) for pid in subprocess.run(
            ["pgrep", "-P", str(run.pid)], capture_output=True, text=True).stdout.split()]
        time.sleep(0.05)
    assert hogs, "the run started no hog"
    run.kill()
    run.wait()
    deadline = time.monotonic() + 60
    while any(running(pid) for pid in hogs) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in hogs if running(pid)]
