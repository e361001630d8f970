"""C code that re-enters Python with PyGILState_Ensure, inside a worker."""

import sys
from pathlib import Path

from interp_rpc import InterpreterPool


def test_ctypes_callbacks_run_in_the_worker_interpreter() -> None:
    sys.path.insert(0, str(Path(__file__).parents[1] / "workers"))
    try:
        with InterpreterPool(workers=2, init="import gilstate_callbacks") as pool:
            values = [5, 3, 9, 1, 7]
            ordered, in_callbacks, in_call = pool.call("gilstate_callbacks.sort_with_qsort",
                                                       values)
            assert ordered == sorted(values)
            assert in_callbacks == in_call  # the worker's own interpreter...
            assert in_call != 0  # ...which is not the main one
    finally:
        sys.path.remove(str(Path(__file__).parents[1] / "workers"))
