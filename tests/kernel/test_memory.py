"""The kernel does not leak: 1,000 executes grow its RSS by less than 20 MB."""

from __future__ import annotations

import pytest
from conftest import MB, Kernel


@pytest.mark.slow
def test_a_thousand_executes_do_not_grow_the_kernel(kernel: Kernel) -> None:
    cells = ["1 + 1", "print('x')", "from IPython.display import display; display('y')"]
    for i in range(60):  # warm up: imports, caches, IPython's history
        kernel.execute(cells[i % len(cells)])
    before = kernel.rss_bytes()
    for i in range(1000):
        assert kernel.execute(cells[i % len(cells)]).status == "ok"
    growth = kernel.rss_bytes() - before
    assert growth < 20 * MB, f"RSS grew by {growth / MB:.1f} MB"
