"""%parallel_map --profile and %parallel_profile in an in-process IPython shell."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from shell_support import shell_with_extension

from interp_rpc.display.profile_mime import MIME_TYPE
from interp_rpc.profiling.model import Profile


@pytest.fixture(scope="module")
def shell() -> Iterator[InteractiveShell]:
    yield from shell_with_extension("-n 2 --init 'import profiletasks'")


def displayed(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = []
    monkeypatch.setattr("interp_rpc.notebook.profile_view.display",
                        lambda bundle, raw=False: shown.append(bundle))
    return shown


def test_map_with_profile_shows_the_top_functions_of_every_worker(
        shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = displayed(monkeypatch)
    results = shell.run_line_magic("parallel_map", "--profile profiletasks.digit_sum range(60)")
    assert len(results) == 60
    (bundle,) = shown
    assert "digits_helper" in bundle["text/plain"]  # pstats' listing, as %prun prints it
    assert "irpc-sortable" in bundle["text/html"]
    # The JupyterLab extension's data: the function profile alone.
    data = bundle[MIME_TYPE]
    assert data["timeline"] is None and data["summary"] == []
    assert any("digits_helper" in row[0] for row in data["functions"]["rows"])
    json.dumps(bundle)  # what the kernel sends
    shell.run_line_magic("parallel_profile", "--functions")
    assert "digits_helper" in shown[-1]["text/plain"]


def test_parallel_profile_shows_the_last_map_item_by_item(
        shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch) -> None:
    shown = displayed(monkeypatch)
    shell.run_line_magic("parallel_map", "profiletasks.digit_sum range(30)")
    assert not shown  # without --profile nothing is shown
    shell.run_line_magic("parallel_profile", "")
    (bundle,) = shown
    assert set(bundle) == {MIME_TYPE, "text/html", "image/svg+xml", "text/plain"}
    assert "30 / " in bundle["text/plain"]  # items / requests
    assert bundle[MIME_TYPE]["timeline"]["count"] == 30
    shell.run_line_magic("parallel_profile", "--functions")
    assert len(shown) == 1  # not a --profile run: says so instead


def test_parallel_profile_exports_and_stores(shell: InteractiveShell, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("parallel_map", "--profile profiletasks.digit_sum range(40)")
    trace = tmp_path / "trace.json"
    shell.run_line_magic("parallel_profile", f"--export {trace}")
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in events if e["ph"] == "X" and e["cat"] == "item") == 40
    shell.run_line_magic("parallel_profile", f"--export {tmp_path / 'run.pstats'}")
    assert (tmp_path / "run.pstats").stat().st_size > 0
    assert "Chrome trace" in capsys.readouterr().out
    shell.run_line_magic("parallel_profile", "-o last_prof")
    stored = shell.user_ns["last_prof"]
    assert isinstance(stored, Profile) and stored.items == 40 and stored.stats is not None
