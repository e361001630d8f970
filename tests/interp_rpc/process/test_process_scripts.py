"""A ProcessPool from a script (with or without a main guard), from
``python -c`` and from ``-m``, as users start them."""

from __future__ import annotations

from pathlib import Path

import pytest
from process_support import dedent, run_python

BODY = """
from interp_rpc import ProcessPool

def square(x):
    return x * x

{guard}
    with ProcessPool(workers=2) as pool:
        print(pool.call(square, 7), list(pool.map(square, range(4))),
              pool.call("math.sqrt", 16.0))
"""
EXPECTED = "49 [0, 1, 4, 9] 4.0"


def test_from_a_script_with_a_main_guard(tmp_path: Path) -> None:
    script = tmp_path / "guarded.py"
    script.write_text(dedent(BODY.format(guard='if __name__ == "__main__":')))
    done = run_python([str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == EXPECTED


def test_from_a_script_without_a_main_guard(tmp_path: Path) -> None:
    script = tmp_path / "unguarded.py"
    script.write_text(dedent(BODY.format(guard="if True:")))
    done = run_python([str(script)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == EXPECTED


def test_from_python_minus_c(tmp_path: Path) -> None:
    code = dedent(BODY.format(guard="if True:"))
    done = run_python(["-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == EXPECTED


@pytest.mark.parametrize("guard", ['if __name__ == "__main__":', "if True:"])
def test_from_a_module_run_with_minus_m(tmp_path: Path, guard: str) -> None:
    (tmp_path / "pooled_module.py").write_text(dedent(BODY.format(guard=guard)))
    done = run_python(["-m", "pooled_module"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == EXPECTED


def test_a_script_that_reads_its_arguments_at_module_level(tmp_path: Path) -> None:
    # The worker imports the script to find Box (as multiprocessing's spawn
    # does), which runs its module level again there: it must see the
    # script's arguments, not the worker program's.
    script = tmp_path / "with_arguments.py"
    script.write_text(dedent("""
        import sys
        from interp_rpc import ProcessPool

        SCALE = int(sys.argv[1])

        class Box:
            def __init__(self, value):
                self.value = value

        def unbox(box):
            return box.value * SCALE

        if __name__ == "__main__":
            with ProcessPool(workers=1) as pool:
                print(pool.call(unbox, Box(7)), pool.call("sys.argv.copy")[1:])
    """))
    done = run_python([str(script), "3", "--flag"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "21 ['3', '--flag']"
