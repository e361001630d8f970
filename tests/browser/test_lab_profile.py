"""The interactive profile in JupyterLab, in headless Chromium, in the light
and the dark theme, driven with the mouse as a user would.

The profile's outputs carry the data of interp-rpc's JupyterLab extension
(application/vnd.interp-rpc.profile+json), which the ./dev stage installs:
Lab draws them with the extension's renderer, which runs nothing from the
kernel, so trusted and untrusted notebooks alike show the interactive
timeline and icicle.

A notebook (written here, never the repository's) profiles a map with
``%parallel_map --profile``, shows it with ``%parallel_profile``, and
profiles a map with a failing item from code with ``pool.profile()``. The
tests run it in Lab, then hover a bar and read its card, zoom with the wheel
and with a shift-drag, pan with a drag, reset, sort the function table by a
header click, hover and zoom the icicle, and check the WCAG AA contrast of
every text and that the dark theme shows no white box. A second notebook is
executed by nbclient, as CI or a colleague runs one, and opened untrusted:
its timeline must be interactive too, and the wheel must zoom it.

Artifacts, kept after the run, in build/artifacts/browser-profile/:
``{theme}-timeline.png`` (the profile cell), ``{theme}-hover.png``,
``{theme}-zoomed.png``, ``{theme}-icicle-zoomed.png``, ``{theme}-notebook.png``
(the whole notebook), ``{theme}-untrusted.png``, the browser console logs and
the server log. The helpers (server, browser, contrast) come from the demo's
browser test, tests/browser/test_lab_demo.py; the notebooks from
profile_notebooks.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
import test_lab_demo as demo  # noqa: E402
from lab_session import Server, browser_kept, new_browser, serving  # noqa: E402
from profile_notebooks import (  # noqa: E402
    CELLS,
    FAILING_ITEM,
    FUTURE_FORMAT,
    ITEMS,
    LARGE,
    MANY,
    PAGE_TIMEOUT,
    executed_notebook,
    future_notebook,
    large_notebook,
    notebook,
)
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.actions.wheel_input import ScrollOrigin  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

ARTIFACTS = demo.REPO / "build" / "artifacts" / "browser-profile"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}

pytestmark = demo.pytestmark


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    notebooks = {f"profile-{theme}.ipynb": notebook(CELLS) for theme in THEMES}
    notebooks |= {"large.ipynb": large_notebook(), "future.ipynb": future_notebook()}
    with serving(tmp_path_factory, ARTIFACTS, notebooks,
                 lambda root: executed_notebook(root / "untrusted.ipynb")) as server:
        yield server


def save_console(browser: WebDriver, name: str, earlier: list[str] | None = None) -> list[str]:
    """The browser's console (what a test read before, then the rest), saved."""
    lines = [*(earlier or []), *(f"{e['level']} {e['message']}"
                                 for e in browser.get_log("browser"))]
    (ARTIFACTS / f"browser-console-{name}.log").write_text("".join(f"{x}\n" for x in lines))
    return lines


def open_and_wait_idle(browser: WebDriver, server: Server, path: str) -> None:
    """Open ``path`` in a workspace of its own (Lab restores nothing else into
    it), and wait until its kernel is the intended one and idle."""
    lab = server.lab
    workspace = re.sub(r"\W", "-", path)
    browser.get(f"{lab.url}/lab/workspaces/{workspace}/tree/{path}?token={lab.token}")
    demo.wait(browser, PAGE_TIMEOUT,
              lambda b: b.find_elements(By.CSS_SELECTOR, demo.CODE_CELLS),
              f"JupyterLab did not show {path}'s cells")
    expected = demo.kernel_display_name(demo.KERNEL)
    demo.wait(browser, PAGE_TIMEOUT,
              lambda b: demo.js(b, demo.KERNEL_NAME_JS, demo.NOTEBOOK) == expected
              and demo.js(b, demo.KERNEL_STATUS_JS, demo.NOTEBOOK) == "idle",
              f"the {expected} kernel of {path} did not become idle")


@dataclass
class Page:
    """A notebook run with Run All in one theme, in its own browser."""

    theme: str
    browser: WebDriver
    console: list[str]


@pytest.fixture(scope="module", params=list(THEMES))
def page(request: pytest.FixtureRequest, server: Server,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    theme = request.param
    server.shut_down_kernels()  # the other theme's kernel and pool: not needed any more
    server.put_setting("@jupyterlab/apputils-extension:themes", {"theme": THEMES[theme]})
    browser = new_browser(tmp_path_factory, ARTIFACTS, theme)
    result = Page(theme, browser, [])
    with browser_kept(browser, ARTIFACTS, theme, result.console):
        open_and_wait_idle(browser, server, f"profile-{theme}.ipynb")
        demo.run_all(browser, demo.RunAll(), len(CELLS) + (demo.KERNEL != "interp-rpc"))
        demo.screenshot_whole_notebook(browser, ARTIFACTS / f"{theme}-notebook.png")
        yield result


# ------------------------------------------------------------------ helpers


def profile_cell(page: Page, text: str) -> Any:
    cell = demo.cell_containing(page.browser, text)
    demo.js(page.browser, "arguments[0].scrollIntoView({block: 'start'});", cell)
    return cell


def live_timeline(page: Page, cell: Any) -> Any:
    """The interactive timeline's <svg>, once the cell's script built it."""
    try:
        return demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: [
            s for s in cell.find_elements(By.CSS_SELECTOR, ".irpc-live svg.interp-rpc-gantt")
            if demo.visible(s)], "")[0]
    except TimeoutException:
        pytest.fail("the trusted output's script did not draw the interactive timeline; "
                    f"browser console: {save_console(page.browser, page.theme + '-timeline')}")


def view_range(page: Page, svg: Any) -> tuple[float, float]:
    """The time range the timeline shows, in ns from the profile's start."""
    return (float(svg.get_attribute("data-view-start")),
            float(svg.get_attribute("data-view-end")))


def card(cell: Any) -> Any:
    return cell.find_element(By.CSS_SELECTOR, ".irpc-card")


def item_bars(svg: Any) -> list[Any]:
    return list(svg.find_elements(By.CSS_SELECTOR, "rect[data-item]"))


#: Where the first lane starts, and each lane's height, in svg units.
TIMELINE_TOP, LANE = 30, 26


def lane_of(bar: Any) -> int:
    """The worker whose lane ``bar`` is drawn in."""
    return (int(float(bar.get_attribute("y"))) - TIMELINE_TOP) // LANE


def problem_bars(page: Page, svg: Any) -> list[Any]:
    """The bars marked failed, cancelled or timed out (a red stroke)."""
    return [b for b in item_bars(svg) if demo.js(
        page.browser, "return getComputedStyle(arguments[0]).stroke;", b) == "rgb(207, 34, 46)"]


def shot(page: Page, element: Any, name: str) -> None:
    demo.js(page.browser, "arguments[0].scrollIntoView({block: 'start'});", element)
    element.screenshot(str(ARTIFACTS / f"{page.theme}-{name}.png"))


# -------------------------------------------------------------- the timeline


def test_the_timeline_is_interactive_in_a_trusted_notebook(page: Page) -> None:
    cell = profile_cell(page, "%parallel_profile")
    svg = live_timeline(page, cell)
    assert cell.find_elements(By.CSS_SELECTOR, ".irpc-mime"), \
        "the timeline was not drawn by the JupyterLab extension"
    assert not cell.find_elements(By.CSS_SELECTOR, "img.irpc-timeline-img"), \
        "the HTML fallback is shown beside the extension's view"
    assert len(item_bars(svg)) == ITEMS, "expected one bar per item of the profiled map"
    ticks = [t.text for t in svg.find_elements(By.CSS_SELECTOR, "text.tick")]
    assert ticks and all(re.fullmatch(r"[0-9.]+ (s|ms|µs)", t) for t in ticks), ticks
    shot(page, cell, "timeline")


def test_hovering_an_item_shows_its_card(page: Page) -> None:
    cell = profile_cell(page, "%parallel_profile")
    svg = live_timeline(page, cell)
    bar = item_bars(svg)[-1]
    ActionChains(page.browser).move_to_element(bar).perform()
    shown = card(cell)
    demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: demo.visible(shown),
              "hovering a bar did not show its card")
    text = shown.text
    lines = dict(line.split(": ", 1) for line in text.splitlines())
    assert lines["target"] == "work", text
    assert int(lines["item"]) in range(ITEMS), text
    assert lines["worker"] == str(lane_of(bar)), text
    for key in ("queue wait", "run time"):
        assert re.match(r"[0-9.]+ (s|ms|µs)", lines[key]), text
    assert re.match(r"request [0-9.]+ (s|ms|µs) \+ [0-9.]+ (s|ms|µs), results [0-9.]+ "
                    r"(s|ms|µs)", lines["serialization"]), text
    assert lines["outcome"] == "ok", text
    # The last bar ends at the right edge: its card opens to the left, inside the output.
    inside = demo.js(page.browser, """
        const card = arguments[0].getBoundingClientRect();
        const area = arguments[1].closest('.jp-OutputArea-output').getBoundingClientRect();
        return card.left >= area.left && card.right <= area.right;""", shown, svg)
    assert inside, "the card is cut off by the output's edge"
    shot(page, cell, "hover")
    ActionChains(page.browser).move_to_element(
        cell.find_element(By.CSS_SELECTOR, ".irpc-summary")).perform()
    demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: not demo.visible(shown),
              "the card stayed after the pointer left the bar")


def test_the_wheel_zooms_around_the_pointer_and_reset_restores_the_range(page: Page) -> None:
    cell = profile_cell(page, "%parallel_profile")
    svg = live_timeline(page, cell)
    full = view_range(page, svg)
    ActionChains(page.browser).scroll_from_origin(ScrollOrigin.from_element(svg), 0, -300
                                                  ).perform()
    demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: view_range(page, svg) != full,
              "the wheel did not change the visible time range")
    zoomed = view_range(page, svg)
    assert full[0] <= zoomed[0] < zoomed[1] <= full[1], (full, zoomed)
    assert zoomed[1] - zoomed[0] < full[1] - full[0], (full, zoomed)
    assert len(item_bars(svg)) < ITEMS or zoomed[0] > full[0] or zoomed[1] < full[1]
    shot(page, cell, "zoomed")
    cell.find_element(By.CSS_SELECTOR, ".irpc-live button.irpc-reset").click()
    assert view_range(page, svg) == full


def test_a_drag_pans_and_a_shift_drag_zooms_to_the_dragged_range(page: Page) -> None:
    cell = profile_cell(page, "%parallel_profile")
    svg = live_timeline(page, cell)
    full = view_range(page, svg)
    width = svg.size["width"]
    # Shift-drag over the middle fifth of the plot: the view becomes that range.
    actions = ActionChains(page.browser)
    actions.move_to_element_with_offset(svg, -width // 10, 0).key_down(Keys.SHIFT)
    actions.click_and_hold().move_by_offset(width // 5, 0).release().key_up(Keys.SHIFT)
    actions.perform()
    zoomed = view_range(page, svg)
    span = zoomed[1] - zoomed[0]
    assert 0 < span < (full[1] - full[0]) / 2, (full, zoomed)
    # A plain drag to the right shows earlier times, keeping the span.
    ActionChains(page.browser).move_to_element(svg).click_and_hold().move_by_offset(
        width // 10, 0).release().perform()
    panned = view_range(page, svg)
    assert panned[0] < zoomed[0], (zoomed, panned)
    assert panned[1] - panned[0] == pytest.approx(span, rel=1e-6), (zoomed, panned)
    ActionChains(page.browser).double_click(svg).perform()
    assert view_range(page, svg) == full


def test_a_failed_item_is_marked_and_its_card_says_so(page: Page) -> None:
    cell = profile_cell(page, "with pool.profile() as failing")
    svg = live_timeline(page, cell)
    assert "failed as intended: RemoteError" in cell.text
    marked = problem_bars(page, svg)
    assert marked, "no bar is marked failed"
    cards = []
    for bar in marked:  # the failed item, and any item cancelled after it
        ActionChains(page.browser).move_to_element(bar).perform()
        shown = card(cell)
        demo.wait(page.browser, demo.UI_TIMEOUT, lambda b, shown=shown: demo.visible(shown),
                  "hovering a marked bar did not show its card")
        cards.append(shown.text)
    failed = [text for text in cards if "outcome: failed" in text]
    assert len(failed) == 1 and f"item: {FAILING_ITEM}\n" in failed[0], cards
    assert all("outcome: failed" in t or "outcome: cancelled" in t for t in cards), cards
    shot(page, cell, "failed")


def test_above_5000_items_the_timeline_aggregates_until_zoomed_in(page: Page) -> None:
    from interp_rpc.display.profile import AGGREGATE_ABOVE

    assert MANY > AGGREGATE_ABOVE
    cell = profile_cell(page, "with pool.profile() as many")
    svg = live_timeline(page, cell)
    columns = svg.find_elements(By.CSS_SELECTOR, "rect[data-column]")
    assert columns and not item_bars(svg), "more than 5,000 items were drawn one by one"
    status = cell.find_element(By.CSS_SELECTOR, ".irpc-range")
    assert f"({MANY} items, aggregated per pixel column)" in status.text, status.text
    ActionChains(page.browser).move_to_element(columns[len(columns) // 2]).perform()
    shown = card(cell)
    demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: demo.visible(shown),
              "hovering a column did not show its card")
    assert re.match(r"[1-9][0-9]* item\(s\) in this column\nbusy [0-9]+% of it\n"
                    r"builtins.abs", shown.text), shown.text
    shot(page, cell, "aggregated")
    # Zoom in on items until few enough of them are in view. How many wheel
    # turns that takes depends on how densely the items ran (a fast machine
    # runs most of them in a millisecond's burst), so it zooms for as long as
    # the range narrows: down to the finest range, a few items at most.
    shown_range = None
    while not item_bars(svg):
        assert view_range(page, svg) != shown_range, (
            f"zooming in stopped narrowing without drawing the items one by one: {status.text}")
        shown_range = view_range(page, svg)
        # On a column that has items: on a loaded machine the middle of the
        # timeline can be a gap where no worker ran anything.
        columns = svg.find_elements(By.CSS_SELECTOR, "rect[data-column]")
        assert columns, f"zooming in lost every item: {status.text}"
        ActionChains(page.browser).scroll_from_origin(
            ScrollOrigin.from_element(columns[len(columns) // 2]), 0, -400).perform()
    assert "aggregated" not in status.text, status.text


# ------------------------------------------------------- the function profile


def test_the_function_table_sorts_on_a_header_click(page: Page) -> None:
    cell = profile_cell(page, "%parallel_profile")
    table = cell.find_element(By.CSS_SELECTOR, "table.irpc-sortable")

    def column(index: int) -> list[str]:
        return [str(v) for v in demo.js(page.browser, """
            return Array.from(arguments[0].tBodies[0].rows)
              .map(r => r.cells[arguments[1]].getAttribute('data-v'));""", table, index)]

    headers = table.find_elements(By.CSS_SELECTOR, "th[data-col]")
    calls = next(h for h in headers if h.text == "calls (all)")
    calls.click()
    values = [float(v) for v in column(1)]
    assert values == sorted(values, reverse=True), values
    calls.click()
    values = [float(v) for v in column(1)]
    assert values == sorted(values), values
    tottime = next(h for h in headers if h.text == "tottime (all)")
    tottime.click()
    values = [float(v) for v in column(int(tottime.get_attribute("data-col")))]
    assert values == sorted(values, reverse=True), values
    assert any("helper" in name for name in column(0))


def test_the_icicle_shows_a_card_on_hover_and_zooms_on_click(page: Page) -> None:
    cell = profile_cell(page, "%parallel_profile")
    icicle = demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: [
        s for s in cell.find_elements(By.CSS_SELECTOR, ".irpc-icicle-live svg")
        if demo.visible(s)], "the script did not draw the interactive icicle")[0]
    helper = [b for b in icicle.find_elements(By.CSS_SELECTOR, "rect[data-node]")
              if "helper" in (b.get_attribute("data-name") or "")]
    assert helper, "the icicle has no box for helper(), called inside the target"
    ActionChains(page.browser).move_to_element(helper[0]).perform()
    shown = cell.find_element(By.CSS_SELECTOR, ".irpc-icicle-live .irpc-card")
    demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: demo.visible(shown),
              "hovering an icicle box did not show its card")
    for key in ("calls:", "total time:", "cumulative time:", "of the profiled time"):
        assert key in shown.text, shown.text
    plot_width = float(icicle.get_attribute("width"))
    node = helper[0].get_attribute("data-node")
    before = float(helper[0].get_attribute("width"))
    assert before < plot_width

    def box_width() -> float:
        return float(icicle.find_element(By.CSS_SELECTOR, f"rect[data-node='{node}']")
                     .get_attribute("width"))

    helper[0].click()  # the icicle is redrawn: the old elements are gone
    assert box_width() == pytest.approx(plot_width), \
        "clicking a box did not widen it to the whole icicle"
    shot(page, cell.find_element(By.CSS_SELECTOR, ".irpc-icicle-live"), "icicle-zoomed")
    cell.find_element(By.CSS_SELECTOR, ".irpc-icicle-live button.irpc-reset").click()
    assert box_width() == pytest.approx(before)


# ------------------------------------------------------------- theme, trust


#: The demo test's contrast check, over the profile's outputs only (other
#: renderings are the demo test's to check).
PROFILE_CONTRAST_JS = demo.CONTRAST_JS.replace(
    "document.querySelectorAll('.jp-OutputArea-output')",
    "document.querySelectorAll('.jp-OutputArea-output .interp-rpc-profile')")


def test_every_text_of_the_profile_meets_wcag_aa(page: Page) -> None:
    assert PROFILE_CONTRAST_JS != demo.CONTRAST_JS
    theme = demo.js(page.browser, "return document.body.dataset.jpThemeName")
    assert theme == THEMES[page.theme]
    # With the card shown too: it is drawn over the timeline.
    cell = profile_cell(page, "%parallel_profile")
    svg = live_timeline(page, cell)
    ActionChains(page.browser).move_to_element(item_bars(svg)[0]).perform()
    assert demo.visible(card(cell))
    failures = demo.js(page.browser, PROFILE_CONTRAST_JS, demo.WCAG_AA)
    assert not failures, ("texts below WCAG AA (text, colour, background, ratio):\n"
                          + "\n".join(map(str, failures)))


def test_the_script_logged_no_error(page: Page) -> None:
    lines = page.browser.get_log("browser")
    page.console += [f"{e['level']} {e['message']}" for e in lines]
    errors = [e["message"] for e in lines if e["level"] == "SEVERE"
              and ("irpc" in e["message"] or "eval" in e["message"])]
    assert not errors, errors


def test_the_html_fallback_is_interactive_where_trusted(page: Page) -> None:
    cell = profile_cell(page, "# the HTML fallback")
    svg = live_timeline(page, cell)
    assert cell.find_elements(By.CSS_SELECTOR, ".interp-rpc-profile[data-irpc-ready]"), \
        "the timeline was not drawn by the fallback's script"
    assert not cell.find_elements(By.CSS_SELECTOR, ".irpc-mime")
    assert len(item_bars(svg)) == ITEMS
    full = view_range(page, svg)
    ActionChains(page.browser).scroll_from_origin(ScrollOrigin.from_element(svg), 0, -300
                                                  ).perform()
    demo.wait(page.browser, demo.UI_TIMEOUT, lambda b: view_range(page, svg) != full,
              "the wheel did not zoom the fallback's timeline")


#: The background of every view of the profile, as [r, g, b, alpha].
SVG_BACKGROUNDS_JS = """
return Array.from(arguments[0].querySelectorAll('.irpc-mime svg')).map(svg => {
  const c = getComputedStyle(svg).backgroundColor.match(/[0-9.]+/g).map(Number);
  return c.length > 3 ? c : c.concat([1]);
});"""


def test_the_profile_follows_the_theme_with_no_white_box(page: Page) -> None:
    cell = profile_cell(page, "%parallel_profile")
    live_timeline(page, cell)
    backgrounds = demo.js(page.browser, SVG_BACKGROUNDS_JS, cell)
    assert len(backgrounds) == 2, backgrounds  # the timeline and the icicle
    for *rgb, alpha in backgrounds:
        assert alpha == 1, f"a view with no background of its own: {backgrounds}"
        if page.theme == "dark":
            assert max(rgb) < 96, f"a light box in the dark theme: {rgb}"
        else:
            assert min(rgb) > 200, f"a dark box in the light theme: {rgb}"


def test_an_untrusted_notebook_executed_by_nbclient_is_interactive(
        page: Page, server: Server) -> None:
    browser = page.browser
    # In a tab of its own: leaving the run notebook would ask to save it.
    browser.switch_to.new_window("tab")
    open_and_wait_idle(browser, server, "untrusted.ipynb")
    cell = demo.cell_containing(browser, "%parallel_profile")
    demo.js(browser, "arguments[0].scrollIntoView({block: 'start'});", cell)
    untrusted = Page(page.theme, browser, [])
    svg = live_timeline(untrusted, cell)
    assert len(item_bars(svg)) == ITEMS, "expected one bar per item of the executed map"
    assert not cell.find_elements(By.CSS_SELECTOR, "[data-irpc-ready]"), \
        "the HTML fallback's script ran in an untrusted notebook"
    output = cell.find_element(By.CSS_SELECTOR, ".jp-OutputArea-output .interp-rpc-profile")
    assert "utilization" in output.text and "items / requests" in output.text
    full = view_range(untrusted, svg)
    ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(svg), 0, -300).perform()
    demo.wait(browser, demo.UI_TIMEOUT, lambda b: view_range(untrusted, svg) != full,
              "the wheel did not zoom the untrusted notebook's timeline")
    zoomed = view_range(untrusted, svg)
    assert zoomed[1] - zoomed[0] < full[1] - full[0], (full, zoomed)
    # %parallel_map --profile: the function profile alone, its icicle interactive.
    map_cell = demo.cell_containing(browser, "%parallel_map --profile")
    assert map_cell.find_elements(By.CSS_SELECTOR, ".irpc-mime .irpc-icicle-live svg")
    assert not map_cell.find_elements(By.CSS_SELECTOR, ".irpc-mime .irpc-live")
    # The HTML alone, as frontends without the extension get it: untrusted,
    # its script does not run, and the static picture shows.
    fallback = demo.cell_containing(browser, "# the HTML fallback")
    img = fallback.find_element(By.CSS_SELECTOR, "img.irpc-timeline-img")
    demo.js(browser, "arguments[0].scrollIntoView({block: 'start'});", img)
    assert demo.visible(img), "the fallback's static timeline is not visible"
    assert demo.js(browser, "return arguments[0].complete && arguments[0].naturalWidth",
                   img) > 0, "the fallback's static timeline did not decode"
    assert not fallback.find_elements(By.CSS_SELECTOR, "[data-irpc-ready]"), \
        "the fallback's script ran in an untrusted notebook"
    shot(untrusted, output, "untrusted")
    failures = demo.js(browser, PROFILE_CONTRAST_JS, demo.WCAG_AA)
    assert not failures, failures


def test_a_profile_of_100000_items_is_drawn_and_zoomed(page: Page, server: Server) -> None:
    """Drawn aggregated, every item counted; what drawing and a wheel zoom
    cost in script time (the renderer's own measure) goes to the artifacts,
    as ``{theme}-large.json``: a number to read, not a pass mark."""
    browser = page.browser
    browser.switch_to.new_window("tab")
    open_and_wait_idle(browser, server, "large.ipynb")
    cell = demo.cell_containing(browser, "many_items")
    large = Page(page.theme, browser, [])
    svg = live_timeline(large, cell)
    status = cell.find_element(By.CSS_SELECTOR, ".irpc-range")
    assert f"({LARGE} items, aggregated per pixel column)" in status.text, status.text
    assert svg.find_elements(By.CSS_SELECTOR, "rect[data-column]")
    render_ms = float(cell.find_element(By.CSS_SELECTOR, ".irpc-mime")
                      .get_attribute("data-render-ms"))
    first_draw_ms = float(svg.get_attribute("data-draw-ms"))
    full = view_range(large, svg)
    ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(svg), 0, -300).perform()
    demo.wait(browser, demo.UI_TIMEOUT, lambda b: view_range(large, svg) != full,
              "the wheel did not zoom the large timeline")
    zoom_draw_ms = float(svg.get_attribute("data-draw-ms"))
    (ARTIFACTS / f"{page.theme}-large.json").write_text(json.dumps({
        "items": LARGE, "render_ms": render_ms, "first_draw_ms": first_draw_ms,
        "zoom_draw_ms": zoom_draw_ms}, indent=1))
    shot(large, cell, "large")


def test_a_profile_in_a_newer_format_is_refused_by_name(page: Page, server: Server) -> None:
    from interp_rpc.display import profile_mime

    browser = page.browser
    browser.switch_to.new_window("tab")
    open_and_wait_idle(browser, server, "future.ipynb")
    cell = demo.cell_containing(browser, "future_profile")
    message = demo.wait(browser, demo.UI_TIMEOUT, lambda b: cell.find_elements(
        By.CSS_SELECTOR, ".irpc-mime .irpc-warning"), "the newer format was not refused")[0]
    assert message.text == (
        f"Cannot draw this profile: this profile is in format {FUTURE_FORMAT}, and this "
        f"extension reads format {profile_mime.FORMAT_VERSION}: update interp-rpc on both "
        "sides."), message.text
    assert not cell.find_elements(By.CSS_SELECTOR, ".irpc-mime svg")
