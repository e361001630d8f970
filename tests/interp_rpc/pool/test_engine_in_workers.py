"""What a worker sees of the engine: interp_rpc imports there (targets and
error classes need it), but its C++ engine is the main interpreter's."""

from __future__ import annotations

import enginetasks

from interp_rpc import InterpreterPool


def test_importing_interp_rpc_in_a_worker_leaves_the_engine_module_alone() -> None:
    # Trying _core there ran its init (which refuses subinterpreters only at
    # its end) against pybind11's state that the main interpreter's threads
    # read meanwhile: a data race under ThreadSanitizer.
    with InterpreterPool(workers=1) as pool:
        tried = pool.call(enginetasks.modules_tried_by_importing_interp_rpc)
    assert "interp_rpc._pool.engine" in tried  # the hook saw the package's imports
    assert "interp_rpc._core" not in tried


def test_a_pool_created_inside_a_worker_fails_with_a_clear_error() -> None:
    with InterpreterPool(workers=1) as pool:
        raised = pool.call(enginetasks.create_a_pool)
    assert raised.startswith("InterpRpcError: InterpreterPool can only be created in the main "
                             "interpreter, not inside a worker"), raised
