"""Remote exceptions that ``except`` clauses recognize.

A worker's exception crosses as data (its class name, module, message and
traceback text). When the caller can find the same class under the same
qualified name (builtins always, other classes when their module is imported
or importable here), the RemoteError raised for it is also an instance of
that class: ``except ZeroDivisionError`` catches a remote ZeroDivisionError,
and ``except RemoteError`` still does too.

The combined class derives from both RemoteError and the original class, and
is made once per class. Whenever that cannot be done (the class is not an
exception class, its layout, metaclass or ``__new__`` conflicts), a plain
RemoteError is raised instead. The combined error gets the original's
``args`` and attributes, pickled one by one in the worker (so a KeyError's
``args[0]`` is its key, an OSError's ``errno`` its errno, a
``json.JSONDecodeError``'s ``pos`` its position), not from the original's
constructor, which may take other arguments than a message.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import pickle
import sys
import threading
from typing import Any

from interp_rpc.errors import REMOTE_ERROR_ATTRIBUTES, InterpRpcError, RemoteError

# The worker names the caller's script __mp_main__ (it imports it under
# that name); here it is __main__.
_SCRIPT_MODULES = {"__mp_main__": "__main__"}

# Classes that are never combined: interp-rpc's own, and those whose meaning
# is about the caller's control flow rather than the remote error.
_NEVER = (InterpRpcError, KeyboardInterrupt, SystemExit, GeneratorExit, StopIteration,
          StopAsyncIteration)

_lock = threading.Lock()
_combined: dict[type[BaseException], type[RemoteError] | None] = {}


def resolve_class(module: str, qualname: str) -> type[BaseException] | None:
    """The caller's class named ``module.qualname``, if it is an exception class."""
    module = _SCRIPT_MODULES.get(module, module)
    if module == "builtins":
        owner: Any = builtins
    else:
        owner = sys.modules.get(module)
        if owner is None:
            try:
                owner = importlib.import_module(module)
            except Exception:  # unimportable here: no class to combine
                return None
    value: Any = owner
    for part in qualname.split("."):
        value = getattr(value, part, None)
        if value is None:
            return None
    if not isinstance(value, type) or not issubclass(value, BaseException):
        return None
    if issubclass(value, _NEVER):
        return None
    return value


def never_combined(module: str, qualname: str) -> bool:
    """Whether the class is one that is never combined (SystemExit,
    KeyboardInterrupt...), though the caller has it."""
    if module != "builtins":
        return False
    value = getattr(builtins, qualname, None)
    return isinstance(value, type) and issubclass(value, _NEVER)


def combined_class(original: type[BaseException]) -> type[RemoteError] | None:
    """A subclass of RemoteError and ``original``, or None if they do not
    combine; made once per class."""
    with _lock:
        if original not in _combined:
            _combined[original] = _combine(original)
        return _combined[original]


def _combine(original: type[BaseException]) -> type[RemoteError] | None:
    namespace = {
        "__module__": RemoteError.__module__,
        "__qualname__": f"RemoteError[{original.__qualname__}]",
        # The message is RemoteError's whatever the original's __str__ does
        # (KeyError's would quote it).
        "__str__": RemoteError.__str__,
        "__repr__": RemoteError.__repr__,
    }
    try:
        return type(f"RemoteError[{original.__name__}]", (RemoteError, original), namespace)
    except TypeError:  # layout or metaclass conflict
        return None


def remote_error(*, contents: tuple[bytes | None, dict[str, bytes]] | None = None,
                 exceptions: list[RemoteError] | None = None, **fields: Any) -> RemoteError:
    """A RemoteError for the worker's exception, combined with its class when
    the caller can resolve it (see the module docstring); the combined one
    also gets the original's ``contents`` (wire.describe_exception). An
    exception group's ``exceptions`` (RemoteErrors) become the combined
    group's, so that ``except* ValueError`` finds a remote ValueError."""
    original = resolve_class(fields["remote_module"], fields.get("remote_qualname") or
                             fields["remote_type_name"])
    if original is not None:
        combined = combined_class(original)
        if combined is not None:
            try:
                if exceptions and issubclass(combined, BaseExceptionGroup):
                    error = _group(combined, exceptions, contents, fields)
                else:
                    error = combined(**fields)
            except Exception:  # the original's __new__ disagrees
                pass
            else:
                if contents is not None:
                    _take_contents(error, contents)
                return error
    return RemoteError(**fields)


def _group(combined: type[RemoteError], exceptions: list[RemoteError],
           contents: tuple[bytes | None, dict[str, bytes]] | None,
           fields: dict[str, Any]) -> RemoteError:
    """The combined exception group: made as a group is (its message and
    exceptions), then given RemoteError's fields."""
    pickled = contents[1].get("message") if contents is not None else None
    ok, message = _unpickled(pickled)
    if not (ok and isinstance(message, str)):
        message = fields["remote_message"]
    error: RemoteError = combined.__new__(combined, message, exceptions)
    RemoteError.__init__(error, **fields)
    error.args = (message, exceptions)  # as the group's own were
    return error


def _unpickled(pickled: bytes | None) -> tuple[bool, Any]:
    """(True, the value), or (False, None) when it does not unpickle here."""
    if pickled is None:
        return False, None
    try:
        return True, pickle.loads(pickled)
    except Exception:  # a class this interpreter cannot import, or worse
        return False, None


def _take_contents(error: RemoteError, contents: tuple[bytes | None, dict[str, bytes]]) -> None:
    """Give a combined error the original's args and attributes, so that it
    reads as the original would (``err.args[0]`` of a KeyError is the key,
    ``err.errno`` of an OSError its errno). Each value that does not unpickle
    here is left out alone; RemoteError's own attributes and methods are
    never replaced. Kept, for a copy of the error made elsewhere (_restore_remote)."""
    args_pickled, attributes = contents
    error._remote_contents = contents
    ok, args = _unpickled(args_pickled)  # None for a group (see _group)
    if ok and isinstance(args, tuple):
        error.args = args
    for name, pickled in attributes.items():
        # Not vars(error): the original's constructor, when it took the
        # message, may have set names of its own from that text; the
        # worker's values replace those.
        if name in REMOTE_ERROR_ATTRIBUTES or hasattr(RemoteError, name):
            continue
        ok, value = _unpickled(pickled)
        if ok:
            # A field that is read-only, or of another type, here: left out.
            with contextlib.suppress(AttributeError, TypeError):
                setattr(error, name, value)
