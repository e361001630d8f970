"""Running a cell in an IPython shell of this process, as a user types it,
and reading what it showed (for the magics' tests)."""

from __future__ import annotations

import re
from collections.abc import Callable
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


def cell_runner(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> Run:
    def run_cell(code: str) -> Ran:
        capsys.readouterr()
        result = shell.run_cell(code, store_history=True)
        captured = capsys.readouterr()
        return Ran(result, ANSI.sub("", captured.out), ANSI.sub("", captured.err))

    return run_cell
