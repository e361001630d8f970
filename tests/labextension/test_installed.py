"""interp-rpc's JupyterLab extension as JupyterLab finds it: installed where
the Python package's data goes, enabled and OK, self-contained (nothing is
loaded from the network), and reading the format the Python side writes."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from interp_rpc.display import profile_mime

REPO = Path(__file__).resolve().parents[2]
NAME = "interp-rpc"


def installed() -> Path:
    from jupyter_core.paths import jupyter_path

    for base in jupyter_path("labextensions"):
        if (Path(base) / NAME / "package.json").is_file():
            return Path(base) / NAME
    pytest.fail(f"no labextensions/{NAME} on the Jupyter path {jupyter_path('labextensions')}")


def test_jupyter_labextension_list_shows_it_enabled_and_ok() -> None:
    listed = subprocess.run(["jupyter", "labextension", "list"], capture_output=True,
                            text=True, timeout=300, check=True)
    # Lab writes the list to stderr, in colour.
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    lines = [line for line in text.splitlines() if line.split()[:1] == [NAME]]
    assert len(lines) == 1, text
    assert re.search(r"\benabled\b.*\bOK\b", lines[0]), lines[0]
    assert f"(python, {NAME})" in lines[0], lines[0]  # install.json: pip uninstalls it


def test_the_built_extension_loads_nothing_from_the_network() -> None:
    static = installed() / "static"
    scripts = list(static.glob("*.js"))
    assert any(p.name.startswith("remoteEntry.") for p in scripts), scripts
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+\.[a-z]{2,}[^\s'\"]*", text))
        urls -= {"http://www.w3.org/2000/svg"}  # a namespace name, never fetched
        assert not urls, f"{script.name} names {sorted(urls)}"


def test_the_extension_reads_the_format_the_python_side_writes() -> None:
    built = json.loads((installed() / "package.json").read_text())
    assert built["name"] == NAME and built["jupyterlab"]["mimeExtension"]
    scripts = "".join(p.read_text(encoding="utf-8")
                      for p in (installed() / "static").glob("*.js"))
    assert profile_mime.MIME_TYPE in scripts
    source = (REPO / "labextension" / "src" / "data.ts").read_text()
    assert f"export const MIME_TYPE = '{profile_mime.MIME_TYPE}';" in source
    assert f"export const FORMAT_VERSION = {profile_mime.FORMAT_VERSION};" in source


def test_the_workers_panel_speaks_the_kernels_protocol() -> None:
    from interp_rpc.notebook import workers_panel, workers_status

    built = json.loads((installed() / "package.json").read_text())
    assert built["jupyterlab"]["extension"], "the Workers panel's plugin is not built"
    source = (REPO / "labextension" / "src" / "workers_protocol.ts").read_text()
    assert f"export const WORKERS_TARGET = '{workers_panel.TARGET}';" in source
    assert f"export const PROTOCOL_VERSION = {workers_status.PROTOCOL_VERSION};" in source
    scripts = "".join(p.read_text(encoding="utf-8")
                      for p in (installed() / "static").glob("*.js"))
    assert workers_panel.TARGET in scripts
