"""parso's on-disk cache, read and written safely by many kernels at once.

jedi parses what it completes from with parso, which keeps each parse as a
pickle in a directory every process of the user shares (jedi's:
``$XDG_CACHE_HOME/jedi``). parso writes such a file in place, and reads one
back trusting it whole. So a file cut short, because its writer was killed
mid-write or because it was read while another kernel wrote it (JupyterLab
restoring several notebooks starts their kernels together), raised out of
jedi, and IPython's completer then offered nothing, for as long as the file
stayed. Here a file that does not load is a cache miss (parsed again, and
written anew), and a file is written whole or not at all: under a temporary
name beside it, then renamed over it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import tempfile
from typing import Any

#: Set on parso.cache once its functions are replaced.
GUARDED = "_interp_rpc_guarded"


def guard_parso_cache() -> None:
    """Replace parso's cache file functions; once, where parso is installed."""
    try:
        cache: Any = importlib.import_module("parso.cache")
    except ImportError:
        return
    if getattr(cache, GUARDED, False):
        return
    load = cache._load_from_file_system
    hashed_path = cache._get_hashed_path

    def load_whole(hashed_grammar: str, path: Any, p_time: float,
                   cache_path: Any = None) -> Any:
        try:
            return load(hashed_grammar, path, p_time, cache_path=cache_path)
        except Exception:  # cut short or unreadable: what a miss is
            return None

    def save_whole(hashed_grammar: str, path: Any, item: Any, cache_path: Any = None) -> None:
        target = os.fspath(hashed_path(hashed_grammar, path, cache_path=cache_path))
        directory, name = os.path.split(target)
        fd, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        try:
            with os.fdopen(fd, "wb") as file:
                pickle.dump(item, file, pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    cache._load_from_file_system = load_whole
    cache._save_to_file_system = save_whole
    setattr(cache, GUARDED, True)
