"""interp-rpc on a dask.distributed cluster: the same pool, on many machines.

    from interp_rpc.dask import ClusterPool

    with ClusterPool("tcp://scheduler:8786", init="import mymodule") as pool:
        results = pool.map("mymodule.process", items)

Importing this package does not import dask; creating a ClusterPool does.
Install the extra with ``pip install interp-rpc[dask]``.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from interp_rpc.dask._cluster_pool import ClusterPool
    from interp_rpc.dask._placement import ClusterWorker


def __getattr__(name: str) -> Any:
    # Lazily, so that ``import interp_rpc.dask`` stays cheap and works
    # without dask installed until a ClusterPool is wanted.
    if name == "ClusterPool":
        from interp_rpc.dask._cluster_pool import ClusterPool

        return ClusterPool
    if name == "ClusterWorker":
        from interp_rpc.dask._placement import ClusterWorker

        return ClusterWorker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ClusterPool", "ClusterWorker"]
