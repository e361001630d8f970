"""Helpers of the ClusterPool tests: local dask clusters that always close."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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
