"""The installed kernelspec: what JupyterLab lists and launches."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def test_the_kernelspec_describes_the_kernel() -> None:
    spec = KernelSpecManager().get_kernel_spec("interp-rpc")
    assert spec.display_name == "Python (interp-rpc)"
    assert spec.language == "python"
    assert spec.interrupt_mode == "message"
    assert spec.metadata == {"debugger": True}
    resource_dir = Path(spec.resource_dir)
    for logo in ("logo-32x32.png", "logo-64x64.png", "logo-svg.svg"):
        assert (resource_dir / logo).is_file(), logo


def test_the_kernelspec_launches_the_installed_kernel() -> None:
    spec = KernelSpecManager().get_kernel_spec("interp-rpc")
    program, flag, connection_file = spec.argv
    assert (flag, connection_file) == ("-f", "{connection_file}")
    # Never relative to the spec, which may be copied (see the test below).
    assert "{resource_dir}" not in program
    found = shutil.which(program)
    assert found is not None, program
    kernel = Path(found)
    assert kernel.name == "interp-rpc-kernel"
    assert os.access(kernel, os.X_OK)
    version = subprocess.run([str(kernel), "--version"], capture_output=True, text=True,
                             check=True)
    assert version.stdout.startswith("interp-rpc-kernel ")


def test_jupyter_lists_the_kernelspec() -> None:
    listing = subprocess.run(["jupyter", "kernelspec", "list"],
                             capture_output=True, text=True, check=True)
    assert any(line.split()[:1] == ["interp-rpc"] for line in listing.stdout.splitlines())


def test_a_copy_made_by_jupyter_kernelspec_install_starts_the_kernel(tmp_path: Path) -> None:
    spec = KernelSpecManager().get_kernel_spec("interp-rpc")
    prefix = tmp_path / "prefix"
    subprocess.run(["jupyter", "kernelspec", "install", spec.resource_dir, "--name", "copied",
                    "--prefix", str(prefix)], check=True, capture_output=True)
    kernels = prefix / "share" / "jupyter" / "kernels"
    assert (kernels / "copied" / "kernel.json").is_file()
    manager = KernelManager(kernel_name="copied",
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive("1 + 1", timeout=60)
        assert reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=False)
