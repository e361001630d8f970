"""What crosses the interpreter boundary, and how a value that cannot is found.

Both sides run this module: the caller imports it as ``interp_rpc._worker.wire``, and
every worker loads the same file by path (workers never import the
``interp_rpc`` package, whose C++ module lives in the main interpreter only).
It must therefore use nothing but the standard library.

Requests and replies are pickle protocol 5 bytes. Reply kinds tell the caller
how to read a reply; 0 is success, and the engine adds its own errors
(``_core.REPLY_ENGINE_ERROR``; the engine's codes are defined in core/codes.hpp).
"""

from __future__ import annotations

import io
import pickle

# Every worker runs this module when it starts, so only pickle is imported
# up front; the modules used on failure paths (traceback, re, pickletools)
# are imported where they are needed. That keeps tens of milliseconds off
# the time a pool takes to be ready.
TYPE_CHECKING = False  # as in main.py: a worker starts without typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, SupportsIndex

    Check = Callable[[object], str | None]

PROTOCOL = 5

# Reply kinds (the first element of every reply).
RETURNED = 0  # reply: the pickled return value (the engine's REPLY_OK)
RAISED = 1  # reply: pickled describe_exception() of what the target raised
RESULT_UNSHAREABLE = 2  # reply: pickled Culprit fields of the return value
TARGET_UNRESOLVED = 3  # reply: pickled {"message", "failed_part"}
ARGUMENTS_UNLOADABLE = 4  # reply: pickled describe_exception() of the unpickling error
SETUP_FAILED = 5  # reply: pickled describe_exception() of what init= raised

#: Top-level bytes and bytearray arguments at least this large cross out of
#: band: the worker copies them once, straight from the caller's memory, into
#: an object of the same type (pickling them in band would copy them twice).
#: Smaller ones are cheaper in band. Only memoryviews and borrow()ed buffers
#: cross without a copy: a target gets the type it was given, at every size.
OUT_OF_BAND_THRESHOLD = 64 * 1024


class Borrowed:
    """A writable buffer lent to the worker without a copy (see ``borrow``)."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        raise TypeError("interp_rpc.borrow() lends a top-level argument (or map item) only; "
                        "inside another value it cannot cross")

    def __repr__(self) -> str:
        return f"borrow({self.buffer!r})"


def borrow(buffer: Any) -> Borrowed:
    """Lend a writable buffer (a bytearray, a writable memoryview, an array)
    to the worker without copying it.

    By default a writable buffer is snapshotted when the call is made, so the
    worker sees the bytes that were passed whatever the caller does next.
    ``pool.call(target, borrow(buf))`` skips that copy: the worker reads
    ``buf``'s memory while the call runs, and the caller must not change it
    until the call has finished. Only top-level arguments and map items can
    be borrowed, and only C-contiguous buffers.
    """
    with memoryview(buffer) as view:
        if not view.c_contiguous:
            raise ValueError("borrow() needs a C-contiguous buffer; this one is strided "
                             "(pass it without borrow() to send a copy)")
    return Borrowed(buffer)


class UnshareableBuffer(Exception):
    """A top-level buffer argument that cannot cross; the message says why."""


# The types whose top-level values encode_request treats specially.
_BUFFER_TYPES = frozenset({bytes, bytearray, memoryview, Borrowed})


def dumps(value: object) -> bytes:
    return pickle.dumps(value, protocol=PROTOCOL)


class OutOfBand:
    """The buffer_callback of a pickle whose large buffers (``threshold``
    bytes or more) go beside it rather than in it: a worker process sends
    them as memory files (process/framing.py). Smaller ones stay in band."""

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.buffers: list[pickle.PickleBuffer] = []

    def __call__(self, buffer: pickle.PickleBuffer) -> bool:
        try:
            size = buffer.raw().nbytes
        except BufferError:  # not contiguous: pickled in band
            return True
        if size < self.threshold:
            return True
        self.buffers.append(buffer)
        return False


class WithBuffers(bytes):
    """A pickle that came with its out-of-band buffers (a worker process's
    result): loads() reads them with it."""

    buffers: list[Any]


#: A bytes, bytearray or str result (or map result) this large is lent to
#: the caller by a subinterpreter rather than pickled: the engine copies it
#: once, from the worker's memory into the caller's object
#: (core/held_result.hpp).
LEND_THRESHOLD = 64 * 1024
_LENT_TYPES = frozenset((bytes, bytearray, str))

#: What a reply lends.
type Lent = bytes | bytearray | str


def _lent(value: object) -> bool:
    return type(value) in _LENT_TYPES and len(value) >= LEND_THRESHOLD  # type: ignore[arg-type]


def _lends(value: object) -> bool:
    """Whether pickling ``value`` lends something: itself, or a large
    memoryview's copy (see _view_result)."""
    if type(value) is memoryview:
        return value.nbytes >= LEND_THRESHOLD
    return _lent(value)


#: The types of the values that may lend something.
_LENDING_TYPES = _LENT_TYPES | {memoryview}


def any_lent(values: list[Any] | tuple[Any, ...]) -> bool:
    """Whether a value would lend something (one C-level pass when none is of
    such a type)."""
    return not _LENDING_TYPES.isdisjoint(map(type, values)) and any(map(_lends, values))


class _Lending(pickle.Pickler):
    """Pickles a result whose large bytes, bytearray and str are named by their place in
    ``lent`` (a persistent id), not copied in. A value met twice is lent once,
    and arrives as one object, as pickle's memo (which comes after) would do."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=PROTOCOL)
        self.lent: list[Lent] = []
        self._ids: dict[int, int] = {}  # id(value) -> its place in lent

    def persistent_id(self, obj: Any) -> int | None:
        if not _lent(obj):
            return None
        place = self._ids.setdefault(id(obj), len(self.lent))
        if place == len(self.lent):
            self.lent.append(obj)
        return place

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is memoryview:
            return _view_result(obj, out_of_band=False)  # its large copy is lent
        return NotImplemented


def dumps_lending(value: object) -> tuple[bytes, list[Lent]]:
    """A result as a pickle, and the values it lends (see LEND_THRESHOLD)."""
    pickler = _Lending(file := io.BytesIO())
    pickler.dump(value)
    return file.getvalue(), pickler.lent


class WithHeld(bytes):
    """A reply, with the lent values the engine copied out as ``held``."""

    held: list[Lent]


class _Unlending(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        return self.held[pid]  # type: ignore[attr-defined]


class _WithViews(pickle.Pickler):
    """Pickles memoryviews, which pickle refuses, as _view_result says."""

    def __init__(self, file: io.BytesIO, out_of_band: OutOfBand | None) -> None:
        super().__init__(file, protocol=PROTOCOL, buffer_callback=out_of_band)
        self._out_of_band = out_of_band is not None

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is memoryview:
            return _view_result(obj, out_of_band=self._out_of_band)
        return NotImplemented


def _view_result(view: memoryview, *, out_of_band: bool) -> tuple[Any, ...]:
    """How a memoryview that a target returned crosses (a reduce value): a
    copy of its bytes, since its memory is the worker's, that the caller
    casts back into a read-only view of the same format and shape, as a
    memoryview argument arrives in the worker. The copy goes out of band
    when ``out_of_band``, or is lent when large (see _Lending). A format
    that memoryview.cast cannot rebuild crosses as the bytes alone."""
    data = view.tobytes()  # C order, whatever the view's strides
    if _castable(view) is not None:
        return bytes, (data,)
    buffer = pickle.PickleBuffer(data) if out_of_band else data
    return memoryview.toreadonly, (_View(buffer, view.format, view.shape or ()),)


class _ViewResultAfar:
    """A memoryview result on its way through another transport (a dask
    task's outcome, which dask pickles with its own means): it crosses as
    _view_result says, so the far side gets a read-only view of the same
    format and shape, as a caller of the pool gets one."""

    __slots__ = ("view",)

    def __init__(self, view: memoryview) -> None:
        self.view = view

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # Out of band where the transport's pickle protocol has buffers.
        return _view_result(self.view, out_of_band=int(protocol) >= 5)


def views_for_transport(value: Any) -> Any:
    """``value`` with a memoryview itself (not one nested deeper) made to
    cross another transport as it crosses the pool (see _ViewResultAfar)."""
    return _ViewResultAfar(value) if type(value) is memoryview else value


def dumps_result(value: object, out_of_band: OutOfBand | None = None) -> bytes:
    """A worker's return value as bytes (its large buffers into
    ``out_of_band``, when given). A memoryview in it (often a view of a
    zero-copy argument, returned as is) crosses as _view_result says; the
    slower pickler that does this only runs when plain pickling failed."""
    if out_of_band is not None:
        out_of_band.buffers.clear()
    try:
        return pickle.dumps(value, protocol=PROTOCOL, buffer_callback=out_of_band)
    except Exception:
        if out_of_band is not None:
            out_of_band.buffers.clear()  # the failed attempt's
        buffer = io.BytesIO()
        _WithViews(buffer, out_of_band).dump(value)
        return buffer.getvalue()


def result_failure(value: object) -> str | None:
    """Like pickle_failure, for return values (where memoryviews are fine)."""
    try:
        dumps_result(value)
    except Exception as exc:
        return str(exc) or type(exc).__name__
    return None


class _View:
    """A memoryview on its way: its bytes (out of band, or a result's copy),
    and how the receiver casts them back to the same format and shape."""

    __slots__ = ("buffer", "format", "shape")

    def __init__(self, buffer: pickle.PickleBuffer | bytes, format: str,
                 shape: tuple[int, ...]) -> None:
        self.buffer = buffer
        self.format = format
        self.shape = shape

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        # Builtins as the rebuilding callables: the worker needs no import.
        return memoryview.cast, (_AsView(self.buffer), *_cast_arguments(self.format, self.shape))


def _cast_arguments(format: str, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """What memoryview.cast takes to give a view of ``format`` and ``shape``.
    It refuses a shape with a zero in it: an empty view of one dimension is
    cast without one (_castable refuses empty views of more)."""
    return (format,) if shape == (0,) else (format, shape)


class _AsView:
    """An out-of-band buffer, loaded as a memoryview whatever object the
    loader was given for it (the engine gives memoryviews; other transports
    may give bytes)."""

    __slots__ = ("buffer",)

    def __init__(self, buffer: pickle.PickleBuffer | bytes) -> None:
        self.buffer = buffer

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return memoryview, (self.buffer,)


def _castable(view: memoryview) -> str | None:
    """Why ``view`` cannot be rebuilt in the worker by memoryview.cast, or None."""
    if view.ndim > 1 and 0 in (view.shape or ()):
        return (f"a memoryview of shape {view.shape} cannot be rebuilt in the worker "
                "(memoryview.cast refuses a dimension of length 0 in a shape of more than "
                "one); pass an empty view of one dimension, or bytes(view)")
    if view.format == "B" and view.ndim == 1:
        return None
    try:
        # The format is only known at run time; typeshed lists the literals.
        memoryview(b"\0" * view.itemsize).cast(view.format)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return (f"a memoryview of format {view.format!r} cannot be rebuilt in the worker "
                "(memoryview.cast accepts native single-character formats only); pass "
                "view.cast('B') for its raw bytes, or bytes(view)")
    return None


def _view(view: memoryview, *, copy: bool) -> _View:
    problem = _castable(view)
    if problem is not None:
        raise UnshareableBuffer(problem)
    if copy or not view.c_contiguous:
        # tobytes() is the C-order copy of any view, strided or not.
        data: Any = view.tobytes()
    else:
        data = view
    return _View(pickle.PickleBuffer(data), view.format, view.shape or ())


def _crossing(value: Any) -> Any:
    """A top-level argument as it crosses: bytes and bytearrays arrive as
    themselves; memoryviews keep their format and shape; writable buffers are
    snapshotted unless borrowed."""
    kind = type(value)
    if kind is bytes:
        if len(value) < OUT_OF_BAND_THRESHOLD:
            return value
        # Immutable, so the worker can copy it from the caller's memory.
        return _Copied(bytes, pickle.PickleBuffer(value))
    if kind is bytearray:
        if len(value) < OUT_OF_BAND_THRESHOLD:
            return value  # pickled in band: a copy, arriving as a bytearray
        # The caller may change it once the call is made: a snapshot now, that
        # the worker copies into its own bytearray.
        return _Copied(bytearray, pickle.PickleBuffer(bytes(value)))
    if kind is memoryview:
        return _view(value, copy=not value.readonly)
    if kind is Borrowed:
        with memoryview(value.buffer) as borrowed:
            if not borrowed.c_contiguous:
                raise UnshareableBuffer("a borrowed buffer must be C-contiguous")
            if (problem := _castable(borrowed)) is not None:
                raise UnshareableBuffer(problem)
            return _View(pickle.PickleBuffer(value.buffer), borrowed.format,
                         borrowed.shape or ())
    return value


class _Copied:
    """A large bytes or bytearray argument crossing out of band, rebuilt in
    the worker by copying the buffer into the argument's own type."""

    __slots__ = ("buffer", "kind")

    def __init__(self, kind: type[bytes] | type[bytearray], buffer: pickle.PickleBuffer) -> None:
        self.kind = kind
        self.buffer = buffer

    def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
        return rebuild_copied, (self.kind, self.buffer)


#: How a worker rebuilds a large bytes or bytearray argument: the engine's
#: copy_argument (core/argument_copy.hpp) in a subinterpreter worker, whose
#: copy the waiting caller helps with (use_argument_copier); elsewhere (a
#: process pool's worker, a dask worker) None: bytes() or bytearray() copy
#: alone.
argument_copier: Callable[[type, Any], Any] | None = None


def use_argument_copier(copier: Callable[[type, Any], Any] | None) -> None:
    global argument_copier
    argument_copier = copier


#: How a _Copied argument's pickle names rebuild_copied: by the caller's name
#: for this module, which a worker that loaded the file by path maps to its
#: own copy (_LoadingHere), without importing the interp_rpc package.
_REBUILD_COPIED = ("interp_rpc._worker.wire", "rebuild_copied")


def rebuild_copied(kind: type[bytes] | type[bytearray], buffer: Any) -> bytes | bytearray:
    """A _Copied argument, rebuilt: a new ``kind`` holding the buffer's bytes."""
    copier = argument_copier
    if copier is None:
        return kind(buffer)
    return copier(kind, buffer)  # type: ignore[no-any-return]


class _LoadingHere(pickle.Unpickler):
    """Unpickles a request in a worker that loaded this module by path."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == _REBUILD_COPIED:
            return rebuild_copied
        return super().find_class(module, name)


_BYTES_TYPES = frozenset((bytes, bytearray))


def bytes_apart(value: Any, threshold: int) -> Any:
    """A result, with a large bytes or bytearray (``threshold`` bytes or
    more) made to cross out of band, as a large argument does: pickled in
    band, 64 MiB of bytes costs pickle alone half a second here."""
    kind = type(value)
    if (kind is bytes or kind is bytearray) and len(value) >= threshold:
        return _Copied(kind, pickle.PickleBuffer(value))
    return value


def chunk_bytes_apart(values: list[Any], threshold: int) -> list[Any]:
    """bytes_apart for each result of a map chunk; one C-level pass over
    the types when none is bytes, the common case."""
    if _BYTES_TYPES.isdisjoint(map(type, values)):
        return values
    return [bytes_apart(v, threshold) for v in values]


def _crossing_all(values: tuple[Any, ...] | list[Any]) -> Any:
    # Costs one C-level pass over the types when no value is a buffer, the
    # common case (cheaper than pickling the values).
    if _BUFFER_TYPES.isdisjoint(map(type, values)):
        return values
    return type(values)(_crossing(v) for v in values)


def encode_request(
    spec: tuple[str | bytes, ...], mode: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """The request bytes, and the buffers that cross out of band (not copied).

    For a map chunk (mode "chunk"/"starchunk"), args is (items, hooks), or
    (items,) when the chunk asks nothing of its items besides running them
    (hooks, see MapRun), and the items are the top-level values. Raises
    UnshareableBuffer for a buffer argument that cannot cross, or pickle's
    own error.
    """
    if mode == "call":
        args = _crossing_all(args)
        if kwargs and not _BUFFER_TYPES.isdisjoint(map(type, kwargs.values())):
            kwargs = {k: _crossing(v) for k, v in kwargs.items()}
    else:  # a chunk's items: a list, or a columns.Column (which holds no buffer)
        args = (_crossing_all(args[0]) if type(args[0]) is list else args[0], *args[1:])
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps((spec, mode, args, kwargs), protocol=PROTOCOL,
                        buffer_callback=buffers.append)
    return data, buffers


def is_buffer_argument(value: object) -> bool:
    """Whether a top-level argument crosses as a buffer (see _crossing)."""
    return type(value) in _BUFFER_TYPES


def buffer_problem(value: object) -> str | None:
    """Why a top-level argument that is a buffer cannot cross, or None."""
    try:
        _crossing(value)
    except UnshareableBuffer as exc:
        return str(exc)
    return None


def _format_exception(exc: BaseException) -> list[str]:
    import traceback

    return traceback.format_exception(exc)


#: An exception's attributes that are its machinery, not its content.
_EXCEPTION_MACHINERY = frozenset({"args", "__traceback__", "__cause__", "__context__",
                                  "__suppress_context__", "__notes__", "__dict__",
                                  "__weakref__"})
#: Fields of built-in exception classes that are not copied: AttributeError's
#: ``obj`` is the object that lacked the attribute, any object however large
#: (pickling the exception leaves it out too); an exception group's
#: ``exceptions`` cross described one by one (describe_exception).
_FIELDS_NOT_COPIED = frozenset({(AttributeError, "obj"), (BaseExceptionGroup, "exceptions")})


def _pickled_or_none(value: object) -> bytes | None:
    try:
        return pickle.dumps(value, protocol=5)
    except Exception:  # any value may refuse, in any way
        return None


def _exception_contents(exc: BaseException) -> tuple[bytes | None, dict[str, bytes]]:
    """The exception's ``args`` and attributes, each pickled on its own (None
    or left out where it does not pickle): the caller gives them to its
    instance of the same class, so that ``err.args[0]`` of a KeyError is the
    key and ``err.errno``, ``err.pos`` or ``err.returncode`` are the
    original's. Apart, so that one value the caller cannot unpickle (its class
    is not importable there) loses only itself. Attributes are those of the
    instance's dict and the fields of built-in exception classes (OSError's
    errno and filename, UnicodeError's start and end, ...)."""
    names = [name for name in getattr(exc, "__dict__", {}) if name not in _EXCEPTION_MACHINERY]
    for cls in type(exc).__mro__:
        if cls.__module__ == "builtins":
            names += [name for name, slot in vars(cls).items()
                      if name not in _EXCEPTION_MACHINERY and name not in names
                      and (cls, name) not in _FIELDS_NOT_COPIED
                      and type(slot).__name__ in ("member_descriptor", "getset_descriptor")]
    attributes = {}
    for name in names:
        try:
            value = getattr(exc, name)
        except Exception:  # a field that was never set (OSError.characters_written)
            continue
        pickled = _pickled_or_none(value)
        if pickled is not None:
            attributes[name] = pickled
    # A group's args hold its exceptions, which cross described instead.
    args = None if isinstance(exc, BaseExceptionGroup) else _pickled_or_none(exc.args)
    return args, attributes


def describe_exception(exc: BaseException, skip_frames: int = 0) -> dict[str, Any]:
    """An exception as plain strings (type, module, message and full
    traceback), with its pickled contents (see _exception_contents).

    The traceback text includes chained causes and ``__notes__``, exactly as
    the interpreter would print it. ``skip_frames`` drops that many outermost
    frames (interp-rpc's own, which only show how the call was made). An
    exception group's exceptions are described too, each on its own, so that
    the caller's ``except*`` finds them.
    """
    tb = exc.__traceback__
    for _ in range(skip_frames):
        if tb is None or tb.tb_next is None:
            break
        tb = tb.tb_next
    exc = exc.with_traceback(tb)
    cls = type(exc)
    described: dict[str, Any] = {
        "type_name": cls.__name__,
        "qualname": cls.__qualname__,
        "module": cls.__module__,
        "message": str(exc),
        "traceback": "".join(_format_exception(exc)),
        "contents": _exception_contents(exc),
    }
    if isinstance(exc, BaseExceptionGroup):
        described["exceptions"] = [describe_exception(e) for e in exc.exceptions]
    return described


# --------------------------------------------------------------------------
# Finding the value that cannot cross.
#
# Only called after pickling the whole payload failed, so the happy path never
# pays for it. The walk visits children in the order pickle does and
# descends into the first child that fails on its own, so the value reported
# is the innermost real culprit, not a container that merely holds it.


# How many siblings a level of the culprit's tree lists (for display).
_TREE_WIDTH = 12


class Culprit:
    """Where the walk found a value that cannot cross, and why.

    ``levels`` describes the way down for displays: for each container on the
    path, its type name, the path segments of (up to 12 of) its children, and
    the position of the one that leads to the culprit.
    """

    def __init__(self, path: str, value_type: str, reason: str,
                 levels: list[tuple[str, list[str], int]] | None = None) -> None:
        self.path = path
        self.value_type = value_type
        self.reason = reason
        self.levels = levels or []

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "value_type": self.value_type, "reason": self.reason,
                "levels": self.levels}




def pickle_failure(value: object) -> str | None:
    """Pickle's own message if ``value`` cannot be pickled, else None."""
    try:
        pickle.dumps(value, protocol=PROTOCOL)
    except Exception as exc:
        return str(exc) or type(exc).__name__
    return None


def children(value: object) -> Iterator[tuple[str, object]]:
    """The parts of ``value`` that pickle would save, in its order, with the
    path segment that names each."""
    if isinstance(value, dict):
        for index, (key, item) in enumerate(value.items()):
            yield f"<key #{index}>", key
            yield f"[{key!r}]", item
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield f"[{index}]", item
        return
    if isinstance(value, set | frozenset):
        for index, item in enumerate(value):
            yield f"<element #{index}>", item
        return
    if isinstance(value, str | bytes | bytearray | int | float | complex | bool | type(None)):
        return
    yield from _reduced_children(value)


def _reduced_children(value: object) -> Iterator[tuple[str, object]]:
    try:
        reduced = value.__reduce_ex__(PROTOCOL)
    except Exception:
        return
    if not isinstance(reduced, tuple):
        return
    parts = list(reduced) + [None] * (6 - len(reduced))
    _, args, state, list_items, dict_items = parts[:5]
    if isinstance(args, tuple):
        # copyreg.__newobj__ takes the class first: not part of the value.
        first = 1 if args and isinstance(args[0], type) else 0
        for index, arg in enumerate(args[first:], start=first):
            yield f"<constructor argument #{index}>", arg
    if isinstance(state, tuple) and len(state) == 2:
        # (instance __dict__, __slots__ values)
        for part in state:
            if isinstance(part, dict):
                for name, item in part.items():
                    yield f".{name}", item
    elif isinstance(state, dict):
        for name, item in state.items():
            yield f".{name}", item
    elif state is not None:
        yield "<state>", state
    if list_items is not None:
        for index, item in enumerate(list_items):
            yield f"[{index}]", item
    if dict_items is not None:
        for key, item in dict_items:
            yield f"[{key!r}]", item


def find_culprit(value: object, path: str, check: Check = pickle_failure) -> Culprit | None:
    """The innermost part of ``value`` that fails ``check``, or None."""
    reason = check(value)
    if reason is None:
        return None
    levels: list[tuple[str, list[str], int]] = []
    return _descend(value, path, reason, check, set(), levels)


def _descend(value: object, path: str, reason: str, check: Check, seen: set[int],
             levels: list[tuple[str, list[str], int]]) -> Culprit:
    seen.add(id(value))  # cycles: a value already on the way down is not a culprit again
    segments: list[str] = []
    for segment, child in children(value):
        segments.append(segment)
        if id(child) in seen:
            continue
        child_reason = check(child)
        if child_reason is not None:
            # Dict keys are listed only when a key is the culprit.
            shown = [s for s in segments[:-1] if not s.startswith("<key #")] + [segment]
            shown = shown[-_TREE_WIDTH:]
            levels.append((type(value).__name__, shown, len(shown) - 1))
            return _descend(child, path + segment, child_reason, check, seen, levels)
    return Culprit(path, type(value).__name__, reason, levels)


# --------------------------------------------------------------------------
# Classes the worker cannot import.
#
# Pickle saves classes and functions by reference (module + qualified name).
# A reference to something the worker cannot import pickles fine here and
# fails when the worker loads it; the worker's error names what it could not
# find, and these helpers find where in the arguments it was used.

# How unpickling words "this name is not there", as (pattern, group of the
# module, group of the qualified name). Python 3.14 says "module 'm' has no
# attribute 'Name'" and "Can't resolve path 'A.B' on module 'm'"; earlier
# versions said "Can't get attribute 'Name' on <module 'm' ...>".
_MISSING_ATTRIBUTE = (
    (r"^module '([^']+)' has no attribute '([^']+)'", 1, 2),
    (r"Can't resolve path '([^']+)' on module '([^']+)'", 2, 1),
    (r"Can't get attribute '([^']+)' on <module '([^']+)'", 2, 1),
)
_MISSING_MODULE = r"No module named '([^']+)'"


def unresolvable_reference(message: str) -> tuple[str, str | None] | None:
    """(module, qualified name or None) that a worker's unpickling error names."""
    import re

    for pattern, module_group, name_group in _MISSING_ATTRIBUTE:
        match = re.search(pattern, message)
        if match:
            return match.group(module_group), match.group(name_group)
    missing = re.search(_MISSING_MODULE, message)
    if missing:
        return missing.group(1), None
    return None


def references(value: object) -> set[tuple[str, str]]:
    """Every (module, qualified name) global the pickle of ``value`` refers to."""
    try:
        data = pickle.dumps(value, protocol=PROTOCOL)
    except Exception:
        return set()
    found: set[tuple[str, str]] = set()
    strings: list[str] = []
    import pickletools

    for opcode, arg, _ in pickletools.genops(data):
        if isinstance(arg, str):
            strings.append(arg)
        if opcode.name == "GLOBAL" and isinstance(arg, str):
            module, _, name = arg.partition(" ")
            found.add((module, name))
        elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            found.add((strings[-2], strings[-1]))
    return found


def refers_to(module: str, qualname: str | None) -> Check:
    """A check that fails values whose pickle refers to module[.qualname]."""

    def check(value: object) -> str | None:
        for ref_module, ref_name in references(value):
            if ref_module == module and (qualname is None or ref_name == qualname):
                return ref_name
        return None

    return check


def loads(data: bytes | memoryview, buffers: list[Any] | None = None) -> Any:
    if type(data) is WithHeld:
        unlending = _Unlending(io.BytesIO(data))
        unlending.held = data.held  # type: ignore[attr-defined]
        return unlending.load()
    if buffers is None and type(data) is WithBuffers:
        buffers = data.buffers
    if buffers and __name__ != _REBUILD_COPIED[0]:
        # Only a request with out-of-band buffers can hold a _Copied argument.
        return _LoadingHere(io.BytesIO(data), buffers=buffers).load()
    return pickle.loads(data, buffers=buffers)
