"""Post-mortem debugging of a worker's last failure, on the worker's own
frames: the caller's side of the session.

Every worker of an InterpreterPool keeps the exception of its last failing
call or map item alive, traceback and all (see _worker/post_mortem.py). A
session is one call pinned to that worker, named so that the worker shows
as "debugging": pdb runs there, its stdout and stdin bound to two
cross-interpreter queues. Here each line it prints is written to the
caller's stdout and each line it reads is asked with ``input()``, so in a
Jupyter kernel the prompt travels over the stdin channel exactly as a local
``%debug``'s does. The other workers go on serving meanwhile.
"""

from __future__ import annotations

import builtins
import os
import sys
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interp_rpc._pool import replies
from interp_rpc._pool.engine import _core
from interp_rpc._worker import post_mortem as worker_side
from interp_rpc.errors import DebugUnavailableError, RemoteError

if TYPE_CHECKING:
    from interp_rpc._pool.pool import InterpreterPool

__all__ = ["clear_failures", "debug_error", "debug_worker", "kept_failures", "register_pool"]

#: The worker-side entry point (_worker/main.py's post_mortem).
WORKER_ENTRY = "_interp_rpc_worker.post_mortem"

#: How a session whose call ended without saying so ended (_converse).
_NO_WORD = "no word"

#: How long a wait for the worker's next message lasts before checking that
#: its session's call is still running (whole seconds: the queue's timeout is).
_POLL_SECONDS = 1

#: What to do instead when the worker's frames cannot be reached.
RERUN_HINT = ("err.debug(local=True) (in a notebook, %parallel_debug --local) re-runs the "
              "failing call here, under pdb")

# Every open InterpreterPool of this process, to find the one whose worker
# raised an error (by the worker's interpreter id) without the error holding
# a reference to its pool.
_pools: weakref.WeakSet[InterpreterPool] = weakref.WeakSet()


def register_pool(pool: InterpreterPool) -> None:
    """Make ``pool``'s workers findable by the errors they raise."""
    _pools.add(pool)


def locate(error: RemoteError) -> tuple[InterpreterPool, int, int]:
    """(pool, worker, failure number) of the worker that raised ``error``
    and keeps its frames, or DebugUnavailableError saying why none does."""
    handle: dict[str, Any] | None = getattr(error, "post_mortem", None)
    if handle is None:
        raise DebugUnavailableError(
            f"this {error.remote_type} carries no record of where its frames are kept (it was "
            f"not raised by a worker of a local InterpreterPool); {RERUN_HINT}")
    if handle.get("not_kept"):
        raise DebugUnavailableError(f"worker {error.worker} did not keep this failure: "
                                    f"{handle['not_kept']}; {RERUN_HINT}")
    if handle["pid"] != os.getpid():
        raise DebugUnavailableError(
            f"this {error.remote_type} was raised in another process (pid {handle['pid']}: a "
            "ProcessPool's worker or a dask worker), whose frames this interpreter cannot "
            f"reach; {RERUN_HINT}")
    for pool in list(_pools):
        if pool.closed:
            continue
        worker = pool.output_labels().get(int(handle["interpreter"]))
        if worker is not None:
            return pool, worker, int(handle["failure"])
    raise DebugUnavailableError(
        f"the pool whose worker {error.worker} raised this {error.remote_type} is closed, and "
        f"its frames went with it; {RERUN_HINT}")


def kept_failures(pool: InterpreterPool,
                  workers: list[int] | None = None) -> dict[int, dict[str, Any]]:
    """What each worker keeps, by worker (those that keep nothing are left
    out): its failure's number, the target that raised it, the error."""
    run = pool.run_everywhere(WORKER_ENTRY, ("describe",), workers=workers)
    kept = {}
    for worker, outcome in run.wait().items():
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome is not None:
            kept[worker] = outcome
    return kept


def clear_failures(pool: InterpreterPool, workers: list[int] | None = None) -> list[int]:
    """Release the kept failures (their frames and locals); the workers that had one."""
    run = pool.run_everywhere(WORKER_ENTRY, ("clear",), workers=workers)
    cleared = []
    for worker, outcome in run.wait().items():
        if isinstance(outcome, BaseException):
            raise outcome
        if outcome:
            cleared.append(worker)
    return cleared


def debug_error(error: RemoteError, *, read: Callable[[str], str] | None = None,
                write: Callable[[str], object] | None = None) -> str:
    """pdb on the frames of the worker that raised ``error``; see debug_worker."""
    pool, worker, number = locate(error)
    return debug_worker(pool, worker, number, read=read, write=write)


def debug_worker(pool: InterpreterPool, worker: int, expected: int | None = None, *,
                 read: Callable[[str], str] | None = None,
                 write: Callable[[str], object] | None = None) -> str:
    """Run pdb's post-mortem inside ``worker`` on its kept failure (number
    ``expected``, or whichever it keeps when None), until the person quits
    or presses Ctrl-C. ``read(prompt)`` asks for each command (``input``
    as it is when asked: a kernel puts its own in place during a cell);
    ``write(text)`` shows pdb's output (the caller's stdout). Returns
    "debugged"; raises DebugUnavailableError when the worker keeps nothing
    to debug, or no longer keeps that failure."""
    from concurrent import interpreters

    if worker not in pool.worker_indices():
        raise DebugUnavailableError(f"there is no worker {worker}: the pool's workers are "
                                    f"0 to {pool.workers - 1}")
    show = write if write is not None else _write_stdout
    # What a session's call is named after: the engine's rule for "debugging".
    prefix = _core.DEBUG_SESSION_PREFIX
    name = f"{prefix}worker {worker}'s last failure"
    described = kept_failures(pool, [worker]).get(worker)
    if described is not None:
        name = f"{prefix}{described['target']}"
        show(f"pdb in worker {worker}, on its last failure: {described['error']} "
             f"(in {described['target']})\n")
    commands, output = interpreters.create_queue(), interpreters.create_queue()
    encoded = pool._encode(WORKER_ENTRY, ("debug", expected, commands.id, output.id), {})
    handle = pool._submit(replace(encoded, name=name), worker=worker)
    try:
        how = _converse(handle, commands, output, read if read is not None else _input, show)
    except BaseException:
        # Whatever stopped the relay (a read that failed, a second Ctrl-C),
        # the worker must not wait for a command that never comes.
        commands.put(worker_side.END_OF_INPUT)
        raise
    handle.wait(None)
    status, kind, reply, ran_on = handle.take()
    # The call's value is how it ended, as its last message said; an error
    # (the worker died) is raised.
    returned = replies.reply_value(status, kind, reply, ran_on, name, (), {})
    if how == _NO_WORD:
        how = str(returned)
    if how == worker_side.DEBUGGED:
        return how
    raise DebugUnavailableError(_refusal(how, worker))


def _converse(handle: Any, commands: Any, output: Any, read: Callable[[str], str],
              show: Callable[[str], object]) -> str:
    """Relay the session until the worker says it ended; how it ended."""
    from concurrent import interpreters

    pending = ""  # output since the last newline: the prompt of the next read
    ending = False
    call_done = False
    while True:
        try:
            try:
                message = output.get(timeout=_POLL_SECONDS)
            except interpreters.QueueEmpty:
                # Whatever a finished call sent is queued already: an empty
                # queue after it finished means it ended without a word (its
                # reply says why).
                if call_done:
                    return _NO_WORD
                call_done = handle.done
                continue
        except KeyboardInterrupt:
            # Ctrl-C while pdb runs a command: the worker cannot be
            # interrupted, so the session ends at its next prompt; a second
            # Ctrl-C stops waiting for that (the worker still ends it).
            if ending:
                raise
            ending = True
            commands.put(worker_side.END_OF_INPUT)
            show("\n--KeyboardInterrupt-- the session ends once the worker's command returns\n")
            continue
        kind = message[0]
        if kind == worker_side.OUTPUT:
            lines, newline, pending = (pending + message[1]).rpartition("\n")
            if newline:
                show(lines + newline)
        elif kind == worker_side.READ:
            prompt, pending = pending, ""
            if ending:
                continue  # the end is queued already
            try:
                commands.put(read(prompt))
            except (KeyboardInterrupt, EOFError):  # Ctrl-C (or no more input) ends it
                ending = True
                commands.put(worker_side.END_OF_INPUT)
        elif kind == worker_side.ENDED:
            if pending:
                show(pending + "\n")
            return str(message[1])


def _refusal(how: str, worker: int) -> str:
    if how == worker_side.REPLACED:
        return (f"worker {worker} has failed again since, and keeps only its last failure; "
                f"%parallel_debug --worker {worker} (or debug_worker) debugs that one, or "
                f"{RERUN_HINT}")
    if how.startswith(worker_side.NOT_KEPT):
        reason = how.removeprefix(worker_side.NOT_KEPT)
        return f"worker {worker} did not keep its last failure: {reason}; {RERUN_HINT}"
    return (f"worker {worker} keeps no failure to debug (none since the pool started, or it "
            f"was cleared); {RERUN_HINT}")


def _input(prompt: str) -> str:
    return builtins.input(prompt)


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
