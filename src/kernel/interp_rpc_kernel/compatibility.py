"""What the kernel relies on in IPython, checked once at startup: an IPython
that lacks it ends the kernel with a message that says what is missing,
rather than failing every cell in some other way."""

from __future__ import annotations

import inspect

import IPython
from IPython.core.application import BaseIPythonApplication
from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.history import HistoryManager
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.shellapp import InteractiveShellApp

# What the kernel was tested with (pyproject.toml's kernel extra says the same).
TESTED_MAJOR_VERSION = 9
TESTED_VERSIONS = ">=9.11,<10"


def ipython_problem() -> str | None:
    """What in the installed IPython this kernel cannot work with, or None."""
    major = IPython.version_info[0]
    if major != TESTED_MAJOR_VERSION:
        return f"IPython {IPython.__version__} is not IPython {TESTED_MAJOR_VERSION}"
    needed: dict[type, tuple[str, ...]] = {
        InteractiveShell: ("run_cell", "run_cell_async", "should_run_async", "transform_cell",
                           "loop_runner", "run_code", "showtraceback", "_showtraceback",
                           "user_expressions", "object_inspect_mime", "init_history",
                           "init_hooks", "enable_gui", "set_next_input"),
        BaseIPythonApplication: ("initialize",),
        InteractiveShellApp: ("init_path", "init_shell", "init_gui_pylab", "init_extensions",
                              "init_code", "default_extensions"),
        DisplayHook: ("start_displayhook", "write_output_prompt", "write_format_data",
                      "finish_displayhook", "prompt_count"),
        DisplayPublisher: ("publish", "clear_output", "_validate_data"),
        HistoryManager: ("store_inputs", "save_thread"),
    }
    for owner, names in needed.items():
        for name in names:
            if not hasattr(owner, name):
                return f"{owner.__name__} has no {name}"
    # The kernel wraps run_code to open its interrupt window around the
    # user's code; IPython awaits it.
    if not inspect.iscoroutinefunction(InteractiveShell.run_code):
        return "InteractiveShell.run_code is not a coroutine function"
    if "async_" not in inspect.signature(InteractiveShell.run_code).parameters:
        return "InteractiveShell.run_code takes no async_"
    # history.py throttles writes between this flag and the saving thread's.
    if not isinstance(inspect.getattr_static(HistoryManager, "save_flag", None), property):
        return "HistoryManager.save_flag is not a property"
    return None
