"""Libraries recognise a notebook kernel and render for a notebook, under
ipykernel and ours alike: rich by the shell's class name, tqdm.auto by
ipykernel's shell module, older code by an IPKernelApp config section, and
widget and display libraries through get_ipython().kernel."""

from __future__ import annotations

import pytest
from conftest import Kernel


def value_of(kernel: Kernel, expression: str) -> str:
    execution = kernel.execute(f"print(repr({expression}))")
    assert execution.status == "ok", execution.outputs
    return execution.stream().strip()


def test_rich_renders_for_a_notebook(each_shared_kernel: Kernel) -> None:
    assert value_of(each_shared_kernel,
                    "__import__('rich.console').console.Console().is_jupyter") == "True"


def test_tqdm_auto_picks_the_widget_bar(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute(
        "import warnings\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore')\n"
        "    from tqdm.auto import tqdm\n"
        "from tqdm.notebook import tqdm as widget_bar\n"
        "print(issubclass(tqdm, widget_bar))\n"
        "for _ in tqdm(range(3)): pass\n")
    assert execution.status == "ok", execution.outputs
    assert execution.stream().strip() == "True"
    # The bar is a widget: a display of the widget view, no text bar on stderr.
    assert any("application/vnd.jupyter.widget-view+json" in m["content"]["data"]
               for m in execution.of_type("display_data"))
    assert "it/s" not in execution.stream("stderr")


@pytest.mark.parametrize(("expression", "expected"), [
    ("type(get_ipython()).__name__", "'ZMQInteractiveShell'"),
    ("'IPKernelApp' in get_ipython().config", "True"),
    ("'ipykernel.zmqshell' in __import__('sys').modules", "True"),
    ("get_ipython().kernel.shell is get_ipython()", "True"),
])
def test_the_shell_looks_like_a_notebook_kernels(each_shared_kernel: Kernel, expression: str,
                                                 expected: str) -> None:
    assert value_of(each_shared_kernel, expression) == expected


def test_the_kernels_execution_count_is_the_shells(each_shared_kernel: Kernel) -> None:
    assert value_of(each_shared_kernel,
                    "get_ipython().kernel.execution_count == get_ipython().execution_count"
                    ) == "True"


def test_importing_the_shell_module_by_its_ipykernel_name(each_shared_kernel: Kernel) -> None:
    assert value_of(each_shared_kernel,
                    "__import__('importlib').import_module('ipykernel.zmqshell')"
                    ".ZMQInteractiveShell is type(get_ipython())") == "True"


def test_ipykernels_comm_class_opens_sends_and_closes(each_kernel: Kernel) -> None:
    # Older widget libraries (ipywidgets 7) open comms with ipykernel.comm.Comm.
    execution = each_kernel.execute(
        "from ipykernel.comm import Comm\n"
        "c = Comm(target_name='interp_rpc_probe', data={'a': 1})\n"
        "c.send({'b': 2})\n"
        "print(isinstance(c, Comm), c.comm_id == c.comm_id.strip() != '')\n"
        "c.close()\n")
    assert execution.status == "ok", execution.outputs
    assert execution.stream().strip() == "True True"
    sent = [m for m in execution.outputs if m["msg_type"].startswith("comm_")]
    assert [m["msg_type"] for m in sent] == ["comm_open", "comm_msg", "comm_close"]
    assert sent[0]["content"]["target_name"] == "interp_rpc_probe"
    assert sent[0]["content"]["data"] == {"a": 1}
    assert sent[1]["content"]["data"] == {"b": 2}
    assert len({m["content"]["comm_id"] for m in sent}) == 1
