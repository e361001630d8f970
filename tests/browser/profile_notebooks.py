"""The notebooks of the profile's browser tests (tests/browser/test_lab_profile.py):
one the tests run in Lab, one nbclient executes, one with a profile of
100,000 items and one in a newer format of the extension's data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import test_lab_demo as demo

#: A fresh browser loading Lab, then the kernel starting: under a CPU hog on
#: a shared machine Lab took more than 20 s to show a notebook.
PAGE_TIMEOUT = 180.0

#: Items of the profiled map, and the one that fails in the second profile.
ITEMS = 24
FAILING_ITEM = 5
#: Items of a profile drawn aggregated per pixel column (over 5,000).
MANY = 8000

#: A cell that shows a profile's HTML alone: what frontends without the
#: extension get (its inline script draws it interactive where trusted).
FALLBACK = ("from IPython.display import HTML\n"
            "HTML(interp_rpc_profile._repr_html_())  # the HTML fallback")

CELLS = [
    "%parallel_pool -n 2",
    "%%parallel\nimport time\n\n"
    "def helper(n):\n    return sum(k * k for k in range(n))\n\n"
    "def work(i):\n    time.sleep(0.005)\n    return helper(2000 + i)\n\n"
    "def fail_at(i):\n    if i == " + str(FAILING_ITEM) + ":\n"
    "        raise ValueError(f'item {i} is bad')\n    return helper(i)",
    f"%parallel_map --profile --chunksize 4 work range({ITEMS})",
    "%parallel_profile",
    "from interp_rpc.notebook import current_pool\n"
    "pool = current_pool()\n"
    "with pool.profile() as failing:\n"
    "    try:\n"
    "        list(pool.map('fail_at', range(8), chunksize=8))\n"
    "    except Exception as error:\n"
    "        print('failed as intended:', type(error).__name__)\n"
    "failing",
    f"with pool.profile() as many:\n    list(pool.map('builtins.abs', range({MANY})))\nmany",
    "%parallel_profile -o interp_rpc_profile",
    FALLBACK,
]


def notebook(cells: list[str], outputs: dict[int, list[dict[str, Any]]] | None = None
             ) -> dict[str, Any]:
    """A notebook for demo.KERNEL (ipykernel gets a %load_ext cell first)."""
    if demo.KERNEL != "interp-rpc":
        cells = ["%load_ext interp_rpc", *cells]
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": demo.KERNEL, "language": "python",
                                        "display_name": demo.kernel_display_name(demo.KERNEL)}},
            "cells": [{"id": f"cell-{i}", "cell_type": "code", "metadata": {},
                       "execution_count": None, "source": source,
                       "outputs": (outputs or {}).get(i, [])}
                      for i, source in enumerate(cells)]}


#: The notebook that nbclient executes: a profiled map and its timeline.
EXECUTED_CELLS = [*CELLS[:4], "%parallel_profile -o interp_rpc_profile", FALLBACK]


def executed_notebook(path: Path) -> None:
    """Runs a notebook with nbclient, as CI or a colleague runs one, and saves
    it without a trust signature: Lab opens it untrusted."""
    import nbclient
    import nbformat
    from nbformat.sign import NotebookNotary

    nb = nbformat.from_dict(notebook(EXECUTED_CELLS))
    nbclient.NotebookClient(nb, kernel_name=demo.KERNEL, timeout=int(PAGE_TIMEOUT)).execute()
    assert not NotebookNotary().check_signature(nb), "nbclient signed the notebook"
    nbformat.write(nb, path)


#: Items of the profile that the renderer must draw in well under a second.
LARGE = 100_000


def large_notebook() -> dict[str, Any]:
    """A notebook whose output is a profile of LARGE items on 8 workers, as
    the kernel would send it (the extension's data; the HTML fallback is left
    out: Lab does not draw it, and it would only make the file larger)."""
    from interp_rpc.display import profile_mime
    from interp_rpc.profiling import model

    workers = 8
    records = [model.ItemRecord(
        call_id=i // 50, worker=i % workers, target=f"tasks.t{i % 4}", item=i, count=1,
        outcome=model.FAILED if i % 9973 == 0 else model.OK, enqueued_ns=1_000,
        started_ns=1_000 + (i // workers) * 2_000 + i % 13,
        finished_ns=1_000 + (i // workers) * 2_000 + 1_500 + (i * 7919) % 400, group=1,
        request_items=50, serialize_ns=300 + i % 50, deserialize_ns=200, result_serialize_ns=90,
        request_started_ns=1_000) for i in range(LARGE)]
    profile = model.Profile(workers=workers, start_ns=0, end_ns=records[-1].finished_ns,
                            item_records=records)
    nb = notebook(["many_items"])
    nb["cells"][-1]["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {
        profile_mime.MIME_TYPE: profile_mime.data(profile), "text/plain": profile.text()}}]
    return nb


#: A format this extension does not read, as a newer interp-rpc would write.
FUTURE_FORMAT = 99


def future_notebook() -> dict[str, Any]:
    """A profile's output in a newer format, beside its text fallback."""
    from interp_rpc.display import profile_mime

    nb = notebook(["future_profile"])
    nb["cells"][-1]["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {
        profile_mime.MIME_TYPE: {"version": FUTURE_FORMAT, "timeline": {"nothing": "known"}},
        "text/plain": "a profile"}}]
    return nb
