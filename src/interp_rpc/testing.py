"""Fault injection for tests of code that uses interp-rpc.

Workers almost never die in practice (a subinterpreter has no process to
crash, and its interpreter cannot be destroyed from outside: CPython refuses
``Interpreter.close()`` on interpreters it did not create). These hooks make a
worker's thread fail on purpose, so that the handling of dead workers and
broken pools can be tested:

    from interp_rpc.testing import kill_worker

    kill_worker(pool, 0)                      # worker 0's thread ends now
    kill_worker(pool, 1, during_next_call=True)  # it dies holding its next call
"""

from interp_rpc._pool.pool import InterpreterPool


def kill_worker(pool: InterpreterPool, index: int, *, during_next_call: bool = False) -> None:
    """Make worker ``index`` fail as a broken thread would.

    By default its thread ends as soon as it is idle. With
    ``during_next_call=True`` it takes the next queued call and dies holding
    it, so that call fails with WorkerDiedError. Raises ValueError if there is
    no such live worker.
    """
    kind = "die_on_next_call" if during_next_call else "exit_now"
    if not pool._engine.inject_fault(index, kind):
        raise ValueError(f"pool has no live worker {index} (it has {pool.workers})")
