"""call() and submit(): arguments, keywords and return values."""

from __future__ import annotations

from concurrent.futures import Future

import pooltasks
import pytest

from interp_rpc import InterpreterPool


def test_call_passes_positional_and_keyword_arguments(module_pool: InterpreterPool) -> None:
    assert module_pool.call("pooltasks.add", 2, 3) == 5
    assert module_pool.call("pooltasks.add", 2, b=40) == 42
    assert module_pool.call("pooltasks.add", a=1, b=2) == 3
    assert module_pool.call("pooltasks.describe_call", 1, 2, 3, 4, keyword="k", other=5) == {
        "first": 1, "second": 2, "rest": (3, 4), "keyword": "k", "extra": {"other": 5}}
    assert module_pool.call("pooltasks.describe_call", "only") == {
        "first": "only", "second": "default", "rest": (), "keyword": None, "extra": {}}


def test_call_and_submit_accept_keywords_named_like_their_own_parameters(
        module_pool: InterpreterPool) -> None:
    # target/fn are positional-only, so they can be keyword names of the call.
    assert module_pool.call("pooltasks.echo", target=1, fn=2) == ((), {"target": 1, "fn": 2})
    assert module_pool.submit("pooltasks.echo", fn=3, target=4).result(timeout=30) == (
        (), {"fn": 3, "target": 4})


def test_values_round_trip(module_pool: InterpreterPool) -> None:
    value = {
        "str": "héllo", "bytes": b"\x00\xff", "bytearray": bytearray(b"ab"), "int": 2**100,
        "float": 1.5, "complex": 1 + 2j, "bool": True, "none": None,
        "list": [1, [2, [3]]], "tuple": (1, (2,)), "set": {1, 2}, "frozenset": frozenset("ab"),
        "nested": {(1, 2): {"k": [None]}}, "point": pooltasks.Point(3, 4),
    }
    assert module_pool.call("pooltasks.identity", value) == value


def test_instances_of_importable_classes_cross_both_ways(module_pool: InterpreterPool) -> None:
    assert module_pool.call("pooltasks.norm2", pooltasks.Point(3, 4)) == 25
    assert module_pool.call("pooltasks.Point", 1, 2) == pooltasks.Point(1, 2)


def test_large_payload_round_trips(module_pool: InterpreterPool) -> None:
    blob = bytes(range(256)) * 40_000  # 10 MB
    assert module_pool.call("pooltasks.identity", blob) == blob


def test_the_caller_sees_a_copy(module_pool: InterpreterPool) -> None:
    item = {"n": 3}
    result = module_pool.call("mymodule.process", item)
    assert result == {"n": 3, "squared": 9}
    assert item == {"n": 3}  # mutated in the worker only


def test_submit_returns_a_concurrent_futures_future(module_pool: InterpreterPool) -> None:
    future = module_pool.submit("pooltasks.add", 20, b=22)
    assert isinstance(future, Future)
    assert future.result(timeout=30) == 42
    assert future.done()
    assert not future.cancelled()


def test_many_submits_each_get_their_own_result(module_pool: InterpreterPool) -> None:
    futures = [module_pool.submit("pooltasks.square", i) for i in range(500)]
    assert [f.result(timeout=30) for f in futures] == [i * i for i in range(500)]


def test_call_timeout_argument_is_checked(module_pool: InterpreterPool) -> None:
    with pytest.raises(ValueError, match="timeout must be a non-negative number"):
        module_pool.call("pooltasks.add", 1, 2, timeout=-1)
    with pytest.raises(TypeError, match="timeout must be a number of seconds"):
        module_pool.call("pooltasks.add", 1, 2, timeout="1")
    assert module_pool.call("pooltasks.add", 1, 2, timeout=30) == 3
