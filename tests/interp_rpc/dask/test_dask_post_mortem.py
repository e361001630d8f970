"""Debugging a RemoteError that a ClusterPool relayed: the dask worker's
frames cannot be reached, which err.debug() says; err.debug(local=True)
re-runs the failed item here under pdb."""

from __future__ import annotations

import builtins

import pytest

pytest.importorskip("distributed")

from dask_support import CLUSTER_LIMIT, INIT, local_cluster

from interp_rpc import DebugUnavailableError, RemoteError
from interp_rpc.dask import ClusterPool

pytestmark = pytest.mark.timeout(240)


def test_a_cluster_error_says_why_and_is_re_run_here(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with local_cluster(1) as (_, client):
        pool = ClusterPool(client, init=f"{INIT}; import debugtasks")
        try:
            with pytest.raises(RemoteError) as caught:
                list(pool.map("debugtasks.crunch", range(6), chunksize=2))
        finally:
            pool.close(timeout=CLUSTER_LIMIT)
    error = caught.value
    assert error.item_index == 3
    with pytest.raises(DebugUnavailableError, match="was raised in another process"):
        error.debug()
    commands = ["p secret, x", "q"]
    monkeypatch.setattr(builtins, "input", lambda prompt="": commands.pop(0))
    error.debug(local=True)
    assert "(21, 3)" in capsys.readouterr().out
    assert commands == []


def test_a_dask_workers_subinterpreters_keep_no_failure() -> None:
    """Nothing can reach their frames (see above): keeping them would hold
    the failing call's locals for nothing."""
    with local_cluster(1) as (_, client), \
            ClusterPool(client, init=f"{INIT}; import debugtasks") as pool:
        with pytest.raises(RemoteError):
            pool.call("debugtasks.crunch", 3)
        kept = pool.run_everywhere("_interp_rpc_worker.post_mortem", ("describe",)).wait()
        assert list(kept.values()) == [None] * pool.workers
