"""The installed kernelspec: what JupyterLab lists and launches."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager


def test_the_kernelspec_describes_the_kernel() -> None:
    spec = KernelSpecManager().get_kernel_spec("interp-rpc")
    assert spec.display_name == "Python (interp-rpc)"
    assert spec.language == "python"
    assert spec.interrupt_mode == "message"
    assert spec.metadata == {"debugger": False}
    resource_dir = Path(spec.resource_dir)
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (resource_dir / logo).is_file(), logo


def test_the_kernelspec_launches_the_installed_kernel() -> None:
    spec = KernelSpecManager().get_kernel_spec("interp-rpc")
    program, flag, connection_file = spec.argv
    assert (flag, connection_file) == ("-f", "{connection_file}")
    kernel = Path(program.format(resource_dir=spec.resource_dir)).resolve()
    assert kernel.name == "interp-rpc-kernel"
    assert os.access(kernel, os.X_OK)
    version = subprocess.run([str(kernel), "--version"], capture_output=True, text=True,
                             check=True)
    assert version.stdout.startswith("interp-rpc-kernel ")


def test_jupyter_lists_the_kernelspec() -> None:
    listing = subprocess.run(["jupyter", "kernelspec", "list"],
                             capture_output=True, text=True, check=True)
    assert any(line.split()[:1] == ["interp-rpc"] for line in listing.stdout.splitlines())
