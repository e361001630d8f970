"""%parallel_profile and %parallel_map --profile: the notebook's side of pool.profile().

The magics run every %parallel_map and %%parallel inside ``pool.profile()``
(with ``functions=True`` for ``--profile``) and keep the last Profile; this
module shows it, exports it and describes what is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from IPython.display import display

from interp_rpc.display import functions as _profile_functions
from interp_rpc.display import profile_mime
from interp_rpc.display.assets import SCRIPT, STYLE
from interp_rpc.profiling.model import Profile

#: Functions listed in the text version of the function profile.
TEXT_FUNCTIONS = 25


def functions_bundle(profile: Profile) -> dict[str, Any]:
    """The function profile alone (sortable table, icicle): its data for the
    JupyterLab extension, its HTML, and its text: pstats' own listing of the
    merged stats, as %prun prints it."""
    text = profile.stats_listing(TEXT_FUNCTIONS)
    warnings = "".join(f"<p class='irpc-warning'><b>Warning:</b> {w}</p>"
                       for w in profile.warnings())
    # The script finds its data block and timeline by class; without them it
    # only makes the table sortable.
    html = (f"<div class='interp-rpc-profile'><style>{STYLE}</style>{warnings}"
            f"{_profile_functions.html(profile)}<script>{SCRIPT}</script></div>")
    return {profile_mime.MIME_TYPE: profile_mime.data(profile, with_timeline=False),
            "text/html": html, "text/plain": text}


def show(profile: Profile, functions: bool = False) -> None:
    if functions:
        if not profile.functions:
            print("The last run was not profiled by function: run "
                  "%parallel_map --profile TARGET ITEMS first.")
            return
        display(functions_bundle(profile), raw=True)
        return
    display(profile._repr_mimebundle_(), raw=True)


def export(profile: Profile, path: str) -> str:
    """Writes the profile; returns what to tell the user."""
    written = profile.export(Path(path).expanduser())
    what = "Chrome trace (open it in ui.perfetto.dev or chrome://tracing)" \
        if written.suffix.lower() == ".json" else "merged function stats (pstats, snakeviz)"
    return f"Wrote the {what} to {written}"
