"""`except` works across the boundary: a remote exception whose class the
caller can resolve is raised as a subclass of RemoteError and of that class."""

from __future__ import annotations

import asyncio
import builtins
import errno
import json
import pickle
import subprocess
from collections.abc import Iterator
from concurrent.futures import Future

import errortasks
import pytest

from interp_rpc import InterpreterPool, InterpRpcError, ProcessPool, RemoteError
from interp_rpc._pool.contract import Pool

#: A field whose value is any non-empty text (the platform's wording).
ANY_TEXT = object()


def test_except_catches_a_remote_builtin_exception(module_pool: InterpreterPool) -> None:
    with pytest.raises(ZeroDivisionError) as info:
        module_pool.call("operator.truediv", 1, 0)
    err = info.value
    assert isinstance(err, RemoteError) and isinstance(err, InterpRpcError)
    assert (err.remote_type_name, err.remote_module) == ("ZeroDivisionError", "builtins")
    assert err.remote_message == "division by zero"
    assert "Traceback (most recent call last)" in err.remote_traceback


@pytest.mark.parametrize("name", ["ValueError", "KeyError", "OSError", "LookupError",
                                  "NotImplementedError", "UnicodeError", "AttributeError"])
def test_builtin_classes_combine_and_keep_the_message(module_pool: InterpreterPool,
                                                      name: str) -> None:
    with pytest.raises(RemoteError) as info:
        module_pool.call("errortasks.raise_builtin", name, "the message")
    err = info.value
    assert isinstance(err, getattr(builtins, name))
    assert err.remote_type_name == name
    # The text is RemoteError's, whatever the class's own __str__ does
    # (KeyError's would quote it a second time).
    assert "the message" in err.remote_message
    assert str(err).startswith(f"{name}: {err.remote_message}\n")


def test_a_class_importable_in_the_caller_combines(module_pool: InterpreterPool) -> None:
    with pytest.raises(errortasks.PlainError) as info:
        module_pool.call("errortasks.raise_plain", "plain failure")
    assert isinstance(info.value, RemoteError)
    assert info.value.remote_type == "errortasks.PlainError"


def test_futures_and_asyncio_raise_the_combined_class(module_pool: InterpreterPool) -> None:
    future: Future[object] = module_pool.submit("operator.truediv", 1, 0)
    assert isinstance(future.exception(timeout=60), ZeroDivisionError)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(module_pool, errortasks.raise_plain, "in asyncio")

    with pytest.raises(errortasks.PlainError, match="in asyncio"):
        asyncio.run(main())


def test_a_class_whose_constructor_takes_other_arguments_combines_with_its_fields(
        module_pool: InterpreterPool) -> None:
    # FieldError(field, message) cannot be rebuilt from a message alone: its
    # args and attributes come from the worker instead of its constructor.
    with pytest.raises(errortasks.FieldError) as info:
        module_pool.call("errortasks.raise_field", "email", "bad email")
    err = info.value
    assert isinstance(err, RemoteError) and isinstance(err, ValueError)
    assert (err.remote_type_name, err.remote_message) == ("FieldError", "bad email")
    assert err.field == "email"
    assert err.args == ("bad email",)
    assert str(err).startswith("errortasks.FieldError: bad email")


@pytest.mark.parametrize(("target", "args", "caught_by", "fields"), [
    ("errortasks.raise_json_error", ("{bad",), json.JSONDecodeError,
     {"pos": 1, "lineno": 1, "colno": 2, "doc": "{bad"}),
    ("errortasks.raise_json_error", ("{bad",), ValueError, {"msg": ANY_TEXT}),
    ("errortasks.raise_called_process_error", (), subprocess.CalledProcessError,
     {"returncode": 1, "cmd": ["false"], "args": (1, ["false"])}),
    ("errortasks.raise_decode_error", (), UnicodeDecodeError,
     {"encoding": "utf-8", "object": b"ok \xff", "start": 3, "end": 4,
      "reason": "invalid start byte"}),
    ("errortasks.raise_missing_file", ("/nonexistent/x",), FileNotFoundError,
     {"errno": errno.ENOENT, "filename": "/nonexistent/x", "strerror": ANY_TEXT}),
    ("errortasks.raise_missing_key", ("user_id",), KeyError, {"args": ("user_id",)}),
], ids=["json", "json-as-ValueError", "subprocess", "decode", "missing-file", "key"])
def test_standard_errors_with_fields_are_caught_by_their_class_and_keep_them(
        module_pool: InterpreterPool, target: str, args: tuple[object, ...],
        caught_by: type[BaseException], fields: dict[str, object]) -> None:
    """What a user's ``except json.JSONDecodeError as e: e.pos`` needs."""
    with pytest.raises(caught_by) as info:
        module_pool.call(target, *args)
    assert isinstance(info.value, RemoteError)
    for name, value in fields.items():
        if value is ANY_TEXT:
            assert isinstance(getattr(info.value, name), str) and getattr(info.value, name)
        else:
            assert getattr(info.value, name) == value, name


def test_the_object_an_attribute_was_missing_from_does_not_cross(
        module_pool: InterpreterPool) -> None:
    # AttributeError.obj is the whole object, however large; pickle leaves
    # it out too. The name of the attribute crosses.
    with pytest.raises(AttributeError) as info:
        module_pool.call("builtins.getattr", list(range(100_000)), "nope")
    assert info.value.name == "nope"
    assert info.value.obj is None


def test_an_attribute_a_message_constructor_derives_is_the_workers(
        module_pool: InterpreterPool) -> None:
    # CodedError(message) runs here with the whole remote description as its
    # message; the code it derives from that must not win over the worker's.
    with pytest.raises(errortasks.CodedError) as info:
        module_pool.call("errortasks.raise_coded", "abc")
    assert info.value.code == 3
    assert info.value.args == ("abc",)


def test_a_field_the_caller_cannot_unpickle_is_left_out_alone(module_pool: InterpreterPool
                                                              ) -> None:
    with pytest.raises(errortasks.FieldError) as info:
        module_pool.call("errortasks.raise_with_fields", code=7, unshipped=True)
    assert (info.value.field, info.value.code) == ("email", 7)  # type: ignore[attr-defined]
    assert not hasattr(info.value, "unshipped")


def test_fields_named_like_remote_errors_own_do_not_replace_them(module_pool: InterpreterPool
                                                                ) -> None:
    with pytest.raises(errortasks.FieldError) as info:
        module_pool.call("errortasks.raise_with_fields", target="db", worker="w1", debug=1)
    err = info.value
    assert err.target == "errortasks.raise_with_fields"
    assert isinstance(err.worker, int)
    assert callable(err.debug)


def test_a_copy_of_a_combined_error_keeps_its_fields(module_pool: InterpreterPool) -> None:
    # As a dask pool relays it, and as a user keeps it with pickle.
    with pytest.raises(FileNotFoundError) as info:
        module_pool.call("errortasks.raise_missing_file", "/nonexistent/y")
    copy = pickle.loads(pickle.dumps(info.value))
    assert isinstance(copy, FileNotFoundError) and isinstance(copy, RemoteError)
    assert (copy.errno, copy.filename, copy.args) == (
        errno.ENOENT, "/nonexistent/y", info.value.args)


def test_falls_back_when_the_class_cannot_be_found_here(module_pool: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as info:
        module_pool.call("errortasks.raise_local", "local")
    assert type(info.value) is RemoteError
    assert info.value.remote_qualname == "raise_local.<locals>.LocalError"


def test_control_flow_exceptions_are_not_combined(module_pool: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as info:
        module_pool.call("errortasks.raise_system_exit", 3)
    assert not isinstance(info.value, SystemExit)


def test_the_combined_class_is_made_once(module_pool: InterpreterPool) -> None:
    errors = []
    for _ in range(3):
        with pytest.raises(ZeroDivisionError) as info:
            module_pool.call("operator.truediv", 1, 0)
        errors.append(info.value)
    assert len({type(e) for e in errors}) == 1


# ------------------------------------------------------------ exception groups


@pytest.fixture(params=["interpreters", "processes"])
def any_pool(request: pytest.FixtureRequest, module_pool: InterpreterPool) -> Iterator[Pool]:
    if request.param == "interpreters":
        yield module_pool
        return
    with ProcessPool(workers=1, init="import errortasks") as pool:
        yield pool


def test_except_star_finds_the_errors_of_a_remote_task_group(any_pool: Pool) -> None:
    # asyncio.TaskGroup raises an ExceptionGroup: except* must find the
    # remote ValueError and KeyError, each with its own remote traceback.
    caught: dict[str, list[BaseException]] = {}
    try:
        any_pool.call("errortasks.task_group_failure")
    except* ValueError as group:
        caught["value"] = list(group.exceptions)
    except* KeyError as group:
        caught["key"] = list(group.exceptions)
    (value,), (key,) = caught["value"], caught["key"]
    assert isinstance(value, RemoteError) and value.args == ("bad value",)
    assert isinstance(key, RemoteError) and key.args == ("missing",)
    assert "in _fail_with" in value.remote_traceback
    assert value.target == key.target == "errortasks.task_group_failure"
    assert value.worker is not None and value.worker == key.worker  # the one that ran it


def test_a_remote_group_keeps_its_shape_message_and_class(any_pool: Pool) -> None:
    with pytest.raises(ExceptionGroup) as info:
        any_pool.call("errortasks.raise_nested_group")
    group = info.value
    assert isinstance(group, RemoteError)
    assert group.message == "outer" and group.args[0] == "outer"
    first, inner = group.exceptions
    assert isinstance(first, FileNotFoundError) and isinstance(first, RemoteError)
    assert (first.errno, first.filename) == (errno.ENOENT, "/nowhere")
    assert isinstance(inner, ExceptionGroup) and isinstance(inner, RemoteError)
    assert inner.message == "inner"
    (wrong,) = inner.exceptions
    assert isinstance(wrong, TypeError) and wrong.args == ("wrong type",)
    # What Python does with groups works on it.
    matched, rest = group.split(TypeError)
    assert matched is not None and rest is not None
    assert [type(e).__name__ for e in rest.exceptions] == ["RemoteError[FileNotFoundError]"]
    # Relayed (a dask worker pickles it): still a group of remote errors.
    copy = pickle.loads(pickle.dumps(group))
    assert isinstance(copy, ExceptionGroup) and isinstance(copy, RemoteError)
    assert [type(e).__name__ for e in copy.exceptions] == [
        "RemoteError[FileNotFoundError]", "RemoteError[ExceptionGroup]"]
    assert copy.remote_traceback == group.remote_traceback
