"""Targets of the ProcessPool tests: what only a process can do to itself, and
what it prints."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time


def pid() -> int:
    return os.getpid()


def exit_with(code: int) -> None:
    os._exit(code)


def segfault() -> None:
    ctypes.string_at(0)  # reads address 0: SIGSEGV


def sleep_then(seconds: float, value: object = None) -> object:
    time.sleep(seconds)
    return value


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def singular_inverse() -> object:
    import numpy

    return numpy.linalg.inv(numpy.zeros((2, 2)))


def column_sums(rows: int) -> list[float]:
    import numpy

    return [float(x) for x in numpy.arange(rows * 3, dtype=float).reshape(rows, 3).sum(axis=0)]


def chatty(x: int) -> int:
    print("item", x)
    print("warning", x, file=sys.stderr)
    return x


def print_from_threads(threads: int, lines: int = 200) -> int:
    """Print ``lines`` lines from each of ``threads`` threads at once."""
    def chat(who: int) -> None:
        for n in range(lines):
            print(f"thread {who} line {n}")

    started = [threading.Thread(target=chat, args=(who,)) for who in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return threads * lines


def print_text(text: str) -> str:
    print(text, end="")
    return text
