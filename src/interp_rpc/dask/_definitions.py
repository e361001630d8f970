"""The %%parallel runs a ClusterPool remembers (its "definitions"), for the
processes that join the cluster later: kept in the scheduler's metadata
store, numbered in the order they were made (the plugin replays them; see
_plugin)."""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import distributed

    from interp_rpc._pool.encoding import EncodedCall

#: The metadata key, under the pool's name, of the pool's definitions.
DEFINITIONS = "definitions"


class Definitions:
    """The ids of the remembered runs, in order; the scheduler keeps the runs."""

    def __init__(self, client: distributed.Client, pool_name: str) -> None:
        self._client = client
        self._pool_name = pool_name
        self._ids: list[str] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many there are: a job asks the process running it for as many."""
        return len(self._ids)

    def remember(self, run_id: str, label: str, request: EncodedCall) -> None:
        """Keep a run: in the scheduler first, so that every job sent from
        now on, which asks for one more definition, finds it there."""
        definition = {"id": run_id, "label": label, "request": request.data,
                      "buffers": [bytes(b.raw()) for b in request.buffers]}
        with self._lock:
            if run_id in self._ids:
                return
            self._client.set_metadata([self._pool_name, DEFINITIONS, str(len(self._ids))],
                                      definition)
            self._ids.append(run_id)

    def drop(self) -> None:
        """When the pool closes. Dask has no way to delete metadata: this
        drops the definitions' bytes."""
        if self._ids:
            with contextlib.suppress(Exception):
                self._client.set_metadata(self._pool_name, None)
