"""ClusterPools still open when the interpreter exits: closed then, so that a
script that forgets close() still exits."""

from __future__ import annotations

import atexit
import weakref
from typing import TYPE_CHECKING

from interp_rpc._pool.exit_policy import EXIT_TIMEOUT

if TYPE_CHECKING:
    from interp_rpc.dask._cluster_pool import ClusterPool


open_pools: weakref.WeakSet[ClusterPool] = weakref.WeakSet()


def _close_open_pools_at_exit() -> None:
    """A script that forgets close() still exits: queued calls are cancelled,
    running calls get EXIT_TIMEOUT seconds, and a cluster the pool started is
    shut down."""
    for pool in list(open_pools):
        pool.close(wait=False, timeout=EXIT_TIMEOUT)


_exit_handler_registered = False


def register_exit_handler() -> None:
    # Once distributed is imported: exit handlers run last-registered first,
    # so the pools close before distributed closes the clusters under them.
    global _exit_handler_registered
    if not _exit_handler_registered:
        atexit.register(_close_open_pools_at_exit)
        _exit_handler_registered = True
