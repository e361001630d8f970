"""The worker's side of post-mortem debugging (_worker/post_mortem.py), run
in this interpreter: what a worker keeps, and the pdb session over queues."""

from __future__ import annotations

import importlib.util
import threading
from concurrent import interpreters
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import interp_rpc

SOURCE = Path(interp_rpc.__file__).parent / "_worker" / "post_mortem.py"


@pytest.fixture
def worker() -> ModuleType:
    """A fresh copy of the module, as a new worker loads it."""
    spec = importlib.util.spec_from_file_location("_test_worker_post_mortem", SOURCE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def failing(value: int) -> BaseException:
    secret = value * 3
    try:
        raise KeyError(secret)
    except KeyError as exc:
        return exc


def session(worker: ModuleType, expected: int | None, commands: list[str | None]
            ) -> tuple[str, list[tuple[Any, ...]]]:
    """debug() in a thread, answered with ``commands`` at each read; (how it
    ended, every message it sent)."""
    to_worker, from_worker = interpreters.create_queue(), interpreters.create_queue()
    for command in commands:
        to_worker.put(command)
    ended: list[str] = []
    thread = threading.Thread(
        target=lambda: ended.append(worker.debug(expected, to_worker.id, from_worker.id)))
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    messages = []
    while True:
        try:
            messages.append(from_worker.get_nowait())
        except interpreters.QueueEmpty:
            break
    return ended[0], messages


def text_of(messages: list[tuple[Any, ...]]) -> str:
    return "".join(m[1] for m in messages if m[0] == "output")


def test_keep_numbers_failures_and_says_where_they_are(worker: ModuleType) -> None:
    first = worker.keep(failing(1), ("path", "m.f"), False)
    second = worker.keep(failing(2), ("code", b"", "g.<locals>.h"), False)
    assert second["failure"] == first["failure"] + 1
    assert second["interpreter"] == interpreters.get_current().id
    assert set(second) == {"pid", "interpreter", "failure"}
    assert worker.describe() == {"failure": second["failure"], "target": "g.<locals>.h",
                                 "error": "KeyError: 6"}


def test_a_session_reads_commands_and_sends_prompts_and_output(worker: ModuleType) -> None:
    handle = worker.keep(failing(5), ("path", "m.f"), False)
    how, messages = session(worker, handle["failure"], ["p secret", "p value", "q"])
    assert how == "debugged"
    assert messages[-1] == ("ended", "debugged")
    assert [m for m in messages if m[0] == "read"] == [("read",)] * 3
    text = text_of(messages)
    assert "raise KeyError(secret)" in text
    assert "(Pdb) 15\n(Pdb) 5\n(Pdb) " in text
    # Each read comes right after its prompt, which has no newline.
    before_first_read = messages[:messages.index(("read",))]
    assert text_of(before_first_read).endswith("(Pdb) ")


def test_end_of_input_quits(worker: ModuleType) -> None:
    worker.keep(failing(1), ("path", "m.f"), False)
    how, messages = session(worker, None, [worker.END_OF_INPUT])
    assert how == "debugged"
    assert [m for m in messages if m[0] == "read"] == [("read",)]


def test_what_prints_during_the_session_goes_to_the_caller(worker: ModuleType) -> None:
    worker.keep(failing(1), ("path", "m.f"), False)
    _, messages = session(worker, None, ["!print('from the worker', secret)", "q"])
    assert "from the worker 3\n" in text_of(messages)


def test_nothing_kept_replaced_and_not_kept_end_at_once(worker: ModuleType) -> None:
    assert session(worker, None, [])[0] == "nothing kept"
    first = worker.keep(failing(1), ("path", "m.f"), False)
    worker.keep(failing(2), ("path", "m.f"), False)
    assert session(worker, first["failure"], [])[0] == "replaced"
    refused = worker.keep(failing(3), ("path", "m.f"), True)
    assert refused["not_kept"] == worker.BUFFERS_NOT_KEPT
    assert worker.describe() is None  # the one before is released all the same
    how, messages = session(worker, refused["failure"], [])
    assert how == f"not kept: {worker.BUFFERS_NOT_KEPT}"
    assert messages == [("ended", how)]


def test_clear_releases_the_exception_and_its_frames(worker: ModuleType) -> None:
    import gc
    import weakref

    class Marker:
        pass

    def fail_holding(marker: Marker) -> BaseException:
        try:
            raise RuntimeError("held")
        except RuntimeError as exc:
            return exc

    marker = Marker()
    alive = weakref.ref(marker)
    worker.keep(fail_holding(marker), ("path", "m.f"), False)
    del marker
    gc.collect()
    assert alive() is not None  # the failing frame's local, kept
    assert worker.clear() is True
    gc.collect()
    assert alive() is None
    assert worker.clear() is False


def test_a_parallel_cell_is_named_as_the_magic(worker: ModuleType) -> None:
    worker.keep(failing(1), ("path", "_interp_rpc_worker.run_cell"), False)
    assert worker.describe()["target"] == "%%parallel"
