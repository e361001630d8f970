"""Running a cell in an IPython shell of this process, as a user types it,
and reading what it showed (for the magics' tests)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from IPython.core.interactiveshell import ExecutionResult, InteractiveShell

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Ran:
    result: ExecutionResult
    out: str
    err: str

    @property
    def error(self) -> BaseException | None:
        return self.result.error_in_exec or self.result.error_before_exec

    @property
    def shown(self) -> str:
        return self.out + self.err


#: run(code): run a cell in the shell, as if typed, and read what it showed.
type Run = Callable[[str], Ran]


def shell_with_extension(pool_options: str | None = None) -> Iterator[InteractiveShell]:
    """IPython's shell with interp_rpc loaded, and the notebook's pool made
    by ``%parallel_pool pool_options`` if given; unloaded at the end."""
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "interp_rpc")
    try:
        if pool_options is not None:
            ip.run_line_magic("parallel_pool", pool_options)
        yield ip
    finally:
        ip.run_line_magic("unload_ext", "interp_rpc")


def cell_runner(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> Run:
    def run_cell(code: str) -> Ran:
        capsys.readouterr()
        result = shell.run_cell(code, store_history=True)
        captured = capsys.readouterr()
        return Ran(result, ANSI.sub("", captured.out), ANSI.sub("", captured.err))

    return run_cell


def check_errors_collect(shell: InteractiveShell, run: Run) -> list[object]:
    """``%parallel_map --errors=collect`` on the notebook's pool, whichever
    kind: each failing item's RemoteError in its place, the others' results
    around it, and a summary of what failed. Returns the results."""
    from interp_rpc import RemoteError

    assert run("%%parallel\ndef odd_fails(x):\n    if x % 2:\n        raise ValueError(x)\n"
               "    return x * 10\n").error is None
    ran = run("%parallel_map --errors=collect --chunksize 3 -o collected odd_fails range(7)")
    assert ran.error is None, ran.shown
    results: list[object] = shell.user_ns["collected"]
    assert [results[i] for i in (0, 2, 4, 6)] == [0, 20, 40, 60]
    for i in (1, 3, 5):
        failure = results[i]
        assert isinstance(failure, RemoteError) and isinstance(failure, ValueError)
        assert failure.item_index == i
        assert "raise ValueError(x)" in failure.remote_traceback
    assert "3 of 7 items failed (items 1, 3, 5" in ran.err
    return results


@dataclass
class Shown:
    """One display message a notebook frontend would get."""

    data: dict[str, str]
    display_id: str | None
    update: bool


def notebook_frontend(shell: InteractiveShell,
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Shown]]:
    """For a fixture: the shell as a notebook's kernel, where displays can
    be updated in place; every display message is kept, from any thread.
    Ends any status watch left running."""
    from interp_rpc.notebook import live

    shown: list[Shown] = []

    def publish(data: dict[str, str], metadata: object = None, source: object = None, *,
                transient: dict[str, str] | None = None, update: bool = False,
                **_: object) -> None:
        shown.append(Shown(data, (transient or {}).get("display_id"), update))

    monkeypatch.setattr(live, "in_terminal", lambda: False)
    monkeypatch.setattr(shell.display_pub, "publish", publish)
    yield shown
    live.stop_watch()


def updates_of(shown: list[Shown], display_id: str) -> list[str]:
    """The text of each update of one display, in order."""
    return [s.data["text/plain"] for s in shown if s.update and s.display_id == display_id]
