"""Post-mortem debugging of a worker's last failure on its own frames
(interp_rpc/_pool/post_mortem.py): scripted sessions, as a person types them."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import FIXTURES, POLL_LIMIT, pool_for_fixture, wait_until

from interp_rpc import DebugUnavailableError, InterpreterPool, RemoteError
from interp_rpc._pool import post_mortem

INIT = "import debugtasks, pooltasks"


@pytest.fixture
def two() -> Iterator[InterpreterPool]:
    yield from pool_for_fixture(2, INIT)


class Person:
    """Types ``commands`` one at a time at each prompt (then Ctrl-C, or the
    given exception), and keeps what pdb showed."""

    def __init__(self, *commands: str, then: type[BaseException] = KeyboardInterrupt) -> None:
        self.commands = list(commands)
        self.then = then
        self.prompts: list[str] = []
        self.shown: list[str] = []

    def read(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if not self.commands:
            raise self.then()
        command = self.commands.pop(0)
        self.shown.append(prompt + command + "\n")
        return command

    def write(self, text: str) -> None:
        self.shown.append(text)

    @property
    def transcript(self) -> str:
        return "".join(self.shown)


def failed_map(pool: InterpreterPool, target: str = "debugtasks.crunch",
               items: range = range(6)) -> RemoteError:
    with pytest.raises(RemoteError) as caught:
        list(pool.map(target, items, chunksize=1))
    return caught.value


def debug(error: RemoteError, person: Person) -> str:
    return post_mortem.debug_error(error, read=person.read, write=person.write)


def test_p_shows_the_worker_local_value_of_the_failing_item(two: InterpreterPool) -> None:
    error = failed_map(two)
    assert error.item_index == 3
    person = Person("p secret", "p x", "q")
    assert debug(error, person) == "debugged"
    text = person.transcript
    assert "ZeroDivisionError" in text
    assert "-> return secret // (x - 3)" in text
    assert "(Pdb) p secret\n21\n" in text
    assert "(Pdb) p x\n3\n" in text
    assert person.prompts == ["(Pdb) "] * 3


def test_up_down_list_and_where_walk_the_worker_frames(two: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as caught:
        two.call("debugtasks.outer", 5)
    person = Person("where", "p inner_value", "up", "p outer_value", "list", "down",
                    "p inner_value", "up", "up", "q")
    debug(caught.value, person)
    text = person.transcript
    where = text.split("(Pdb) where\n", 1)[1].split("(Pdb) ", 1)[0]
    assert "outer()" in where and "inner()" in where
    assert "main.py" not in where  # the worker's own frames are not the user's
    assert "(Pdb) p inner_value\n10\n" in text
    assert "(Pdb) p outer_value\n105\n" in text
    assert "def outer(x: int) -> int:" in text  # list, in outer's frame
    assert "Oldest frame" in text  # the target's frame is the top


def test_ctrl_c_at_the_prompt_ends_the_session_and_the_worker_serves_again(
        two: InterpreterPool) -> None:
    error = failed_map(two)
    person = Person("p secret")  # then Ctrl-C
    assert debug(error, person) == "debugged"
    assert "21" in person.transcript
    worker = error.worker
    assert worker is not None
    assert two.run_everywhere("pooltasks.add", (2, 3), workers=[worker]).wait() == {worker: 5}
    # Its failure is still kept: a new session opens on the same frames.
    again = Person("p secret", "q")
    debug(error, again)
    assert "(Pdb) p secret\n21\n" in again.transcript


def test_end_of_input_ends_the_session(two: InterpreterPool) -> None:
    error = failed_map(two)
    person = Person(then=EOFError)
    assert debug(error, person) == "debugged"
    assert person.prompts == ["(Pdb) "]


def test_the_worker_shows_as_debugging_while_the_others_serve(two: InterpreterPool) -> None:
    error = failed_map(two)
    worker = error.worker
    assert worker is not None
    other = 1 - worker
    at_prompt = threading.Event()
    leave = threading.Event()
    seen: dict[str, object] = {}

    def read(prompt: str) -> str:
        at_prompt.set()
        assert leave.wait(POLL_LIMIT)
        return "q"

    session = threading.Thread(target=post_mortem.debug_error, args=(error,),
                               kwargs={"read": read, "write": lambda text: None})
    session.start()
    try:
        assert at_prompt.wait(POLL_LIMIT)
        status = {w.index: w for w in two.status()}
        seen["state"] = status[worker].displayed_state(stuck_after=0.0)
        seen["target"] = status[worker].target
        seen["other"] = two.run_everywhere("pooltasks.add", (1, 1), workers=[other]).wait()
        seen["table"] = two.render_status()[1]
    finally:
        leave.set()
        session.join(POLL_LIMIT)
    assert seen["state"] == "debugging"  # never "stuck", however long it takes
    assert seen["target"] == "post-mortem of debugtasks.crunch"
    assert seen["other"] == {other: 2}
    assert "debugging" in str(seen["table"])
    wait_until(lambda: two.status()[worker].state == "idle", what="the session's end")


def test_two_workers_failing_and_debugging_the_second(two: InterpreterPool) -> None:
    first = two.run_everywhere("debugtasks.crunch", (3,), workers=[0]).wait()[0]
    second = two.run_everywhere("debugtasks.outer", (4,), workers=[1]).wait()[1]
    assert isinstance(first, RemoteError) and isinstance(second, RemoteError)
    assert (first.worker, second.worker) == (0, 1)
    kept = post_mortem.kept_failures(two)
    assert {w: d["target"] for w, d in kept.items()} == {0: "debugtasks.crunch",
                                                          1: "debugtasks.outer"}
    person = Person("p inner_value", "q")
    debug(second, person)
    assert "(Pdb) p inner_value\n8\n" in person.transcript
    # The first worker still keeps its own failure, by worker as by error.
    by_worker = Person("p secret", "q")
    post_mortem.debug_worker(two, 0, read=by_worker.read, write=by_worker.write)
    assert "(Pdb) p secret\n21\n" in by_worker.transcript


def test_a_later_failure_replaces_the_kept_one(two: InterpreterPool) -> None:
    with pytest.raises(RemoteError) as caught:
        two.call("debugtasks.crunch", 3)
    older = caught.value
    worker = older.worker
    assert worker is not None
    failure = two.run_everywhere("debugtasks.outer", (1,), workers=[worker]).wait()[worker]
    assert isinstance(failure, RemoteError)
    with pytest.raises(DebugUnavailableError, match=f"worker {worker} has failed again"):
        debug(older, Person("q"))
    person = Person("p inner_value", "q")
    debug(failure, person)
    assert "(Pdb) p inner_value\n2\n" in person.transcript


def test_clear_releases_the_frames(two: InterpreterPool) -> None:
    error = failed_map(two)
    assert post_mortem.clear_failures(two) == [error.worker]
    assert post_mortem.kept_failures(two) == {}
    with pytest.raises(DebugUnavailableError, match="keeps no failure"):
        debug(error, Person("q"))
    assert post_mortem.clear_failures(two) == []


def test_a_closed_pool_has_no_frames_to_debug() -> None:
    pool = InterpreterPool(workers=1, init=INIT)
    error = failed_map(pool, items=range(4))
    pool.close()
    with pytest.raises(DebugUnavailableError, match="is closed"):
        debug(error, Person("q"))


def test_a_call_with_views_of_the_caller_memory_is_not_kept(two: InterpreterPool) -> None:
    big = bytearray(b"abcd" * 64 * 1024)  # large enough to go without copying
    with pytest.raises(RemoteError) as caught:
        two.call("debugtasks.fail_holding_a_view", memoryview(big))
    with pytest.raises(DebugUnavailableError, match="did not keep this failure: its "
                       "arguments included large buffers"):
        debug(caught.value, Person("q"))


def test_an_error_of_another_process_says_why_it_cannot_be_debugged(
        two: InterpreterPool) -> None:
    error = failed_map(two)
    assert error.post_mortem is not None
    error.post_mortem = {**error.post_mortem, "pid": error.post_mortem["pid"] + 1}
    with pytest.raises(DebugUnavailableError, match="raised in another process"):
        debug(error, Person("q"))
    bare = RemoteError(remote_type_name="ValueError", remote_module="builtins",
                       remote_message="x", remote_traceback="")
    with pytest.raises(DebugUnavailableError, match="carries no record"):
        bare.debug()


def test_a_worker_that_does_not_exist_is_named(two: InterpreterPool) -> None:
    with pytest.raises(DebugUnavailableError, match="there is no worker 7"):
        post_mortem.debug_worker(two, 7, read=Person().read)


def test_a_stop_of_the_map_does_not_replace_the_real_failure(two: InterpreterPool) -> None:
    # A map whose item 3 fails stops its other chunks; a worker's stopped
    # chunk must not take the place of the failure it keeps.
    error = failed_map(two, items=range(40))
    person = Person("p x", "q")
    debug(error, person)
    assert "(Pdb) p x\n3\n" in person.transcript



SCRIPT = """
from interp_rpc import InterpreterPool, RemoteError

if __name__ == "__main__":
    with InterpreterPool(2, init="import debugtasks") as pool:
        try:
            pool.call("debugtasks.outer", 4)
        except RemoteError as err:
            err.debug()
    print("after the session")
"""


@pytest.mark.parametrize("typed", ["p inner_value\nup\np outer_value\nq\n",
                                   "p inner_value\nup\np outer_value\n"])  # then end of input
def test_err_debug_in_a_script_reads_the_script_stdin(tmp_path: Path, typed: str) -> None:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    path = os.pathsep.join(filter(None, [str(FIXTURES), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(script)], input=typed, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 0, done.stderr
    assert "-> raise ValueError(f\"inner refused {inner_value}\")" in done.stdout
    assert "(Pdb) 8\n" in done.stdout  # input() writes the prompt; the answer follows it
    assert "(Pdb) 104\n" in done.stdout
    assert done.stdout.endswith("after the session\n")


def test_a_read_that_fails_ends_the_session_in_the_worker(two: InterpreterPool) -> None:
    error = failed_map(two)

    def broken_read(prompt: str) -> str:
        raise OSError("stdin is closed")

    with pytest.raises(OSError, match="stdin is closed"):
        post_mortem.debug_error(error, read=broken_read, write=lambda text: None)
    worker = error.worker
    assert worker is not None
    wait_until(lambda: two.status()[worker].state == "idle", what="the session's end")
    assert two.run_everywhere("pooltasks.add", (1, 2), workers=[worker]).wait() == {worker: 3}


def test_ctrl_c_while_the_worker_runs_a_command_ends_at_its_next_prompt(
        two: InterpreterPool) -> None:
    import _thread

    error = failed_map(two)
    person = Person("!import time; time.sleep(2)", "p secret")
    asked = person.read

    def read_then_press_ctrl_c(prompt: str) -> str:
        command = asked(prompt)
        threading.Timer(0.5, _thread.interrupt_main).start()  # while the worker sleeps
        return command

    assert post_mortem.debug_error(error, read=read_then_press_ctrl_c,
                                   write=person.write) == "debugged"
    assert person.prompts == ["(Pdb) "]  # the command after Ctrl-C was never asked
    assert "--KeyboardInterrupt-- the session ends once the worker's command returns" in (
        person.transcript)
    worker = error.worker
    assert worker is not None
    wait_until(lambda: two.status()[worker].state == "idle", what="the session's end")


class _FinishesWhenAsked:
    """A session's call that finishes, its last message sent, just as the
    caller asks whether it is done (after an empty wait for a message)."""

    def __init__(self, output: object, last: tuple[str, str] | None) -> None:
        self._output = output
        self._last = last

    @property
    def done(self) -> bool:
        if self._last is not None:
            self._output.put(self._last)  # type: ignore[attr-defined]
            self._last = None
        return True


def _relay(last: tuple[str, str] | None) -> str:
    from concurrent import interpreters

    output = interpreters.create_queue()
    return post_mortem._converse(_FinishesWhenAsked(output, last), interpreters.create_queue(),
                                 output, Person().read, lambda text: None)


def test_the_last_message_of_a_call_that_just_finished_is_read() -> None:
    assert _relay(("ended", "replaced")) == "replaced"


def test_a_call_that_ended_without_a_word_is_not_waited_for_forever() -> None:
    assert _relay(None) == post_mortem._NO_WORD
