"""Profiling in a notebook, executed with nbclient in both kernels: a
%parallel_map --profile, %parallel_profile, and pool.profile() from code."""

from __future__ import annotations

import base64
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from interp_rpc.display.profile_mime import FORMAT_VERSION, MIME_TYPE

CELLS = [
    "%parallel_pool -n 2",
    "%%parallel\ndef helper(n):\n    return sum(range(n))\n\ndef work(n):\n    return helper(n)",
    "%parallel_map --profile work range(200)",
    "%parallel_profile",
    "from interp_rpc.notebook import current_pool\npool = current_pool()\n"
    "with pool.profile() as prof:\n    list(pool.map('builtins.abs', range(-100, 100)))\nprof",
]


def run(kernel_name: str) -> Any:
    cells = CELLS if kernel_name == "interp-rpc" else ["%load_ext interp_rpc", *CELLS]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, kernel_name=kernel_name, timeout=120).execute()
    return nb


@pytest.fixture(scope="module", params=["python3", "interp-rpc"])
def executed(request: pytest.FixtureRequest) -> Any:
    return run(request.param)


def outputs_of(nb: Any, text: str) -> list[Any]:
    (cell,) = [c for c in nb.cells if c.source.startswith(text)]
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert not errors, errors
    return list(cell.outputs)


def data(outputs: list[Any], mime: str) -> str:
    return "".join(o.get("data", {}).get(mime, "") for o in outputs)


def test_map_with_profile_names_a_function_called_inside_the_target(executed: Any) -> None:
    outputs = outputs_of(executed, "%parallel_map --profile")
    assert "helper" in data(outputs, "text/plain")
    assert "irpc-sortable" in data(outputs, "text/html")


def test_parallel_profile_has_a_static_picture_that_survives_sanitizing(executed: Any) -> None:
    outputs = outputs_of(executed, "%parallel_profile")
    html = data(outputs, "text/html")
    marker = 'src="data:image/svg+xml;base64,'
    assert marker in html
    picture = base64.b64decode(html.split(marker, 1)[1].split('"', 1)[0]).decode()
    assert "worker 1" in picture and "200 items" in picture
    assert "interp-rpc-gantt" in data(outputs, "image/svg+xml")


def test_pool_profile_from_code_displays_as_the_timeline(executed: Any) -> None:
    outputs = outputs_of(executed, "from interp_rpc.notebook import current_pool")
    assert "interp-rpc-profile" in data(outputs, "text/html")
    assert "200 / " in data(outputs, "text/plain")


@pytest.mark.parametrize(("cell", "items"), [("%parallel_map --profile", None),
                                             ("%parallel_profile", 200),
                                             ("from interp_rpc.notebook import current_pool", 200)])
def test_every_profile_output_carries_the_jupyterlab_extensions_data(
        executed: Any, cell: str, items: int | None) -> None:
    (payload,) = [o["data"][MIME_TYPE] for o in outputs_of(executed, cell)
                  if MIME_TYPE in o.get("data", {})]
    assert payload["version"] == FORMAT_VERSION
    if items is None:  # --profile: the function profile alone
        assert payload["timeline"] is None
        assert any("helper" in row[0] for row in payload["functions"]["rows"])
    else:
        assert payload["timeline"]["count"] == items
