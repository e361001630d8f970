"""The %parallel magics.

    %parallel_pool [-n N] [--init CODE] [--init-timeout S] [--stuck-after S]
                   [--dask ADDRESS | --dask local[:N] | --local] [--connect-timeout S]
    %%parallel [--timeout S] [--targets I,J]        (or %parallel [...] STATEMENT)
    %parallel_map [--timeout S] [--chunksize K] [-o NAME] [--errors raise|collect]
                  [--profile] TARGET ITEMS
    %parallel_status [--watch S | --stop]
    %parallel_stop [--timeout S] [MAP]      (from a subshell: stop a map of another shell)
    %parallel_profile [--functions] [--export PATH] [-o NAME]
    %parallel_debug [--worker W] [--clear] [--local]   (and %debug after a RemoteError)

Options come first, as with %timeit; what follows them is Python, taken
verbatim (see options.py). Each magic answers --help (and ``%magic?``), and
lives in its own module (pool_magic, cell_magic, map_magic, status_magic,
profile_magic, debug_magic, stop_magic). They share the notebook's one pool (notebook_pool.py);
``current_pool()`` returns it.
"""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class

from interp_rpc.notebook import (
    cell_magic,
    debug_magic,
    map_magic,
    pool_magic,
    profile_magic,
    status_magic,
    stop_magic,
)
from interp_rpc.notebook.notebook_pool import NotebookPool, Pool
from interp_rpc.notebook.workers_panel import WorkersPanels

__all__ = ["ParallelMagics", "current_pool", "load_ipython_extension",
           "unload_ipython_extension"]


@magics_class
class ParallelMagics(Magics):
    """The magics, each in its own module, and the pool they share."""

    def __init__(self, shell: InteractiveShell) -> None:
        super().__init__(shell)
        self.notebook_pool = NotebookPool()
        # JupyterLab's Workers panel, which shows this pool.
        self.workers_panels = WorkersPanels(self.notebook_pool)

    # IPython finds a magic by the name of the function it marks, which is
    # the name of the attribute here.
    parallel_pool = line_magic(pool_magic.parallel_pool)
    parallel = line_cell_magic(cell_magic.parallel)
    parallel_map = line_magic(map_magic.parallel_map)
    parallel_status = line_magic(status_magic.parallel_status)
    parallel_stop = line_magic(stop_magic.parallel_stop)
    parallel_profile = line_magic(profile_magic.parallel_profile)
    parallel_debug = line_magic(debug_magic.parallel_debug)

    @property
    def pool(self) -> Pool:
        """The notebook's pool, created on first use."""
        return self.notebook_pool.pool

    def close(self) -> None:
        self.workers_panels.close()
        self.notebook_pool.close()


def current_pool() -> Pool:
    """The notebook's pool (what the %parallel magics use)."""
    shell = InteractiveShell.instance()
    magics = shell.magics_manager.registry.get("ParallelMagics")
    if not isinstance(magics, ParallelMagics):
        raise RuntimeError("the interp_rpc extension is not loaded: run %load_ext interp_rpc")
    return magics.pool


def load_ipython_extension(shell: InteractiveShell) -> None:
    # Errors render themselves (their _render_traceback_), so no exception
    # handler of the shell is replaced.
    magics = ParallelMagics(shell)
    shell.register_magics(magics)
    magics.workers_panels.register()
    # %debug after a RemoteError debugs the worker's frames; IPython's own
    # %debug does everything else, and comes back on unload.
    ipython_debug = shell.find_line_magic("debug")
    if ipython_debug is not None and not isinstance(ipython_debug, debug_magic.RemoteDebug):
        shell.magics_manager.register_function(debug_magic.RemoteDebug(ipython_debug),
                                               "line", "debug")


def unload_ipython_extension(shell: InteractiveShell) -> None:
    magics = shell.magics_manager.registry.get("ParallelMagics")
    if isinstance(magics, ParallelMagics):
        magics.close()
    ours = shell.find_line_magic("debug")
    if isinstance(ours, debug_magic.RemoteDebug):
        shell.magics_manager.magics["line"]["debug"] = ours.ipython_debug
