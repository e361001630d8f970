"""Display data and errors as ipykernel publishes them: JSON data holding
NumPy values, datetimes or bytes is converted; text that UTF-8 cannot hold
(a lone surrogate) is not lost; a silent request's error is shown; an object
that displays itself gives no empty result.

Where ours deliberately differs (ipykernel loses the text and the error of
a lone surrogate; it raises ValueError where ours raises TypeError), the
test asserts each kernel's behaviour, or says why it runs on ours only."""

from __future__ import annotations

import json

import pytest
from conftest import Kernel

# Each value, alone in JSON display data, and what both kernels make of it.
CONVERTED = [
    ("np.int64(3)", 3),
    ("np.float64(1.5)", 1.5),
    ("np.float32(0.25)", 0.25),
    ("np.arange(3)", [0, 1, 2]),
    ("datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)",
     "2020-01-02T03:04:05Z"),
    ("datetime.date(2020, 1, 2)", "2020-01-02"),
    ("b'hi'", "aGk="),
    ("(1, 2)", [1, 2]),
    ("{1}", [1]),
    ("fractions.Fraction(1, 4)", 0.25),
    ("float('nan')", "nan"),
    ("-float('inf')", "-inf"),
    ("{1: 'one', None: 'none'}", {"1": "one", "null": "none"}),
    ("2**63", 2**63),
]


def json_display(kernel: Kernel, value: str) -> object:
    execution = kernel.execute(
        "import numpy as np, datetime, fractions\n"
        "from IPython.display import display\n"
        f"display({{'application/json': {{'v': {value}}}}}, metadata={{'m': {value}}}, raw=True)"
    )
    assert execution.status == "ok", execution.reply["content"]
    (message,) = execution.of_type("display_data")
    converted = message["content"]["data"]["application/json"]["v"]
    assert message["content"]["metadata"] == {"m": converted}
    return converted


@pytest.mark.parametrize(("value", "expected"), CONVERTED, ids=[v for v, _ in CONVERTED])
def test_json_display_data_is_converted(
    each_shared_kernel: Kernel, value: str, expected: object
) -> None:
    converted = json_display(each_shared_kernel, value)
    assert json.dumps(converted) == json.dumps(expected)


def test_json_that_cannot_be_converted_is_an_error_naming_it(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "from IPython.display import display\n"
        "display({'application/json': {'k': [1, object()]}}, raw=True)"
    )
    assert execution.status == "error"
    (error,) = execution.of_type("error")
    if each_shared_kernel.is_ours:
        assert error["content"]["ename"] == "TypeError"
        assert error["content"]["evalue"] == (
            "data['application/json']['k'][1]: an object of type 'object' cannot be written as JSON"
        )
    else:
        assert error["content"]["ename"] == "ValueError"
        assert error["content"]["evalue"].startswith("Can't clean for JSON: <object object")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{1: 'a', '1': 'b'}", "data['application/json']['v']['1']: its key is '1' in JSON"),
        ("cycle", "nests deeper than 256 levels"),
        ("2**64", "does not fit in 64 bits"),
    ],
)
def test_json_that_would_lose_data_is_an_error(
    shared_kernel: Kernel, value: str, problem: str
) -> None:
    execution = shared_kernel.execute(
        "from IPython.display import display\n"
        "cycle = []\n"
        "cycle.append(cycle)\n"
        f"display({{'application/json': {{'v': {value}}}}}, raw=True)"
    )
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "TypeError"
    assert problem in execution.reply["content"]["evalue"]


def test_numpy_bools_become_json_booleans(shared_kernel: Kernel) -> None:
    # ipykernel refuses numpy.bool_ ("Can't clean for JSON: np.True_").
    assert json_display(shared_kernel, "np.bool_(True)") is True


def test_a_lone_surrogate_in_print_does_not_fail_the_cell(shared_kernel: Kernel) -> None:
    # Ours only: ipykernel fails to send such text (a UnicodeEncodeError in
    # its IOPub thread's flush), loses it with the rest of that flush, and
    # under load the request's idle status sometimes never comes.
    execution = shared_kernel.execute("print('a\\ud800b'); print('after')")
    assert execution.status == "ok"
    assert execution.stream() == "a\ufffdb\nafter\n"


def test_a_lone_surrogate_in_an_error_keeps_the_error(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute("raise ValueError('x\\ud800y')")
    assert execution.status == "error"
    if each_shared_kernel.is_ours:
        assert execution.reply["content"]["ename"] == "ValueError"
        assert execution.reply["content"]["evalue"] == "x\ufffdy"
        (error,) = execution.of_type("error")
        assert error["content"]["evalue"] == "x\ufffdy"
        assert any("x\ufffdy" in line for line in error["content"]["traceback"])
    else:
        # ipykernel cannot send the error: it is lost, and the reply names
        # the encoding error instead.
        assert execution.of_type("error") == []
        assert execution.reply["content"]["ename"] == "UnicodeEncodeError"


def test_an_error_in_a_silent_request_is_shown(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute("1 / 0", silent=True)
    assert execution.status == "error"
    (error,) = execution.outputs
    assert error["msg_type"] == "error"
    assert error["content"]["ename"] == "ZeroDivisionError"


def test_an_object_that_displays_itself_gives_no_empty_result(
    each_shared_kernel: Kernel,
) -> None:
    execution = each_shared_kernel.execute(
        "class Shown:\n"
        "    def _ipython_display_(self):\n"
        "        print('shown')\n"
        "Shown()"
    )
    assert execution.status == "ok"
    assert [m["msg_type"] for m in execution.outputs] == ["stream"]
    assert execution.stream() == "shown\n"
