"""Jupyter protocol conformance, checked by jupyter_kernel_test: every sample
field it offers is filled, so every one of its tests runs."""

from __future__ import annotations

from typing import Any

import jupyter_kernel_test
from jupyter_kernel_test.msgspec_v5 import validate_message


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

    def execute_helper(self, code: str, timeout: int = jupyter_kernel_test.TIMEOUT,
                       silent: bool = False, store_history: bool = True,
                       stop_on_error: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The reply and the outputs of ``code``, with jupyter_kernel_test's
        checks, but waiting up to ``timeout`` for every IOPub message: its own
        waits 0.1 s for each one after the reply, and under CPU load the idle
        status that follows the reply can take longer (a load run of the
        suite failed there once in 12 runs)."""
        msg_id = self.kc.execute(code=code, silent=silent, store_history=store_history,
                                 stop_on_error=stop_on_error)
        reply = self.get_non_kernel_info_reply(timeout=timeout)
        assert reply is not None
        validate_message(reply, "execute_reply", msg_id)
        states: list[str] = []
        outputs: list[dict[str, Any]] = []
        while states != ["busy", "idle"]:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            validate_message(msg, msg["msg_type"], msg_id)
            if not states:
                self.assertEqual(msg["msg_type"], "status", "busy comes first")
            if msg["msg_type"] == "status":
                states.append(msg["content"]["execution_state"])
                self.assertEqual(states, ["busy", "idle"][:len(states)])
            elif msg["msg_type"] == "execute_input":
                self.assertEqual(msg["content"]["code"], code)
            else:
                outputs.append(msg)
        return reply, outputs
