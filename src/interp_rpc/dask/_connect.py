"""The dask client a ClusterPool talks through: of a scheduler given by
address (or an error that names it), given ready, or of a LocalCluster the
pool starts and owns."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any

from interp_rpc.dask._asking import ANSWER_TIMEOUT

if TYPE_CHECKING:
    import distributed


def client_for(cluster: str | distributed.Client | None, processes: int | None,
               connect_timeout: float | None) -> tuple[distributed.Client, Any]:
    """The client for ClusterPool(cluster), and the LocalCluster it started
    (None unless ``cluster`` is None)."""
    import distributed

    if cluster is None:
        local = distributed.LocalCluster(
            n_workers=processes or os.process_cpu_count() or 1, threads_per_worker=1,
            processes=True, dashboard_address=None)
        return distributed.Client(local), local
    if isinstance(cluster, distributed.Client):
        return cluster, None
    if isinstance(cluster, str):
        return connect(cluster, connect_timeout), None
    raise TypeError("cluster must be a scheduler address, a distributed.Client or None, "
                    f"not {type(cluster).__name__}")


def connect(address: str, timeout: float | None) -> distributed.Client:
    """A client of the scheduler at ``address``, or an error that names it."""
    import distributed

    if not address.strip():
        # dask reads an empty address as "start a LocalCluster": not what was asked.
        raise ValueError("the scheduler address is empty; pass None for a LocalCluster")
    options = {} if timeout is None else {"timeout": timeout}
    # Made in two steps, to hold the client if connecting fails: dask then
    # leaves its IO loop thread running, and a client still connecting is
    # closed by whichever thread collects it, under dask's lock of every
    # loop; a LocalCluster starting at that moment waited 10 s for that lock
    # and failed. It is closed here instead, at once.
    client: distributed.Client = distributed.Client.__new__(distributed.Client)
    try:
        distributed.Client.__init__(client, address, **options)
    except BaseException as exc:
        _close_unconnected(client)
        if isinstance(exc, (ValueError, TypeError)):
            raise ValueError(f"{address!r} is not a dask scheduler address: {exc}") from None
        if isinstance(exc, OSError):  # refused, unknown host, timed out
            raise ConnectionError(f"cannot reach the dask scheduler at {address!r}: "
                                  f"{exc}") from None
        raise
    return client


def _close_unconnected(client: distributed.Client) -> None:
    """Close a client that failed to connect, and its IO loop thread."""
    with contextlib.suppress(Exception):
        client.close(timeout=ANSWER_TIMEOUT)  # one that was still connecting
    # dask marks a client whose connection timed out closed, but leaves its
    # IO loop running, and has no public way to stop that loop.
    runner = getattr(client, "_loop_runner", None)
    if runner is not None:
        with contextlib.suppress(Exception):
            runner.stop()


def unregister_plugin(client: distributed.Client, name: str, wait: float) -> None:
    """The scheduler forgets the pool's plugin at once, then tells every
    worker to tear it down and waits for all of them: this waits ``wait``
    seconds at most, so that a worker that does not answer cannot hang
    close()."""
    def unregister() -> None:
        # The workers may be gone already: nothing is left to tear down then.
        with contextlib.suppress(Exception):
            client.unregister_worker_plugin(name)

    waiting = threading.Thread(target=unregister, name="interp-rpc-unregister", daemon=True)
    waiting.start()
    waiting.join(wait)
