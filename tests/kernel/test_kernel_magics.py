"""The magics a kernel adds to IPython's (ipykernel's KernelMagics): the same
cells, the same results, in both kernels."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import Kernel


def test_connect_info_prints_the_connection_file(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute("%connect_info")
    assert execution.status == "ok", execution.reply
    text = execution.stream()
    info = json.loads(text[: text.index("\n\nPaste the above JSON")])
    expected = each_shared_kernel.manager.get_connection_info()
    for field in ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port", "ip"):
        assert info[field] == expected[field]
    assert "jupyter <app> --existing" in text


def test_less_pages_a_file(each_shared_kernel: Kernel, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("first line\nsecond line\n")
    execution = each_shared_kernel.execute(f"%less {notes}")
    assert execution.status == "ok", execution.reply
    [payload] = execution.reply["content"]["payload"]
    assert payload["source"] == "page"
    assert payload["data"]["text/plain"] == "first line\nsecond line\n"


def test_less_without_a_file_is_a_usage_error(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute("%less")
    assert execution.status == "error"
    assert execution.reply["content"]["ename"] == "UsageError"
    assert execution.reply["content"]["evalue"] == "Missing filename."


def test_clear_runs(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute("%clear")
    assert execution.status == "ok", execution.reply


def test_autosave_tells_the_notebook(each_shared_kernel: Kernel) -> None:
    execution = each_shared_kernel.execute("%autosave 90")
    assert execution.status == "ok", execution.reply
    [display] = execution.of_type("display_data")
    assert display["content"]["data"]["application/javascript"] == (
        "IPython.notebook.set_autosave_interval(90000)"
    )
    assert execution.stream() == "Autosaving every 90 seconds\n"
    off = each_shared_kernel.execute("%autosave 0")
    assert off.stream() == "Autosave disabled\n"
    bad = each_shared_kernel.execute("%autosave often")
    assert bad.reply["content"]["ename"] == "UsageError"
