"""Worker code that makes C call back into Python through PyGILState_Ensure.

ctypes callbacks enter Python with PyGILState_Ensure. On a worker thread that
must attach to the worker's own interpreter, not the main one, or the
callback would run in the wrong interpreter (or deadlock on the main GIL).
"""

import ctypes
import ctypes.util

_INT_POINTER = ctypes.POINTER(ctypes.c_int)
_COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, _INT_POINTER, _INT_POINTER)


def sort_with_qsort(values: list[int]) -> tuple[list[int], int, int]:
    """Sort with libc's qsort and a Python comparison; also report which
    interpreter the callbacks ran in, and which one ran the call."""
    from concurrent import interpreters

    seen: set[int] = set()

    def compare(a: ctypes._Pointer[ctypes.c_int], b: ctypes._Pointer[ctypes.c_int]) -> int:
        seen.add(interpreters.get_current().id)
        return a[0] - b[0]

    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    array = (ctypes.c_int * len(values))(*values)
    libc.qsort(array, len(array), ctypes.sizeof(ctypes.c_int), _COMPARE(compare))
    (interpreter,) = seen
    return list(array), interpreter, interpreters.get_current().id
