"""Jupyter protocol conformance, checked by jupyter_kernel_test: every sample
field it offers is filled, so every one of its tests runs."""

from __future__ import annotations

import jupyter_kernel_test


class InterpRpcKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "interp-rpc"
    language_name = "python"
    file_extension = ".py"

    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    code_generate_error = "raise ValueError('boom')"

    # Tuples: jupyter_kernel_test only iterates over these.
    completion_samples = (
        {"text": "pri", "matches": {"print"}},
        {"text": "zi", "matches": {"zip"}},
        {"text": "import os.pa", "matches": {"os.path"}},
    )
    complete_code_samples = ("1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n")
    incomplete_code_samples = ("print('''hello", "def f(x):\n  x*2", "for i in range(3):")
    invalid_code_samples = ("import = 7q", "1 +* 2")

    code_inspect_sample = "open"
    code_page_something = "?print"

    code_execute_result = (
        {"code": "6*7", "result": "42"},
        {"code": "'spam'", "result": "'spam'"},
        {"code": "from IPython.display import HTML; HTML('<b>bold</b>')", "mime": "text/html"},
    )
    code_display_data = (
        {"code": "from IPython.display import display, HTML; display(HTML('<b>x</b>'))",
         "mime": "text/html"},
        {"code": "from IPython.display import display, Math; display(Math('x^2'))",
         "mime": "text/latex"},
    )
    # A GLOB: [*] is a literal star, so the pattern matches this cell only.
    code_history_pattern = "6[*]7"
    supported_history_operations = ("tail", "range", "search")
    code_clear_output = "from IPython.display import clear_output; print('x'); clear_output()"
