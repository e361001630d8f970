"""The kernel does not leak: 1,000 executes grow its RSS by less than 20 MB."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import Kernel

MB = 1024 * 1024


def rss_bytes(kernel: Kernel) -> int:
    provisioner = kernel.manager.provisioner
    assert provisioner is not None
    pid = provisioner.process.pid  # type: ignore[attr-defined]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
def test_a_thousand_executes_do_not_grow_the_kernel(kernel: Kernel) -> None:
    cells = ["1 + 1", "print('x')", "from IPython.display import display; display('y')"]
    for i in range(60):  # warm up: imports, caches, IPython's history
        kernel.execute(cells[i % len(cells)])
    before = rss_bytes(kernel)
    for i in range(1000):
        assert kernel.execute(cells[i % len(cells)]).status == "ok"
    growth = rss_bytes(kernel) - before
    assert growth < 20 * MB, f"RSS grew by {growth / MB:.1f} MB"
