"""Running the magics' cells as a notebook, through a real kernel (nbclient)."""

from __future__ import annotations

from typing import Any

import nbformat
from nbclient import NotebookClient


def run_notebook(kernel_name: str, cells: dict[str, str], timeout: float) -> dict[str, Any]:
    """Runs ``cells`` (name: source) in order in a new notebook on that
    kernel, loading the extension first where the kernel does not (ipykernel);
    returns each executed cell by its name. Errors do not stop the run."""
    nb = nbformat.v4.new_notebook()
    if kernel_name != "interp-rpc":
        nb.cells.append(nbformat.v4.new_code_cell("%load_ext interp_rpc"))
    for source in cells.values():
        nb.cells.append(nbformat.v4.new_code_cell(source))
    NotebookClient(nb, kernel_name=kernel_name, timeout=timeout, allow_errors=True).execute()
    by_source = {cell.source: cell for cell in nb.cells}
    return {name: by_source[source] for name, source in cells.items()}
