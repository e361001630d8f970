"""The Variables panel of a debugger frontend while no cell is stopped: the
user's namespace, as DAP variables, each container expandable by its
variablesReference.

While a cell is stopped at a breakpoint, debugpy answers for the stopped
frames instead (debugger.py forwards those requests).
"""

from __future__ import annotations

import itertools
import re
import reprlib
from collections.abc import Iterable, Mapping
from typing import Any

Variable = dict[str, Any]

#: Names the Variables panel leaves out: IPython's and the kernel's own.
HIDDEN_NAMES = frozenset({
    "__name__", "__doc__", "__package__", "__loader__", "__spec__", "__annotations__",
    "__builtins__", "__builtin__", "__display__", "get_ipython", "debugpy", "exit", "quit",
    "In", "Out", "_oh", "_dh", "_", "__", "___",
})
_OUTPUT_OR_INPUT_HISTORY = re.compile(r"^_(\d|i)")
#: How many children of one container the panel lists.
MAX_CHILDREN = 300

_repr = reprlib.Repr(maxstring=200, maxother=200, maxlist=20, maxdict=20, maxlevel=3)


def is_shown(name: str) -> bool:
    """Whether the Variables panel lists a variable of this name."""
    return name not in HIDDEN_NAMES and not _OUTPUT_OR_INPUT_HISTORY.match(name)


def _value_text(value: object) -> str:
    try:
        return _repr.repr(value)
    except Exception as e:  # a broken __repr__ is the user's; the panel says so
        return f"<repr failed: {type(e).__name__}: {e}>"


class NamespaceVariables:
    """Variables of one namespace, with references to expand containers.

    References live until the next ``reset``: a frontend asks for the
    namespace again after each cell.
    """

    def __init__(self) -> None:
        self._containers: dict[int, object] = {}

    def reset(self) -> None:
        self._containers.clear()

    def top_level(self, namespace: Mapping[str, object]) -> list[Variable]:
        self.reset()
        return [
            self._variable(name, value, name)
            for name, value in list(namespace.items())
            if isinstance(name, str) and is_shown(name)
        ]

    def children(self, reference: int) -> list[Variable]:
        """The children of the container ``reference`` names; a KeyError if
        it names none (a reference from before the last reset)."""
        container = self._containers[reference]
        return [self._variable(name, value, None) for name, value in _items(container)]

    def _variable(self, name: str, value: object, evaluate_name: str | None) -> Variable:
        reference = 0
        if _has_children(value):
            reference = len(self._containers) + 1
            self._containers[reference] = value
        variable: Variable = {
            "name": name,
            "value": _value_text(value),
            "type": type(value).__qualname__,
            "variablesReference": reference,
        }
        if evaluate_name is not None:
            variable["evaluateName"] = evaluate_name
        return variable


def _has_children(value: object) -> bool:
    if isinstance(value, (str, bytes, bytearray, int, float, complex, bool, type(None))):
        return False
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return len(value) > 0
    try:
        return bool(vars(value))
    except TypeError:
        return False


def _items(container: object) -> list[tuple[str, object]]:
    pairs: Iterable[tuple[str, object]]
    if isinstance(container, Mapping):
        pairs = ((_value_text(k), v) for k, v in container.items())
    elif isinstance(container, (list, tuple, set, frozenset)):
        pairs = ((str(i), v) for i, v in enumerate(container))
    else:
        pairs = ((k, v) for k, v in vars(container).items())
    return list(itertools.islice(pairs, MAX_CHILDREN))
