"""At startup the kernel loads the IPython extension `interp_rpc` when the
package provides load_ipython_extension, and silently goes on when it does
not. Fake `interp_rpc` packages, first on PYTHONPATH, stand for both cases, so
these tests do not depend on what the real package provides."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import start_kernel, stop_kernel


def fake_package(root: Path, init: str) -> Path:
    package = root / "interp_rpc"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    return root


def env_with_first_on_path(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(directory), env.get("PYTHONPATH", "")])
    return env


def test_the_extension_is_loaded_when_present(tmp_path: Path) -> None:
    path = fake_package(tmp_path / "with", (
        "def load_ipython_extension(ipython):\n"
        "    ipython.user_ns['loaded_by'] = 'interp_rpc'\n"
        "    ipython.user_ns['kernel_was_ready'] = ipython.kernel is not None\n"
    ))
    kernel = start_kernel(env=env_with_first_on_path(path))
    try:
        execution = kernel.execute(
            "print(loaded_by, kernel_was_ready,"
            " 'interp_rpc' in get_ipython().extension_manager.loaded)"
        )
        assert execution.stream() == "interp_rpc True True\n"
    finally:
        stop_kernel(kernel)


def test_a_package_without_the_extension_is_skipped_silently(tmp_path: Path) -> None:
    path = fake_package(tmp_path / "without", "IMPORTED = True\n")
    log = tmp_path / "kernel.log"
    with log.open("w") as sink:
        kernel = start_kernel(env=env_with_first_on_path(path), stdout=sink,
                              stderr=subprocess.STDOUT)
        try:
            execution = kernel.execute(
                "import interp_rpc\n"
                "print(interp_rpc.IMPORTED, 'interp_rpc' in get_ipython().extension_manager.loaded)"
            )
            assert execution.stream() == "True False\n"
        finally:
            stop_kernel(kernel)
    assert "extension" not in log.read_text().lower()


def test_load_ext_loads_an_extension_in_a_cell(tmp_path: Path) -> None:
    (tmp_path / "my_extension.py").write_text(
        "def load_ipython_extension(ipython):\n"
        "    ipython.user_ns['my_extension'] = 'loaded'\n"
    )
    kernel = start_kernel(env=env_with_first_on_path(tmp_path))
    try:
        assert kernel.execute("%load_ext my_extension").status == "ok"
        assert kernel.execute("print(my_extension)").stream() == "loaded\n"
    finally:
        stop_kernel(kernel)
