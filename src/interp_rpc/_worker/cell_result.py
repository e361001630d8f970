"""The text of a %%parallel cell's result, made in the worker, bounded.

Every worker sends its own, so a cell ending in ``list(range(10**7))`` must
not make each one build and send tens of megabytes that IPython would never
show. The text is the value's ``repr``, except that a list, tuple, set,
frozenset or dict longer than IPython's limit shows its first items and
``...``, as IPython's display of a cell's result does, without building the
rest; and a text still too long is cut, saying so.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as in main.py: a worker starts without typing
if TYPE_CHECKING:
    from typing import Any


#: Items shown of a long list, tuple, set or dict: IPython's
#: PlainTextFormatter.max_seq_length.
MAX_ITEMS = 1000

#: The longest text a worker sends for one result (a long string's repr, an
#: object's own long repr).
MAX_CHARACTERS = 100_000

# The containers whose repr this module writes itself: exactly these types,
# not subclasses, whose repr may be their own.
_SEQUENCES: dict[type, tuple[str, str]] = {list: ("[", "]"), tuple: ("(", ")")}
_SETS: dict[type, tuple[str, str, str]] = {
    set: ("{", "}", "set()"), frozenset: ("frozenset({", "})", "frozenset()")}
# What repr writes for a container inside itself.
_RECURSION: dict[type, str] = {
    list: "[...]", tuple: "(...)", dict: "{...}", set: "set(...)", frozenset: "frozenset(...)"}


def result_text(value: Any) -> str:
    try:
        text = _text(value, set())
    except RecursionError:  # nested deeper than this module's recursion goes
        text = repr(value)
    if len(text) > MAX_CHARACTERS:
        text = (f"{text[:MAX_CHARACTERS]}\n... cut here: the result's text is "
                f"{len(text):,} characters long")
    return text


def _text(value: Any, enclosing: set[int]) -> str:
    """repr(value), with long containers abbreviated at any depth.
    ``enclosing``: the ids of the containers being written around it, for
    recursive ones, which repr writes as ``[...]`` and ``{...}``."""
    kind = type(value)
    if kind not in _RECURSION:
        return repr(value)
    if id(value) in enclosing:
        return _RECURSION[kind]
    enclosing.add(id(value))
    try:
        if kind is dict:
            items = [f"{_text(key, enclosing)}: {_text(item, enclosing)}"
                     for key, item in _first(value.items())]
            return "{" + _joined(items, len(value)) + "}"
        parts = [_text(item, enclosing) for item in _first(value)]
        if kind in _SEQUENCES:
            opening, closing = _SEQUENCES[kind]
            if kind is tuple and len(value) == 1:
                return f"({parts[0]},)"
            return opening + _joined(parts, len(value)) + closing
        opening, closing, empty = _SETS[kind]
        return opening + _joined(parts, len(value)) + closing if value else empty
    finally:
        enclosing.discard(id(value))


def _first(items: Any) -> list[Any]:
    shown: list[Any] = []
    for item in items:
        if len(shown) == MAX_ITEMS:
            break
        shown.append(item)
    return shown


def _joined(parts: list[str], length: int) -> str:
    return ", ".join([*parts, "..."] if length > MAX_ITEMS else parts)
