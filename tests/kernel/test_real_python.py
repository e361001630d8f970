"""Inside the kernel, sys.executable is the Python interpreter of the
installation (or virtual environment), so that everything that starts
"another Python" with it works: subprocess, multiprocessing's spawn and
forkserver pools, concurrent.futures' process pool, %pip."""

from __future__ import annotations

import os
import sys

from conftest import Kernel

# A pool whose workers cannot start respawns them forever: bound every wait.
WAIT = 60


def test_sys_executable_is_the_installed_python(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "import os, sys\nprint(os.path.realpath(sys.executable))\n"
        "print(os.path.realpath(sys._base_executable))"
    )
    assert result.status == "ok", result.reply
    python = os.path.realpath(sys.executable)
    assert result.stream() == f"{python}\n{python}\n"


def test_subprocess_runs_sys_executable(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "import subprocess, sys\n"
        "done = subprocess.run([sys.executable, '-c', 'import sys; print(sys.version_info[:2])'],"
        " capture_output=True, text=True, timeout=60)\n"
        "print(done.returncode, done.stdout.strip())"
    )
    assert result.status == "ok", result.reply
    assert result.stream() == f"0 {tuple(sys.version_info[:2])}\n"


def run_pool(kernel: Kernel, start_method: str) -> None:
    result = kernel.execute(
        "import multiprocessing\n"
        f"with multiprocessing.get_context({start_method!r}).Pool(2) as pool:\n"
        f"    print(pool.map_async(abs, [-1, -2, -3]).get(timeout={WAIT}))",
        timeout=WAIT + 30,
    )
    assert result.status == "ok", result.reply
    assert result.stream() == "[1, 2, 3]\n"


def test_a_spawn_pool_works(shared_kernel: Kernel) -> None:
    run_pool(shared_kernel, "spawn")


def test_a_forkserver_pool_works(shared_kernel: Kernel) -> None:
    run_pool(shared_kernel, "forkserver")


def test_a_process_pool_executor_works(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "from concurrent.futures import ProcessPoolExecutor\n"
        "with ProcessPoolExecutor(2) as executor:\n"
        f"    print(executor.submit(pow, 2, 10).result(timeout={WAIT}))",
        timeout=WAIT + 30,
    )
    assert result.status == "ok", result.reply
    assert result.stream() == "1024\n"


def test_pip_magic_runs_pip_of_this_python(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute("%pip --version", timeout=WAIT)
    assert result.status == "ok", result.reply
    text = result.stream()
    version = "{}.{}".format(*sys.version_info[:2])
    assert text.startswith("pip "), text
    assert f"(python {version})" in text, text
