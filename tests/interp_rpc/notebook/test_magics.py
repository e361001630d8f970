"""The %parallel magics as a user types them, in an IPython shell of this
process: what the line means, what each option does, and how errors show.
(tests/notebooks runs them through both kernels.)"""

from __future__ import annotations

import _thread
import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from shell_support import Run, cell_runner, check_errors_collect, shell_with_extension
from support import wait_until

from interp_rpc import (
    MISSING,
    PoolInitError,
    RemoteError,
    ShareabilityError,
    TargetResolutionError,
)
from interp_rpc._worker.cell_result import MAX_ITEMS
from interp_rpc.notebook import ParallelCellError, current_pool


@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    yield from shell_with_extension("-n 2")


@pytest.fixture
def run(shell: InteractiveShell, capsys: pytest.CaptureFixture[str]) -> Run:
    return cell_runner(shell, capsys)


# ------------------------------------------------------------------ parsing

def test_a_quoted_init_loses_its_quotes_once_and_runs_in_every_worker(
        shell: InteractiveShell, run: Run) -> None:
    ran = run('%parallel_pool -n 2 --init "import math; FLAG = \'a  b\' + str(math.pi)[:4]"')
    assert ran.error is None, ran.shown
    ran = run("def read_flag(_):\n    return FLAG\n"
              "flags = %parallel_map read_flag range(4)")
    assert ran.error is None, ran.shown
    assert shell.user_ns["flags"] == ["a  b3.14"] * 4


ITEMS = [
    ('["a  b", \'c  d\', """e   f""", r"\\t"]', ["a  b", "c  d", "e   f", "\\t"]),
    ("[-1, -2.5]", [-1, -2.5]),
    ('["#", "x # y"]  # a comment', ["#", "x # y"]),
    ("[i * i for i in range(4) if i != 2]", [0, 1, 9]),
    ("[(w := 3), w + 1]", [3, 4]),
    ('["{x}", "$x", "$$"]', ["{x}", "$x", "$$"]),
    ("range(3)", [0, 1, 2]),
]


@pytest.mark.parametrize(("source", "expected"), ITEMS, ids=[s for s, _ in ITEMS])
def test_items_are_any_python_expression_taken_verbatim(
        shell: InteractiveShell, run: Run, source: str, expected: list[object]) -> None:
    shell.user_ns["x"] = "expanded!"
    ran = run(f"def ident(v):\n    return v\nresult = %parallel_map ident {source}")
    assert ran.error is None, ran.shown
    assert shell.user_ns["result"] == expected


@pytest.mark.parametrize("magic", ["parallel_pool", "parallel_map", "parallel_status",
                                   "parallel_profile", "parallel_debug", "parallel"])
def test_every_magic_answers_help_with_its_usage(run: Run, magic: str) -> None:
    usage = f"%%{magic} " if magic == "parallel" else f"%{magic}"
    ran = run(f"%{magic} --help")
    assert ran.error is None, ran.shown
    assert ran.out.startswith(f"usage: {usage}"), ran.out
    asked = run(f"%{magic}?")
    assert asked.error is None, asked.shown
    assert f"  {usage}" in asked.out, asked.out


def test_parallel_map_help_explains_target_and_items(run: Run) -> None:
    text = run("%parallel_map -h").out
    assert "TARGET ITEMS" in text and "verbatim" in text and "-o NAME" in text


BAD_LINES = [
    ("%parallel_pool -n 0", "-n/--workers must be at least 1, not 0"),
    ("%parallel_pool -n two", "invalid int value: 'two'"),
    ("%parallel_pool --stuck-after 0", "--stuck-after must be greater than 0, not 0"),
    ("%parallel_pool --init-timeout -1", "--init-timeout must be greater than 0, not -1"),
    ("%parallel_pool --init 'def ('", "--init is not valid Python"),
    ("%parallel_pool --bogus 1", "unknown option '--bogus'"),
    ("%parallel_pool --init", "option '--init' needs a value"),
    ("%parallel_map ident 1/0", "ITEMS '1/0' raised ZeroDivisionError: division by zero"),
    ("%parallel_map ident 5", "ITEMS '5' is a int, which is not iterable"),
    ("%parallel_map ident [1, 2", "ITEMS '[1, 2' is not a Python expression"),
    ("%parallel_map ident [1] --timeout 5", "(options go before TARGET)"),
    ("%parallel_map --chunk 2 ident [1]", "unknown option '--chunk'"),
    ("%parallel_map --chunksize 0 ident [1]", "--chunksize must be at least 1, not 0"),
    ("%parallel_map --timeout 0 ident [1]", "--timeout must be greater than 0, not 0"),
    ("%parallel_map -o 2x ident [1]", "-o NAME must be a Python identifier, not '2x'"),
    ("%parallel_map -o class ident [1]", "-o NAME must be a Python identifier, not 'class'"),
    ("%parallel_map ident", "ITEMS is missing after TARGET 'ident'"),
    ("%parallel_map", "TARGET and ITEMS are missing"),
    ("%parallel_map not-a-name [1]", "TARGET must be a name or dotted path, not 'not-a-name'"),
    ("%parallel_map answer [1]", "TARGET 'answer' is a int in this notebook, not a function"),
    ("%parallel_map --timeout 'x ident [1]", "cannot read the options"),
    ("%parallel --targets 0,9 x = 1", "--targets names worker 9"),
    ("%parallel --targets a x = 1", "--targets must be worker numbers"),
    ("%parallel --targets 1-0 x = 1", "--targets range '1-0' runs backwards: write 0-1"),
    ("%parallel --targets 0-5 x = 1", "--targets names worker 2"),
    ("%parallel", "%parallel needs a statement"),
    ("%parallel_status --watch -1", "--watch must be 0 or more seconds"),
    ("%parallel_profile now", "%parallel_profile takes only options, not 'now'"),
    ("%parallel_profile -o 1x", "-o NAME must be a Python identifier"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES, ids=[line for line, _ in BAD_LINES])
def test_a_bad_value_is_a_one_line_usage_error_naming_it(
        shell: InteractiveShell, run: Run, line: str, message: str) -> None:
    shell.user_ns["ident"] = lambda v: v
    shell.user_ns["answer"] = 42
    pool = current_pool()
    ran = run(line)
    assert isinstance(ran.error, UsageError), ran.shown
    lines = [text for text in ran.shown.splitlines() if text.strip()]
    assert len(lines) == 1, ran.shown
    assert lines[0].startswith("UsageError: ") and message in lines[0], lines[0]
    assert current_pool() is pool and not pool.closed


def test_a_pool_too_large_for_the_memory_is_refused_and_the_current_one_kept(
        run: Run) -> None:
    pool = current_pool()
    ran = run("%parallel_pool -n 1000000000")
    assert isinstance(ran.error, UsageError), ran.shown
    assert "UsageError: workers=1,000,000,000 cannot fit in this machine's memory" in ran.shown
    assert "the current one (2 workers) is still in use" in ran.err
    assert current_pool() is pool and not pool.closed


# ------------------------------------------------------------------ targets

def test_a_name_defined_by_parallel_beats_a_stdlib_module_of_that_name(
        shell: InteractiveShell, run: Run) -> None:
    assert run("%%parallel\ndef glob(x):\n    return x * 2\n").error is None
    ran = run("doubled = %parallel_map glob [1, 2, 3]")
    assert ran.error is None, ran.shown
    assert shell.user_ns["doubled"] == [2, 4, 6]


def test_redefining_with_parallel_takes_effect_in_every_worker_at_once(
        shell: InteractiveShell, run: Run) -> None:
    assert run("%%parallel\ndef version(_):\n    return 1\n").error is None
    assert run("first = %parallel_map --chunksize 1 version range(8)").error is None
    assert shell.user_ns["first"] == [1] * 8
    assert run("%%parallel\ndef version(_):\n    return 2\n").error is None
    assert run("second = %parallel_map --chunksize 1 version range(8)").error is None
    assert shell.user_ns["second"] == [2] * 8


def test_a_function_of_the_notebook_is_sent_again_when_its_code_changes(
        shell: InteractiveShell, run: Run) -> None:
    assert run("def local_version(_):\n    return 'old'\n"
               "before = %parallel_map local_version range(4)").error is None
    assert run("def local_version(_):\n    return 'new'\n"
               "after = %parallel_map local_version range(4)").error is None
    assert shell.user_ns["before"] == ["old"] * 4
    assert shell.user_ns["after"] == ["new"] * 4


# ------------------------------------------------------------ pool options

def test_a_pool_that_fails_to_start_leaves_the_current_one_in_place(
        shell: InteractiveShell, run: Run) -> None:
    assert run("%parallel_pool -n 2 --init 'KEPT = 1'").error is None
    pool = current_pool()
    ran = run("%parallel_pool -n 1 --init \"raise ValueError('no good')\"")
    assert isinstance(ran.error, PoolInitError), ran.shown
    assert "ValueError: no good" in ran.shown
    assert "the current one (2 workers) is still in use" in ran.shown
    assert current_pool() is pool and not pool.closed and pool.workers == 2
    # The options stayed too: a later pool built from them still runs KEPT = 1.
    assert run("def kept(_):\n    return KEPT\nk = %parallel_map kept [0, 1]").error is None
    assert shell.user_ns["k"] == [1, 1]


def test_each_pool_option_takes_effect(shell: InteractiveShell, run: Run) -> None:
    ran = run("%parallel_pool -n 1 --init-timeout 20 --stuck-after 3 --init 'import math'")
    assert ran.error is None, ran.shown
    magics = shell.magics_manager.registry["ParallelMagics"]
    pool = current_pool()
    assert pool.workers == 1
    assert magics.notebook_pool.options == {
        "workers": 1, "init": "import math", "init_timeout": 20.0}
    assert magics.notebook_pool.stuck_after == 3.0
    assert run("%parallel_pool --workers 2").error is None
    assert current_pool() is not pool and pool.closed and current_pool().workers == 2


def test_a_new_pool_forgets_the_last_run(shell: InteractiveShell, run: Run) -> None:
    assert run("%parallel_map abs [-1, -2]").error is None
    assert "items / requests     2 / 2" in run("%parallel_profile").out
    assert run("%parallel_pool -n 2").error is None
    assert "No parallel run to profile yet" in run("%parallel_profile").out


# ------------------------------------------------------------------- errors

def test_a_remote_error_shows_once_with_the_cell_line_that_made_the_call(
        run: Run) -> None:
    assert run("%%parallel\ndef boom(x):\n    raise ValueError(f'bad {x}')\n").error is None
    ran = run("first_line = 1\n%parallel_map boom [7]")
    assert isinstance(ran.error, RemoteError), ran.shown
    assert ran.shown.count("RemoteError in worker") == 1, ran.shown
    assert ran.shown.count("ValueError: bad 7") == 1, ran.shown
    assert re.search(r"Cell In\[\d+\], line 2", ran.shown), ran.shown
    assert "%parallel_map boom [7]" in ran.shown or "run_line_magic" in ran.shown
    assert "pool.py" not in ran.shown and "magics.py" not in ran.shown
    assert sys.last_exc is ran.error  # what %debug and %pdb read
    tb = run("%tb")
    assert "RemoteError in worker" in tb.shown and "ValueError: bad 7" in tb.shown


def test_a_target_no_worker_can_import_shows_one_line_and_no_items_done(run: Run) -> None:
    # A typo in a module name: the message says it all; interp-rpc's frames
    # and a summary claiming the items were done said otherwise.
    ran = run("first_line = 1\n%parallel_map no_such_module_here.process [1, 2]")
    assert isinstance(ran.error, TargetResolutionError), ran.shown
    assert ("TargetResolutionError: cannot resolve target 'no_such_module_here.process': "
            "no module named 'no_such_module_here'") in ran.shown
    assert re.search(r"Cell In\[\d+\], line 2", ran.shown), ran.shown
    assert "map_magic.py" not in ran.shown and "map.py" not in ran.shown, ran.shown
    assert "0 of 2 items" in ran.shown, ran.shown


@pytest.mark.parametrize("quote", ["'", '"'])
def test_a_quoted_target_is_the_dotted_path_inside(run: Run, quote: str) -> None:
    ran = run(f"%parallel_map {quote}math.sqrt{quote} [4, 9]")
    assert ran.error is None, ran.shown
    assert ran.result.result == [2.0, 3.0]


def test_the_extension_leaves_other_exception_handlers_alone(shell: InteractiveShell) -> None:
    def handler(*args: object, **kwargs: object) -> None:
        pass

    shell.run_line_magic("unload_ext", "interp_rpc")
    shell.set_custom_exc((LookupError,), handler)
    try:
        shell.run_line_magic("load_ext", "interp_rpc")
        assert shell.custom_exceptions == (LookupError,)
        shell.run_line_magic("unload_ext", "interp_rpc")
        assert shell.custom_exceptions == (LookupError,)
    finally:
        shell.set_custom_exc((), None)
        if "interp_rpc" not in shell.extension_manager.loaded:
            shell.run_line_magic("load_ext", "interp_rpc")
        shell.run_line_magic("parallel_pool", "-n 2")


def test_ctrl_c_keeps_the_finished_workers_output_and_names_the_busy_ones(
        run: Run, tmp_path: Path) -> None:
    started, gate = tmp_path / "started", tmp_path / "gate"
    assert run("%parallel --targets 0 HOLD = None").error is None
    assert run(f"%parallel --targets 1 HOLD = ({str(started)!r}, {str(gate)!r})").error is None
    pool = current_pool()
    done_before = pool.status()[0].calls_done

    def interrupt_once_worker_0_is_done() -> None:
        wait_until(lambda: started.exists() and pool.status()[0].calls_done > done_before,
                   what="worker 0 finishing while worker 1 holds")
        _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt_once_worker_0_is_done)
    interrupter.start()
    try:
        ran = run("%%parallel\nimport os, time\nprint('ran here')\nif HOLD:\n"
                  "    open(HOLD[0], 'w').close()\n"
                  "    while not os.path.exists(HOLD[1]):\n        time.sleep(0.01)\n"
                  "'its result'\n")
    finally:
        interrupter.join()
        gate.touch()
    assert isinstance(ran.error, KeyboardInterrupt), ran.shown
    assert "[worker 0]\nran here\nOut[worker 0]: 'its result'\n" in ran.out
    assert "Interrupted: worker 1 still running the cell" in ran.err
    assert "what worker 0, which finished, printed is above" in ran.err
    wait_until(lambda: pool.status()[1].state == "idle", what="worker 1 finishing")


def test_the_shareability_tree_is_shown_once(run: Run) -> None:
    ran = run("import threading\n"
              "%parallel_map len [{'a': 1, 'b': {'handle': threading.Lock()}}]")
    assert isinstance(ran.error, ShareabilityError), ran.shown
    assert ran.shown.count("── ['handle']") == 1, ran.shown  # the tree's culprit line
    assert ran.shown.count("\narguments\n") == 1, ran.shown  # the tree's root
    assert "└── ['handle']  ◀ lock" in ran.shown


# -------------------------------------------------------------- %%parallel

def test_identical_output_of_many_workers_is_shown_once(run: Run) -> None:
    ran = run("%%parallel\nprint('same everywhere')\n")
    assert ran.error is None, ran.shown
    assert ran.out == "[workers 0-1]\nsame everywhere\n"


def test_targets_picks_workers(run: Run) -> None:
    ran = run("%%parallel --targets 1\nprint('only here')\n")
    assert ran.out == "[worker 1]\nonly here\n"


@pytest.mark.parametrize("targets", ["0-1", "0,1", "\"1, 0\"", "0-0,1"])
def test_targets_takes_ranges_as_errors_name_workers(run: Run, targets: str) -> None:
    # "RemoteError in workers 0-1": the same words select them.
    ran = run(f"%%parallel --targets {targets}\nprint('here')\n")
    assert ran.error is None, ran.shown
    assert ran.out == "[workers 0-1]\nhere\n"


def test_a_one_line_parallel_runs_one_statement_everywhere(
        shell: InteractiveShell, run: Run) -> None:
    assert run("%parallel answer_everywhere = 'a  b'").error is None
    ran = run("%parallel print(answer_everywhere)")
    assert ran.out == "[workers 0-1]\na  b\n"


def test_an_error_in_every_worker_is_shown_once_and_kept_per_worker(
        run: Run) -> None:
    ran = run("%%parallel\nprint('before')\nraise KeyError('gone')\n")
    assert isinstance(ran.error, ParallelCellError), ran.shown
    assert set(ran.error.errors) == {0, 1}
    assert all(isinstance(e, RemoteError) for e in ran.error.errors.values())
    assert ran.shown.count("KeyError: 'gone'") == 1, ran.shown
    assert "RemoteError in workers 0-1 · %%parallel" in ran.shown
    assert "[workers 0-1]\nbefore\n" in ran.out


def test_the_remote_traceback_of_a_cell_shows_its_source_line(run: Run) -> None:
    ran = run("%%parallel --targets 0\nvalue = 1\nraise RuntimeError('line three')\n")
    assert isinstance(ran.error, ParallelCellError)
    # Named and numbered as IPython shows the cell: its third line raised.
    number = ran.result.execution_count
    assert re.search(rf"^  Cell In\[{number}\], line 3, in <module>\n"
                     r"    raise RuntimeError\('line three'\)$", ran.shown, re.M), ran.shown


def test_a_syntax_error_is_shown_once_and_nothing_runs(run: Run) -> None:
    pool = current_pool()
    calls = len(pool.call_records())
    ran = run("%%parallel\ndef broken(:\n    pass\n")
    assert isinstance(ran.error, SyntaxError), ran.shown
    assert ran.shown.count("SyntaxError") == 1, ran.shown
    assert len(pool.call_records()) == calls


def test_a_cell_is_transformed_as_ipython_transforms_cells(run: Run) -> None:
    # Pasted doctest prompts are stripped by IPython's cell transforms.
    ran = run("%%parallel --targets 0\n>>> pasted = 5\n>>> print(pasted + 1)\n")
    assert ran.error is None, ran.shown
    assert ran.out == "[worker 0]\n6\n"


def test_a_cells_last_expression_is_shown_once_per_distinct_value(run: Run) -> None:
    # As ipyparallel's %%px shows each engine's Out, and IPython a cell's.
    ran = run("%%parallel\nx = 6\nx * 7\n")
    assert ran.error is None, ran.shown
    assert ran.out == "Out[workers 0-1]: 42\n"
    ran = run("%%parallel\nimport threading\nthreading.get_ident()\n")
    assert ran.out.count("Out[worker ") == 2, ran.out  # one per worker: they differ


@pytest.mark.parametrize("cell", [
    "x = 1",  # not an expression
    "print('printed')",  # None
    "6 * 7;",  # hidden, as in IPython
    "6 * 7;  # a comment after the semicolon",
    "for i in range(2):\n    i",  # the last statement is a loop
])
def test_a_cell_without_a_result_shows_none(run: Run, cell: str) -> None:
    ran = run(f"%%parallel\n{cell}\n")
    assert ran.error is None, ran.shown
    assert "Out[" not in ran.shown, ran.shown


def test_a_semicolon_inside_a_string_still_shows_the_result(run: Run) -> None:
    ran = run("%%parallel --targets 0\n'a;'  # ends with ;\n")
    assert ran.out == "Out[worker 0]: 'a;'\n", ran.shown


def test_a_result_several_lines_long_starts_below_its_heading(run: Run) -> None:
    ran = run("%%parallel --targets 1\nclass Tall:\n    def __repr__(self):\n"
              "        return 'one\\ntwo'\nTall()\n")
    assert ran.out == "Out[worker 1]:\none\ntwo\n", ran.shown


def test_a_long_result_is_abbreviated_in_the_worker_as_ipython_abbreviates(run: Run) -> None:
    # Each worker sends a bounded text, not the whole repr of ten million items.
    ran = run("%%parallel\nlist(range(10**7))\n")
    assert ran.error is None, ran.shown
    shown = "[" + ", ".join(map(str, range(MAX_ITEMS))) + ", ...]"
    assert ran.out == f"Out[workers 0-1]: {shown}\n", ran.shown[:200]


def test_the_result_comes_after_the_output_and_before_nothing_of_a_failure(run: Run) -> None:
    ran = run("%%parallel\nimport sys\nprint('said')\n"
              "if sys.modules['__main__'].__dict__.get('_fails') is None: pass\n'done'\n")
    assert ran.out == "[workers 0-1]\nsaid\nOut[workers 0-1]: 'done'\n", ran.shown
    ran = run("%%parallel\n1 / 0\n")  # the last expression raises: no result
    assert isinstance(ran.error, ParallelCellError), ran.shown
    assert "Out[" not in ran.shown, ran.shown
    assert ran.shown.count("ZeroDivisionError: division by zero") == 1, ran.shown


def test_a_failing_repr_is_the_cells_error(run: Run) -> None:
    ran = run("%%parallel --targets 0\nclass Bad:\n    def __repr__(self):\n"
              "        raise ValueError('no repr')\nBad()\n")
    assert isinstance(ran.error, ParallelCellError), ran.shown
    assert "ValueError: no repr" in ran.shown, ran.shown


# --------------------------------------------------------------- results

def test_out_stores_the_results_in_a_variable(shell: InteractiveShell, run: Run) -> None:
    ran = run("returned = %parallel_map -o squares abs [-1, -2, -3]")
    assert ran.error is None, ran.shown
    assert shell.user_ns["squares"] == [1, 2, 3]
    assert shell.user_ns["returned"] is None


def test_a_failed_map_keeps_its_finished_results(shell: InteractiveShell, run: Run) -> None:
    assert run("%%parallel\ndef fails_on_3(x):\n    if x == 3:\n        raise ValueError(x)\n"
               "    return x * 10\n").error is None
    ran = run("%parallel_map --chunksize 1 -o partial fails_on_3 range(6)")
    assert isinstance(ran.error, RemoteError), ran.shown
    assert ran.error.item_index == 3
    assert shell.user_ns["partial"] == ran.error.partial_results
    assert ran.error.partial_results == [0, 10, 20, MISSING, MISSING, MISSING]
    assert "partial: the 3 results before the failed item are stored" in ran.err


def test_a_function_of_the_notebook_shows_its_source_lines_in_the_remote_traceback(
        run: Run) -> None:
    ran = run("def picky(x):\n    if x:\n        raise ValueError('picky about ' + str(x))\n"
              "    return x\n%parallel_map picky [0, 1]")
    assert isinstance(ran.error, RemoteError), ran.shown
    assert "raise ValueError('picky about ' + str(x))" in ran.error.remote_traceback
    assert re.search(r"^  Cell In\[\d+\], line 3, in picky\n"
                     r"    raise ValueError\('picky about ' \+ str\(x\)\)$", ran.shown, re.M), \
        ran.shown


# ------------------------------------------------- %parallel_map: output, errors

def test_what_workers_print_during_a_map_shows_under_worker_and_item(run: Run) -> None:
    assert run("%%parallel\nimport sys\ndef chatty(x):\n    print('working on', x)\n"
               "    print('warning', x, file=sys.stderr)\n    return x\n").error is None
    ran = run("%parallel_map --chunksize 2 chatty range(6)")
    assert ran.error is None, ran.shown
    assert ran.result.result == list(range(6))
    # Every item's line, under its heading; each worker's items in order.
    blocks = re.findall(r"\[worker (\d), item (\d)\]\nworking on (\d)\n", ran.out)
    assert sorted(int(item) for _, item, _ in blocks) == list(range(6)), ran.out
    assert all(item == printed for _, item, printed in blocks), ran.out
    for worker in {w for w, _, _ in blocks}:
        items = [int(item) for w, item, _ in blocks if w == worker]
        assert items == sorted(items), ran.out
    assert len(re.findall(r"\[worker \d, item \d\]\nwarning \d\n", ran.err)) == 6, ran.err


def test_a_heading_starts_a_line_after_output_without_a_newline(run: Run) -> None:
    assert run("%%parallel\ndef no_newline(x):\n    print('part', x, end='')\n"
               "    return x\n").error is None
    ran = run("%parallel_map --chunksize 1 no_newline [0, 1]")
    assert ran.error is None, ran.shown
    # ... and the output ends its last line, before what follows the map.
    assert re.match(r"\[worker \d, item 0\]\npart 0\n\[worker \d, item 1\]\npart 1\n",
                    ran.out) or re.match(
        r"\[worker \d, item 1\]\npart 1\n\[worker \d, item 0\]\npart 0\n", ran.out), ran.out


def test_errors_collect_returns_each_failure_in_its_place_and_goes_on(
        shell: InteractiveShell, run: Run) -> None:
    check_errors_collect(shell, run)


def test_errors_takes_only_raise_or_collect(run: Run) -> None:
    ran = run("%parallel_map --errors=ignore abs [1]")
    assert isinstance(ran.error, UsageError) or "invalid choice: 'ignore'" in ran.shown, ran.shown
    assert "invalid choice: 'ignore'" in ran.shown


def test_ctrl_c_stops_a_running_chunk_before_its_next_item(run: Run, tmp_path: Path) -> None:
    started, gate = tmp_path / "started", tmp_path / "gate"
    assert run(f"%%parallel\nimport os, time, pathlib\nRAN_IN = pathlib.Path({str(tmp_path)!r})\n"
               "def held(x):\n    (RAN_IN / f'ran-{x}').touch()\n    if x == 0:\n"
               f"        open({str(started)!r}, 'w').close()\n"
               f"        while not os.path.exists({str(gate)!r}):\n"
               "            time.sleep(0.01)\n    return x\n").error is None
    pool = current_pool()

    def interrupt_once_item_0_runs() -> None:
        wait_until(started.exists, what="item 0 starting")
        _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt_once_item_0_runs)
    interrupter.start()
    try:
        ran = run("%parallel_map --chunksize 10 held range(10)")
    finally:
        interrupter.join()
        gate.touch()
    assert isinstance(ran.error, KeyboardInterrupt), ran.shown
    assert "Interrupted: 0 of 10 items had completed" in ran.err
    assert re.search(r"worker \d is still running held \(its chunk from item 0, for [\d.]+ s\); "
                     r"it stops after its current item", ran.err), ran.err
    wait_until(lambda: all(w.state == "idle" for w in pool.status()), what="workers idle")
    # The chunk held item 0 when Ctrl-C came: it ran no item after it.
    assert sorted(p.name for p in tmp_path.glob("ran-*")) == ["ran-0"]
