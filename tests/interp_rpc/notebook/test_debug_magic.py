"""%parallel_debug and %debug after a RemoteError, in an in-process IPython
shell, with the person's commands scripted through input()."""

from __future__ import annotations

import builtins
from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell
from shell_support import Run, cell_runner, shell_with_extension

from interp_rpc.notebook.debug_magic import RemoteDebug

CRUNCH = """%%parallel
def crunch(x):
    secret = x * 7
    return secret // (x - 3)
"""


@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    yield from shell_with_extension("-n 2")


@pytest.fixture
def run(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> Iterator[Run]:
    runner = cell_runner(shell, capsys)
    assert runner(CRUNCH).error is None
    yield runner
    runner("%parallel_debug --clear")


class Typed:
    """input(), answering each prompt with the next command."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *commands: str) -> None:
        self.commands = list(commands)
        self.prompts: list[str] = []
        monkeypatch.setattr(builtins, "input", self)

    def __call__(self, prompt: str = "") -> str:
        self.prompts.append(prompt)
        if not self.commands:
            raise KeyboardInterrupt
        return self.commands.pop(0)


def test_debug_after_a_remote_error_opens_pdb_in_the_worker(
        run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("%parallel_map crunch range(6)").error is not None
    typed = Typed(monkeypatch, "p secret", "q")
    ran = run("%debug")
    assert ran.error is None, ran.shown
    assert typed.prompts == ["(Pdb) ", "(Pdb) "]
    assert "-> return secret // (x - 3)" in ran.out
    assert "\n21\n" in ran.out


def test_debug_after_a_local_error_is_ipython_own(
        run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("local_secret = 5\n1 / 0").error is not None
    typed = Typed(monkeypatch, "q")
    ran = run("%debug")
    assert ran.error is None, ran.shown
    assert typed.prompts and typed.prompts[0] != "(Pdb) "  # ipdb's prompt, not the worker's


def test_parallel_debug_takes_the_worker_of_the_last_error(
        run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("%parallel_map crunch range(6)").error is not None
    typed = Typed(monkeypatch, "p x", "q")
    ran = run("%parallel_debug")
    assert ran.error is None, ran.shown
    assert "\n3\n" in ran.out
    assert len(typed.prompts) == 2


def test_several_failing_workers_are_listed_for_choosing(
        run: Run, shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run("from interp_rpc.notebook import current_pool\n"
              "for w in (0, 1):\n"
              "    current_pool().run_everywhere('crunch', (3,), workers=[w]).wait()\n"
              "1 / 0")  # the last error is not a remote one
    assert ran.error is not None
    ran = run("%parallel_debug")
    assert "several workers keep a failure (worker 0: ZeroDivisionError" in ran.shown
    assert "choose one with --worker W" in ran.shown
    typed = Typed(monkeypatch, "p secret", "q")
    ran = run("%parallel_debug --worker 1")
    assert "\n21\n" in ran.out and len(typed.prompts) == 2


def test_clear_and_bad_options(run: Run) -> None:
    assert run("%parallel_map crunch range(6)").error is not None
    assert "Released the kept failure of worker(s) " in run("%parallel_debug --clear").out
    assert run("%parallel_debug --clear").out == "No worker kept a failure.\n"
    assert "keeps no failure to debug (none since the pool started, or it was cleared)" in (
        run("%parallel_debug").shown)  # the last error's worker
    assert run("1 / 0").error is not None
    assert run("%parallel_debug").out == "No worker keeps a failure to debug.\n"
    assert "--worker 5: the pool's workers are 0 to 1" in run("%parallel_debug --worker 5").shown
    assert "takes only options, not 'now'" in run("%parallel_debug now").shown
    assert "--worker: invalid int value" in run("%parallel_debug --worker one").shown


def test_debug_on_a_remote_error_without_a_record_says_why(run: Run) -> None:
    ran = run("from interp_rpc import RemoteError\n"
              "raise RemoteError(remote_type_name='E', remote_module='m', "
              "remote_message='boom', remote_traceback='')")
    assert ran.error is not None
    ran = run("%debug")  # not IPython's debugger on the notebook's own frames
    assert ran.error is None
    assert "%debug cannot open pdb on the worker's frames: this m.E carries no record" in ran.err


def test_local_re_runs_the_last_error_here(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("%parallel_map crunch range(6)").error is not None
    # crunch exists in the workers only: a %%parallel cell defined it there.
    assert "'crunch' is not defined in this interpreter" in run("%parallel_debug --local").shown
    assert run(CRUNCH.removeprefix("%%parallel\n")).error is None  # now here too
    typed = Typed(monkeypatch, "p secret", "q")
    ran = run("%parallel_debug --local")
    assert ran.error is None, ran.shown
    assert "\n21\n" in ran.out and len(typed.prompts) == 2
    assert "takes no --worker or --clear" in run("%parallel_debug --local --clear").shown
    assert run("1 / 0").error is not None
    assert "the last error is ZeroDivisionError" in run("%parallel_debug --local").shown


def test_unload_gives_debug_back_to_ipython(shell: InteractiveShell) -> None:
    ours = shell.find_line_magic("debug")
    assert isinstance(ours, RemoteDebug)
    shell.run_line_magic("unload_ext", "interp_rpc")
    try:
        assert shell.find_line_magic("debug") is ours.ipython_debug
    finally:
        shell.run_line_magic("load_ext", "interp_rpc")
    again = shell.find_line_magic("debug")
    assert isinstance(again, RemoteDebug) and again.ipython_debug is ours.ipython_debug
