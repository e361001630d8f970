"""What the kernel needs from its Python packages, and what Python packages
need from the kernel: the xeus-python-shell API is checked at startup;
matplotlib's inline backend works."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import Kernel
from jupyter_client.connect import write_connection_file
from jupyter_client.kernelspec import KernelSpecManager

# xeus-python-shell 0.7's change, in short: its shell replaces
# InteractiveShell.run_cell_async with another signature.
LIKE_XEUS_PYTHON_SHELL_0_7 = """
from IPython.core.application import BaseIPythonApplication
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.shellapp import InteractiveShellApp

class XPythonShell(InteractiveShell):
    def complete_code(self, code, cursor_pos):
        return [], cursor_pos, cursor_pos

    def run_cell_async(self, raw_cell, store_history=False, silent=False,
                       shell_futures=True, cell_id=None):
        raise NotImplementedError

class XPythonShellApp(BaseIPythonApplication, InteractiveShellApp):
    def init_shell(self, use_jedi=False):
        pass
"""


def kernel_program() -> str:
    spec = KernelSpecManager().get_kernel_spec("interp-rpc")
    program = shutil.which(spec.argv[0])
    assert program is not None
    return program


def test_an_unsupported_xeus_python_shell_stops_the_kernel_and_says_why(
    tmp_path: Path,
) -> None:
    package = tmp_path / "site" / "xeus_python_shell"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "shell.py").write_text(LIKE_XEUS_PYTHON_SHELL_0_7)
    connection_file, _ = write_connection_file(str(tmp_path / "kernel.json"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(package.parent), *filter(None, [env.get("PYTHONPATH")])]
    )
    done = subprocess.run([kernel_program(), "-f", connection_file], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "unsupported xeus-python-shell" in done.stderr
    assert "replaces InteractiveShell.run_cell_async" in done.stderr
    assert "xeus-python-shell>=0.6,<0.7" in done.stderr


def test_matplotlib_inline_shows_a_figure(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "%matplotlib inline\n"
        "import matplotlib.pyplot as plt\n"
        "plt.plot([1, 2, 3])\n"
        "plt.show()",
        timeout=120,
    )
    assert result.status == "ok", result.reply["content"]
    [figure] = [m for m in result.of_type("display_data") if "image/png" in m["content"]["data"]]
    assert figure["content"]["data"]["text/plain"].startswith("<Figure")


def test_the_kernel_object_has_what_libraries_use(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "kernel = get_ipython().kernel\n"
        "import comm\n"
        "print(kernel.comm_manager is comm.get_comm_manager(),"
        " kernel.get_parent()['msg_type'])"
    )
    assert result.status == "ok", result.reply["content"]
    assert result.stream() == "True execute_request\n"


def test_session_send_publishes_on_iopub(shared_kernel: Kernel) -> None:
    # As ipykernel's own Comm and older widget libraries publish.
    result = shared_kernel.execute(
        "kernel = get_ipython().kernel\n"
        "sent = kernel.session.send(kernel.iopub_socket, 'display_data',"
        " {'data': {'text/plain': 'sent'}, 'metadata': {}},"
        " parent=kernel.get_parent(), buffers=[b'raw'])\n"
        "print(sent['msg_type'], kernel.session.session == sent['header']['session'])"
    )
    assert result.status == "ok", result.reply["content"]
    [shown] = result.of_type("display_data")
    assert shown["content"]["data"] == {"text/plain": "sent"}
    assert [bytes(b) for b in shown["buffers"]] == [b"raw"]
    assert shown["header"]["session"] == result.reply["header"]["session"]
    assert result.stream() == "display_data True\n"
