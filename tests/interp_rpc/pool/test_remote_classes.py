"""`except` works across the boundary: a remote exception whose class the
caller can resolve is raised as a subclass of RemoteError and of that class."""

from __future__ import annotations

import asyncio
import builtins
from concurrent.futures import Future

import errortasks
import pytest

from interp_rpc import InterpreterPool, InterpRpcError, RemoteError


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


def test_falls_back_to_remote_error_when_the_constructor_differs(
        module_pool: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as info:
        module_pool.call("errortasks.raise_field", "email", "bad email")
    err = info.value
    assert type(err) is RemoteError
    assert not isinstance(err, errortasks.FieldError)
    assert (err.remote_type_name, err.remote_message) == ("FieldError", "bad email")


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
