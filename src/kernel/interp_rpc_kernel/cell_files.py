"""The file name each cell's code is compiled under, as the Jupyter debug
protocol names cells.

A debugger frontend (JupyterLab) sets a breakpoint in a cell by the path of a
file that holds the cell's code: it computes that path itself, from the hash
method, seed, prefix and suffix the kernel gives in its debugInfo reply, and
the kernel writes the cell there on dumpCell. The debugger stops at the
breakpoint only if the code the cell runs was compiled under that same path,
so every cell is compiled under it, from the first, whether a debugger is
attached or not: a function a cell defined before the debugger started can
still stop at a breakpoint later. Tracebacks still say `Cell In[n]`: IPython
maps the name back to the cell's number.

No IPython here: the debugger imports this module, maybe while the kernel
still imports IPython on another thread (cell_compiler.py is IPython's side).

The names are ipykernel's: MurmurHash2 (x86, 32 bits) of the cell's UTF-8
text, with ipykernel's seed, which is what JupyterLab computes.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from array import array
from functools import cache

#: The seed of the cells' hash; JupyterLab reads it from debugInfo.
HASH_SEED = 0xC70F6907
#: What the debugInfo reply calls the hash.
HASH_METHOD = "Murmur2"
#: The cells' file suffix.
CELL_FILE_SUFFIX = ".py"

_MURMUR_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF
_LONE_SURROGATE = "[\ud800-\udfff]"


def murmur2_x86(data: bytes, seed: int) -> int:
    """MurmurHash2 of ``data``, 32 bits, little-endian blocks."""
    length = len(data)
    h = (seed ^ length) & _MASK32
    whole = length & ~3
    blocks = array("I")
    if blocks.itemsize != 4:  # pragma: no cover - no such platform runs the kernel
        blocks = array("L")
    blocks.frombytes(data[:whole])
    if sys.byteorder == "big":  # pragma: no cover
        blocks.byteswap()
    for k in blocks:
        k = (k * _MURMUR_M) & _MASK32
        k ^= k >> 24
        k = (k * _MURMUR_M) & _MASK32
        h = ((h * _MURMUR_M) & _MASK32) ^ k
    tail = data[whole:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 13
    h = (h * _MURMUR_M) & _MASK32
    h ^= h >> 15
    return h


@cache
def cell_directory() -> str:
    """Where the cells' files go: a directory of this kernel process's own
    (created by the debugger when it first writes a cell)."""
    return os.path.join(tempfile.gettempdir(), f"interp_rpc_kernel_{os.getpid()}")


def cell_file_prefix() -> str:
    """The path of every cell's file up to its hash (debugInfo's
    tmpFilePrefix)."""
    return cell_directory() + os.sep


def cell_file_name(code: str) -> str:
    """The path a cell with this text is compiled under."""
    try:
        data = code.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate: U+FFFD in its place, as the frontend's encoder does.
        data = re.sub(_LONE_SURROGATE, "\ufffd", code).encode("utf-8")
    digest = murmur2_x86(data, HASH_SEED)
    return f"{cell_file_prefix()}{digest}{CELL_FILE_SUFFIX}"


#: Set while a debugger session runs (debugger.py): IPython then keeps a
#: cell's leading empty lines (see cell_compiler.py).
keeping_leading_empty_lines = threading.Event()
