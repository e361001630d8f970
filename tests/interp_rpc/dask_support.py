"""Helpers of the ClusterPool tests: local dask clusters that always close."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support import FIXTURES

#: init= of the test pools: the fixture modules, importable in every
#: subinterpreter of every dask worker process (whatever its sys.path).
INIT = f"import sys; sys.path.insert(0, {str(FIXTURES)!r}); import clustertasks, pooltasks"

#: Upper bound for one cluster operation in these tests; only reached on failure.
CLUSTER_LIMIT = 60.0


@contextmanager
def local_cluster(processes: int = 2) -> Iterator[tuple[Any, Any]]:
    """(LocalCluster, Client): ``processes`` dask worker processes of one
    thread each, closed on the way out whatever happened."""
    import distributed

    cluster = distributed.LocalCluster(n_workers=processes, threads_per_worker=1,
                                       processes=True, dashboard_address=None)
    try:
        client = distributed.Client(cluster)
        try:
            yield cluster, client
        finally:
            client.close()
    finally:
        cluster.close()


def closed_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_blocked_map(pool: Any, directory: Path, gate: Path,
                    outcome: dict[str, Any]) -> threading.Thread:
    """A thread mapping clustertasks.block_in over 4 items, one per chunk:
    each item marks ``directory`` and waits for ``gate``. The map's result
    or error goes into ``outcome``."""
    def run() -> None:
        try:
            outcome["result"] = list(pool.map("clustertasks.block_in", [str(directory)] * 4,
                                              [str(gate)] * 4, range(4), chunksize=1))
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread
