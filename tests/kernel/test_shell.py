"""The kernel's IPython shell (interp_rpc_kernel/shell.py): it reads the
profile's configuration as IPython's own apps do, and says so when asked for
what it cannot do."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import Kernel, start_kernel, stop_kernel


def kernel_with_profile(tmp_path: Path, files: dict[str, str]) -> Kernel:
    profile = tmp_path / "ipython" / "profile_default"
    profile.mkdir(parents=True)
    for name, text in files.items():
        (profile / name).write_text(text)
    return start_kernel(env={**os.environ, "IPYTHONDIR": str(tmp_path / "ipython")})


def test_ipython_config_applies_to_the_shell(tmp_path: Path) -> None:
    kernel = kernel_with_profile(
        tmp_path, {"ipython_config.py": "c.InteractiveShell.ast_node_interactivity = 'all'\n"}
    )
    try:
        result = kernel.execute("1\n2")
    finally:
        stop_kernel(kernel)
    assert result.status == "ok", result.reply
    shown = [m["content"]["data"]["text/plain"] for m in result.of_type("execute_result")]
    assert shown == ["1", "2"]


def test_the_kernels_own_config_file_applies_after_ipythons(tmp_path: Path) -> None:
    kernel = kernel_with_profile(tmp_path, {
        "ipython_config.py": "c.InteractiveShell.ast_node_interactivity = 'all'\n",
        "interp_rpc_kernel_config.py": "c.InteractiveShell.ast_node_interactivity = 'none'\n",
    })
    try:
        result = kernel.execute("1\n2")
    finally:
        stop_kernel(kernel)
    assert result.status == "ok", result.reply
    assert result.of_type("execute_result") == []


def test_jedi_is_on_unless_configured_off(tmp_path: Path, shared_kernel: Kernel) -> None:
    on = shared_kernel.execute("print(get_ipython().Completer.use_jedi)")
    assert on.stream() == "True\n"
    kernel = kernel_with_profile(tmp_path,
                                 {"ipython_config.py": "c.IPCompleter.use_jedi = False\n"})
    try:
        off = kernel.execute("print(get_ipython().Completer.use_jedi)")
    finally:
        stop_kernel(kernel)
    assert off.stream() == "False\n"


def test_a_gui_event_loop_is_refused_with_a_reason(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute("%gui qt")
    text = result.stream("stdout") + result.stream("stderr")
    assert "runs no qt event loop" in text
    assert "%matplotlib inline" in text


def test_display_data_that_is_not_a_dict_is_a_clear_error(shared_kernel: Kernel) -> None:
    result = shared_kernel.execute(
        "from IPython.display import publish_display_data\npublish_display_data(['x'])"
    )
    assert result.status == "error"
    assert result.reply["content"]["ename"] == "TypeError"
    assert "dict" in result.reply["content"]["evalue"]
