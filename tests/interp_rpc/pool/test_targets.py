"""Targets: dotted paths and callables by reference; everything else fails before dispatch."""

from __future__ import annotations

import functools
import gc
import marshal
import operator
import threading
from collections.abc import Callable
from typing import Any

import lazymodule
import mymodule
import pooltasks
import pytest
from mypkg.mymodule import MyClass

from interp_rpc import InterpreterPool, InterpRpcError, TargetResolutionError
from interp_rpc._pool import targets


def test_dotted_path_to_a_module_function(module_pool: InterpreterPool) -> None:
    assert module_pool.call("mypkg.mymodule.function", 1) == ("function", 1)


def test_dotted_path_through_a_class(module_pool: InterpreterPool) -> None:
    assert module_pool.call("mypkg.mymodule.MyClass.method", 21) == ("static", 42)
    assert module_pool.call("mypkg.mymodule.MyClass.create", 2) == ("class", "MyClass", 6)
    assert module_pool.call("mypkg.mymodule.MyClass.Inner.deep", "x") == ("inner", "x")
    assert module_pool.call("mypkg.mymodule.MyClass") is not None


def test_dotted_path_imports_a_module_init_did_not(module_pool: InterpreterPool) -> None:
    # mypkg is not in the pool's init=; the worker imports it on first use.
    assert module_pool.call("os.path.join", "a", "b") == "a/b"
    assert module_pool.call("json.dumps", [1]) == "[1]"


def test_dotted_path_to_a_builtin(module_pool: InterpreterPool) -> None:
    assert module_pool.call("builtins.len", [1, 2, 3]) == 3


@pytest.mark.parametrize(
    ("target", "args", "expected"),
    [
        (mymodule.process, ({"n": 3},), {"n": 3, "squared": 9}),
        (pooltasks.add, (1, 2), 3),
        (pooltasks.Point, (1, 2), pooltasks.Point(1, 2)),  # a class
        (MyClass.method, (5,), ("static", 10)),  # a staticmethod
        (MyClass.create, (5,), ("class", "MyClass", 15)),  # a classmethod, bound to its class
        (MyClass.Inner.deep, (0,), ("inner", 0)),
        (len, ("abcd",), 4),  # a builtin
    ],
)
def test_callables_resolvable_by_reference(module_pool: InterpreterPool,
                                           target: Callable[..., Any], args: tuple[Any, ...],
                                           expected: object) -> None:
    assert module_pool.call(target, *args) == expected
    assert module_pool.submit(target, *args).result(timeout=30) == expected


def make_closure() -> Callable[[int], int]:
    offset = 10

    def add_offset(x: int) -> int:
        return x + offset

    return add_offset


def make_nested() -> Callable[[int], int]:
    def nested(x: int) -> int:  # no free variables, but still not importable
        return x

    return nested


class Service:
    def __init__(self, offset: int = 0) -> None:
        self.offset = offset

    def handle(self, x: int) -> int:
        return x + self.offset

    def bump(self) -> int:
        self.offset += 1
        return self.offset


class Holder:
    def __init__(self) -> None:
        self.lock = threading.Lock()

    def handle(self, x: int) -> int:
        return x


def make_local_class() -> Any:
    class Local:
        def handle(self, x: int) -> int:
            return x

    return Local()


CLOSURE = make_closure()
NESTED = make_nested()
LAMBDA = lambda x: x  # noqa: E731 - a module-level lambda is still a lambda
UNPICKLABLE_BOUND = Holder().handle


@pytest.mark.parametrize(
    ("target", "args", "expected"),
    [
        (NESTED, (7,), 7),  # defined in a function, capturing nothing
        (LAMBDA, (8,), 8),
        (lambda x: x * 3, (3,), 9),
        (lambda a, b=10, *, c=100: a + b + c, (1,), 111),  # defaults cross with it
        (pooltasks.shifted, (1,), 101),  # its globals are its module's, in the worker
        (pooltasks.make_shifter(), (2,), 102),
        (pooltasks.decorated_double, (21,), 42),  # a closure its name finds
        (lazymodule.plus, (1,), 6),  # its module's __getattr__ raises ImportError
        (functools.partial(lambda a, b: a * b, 3), (2,), 6),
        (functools.partial(functools.partial(lambda a, b, c=0: a + b + c, c=100), 10), (1,), 111),
        (functools.partial(pooltasks.make_shifter()), (2,), 102),
    ],
    ids=["nested-function", "module-level-lambda", "inline-lambda", "lambda-with-defaults",
         "lambda-in-a-module", "nested-in-a-module", "decorated", "lazy-module",
         "partial-of-a-lambda", "partial-of-a-partial", "partial-of-a-nested-function"],
)
def test_functions_without_a_path_cross_by_value(
        module_pool: InterpreterPool, target: Callable[..., Any], args: tuple[Any, ...],
        expected: object) -> None:
    # As the original description has it: a function that captures nothing
    # crosses, wherever it was defined; only a closure cannot.
    assert module_pool.call(target, *args) == expected
    assert module_pool.submit(target, *args).result(timeout=30) == expected
    assert list(module_pool.map(target, [args[0]] * 3)) == [expected] * 3


def test_a_closure_in_a_module_whose_getattr_raises_is_refused_clearly(
        module_pool: InterpreterPool) -> None:
    with pytest.raises(TargetResolutionError, match="is a closure"):
        module_pool.call(lazymodule.logged_plus, 1)


def test_a_partial_binding_what_cannot_cross_says_so(module_pool: InterpreterPool) -> None:
    target = functools.partial(lambda lock, x: x, threading.Lock())
    with pytest.raises(TargetResolutionError) as info:
        list(module_pool.map(target, [1]))
    assert "binds arguments that cannot be sent to a worker" in str(info.value)


def test_a_lambda_using_a_global_its_module_lacks_in_the_worker_says_so(
        module_pool: InterpreterPool) -> None:
    global NOT_IN_WORKERS_MODULE  # set here, after the workers imported this module
    uses = lambda x: x + NOT_IN_WORKERS_MODULE  # noqa: E731
    NOT_IN_WORKERS_MODULE = 1
    assert uses(1) == 2
    with pytest.raises(TargetResolutionError) as info:
        module_pool.call(uses, 1)
    assert "uses 'NOT_IN_WORKERS_MODULE', which module" in str(info.value)


@pytest.mark.parametrize(
    ("target", "why"),
    [
        (CLOSURE, "is a closure (it captures offset from an enclosing scope)"),
        (UNPICKLABLE_BOUND, "is a method bound to a Holder instance, and that instance "
                            "cannot be sent to a worker"),
        (make_local_class().handle, "is defined inside a function"),
    ],
    ids=["closure", "bound-to-unpicklable", "bound-to-local-class"],
)
def test_unresolvable_callables_fail_before_dispatch(
        module_pool: InterpreterPool, target: Callable[..., Any], why: str) -> None:
    before = module_pool.stats().calls
    for attempt in (lambda: module_pool.call(target, 1),
                    lambda: module_pool.submit(target, 1),
                    lambda: list(module_pool.map(target, [1, 2]))):
        with pytest.raises(TargetResolutionError) as info:
            attempt()
        message = str(info.value)
        assert why in message
        # ... and what to do instead.
        assert "define it at module level" in message or "module-level function" in message
        assert isinstance(info.value, InterpRpcError)
    assert module_pool.stats().calls == before


def test_closure_message_suggests_passing_captured_values(module_pool: InterpreterPool) -> None:
    with pytest.raises(TargetResolutionError, match="passing the captured values as arguments"):
        module_pool.call(CLOSURE, 1)


def test_empty_map_still_checks_the_target(module_pool: InterpreterPool) -> None:
    with pytest.raises(TargetResolutionError):
        list(module_pool.map(CLOSURE, []))


@pytest.mark.parametrize(
    ("target", "failed_part", "words"),
    [
        ("no_such_module_anywhere.fn", "no_such_module_anywhere",
         "no module named 'no_such_module_anywhere'"),
        ("mymodule.no_such_function", "no_such_function",
         "'mymodule' has no attribute 'no_such_function'"),
        ("mypkg.mymodule.MyClass.nope", "nope",
         "'mypkg.mymodule.MyClass' has no attribute 'nope'"),
        ("mypkg.nomodule.fn", "nomodule", "'mypkg' has no attribute 'nomodule'"),
        ("mymodule.CONSTANT", "CONSTANT", "resolved to a int, which is not callable"),
    ],
)
def test_bad_paths_name_the_part_that_failed(module_pool: InterpreterPool, target: str,
                                             failed_part: str, words: str) -> None:
    with pytest.raises(TargetResolutionError) as info:
        module_pool.call(target)
    err = info.value
    assert err.failed_part == failed_part
    assert err.target == target
    assert words in str(err)
    # The worker that tried survives.
    assert module_pool.call("pooltasks.add", 1, 1) == 2


def test_a_module_that_fails_to_import_is_reported_with_its_error(
        module_pool: InterpreterPool) -> None:
    with pytest.raises(TargetResolutionError) as info:
        module_pool.call("brokenmod.fn")
    assert "No module named 'module_that_does_not_exist_anywhere'" in str(info.value)
    assert "brokenmod" in str(info.value)


@pytest.mark.parametrize("target", ["", "   ", "not a path", "mymodule..process", "1abc.fn",
                                    "mymodule.process()"])
def test_malformed_paths_fail_before_dispatch(module_pool: InterpreterPool, target: str) -> None:
    before = module_pool.stats().calls
    with pytest.raises(TargetResolutionError, match="is not a dotted path"):
        module_pool.call(target)
    assert module_pool.stats().calls == before


@pytest.mark.parametrize("target", [42, None, b"mymodule.process", ["mymodule", "process"]])
def test_targets_that_are_neither_callables_nor_strings(module_pool: InterpreterPool,
                                                        target: object) -> None:
    before = module_pool.stats().calls
    with pytest.raises(TargetResolutionError, match="must be a callable or a dotted path"):
        module_pool.call(target)  # type: ignore[arg-type]
    assert module_pool.stats().calls == before


def test_a_bound_method_crosses_by_value(module_pool: InterpreterPool) -> None:
    # As with ProcessPoolExecutor: the instance is pickled with each call.
    service = Service(offset=10)
    assert module_pool.call(service.handle, 1) == 11
    assert module_pool.submit(service.handle, 2).result(timeout=60) == 12
    assert list(module_pool.map(service.handle, [3, 4])) == [13, 14]
    service.offset = 100  # the worker sees the instance as it is at each call
    assert module_pool.call(service.handle, 1) == 101
    # A worker's changes to its copy do not come back, and are not kept there.
    assert [module_pool.call(service.bump) for _ in range(3)] == [101, 101, 101]
    assert service.offset == 100


class Scale:
    """A callable object of a module-level class."""

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, x: int) -> int:
        return self.factor * x


@pytest.mark.parametrize(("target", "items", "expected"), [
    (str.upper, ["ab", "c"], ["AB", "C"]),
    ("str.upper", ["ab", "c"], ["AB", "C"]),
    (dict.fromkeys, ["ab"], [{"a": None, "b": None}]),
    (operator.itemgetter(1), [(1, 2), (3, 4)], [2, 4]),
    (operator.methodcaller("split", "-"), ["a-b"], [["a", "b"]]),
    (functools.partial(pow, 2), [3, 10], [8, 1024]),
    (functools.partial(pooltasks.add, 100), [1, 2], [101, 102]),
    (Scale(3), [1, 2], [3, 6]),
], ids=["method-of-a-builtin-type", "its-dotted-path", "classmethod-of-a-builtin-type",
        "itemgetter", "methodcaller", "partial-of-a-builtin", "partial-of-a-function",
        "callable-object"])
def test_callables_users_pass_to_map_work_as_with_multiprocessing(
        module_pool: InterpreterPool, target: Any, items: list[Any], expected: list[Any]
) -> None:
    """What multiprocessing.Pool.map takes (anything that pickles): a
    method of a built-in type by reference, callable objects by value."""
    assert list(module_pool.map(target, items)) == expected
    assert module_pool.call(target, items[0]) == expected[0]
    assert module_pool.submit(target, items[-1]).result(timeout=60) == expected[-1]


def test_a_callable_object_that_cannot_be_sent_says_why(module_pool: InterpreterPool) -> None:
    with pytest.raises(TargetResolutionError) as info:
        list(module_pool.map(functools.partial(pooltasks.add, threading.Lock()), [1]))
    assert "has no name a worker could import it by, and it cannot be sent by value" in str(
        info.value)
    assert "define it at module level" in str(info.value)


def test_a_callable_objects_name_is_its_repr(module_pool: InterpreterPool) -> None:
    target = functools.partial(pooltasks.add, threading.Lock())
    with pytest.raises(TargetResolutionError) as info:
        list(module_pool.map(target, [1]))
    assert info.value.target == repr(target)
    assert module_pool.call(str.upper, "x") == "X"
    assert module_pool.call_records()[-1].target == "builtins.str.upper"


def test_code_sent_by_value_is_made_once_per_code_object_and_never_mixed_up() -> None:
    # Code objects of two cells with the same text compare equal, though
    # their filenames (the cells) differ: each must cross as its own.
    first: dict[str, Any] = {"__name__": "cells"}
    second: dict[str, Any] = {"__name__": "cells"}
    exec(compile("f = lambda x: x + 1", "<cell 1>", "exec"), first)
    exec(compile("f = lambda x: x + 1", "<cell 2>", "exec"), second)
    assert first["f"].__code__ == second["f"].__code__
    spec_1, _ = targets.normalize(first["f"])
    spec_2, _ = targets.normalize(second["f"])
    assert marshal.loads(spec_1[1]).co_filename == "<cell 1>"
    assert marshal.loads(spec_2[1]).co_filename == "<cell 2>"
    assert targets.normalize(first["f"])[0][1] is spec_1[1]  # made once
    # Dropped with the code: a loop of fresh lambdas leaves nothing behind.
    before = len(targets._code_parts_cache)
    for i in range(100):
        scope: dict[str, Any] = {"__name__": "cells"}
        exec(compile(f"g = lambda x: x * {i}", f"<loop {i}>", "exec"), scope)
        targets.normalize(scope["g"])
        del scope
    gc.collect()
    assert len(targets._code_parts_cache) <= before + 1
