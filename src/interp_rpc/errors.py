"""The errors interp-rpc raises. Every one of them is an InterpRpcError.

Each pickles itself, attributes and all, so that an error raised in another
process (a dask worker's) reaches the caller as the same error: a
RemoteError is rebuilt there as ``RemoteError[Original]`` when the caller can
resolve the original class (see _pool/remote_classes.py).
"""

from __future__ import annotations

import re
from typing import Any

SHAREABLE_VALUES_HELP = (
    "Shareable values: str, bytes, bytearray, memoryview, int, float, complex, bool, None, "
    "and any nesting of list, tuple, dict, set and frozenset built from those, plus "
    "instances of classes that the worker can import under the same qualified name. "
    "Define such classes at module level in a module that the pool's init= imports "
    "(not inside a function, and not in a notebook cell); functions, lambdas, locks, "
    "open files, sockets and generators do not cross."
)

SUBINTERPRETER_EXTENSION_HELP = (
    "The C extension module {module} was not built for isolated subinterpreters: it does not "
    "declare Py_mod_multiple_interpreters support, so Python refuses to import it in an "
    "interpreter with its own GIL. This is a limitation of that extension, not of your "
    "code (numpy, pyzmq and psutil refuse today). Import it only in the main interpreter, "
    "or run the code that needs it in a process pool."
)

#: The first line of an error whose cause is such a refusal: what failed and
#: the fix, before the library's own text (numpy's starts with 25 lines of
#: advice to reinstall it).
SUBINTERPRETER_REFUSAL_FIX = (
    "{package} does not support subinterpreters (its C extension module {module} refused "
    "to load in one): run the code that needs it in interp_rpc.ProcessPool(...), whose "
    "workers are processes (in a notebook: %parallel_pool --processes)."
)


_REFUSED_EXTENSION = re.compile(r"module (\S+) does not support loading in subinterpreters")


def refused_module(text: str) -> str | None:
    """The C extension module that ``text`` (an error's message or
    traceback) says refused to load in a subinterpreter, if it says so."""
    found = _REFUSED_EXTENSION.search(text)
    return found.group(1) if found else None


def refusal_fix(module: str) -> str:
    """The one line that names what refused and the fix."""
    return SUBINTERPRETER_REFUSAL_FIX.format(package=module.split(".")[0], module=module)


class InterpRpcError(Exception):
    """Base class of every error interp-rpc raises."""

    def _render_traceback_(self) -> list[str]:
        """How IPython shows it raised: the caller's frames (the cell's line
        that made the call), then the message; not interp-rpc's frames, which
        say nothing the message does not."""
        from interp_rpc.display.errors import error_lines

        return error_lines(self)

    def __reduce__(self) -> tuple[Any, ...]:
        # BaseException's own pickling calls the class with ``args`` alone,
        # which these constructors, taking their fields by keyword, refuse.
        return _restore, (type(self), self.args, self.__dict__)


def _restore(cls: type[InterpRpcError], args: tuple[Any, ...],
             state: dict[str, Any]) -> InterpRpcError:
    """An unpickled error: its args and attributes, without its constructor."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class _Missing:
    """The type of MISSING."""

    def __repr__(self) -> str:
        return "MISSING"

    def __reduce__(self) -> str:
        return "MISSING"  # unpickled as this module's MISSING: still ``is MISSING``


#: Stands for the result of an item that did not finish, in ``partial_results``.
MISSING = _Missing()


class RemoteError(InterpRpcError):
    """The target raised an exception inside a worker.

    The original exception object cannot cross the interpreter boundary, only
    its description does. When the caller can find the original class under
    the same qualified name (builtins always; other classes when their module
    is importable here), the error raised is an instance of a subclass of both
    RemoteError and that class, so ``except ZeroDivisionError`` catches it,
    and it has the original's ``args`` and the attributes that unpickle here
    (``err.errno``, ``err.pos``). Otherwise ``isinstance(err, YourError)`` is False: branch on
    ``remote_type_name`` (and ``remote_module``) instead.
    """

    #: The original's pickled args and attributes, as a combined error got
    #: them (interp_rpc._pool.remote_classes); None for a plain RemoteError.
    _remote_contents: tuple[bytes | None, dict[str, bytes]] | None = None

    def __init__(
        self,
        *,
        remote_type_name: str,
        remote_module: str,
        remote_message: str,
        remote_traceback: str,
        remote_qualname: str | None = None,
        target: str | None = None,
        worker: int | None = None,
        item_index: int | None = None,
    ) -> None:
        self.remote_type_name = remote_type_name
        self.remote_module = remote_module
        self.remote_message = remote_message
        self.remote_traceback = remote_traceback
        self.remote_qualname = remote_qualname or remote_type_name
        self.target = target
        self.worker = worker
        self.item_index = item_index
        #: For a map: every item's result, in order, MISSING where an item did
        #: not finish (the failed one, and those after it); None for a call.
        self.partial_results: list[object] | None = None
        #: Where the worker keeps this failure's frames (its process,
        #: interpreter and failure number), for debug(); None when unknown.
        self.post_mortem: dict[str, Any] | None = None
        try:
            super().__init__(self._describe())
        except Exception:
            # Combined with a class whose constructor takes other arguments
            # than a message (json.JSONDecodeError, CalledProcessError): its
            # args and attributes come from the worker (remote_classes).
            BaseException.__init__(self, self._describe())

    def __str__(self) -> str:
        # From the fields, not from args: an error relayed from another
        # process is told where it was raised (``worker``, ``item_index``)
        # after it was made.
        return self._describe()

    def __reduce__(self) -> tuple[Any, ...]:
        if isinstance(self, BaseExceptionGroup):  # its exceptions are not in its dict
            exceptions = list(self.exceptions)
            return _restore_remote, ({**self.__dict__, "_remote_exceptions": exceptions},)
        return _restore_remote, (self.__dict__,)

    @property
    def remote_type(self) -> str:
        """The remote exception's fully qualified class name."""
        if self.remote_module == "builtins":
            return self.remote_qualname
        return f"{self.remote_module}.{self.remote_qualname}"

    def _repr_html_(self) -> str:
        """How a notebook displays a caught RemoteError (``err`` in a cell)."""
        from interp_rpc.display.errors import remote_error_html

        return remote_error_html(self)

    def _render_traceback_(self) -> list[str]:
        """How IPython shows it raised: the caller's frames, then the remote traceback."""
        from interp_rpc.display.errors import remote_error_lines

        return remote_error_lines(self)

    def debug(self, local: bool = False) -> None:
        """Open pdb inside the worker that raised this, on its own frames,
        while that worker still keeps them (its last failure): ``p name``
        shows the worker's value; ``up``, ``down``, ``list``, ``where`` and
        ``q`` work, and Ctrl-C ends the session. Commands are read with
        ``input()``. Raises DebugUnavailableError saying why when the frames
        cannot be reached (another process, a closed pool, a later failure).

        ``local=True`` re-runs the failing call here instead, with the
        arguments that failed, and opens pdb where it raises (for a worker
        process's error, or when the worker's frames are gone)."""
        if local:
            from interp_rpc._pool.local_rerun import rerun_locally

            rerun_locally(self)
            return
        from interp_rpc._pool.post_mortem import debug_error

        debug_error(self)

    def origin(self, quote_target: bool = True) -> list[str]:
        """Where it was raised: "worker N", "target ...", "item N", as known."""
        where = []
        if self.worker is not None:
            where.append(f"worker {self.worker}")
        if self.target is not None:
            where.append(f"target {self.target!r}" if quote_target else f"target {self.target}")
        if self.item_index is not None:
            where.append(f"item {self.item_index}")
        return where

    @property
    def refused_module(self) -> str | None:
        """The C extension module whose refusal to load in a subinterpreter
        caused this error, if one did (the fix is a process pool)."""
        return refused_module(f"{self.remote_message}\n{self.remote_traceback}")

    def _describe(self, fix_first: bool = True) -> str:
        where = self.origin()
        origin = f" ({', '.join(where)})" if where else ""
        head = self.remote_type
        if self.remote_message:
            head += f": {self.remote_message}"
        text = f"{head}\n\nRemote traceback{origin}:\n{self.remote_traceback.rstrip()}"
        module = self.refused_module if fix_first else None
        return text if module is None else f"{refusal_fix(module)}\n\n{text}"


#: RemoteError's constructor arguments, all of them attributes too.
_REMOTE_FIELDS = ("remote_type_name", "remote_module", "remote_message", "remote_traceback",
                  "remote_qualname", "target", "worker", "item_index")
#: Every attribute a RemoteError instance has of its own: a remote
#: exception's attribute of the same name never replaces it.
REMOTE_ERROR_ATTRIBUTES = frozenset({*_REMOTE_FIELDS, "partial_results", "post_mortem",
                                     "_remote_contents"})


def _restore_remote(state: dict[str, Any]) -> RemoteError:
    """An unpickled RemoteError, combined with the original class as this
    interpreter resolves it (``except Original`` catches it here too)."""
    from interp_rpc._pool.remote_classes import remote_error

    state = dict(state)
    exceptions = state.pop("_remote_exceptions", None)
    error = remote_error(contents=state.get("_remote_contents"), exceptions=exceptions,
                         **{name: state[name] for name in _REMOTE_FIELDS})
    error.__dict__.update(state)
    return error


class DebugUnavailableError(InterpRpcError):
    """A post-mortem session cannot open on a worker's frames; the message
    says why (the frames are in another process, the pool is closed, the
    worker failed again since or keeps nothing) and what to do instead."""


class ShareabilityError(InterpRpcError, TypeError):
    """A value cannot cross the interpreter boundary; raised before dispatch for
    arguments, and in the caller for return values (the worker survives).

    ``tree`` is the way down to the culprit, for displays: one
    ``(container type, child path segments, index of the culprit's branch)``
    per level, the first level listing the call's arguments.
    """

    def __init__(
        self, argument_path: str, value_type: str, reason: str, *, item_index: int | None = None,
        tree: list[tuple[str, list[str], int]] | None = None,
    ) -> None:
        self.argument_path = argument_path
        self.value_type = value_type
        self.reason = reason
        self.item_index = item_index
        self.tree = tree or []
        prefix = f"item {item_index}: " if item_index is not None else ""
        super().__init__(
            f"{prefix}{argument_path} is not shareable across the interpreter boundary: "
            f"a value of type {value_type!r} was rejected ({reason}).\n{SHAREABLE_VALUES_HELP}"
        )

    def _repr_html_(self) -> str:
        from interp_rpc.display.errors import shareability_html

        return shareability_html(self)

    def _render_traceback_(self) -> list[str]:
        """How IPython shows it raised: the caller's frames, the message, the
        way down to the culprit as a tree (once), then what can cross."""
        from interp_rpc.display.errors import shareability_lines

        return shareability_lines(self)


class TargetResolutionError(InterpRpcError, LookupError):
    """The target cannot be resolved, or cannot be sent by reference."""

    def __init__(self, message: str, *, target: str, failed_part: str | None = None) -> None:
        self.target = target
        self.failed_part = failed_part
        super().__init__(message)


class CallTimeoutError(InterpRpcError, TimeoutError):
    """A call did not finish in time. On a subinterpreter pool only the wait
    stopped: the call goes on running in its worker (a subinterpreter cannot
    be killed), and that worker stays busy until the call returns.

    ``stopped`` is None on pools that cannot stop a call; on a ProcessPool,
    whether the call was stopped (its worker killed and replaced, or the
    call withdrawn from the queue), as ``kill_on_timeout=True`` does.
    """

    def __init__(
        self,
        target: str,
        timeout: float,
        *,
        worker: int | None = None,
        running_seconds: float | None = None,
        completed: int | None = None,
        total: int | None = None,
        stopped: bool | None = None,
    ) -> None:
        self.target = target
        self.timeout = timeout
        self.stopped = stopped
        self.worker = worker
        self.running_seconds = running_seconds
        self.completed = completed
        self.total = total
        message = f"call to {target!r} did not finish within {timeout:g} s"
        if completed is not None and total is not None:
            message = (f"map of {target!r} did not finish within {timeout:g} s "
                       f"({completed} of {total} items done)")
        if worker is not None and running_seconds is not None:
            if stopped:
                message += f"; worker {worker} had run it for {running_seconds:.1f} s"
            else:
                message += (f"; worker {worker} is still running it "
                            f"({running_seconds:.1f} s so far)")
        elif worker is None and completed is None and not stopped:
            message += "; it is still queued"
        if stopped is None:
            message += ". The call was not stopped: subinterpreters cannot be interrupted."
        elif stopped:
            message += (". The call was stopped: its worker process was killed, and a new one "
                        "replaces it." if worker is not None else
                        ". The call was stopped: it was withdrawn before it started.")
        else:
            message += (". The call was not stopped: a ProcessPool made with "
                        "kill_on_timeout=True stops such calls.")
        super().__init__(message)


class WorkerDiedError(InterpRpcError):
    """The worker that ran (or was about to run) the call is gone."""

    def __init__(self, target: str, detail: str) -> None:
        self.target = target
        self.detail = detail
        super().__init__(f"call to {target!r} failed: {detail}")


class PoolBrokenError(InterpRpcError):
    """Every worker of the pool has died; nothing is left to run calls."""


class PoolClosedError(InterpRpcError, RuntimeError):
    """The pool was closed before the call could run (a RuntimeError, as the
    stdlib executors raise after shutdown)."""


class WorkerInitFailure:
    """Why one worker did not start: its init= raised, or did not finish in time.

    ``during`` names the startup step that failed: "init", or (on a dask
    cluster) the replay of a %%parallel cell in a process that joined later.
    """

    def __init__(
        self, worker: int, *, timed_out: bool, error: RemoteError | None, detail: str = "",
        during: str = "init",
    ) -> None:
        self.worker = worker
        self.timed_out = timed_out
        self.error = error
        self.detail = detail
        self.during = during
        #: The C extension module that refused to load in a subinterpreter, if that was the cause.
        self.refused_module = error.refused_module if error is not None else None
        self.refused_extension = self.refused_module is not None

    def __str__(self) -> str:
        if self.timed_out:
            return f"worker {self.worker}: {self.during} did not finish in time"
        if self.error is None:
            return f"worker {self.worker}: {self.detail}"
        # The fix heads the PoolInitError, once for all workers.
        text = f"worker {self.worker}: {self.during} raised {self.error._describe(fix_first=False)}"
        if self.refused_module is not None:
            text += "\n\n" + SUBINTERPRETER_EXTENSION_HELP.format(module=self.refused_module)
        return text

    def __repr__(self) -> str:
        return f"<WorkerInitFailure worker={self.worker} timed_out={self.timed_out}>"


class PoolInitError(InterpRpcError):
    """init= failed or timed out in one or more workers; every worker was torn down.

    ``failures`` has one WorkerInitFailure per failing worker. The message
    groups workers that failed the same way, so a pool of 16 workers that all
    hit the same ImportError shows it once.
    """

    def __init__(self, failures: list[WorkerInitFailure], *, init_timeout: float | None) -> None:
        self.failures = failures
        self.init_timeout = init_timeout
        summary = f"{len(failures)} worker(s) failed to start"
        if any(f.timed_out for f in failures) and init_timeout is not None:
            summary += f" (init_timeout={init_timeout:g} s)"
        refused = sorted({f.refused_module for f in failures if f.refused_module is not None})
        fixes = "".join(f"{refusal_fix(module)}\n\n" for module in refused)
        super().__init__(f"{fixes}{summary}:\n\n" + "\n\n".join(_grouped(failures)))


def _grouped(failures: list[WorkerInitFailure]) -> list[str]:
    groups: dict[tuple[object, ...], list[WorkerInitFailure]] = {}
    for f in failures:
        e = f.error
        key = (f.timed_out, f.detail) + (
            (e.remote_type, e.remote_message, e.remote_traceback) if e is not None else ())
        groups.setdefault(key, []).append(f)
    texts = []
    for members in groups.values():
        text = str(members[0])
        if len(members) > 1:
            names = ", ".join(str(m.worker) for m in members)
            text = text.replace(f"worker {members[0].worker}", f"workers {names}", 1)
        texts.append(text)
    return texts
