"""RemoteError: what a worker's exception looks like in the caller."""

from __future__ import annotations

import mymodule
import pooltasks
import pytest
from support import wait_until

from interp_rpc import InterpreterPool, InterpRpcError, RemoteError


def catch(pool: InterpreterPool, target: str, *args: object) -> RemoteError:
    with pytest.raises(RemoteError) as info:
        pool.call(target, *args)
    return info.value


def test_attributes(module_pool: InterpreterPool) -> None:
    err = catch(module_pool, "mymodule.save", {"email": "x"})
    assert err.remote_type_name == "ValidationError"
    assert err.remote_module == "mymodule"
    assert err.remote_message == "invalid field: email"
    assert err.remote_qualname == "ValidationError"
    assert err.remote_type == "mymodule.ValidationError"
    assert err.target == "mymodule.save"
    assert err.worker in (0, 1)


def test_traceback_is_the_full_text_from_the_worker(module_pool: InterpreterPool) -> None:
    err = catch(module_pool, "mymodule.save", {})
    tb = err.remote_traceback
    assert tb.startswith("Traceback (most recent call last):")
    assert mymodule.__file__ in tb
    assert "in save" in tb
    assert tb.rstrip().endswith("mymodule.ValidationError: invalid field: email")


def test_traceback_includes_chained_causes_and_notes(module_pool: InterpreterPool) -> None:
    err = catch(module_pool, "pooltasks.chained_failure")
    tb = err.remote_traceback
    assert err.remote_type_name == "ConfigError"
    assert err.remote_message == "could not load the configuration"
    assert "KeyError: 'missing-key'" in tb
    assert "The above exception was the direct cause of the following exception:" in tb
    assert "note: checked /etc/app.toml" in tb
    assert "note: set APP_CONFIG to override" in tb
    # The cause comes first, as Python prints it.
    assert tb.index("KeyError") < tb.index("direct cause") < tb.index("ConfigError")


def test_traceback_includes_implicit_chains(module_pool: InterpreterPool) -> None:
    err = catch(module_pool, "pooltasks.implicit_chain")
    assert "ZeroDivisionError: division by zero" in err.remote_traceback
    assert ("During handling of the above exception, another exception occurred:"
            in err.remote_traceback)
    assert err.remote_type_name == "KeyError"


def test_str_stitches_message_and_traceback_together(module_pool: InterpreterPool) -> None:
    err = catch(module_pool, "pooltasks.chained_failure")
    text = str(err)
    assert text.startswith("pooltasks.ConfigError: could not load the configuration")
    assert err.remote_traceback.rstrip() in text
    assert "note: checked /etc/app.toml" in text
    assert "pooltasks.chained_failure" in text  # which call


def test_a_class_whose_constructor_differs_is_caught_by_it_with_its_field(
        module_pool: InterpreterPool) -> None:
    # ValidationError(field, message) cannot be built from a message alone;
    # it is combined all the same (see test_remote_classes.py).
    err = catch(module_pool, "mymodule.save", {})
    assert isinstance(err, mymodule.ValidationError)
    assert isinstance(err, ValueError)
    assert isinstance(err, RemoteError)
    assert isinstance(err, InterpRpcError)
    assert err.field == "email"


def test_builtin_exception_names(module_pool: InterpreterPool) -> None:
    err = catch(module_pool, "pooltasks.fail", "plain")
    assert (err.remote_type_name, err.remote_module, err.remote_message) == (
        "ValueError", "builtins", "plain")
    assert err.remote_type == "ValueError"
    assert str(err).startswith("ValueError: plain")


def test_remote_error_from_submit_and_the_worker_survives(module_pool: InterpreterPool) -> None:
    future = module_pool.submit(pooltasks.chained_failure)
    err = future.exception(timeout=30)
    assert isinstance(err, RemoteError)
    assert err.remote_type_name == "ConfigError"
    assert list(module_pool.map("pooltasks.square", range(10))) == [i * i for i in range(10)]
    wait_until(lambda: all(w.state == "idle" for w in module_pool.status()))


@pytest.mark.parametrize("exc", ["SystemExit", "KeyboardInterrupt"])
def test_base_exceptions_in_a_worker_become_remote_errors(module_pool: InterpreterPool,
                                                          exc: str) -> None:
    err = catch(module_pool, "builtins.exec", f"raise {exc}(5)")
    assert err.remote_type_name == exc
    assert module_pool.call("pooltasks.add", 1, 1) == 2
