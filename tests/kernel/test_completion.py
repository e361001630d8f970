"""Completion as ipykernel completes, with jedi: names that need inference
complete, and the reply lists each match's type for JupyterLab."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
from conftest import Kernel, start_kernel, stop_kernel

TYPES_KEY = "_jupyter_types_experimental"


@pytest.mark.parametrize(("setup", "code", "wanted"), [
    ("import os", "os.pa", "path"),
    ("x = [3, 1, 2]", "sorted(x).ap", "append"),
    ("", "import collections.abc\ncollections.abc.Mapp", "Mapping"),
])
def test_completes_what_needs_inference(each_shared_kernel: Kernel, setup: str, code: str,
                                        wanted: str) -> None:
    if setup:
        assert each_shared_kernel.execute(setup).status == "ok"
    content = each_shared_kernel.complete(code)
    assert content["status"] == "ok", content
    start, end = content["cursor_start"], content["cursor_end"]
    completed = [code[:start] + match + code[end:] for match in content["matches"]]
    assert any(text.endswith(wanted) for text in completed), content["matches"]


def test_each_match_has_a_type(each_shared_kernel: Kernel) -> None:
    assert each_shared_kernel.execute("import os").status == "ok"
    content = each_shared_kernel.complete("os.pa")
    described = content["metadata"][TYPES_KEY]
    assert [d["text"] for d in described] == content["matches"]
    path = next(d for d in described if d["text"].endswith("path"))
    assert path["type"] == "module"
    assert {"start", "end", "signature"} <= set(path)


def test_nothing_to_complete_is_an_empty_reply(each_shared_kernel: Kernel) -> None:
    content = each_shared_kernel.complete("interp_rpc_no_such_name_")
    assert content["matches"] == []
    assert content["cursor_start"] == content["cursor_end"] == len("interp_rpc_no_such_name_")


def test_a_parso_cache_file_cut_short_is_parsed_again(tmp_path: Path) -> None:
    # jedi parses the stubs it completes from with parso, which keeps each
    # parse as a pickle under $XDG_CACHE_HOME/jedi. parso writes that file
    # in place and reads it back trusting it whole: a file cut short (its
    # writer killed, or another kernel writing it at the same moment, as
    # when JupyterLab restores several notebooks at once) failed every
    # first completion that read it. Ours reads such a file as a miss.
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = start_kernel(env=environment)
    try:
        assert "print" in first.complete("pri")["matches"]
    finally:
        stop_kernel(first)
    cached = list(tmp_path.rglob("*.pkl"))
    assert cached
    for path in cached:
        path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])
    second = start_kernel(env=environment)
    try:
        assert "print" in second.complete("pri")["matches"]
    finally:
        stop_kernel(second)
    for path in cached:  # parsed again, and whole again
        assert pickle.loads(path.read_bytes()) is not None
