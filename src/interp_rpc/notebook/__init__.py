"""interp-rpc in notebooks: the IPython extension (``%load_ext interp_rpc``).

The %parallel magics (magics.py), rich renderings of the pool's errors
(render.py), live status and progress (live.py) and profiles of the last run
(profile.py).
"""

from interp_rpc.notebook.magics import (
    ParallelCellError,
    current_pool,
    load_ipython_extension,
    unload_ipython_extension,
)

__all__ = [
    "ParallelCellError",
    "current_pool",
    "load_ipython_extension",
    "unload_ipython_extension",
]
