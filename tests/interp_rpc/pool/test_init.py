"""init=: runs once per worker before any call; failures and timeouts tear the pool down."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import non_main_interpreters, on_every_worker, wait_only_main_interpreter

from interp_rpc import (
    InterpreterPool,
    InterpRpcError,
    PoolInitError,
    RemoteError,
    TargetResolutionError,
    WorkerInitFailure,
)
from interp_rpc._pool.validation import available_memory, check_workers_fit

COUNTING_INIT = """
import pooltasks
try:
    INIT_RUNS += 1
except NameError:
    INIT_RUNS = 1
EVENTS = ["init"]
"""


def test_init_runs_once_in_every_worker_before_any_call(tmp_path: Path) -> None:
    with InterpreterPool(workers=2, init=COUNTING_INIT) as pool:
        # The first call of each worker already sees its init done, once.
        assert list(on_every_worker(pool, tmp_path, "main_attr", "EVENTS").values()) == [
            ["init"], ["init"]]
        assert list(on_every_worker(pool, tmp_path, "main_attr", "INIT_RUNS").values()) == [1, 1]
        runs = list(pool.map("pooltasks.main_attr", ["INIT_RUNS"] * 40, chunksize=1))
        events = list(pool.map("pooltasks.main_attr", ["EVENTS"] * 40, chunksize=1))
    assert runs == [1] * 40
    assert events == [["init"]] * 40


def test_init_code_shares_the_workers_main_namespace() -> None:
    init = "import pooltasks\nGREETING = 'hello from init'"
    with InterpreterPool(workers=2, init=init) as pool:
        assert pool.call("pooltasks.main_attr", "GREETING") == "hello from init"


@pytest.fixture
def extra_path_entry(tmp_path: Path) -> Iterator[Path]:
    """A directory on the caller's sys.path that holds a module of its own."""
    directory = tmp_path / "only-on-callers-path"
    directory.mkdir()
    (directory / "callers_own_module.py").write_text("def answer():\n    return 42\n")
    sys.path.append(str(directory))
    try:
        yield directory
    finally:
        sys.path.remove(str(directory))
        sys.modules.pop("callers_own_module", None)


def test_workers_start_with_the_callers_sys_path_and_cwd(
        extra_path_entry: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with InterpreterPool(workers=2, init="import pooltasks, callers_own_module") as pool:
        envs = on_every_worker(pool, tmp_path, "environment").values()
        assert pool.call("callers_own_module.answer") == 42
    for env in envs:
        assert env["sys_path"] == sys.path
        assert str(extra_path_entry) in env["sys_path"]
        assert env["cwd"] == os.getcwd() == str(tmp_path)


def test_init_failure_names_every_failing_worker_with_its_traceback() -> None:
    init = "import pooltasks\npooltasks.init_failure()"
    before = non_main_interpreters()
    with pytest.raises(PoolInitError) as info:
        InterpreterPool(workers=2, init=init)
    err = info.value
    assert isinstance(err, InterpRpcError)
    assert sorted(f.worker for f in err.failures) == [0, 1]
    message = str(err)
    for failure in err.failures:
        assert isinstance(failure, WorkerInitFailure)
        assert not failure.timed_out
        assert not failure.refused_extension
        assert isinstance(failure.error, RemoteError)
        assert failure.error.remote_type_name == "LookupError"
        assert failure.error.remote_message == "init could not find its configuration"
        assert "Traceback (most recent call last)" in failure.error.remote_traceback
        assert "in init_failure" in failure.error.remote_traceback
    # Identical failures are shown once, for all the workers that hit them.
    assert named_workers(message) == [0, 1]
    assert message.count("in init_failure") == 1
    # Every worker was torn down.
    wait_only_main_interpreter()
    assert before == []


def named_workers(message: str) -> list[int]:
    """The worker numbers a PoolInitError message names ("workers 0, 1: ...")."""
    found: list[int] = []
    for match in re.finditer(r"^workers? ([\d, ]+):", message, flags=re.MULTILINE):
        found += [int(n) for n in match.group(1).split(",")]
    return sorted(found)


def test_init_failure_in_one_worker_tears_down_the_healthy_ones_too(tmp_path: Path) -> None:
    flag = tmp_path / "chosen"
    init = f"import pooltasks\npooltasks.fail_first_caller({str(flag)!r})"
    with pytest.raises(PoolInitError) as info:
        InterpreterPool(workers=3, init=init)
    failures = info.value.failures
    assert len(failures) == 1
    failed = failures[0]
    assert failed.error is not None
    assert failed.error.remote_message == "this worker was chosen to fail"
    assert f"worker {failed.worker}" in str(info.value)
    wait_only_main_interpreter()


def test_init_timeout_raises_pool_init_error_with_timed_out(tmp_path: Path) -> None:
    gate = tmp_path / "init-gate"
    init = f"import pooltasks\npooltasks.wait_for_path({str(gate)!r})"
    try:
        with pytest.raises(PoolInitError) as info:
            InterpreterPool(workers=2, init=init, init_timeout=0.3)
    finally:
        gate.touch()  # let the stuck init finish, so its worker can be torn down
    err = info.value
    assert err.init_timeout == 0.3
    assert sorted(f.worker for f in err.failures) == [0, 1]
    assert all(f.timed_out for f in err.failures)
    assert "init_timeout=0.3" in str(err)
    assert named_workers(str(err)) == [0, 1]
    wait_only_main_interpreter()


@pytest.mark.parametrize("module", ["zmq", "psutil"])
def test_refused_c_extension_is_explained_plainly(module: str) -> None:
    pytest.importorskip(module)  # importable here, in the main interpreter
    with pytest.raises(PoolInitError) as info:
        InterpreterPool(workers=2, init=f"import {module}")
    err = info.value
    message = str(err)
    assert "does not support loading in subinterpreters" in message
    # Our explanation, not only CPython's one-liner.
    assert "Py_mod_multiple_interpreters" in message
    assert "was not built for isolated subinterpreters" in message
    assert "process pool" in message
    assert len(err.failures) == 2
    for failure in err.failures:
        assert failure.refused_extension
        assert failure.error is not None
        assert failure.error.remote_type_name == "ImportError"
        assert "does not support loading in subinterpreters" in failure.error.remote_message
    wait_only_main_interpreter()


def test_ordinary_import_error_is_not_reported_as_a_refused_extension() -> None:
    with pytest.raises(PoolInitError) as info:
        InterpreterPool(workers=1, init="import module_that_does_not_exist_anywhere")
    (failure,) = info.value.failures
    assert not failure.refused_extension
    assert failure.error is not None
    assert failure.error.remote_type_name == "ModuleNotFoundError"
    assert "Py_mod_multiple_interpreters" not in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        ({"workers": 0}, ValueError, "workers must be greater than 0"),
        ({"workers": -3}, ValueError, "workers must be greater than 0"),
        ({"max_workers": 0}, ValueError, "max_workers must be greater than 0"),
        ({"max_workers": "2"}, TypeError, "max_workers must be an int, not str"),
        ({"workers": "2"}, TypeError, "workers must be an int, not str"),
        ({"workers": 2.0}, TypeError, "workers must be an int, not float"),
        ({"workers": True}, TypeError, "workers must be an int, not bool"),
        ({"init": 3}, TypeError, "init must be source code (a str) or None, not int"),
        ({"init": b"import os"}, TypeError, "init must be source code"),
        ({"init": "def broken(:\n"}, ValueError, "init is not valid Python"),
        ({"init_timeout": -1}, ValueError, "init_timeout must be a non-negative number"),
        ({"init_timeout": float("nan")}, ValueError, "init_timeout must be a non-negative"),
        ({"init_timeout": "5"}, TypeError, "init_timeout must be a number of seconds or None"),
        # A typo that would start workers for minutes, until the system
        # killed the process for its memory (3 MiB each: petabytes).
        ({"workers": 10**9}, ValueError, "workers=1,000,000,000 cannot fit in this machine's"),
        ({"max_workers": 10**9}, ValueError, "max_workers=1,000,000,000 cannot fit"),
    ],
)
def test_bad_constructor_arguments_fail_clearly(
        kwargs: dict[str, object], error: type[Exception], words: str) -> None:
    before = non_main_interpreters()
    with pytest.raises(error) as info:
        InterpreterPool(**kwargs)  # type: ignore[arg-type]
    assert words in str(info.value)
    # Nothing was started.
    assert non_main_interpreters() == before


def test_a_worker_count_is_refused_only_when_it_cannot_fit() -> None:
    mib = 2**20
    check_workers_fit("workers", 100, 3 * mib, 300 * mib)  # exactly fits
    check_workers_fit("workers", 10**9, 3 * mib, None)  # nothing known: no guess
    with pytest.raises(ValueError) as info:
        check_workers_fit("workers", 101, 3 * mib, 300 * mib)
    message = str(info.value)
    assert message.startswith("workers=101 cannot fit in this machine's memory: each worker "
                              "takes at least 3 MiB (more with init=), 0.3 GiB in all, and "
                              "0.3 GiB is available. At most 100 would fit"), message
    assert f"more workers than cores ({os.process_cpu_count()} here) gain nothing" in message


def test_available_memory_is_what_the_system_reports() -> None:
    available = available_memory()
    assert available is not None  # Linux says it
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        total = int(next(line for line in meminfo if line.startswith("MemTotal:")).split()[1])
    assert 0 < available <= total * 1024


def test_init_none_and_defaults() -> None:
    with InterpreterPool(workers=1) as pool:
        assert pool.workers == 1
        assert pool.call("os.getcwd") == os.getcwd()
    with InterpreterPool() as pool:
        assert pool.workers == 4


def test_max_workers_is_the_executor_spelling_of_workers() -> None:
    with InterpreterPool(max_workers=1) as pool:
        assert pool.workers == 1
        assert pool.call("math.sqrt", 4.0) == 2.0


REFUSING_MODULES = ["numpy", "zmq", "psutil"]


def first_line(text: str) -> str:
    return text.strip().splitlines()[0]


@pytest.mark.parametrize("module", REFUSING_MODULES)
def test_the_first_line_names_a_refusing_module_and_the_fix(module: str) -> None:
    # numpy's own text starts with 25 lines of advice to reinstall it; the
    # cause and what to do instead come first, the library's text after.
    pytest.importorskip(module)
    with pytest.raises(PoolInitError) as info:
        InterpreterPool(workers=2, init=f"import {module}")
    line = first_line(str(info.value))
    assert line.startswith(f"{module} does not support subinterpreters"), line
    assert "interp_rpc.ProcessPool(" in line
    assert str(info.value).count("does not support subinterpreters (") == 1  # once, for both
    with InterpreterPool(workers=1) as pool:
        with pytest.raises(TargetResolutionError) as resolving:
            pool.call(f"{module}.__name__.upper")
        assert first_line(str(resolving.value)).startswith(
            f"{module} does not support subinterpreters"), str(resolving.value)
        with pytest.raises(RemoteError) as calling:
            pool.call("importlib.import_module", module)
        assert first_line(str(calling.value)).startswith(
            f"{module} does not support subinterpreters"), str(calling.value)
        assert calling.value.refused_module is not None
        assert calling.value.refused_module.split(".")[0] == module
    wait_only_main_interpreter()
