"""The magics a Jupyter kernel adds to IPython's, as ipykernel's
KernelMagics offers them: in a kernel there is no terminal, so a pager, a
screen to clear and a notebook's autosave go through the frontend."""

from __future__ import annotations

import sys
from pathlib import Path

from IPython.core import page
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.display import Javascript, display
from IPython.utils import openpy

# `jupyter <app> --existing` finds a kernel's connection file by name in the
# Jupyter runtime directory.
CONNECT_HINT = (
    "Paste the above JSON into a file, and connect with:\n"
    "    $> jupyter <app> --existing <file>\n"
    "or, if you are local, you can connect with just:\n"
    "    $> jupyter <app> --existing {name}\n"
    "or even just:\n"
    "    $> jupyter <app> --existing\n"
    "if this is the most recent Jupyter kernel you have started."
)


def connection_file() -> str:
    """The connection file the kernel was started with (`-f FILE`)."""
    kernel = sys.modules.get("_interp_rpc_kernel")
    path = getattr(kernel, "connection_file", None)
    if not isinstance(path, str):
        raise UsageError("this interpreter runs in no interp-rpc kernel")
    return path


def page_file(shell: InteractiveShell | None, path: str) -> None:
    if not path:
        raise UsageError("Missing filename.")
    assert shell is not None
    if path.endswith(".py"):
        text = shell.pycolorize(openpy.read_py_file(path, skip_encoding_cookie=False))
    else:
        with open(path) as f:
            text = f.read()
    page.page(text)


@magics_class
class KernelMagics(Magics):
    @line_magic
    def connect_info(self, arg_s: str) -> None:
        """Print this kernel's connection file, and how other clients connect
        to the kernel with it (`jupyter console --existing`)."""
        path = Path(connection_file())
        try:
            info = path.read_text()
        except OSError as e:
            raise UsageError(f"cannot read the connection file {path}: {e}") from e
        from jupyter_core.paths import jupyter_runtime_dir

        name = path.name if Path(jupyter_runtime_dir()) == path.parent else str(path)
        print(info + "\n")
        print(CONNECT_HINT.format(name=name))

    @line_magic
    def clear(self, arg_s: str) -> None:
        """Clear the terminal."""
        assert self.shell is not None
        self.shell.system("clear")

    @line_magic
    def less(self, arg_s: str) -> None:
        """Show a file in the frontend's pager; a .py file is highlighted."""
        page_file(self.shell, arg_s)

    @line_magic
    def more(self, arg_s: str) -> None:
        """Show a file in the frontend's pager, as %less."""
        page_file(self.shell, arg_s)

    @line_magic
    def man(self, arg_s: str) -> None:
        """Show the man page of a command in the frontend's pager."""
        assert self.shell is not None
        page.page(self.shell.getoutput(f"man {arg_s} | col -b", split=False))

    @line_magic
    def autosave(self, arg_s: str) -> None:
        """Set the notebook's autosave interval, in seconds (0: off). Only
        the classic notebook acts on it."""
        try:
            interval = int(arg_s)
        except ValueError as e:
            raise UsageError(f"%autosave requires an integer, got {arg_s!r}") from e
        display(
            Javascript(f"IPython.notebook.set_autosave_interval({1000 * interval})"),
            include=["application/javascript"],
        )
        print(f"Autosaving every {interval} seconds" if interval else "Autosave disabled")


__all__ = ["KernelMagics", "connection_file"]
