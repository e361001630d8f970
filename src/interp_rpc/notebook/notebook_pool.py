"""The notebook's one pool, which every %parallel magic runs on.

It is created on first use, with one worker per CPU this process may use,
and replaced by %parallel_pool: a local InterpreterPool, with
``--processes`` a ProcessPool (whose workers can import numpy), or with
``--dask`` a ClusterPool (one InterpreterPool in each process of a
dask.distributed cluster). A replacement takes effect only once the new pool
has started.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from interp_rpc._pool.pool import InterpreterPool
from interp_rpc.errors import PoolInitError
from interp_rpc.notebook import live, polled_view, running_maps

if TYPE_CHECKING:
    from collections.abc import Iterator

    from interp_rpc.dask import ClusterPool
    from interp_rpc.process import ProcessPool
    from interp_rpc.profiling.model import Profile

#: The kinds of pool the magics run on; what all offer is _pool/contract.py's Pool.
type Pool = InterpreterPool | ProcessPool | ClusterPool

#: Seconds %parallel_pool --dask ADDRESS waits for the scheduler by default.
CONNECT_TIMEOUT = 10.0


#: Seconds a pool's init= may take, until --init-timeout.
INIT_TIMEOUT = 30.0

# --dask local, --dask local:N
_LOCAL_CLUSTER = re.compile(r"local(?::(.*))?\Z", re.DOTALL)


def default_workers() -> int:
    """One worker per CPU this process may run on (its affinity, not the machine's count)."""
    return os.process_cpu_count() or 2


def cluster_options(spec: str, connect_timeout: float | None) -> dict[str, Any]:
    """ClusterPool's options for ``--dask SPEC``: a scheduler address, or
    ``local[:N]`` for a LocalCluster of N processes on this machine."""
    spec = spec.strip()
    if not spec:
        raise UsageError("--dask needs a scheduler address such as tcp://host:8786, "
                         "or local[:N] for N processes on this machine")
    match = _LOCAL_CLUSTER.match(spec)
    if match is None:
        return {"cluster": spec, "processes": None,
                "connect_timeout": connect_timeout or CONNECT_TIMEOUT}
    count = match.group(1)
    if count is None:
        return {"cluster": None, "processes": default_workers(), "connect_timeout": None}
    if not count.strip().isdigit():
        raise UsageError(f"--dask local:N needs a whole number of processes, not {count!r}")
    if int(count) < 1:
        raise UsageError(f"--dask local:N needs at least 1 process, not {int(count)}")
    return {"cluster": None, "processes": int(count), "connect_timeout": None}


class NotebookPool:
    """The pool, the options it was made with, and what the magics keep
    about it (the stuck threshold, the profile of the last run)."""

    def __init__(self) -> None:
        self._pool: Pool | None = None
        # InterpreterPool's options; a ClusterPool takes init and init_timeout.
        self.options: dict[str, Any] = {"workers": default_workers(), "init": None,
                                        "init_timeout": INIT_TIMEOUT}
        # ClusterPool's own options while the pool is on a dask cluster:
        # cluster, processes, connect_timeout, workers_per_process.
        self.cluster: dict[str, Any] | None = None
        # ProcessPool's own options while the workers are processes:
        # kill_on_timeout.
        self.processes: dict[str, Any] | None = None
        self.stuck_after = live.STUCK_AFTER
        #: Of the last %parallel_map or %%parallel that has ended (see profiling).
        self.last_profile: Profile | None = None

    @contextlib.contextmanager
    def profiling(self, pool: Pool, functions: bool = False) -> Iterator[Profile]:
        """``pool.profile()`` for a magic's run. The profile becomes
        ``last_profile`` once the run has ended, however it ended: until then
        the last finished one stays, so the Workers panel and
        %parallel_profile (from another shell) never read one still
        recording, which raises."""
        profile: Profile | None = None
        try:
            with pool.profile(functions=functions) as profile:
                yield profile
        finally:
            if profile is not None:
                self.last_profile = profile
                running_maps.notify()  # the Workers panels' profile button

    @property
    def pool(self) -> Pool:
        """The pool, created on first use (again after it was closed)."""
        if self._pool is None or self._pool.closed:
            self._pool = _new_pool(self.options, self.cluster, self.processes)
            self.last_profile = None
        return self._pool

    @property
    def started(self) -> bool:
        """Whether a pool is open now (else the next use creates one)."""
        return self._pool is not None and not self._pool.closed

    def replace(self, new_options: dict[str, Any], cluster: dict[str, Any] | None,
                processes: dict[str, Any] | None) -> None:
        """A pool made with these options in place of the current one, which is
        closed once the new one has started; if it fails, nothing changes."""
        current = self._pool if self.started else None
        try:
            try:
                new = _new_pool(new_options, cluster, processes)
            except ValueError as exc:  # options the pool refused (too many workers)
                raise UsageError(str(exc)) from None
        except (PoolInitError, UsageError):
            if current is not None:
                print(f"The new pool did not start; the current one ({current.workers} "
                      "workers) is still in use.", file=sys.stderr)
            raise
        live.stop_watch()  # it shows the old pool, which is closed below
        old, self._pool = self._pool, new
        self.options = new_options
        self.cluster = cluster
        self.processes = processes
        self.last_profile = None
        if old is not None:
            old.close(wait=False, timeout=1.0)

    def show_status(self) -> None:
        """The pool's worker table, once."""
        pool = self.pool
        if live.engine_in_this_process(pool):
            display(live.LiveView(pool, stuck_after=self.stuck_after).render(), raw=True)
        else:
            polled_view.show_status(pool, self.stuck_after)

    def close(self) -> None:
        live.stop_watch()
        if self._pool is not None:
            self._pool.close(wait=False, timeout=1.0)
            self._pool = None


def _new_pool(local: dict[str, Any], cluster: dict[str, Any] | None,
              processes: dict[str, Any] | None) -> Pool:
    if processes is not None:
        # Imported on first use, as dask is: most notebooks never need it.
        from interp_rpc.process import ProcessPool

        return ProcessPool(**local, **processes)
    if cluster is None:
        return InterpreterPool(**local)
    try:
        from interp_rpc.dask import ClusterPool
    except ImportError as exc:  # pragma: no cover - distributed is in the dev root
        raise UsageError(f"--dask needs dask.distributed ({exc}); install it with "
                         "pip install 'interp-rpc[dask]'") from None
    where = cluster["cluster"] or f"a LocalCluster of {cluster['processes']} processes"
    try:
        return ClusterPool(cluster["cluster"], processes=cluster["processes"],
                           connect_timeout=cluster["connect_timeout"],
                           workers_per_process=cluster["workers_per_process"],
                           init=local["init"], init_timeout=local["init_timeout"])
    except ValueError as exc:
        raise UsageError(f"--dask {where}: {exc}") from None
    except ConnectionError as exc:
        raise UsageError(f"{exc} (within {cluster['connect_timeout']:g} s; "
                         "--connect-timeout S waits longer)") from None
