"""Facts about the machine and the Python build, stored with every result."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import sys
import sysconfig
from typing import Any

import interp_rpc

# configure options worth a reader's attention when comparing two results.
_NOTABLE_CONFIGURE_OPTIONS = ("--enable-optimizations", "--with-lto", "--enable-shared",
                              "--disable-gil", "--with-pydebug", "--enable-experimental-jit",
                              "--with-computed-gotos")


def _cpuinfo_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_total_gib() -> float | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / (1 << 20), 1)
    except OSError:
        pass
    return None


def _python_build() -> dict[str, Any]:
    config_args = sysconfig.get_config_var("CONFIG_ARGS") or ""
    options = [arg for arg in shlex.split(config_args)
               if arg.split("=", 1)[0] in _NOTABLE_CONFIGURE_OPTIONS]
    gil_enabled = getattr(sys, "_is_gil_enabled", lambda: True)()
    return {
        "version": sys.version,
        "implementation": platform.python_implementation(),
        "compiler": platform.python_compiler(),
        "configure_summary": " ".join(options) or "(none of the notable options)",
        "configure_args": config_args,
        "cflags": sysconfig.get_config_var("PY_CFLAGS"),
        "free_threading_build": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
        "gil_enabled": gil_enabled,
    }


def machine_facts() -> dict[str, Any]:
    load = os.getloadavg()
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu_model": _cpuinfo_model(),
        "cores": os.cpu_count(),
        "usable_cores": os.process_cpu_count(),
        "memory_gib": _memory_total_gib(),
        "kernel": platform.platform(),
        # The VM is shared: load before the run says how quiet it was.
        "loadavg_at_start": [round(x, 2) for x in load],
        "python": _python_build(),
        "interp_rpc": {"version": interp_rpc.__version__,
                       "build_info": interp_rpc.build_info()},
    }


def describe(facts: dict[str, Any]) -> str:
    """One line for the report and the chart."""
    python = facts["python"]
    gil = "GIL" if python["gil_enabled"] else "no GIL"
    return (f"{facts['cpu_model']}, {facts['cores']} cores, {facts['memory_gib']} GiB; "
            f"Python {python['version'].split()[0]} ({gil}); "
            f"interp-rpc {facts['interp_rpc']['version']}; {facts['date']}")
