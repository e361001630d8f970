"""The notebook renderings, checked directly (the notebook tests check them
as a user sees them, through kernels)."""

from __future__ import annotations

import dataclasses
import html
import re
import sys
import threading
from pathlib import Path
from xml.etree import ElementTree

import pytest
from support import Gates, MakePool, wait_until

from interp_rpc import CallTimeoutError, InterpreterPool, RemoteError, ShareabilityError
from interp_rpc.display import errors as render
from interp_rpc.display import profile as profile_html
from interp_rpc.notebook import profile_view

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def remote_error() -> RemoteError:
    return RemoteError(remote_type_name="NegativeInputError", remote_module="demo_work",
                       remote_message="cannot take the square root of -1",
                       remote_traceback='Traceback (most recent call last):\n  File "demo_work.py",'
                                        ' line 24, in checked_sqrt\nNegativeInputError: <-1>\n',
                       target="demo_work.checked_sqrt", worker=1, item_index=2)


def test_remote_error_output_starts_with_a_bold_header_then_the_traceback() -> None:
    lines = render.remote_error_lines(remote_error())
    plain = [ANSI.sub("", line) for line in lines]
    assert plain[0] == "RemoteError in worker 1 · target demo_work.checked_sqrt · item 2"
    # Bold only: no ANSI colour passes WCAG AA on Lab's red error background
    # in both its themes.
    assert set(re.findall(r"\x1b\[([0-9;]*)m", "".join(lines))) == {"1", "0"}
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


def test_the_header_says_what_catches_a_combined_remote_error(pool: InterpreterPool) -> None:
    """A remote ZeroDivisionError is RemoteError[ZeroDivisionError]: the
    header must not claim that isinstance() checks against it fail."""
    with pytest.raises(ZeroDivisionError) as caught:
        pool.call("operator.truediv", 1, 0)
    text = ANSI.sub("", "\n".join(caught.value._render_traceback_()))
    assert "'except ZeroDivisionError' and 'except RemoteError' catch it" in text, text
    assert "do not apply" not in text and "cannot be imported here" not in text
    assert "'except ZeroDivisionError' and" in html.unescape(caught.value._repr_html_())


def test_the_header_says_only_remote_error_catches_an_unresolvable_class() -> None:
    err = remote_error()  # its module, demo_work, cannot be imported here
    assert type(err) is RemoteError
    text = ANSI.sub("", "\n".join(err._render_traceback_()))
    assert ("demo_work.NegativeInputError cannot be imported here, so only "
            "'except RemoteError' catches it") in text, text


def test_the_header_does_not_say_a_remote_system_exit_cannot_be_imported(
        pool: InterpreterPool) -> None:
    # SystemExit is never combined (it would end the caller), not unknown here.
    with pytest.raises(RemoteError) as caught:
        pool.call("sys.exit", 3)
    text = ANSI.sub("", "\n".join(caught.value._render_traceback_()))
    assert "cannot be imported here" not in text, text
    assert ("a remote SystemExit does not exit or stop anything here, so only "
            "'except RemoteError' catches it") in text, text


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
    assert err._repr_html_() == html


def test_timeout_output_names_the_worker() -> None:
    err = CallTimeoutError("mod.slow", 0.5, worker=1, running_seconds=0.6)
    (line,) = err._render_traceback_()
    assert ANSI.sub("", line).startswith("CallTimeoutError: ")
    assert "worker 1 is still running it" in ANSI.sub("", line)


def test_profile_of_a_map_has_a_valid_svg_timeline_and_a_text_fallback() -> None:
    with InterpreterPool(workers=2) as pool, pool.profile() as result:
        list(pool.map("builtins.abs", range(-50, 50), chunksize=10))
    assert result.items == 100
    assert 0 < result.utilization <= 1
    bundle = (profile_view.functions_bundle(result) if result.functions
              else result._repr_mimebundle_())
    svg = ElementTree.fromstring(bundle["image/svg+xml"])
    bars = [r for r in svg.iter("{http://www.w3.org/2000/svg}rect")
            if r.get("fill") in profile_html.PALETTE]
    assert len(bars) == 100 + 1  # one per item, and the legend's swatch of builtins.abs
    assert "utilization" in bundle["text/plain"]
    assert "slowest items:" in bundle["text/plain"]


def test_errors_render_without_ipython_or_the_notebook_layer() -> None:
    """Scripts, marimo and web apps call _repr_html_ and _render_traceback_
    too: rendering must not pull in IPython or interp_rpc.notebook."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from interp_rpc import RemoteError, ShareabilityError, CallTimeoutError\n"
        "err = RemoteError(remote_type_name='E', remote_module='m', remote_message='x',"
        " remote_traceback='Traceback...\\nE: x\\n', worker=0)\n"
        "assert 'RemoteError' in err._repr_html_()\n"
        "assert err._render_traceback_()\n"
        "assert ShareabilityError('argument 0', 'lock', 'no')._repr_html_()\n"
        "assert CallTimeoutError('t', 1.0)._render_traceback_()\n"
        "loaded = [m for m in sys.modules if m.startswith(('IPython', 'interp_rpc.notebook'))]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_parallel_cell_error_groups_identical_errors_by_worker() -> None:
    from interp_rpc.notebook import ParallelCellError

    same = remote_error()
    other = RemoteError(remote_type_name="KeyError", remote_module="builtins",
                        remote_message="'k'", remote_traceback="KeyError: 'k'\n", worker=3)
    err = ParallelCellError({0: same, 1: same, 2: same, 3: other, 5: same}, workers=6)
    plain = [ANSI.sub("", line) for line in err._render_traceback_()]
    headers = [line for line in plain if line.startswith("RemoteError in")]
    assert headers == ["RemoteError in workers 0-2, 5 · %%parallel",
                       "RemoteError in worker 3 · %%parallel"]
    assert sum("NegativeInputError: <-1>" in line for line in plain) == 1


def test_worker_ranges_collapse_runs() -> None:
    assert render.worker_ranges([3]) == "worker 3"
    assert render.worker_ranges([0, 1, 2, 3]) == "workers 0-3"
    assert render.worker_ranges([5, 0, 2, 1]) == "workers 0-2, 5"


def test_profile_timeline_is_dark_on_white_inline_too() -> None:
    """The timeline is one self-contained picture, shown as an image inline
    too: its own white background and dark text, readable in a dark theme."""
    with InterpreterPool(workers=2) as pool, pool.profile() as result:
        list(pool.map("builtins.abs", range(-8, 8), chunksize=4))
    svg_ns = "{http://www.w3.org/2000/svg}"
    image = ElementTree.fromstring(profile_html.static_svg(result))
    background = next(image.iter(f"{svg_ns}rect"))
    assert background.get("fill") == "#ffffff"
    assert next(image.iter(f"{svg_ns}text")).get("fill") == profile_html.TEXT
    assert 'src="data:image/svg+xml;base64,' in profile_html.html(result)


# ------------------------------------------------------------ contrast (WCAG AA)

LAB_THEMES = Path(sys.prefix) / "share" / "jupyter" / "lab" / "themes" / "@jupyterlab"
TEXT_COLOUR = re.compile(r"(?<![-\w])color:\s*var\((--jp-[\w-]+),\s*(#[0-9a-fA-F]{6})\)")


def rgb(value: str, behind: tuple[float, float, float]) -> tuple[float, float, float]:
    """A CSS colour (#hex, #abc, white, rgba()) composited over ``behind``."""
    value = value.strip()
    if value == "white":
        return (255.0, 255.0, 255.0)
    if value.startswith("#"):
        digits = value[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        r, g, b = (int(digits[i:i + 2], 16) for i in (0, 2, 4))
        return (float(r), float(g), float(b))
    parts = [float(p) for p in re.findall(r"[0-9.]+", value)]
    alpha = parts[3] if len(parts) > 3 else 1.0
    r, g, b = (parts[i] * alpha + behind[i] * (1 - alpha) for i in range(3))
    return (r, g, b)


def contrast(a: tuple[float, float, float], b: tuple[float, float, float]) -> float:
    def luminance(c: tuple[float, float, float]) -> float:
        channels = [v / 255 for v in c]
        linear = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def theme_variables(theme: str) -> dict[str, str]:
    css = (LAB_THEMES / theme / "index.css").read_text()
    variables = dict(re.findall(r"(--[\w-]+):\s*([^;]+);", css))

    def resolve(value: str) -> str:
        match = re.fullmatch(r"\s*var\((--[\w-]+)(?:,\s*(.+))?\)\s*", value)
        if match is None:
            return value
        name, fallback = match.groups()
        return resolve(variables[name]) if name in variables else resolve(fallback or "")

    return {name: resolve(value) for name, value in variables.items()}


def our_html() -> str:
    """Every HTML rendering whose text colours we choose."""
    from interp_rpc.notebook import live

    with InterpreterPool(workers=1) as pool:
        err = shareability_error(pool)
        view = live.LiveView(pool, target="t", total=3)
        status_html = view.render()["text/html"]
    return "".join([remote_error()._repr_html_(),
                    err._repr_html_(), status_html,
                    live.summary("t", 3, 3, 1.0, 2)["text/html"]])


def test_every_text_colour_meets_wcag_aa_in_labs_themes_and_its_fallback_on_white() -> None:
    colours = set(TEXT_COLOUR.findall(our_html()))
    assert len(colours) >= 3, colours
    white = (255.0, 255.0, 255.0)
    low = [(name, fallback) for name, fallback in colours
           if contrast(rgb(fallback, white), white) < 4.5]
    assert not low, f"fallbacks below AA on white: {low}"
    if not LAB_THEMES.exists():
        pytest.skip("JupyterLab's themes are not installed")
    for theme in ("theme-light-extension", "theme-dark-extension"):
        variables = theme_variables(theme)
        page = rgb(variables["--jp-layout-color0"], white)
        for name, _ in colours:
            ratio = contrast(rgb(variables[name], page), page)
            assert ratio >= 4.5, f"{name} is {ratio:.2f}:1 in {theme}"


def test_the_status_table_marks_its_states_and_keeps_their_words_in_the_body_colour() -> None:
    # Regression: the words had theme colours, and none of Lab's passes AA as
    # text on the table's striped rows in both themes (its muted grey was
    # 4.499:1 for "idle" in the light theme; green and red fail in the dark).
    from interp_rpc.notebook import live

    with InterpreterPool(workers=1) as pool:
        html = live.LiveView(pool).render()["text/html"]
    cells = re.findall(r'<td style="([^"]*)">(idle|busy|stuck|dead|starting|stopped)</td>', html)
    assert cells, html
    for style, state in cells:
        assert "color:" not in style.replace("border-left", ""), (state, style)
        assert "border-left:4px solid" in style


def test_progress_counts_this_maps_items_only(make_pool: MakePool, gates: Gates) -> None:
    """An earlier map that timed out goes on running; its item finishing while
    the next map waits must not count for the next one ("1/1" with none done)."""
    from interp_rpc import CallTimeoutError
    from interp_rpc.notebook import live

    pool = make_pool(workers=1)
    gate = gates.new()
    with pytest.raises(CallTimeoutError):
        list(pool.map("pooltasks.map_item", [gate.map_item("earlier")], timeout=0.2))
    records = pool.call_records()
    since = ((records[-1].seq if records else 0), int(pool._engine.last_call_id) + 1)
    view = live.LiveView(pool, target="next", total=1, since=since)
    gate.release()
    wait_until(lambda: any(r.target == "pooltasks.map_item" for r in pool.call_records()),
               what="the earlier map's item finishing")
    assert view.done() == 0
    assert "0/1 items" in view.render()["text/plain"]


def test_progress_shows_the_rate_and_the_eta(make_pool: MakePool, gates: Gates) -> None:
    from interp_rpc.notebook import live

    pool = make_pool(workers=1)
    gate = gates.new()
    records = pool.call_records()
    since = ((records[-1].seq if records else 0), int(pool._engine.last_call_id) + 1)
    view = live.LiveView(pool, target="pooltasks.map_item", total=2, since=since)
    results = pool.map("pooltasks.map_item", [("ok", 0), gate.map_item(1)], chunksize=1)
    assert next(results) == 0
    gate.wait_started()
    wait_until(lambda: view.done() == 1, what="item 0 counted")
    frame = view.render()
    for shown in (frame["text/plain"], frame["text/html"]):
        assert re.search(r"1/2 items \(50%\), [\d.]+ s, [\d.]+ items/s, ETA [\d.]+ s", shown), \
            shown
    gate.release()
    assert list(results) == [1]
    assert "ETA" not in view.render()["text/plain"]  # nothing left to wait for


def test_the_widget_bar_shows_the_rate_and_eta_and_is_closed_at_the_end(
        make_pool: MakePool, gates: Gates, monkeypatch: pytest.MonkeyPatch) -> None:
    from interp_rpc.notebook import live

    monkeypatch.setenv("JPY_SESSION_NAME", "a notebook")  # as JupyterLab starts kernels
    monkeypatch.setattr(live, "in_terminal", lambda: False)  # another test's shell may exist
    pool = make_pool(workers=1)
    gate = gates.new()
    records = pool.call_records()
    since = ((records[-1].seq if records else 0), int(pool._engine.last_call_id) + 1)
    view = live.LiveView(pool, target="pooltasks.map_item", total=2, since=since, refresh=60)
    results = pool.map("pooltasks.map_item", [("ok", 0), gate.map_item(1)], chunksize=1)
    view.start()
    try:
        assert next(results) == 0
        wait_until(lambda: view.done() == 1, what="item 0 counted")
        view._publish()
        assert view._bar is not None and view._bar_label is not None
        assert view._bar.value == 1
        assert re.fullmatch(r"1/2 items \(50%\), [\d.]+ s, [\d.]+ items/s, ETA [\d.]+ s",
                            view._bar_label.value), view._bar_label.value
        assert "items/s" not in view.render()["text/plain"]  # one bar: the widget's
    finally:
        gate.release()
        list(results)
        view.stop()
    assert view._bar.comm is None and view._bar_label.comm is None  # closed


@pytest.mark.parametrize(("state", "busy_seconds", "shown"), [
    ("busy", 9.99, "busy"), ("busy", 10.0, "stuck"), ("busy", 60.0, "stuck"),
    ("idle", 60.0, "idle"), ("dead", 60.0, "dead"),
])
def test_one_stuck_rule_for_both_status_tables(state: str, busy_seconds: float,
                                                shown: str) -> None:
    # The cluster's table (drawn in Python) once had its own copy of the
    # engine's rule and colours; both now come from the engine.
    from interp_rpc.notebook import polled_view
    from interp_rpc.records import WorkerStatus

    status = WorkerStatus(index=0, state=state, target="t" if state == "busy" else None,
                          item_index=None, busy_seconds=busy_seconds, calls_done=0,
                          busy_seconds_total=busy_seconds, detail=None)
    assert status.displayed_state(10.0) == shown
    table = polled_view.render([status], stuck_after=10.0)["text/html"]
    marker = {"busy": "var(--jp-success-color1, #1a7f37)", "idle": "transparent"}.get(
        shown, "var(--jp-error-color1, #b42318)")
    assert f'<td style="border-left:4px solid {marker};font-weight:bold">{shown}</td>' in table


def test_the_cluster_table_is_the_local_table_with_a_title_per_process() -> None:
    # One renderer: a cluster's rows, which its processes report, are drawn
    # by the engine's table code, so both tables have the same columns,
    # rows and text layout.
    pytest.importorskip("distributed")
    from interp_rpc import InterpreterPool
    from interp_rpc.dask import ClusterWorker
    from interp_rpc.notebook import polled_view
    from interp_rpc.records import WorkerStatus

    with InterpreterPool(1) as pool:
        local_html, local_text = pool.render_status()
    where = ClusterWorker(0, address="tcp://10.0.0.5:4000", host="node-a", pid=77,
                          subinterpreter=0)
    idle = WorkerStatus(index=where, state="idle", target=None, item_index=None,
                        busy_seconds=0.0, calls_done=0, busy_seconds_total=0.0, detail=None)
    cluster = polled_view.render([idle], stuck_after=10.0, note="a <note>")
    local_rows = local_html[local_html.index("<table"):local_html.index("</table>")]
    local_head, local_row = local_rows.split("</thead><tbody>")
    assert cluster["text/html"].startswith('<div class="interp-rpc-live">' + local_head)
    assert local_row in cluster["text/html"]
    assert 'class="interp-rpc-process"' in cluster["text/html"]
    assert "a &lt;note&gt;" in cluster["text/html"]
    local_lines = local_text.splitlines()
    cluster_lines = cluster["text/plain"].splitlines()
    assert cluster_lines[0] == local_lines[0]  # the header
    assert cluster_lines[1] == "node-a · process 77 · dask worker tcp://10.0.0.5:4000"
    assert cluster_lines[2] == local_lines[1]
    assert cluster_lines[3] == "a <note>"
    # A pool whose workers do not say where they live: the rows alone.
    plain = dataclasses.replace(idle, index=0)
    assert polled_view.render([plain], stuck_after=10.0)["text/plain"] == local_text
    empty = polled_view.render([], stuck_after=10.0)
    assert "no worker serves the pool" in empty["text/plain"]
    waiting = polled_view.render(None, stuck_after=10.0, note="No answer yet.")
    assert "<table" not in waiting["text/html"] and "No answer yet." in waiting["text/html"]
