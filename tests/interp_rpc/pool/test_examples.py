"""The examples of the issue and of the original description, run verbatim."""

from __future__ import annotations

import mymodule

from interp_rpc import InterpreterPool, InterpRpcError, RemoteError


def test_issue_example_runs_verbatim() -> None:
    with InterpreterPool(workers=4, init="import mymodule") as pool:
        result = pool.call("mymodule.process", {"n": 7})
        results = list(pool.map("mymodule.process", [{"n": i} for i in range(1000)]))

    assert result == {"n": 7, "squared": 49}
    assert results == [{"n": i, "squared": i**2} for i in range(1000)]
    assert pool.closed


def test_callable_form_is_the_same_as_the_string_form() -> None:
    with InterpreterPool(workers=2, init="import mymodule") as pool:
        assert pool.call(mymodule.process, {"n": 7}) == pool.call("mymodule.process", {"n": 7})


def test_remote_error_example() -> None:
    record = {"email": "not-an-address"}
    caught: list[RemoteError] = []
    with InterpreterPool(workers=2, init="import mymodule") as pool:
        # As in the description, its comments turned into assertions:
        try:
            pool.call("mymodule.save", record)
        except RemoteError as err:
            assert err.remote_type_name == "ValidationError"
            assert err.remote_module == "mymodule"
            assert err.remote_message == "invalid field: email"
            assert err.remote_traceback  # full formatted traceback text from the worker
            assert str(err)  # both, stitched together, ready to log
            caught.append(err)
    assert len(caught) == 1
    err = caught[0]
    assert "Traceback (most recent call last)" in err.remote_traceback
    assert 'raise ValidationError("email", "invalid field: email")' in err.remote_traceback
    assert "invalid field: email" in str(err)
    assert err.remote_traceback.rstrip() in str(err)
    # The class object never crosses; the caller finds its own by name
    # (mymodule is importable here), so the error is also a ValidationError,
    # with the worker's field.
    assert isinstance(err, mymodule.ValidationError)
    assert err.field == "email"
    assert isinstance(err, InterpRpcError)
