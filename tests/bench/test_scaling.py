"""The scaling benchmark works: ``bench/scaling.py --quick`` measures every
axis for every contender and writes complete results. No timing is
asserted: this proves the instrument, not the numbers.

It runs the way CI and scripts start it: in the background of a shell
without job control, which starts it with SIGINT ignored. Its Ctrl-C axis
must still measure Ctrl-C, not report every round as lost.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCALING = REPO / "bench" / "scaling.py"

sys.path.insert(0, str(SCALING.parent))
from scaling import CONTENDERS, INTERRUPT_AXIS, IPE, IPE_MAP_LIMIT, OURS  # noqa: E402

#: A shell that ignores SIGINT, then runs its arguments: what ``cmd &`` in a
#: script does to the command (the ignored disposition survives exec).
SIGINT_IGNORED = ["sh", "-c", 'trap "" INT; exec "$@"', "sh"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str, Path]:
    out = tmp_path_factory.mktemp("scaling")
    done = subprocess.run([*SIGINT_IGNORED, sys.executable, str(SCALING), "--quick",
                           "--out-dir", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return json.loads((out / "scaling.json").read_text()), done.stdout, out


def _is_time(value: object) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value > 0


def test_every_axis_has_a_time_for_every_contender(
        quick: tuple[dict[str, Any], str, Path]) -> None:
    document, _, _ = quick
    axes = {row["axis"] for row in document["rows"]}
    assert {"map", "bytes argument", "bytes result", "workers", INTERRUPT_AXIS} <= axes
    for row in document["rows"]:
        if row["axis"] == INTERRUPT_AXIS:
            continue  # interp-rpc alone, below
        expected = set(CONTENDERS)
        if row["axis"] == "map" and row["size"] > IPE_MAP_LIMIT:
            expected.remove(IPE)  # too slow to map that many
        assert set(row["seconds"]) == expected, row["label"]
        assert all(_is_time(t) for times in row["seconds"].values() for t in times), row


def test_ctrl_c_interrupts_every_round_though_sigint_was_ignored_at_start(
        quick: tuple[dict[str, Any], str, Path]) -> None:
    document, stdout, _ = quick
    assert "Ctrl-C lost" not in stdout
    rows = [row for row in document["rows"] if row["axis"] == INTERRUPT_AXIS]
    assert [row["label"] for row in rows] == ["until KeyboardInterrupt",
                                              "until the next call answers"]
    for row in rows:
        assert list(row["seconds"]) == [OURS]
        assert len(row["seconds"][OURS]) == document["rounds"]
        assert all(_is_time(t) for t in row["seconds"][OURS])
    # The run says what it found and what it did about it.
    assert any("SIGINT's handler was" in note and "installed Python's default handler" in note
               for note in document["notes"])


def test_the_chart_and_the_table_are_written(quick: tuple[dict[str, Any], str, Path]) -> None:
    _, stdout, out = quick
    assert (out / "scaling.md").read_text() == stdout
    root = ElementTree.parse(out / "scaling.svg").getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # Every point is a marker whose title names its contender.
    titles = [element.text or "" for element in root.iter("{http://www.w3.org/2000/svg}title")]
    for name in CONTENDERS:
        assert any(title.startswith(f"{name}: ") for title in titles), name
