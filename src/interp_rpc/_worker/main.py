"""The code every worker interpreter runs.

The C++ engine executes this file in a fresh module of each new
subinterpreter, then calls ``setup(config)`` once and ``execute(request,
buffers)`` for every call, from the worker's own thread. Both return
``(kind, reply, *costs)`` tuples of ints and bytes (see ``wire``), and never
raise: whatever goes wrong becomes a reply.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import itertools
import marshal
import os
import sys
import time
from types import CodeType, FunctionType, ModuleType

TYPE_CHECKING = False  # typing takes 4 ms to import: a worker starts without it
if TYPE_CHECKING:  # workers import as little as they can when they start
    from collections.abc import Callable
    from typing import Any

    from interp_rpc._worker.wire import Lent


def _load_sibling(filename: str, name: str) -> ModuleType:
    """A module from beside this file, without importing the interp_rpc package."""
    path = os.path.join(os.path.dirname(__file__), filename)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


wire = _load_sibling("wire.py", "_interp_rpc_wire")

# _worker_profiling, loaded by the first request that is profiled.
_profiling_module: ModuleType | None = None

# The function profiler of a pool.profile(functions=True), while one is on.
_function_profiler: Any = None


def _profiling() -> ModuleType:
    global _profiling_module
    if _profiling_module is None:
        _profiling_module = _load_sibling("profiling.py", "_interp_rpc_worker_profiling")
    return _profiling_module


# _worker_output_relay, loaded by the first request whose output is relayed.
_output_relay_module: ModuleType | None = None

#: How relayed output leaves a worker process (set by process/child.py; see
#: output_relay.Transport); None in a subinterpreter.
output_transport: Any = None
#: Where a worker process puts the large buffers of a result, to send them
#: beside its pickle (set by process/child.py); None in a subinterpreter.
result_out_of_band: Any = None  # a wire.OutOfBand


def _output_relay(queue_id: int) -> Any:
    """An OutputRelay (output_relay.py) into the caller's queue ``queue_id``."""
    global _output_relay_module
    if _output_relay_module is None:
        _output_relay_module = _load_sibling("output_relay.py", "_interp_rpc_worker_output_relay")
    return _output_relay_module.OutputRelay(queue_id, output_transport)

# _worker_cell_result, loaded by the first %%parallel cell that has a result.
_cell_result_module: ModuleType | None = None


def _cell_result_text(value: Any) -> str:
    """What a %%parallel cell's result shows (see cell_result.py)."""
    global _cell_result_module
    if _cell_result_module is None:
        _cell_result_module = _load_sibling("cell_result.py", "_interp_rpc_worker_cell_result")
    text: str = _cell_result_module.result_text(value)
    return text


#: The engine's column packer (core/packed_column.hpp) and the chunk loops'
#: stoppable_items (core/stoppable_items.hpp), which the engine puts in a
#: subinterpreter worker's module before running it. A worker process loads
#: the engine's module with ``load_engine`` (set by process/child.py) when it
#: first needs one of them; they stay None where it cannot.
_pack_column: Any = globals().get("pack_column")
_stoppable_items: Any = globals().get("stoppable_items")
load_engine: Callable[[], ModuleType | None] | None = None
#: The engine's copy of large bytes arguments, shared with the waiting caller
#: (core/argument_copy.hpp): a subinterpreter worker's only. A worker process
#: copies them alone.
wire.use_argument_copier(globals().get("copy_argument"))
_arguments_loaded: Callable[[], None] | None = globals().get("arguments_loaded")
#: A worker process's view of its pool's stop board (process/stop_board.py),
#: set by child.py: there a chunk names its map's stop flag by its index.
stop_board: memoryview | None = None
# columns.py, loaded by the first result that is a list or tuple.
_columns_module: ModuleType | None = None


def _load_engine() -> None:
    """A worker process's engine parts, loaded once (see load_engine)."""
    global _pack_column, _stoppable_items, load_engine
    if load_engine is None:
        return
    engine, load_engine = load_engine(), None
    if engine is not None:
        _pack_column = getattr(engine, "pack_column", None)
        _stoppable_items = getattr(engine, "stoppable_items", None)


def _packed(result: Any, mode: str, beside: int | None = None) -> Any:
    """A result (a call's, or a chunk's ``(values, *rest)``) whose list or
    tuple of scalars crosses as one column (columns.py); ``beside``: the
    payload size from which it crosses out of band."""
    global _columns_module
    if _pack_column is None:
        _load_engine()
        if _pack_column is None:
            return result
    if _columns_module is None:
        _columns_module = _load_sibling("columns.py", "_interp_rpc_columns")
    return _columns_module.pack_result(result, mode, _pack_column, beside)


#: The last call's arguments and result, which execute() keeps here rather
#: than let them go as it returns: freeing a list of 10^6 numbers takes
#: milliseconds that the caller need not wait for. The worker's loop empties
#: it right after the reply is on its way (core/worker_python.cpp,
#: process/child.py), as multiprocessing's worker lets go of a task only
#: after it sent the result. Nothing is kept that the reply lends (see
#: execute()), so that the engine can still find itself a lent value's sole
#: owner (held_result.hpp).
after_reply: list[Any] = []


# post_mortem.py, loaded by the first failure; frames are kept unless
# keep_no_failures() said why not. _running: [target spec, whether its
# arguments view the caller's memory].
_frames_not_kept: str | None = None
_running: list[Any] = [("path", ""), False]


def keep_no_failures(why: str) -> None:
    """This worker keeps no failure for a post-mortem session, and ``why``
    (no session reaches it: a worker process, a dask worker's
    subinterpreter); keeping one would hold the failing call's locals for
    nothing."""
    global _frames_not_kept
    _frames_not_kept = why


def post_mortem(action: str, *args: Any) -> Any:
    """post_mortem.py's ``action`` (what interp_rpc/_pool/post_mortem.py asks)."""
    module = (sys.modules.get("_interp_rpc_worker_post_mortem")
              or _load_sibling("post_mortem.py", "_interp_rpc_worker_post_mortem"))
    return getattr(module, action)(*args)


def _failure(exc: BaseException, skip_frames: int, call: Any = None) -> dict[str, Any]:
    """A failure described, and kept for post-mortem with its ``call``: (args, kwargs)."""
    info: dict[str, Any] = wire.describe_exception(exc, skip_frames=skip_frames)
    if not isinstance(exc, MapStopped):  # a stop is no failure of its own
        info["post_mortem"] = post_mortem("keep", exc, *_running, call, _frames_not_kept)
    return info


# Resolved targets, by the request's target spec.
_targets: dict[tuple[Any, ...], Callable[..., Any]] = {}


class TargetError(Exception):
    def __init__(self, message: str, failed_part: str) -> None:
        super().__init__(message)
        self.failed_part = failed_part


class ScriptImportError(ImportError):
    """The caller's script could not be imported in this worker, so nothing
    defined in it can be found here."""

    def __init__(self, wanted: str, script: str, cause: str, refused: str | None) -> None:
        super().__init__(f"cannot find {wanted!r}: {cause}")
        self.wanted = wanted
        self.script = script
        self.cause = cause
        self.refused = refused

    def advice(self) -> str:
        """What went wrong and what to do, for a message about ``self.wanted``."""
        if self.refused is not None:
            package = self.refused.partition(".")[0]
            why = (f"the script imports {package}, whose C extension module {self.refused} "
                   "does not support loading in subinterpreters")
            keep = f" (one that does not import {package} at top level)"
        else:
            why = f"the import failed with {self.cause}"
            keep = ""
        return (f"{self.wanted!r} is defined in the script {self.script}, which the worker "
                f"imports (as __mp_main__) only to find it, and {why}. Only calls that refer "
                f"to the script fail. Move {self.wanted!r} into a module that the workers can "
                f"import{keep}, and use it from there")


def setup(config_view: memoryview) -> tuple[int, bytes]:
    try:
        config = wire.loads(config_view)
        sys.path[:] = config["sys_path"]
        # The caller's, as multiprocessing's spawn gives its workers: a
        # script imported here may read it at module level (a worker process
        # has its own; a subinterpreter has the caller's already).
        sys.argv[:] = config.get("argv", sys.argv)
        if config.get("main"):
            lazy = _load_sibling("lazy_script.py", "_interp_rpc_worker_lazy_script")
            lazy.LazyScript(config["main"], ScriptImportError)
        init = config.get("init")
        if init:
            main_globals = sys.modules["__main__"].__dict__
            exec(compile(init, "<init>", "exec"), main_globals)
    except BaseException as exc:
        return wire.SETUP_FAILED, wire.dumps(wire.describe_exception(exc, skip_frames=1))
    return wire.RETURNED, b""


def _resolve_path(path: str) -> Callable[..., Any]:
    """'pkg.module.Class.method': import the longest importable module prefix,
    then walk attributes. A bare name is looked up as the notebook's code
    would look it up, in __main__ then builtins (a function named glob is not
    the module glob), and only then imported; so is the first name of a
    dotted path that no module starts."""
    parts = path.split(".")
    if not all(parts):
        raise TargetError(f"target {path!r} is not a dotted path", path)
    main = sys.modules["__main__"].__dict__
    if len(parts) == 1 and (path in main or hasattr(builtins, path)):
        found = main[path] if path in main else getattr(builtins, path)
        if not callable(found):
            raise TargetError(f"target {path!r} resolved to a {type(found).__name__} in "
                              "the worker's __main__, which is not callable", path)
        return found  # type: ignore[no-any-return]
    module: ModuleType | None = None
    split = len(parts)
    while split > 0:
        name = ".".join(parts[:split])
        try:
            module = importlib.import_module(name)
            break
        except ModuleNotFoundError as exc:
            # Only "this name does not exist" means: try a shorter prefix.
            # A module that exists but fails inside its own imports is a real error.
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                raise
            split -= 1
    value: Any = module
    if module is None:
        if len(parts) == 1 or parts[0] == "__main__":
            value = sys.modules["__main__"]
            split = 1 if parts[0] == "__main__" else 0
        elif parts[0] in main or hasattr(builtins, parts[0]):
            # Not a module: a name, looked up as a bare one is ('str.upper',
            # 'MyClass.build' after %%parallel defined MyClass).
            value = main[parts[0]] if parts[0] in main else getattr(builtins, parts[0])
            split = 1
        else:
            raise TargetError(
                f"cannot resolve target {path!r}: no module named {parts[0]!r} "
                "can be imported in the worker",
                parts[0],
            )
    for index in range(split, len(parts)):
        try:
            value = getattr(value, parts[index])
        except AttributeError:
            owner = ".".join(parts[:index]) or "__main__"
            raise TargetError(
                f"cannot resolve target {path!r}: {owner!r} has no attribute {parts[index]!r}",
                parts[index],
            ) from None
    if not callable(value):
        raise TargetError(f"target {path!r} resolved to a {type(value).__name__}, "
                          "which is not callable", parts[-1])
    return value  # type: ignore[no-any-return]


def _global_names(code: CodeType) -> set[str]:
    """Names the code (and code nested in it) looks up as globals."""
    import dis

    names = {i.argval for i in dis.get_instructions(code) if i.opname == "LOAD_GLOBAL"}
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names |= _global_names(const)
    return names


def _rebuild_function(code_bytes: bytes, qualname: str, defaults: bytes,
                      source: str = "", module: str = "__main__") -> Callable[..., Any]:
    """A function sent by value, rebuilt over this worker's ``module`` (its
    __main__, where a caller's script is imported on demand); the source of
    its notebook cell, if sent, goes into linecache for tracebacks."""
    code = marshal.loads(code_bytes)
    if source:
        import linecache

        linecache.cache[code.co_filename] = (len(source), None, source.splitlines(True),
                                             code.co_filename)
    owner = sys.modules["__main__"] if module == "__main__" else importlib.import_module(module)
    namespace = owner.__dict__

    def missing() -> list[str]:
        return sorted(n for n in _global_names(code)
                      if n not in namespace and not hasattr(builtins, n))

    if missing() and module == "__main__":
        # The caller's script (lazy_script.py), imported on its first name.
        hasattr(owner, missing()[0])
    if names := missing():
        listed = ", ".join(repr(n) for n in names)
        raise TargetError(
            f"function {qualname!r} uses {listed}, which the workers do not have; define "
            "it with %%parallel (which runs the cell in every worker), import it in the "
            "pool's init=, or pass it as an argument" if module == "__main__" else
            f"function {qualname!r} uses {listed}, which module {module!r} does not define "
            "in the workers; pass it as an argument", names[0])
    fn = FunctionType(code, namespace, code.co_name)
    fn.__defaults__, fn.__kwdefaults__ = wire.loads(defaults)
    fn.__qualname__ = qualname
    return fn


def resolve(spec: tuple[Any, ...]) -> Callable[..., Any]:
    if spec[0] == "pickled":
        # A bound method: its instance is the caller's state at this call,
        # so it is loaded afresh every time, never cached.
        return wire.loads(spec[1])  # type: ignore[no-any-return]
    if spec[0] == "partial":
        # Its bound arguments, like an instance, are loaded afresh; the
        # function it binds is cached as any other.
        import functools

        args, kwargs = wire.loads(spec[3])
        return functools.partial(resolve(spec[1]), *args, **kwargs)
    fn = _targets.get(spec)
    if fn is None:
        if spec[0] == "path":
            fn = _resolve_path(spec[1])
        elif spec[0] == "code":
            fn = _rebuild_function(*spec[1:])
        else:
            raise TargetError(f"unknown target kind {spec[0]!r}", spec[0])
        _targets[spec] = fn
    return fn


def _run_chunk(
    fn: Callable[..., Any], items: list[Any], star: bool, own_frames: int = 1,
    stop: memoryview | None = None, first_index: int = 0,
) -> tuple[list[Any], int, bytes | None]:
    """Runs fn(item) (fn(*item) when star) for each item until one raises:
    (results so far, index of the failed item or -1, its pickled description).
    The failure's traceback starts in the target, below our ``own_frames``.

    ``stop`` is the map's stop flag (see MapRun), read before every item by
    the items' iterator (stoppable_items), not by a wrapper around fn, whose
    call costs more than an item of a tiny-item map."""
    results: list[Any] = []
    # The flag is read by stoppable_items, in C, before it hands over each
    # item: read here (`if stop[0]:`), it cost a tiny item 60% more.
    taken = items if stop is None else _stoppable_items(items, stop, MapStopped, first_index)
    try:
        # The loop runs in C: list.extend keeps what was appended before an
        # item raised, so len(results) is that item's offset. A loop in
        # Python cost a tiny item 59 ns and a starred one 83; this, 56 ns
        # either way (side by side, on a loaded machine).
        results.extend(itertools.starmap(fn, taken) if star else map(fn, taken))
    except BaseException as exc:
        # Every item before the failing one appended its result.
        call: Any = (tuple(items[len(results)]) if star else (items[len(results)],), {})
        return results, len(results), wire.dumps(_failure(exc, own_frames, call))
    finally:
        # The failure's frames keep it: it lets go of the flag now, so that
        # execute() can release the flag's view.
        taken = None
    return results, -1, None


class MapStopped(Exception):
    """The map this chunk belongs to was stopped (Ctrl-C, an error, or its
    iterator closed): the chunk ends before its next item."""


def _stop_flag(hooks: dict[str, Any] | None) -> memoryview | None:
    """A chunk's stop flag, as its loop reads it: the caller's byte itself
    (a subinterpreter), or its byte of the pool's stop board (a worker
    process, where the chunk carries the byte's index). None when the chunk
    has none, or the worker process cannot read it (its chunks then run to
    their end)."""
    flag = None if hooks is None else hooks.get("stop")
    if flag is None:
        return None
    if _stoppable_items is None:
        _load_engine()
        if _stoppable_items is None:
            return None
    if isinstance(flag, int):
        return None if stop_board is None else stop_board[flag:flag + 1]
    return flag if isinstance(flag, memoryview) else None


def _hooked(fn: Callable[..., Any], hooks: dict[str, Any], relay: Any,
            failures: list[tuple[int, dict[str, str]]],
            stop: memoryview | None) -> Callable[..., Any]:
    """fn, called once per item of a chunk with what the map asked (see
    MapRun): before each item, stop if the map was stopped (``stop``, the
    map's flag, read here), and label the output; with "collect", an item's
    error is kept in ``failures`` (chunk offset, description) and the chunk
    goes on."""
    collect = hooks.get("collect", False)
    next_index = hooks["start"]
    first = next_index

    def each_item(*args: Any) -> Any:
        nonlocal next_index
        index = next_index
        next_index += 1
        if stop is not None and stop[0]:
            raise MapStopped(f"the map was stopped before item {index}")
        if relay is not None:
            relay.at_item(index)
        if not collect:
            return fn(*args)
        try:
            return fn(*args)
        except Exception as exc:
            failures.append((index - first, _failure(exc, 1, (args, {}))))
            return None

    return each_item


#: What execute() answers: (kind, reply, unpickling ns, pickling ns), and,
#: when the reply lends values (see _lending), the list of them.
type Reply = tuple[int, bytes, int, int] | tuple[int, bytes, int, int, list[Lent]]


def execute(request: memoryview, buffers: list[memoryview]) -> Reply:
    started = time.perf_counter_ns()
    try:
        target_spec, mode, args, kwargs = wire.loads(request, buffers)
        if buffers and _arguments_loaded is not None:
            _arguments_loaded()  # a caller standing by to help copy them stops
    except BaseException as exc:
        error = wire.describe_exception(exc)
        if isinstance(exc, ScriptImportError):
            error["wanted"], error["advice"] = exc.wanted, exc.advice()
        return (wire.ARGUMENTS_UNLOADABLE, wire.dumps(error),
                time.perf_counter_ns() - started, 0)
    loaded = time.perf_counter_ns()
    _running[:] = target_spec, bool(buffers)
    try:
        fn = resolve(target_spec)
    except TargetError as exc:
        reply = {"message": str(exc), "failed_part": exc.failed_part}
        return wire.TARGET_UNRESOLVED, wire.dumps(reply), loaded - started, 0
    except ScriptImportError as exc:
        what = target_spec[1] if target_spec[0] == "path" else target_spec[2]
        reply = {"message": f"cannot resolve target {what!r}: {exc.advice()}",
                 "failed_part": exc.wanted}
        return wire.TARGET_UNRESOLVED, wire.dumps(reply), loaded - started, 0
    except BaseException as exc:
        what = target_spec[1] if target_spec[0] == "path" else target_spec[2]
        reply = {"message": f"resolving target {what!r} failed: {type(exc).__name__}: {exc}",
                 "failed_part": what,
                 "error": wire.describe_exception(exc)}
        return wire.TARGET_UNRESOLVED, wire.dumps(reply), loaded - started, 0
    hooks: dict[str, Any] | None = args[1] if mode != "call" and len(args) > 1 else None
    relay = None
    failures: list[tuple[int, dict[str, str]]] = []
    own_frames = 1  # ours above the target in a failure's traceback
    stop = _stop_flag(hooks)
    if hooks is not None:
        if hooks.get("output") is not None:
            relay = _output_relay(hooks["output"])
        if relay is not None or hooks.get("collect", False):
            fn = _hooked(fn, hooks, relay, failures, stop)
            stop = None  # read by the hook
            own_frames = 2
    profiler = _function_profiler if fn is not profile_functions else None
    if profiler is not None:
        profiler.enable()
    try:
        with relay if relay is not None else _NO_RELAY:
            if mode == "call":
                result = fn(*args, **kwargs)
            elif mode == "chunk" or mode == "starchunk":
                result = _run_chunk(fn, args[0], mode == "starchunk", own_frames, stop,
                                    hooks["start"] if hooks is not None else 0)
            else:  # a chunk of a profiled map: its reply carries the items' times
                result = _profiling().run_chunk_timed(fn, args[0], mode.startswith("star"),
                                                      target_spec, MapStopped, stop,
                                                      hooks["start"] if hooks is not None else 0)
    except BaseException as exc:
        if profiler is not None:
            profiler.disable()
        # A target's own error: skip execute()'s frame (a chunk's error is
        # described inside _run_chunk).
        call = (args, kwargs) if mode == "call" else None
        return wire.RAISED, wire.dumps(_failure(exc, 1, call)), loaded - started, 0
    finally:
        # A subinterpreter's stop flag is a view of the caller's memory: let
        # go of it now, whatever still refers to it (a failure's frames), so
        # the call does not count as keeping the caller's buffer.
        if hooks is not None and isinstance(hooks.get("stop"), memoryview):
            hooks["stop"].release()
    if profiler is not None:
        profiler.disable()
    if mode != "call" and len(result) == 4 and result[2] is not None:  # a timed chunk failed
        values, failed, error, marks = result
        call = (tuple(args[0][failed]) if mode.startswith("star") else (args[0][failed],), {})
        result = values, failed, wire.dumps(_failure(error, own_frames, call)), marks
    if failures:  # collected: the chunk ran on past them (see MapRun)
        result = result[0], -1, wire.dumps(failures), *result[3:]
    finished = time.perf_counter_ns()
    unpacked = result
    if result_out_of_band is None:  # a subinterpreter: it packs, and lends what is large
        values = result if mode == "call" else result[0]
        if type(values) is list or type(values) is tuple:  # inline: a tiny call pays no call
            try:
                result = _packed(result, mode)
            except MemoryError as exc:
                return wire.RAISED, wire.dumps(wire.describe_exception(exc)), loaded - started, 0
        if (lending := _lending(result, mode)) is not None:
            # What is lent may be an argument (a target returning its input):
            # only the result that packing replaced stays, which no lent
            # value is part of (a column's payload is a new object).
            if result is not unpacked:
                after_reply.append(unpacked)
            return (wire.RETURNED, lending[0], loaded - started,
                    time.perf_counter_ns() - finished, lending[1])
    after_reply.append((args, kwargs, unpacked))
    if result_out_of_band is not None:  # a worker process: large bytes and columns beside
        threshold = result_out_of_band.threshold
        if mode == "call":
            result = wire.bytes_apart(result, threshold)
        else:
            result = (wire.chunk_bytes_apart(result[0], threshold), *result[1:])
        values = result if mode == "call" else result[0]
        if type(values) is list or type(values) is tuple:
            try:
                result = _packed(result, mode, threshold)
            except MemoryError as exc:
                return wire.RAISED, wire.dumps(wire.describe_exception(exc)), loaded - started, 0
    try:
        reply = wire.dumps_result(result, result_out_of_band)
    except MemoryError as exc:  # the process is out of memory: no fault of the value
        return wire.RAISED, wire.dumps(wire.describe_exception(exc)), loaded - started, 0
    except Exception:
        culprit = _unshareable_result(result, mode)
        return wire.RESULT_UNSHAREABLE, wire.dumps(culprit), loaded - started, 0
    return wire.RETURNED, reply, loaded - started, time.perf_counter_ns() - finished


def _lending(result: Any, mode: str) -> tuple[bytes, list[Lent]] | None:
    """A subinterpreter's reply that lends its large bytes, bytearray and str (the
    result itself, or a map's results) rather than pickling them, if any."""
    values = result if mode == "call" else result[0]
    if _columns_module is not None and type(values) is _columns_module.Column:
        if not wire.any_lent((values.payload,)):  # its payload is what may be lent
            return None
    elif not (wire.any_lent((values,)) if mode == "call" else wire.any_lent(values)):
        return None
    try:
        pickled: tuple[bytes, list[Lent]] = wire.dumps_lending(result)
    except Exception:
        return None  # pickled as usual, which says what cannot cross
    return pickled


class _NoRelay:
    """The output of a call that is not relayed: where it always goes."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        return None


_NO_RELAY = _NoRelay()


def profile_functions(on: bool) -> dict[str, Any] | None:
    """pool.profile(functions=True), once in every worker: start this
    worker's function profiler, or stop it and return what it measured (the
    stats cross once per worker, not per call)."""
    global _function_profiler
    if on:
        _function_profiler = _profiling().FunctionProfiler((__file__, wire.__file__))
        return None
    profiler, _function_profiler = _function_profiler, None
    return None if profiler is None else profiler.results()


def run_cell(source: str, filename: str = "<parallel cell>",
             output: int | None = None) -> dict[str, Any]:
    """%%parallel: run a notebook cell in this worker's __main__.

    Returns what it printed and, if it raised, the error as data, so that the
    output printed before an error is not lost; with ``output`` (a queue id,
    see interp_rpc/notebook/relay.py), the output is also sent as it is printed. The cell's source
    goes into linecache, so tracebacks show its lines; targets resolved from
    names the cell (re)binds are forgotten, so a redefinition takes effect
    at once. As in IPython, a last statement that is an expression is the
    cell's result (its repr, bounded, unless it is None or the cell ends with
    ";").
    """
    import ast
    import contextlib
    import io
    import linecache

    out: Any = io.StringIO()
    err: Any = io.StringIO()
    kept = out, err
    relay = None
    if output is not None:
        relay = _output_relay(output)
        out, err = relay.tees(kept)
    main = sys.modules["__main__"].__dict__
    before = dict(main)
    error = None
    result = None
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        tree = ast.parse(source, filename)
        last = None
        final = tree.body[-1] if tree.body else None
        if isinstance(final, ast.Expr) and not _ends_quiet(source):
            tree.body.pop()
            last = ast.Expression(final.value)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(compile(tree, filename, "exec"), main)
            if last is not None:
                value = eval(compile(last, filename, "eval"), main)
                if value is not None:
                    result = _cell_result_text(value)
    except BaseException as exc:
        error = _failure(exc, skip_frames=1)
    finally:
        if relay is not None:
            relay.flush()
        unbound = object()
        rebound = {name for name, value in main.items() if before.get(name, unbound) is not value}
        _forget_targets(rebound | (before.keys() - main.keys()))
    return {"stdout": kept[0].getvalue(), "stderr": kept[1].getvalue(), "error": error,
            "result": result,
            "defined": sorted(name for name in main.keys() - before.keys()
                              if not name.startswith("_"))}


def _ends_quiet(source: str) -> bool:
    """Whether the cell's last token is ";", which hides its result in
    IPython too (a ";" inside a comment or a string does not count)."""
    import io
    import tokenize

    insignificant = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER,
                     tokenize.INDENT, tokenize.DEDENT}
    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in insignificant:
                last = token
    except (tokenize.TokenError, SyntaxError):
        return False
    return last is not None and last.string == ";"


def _forget_targets(names: set[str]) -> None:
    """Drop resolved targets that start at one of these __main__ names."""
    for spec in list(_targets):
        if spec[0] == "path" and spec[1].removeprefix("__main__.").split(".")[0] in names:
            del _targets[spec]


def _unshareable_result(result: Any, mode: str) -> dict[str, Any]:
    """Where in a return value (or a chunk's return values) pickling fails."""
    if mode != "call":
        values = result[0]
        for offset, value in enumerate(values):
            culprit = wire.find_culprit(value, "return value", wire.result_failure)
            if culprit is not None:
                found: dict[str, Any] = culprit.as_dict()
                found["item_offset"] = str(offset)
                return found
    culprit = wire.find_culprit(result, "return value", wire.result_failure)
    if culprit is None:  # pickling failed for a reason the walk cannot reproduce
        return {"path": "return value", "value_type": type(result).__name__,
                "reason": "pickling failed"}
    found = culprit.as_dict()
    return found
