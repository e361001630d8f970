"""The face an engine shows the pool built on it: what EnginePool and its
shared parts (map, futures, run_everywhere, profiling) call.

Two engines have it: the C++ engine of InterpreterPool (``_core.Engine``,
whose calls are ``_core.CallHandle``) and ProcessPool's (process/engine.py,
whose calls are ProcessCallHandle). These are typing protocols: nothing
inherits from them, and mypy checks that each engine conforms, so the
shared parts cannot come to rely on what only one engine has.
"""

from __future__ import annotations

from typing import Any, Protocol


class EngineCall(Protocol):
    """One submitted call, from its queueing to its reply."""

    @property
    def id(self) -> int: ...

    @property
    def done(self) -> bool: ...

    @property
    def status(self) -> int: ...

    @property
    def reply_kind(self) -> int: ...

    @property
    def reply(self) -> bytes: ...

    @property
    def worker(self) -> int: ...

    @property
    def timing(self) -> dict[str, int]: ...

    def wait(self, timeout: float | None = None) -> bool:
        """Whether the call finished within ``timeout`` seconds (None: no limit)."""
        ...

    def claim(self) -> bool:
        """True once, for the one party that settles the call's outcome."""
        ...

    def release(self) -> bool:
        """The settling party is done with the call's owner future."""
        ...

    def take(self) -> tuple[int, int, bytes, int]:
        """Claim and release: (status, reply kind, reply, worker)."""
        ...


class PoolEngine[Call: EngineCall](Protocol):
    """The workers and their queue; ``Call`` is the kind of call it hands out."""

    @property
    def workers(self) -> int: ...

    @property
    def broken(self) -> bool: ...

    @property
    def last_call_id(self) -> int: ...

    def wait_ready(self, timeout: float | None) -> list[dict[str, Any]]:
        """Each worker's setup report, once all have one or ``timeout`` passed."""
        ...

    def submit(self, target: str, request: bytes, buffers: list[Any], item_index: int = -1,
               item_count: int = 1, owner: object = None, submitted_ns: int = 0,
               serialize_ns: int = 0, worker: int = -1) -> tuple[str, Call | None]:
        """Queue one call (pinned to ``worker`` if it is not -1): ("ok",
        its call), or the reason it was refused and None."""
        ...

    def submit_many(self, calls: list[tuple[str, bytes, list[Any], int, int, int, int]]
                    ) -> tuple[str, list[Call] | None]:
        """Queue the calls together, all or none."""
        ...

    def cancel(self, handle: Call) -> bool:
        """Withdraw a call no worker has started; False once one has."""
        ...

    def close(self, cancel_pending: bool, timeout: float | None = None
              ) -> list[tuple[int, str, float]]:
        """Stop the workers; those still running a call at ``timeout``."""
        ...

    def status(self) -> list[dict[str, Any]]: ...

    def records(self, after: int = 0) -> list[tuple[Any, ...]]: ...

    def totals(self) -> dict[str, int]: ...
