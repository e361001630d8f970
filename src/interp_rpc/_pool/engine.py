"""The C++ engine module, and why it may be missing.

``_core`` loads in the main interpreter only. In a worker (a script's
``__main__`` imported there, or ``init=`` code importing interp_rpc) the
package still imports, and creating a pool there fails with a clear error.
"""

from __future__ import annotations

import _interpreters
from pathlib import Path

from interp_rpc.errors import InterpRpcError

# Only the main interpreter tries. _core refuses subinterpreters, but only
# after its init function has run there, and that init touches pybind11's
# process-wide state while the main interpreter's threads (the pool's
# completion thread) read it: a data race, reported by ThreadSanitizer.
if _interpreters.get_current()[0] == _interpreters.get_main()[0]:
    from interp_rpc import _core

    ENGINE_UNAVAILABLE: str | None = None
else:
    _core = None  # type: ignore[assignment]  # require_engine() guards every use
    ENGINE_UNAVAILABLE = (
        "InterpreterPool can only be created in the main interpreter, not inside a worker "
        "(if a script creates a pool at module level, put that code under "
        "'if __name__ == \"__main__\":', since workers may import the script's module)"
    )

__all__ = ["ENGINE_UNAVAILABLE", "WORKER_SOURCE", "_core", "build_info", "require_engine"]

#: The source every worker interpreter runs when it starts.
WORKER_SOURCE = Path(__file__).parent.parent / "_worker" / "main.py"

def require_engine() -> None:
    """Raise InterpRpcError if this interpreter cannot run the engine."""
    if ENGINE_UNAVAILABLE is not None:
        raise InterpRpcError(ENGINE_UNAVAILABLE)


def build_info() -> dict[str, object]:
    """The versions interp-rpc's C++ engine was compiled against."""
    require_engine()
    return dict(_core.build_info())
