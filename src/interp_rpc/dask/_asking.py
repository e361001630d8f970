"""Asking the dask worker processes something, each on its own, with a bound.

``client.run`` sends one request to every worker at once and waits for all of
them (the scheduler's broadcast), so one process that is stopped, hung or cut
off from the network, and not yet removed by the scheduler (that takes its
``worker-ttl``, minutes by default), would hang the caller: status, records,
a profile's end and ``close()``. Asking each process with a request of its
own, all at once on the client's event loop, bounds the wait for each one:
the others' answers come back after at most ``timeout``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import distributed

#: How long the caller waits for a dask worker process's answer to a request
#: of its own (status, records, the start and end of a profile, closing):
#: one that does not answer in time answers with a TimeoutError.
ANSWER_TIMEOUT = 10.0


def ask_each(client: distributed.Client, addresses: Sequence[str],
             function: Callable[..., Any], *args: Any,
             timeout: float | None = ANSWER_TIMEOUT) -> dict[str, Any]:
    """``function(*args)`` run by the dask worker at each address: by
    address, its answer, the exception it raised, or a TimeoutError when it
    did not answer within ``timeout`` seconds (None: no limit). Empty when
    there is no address or the client is not running."""
    if not addresses or client.status != "running":
        return {}

    async def one(address: str) -> Any:
        try:
            answers = await asyncio.wait_for(
                client.run(function, *args, workers=[address], on_error="return",
                           asynchronous=True), timeout)
        except TimeoutError:
            return TimeoutError(f"dask worker {address} did not answer within {timeout:g} s")
        except Exception as exc:  # it left the cluster, or the scheduler is gone
            return exc
        return answers.get(address, LookupError(f"dask worker {address} is gone"))

    async def every() -> list[Any]:
        return await asyncio.gather(*(one(address) for address in addresses))

    try:
        found = client.sync(every)
    except Exception as exc:  # the client closed meanwhile
        return dict.fromkeys(addresses, exc)
    return dict(zip(addresses, found, strict=True))
