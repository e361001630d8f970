"""Ports for the tests' kernels that no other process is handed meanwhile.

jupyter_client picks a kernel's five ports by binding port 0 and letting
each go; the kernel binds them again when it starts. Port 0 draws from the
range the system also gives outgoing connections, and ``./dev test`` runs
three shards that start kernels and connect to them at once: a connection
can take such a port in between, and that kernel dies at startup with
"Address already in use" (ipykernel did, once in 21 runs of the kernel
suite under load). The tests' kernels take their ports below that range
instead, where the system hands out none, and each port is claimed (a
file in /dev/shm, which every ``./dev`` run on the machine sees, though each
has a /tmp of its own) until its kernel has bound it.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

#: Where claims live: one empty file per port that a kernel is starting with.
CLAIMS = (Path("/dev/shm") if Path("/dev/shm").is_dir()
          else Path(tempfile.gettempdir())) / "interp-rpc-test-kernel-ports"
#: How many ports below the system's own range the tests draw from.
SPAN = 16384
#: The address kernels listen on (jupyter_client's default).
LOOPBACK = "127.0.0.1"

#: Picks a candidate. Not the ``random`` module's functions: pytest-randomly
#: gives every shard the same seed, and the shards would then all draw the
#: same ports in the same order.
choose: Callable[[Sequence[int]], int] = random.SystemRandom().choice


def candidates() -> range:
    """The ports below the range the system gives port 0 and outgoing
    connections."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768  # Linux's default
    return range(max(1024, low - SPAN), low)


def is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def claimed_ports(count: int) -> Iterator[list[int]]:
    """``count`` free ports, claimed until the block ends: start the kernel
    and wait until it answers inside it."""
    CLAIMS.mkdir(exist_ok=True)
    pool = candidates()
    claims: list[Path] = []
    ports: list[int] = []
    try:
        while len(ports) < count:
            port = choose(pool)
            claim = CLAIMS / str(port)
            try:
                os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue  # another start holds it
            claims.append(claim)
            if is_free(port):
                ports.append(port)
        yield ports
    finally:
        for claim in claims:
            claim.unlink(missing_ok=True)
