"""The error of a cell run in every worker (%%parallel)."""

from __future__ import annotations

from interp_rpc.errors import InterpRpcError


class ParallelCellError(InterpRpcError):
    """A cell run in every worker (%%parallel) failed in one or more of them.

    ``errors`` maps each failing worker's index to its error (a RemoteError
    for an exception raised by the cell).
    """

    def __init__(self, errors: dict[int, Exception], *, workers: int) -> None:
        self.errors = errors
        self.workers = workers
        failed = ", ".join(str(index) for index in sorted(errors))
        super().__init__(f"the cell failed in worker(s) {failed} of {workers}")

    def _render_traceback_(self) -> list[str]:
        """Each distinct error once, headed by the workers that raised it."""
        from interp_rpc.display.errors import parallel_cell_lines

        return parallel_cell_lines(self)
