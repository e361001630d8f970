"""The notebook renderings, checked directly (the notebook tests check them
as a user sees them, through kernels)."""

from __future__ import annotations

import re
import threading
from xml.etree import ElementTree

import pytest

from interp_rpc import CallTimeoutError, InterpreterPool, RemoteError, ShareabilityError
from interp_rpc import _profile_html as profile_html
from interp_rpc.notebook import profile, render

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def remote_error() -> RemoteError:
    return RemoteError(remote_type_name="NegativeInputError", remote_module="demo_work",
                       remote_message="cannot take the square root of -1",
                       remote_traceback='Traceback (most recent call last):\n  File "demo_work.py",'
                                        ' line 24, in checked_sqrt\nNegativeInputError: <-1>\n',
                       target="demo_work.checked_sqrt", worker=1, item_index=2)


def test_remote_error_output_starts_with_a_header_then_the_coloured_traceback() -> None:
    lines = render.remote_error_lines(remote_error())
    plain = [ANSI.sub("", line) for line in lines]
    assert plain[0] == "RemoteError in worker 1 · target demo_work.checked_sqrt · item 2"
    assert any("\x1b[" in line for line in lines[3:]), "the traceback is not coloured"
    assert "NegativeInputError: <-1>" in plain


def test_remote_error_has_an_html_rendering_that_escapes_the_traceback() -> None:
    html = remote_error()._repr_html_()
    assert "interp-rpc-remote-error" in html
    assert "demo_work.NegativeInputError" in html
    assert "&lt;-1&gt;" in html and "<-1>" not in html


def shareability_error(pool: InterpreterPool) -> ShareabilityError:
    with pytest.raises(ShareabilityError) as info:
        pool.call("builtins.len", {"a": 1, "b": {"handle": threading.Lock()}})
    return info.value


def test_shareability_tree_marks_the_path_to_the_culprit() -> None:
    with InterpreterPool(workers=1) as pool:
        err = shareability_error(pool)
    text = render.shareability_tree_text(err)
    assert text.splitlines() == [
        "arguments",
        "└── argument 'obj'  ◀",
        "    ├── ['a']",
        "    └── ['b']  ◀",
        "        └── ['handle']  ◀ lock: cannot pickle '_thread.lock' object",
    ]
    html = render.shareability_html(err)
    (culprit,) = re.findall(r'<li class="interp-rpc-culprit">(.*?)</li>', html)
    assert "[&#x27;handle&#x27;]" in culprit
    bundle = render.bundle_for(err)
    assert bundle is not None and set(bundle) == {"text/html", "text/plain"}


def test_timeout_output_names_the_worker() -> None:
    err = CallTimeoutError("mod.slow", 0.5, worker=1, running_seconds=0.6)
    (line,) = render.timeout_lines(err)
    assert "worker 1 is still running it" in ANSI.sub("", line)


def test_profile_of_a_map_has_a_valid_svg_timeline_and_a_text_fallback() -> None:
    with InterpreterPool(workers=2) as pool, pool.profile() as result:
        pool.map("builtins.abs", range(-50, 50), chunksize=10)
    assert result.items == 100
    assert 0 < result.utilization <= 1
    bundle = profile.functions_bundle(result) if result.functions else result._repr_mimebundle_()
    svg = ElementTree.fromstring(bundle["image/svg+xml"])
    bars = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect")
            if r.get("fill") in profile_html.PALETTE]
    assert len(bars) == 100 + 1  # one per item, and the legend's swatch of builtins.abs
    assert "utilization" in bundle["text/plain"]
    assert "slowest items:" in bundle["text/plain"]
