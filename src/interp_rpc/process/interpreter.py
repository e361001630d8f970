"""Which program a worker process runs: this Python, as a ``python3.14``.

``sys.executable`` is not always a Python: in the interp-rpc kernel it is
the kernel's own binary, which embeds Python and would start a kernel, not a
worker. The interpreter is found among the names CPython itself records.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import sysconfig

from interp_rpc.errors import InterpRpcError


def _looks_like_python(path: str | None) -> bool:
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        return False
    return os.path.basename(path).startswith("python")


@functools.cache
def python_executable() -> str:
    """The path of a Python interpreter of this version, to start workers with.

    In a virtual environment ``sys.executable`` is the environment's Python,
    which workers should use; an embedding program (a kernel) leaves it
    naming itself, and then the base interpreter is used.
    """
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable, getattr(sys, "_base_executable", None),
                  os.path.join(sysconfig.get_config_var("BINDIR") or "", version),
                  shutil.which(version)]
    for path in candidates:
        if _looks_like_python(path):
            assert path is not None
            return path
    raise InterpRpcError(
        f"ProcessPool cannot find a {version} interpreter to run its workers: "
        f"sys.executable is {sys.executable!r}, and no {version} is on PATH")
