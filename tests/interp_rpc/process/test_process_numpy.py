"""NumPy, which refuses subinterpreters, in worker processes."""

from __future__ import annotations

import pytest

from interp_rpc import ProcessPool

numpy = pytest.importorskip("numpy")


def test_a_numpy_target_in_a_call_and_a_map_of_ten_thousand_items(
        process_pool: ProcessPool) -> None:
    assert process_pool.call("numpy.sum", [1, 2, 3]) == 6
    assert process_pool.call("processtasks.column_sums", 2) == [3.0, 5.0, 7.0]
    results = list(process_pool.map("numpy.sqrt", range(10_000)))
    assert len(results) == 10_000
    assert results[9801] == 99.0
    assert isinstance(results[4], numpy.float64)


def test_an_array_crosses_both_ways(process_pool: ProcessPool) -> None:
    array = numpy.arange(200_000, dtype=numpy.float32).reshape(400, 500)[:, ::2]
    doubled = process_pool.call("numpy.multiply", array, 2)
    assert doubled.dtype == numpy.float32 and doubled.shape == (400, 250)
    assert numpy.array_equal(doubled, array * 2)


def test_linalg_error_is_caught_by_its_own_class(process_pool: ProcessPool) -> None:
    with pytest.raises(numpy.linalg.LinAlgError, match="Singular matrix") as caught:
        process_pool.call("processtasks.singular_inverse")
    assert "singular_inverse" in caught.value.remote_traceback


def test_init_may_import_numpy() -> None:
    with ProcessPool(workers=1, init="import numpy as np") as pool:
        assert pool.call("numpy.__version__.upper") == numpy.__version__.upper()
