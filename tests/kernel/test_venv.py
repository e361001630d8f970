"""A kernel installed in a virtual environment's bin/ (as pip installs it)
sees that environment's packages, like the environment's python3 does, and
its sys.executable is that python3 (so subprocesses see them too)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def test_a_kernel_in_a_venv_imports_the_venvs_packages(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
    )
    site_packages = next(venv.glob("lib/python3*/site-packages"))
    (site_packages / "only_in_the_venv.py").write_text("WHERE = 'venv'\n")

    installed = KernelSpecManager().get_kernel_spec("interp-rpc")
    program = Path(installed.argv[0].format(resource_dir=installed.resource_dir)).resolve()
    kernel = venv / "bin" / "interp-rpc-kernel"
    shutil.copy2(program, kernel)  # a copy: the kernel locates itself by its real path
    spec_dir = tmp_path / "kernels" / "venv-kernel"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(kernel), "-f", "{connection_file}"],
        "display_name": "venv", "language": "python", "interrupt_mode": "message",
    }))

    manager = KernelManager(
        kernel_name="venv-kernel",
        kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")]),
    )
    manager.start_kernel()
    outputs: list[dict[str, Any]] = []
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(
            "import subprocess, sys, only_in_the_venv\n"
            "print(sys.prefix, only_in_the_venv.WHERE)\n"
            "print(sys.executable)\n"
            "subprocess.run([sys.executable, '-c',"
            " 'import only_in_the_venv; print(only_in_the_venv.WHERE)'], check=True)",
            timeout=60, output_hook=outputs.append,
        )
        assert reply["content"]["status"] == "ok", reply["content"]
        text = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
        assert text.startswith(f"{venv} venv\n{venv / 'bin' / 'python3'}\n"), text
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)

