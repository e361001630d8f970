"""interp-rpc in notebooks: the IPython extension (``%load_ext interp_rpc``).

The %parallel magics (magics.py) and how they read their line (options.py),
live status and progress (live.py, polled_view.py), what workers print
(worker_output.py over relay.py), profiles of the last run (profile_view.py)
and the error of a %%parallel cell (errors.py). Errors render themselves,
through interp_rpc.display.
"""

from interp_rpc.notebook.errors import ParallelCellError
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
