"""The %parallel magics on a dask LocalCluster (%parallel_pool --dask local:2),
as a notebook runs them in both kernels (nbclient); and no process of the
cluster outlives the kernel."""

from __future__ import annotations

import ast
import base64
import re
import time
from pathlib import Path
from typing import Any

import pytest
from notebook_support import run_notebook

pytest.importorskip("distributed")

pytestmark = pytest.mark.timeout(600)

ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: How long the cluster's processes may take to exit after the kernel did.
EXIT_LIMIT = 60.0

CELLS = {
    "pool": "%parallel_pool --dask local:2",
    "define": "%%parallel\nimport os\ndef where(x):\n    return (os.getpid(), x)\n",
    "map": "found = %parallel_map where range(20)\n"
           "print([x for _, x in found] == list(range(20)), len({p for p, _ in found}))",
    "profile": "%parallel_profile",
    "functions": "%parallel_map --profile where range(8)",
    "statement": "%parallel print('hello')",
    "status": "%parallel_status --watch 0",
    "bad": "%parallel_pool --dask local:0",
    "unreachable": "%parallel_pool --dask tcp://127.0.0.1:9 --connect-timeout 1",
    "kept": "kept = %parallel_map where [7]\nprint(kept)",
    "children": "import psutil\n"
                "print(sorted(p.pid for p in psutil.Process().children(recursive=True)))",
}


@pytest.fixture(scope="module", params=["python3", "interp-rpc"])
def cells(request: pytest.FixtureRequest) -> dict[str, Any]:
    return run_notebook(request.param, CELLS, timeout=240)


def stream(cell: Any) -> str:
    return ANSI.sub("", "".join(out.get("text", "") for out in cell.outputs
                                if out.output_type == "stream"))


def shown(cell: Any, mime: str) -> str:
    return "".join(str(out.get("data", {}).get(mime, "")) for out in cell.outputs
                   if out.output_type in ("display_data", "update_display_data",
                                          "execute_result"))


def alive(pid: int) -> bool:
    """Running, or stopped: not gone and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_the_pool_runs_on_two_processes(cells: dict[str, Any]) -> None:
    assert "process" in shown(cells["pool"], "text/plain"), cells["pool"].outputs
    assert stream(cells["map"]) == "True 2\n", cells["map"].outputs
    assert stream(cells["statement"]) == "[workers 0-1]\nhello\n"


def test_status_groups_by_process(cells: dict[str, Any]) -> None:
    table = shown(cells["status"], "text/html")
    assert table.count('class="interp-rpc-process"') == 2, table
    assert table.count('class="interp-rpc-idle"') == 2, table


def test_the_profile_has_lanes_for_both_processes(cells: dict[str, Any]) -> None:
    page = shown(cells["profile"], "text/html")
    marker = 'src="data:image/svg+xml;base64,'
    assert marker in page, cells["profile"].outputs
    picture = base64.b64decode(page.split(marker, 1)[1].split('"', 1)[0]).decode()
    assert "20 items" in picture
    assert len(set(re.findall(r"process (\d+) on", picture))) == 2, picture
    assert "where" in shown(cells["functions"], "text/plain"), cells["functions"].outputs


def test_bad_values_are_usage_errors_and_the_pool_stays(cells: dict[str, Any]) -> None:
    assert "UsageError: --dask local:N needs at least 1 process, not 0" in stream(cells["bad"])
    text = stream(cells["unreachable"])
    assert "UsageError: cannot reach the dask scheduler at 'tcp://127.0.0.1:9'" in text, text
    assert "the current one (2 workers) is still in use" in text
    assert re.fullmatch(r"\[\(\d+, 7\)\]\n", stream(cells["kept"])), cells["kept"].outputs


def test_no_process_of_the_cluster_outlives_the_kernel(cells: dict[str, Any]) -> None:
    children = ast.literal_eval(stream(cells["children"]).strip())
    # The 2 dask worker processes (their nannies live in the kernel), and
    # multiprocessing's helpers.
    assert len(children) >= 2, children
    deadline = time.monotonic() + EXIT_LIMIT
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in children if alive(pid)]
    assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]
