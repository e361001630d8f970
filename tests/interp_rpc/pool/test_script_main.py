"""A script's __main__ is optional in workers.

Workers import the caller's script only when a target or an argument refers
to something defined in it. A script that imports numpy, psutil or pyzmq at
top level (C extensions that refuse subinterpreters) can therefore use a pool;
only the calls that need the script fail, with an error that names the
module that refused and says what to do.

Every test runs a real script in a subprocess, as users do.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import FIXTURES

REFUSING = ["numpy", "psutil", "zmq"]

SCRIPT = '''
import ast
import json
import sys

import {module}

sys.path.insert(0, {fixtures!r})
with open({marker!r}, "a") as marker:
    marker.write("imported\\n")

from interp_rpc import InterpreterPool, ShareabilityError, TargetResolutionError


def work(x):
    return x + 1


class Point:
    def __init__(self, x):
        self.x = x


def outcome(call):
    try:
        return {{"ok": call()}}
    except (ShareabilityError, TargetResolutionError) as exc:
        return {{"error": type(exc).__name__, "message": str(exc),
                 "path": getattr(exc, "argument_path", None)}}


if __name__ == "__main__":
    with InterpreterPool(workers=2, init="import pooltasks") as pool:
        report = {{
            "sqrt": pool.call("math.sqrt", 16.0),
            "module_function": pool.call("pooltasks.add", 1, 2),
            "imports_before": open({marker!r}).read().count("imported"),
            "target": outcome(lambda: pool.call(work, 1)),
            "value": outcome(lambda: pool.call("builtins.repr", {{"p": Point(1)}})),
            "again": outcome(lambda: pool.call(work, 2)),
            "sqrt_after": pool.call("math.sqrt", 25.0),
        }}
    print(json.dumps(report))
'''


def run_script(path: Path) -> dict[str, object]:
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                            timeout=120, cwd=path.parent)
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout.strip().splitlines()[-1])
    return report


def run_script_of(template: str, path: Path, pool: str) -> dict[str, object]:
    """Runs the script ``template`` makes for the pool class named ``pool``."""
    path.write_text(template.format(fixtures=str(FIXTURES), pool=pool))
    return run_script(path)


@pytest.mark.parametrize("module", REFUSING)
def test_a_script_importing_a_refusing_extension_can_use_a_pool(tmp_path: Path,
                                                                module: str) -> None:
    pytest.importorskip(module)
    script = tmp_path / f"uses_{module}.py"
    marker = tmp_path / "imports.txt"
    script.write_text(SCRIPT.format(module=module, fixtures=str(FIXTURES), marker=str(marker)))
    report = run_script(script)
    assert report["sqrt"] == 4.0
    assert report["module_function"] == 3
    assert report["sqrt_after"] == 5.0
    # Workers did not import the script when they started.
    assert report["imports_before"] == 1
    target = report["target"]
    assert isinstance(target, dict)
    assert target["error"] == "TargetResolutionError"
    message = str(target["message"])
    assert f"imports {module}" in message  # names the module that refused
    assert "does not support loading in subinterpreters" in message
    assert "Move 'work' into a module" in message
    value = report["value"]
    assert isinstance(value, dict)
    assert value["error"] == "ShareabilityError"
    assert value["path"] == "argument 'obj'['p']"
    assert f"imports {module}" in str(value["message"])
    assert "Move 'Point' into a module" in str(value["message"])
    # The failure is remembered: the script is not run again for each call.
    assert report["again"] == target


GOOD_SCRIPT = '''
import ast
import json
import sys

sys.path.insert(0, {fixtures!r})
with open({marker!r}, "a") as marker:
    marker.write("imported\\n")

from interp_rpc import InterpreterPool


def work(point):
    return point.x * 10


class Point:
    def __init__(self, x):
        self.x = x


if __name__ == "__main__":
    with InterpreterPool(workers=1) as pool:
        before = pool.call("math.sqrt", 9.0)
        imports_before = open({marker!r}).read().count("imported")
        result = pool.call(work, Point(4))
        imports_after = open({marker!r}).read().count("imported")
        again = pool.call(work, Point(5))
        imports_end = open({marker!r}).read().count("imported")
    print(json.dumps([before, imports_before, result, imports_after, again, imports_end]))
'''


def test_a_script_is_imported_once_on_first_use(tmp_path: Path) -> None:
    script = tmp_path / "good.py"
    marker = tmp_path / "imports.txt"
    script.write_text(GOOD_SCRIPT.format(fixtures=str(FIXTURES), marker=str(marker)))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [3.0, 1, 40, 2, 50, 2]


DASK_LIKE = '''
import multiprocessing
import sys

import psutil

sys.path.insert(0, {fixtures!r})


def in_child(queue):
    """Runs in a spawned process whose __main__ is this script, imported as
    __mp_main__ (so a pool's workers would see psutil at its top)."""
    from interp_rpc import InterpreterPool, TargetResolutionError

    with InterpreterPool(workers=2, init="import pooltasks") as pool:
        results = [pool.call("math.sqrt", 16.0), pool.call("pooltasks.square", 7)]
        try:
            pool.call(in_child, None)
        except TargetResolutionError as exc:
            results.append(str(exc))
    queue.put(results)


if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=in_child, args=(queue,))
    child.start()
    print(repr(queue.get(timeout=100)))
    child.join(timeout=100)
    sys.exit(child.exitcode)
'''


def test_a_pool_in_a_spawned_worker_process_whose_main_imports_psutil(tmp_path: Path) -> None:
    # The situation of a pool created in a dask worker process.
    pytest.importorskip("psutil")
    script = tmp_path / "cluster.py"
    script.write_text(DASK_LIKE.format(fixtures=str(FIXTURES)))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=200, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    sqrt, square, message = ast.literal_eval(result.stdout)
    assert (sqrt, square) == (4.0, 49)
    assert "'__mp_main__.in_child'" in message
    assert "imports psutil" in message
    assert "Move 'in_child' into a module" in message


def test_the_script_runs_as_mp_main_under_its_main_guard(tmp_path: Path) -> None:
    # Code under the __main__ guard never runs in a worker, even when the
    # worker imports the script.
    script = tmp_path / "guarded.py"
    script.write_text(textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(FIXTURES)!r})
        from interp_rpc import InterpreterPool

        def name():
            return __name__

        if __name__ == "__main__":
            with InterpreterPool(workers=1) as pool:
                print(pool.call(name))
    '''))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                            timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "__mp_main__"


LAMBDAS_SCRIPT = '''
import json
import sys

sys.path.insert(0, {fixtures!r})
from interp_rpc import {pool}, TargetResolutionError

FACTOR = 3


def make_scaler():
    def scale(x):  # defined in a function, capturing nothing: uses a global
        return x * FACTOR

    return scale


def make_closure(k):
    return lambda x: x * k


if __name__ == "__main__":
    with {pool}(workers=2) as pool:
        report = {{
            "lambda": list(pool.map(lambda x: x * FACTOR, range(4))),
            "nested": pool.call(make_scaler(), 5),
            "with_default": pool.submit(lambda x, y=FACTOR: x + y, 1).result(),
        }}
        try:
            pool.call(make_closure(2), 1)
        except TargetResolutionError as exc:
            report["closure"] = str(exc)
    print(json.dumps(report))
'''


@pytest.mark.parametrize("pool", ["InterpreterPool", "ProcessPool"])
def test_a_scripts_lambdas_and_nested_functions_run_with_its_globals(
        tmp_path: Path, pool: str) -> None:
    # As joblib and dask run them (multiprocessing cannot pickle them). Only
    # a closure is refused: what it captured would not cross.
    report = run_script_of(LAMBDAS_SCRIPT, tmp_path / "lambdas.py", pool)
    assert report["lambda"] == [0, 3, 6, 9]
    assert report["nested"] == 15
    assert report["with_default"] == 4
    assert "is a closure (it captures k from an enclosing scope)" in str(report["closure"])


SCRIPT_CLASS_RESULTS = '''
import dataclasses
import json
import sys

sys.path.insert(0, {fixtures!r})
from interp_rpc import {pool}


@dataclasses.dataclass
class Point:
    x: int
    y: int


def make(i):
    return Point(i, 2 * i)


if __name__ == "__main__":
    with {pool}(workers=2) as pool:
        one = pool.call(make, 1)
        many = list(pool.map(make, range(3)))
    print(json.dumps({{"one": [type(one) is Point, dataclasses.astuple(one)],
                      "many": [type(p) is Point for p in many],
                      "values": [dataclasses.astuple(p) for p in many]}}))
'''


@pytest.mark.parametrize("pool", ["InterpreterPool", "ProcessPool"])
def test_instances_of_a_scripts_classes_come_back_as_its_classes(
        tmp_path: Path, pool: str) -> None:
    # The worker knows the script as __mp_main__, so it names the class
    # __mp_main__.Point; here that name must find __main__.Point, as it does
    # for multiprocessing's results (the script does not import it).
    report = run_script_of(SCRIPT_CLASS_RESULTS, tmp_path / "points.py", pool)
    assert report == {"one": [True, [1, 2]], "many": [True, True, True],
                      "values": [[0, 0], [1, 2], [2, 4]]}
