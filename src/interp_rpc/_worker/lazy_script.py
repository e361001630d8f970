"""The caller's script, imported in a worker only when something needs it.

Loaded by main.py beside it (never imported as part of the interp_rpc
package) when the pool was made by a script; it uses the standard library
only.
"""

from __future__ import annotations

import sys
from types import ModuleType

TYPE_CHECKING = False  # as in main.py: a worker starts without typing
if TYPE_CHECKING:
    from typing import Any


def refused_extension(exc: BaseException) -> str | None:
    """The C extension module that refused to load in this subinterpreter, if
    that is what ``exc`` (or an exception it was raised from) says. Packages
    such as numpy re-raise the refusal inside a longer message of their own."""
    import re

    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        found = re.search(r"module (\S+) does not support loading in subinterpreters",
                          str(error))
        if found:
            return found.group(1)
        error = error.__cause__ or error.__context__
    return None


class LazyScript:
    """The caller's script (its __main__), imported in this worker the first
    time a target or an argument refers to ``__main__`` or ``__mp_main__``.

    Workers never import it when they start: a script that imports numpy,
    psutil or pyzmq at top level (C extensions that refuse subinterpreters)
    would then break every call, even ``pool.call("math.sqrt", 16.0)``.
    Until then, both modules carry a module ``__getattr__`` that imports
    the script on the first missing name; pickle's lookup of
    ``__main__.Name`` goes through it. A failed import is remembered, and
    every later reference fails the same way without running it again.
    """

    def __init__(self, spec: dict[str, str], failure_type: type[ImportError]) -> None:
        self.spec = spec
        self.failure_type = failure_type  # main.ScriptImportError
        self.failure: tuple[str, str | None] | None = None  # (cause, refused module)
        self.main = sys.modules["__main__"]
        self.mp_main = ModuleType("__mp_main__")
        sys.modules["__mp_main__"] = self.mp_main
        for module in (self.main, self.mp_main):
            module.__dict__["__getattr__"] = self.attribute

    @property
    def script(self) -> str:
        return self.spec.get("path") or f"module {self.spec.get('name')}"

    def attribute(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            # Probes such as hasattr(__main__, "__file__") must not import it.
            raise AttributeError(f"module '__main__' has no attribute {name!r}")
        if self.failure is None:
            self._import()
        if self.failure is not None:
            cause, refused = self.failure
            raise self.failure_type(name, self.script, cause, refused)
        try:
            return self.mp_main.__dict__[name]
        except KeyError:
            raise AttributeError(f"module '__main__' has no attribute {name!r}") from None

    def _import(self) -> None:
        import runpy

        for module in (self.main, self.mp_main):
            module.__dict__.pop("__getattr__", None)
        try:
            if "name" in self.spec:
                namespace = runpy.run_module(self.spec["name"], run_name="__mp_main__",
                                             alter_sys=True)
            else:
                namespace = runpy.run_path(self.spec["path"], run_name="__mp_main__")
        except BaseException as exc:  # whatever the script raises, the calls that need it get
            # A pool that the script creates at top level (no main guard)
            # stops the import there, keeping what the script defined so far
            # (a ProcessPool does: a worker must not start pools of its own).
            stopped_at_pool = getattr(exc, "script_namespace", None)
            if not isinstance(stopped_at_pool, dict):
                self.failure = (f"{type(exc).__name__}: {exc}", refused_extension(exc))
                for module in (self.main, self.mp_main):  # later references fail the same way
                    module.__dict__["__getattr__"] = self.attribute
                return
            namespace = stopped_at_pool
        sys.modules["__mp_main__"] = self.mp_main  # run_module(alter_sys) replaced it
        self.mp_main.__dict__.update(namespace)
        self.main.__dict__.update(
            {k: v for k, v in namespace.items() if not k.startswith("__")})
