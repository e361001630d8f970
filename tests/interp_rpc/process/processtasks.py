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


def echo(value: object) -> object:
    return value


def echo_info(value: object) -> tuple[str, bool, object]:
    """What a worker received: its type's name, whether an array is
    writeable (None: not an array), and the value."""
    flags = getattr(value, "flags", None)
    return type(value).__name__, None if flags is None else bool(flags.writeable), value


#: What keep() and keep_new() hold, to show that values alias nothing across.
_kept: list[object] = []


def keep(value: object) -> None:
    _kept[:] = [value]


def kept() -> object:
    return _kept[0]


def keep_new(size: int) -> object:
    """A new float64 array of ``size`` ones, kept here and returned."""
    import numpy

    _kept[:] = [numpy.ones(size)]
    return _kept[0]


def fill_kept(value: float) -> None:
    _kept[0][...] = value  # type: ignore[index]


def full(size: int, value: float) -> object:
    """A new float64 array of ``size`` items, each ``value``."""
    import numpy

    return numpy.full(size, value)


def add_in_place(array: object, value: float) -> float:
    """Change the argument in place (it must be writeable); its new sum."""
    array += value  # type: ignore[operator]
    return float(array.sum())  # type: ignore[attr-defined]


def exit_holding(value: object, code: int) -> None:
    os._exit(code)


def memory_files() -> list[str]:
    """This process's mappings and descriptors of framing's memory files."""
    return memory_files_of(os.getpid())


def memory_files_of(pid: int) -> list[str]:
    """Process ``pid``'s mappings and descriptors of framing's memory files
    (empty once it has ended)."""
    found: list[str] = []
    try:
        with open(f"/proc/{pid}/maps") as maps:
            found += [line.split(None, 5)[-1].strip() for line in maps
                      if "interp-rpc-part" in line]
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except FileNotFoundError:
                continue
            if "interp-rpc-part" in target:
                found.append(f"fd {fd}: {target}")
    except (FileNotFoundError, ProcessLookupError):
        return []
    return found


def memory_file_ids() -> set[int]:
    """This process's memory files (shared segments), by inode."""
    return memory_file_ids_of(os.getpid())


def memory_file_ids_of(pid: int) -> set[int]:
    """The inodes of the memory files that process ``pid`` maps or holds a
    descriptor of (empty once it has ended): the same segment mapped twice,
    or held and mapped, counts once."""
    found: set[int] = set()
    try:
        with open(f"/proc/{pid}/maps") as maps:
            found |= {int(line.split()[4]) for line in maps if "interp-rpc-part" in line}
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if "interp-rpc-part" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                    found.add(os.stat(f"/proc/{pid}/fd/{fd}").st_ino)
            except FileNotFoundError:
                continue
    except (FileNotFoundError, ProcessLookupError):
        return set()
    return found


def memory_files_while_holding(value: object) -> list[str]:
    """memory_files() while the argument is alive."""
    held = memory_files()
    del value
    return held


def print_later(lines: int, interval: float = 0.01) -> int:
    """Return at once, leaving a thread that prints ``lines`` numbered
    lines, one each ``interval`` seconds, to the output this call had."""
    stream = sys.stdout

    def chat() -> None:
        for n in range(lines):
            time.sleep(interval)
            print(f"later {n}", file=stream, flush=True)

    threading.Thread(target=chat, daemon=True).start()
    return lines


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
