"""interp-rpc: a warm pool of PEP 734 subinterpreters for Python 3.14."""

import sys

if sys.version_info < (3, 14):  # noqa: UP036 - a clear error on old Pythons
    raise RuntimeError(
        "interp-rpc needs Python 3.14 or newer: it is built on concurrent.interpreters "
        f"(PEP 734), which this Python ({sys.version.split()[0]}) does not have."
    )

from interp_rpc._core import build_info as _build_info

__version__: str = str(_build_info()["interp_rpc"])


def build_info() -> dict[str, object]:
    """The versions interp-rpc's C++ engine was compiled against."""
    return dict(_build_info())


__all__ = ["__version__", "build_info"]
