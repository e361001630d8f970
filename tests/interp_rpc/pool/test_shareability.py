"""ShareabilityError: the exact path of a value that cannot cross, before dispatch."""

from __future__ import annotations

import pickle
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pooltasks
import pytest
from pooltasks import Box, Reduced, Slotted, WithState

from interp_rpc import InterpreterPool, InterpRpcError, ProcessPool, ShareabilityError
from interp_rpc._worker import wire


def pickle_message(value: object) -> str:
    try:
        pickle.dumps(value, protocol=5)
    except Exception as exc:
        return str(exc)
    raise AssertionError(f"{value!r} pickles")


def rejected(pool: InterpreterPool, target: object, *args: object,
             **kwargs: object) -> ShareabilityError:
    """The error of a call whose arguments cannot cross; checks that nothing
    was dispatched."""
    before = pool.stats().calls
    with pytest.raises(ShareabilityError) as info:
        pool.call(target, *args, **kwargs)  # type: ignore[arg-type]
    assert pool.stats().calls == before, "the call was dispatched"
    return info.value


def test_the_message_of_the_issue_exactly(module_pool: InterpreterPool, tmp_path: Path) -> None:
    path = tmp_path / "somefile"
    path.write_bytes(b"data")
    with open(path, "rb") as handle:
        reason = pickle_message(handle)
        err = rejected(module_pool, "mymodule.process", {"a": 1, "b": {"handle": handle}})
    first_line, rest = str(err).split("\n", 1)
    assert first_line == (
        "argument 'item'['b']['handle'] is not shareable across the interpreter boundary: "
        f"a value of type 'BufferedReader' was rejected ({reason})."
    )
    assert reason == "cannot pickle 'BufferedReader' instances"
    assert rest.startswith("Shareable values: ")
    # ... followed by what crosses and how to define classes.
    assert "str, bytes" in rest and "dict" in rest
    assert "module level" in rest
    assert err.argument_path == "argument 'item'['b']['handle']"
    assert err.value_type == "BufferedReader"
    assert err.reason == reason
    assert isinstance(err, InterpRpcError)


def test_submit_rejects_before_dispatch_too(module_pool: InterpreterPool) -> None:
    before = module_pool.stats().calls
    with pytest.raises(ShareabilityError) as info:
        module_pool.submit("mymodule.process", {"n": threading.Lock()})
    assert info.value.argument_path == "argument 'item'['n']"
    assert module_pool.stats().calls == before


def test_map_names_the_item_and_its_path(module_pool: InterpreterPool) -> None:
    lock = threading.Lock()
    with pytest.raises(ShareabilityError) as info:
        list(module_pool.map("pooltasks.identity", [1, 2, {"x": [0, lock]}, 4], chunksize=1))
    err = info.value
    assert err.argument_path == "argument 'value'['x'][1]"
    assert err.item_index == 2
    assert str(err).startswith("item 2: argument 'value'['x'][1] is not shareable")
    with pytest.raises(ShareabilityError) as info:
        list(module_pool.map("pooltasks.add", [1, 2, 3], [4, lock, 6], chunksize=2))
    assert info.value.argument_path == "argument 'b'"
    assert info.value.item_index == 1


def test_map_with_an_unshareable_item_fails_at_the_call(pool: InterpreterPool,
                                                        tmp_path: Path) -> None:
    # Chunks are sent as they are encoded (workers start on the first while
    # the rest is encoded), so items before the culprit may run; the map
    # itself fails before returning an iterator, and nothing after it runs.
    items: list[object] = [("touch", str(tmp_path / f"item-{i}")) for i in range(4)]
    items.append(("ok", threading.Lock()))
    items.append(("touch", str(tmp_path / "after")))
    with pytest.raises(ShareabilityError) as info:
        pool.map("pooltasks.map_item", items, chunksize=1)
    assert info.value.item_index == 4
    assert not (tmp_path / "after").exists()
    assert list(pool.map("pooltasks.square", [2])) == [4]


@pytest.mark.parametrize(
    ("target", "args", "kwargs", "path"),
    [
        # Parameter names come from the target's signature.
        ("pooltasks.add", (1, "LOCK"), {}, "argument 'b'"),
        ("pooltasks.add", (1,), {"b": "LOCK"}, "argument 'b'"),
        (pooltasks.add, ("LOCK", 2), {}, "argument 'a'"),
        ("pooltasks.describe_call", (1, 2, 3, "LOCK"), {}, "argument 'rest'[1]"),
        ("pooltasks.describe_call", (1,), {"keyword": "LOCK"}, "argument 'keyword'"),
        ("pooltasks.describe_call", (1,), {"other": 1, "extra_one": "LOCK"},
         "argument 'extra'['extra_one']"),
        ("pooltasks.echo", (0, "LOCK"), {}, "argument 'args'[1]"),
        ("pooltasks.echo", (), {"x": "LOCK"}, "argument 'kwargs'['x']"),
        ("mypkg.mymodule.MyClass.method", ("LOCK",), {}, "argument 'x'"),
        ("mypkg.mymodule.MyClass.create", ("LOCK",), {}, "argument 'x'"),
        # Arguments that do not bind to the signature fall back to positions.
        ("pooltasks.add", (1, 2, "LOCK"), {}, "argument #2"),
    ],
)
def test_parameter_names_come_from_the_signature(
        module_pool: InterpreterPool, target: str, args: tuple[object, ...],
        kwargs: dict[str, object], path: str) -> None:
    lock = threading.Lock()
    args = tuple(lock if a == "LOCK" else a for a in args)
    kwargs = {k: lock if v == "LOCK" else v for k, v in kwargs.items()}
    err = rejected(module_pool, target, *args, **kwargs)
    assert err.argument_path == path
    assert err.value_type == "lock"
    assert err.reason == pickle_message(lock)


def test_unknown_signature_uses_positions(module_pool: InterpreterPool) -> None:
    # A module the caller has not imported and cannot import: no signature.
    err = rejected(module_pool, "module_only_workers_have.fn", 1, threading.Lock())
    assert err.argument_path == "argument #1"


LOCK = threading.Lock()


@pytest.mark.parametrize(
    ("value", "suffix"),
    [
        ({"a": 1, "b": [1, 2, (3, LOCK)]}, "['b'][2][1]"),
        ({LOCK: "as a key"}, "<key #0>"),
        ({"k": 1, (1, LOCK): 2}, "<key #1>[1]"),
        ({1: {2: {3: LOCK}}}, "[1][2][3]"),
        ([[], [[LOCK]]], "[1][0][0]"),
        ({LOCK}, "<element #0>"),
        (frozenset({(1, LOCK)}), "<element #0>[1]"),
        (Box(name="x", handle=LOCK), ".handle"),
        (Box(inner=Box(deeper=[LOCK])), ".inner.deeper[0]"),
        (Slotted(first=1, second=LOCK), ".second"),
        (Slotted(first={"k": LOCK}), ".first['k']"),
        (Reduced(1, LOCK), "<constructor argument #1>"),
        (WithState(LOCK), "<state>[1]"),
        ([Box(s=Slotted(second={LOCK}))], "[0].s.second<element #0>"),
    ],
    ids=["nested", "dict-key", "dict-key-inside", "int-keys", "lists", "set", "frozenset",
         "dict-attribute", "nested-attributes", "slots", "slots-nested", "reduce-args",
         "reduce-state", "mixed"],
)
def test_the_walk_reaches_every_kind_of_child(module_pool: InterpreterPool, value: object,
                                              suffix: str) -> None:
    err = rejected(module_pool, "pooltasks.identity", value)
    assert err.argument_path == "argument 'value'" + suffix
    assert err.value_type == "lock"


def test_the_first_culprit_in_pickle_order_is_reported(module_pool: InterpreterPool) -> None:
    err = rejected(module_pool, "pooltasks.identity",
                   {"fine": 1, "first": threading.Lock(), "second": threading.RLock()})
    assert err.argument_path == "argument 'value'['first']"
    err = rejected(module_pool, "pooltasks.add", 1, [threading.Lock()])
    assert err.argument_path == "argument 'b'[0]"


def test_a_container_holding_the_culprit_is_not_the_culprit(module_pool: InterpreterPool) -> None:
    gen = (i for i in range(3))
    err = rejected(module_pool, "pooltasks.identity", {"values": [1, gen]})
    assert err.argument_path == "argument 'value'['values'][1]"
    assert err.value_type == "generator"
    assert err.reason == pickle_message(gen)


def test_cycles_do_not_hang_the_walk(module_pool: InterpreterPool) -> None:
    cyclic: list[object] = [1]
    cyclic.append(cyclic)
    cyclic.append({"lock": threading.Lock()})
    err = rejected(module_pool, "pooltasks.identity", cyclic)
    assert err.argument_path == "argument 'value'[2]['lock']"


@pytest.mark.parametrize(
    ("make", "type_name"),
    [
        (lambda: threading.Lock(), "lock"),
        (lambda: (i for i in ()), "generator"),
        (lambda: lambda: None, "function"),
        (lambda: open(__file__, "rb"), "BufferedReader"),  # noqa: SIM115 - closed below
    ],
    ids=["lock", "generator", "lambda", "file"],
)
def test_common_unshareable_values(module_pool: InterpreterPool, make: object,
                                   type_name: str) -> None:
    value = make()  # type: ignore[operator]
    try:
        err = rejected(module_pool, "pooltasks.identity", {"v": value})
    finally:
        if hasattr(value, "close"):
            value.close()
    assert err.argument_path == "argument 'value'['v']"
    assert err.value_type == type_name
    assert err.reason


def test_happy_path_does_not_walk(module_pool: InterpreterPool,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def walk_forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the shareability walk ran on a payload that pickles")

    monkeypatch.setattr(wire, "find_culprit", walk_forbidden)
    monkeypatch.setattr(wire, "children", walk_forbidden)
    payload = {"a": [1, 2, {"b": (3, frozenset({4}))}], "p": pooltasks.Point(1, 2)}
    assert module_pool.call("pooltasks.identity", payload) == payload
    assert list(module_pool.map("pooltasks.identity", [payload] * 5)) == [payload] * 5


# ----------------------------------------------------------------- return values


def test_unshareable_return_value_names_its_path(module_pool: InterpreterPool) -> None:
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.return_unpicklable")
    err = info.value
    assert err.argument_path == "return value['x']"
    assert err.value_type == "lock"
    assert err.reason == pickle_message(threading.Lock())
    assert str(err).startswith("return value['x'] is not shareable across the interpreter "
                               "boundary: a value of type 'lock' was rejected (")
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.return_nested_unpicklable")
    assert info.value.argument_path == "return value[1]['a'][1][1]"


def test_return_value_of_a_local_class(module_pool: InterpreterPool) -> None:
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.return_local_class_instance")
    assert info.value.argument_path == "return value"
    assert info.value.value_type == "Local"


def test_the_worker_survives_an_unshareable_return_value() -> None:
    with InterpreterPool(workers=1, init="import pooltasks") as pool:
        for _ in range(3):
            with pytest.raises(ShareabilityError):
                pool.call("pooltasks.return_unpicklable")
            assert pool.call("pooltasks.add", 1, 2) == 3
        assert [w.state for w in pool.status()] == ["idle"]
        assert pool.status()[0].calls_done == 6


def test_unshareable_return_value_in_a_map_names_the_item(module_pool: InterpreterPool) -> None:
    items = [("ok", 1), ("ok", 2), ("ok", threading.Lock)]  # the class pickles, fine
    assert list(module_pool.map("pooltasks.map_item", items))[2] is threading.Lock
    with pytest.raises(ShareabilityError) as info:
        list(module_pool.map("pooltasks.return_unpicklable_if", [0, 0, 0, 1, 0], chunksize=2))
    err = info.value
    assert err.item_index == 3
    assert err.argument_path == "return value['x']"


# --------------------------------------------------------- classes the caller lacks


WORKER_ONLY_CLASS = "class OnlyInWorkers:\n    pass\n\nINSTANCE = OnlyInWorkers()\n"


@pytest.mark.parametrize("pool_class", [InterpreterPool, ProcessPool])
def test_a_result_of_a_class_only_the_workers_define_says_where_to_define_it(
        pool_class: type[InterpreterPool] | type[ProcessPool]) -> None:
    # As a %%parallel cell or init= leaves it: the workers' __main__ has the
    # class, the caller's does not.
    with pool_class(workers=1, init=WORKER_ONLY_CLASS) as pool:
        with pytest.raises(ShareabilityError) as info:
            pool.call("pooltasks.main_attr", "INSTANCE")
        err = info.value
        assert err.value_type == "__main__.OnlyInWorkers"
        assert "it holds an instance of __main__.OnlyInWorkers" in err.reason
        assert "run its definition here too, or move it into a module" in err.reason
        assert pool.call("pooltasks.add", 1, 1) == 2  # the worker serves on


def test_a_result_of_a_module_only_the_workers_import_names_the_module(tmp_path: Path) -> None:
    (tmp_path / "workers_only_module.py").write_text("class Thing:\n    pass\n")
    init = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import workers_only_module"
    with InterpreterPool(workers=1, init=init) as pool, pytest.raises(ShareabilityError) as info:
        pool.call("workers_only_module.Thing")
    assert info.value.value_type == "workers_only_module.*"
    assert "it needs module 'workers_only_module', which the workers import" in (
        info.value.reason)


# --------------------------------------------------------- classes the worker lacks


@pytest.fixture
def caller_only_module() -> Iterator[types.ModuleType]:
    """A module that exists only in the caller's sys.modules."""
    module = types.ModuleType("caller_only_module")
    exec("class Ghost:\n    def __init__(self):\n        self.payload = 1\n", module.__dict__)
    sys.modules[module.__name__] = module
    try:
        yield module
    finally:
        del sys.modules[module.__name__]


def test_instances_of_classes_the_worker_cannot_import(
        module_pool: InterpreterPool, caller_only_module: types.ModuleType) -> None:
    ghost = caller_only_module.Ghost()
    pickle.dumps(ghost)  # fine here ...
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.identity", {"items": [1, ghost]})  # ... not there
    err = info.value
    assert err.argument_path == "argument 'value'['items'][1]"
    assert err.value_type == "Ghost"
    assert "caller_only_module" in err.reason
    assert "the worker cannot import" in err.reason
    assert "Ghost" in str(err)
    assert module_pool.call("pooltasks.add", 1, 1) == 2


def test_classes_missing_from_a_module_the_worker_has(module_pool: InterpreterPool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    added = type("AddedAtRuntime", (), {"__module__": "pooltasks"})
    monkeypatch.setattr(pooltasks, "AddedAtRuntime", added, raising=False)
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.identity", ("fine", added()))
    err = info.value
    assert err.argument_path == "argument 'value'[1]"
    assert err.value_type == "AddedAtRuntime"
    assert "pooltasks.AddedAtRuntime" in err.reason


def test_nested_classes_missing_from_a_module_the_worker_has(
        module_pool: InterpreterPool, monkeypatch: pytest.MonkeyPatch) -> None:
    nested = type("Nested", (), {"__module__": "pooltasks", "__qualname__": "Point.Nested"})
    monkeypatch.setattr(pooltasks.Point, "Nested", nested, raising=False)
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.identity", {"k": [nested()]})
    err = info.value
    assert err.argument_path == "argument 'value'['k'][0]"
    assert err.value_type == "Nested"
    assert "pooltasks.Point.Nested" in err.reason


def test_return_value_the_caller_cannot_load(module_pool: InterpreterPool) -> None:
    with pytest.raises(ShareabilityError) as info:
        module_pool.call("pooltasks.return_worker_only_instance")
    err = info.value
    assert err.argument_path.startswith("return value")
    assert "worker_only_module" in err.reason
    assert module_pool.call("pooltasks.add", 1, 1) == 2
