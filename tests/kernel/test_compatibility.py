"""What the kernel needs from its Python packages, and what Python packages
need from the kernel: what the kernel's shell relies on in IPython is checked
at startup; matplotlib's inline backend works."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from conftest import Kernel
from IPython.core.history import HistoryManager
from IPython.core.interactiveshell import InteractiveShell
from jupyter_client.connect import write_connection_file
from jupyter_client.kernelspec import KernelSpecManager

from interp_rpc_kernel.compatibility import TESTED_VERSIONS, ipython_problem

# The next IPython major version, as far as the kernel can tell: its shell is
# tested with IPython 9 only.
AS_IF_IPYTHON_10 = """
import IPython
IPython.version_info = (10, 0, 0, "")
IPython.__version__ = "10.0.0"
"""


def kernel_program() -> str:
    spec = KernelSpecManager().get_kernel_spec("interp-rpc")
    program = shutil.which(spec.argv[0])
    assert program is not None
    return program


def test_an_unsupported_ipython_stops_the_kernel_and_says_why(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(AS_IF_IPYTHON_10)
    connection_file, _ = write_connection_file(str(tmp_path / "kernel.json"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run([kernel_program(), "-f", connection_file], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "unsupported IPython" in done.stderr
    assert "IPython 10.0.0 is not IPython 9" in done.stderr
    assert "pip install 'ipython>=9.11,<10'" in done.stderr


def test_the_check_names_what_ipython_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ipython_problem() is None
    monkeypatch.delattr(HistoryManager, "save_flag")
    assert ipython_problem() == "HistoryManager.save_flag is not a property"
    monkeypatch.delattr(InteractiveShell, "object_inspect_mime")
    assert ipython_problem() == "InteractiveShell has no object_inspect_mime"


def test_pyproject_bounds_ipython_to_the_versions_the_check_names() -> None:
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert f"ipython{TESTED_VERSIONS}" in extras["kernel"]


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
