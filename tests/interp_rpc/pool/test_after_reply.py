"""A worker lets go of a call's arguments and result once the reply is on its
way, not before (freeing a list of 10^6 numbers is then no part of the
call's latency) and not later: the next call finds them gone, and a view of
the caller's memory among them is not taken for one the target kept.
"""

from __future__ import annotations

import warnings

import pytest
from support import MakePool

from interp_rpc._worker.wire import LEND_THRESHOLD, OUT_OF_BAND_THRESHOLD

INIT = "import lendtasks, buffertasks"

#: A list of floats that packs into one column, small enough to be pickled
#: into the reply, and one whose column the worker lends instead.
FLOAT_LISTS = {"pickled column": 1_000, "lent column": 2 * LEND_THRESHOLD // 8}


@pytest.mark.parametrize("items", FLOAT_LISTS.values(), ids=FLOAT_LISTS.keys())
def test_the_next_call_finds_the_last_calls_argument_and_result_let_go(
        make_pool: MakePool, items: int) -> None:
    pool = make_pool(workers=1, init=INIT)
    values = [i * 0.5 for i in range(items)]
    # keep() returns its argument: the same list is the call's argument and
    # its result, and the worker keeps one reference of its own.
    assert pool.call("lendtasks.keep", values) == values
    assert pool.call("lendtasks.kept_references") == 0


def test_a_result_that_is_not_a_column_is_let_go_too(make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    mixed = [1, "two", 3.0, None] * 100
    assert pool.call("lendtasks.keep", mixed) == mixed
    assert pool.call("lendtasks.kept_references") == 0


def test_a_view_argument_is_not_taken_for_one_the_target_kept(make_pool: MakePool) -> None:
    pool = make_pool(workers=1, init=INIT)
    data = memoryview(b"v" * OUT_OF_BAND_THRESHOLD)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert pool.call("buffertasks.owner_type", data) == "BufferLease"
        assert pool.call("buffertasks.owner_type", data[1:]) == "BufferLease"
    assert not [w for w in caught if "kept a view" in str(w.message)]
