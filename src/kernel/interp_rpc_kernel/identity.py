"""How libraries recognise a notebook kernel, shown by this one.

A library that renders differently in a notebook (rich's consoles,
tqdm.auto's widget bar, plotly's renderer) cannot ask the frontend; it
guesses from the process, in one of three ways, all written against
ipykernel:

- the shell's class name, ``ZMQInteractiveShell`` (rich);
- ``ipykernel.zmqshell`` among the imported modules (tqdm.auto);
- an ``IPKernelApp`` section in ``get_ipython().config`` (older tqdm, and
  many notebooks' own checks).

ipykernel itself adds that config section when it is started without its
app, for the same reason. Here the shell bears the name, its module is
registered under ipykernel's module name unless the real one is imported
already, and the section is added unless a config file made one. Older
widget libraries also open comms with ``ipykernel.comm.Comm``: that name
gets this kernel's comms (ipykernel_comm.py) the same way.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

#: The module libraries look for among the imported ones.
NOTEBOOK_SHELL_MODULE = "ipykernel.zmqshell"

#: Where older widget libraries find the kernel's comms (ipykernel_comm.py).
KERNEL_COMM_MODULE = "ipykernel.comm"


def present_as_notebook_kernel(shell: Any) -> None:
    """Shows ``shell`` (a ZMQInteractiveShell) as a notebook kernel's shell."""
    sys.modules.setdefault(NOTEBOOK_SHELL_MODULE, sys.modules[type(shell).__module__])
    sys.modules.setdefault(KERNEL_COMM_MODULE, importlib.import_module(
        "interp_rpc_kernel.ipykernel_comm"))
    if "IPKernelApp" not in shell.config:
        shell.config.IPKernelApp.kernel_name = "interp-rpc"
