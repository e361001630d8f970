"""Checks of the options callers pass, with messages that name the option."""

from __future__ import annotations

import math


def check_timeout(name: str, value: float | None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__}")
    if math.isnan(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number of seconds, not {value!r}")

