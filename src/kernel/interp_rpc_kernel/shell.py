"""The IPython shell the kernel runs cells in, and the application that sets
it up as IPython's own apps do: profile, config files, extensions, startup
files.

The kernel runs the application's steps itself (interpreter.cpp,
start_shell), so that it wires the shell to Jupyter before extensions and
startup code run: they may print, display or open comms.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.util import find_spec
from typing import Any, Literal

from IPython.core import page, payloadpage
from IPython.core.application import BaseIPythonApplication
from IPython.core.autocall import ExitAutocall, ZMQExitAutocall
from IPython.core.completer import provisionalcompleter, rectify_completions
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.shellapp import InteractiveShellApp
from traitlets import default

from interp_rpc_kernel import identity, stream_history
from interp_rpc_kernel.cell_compiler import CellCompiler, install_cleanup_transform
from interp_rpc_kernel.display import KernelDisplayHook, KernelDisplayPublisher
from interp_rpc_kernel.history import KernelHistoryManager
from interp_rpc_kernel.magics import KernelMagics
from interp_rpc_kernel.parso_cache import guard_parso_cache

# As ipykernel's ZMQInteractiveShell sets them, when the shell starts: what
# the kernel was started with is replaced, what a cell sets later stays.
CHILD_ENVIRONMENT = {
    "TERM": "xterm-color",
    "CLICOLOR": "1",
    "FORCE_COLOR": "1",
    "CLICOLOR_FORCE": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
}

#: Where a complete_reply's metadata lists each match's type and signature
#: (JupyterLab shows them); IPython's and ipykernel's name for it.
COMPLETION_TYPES_KEY = "_jupyter_types_experimental"


class ZMQInteractiveShell(InteractiveShell):
    """InteractiveShell, paging to the frontend and with throttled history
    writes (see history.py).

    It bears ipykernel's name for its shell, and identity.py makes it
    importable under ipykernel's module name: libraries (rich, tqdm.auto)
    tell a notebook kernel from a terminal by that name, and would otherwise
    print for a terminal here.
    """

    # exit() and quit() as ipykernel's: exit(keep_kernel=True) asks the
    # frontend to close without ending the kernel. Set by ZMQExitAutocall, read
    # by ask_exit (interpreter.cpp).
    keepkernel_on_exit: bool | None = None

    @default("exiter")
    def _default_exiter(self) -> ExitAutocall:
        return ZMQExitAutocall(self)

    def init_environment(self) -> None:
        """What ipykernel's shell puts in the environment of the processes
        cells start: no pager (nothing can answer one's keys), colours."""
        super().init_environment()
        os.environ.update(CHILD_ENVIRONMENT)

    def init_magics(self) -> None:
        super().init_magics()
        self.register_magics(KernelMagics)

    def init_hooks(self) -> None:
        super().init_hooks()
        # `obj?` and %page go to the frontend's pager, as a payload.
        self.set_hook("show_in_pager", page.as_hook(payloadpage.page), 99)

    @contextmanager
    def _tee(self, channel: Literal["stdout", "stderr"]) -> Iterator[None]:
        # IPython's replaces the stream's write for each cell, which cells
        # running at once on subshells pile up (see stream_history).
        stream_type: type = sys.modules["_interp_rpc_kernel"].Stream
        with stream_history.tee(self, channel, stream_type,
                                lambda: super(ZMQInteractiveShell, self)._tee(channel)):
            yield

    def init_history(self) -> None:
        self.history_manager = KernelHistoryManager(shell=self, parent=self)
        # IPython annotates configurables as a list of shells; it holds any
        # Configurable.
        self.configurables.append(self.history_manager)  # type: ignore[arg-type]

    def enable_gui(self, gui: str | None = None) -> None:
        # %matplotlib inline asks for no event loop (None); none other runs here.
        if gui not in (None, "inline"):
            raise UsageError(
                f"the interp-rpc kernel runs no {gui} event loop; for plots, use %matplotlib inline"
            )

    def complete_code(
        self, code: str, cursor_pos: int
    ) -> tuple[list[str], int, int, dict[str, list[dict[str, Any]]]]:
        """The matches for a complete_request, the range they replace, and the
        reply's metadata: each match's type and signature, under the key
        JupyterLab reads (as ipykernel's reply has them)."""
        if self.Completer.use_jedi:
            guard_parso_cache()
        with provisionalcompleter():
            completions = list(
                rectify_completions(code, self.Completer.completions(code, cursor_pos))
            )
        described = [
            {"start": c.start, "end": c.end, "text": c.text, "type": c.type,
             "signature": c.signature}
            for c in completions
        ]
        metadata = {COMPLETION_TYPES_KEY: described}
        if not completions:
            return [], cursor_pos, cursor_pos, metadata
        return ([c.text for c in completions], completions[0].start, completions[0].end,
                metadata)


class KernelShellApp(BaseIPythonApplication, InteractiveShellApp):
    """Creates the shell from the profile's configuration: its
    ipython_config.py, then interp_rpc_kernel_config.py for this kernel only
    (as ipykernel reads ipython_kernel_config.py)."""

    name = "interp-rpc-kernel"

    def init_shell(self) -> None:
        # The completer uses jedi when it is installed, as in ipykernel: only
        # jedi completes what needs inference (`sorted(x).ap`). IPython's
        # default would say off, since the kernel kept jedi from loading with
        # IPython (it loads on the first completion, startup_imports.hpp); a
        # config file may still turn it off.
        if "use_jedi" not in self.config.IPCompleter and find_spec("jedi") is not None:
            self.config.IPCompleter.use_jedi = True
        self.shell = ZMQInteractiveShell.instance(
            parent=self,
            profile_dir=self.profile_dir,
            ipython_dir=self.ipython_dir,
            user_ns=self.user_ns,
            display_pub_class=KernelDisplayPublisher,
            displayhook_class=KernelDisplayHook,
            compiler_class=CellCompiler,
        )
        install_cleanup_transform(self.shell.input_transformer_manager.cleanup_transforms)
        identity.present_as_notebook_kernel(self.shell)

    def exit(self, exit_status: Any = 0) -> None:
        # IPython calls this, having logged why, when it cannot use the
        # profile directory or a config file. SystemExit would end the kernel
        # before it answered anything; it goes on, and what fails next fails
        # in a cell, with a traceback.
        pass
