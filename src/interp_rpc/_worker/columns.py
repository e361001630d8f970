"""Lists and tuples of one scalar type, crossing as one column.

Pickle writes a list of 10^6 ints one object at a time, and reads it back
the same way. The engine's packer (core/packed_column.hpp) turns such a list
into one column instead: ints and floats as machine values, str and bytes
joined by a separator that no item contains. A ``Column`` pickles as the
standard library calls that rebuild the list (``memoryview.tolist``,
``str.split``, ``bytes.split``), so any reader rebuilds it with pickle alone:
the caller, a subinterpreter worker, a worker process. Machine values are
native 8-byte ints and doubles, as on every platform interp-rpc runs on.

What packs comes back exactly: the same types (exact int, float, str,
bytes; never a subclass), the same values (every bit of a float), and, as
with pickle, one object where a str or bytes object was met twice (those
lists are left to pickle). The packer is the engine's: the caller takes it
from ``_core``, a subinterpreter worker finds it in its module (main.py), and
a worker process loads ``_core`` for it (process/child.py).

Both sides load this module: the caller as ``interp_rpc._worker.columns``,
a worker by path. It uses nothing but the standard library.
"""

from __future__ import annotations

import pickle

TYPE_CHECKING = False  # as in main.py: a worker starts without typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    #: The engine's packer: (values, max_item) -> (kind, payload, separator) or None.
    Packer = Callable[[list[Any] | tuple[Any, ...], int], tuple[int, Any, Any] | None]

#: Shorter lists and tuples pickle about as fast as they pack.
MIN_ITEMS = 64
#: A str or bytes item this long leaves its list to pickle, which lets the
#: large value cross out of band or be lent (see wire.py).
MAX_ITEM = 64 * 1024

# The kinds of column (core/packed_column.hpp's column_kind).
INT64, FLOAT64, STR, BYTES = 0, 1, 2, 3
_TYPECODES = {INT64: "q", FLOAT64: "d"}

#: What may pack; a call with no argument of these types has nothing to pack.
SEQUENCES = frozenset((list, tuple))
#: Top-level values that hold no other object: beside them, a packed list
#: cannot also be reachable from inside another argument.
_ATOMS = frozenset((type(None), bool, int, float, complex, str, bytes))


class Column:
    """A list or tuple on its way, packed; it arrives as the list or tuple.

    Ints and floats are rebuilt as ``memoryview(payload).cast(typecode)
    .tolist()``: straight from the payload, with no copy of it. ``beside``:
    a large payload goes out of band (a request's buffers), not into the
    pickle; a worker's result leaves it in, where the worker lends it
    instead (main.py)."""

    __slots__ = ("beside", "is_tuple", "kind", "payload", "separator")

    def __init__(self, kind: int, payload: bytes | str, separator: bytes | str | None,
                 is_tuple: bool, beside: int | None = None) -> None:
        self.kind = kind
        self.payload = payload
        self.separator = separator
        self.is_tuple = is_tuple
        self.beside = beside

    def __reduce__(self) -> tuple[Any, ...]:
        if self.is_tuple:
            return tuple, (Column(self.kind, self.payload, self.separator, False, self.beside),)
        if self.kind == STR or self.kind == BYTES:
            return type(self.payload).split, (self.payload, self.separator)
        data: Any = self.payload
        if self.beside is not None and len(data) >= self.beside:
            data = pickle.PickleBuffer(data)
        view = _Rebuilt(memoryview, (data,))
        return memoryview.tolist, (_Rebuilt(memoryview.cast, (view, _TYPECODES[self.kind])),)

    def __repr__(self) -> str:
        return f"Column(kind={self.kind}, {len(self.payload)} payload units)"


class _Rebuilt:
    """Pickles as ``fn(*args)``: one step of a column's rebuilding."""

    __slots__ = ("args", "fn")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args

    def __reduce__(self) -> tuple[Any, ...]:
        return self.fn, self.args


def packed(values: list[Any] | tuple[Any, ...], pack: Packer,
           beside: int | None = None) -> Column | None:
    """``values`` as a Column, or None when they do not pack (see the module).
    ``beside``: the payload size from which it crosses out of band."""
    if len(values) < MIN_ITEMS:
        return None
    found = pack(values, MAX_ITEM)
    if found is None:
        return None
    return Column(*found, type(values) is tuple, beside)


def pack_arguments(args: tuple[Any, ...], kwargs: dict[str, Any], pack: Packer,
                   beside: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A call's arguments with their lists and tuples of scalars packed.

    Pickle keeps one object where an argument is also reachable from inside
    another; a packed list would arrive as a second object. So arguments
    pack only when every top-level value is a scalar or packs, and the same
    list passed twice is packed once (pickle's memo then makes it one
    object again). ``beside``: see packed()."""
    values = (*args, *kwargs.values()) if kwargs else args
    if SEQUENCES.isdisjoint(map(type, values)):  # the common case: costs one pass
        return args, kwargs
    columns: dict[int, Column] = {}
    for value in values:
        kind = type(value)
        if kind in _ATOMS:
            continue
        if kind not in SEQUENCES:
            return args, kwargs
        if id(value) not in columns:
            column = packed(value, pack, beside)
            if column is not None:
                columns[id(value)] = column
            elif len(value) >= MIN_ITEMS or not _ATOMS.issuperset(map(type, value)):
                return args, kwargs  # it might hold one of the others
    if not columns:
        return args, kwargs
    return (tuple(columns.get(id(a), a) for a in args),
            {k: columns.get(id(v), v) for k, v in kwargs.items()})


def pack_items(items: list[Any] | range, pack: Packer,
               beside: int) -> list[Any] | range | Column:
    """A map chunk's items (a list, or a slice of the range mapped over),
    packed when they are a column. ``beside``: see packed()."""
    if type(items) is not list:
        return items
    return packed(items, pack, beside) or items


def pack_result(result: Any, mode: str, pack: Packer, beside: int | None = None) -> Any:
    """A worker's result (a call's return value, or a chunk's
    ``(values, *rest)``) with a list or tuple of scalars packed.
    ``beside``: see packed()."""
    if mode == "call":
        if type(result) in SEQUENCES:
            return packed(result, pack, beside) or result
        return result
    column = packed(result[0], pack, beside)
    return result if column is None else (column, *result[1:])
