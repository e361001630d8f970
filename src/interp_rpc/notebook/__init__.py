"""interp-rpc in notebooks: the IPython extension (``%load_ext interp_rpc``).

The %parallel magics (magics.py) and how they read their line (options.py),
live status and progress (live.py) and profiles of the last run (profile.py).
The errors render themselves, through interp_rpc._render.
"""

from interp_rpc._errors import ParallelCellError
from interp_rpc.notebook.magics import (
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
