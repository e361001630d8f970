"""Turning what the caller names as a target into something a worker can resolve.

A target crosses by reference where it has one: a dotted path that the
worker imports. A function with no such path crosses as its code, rebuilt
over its module's namespace in the worker: one defined interactively (a
notebook cell), a lambda, a function defined inside another. A closure
cannot (its captured state would not cross), unless its name finds it (a
module-level function under a decorator). A
bound method, or a callable object with no name to import it by
(``functools.partial``, ``operator.itemgetter(1)``, an instance with
``__call__``), as its pickle, as multiprocessing sends them. Callables are
checked here, before anything is dispatched, for the things that can never
be resolved in another interpreter.
"""

from __future__ import annotations

import functools
import importlib
import linecache
import marshal
import os
import pickle
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

from interp_rpc.errors import TargetResolutionError

# What a request carries: ("path", "pkg.module.Class.method"); for a
# function sent by value, ("code", marshalled code, name, pickled defaults,
# source of its cell, its module): see _by_value(); for a bound method,
# ("pickled", its pickle, display name): see _bound_method() and _by_pickle();
# for functools.partial of a function sent by value, ("partial", its spec,
# display name, pickled arguments): see _partial_by_value().
TargetSpec = tuple[Any, ...]

_DEFINE_IN_WORKERS = (
    "define it with %%parallel (which runs the cell in every worker) or in a module that "
    "the pool's init= imports"
)

_DEFINE_AT_MODULE_LEVEL = (
    "define it at module level in a module that the pool's init= imports, "
    "and pass it (or its dotted path as a string) instead"
)


class Normalized:
    """A target another process normalized already (a ClusterPool's caller):
    this process's pool sends it on as it was sent, never resolving it here,
    where the caller's __main__ does not exist."""

    def __init__(self, spec: TargetSpec, name: str) -> None:
        self.spec = spec
        self.name = name

    def __repr__(self) -> str:
        return f"<target {self.name}>"


def describe(target: object) -> str:
    """A short name for a target, for messages and the status board."""
    if isinstance(target, str):
        return target
    if isinstance(target, Normalized):
        return target.name
    qualname = getattr(target, "__qualname__", None)
    if not isinstance(qualname, str):
        return repr(target)  # operator.itemgetter(1), functools.partial(...)
    return f"{_module_of(target) or '?'}.{qualname}"


def _module_of(target: object) -> str | None:
    """The module a callable is found in: its own, or for a method of a
    built-in type, which has none, its type's (str.upper's, dict.fromkeys')."""
    module = getattr(target, "__module__", None)
    if module is None:
        owner = getattr(target, "__objclass__", None) or getattr(target, "__self__", None)
        if isinstance(owner, type):
            module = owner.__module__
    return module if isinstance(module, str) else None


def unwrap_partial(
    target: functools.partial[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[object, tuple[Any, ...], dict[str, Any]]:
    """functools.partial(f, *a, **k)(*args, **kwargs) as f with merged arguments
    (asyncio's run_in_executor passes keyword arguments this way)."""
    fn: object = target
    while isinstance(fn, functools.partial):
        args = (*fn.args, *args)
        kwargs = {**fn.keywords, **kwargs}
        fn = fn.func
    return fn, args, kwargs


def main_module_spec() -> dict[str, str] | None:
    """How workers can import the caller's __main__, as multiprocessing's spawn
    would; None when there is nothing to import (REPL, notebook, -c)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = getattr(spec, "name", None)
    if name:
        if name == "__main__" or name.endswith(".__main__"):
            return None
        return {"name": name}
    path = getattr(main, "__file__", None)
    if isinstance(path, str) and path.endswith(".py") and os.path.exists(path):
        return {"path": os.path.abspath(path)}
    return None


@functools.lru_cache(maxsize=1024)
def _normalize_path(target: str) -> tuple[TargetSpec, str]:
    path = target.strip()
    if not path or not all(part.isidentifier() for part in path.split(".")):
        raise TargetResolutionError(
            f"target {target!r} is not a dotted path such as 'mymodule.process'",
            target=target,
            failed_part=target,
        )
    return ("path", path), path


#: What a callable's __self__ may be while a worker can still import it by
#: name: a class (classmethods) or a module (builtins such as math.sqrt).
_OWNERS_OF_PLAIN_FUNCTIONS = (type, types.ModuleType)


def normalize(target: object) -> tuple[TargetSpec, str]:
    """(spec for the worker, display name), or TargetResolutionError."""
    if isinstance(target, str):
        return _normalize_path(target)
    if isinstance(target, Normalized):
        return target.spec, target.name
    if type(target) is functools.partial:
        spec = _partial_by_value(target)
        if spec is not None:
            return spec, describe(target)
    if type(target) is not types.FunctionType:  # plain functions have no owner to check
        if not callable(target):
            raise TargetResolutionError(
                f"target must be a callable or a dotted path string, not {type(target).__name__}",
                target=repr(target),
            )
        owner = getattr(target, "__self__", None)
        if owner is not None and not isinstance(owner, _OWNERS_OF_PLAIN_FUNCTIONS):
            spec = _bound_method(target)
            if spec is not None:
                return spec, describe(target)
        elif not isinstance(getattr(target, "__qualname__", None), str):
            return _by_pickle(target), describe(target)
    name = describe(target)
    module = getattr(target, "__module__", None)
    if module == "__main__" and main_module_spec() is None:
        return _by_value(target), name
    if (type(target) is types.FunctionType and target.__closure__ is None
            and "<" in target.__qualname__ and isinstance(module, str)):
        # A lambda, a function defined in a function: no name finds it. (The
        # check costs a tiny call nothing, where a lookup of the name would.)
        return _by_value(target, module), name
    return ("path", _reference_of(target, name)), name


def _found_by_name(fn: types.FunctionType, module: str) -> bool:
    """Whether ``module.qualname`` finds ``fn`` itself, so that a worker
    importing that path gets the same function."""
    value: Any = sys.modules.get(module)
    try:
        for part in fn.__qualname__.split("."):
            value = getattr(value, part, None)
    except Exception:  # a module's own __getattr__ (a lazy loader) may raise anything
        return False
    return value is fn


def _bound_method(method: Callable[..., Any]) -> TargetSpec | None:
    """A method bound to an instance crosses by value, as with
    ProcessPoolExecutor: pickle sends the instance and the method's name.
    None for a method that _reference_of must refuse (defined in a function,
    a lambda), so that its message is the same as for plain functions."""
    qualname = getattr(method, "__qualname__", None)
    if not isinstance(qualname, str) or "<locals>" in qualname or "<lambda>" in qualname:
        return None
    try:
        data = pickle.dumps(method, protocol=5)
    except Exception as exc:
        owner = type(getattr(method, "__self__", None)).__name__
        name = describe(method)
        raise TargetResolutionError(
            f"target {name!r} is a method bound to a {owner} instance, and that instance "
            f"cannot be sent to a worker ({exc}); make it picklable, or call a module-level "
            "function that takes the data it needs as arguments",
            target=name, failed_part=qualname) from None
    return ("pickled", data, describe(method))


def _partial_by_value(target: functools.partial[Any]) -> TargetSpec | None:
    """``functools.partial(f, ...)`` of a function ``f`` that crosses by value
    (a lambda, a function defined in another): ``f``'s spec and the partial's
    own arguments, pickled, for the worker to bind again. None when ``f``
    crosses otherwise: the partial then pickles whole."""
    fn, args, kwargs = unwrap_partial(target, (), {})
    inner, _ = normalize(fn)
    if inner[0] != "code":
        return None
    name = describe(target)
    try:
        bound = pickle.dumps((args, kwargs), protocol=5)
    except Exception as exc:
        raise TargetResolutionError(
            f"target {name} binds arguments that cannot be sent to a worker ({exc}); pass "
            "them with each call instead", target=name) from None
    return ("partial", inner, name, bound)


def _by_pickle(target: Callable[..., Any]) -> TargetSpec:
    """A callable object with no name to import it by crosses by value, as
    multiprocessing sends it: the worker loads it for each call."""
    name = describe(target)
    try:
        data = pickle.dumps(target, protocol=5)
    except Exception as exc:
        raise TargetResolutionError(
            f"target {name} has no name a worker could import it by, and it cannot be sent "
            f"by value either ({exc}); {_DEFINE_AT_MODULE_LEVEL}", target=name) from None
    return ("pickled", data, name)


def _by_value(fn: Callable[..., Any], module: str = "__main__") -> TargetSpec:
    """A function with no path a worker could import it by (defined in a
    notebook cell or the REPL, whose __main__ workers cannot import; a
    lambda; a function defined in another): its code crosses instead, and
    the worker rebuilds it over its own ``module`` namespace. Only a
    stateless function can: no closure, and its globals must resolve there."""
    name = describe(fn)
    code = getattr(fn, "__code__", None)
    if not isinstance(code, types.CodeType):
        raise TargetResolutionError(
            f"target {name!r} is defined in __main__ but is not a plain function, so it cannot "
            f"be sent to a worker; {_DEFINE_IN_WORKERS}", target=name)
    if getattr(fn, "__closure__", None) is not None:
        raise TargetResolutionError(
            f"target {name!r} is a closure (it captures {', '.join(code.co_freevars)}), and "
            f"captured state cannot cross to another interpreter; {_DEFINE_IN_WORKERS}",
            target=name, failed_part=name)
    try:
        defaults = pickle.dumps((fn.__defaults__, fn.__kwdefaults__), protocol=5)
    except Exception as exc:
        raise TargetResolutionError(
            f"target {name!r} has default argument values that cannot cross ({exc}); "
            f"{_DEFINE_IN_WORKERS}", target=name) from None
    marshalled, source = _code_parts(code)
    return ("code", marshalled, fn.__qualname__, defaults, source, module)


#: _code_parts() by code object, each entry dropped with its code. Keyed by
#: identity: code objects compare equal across cells (the filename, which
#: names the cell, is not compared).
_code_parts_cache: dict[int, tuple[weakref.ref[types.CodeType], bytes, str]] = {}


def _code_parts(code: types.CodeType) -> tuple[bytes, str]:
    """A function's code as it crosses, marshalled, and its cell's source:
    made once per code object, since a loop of tiny calls to one lambda
    would otherwise pay for both at every call (defaults, which may change,
    are pickled each time)."""
    key = id(code)
    cached = _code_parts_cache.get(key)
    if cached is not None and cached[0]() is code:
        return cached[1], cached[2]
    parts = marshal.dumps(code), _cell_source(code)
    _code_parts_cache[key] = (weakref.ref(code, lambda _: _code_parts_cache.pop(key, None)),
                              *parts)
    return parts


def _cell_source(code: types.CodeType) -> str:
    """The source of the cell that defined the code, when it exists only in
    this process's linecache (IPython puts cells there): the worker puts it in
    its own, so its tracebacks show the lines. A file it reads itself."""
    filename = code.co_filename
    if os.path.exists(filename):
        return ""
    return "".join(linecache.getlines(filename))


def _reference_of(fn: Callable[..., Any], name: str) -> str:
    """The dotted path a worker imports ``fn`` by (``name`` is describe(fn)),
    or why it has none."""
    closure = getattr(fn, "__closure__", None)
    module = _module_of(fn)
    if closure is not None and not (type(fn) is types.FunctionType and module is not None
                                    and _found_by_name(fn, module)):
        # (A closure its name finds, such as a decorated module-level
        # function, is what a worker importing that name gets too.)
        free = ", ".join(getattr(getattr(fn, "__code__", None), "co_freevars", ())) or "?"
        raise TargetResolutionError(
            f"target {name!r} is a closure (it captures {free} from an enclosing scope), "
            f"and captured state cannot cross to another interpreter; {_DEFINE_AT_MODULE_LEVEL}, "
            "passing the captured values as arguments",
            target=name,
            failed_part=name,
        )
    qualname = getattr(fn, "__qualname__", None)
    if not isinstance(qualname, str) or module is None:
        raise TargetResolutionError(
            f"target {fn!r} has no module and qualified name, so a worker cannot import it; "
            f"{_DEFINE_AT_MODULE_LEVEL}",
            target=name,
        )
    if "<lambda>" in qualname:
        raise TargetResolutionError(
            f"target {name!r} is a lambda, which has no name a worker could import; "
            f"{_DEFINE_AT_MODULE_LEVEL}",
            target=name,
            failed_part="<lambda>",
        )
    if "<locals>" in qualname:
        raise TargetResolutionError(
            f"target {name!r} is defined inside a function ({qualname}), so a worker cannot "
            f"import it; {_DEFINE_AT_MODULE_LEVEL}",
            target=name,
            failed_part="<locals>",
        )
    owner = getattr(fn, "__self__", None)
    if owner is not None and not isinstance(owner, _OWNERS_OF_PLAIN_FUNCTIONS):
        raise TargetResolutionError(
            f"target {name!r} is a method bound to a {type(owner).__name__} instance, and "
            "instances are not targets; call a module-level function that takes the data "
            "it needs as arguments",
            target=name,
            failed_part=qualname,
        )
    return f"{module}.{qualname}"


def local_callable(target: object) -> Callable[..., Any] | None:
    """The target as a callable in this interpreter, if it can be found here.

    Used only to name parameters in error messages, on the failure path: a
    string target's module may be imported here to read its signature.
    """
    if not isinstance(target, str):
        return target if callable(target) else None
    parts = target.split(".")
    for split in range(len(parts), 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:split]))
        except Exception:
            continue
        try:
            for part in parts[split:]:
                value = getattr(value, part)
        except AttributeError:
            return None
        return value if callable(value) else None
    return None


def argument_labels(
    target: object, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, Any]]:
    """Each argument with the label errors use for it: the parameter's name
    when the target's signature is known, its position otherwise."""
    import inspect  # only on the failure path: inspect is slow to import

    fn = local_callable(target)
    if fn is not None:
        try:
            bound = inspect.signature(fn).bind_partial(*args, **kwargs)
        except (TypeError, ValueError):
            bound = None
        if bound is not None:
            labels: list[tuple[str, Any]] = []
            params = bound.signature.parameters
            for name, value in bound.arguments.items():
                kind = params[name].kind
                if kind is inspect.Parameter.VAR_POSITIONAL:
                    labels += [(f"argument {name!r}[{i}]", v) for i, v in enumerate(value)]
                elif kind is inspect.Parameter.VAR_KEYWORD:
                    labels += [(f"argument {name!r}[{k!r}]", v) for k, v in value.items()]
                else:
                    labels.append((f"argument {name!r}", value))
            return labels
    return [(f"argument #{i}", v) for i, v in enumerate(args)] + [
        (f"argument {k!r}", v) for k, v in kwargs.items()
    ]
