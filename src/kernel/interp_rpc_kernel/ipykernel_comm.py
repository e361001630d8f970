"""``ipykernel.comm`` in this kernel, for libraries written against
ipykernel's own comm classes (ipywidgets 7, older widget libraries):
``Comm(target_name, data=...)`` opens one of this kernel's comms, and
``CommManager`` is the kernel's comm manager.

ipykernel's own classes cannot work here: they send through ipykernel's
kernel singleton, which this kernel is not, and register with the comm
package's manager in a way this kernel's manager does not take. identity.py
registers this module under ipykernel's name, unless the real one is
imported already. (``comm.create_comm``, which current libraries use, needs
none of this.)
"""

from __future__ import annotations

import sys
from typing import Any

import comm

# The kernel's own module (interpreter.cpp), which defines its Comm class.
_kernel_module = sys.modules["_interp_rpc_kernel"]


class _OpensAKernelComm(type):
    """Calling Comm opens a comm of this kernel; isinstance() recognises one."""

    def __call__(cls, target_name: str = "comm", data: Any = None, metadata: Any = None,
                 buffers: Any = None, **kwargs: Any) -> Any:
        return comm.create_comm(target_name=target_name, data=data, metadata=metadata,
                                buffers=buffers, **kwargs)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, _kernel_module.Comm)


class Comm(metaclass=_OpensAKernelComm):
    """A comm with the frontend, as ipykernel.comm.Comm is called:
    ``Comm(target_name, data=None, metadata=None, buffers=None)``, then
    ``send``, ``on_msg``, ``on_close`` and ``close``."""


#: The kernel's comm manager's class (``register_target``, ``get_comm``).
CommManager = _kernel_module.CommManager

__all__ = ["Comm", "CommManager"]
