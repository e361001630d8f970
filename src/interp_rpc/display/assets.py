"""The profile's script and style, kept as real files beside this module
(profile.js, profile.css) and inlined into its HTML: a notebook output must
work offline, with no request for a file."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).parent

#: The interactive timeline and icicle (runs where the notebook is trusted).
SCRIPT = (_HERE / "profile.js").read_text(encoding="utf-8")
#: Their style, in JupyterLab's theme variables.
STYLE = (_HERE / "profile.css").read_text(encoding="utf-8")
