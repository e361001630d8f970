"""Targets of the ProcessPool tests: what only a process can do to itself."""

from __future__ import annotations

import ctypes
import os
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
