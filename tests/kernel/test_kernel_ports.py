"""The tests' kernels get ports that no other start is handed, below the
range the system gives port 0 and outgoing connections (kernel_ports.py)."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from pathlib import Path

import kernel_ports
import pytest
from conftest import Kernel


@pytest.fixture
def in_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Candidates drawn in order, from the start of the range, with claims
    of this test's own: a second draw meets the first's ports."""

    def first_unclaimed(pool: Sequence[int]) -> int:
        return next(port for port in pool if not (kernel_ports.CLAIMS / str(port)).exists())

    monkeypatch.setattr(kernel_ports, "choose", first_unclaimed)
    monkeypatch.setattr(kernel_ports, "CLAIMS", tmp_path / "claims")


def test_ports_come_from_below_the_systems_own_range() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    with kernel_ports.claimed_ports(5) as ports:
        assert len(set(ports)) == 5
        assert all(1024 <= port < low for port in ports)


def test_two_starts_at_once_get_different_ports(in_order: None) -> None:
    with kernel_ports.claimed_ports(5) as first, kernel_ports.claimed_ports(5) as second:
        assert not set(first) & set(second)


def test_a_port_is_claimable_again_once_its_kernel_started(in_order: None) -> None:
    with kernel_ports.claimed_ports(2) as first:
        pass
    with kernel_ports.claimed_ports(2) as again:
        assert again == first
    assert not list(kernel_ports.CLAIMS.iterdir())


def test_a_port_in_use_is_passed_over(in_order: None) -> None:
    with kernel_ports.claimed_ports(1) as (port,):
        pass
    with socket.socket() as taken:
        taken.bind((kernel_ports.LOOPBACK, port))
        taken.listen()
        with kernel_ports.claimed_ports(1) as (other,):
            assert other != port


def test_claims_are_released_when_the_start_fails(in_order: None) -> None:
    with pytest.raises(RuntimeError), kernel_ports.claimed_ports(3):
        raise RuntimeError("the kernel died")
    assert not list(kernel_ports.CLAIMS.iterdir())


def test_the_tests_kernels_listen_on_such_ports(kernel: Kernel) -> None:
    info = kernel.manager.get_connection_info()
    ports = [info[f"{channel}_port"] for channel in ("shell", "iopub", "stdin", "hb", "control")]
    assert all(port in kernel_ports.candidates() for port in ports), ports
    assert kernel.execute("1 + 1").status == "ok"
