"""A whole notebook runs on the kernel through nbclient, as `jupyter execute`
and papermill run notebooks."""

from __future__ import annotations

import nbformat
from nbclient import NotebookClient


def test_a_notebook_runs_with_its_outputs() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("print('hello')"),
        nbformat.v4.new_code_cell("6 * 7"),
        nbformat.v4.new_code_cell("from IPython.display import HTML\nHTML('<i>x</i>')"),
        nbformat.v4.new_code_cell("import ipywidgets\nipywidgets.IntSlider(value=5)"),
        nbformat.v4.new_code_cell("%%time\nsum(range(10))"),
        nbformat.v4.new_code_cell("input()"),  # nbclient allows no stdin
    ]
    NotebookClient(notebook, kernel_name="interp-rpc", timeout=60, allow_errors=True).execute()
    outputs = [cell.outputs for cell in notebook.cells]
    assert outputs[0][0]["text"] == "hello\n"
    assert outputs[1][0]["data"]["text/plain"] == "42"
    assert outputs[2][0]["data"]["text/html"] == "<i>x</i>"
    assert "application/vnd.jupyter.widget-view+json" in outputs[3][0]["data"]
    assert any(o.get("name") == "stdout" and "Wall time" in o["text"] for o in outputs[4])
    assert outputs[5][0]["ename"] == "StdinNotImplementedError"
    assert [cell.execution_count for cell in notebook.cells] == [1, 2, 3, 4, 5, 6]
