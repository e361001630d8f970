"""The Workers panel in JupyterLab's left side bar, in headless Chromium, in
the light and the dark theme, as a user sees it while a notebook runs.

A notebook (written here) makes a pool of 2 workers that count a call as
stuck after 1 s, maps a function whose items sleep 3 s (so both workers are
busy, then stuck), then starts a long map that the panel's stop button must
end, with the error Ctrl-C gives. The test opens the panel, runs the
notebook with Run All and watches the panel: busy and stuck rows while the
first map runs, the stop button while the second runs, every worker idle
afterwards. The dark theme's panel must be dark, and its text readable.

Artifacts, kept after the run, in build/artifacts/browser-workers/:
``{theme}-workers-running.png`` (the panel with stuck workers),
``{theme}-workers-idle.png``, the browser console and the server log.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
import test_lab_demo as demo  # noqa: E402
from lab_session import Server, browser_kept, new_browser, serving  # noqa: E402
from profile_notebooks import PAGE_TIMEOUT, notebook  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

ARTIFACTS = demo.REPO / "build" / "artifacts" / "browser-workers"
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}

#: Items of the map the stop button ends: far longer than the test waits.
STOPPED_ITEMS = 40

CELLS = [
    "%parallel_pool -n 2 --stuck-after 1",
    "def nap(x):\n    import time\n    time.sleep(x)\n    return x",
    "def doze(x):\n    import time\n    time.sleep(x)\n    return x",
    "%parallel_map nap [3.0] * 4",
    f"%parallel_map doze [2.0] * {STOPPED_ITEMS}",
]

PANEL = "#interp-rpc-workers"

# What the panel shows now, in one script (it is redrawn 4 times a second).
PANEL_JS = """
const panel = document.querySelector(arguments[0]);
if (!panel) return null;
const rows = Array.from(panel.querySelectorAll('tr.irpc-worker'));
const map = panel.querySelector('.irpc-workers-map-text');
const stop = panel.querySelector('button.irpc-workers-stop');
const profile = panel.querySelector('button.irpc-workers-profile');
return {
  states: rows.map(r => r.dataset.state),
  rows: rows.map(r => r.innerText),
  map: map ? map.textContent : '',
  note: (panel.querySelector('.irpc-workers-note') || {}).textContent || '',
  stopEnabled: !!stop && !stop.disabled,
  profileEnabled: !!profile && !profile.disabled,
  visible: panel.offsetWidth > 0,
};"""

pytestmark = demo.pytestmark


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    notebooks = {f"workers-{theme}.ipynb": notebook(CELLS) for theme in THEMES}
    with serving(tmp_path_factory, ARTIFACTS, notebooks | followed_notebooks()) as server:
        yield server


@dataclass
class Watched:
    """What the panel showed while the notebook ran, in one theme."""

    theme: str
    browser: WebDriver
    states_seen: set[str] = field(default_factory=set)
    busy_rows: list[str] = field(default_factory=list)
    stuck_rows: list[str] = field(default_factory=list)
    stop_clicked: bool = False
    maps_seen: set[str] = field(default_factory=set)
    after: dict[str, Any] = field(default_factory=dict)


def panel_now(browser: WebDriver) -> dict[str, Any]:
    shown: dict[str, Any] | None = demo.js(browser, PANEL_JS, PANEL)
    assert shown is not None, "there is no Workers panel in the page"
    return shown


def open_panel(browser: WebDriver) -> None:
    """Click the panel's tab in the left side bar."""
    tab = demo.wait(browser, demo.UI_TIMEOUT, lambda b: b.find_elements(
        By.CSS_SELECTOR, f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL[1:]}"]'),
        "the left side bar has no Workers tab")[0]
    tab.click()
    demo.wait(browser, demo.UI_TIMEOUT, lambda b: panel_now(b)["visible"],
              "clicking the Workers tab did not show the panel")


def watch_run_all(watched: Watched) -> None:
    """Run All, watching the panel; click stop once the second map runs."""
    browser = watched.browser
    demo.click_run_all(browser)
    observed = demo.RunAll()

    def finished(b: WebDriver) -> bool:
        shown = panel_now(b)
        watched.states_seen.update(shown["states"])
        rows = list(zip(shown["rows"], shown["states"], strict=True))
        watched.busy_rows += [r for r, s in rows if s == "busy"]
        stuck = [r for r, s in rows if s == "stuck"]
        if stuck and not watched.stuck_rows:
            b.find_element(By.CSS_SELECTOR, PANEL).screenshot(
                str(ARTIFACTS / f"{watched.theme}-workers-running.png"))
        watched.stuck_rows += stuck
        if shown["map"]:
            watched.maps_seen.add(shown["map"].split(":")[0])
        if "doze" in shown["map"] and shown["stopEnabled"] and not watched.stop_clicked:
            b.find_element(By.CSS_SELECTOR, f"{PANEL} button.irpc-workers-stop").click()
            watched.stop_clicked = True
        observed.prompts = demo.js(b, demo.PROMPTS_JS, demo.CODE_CELLS)
        return (len(observed.prompts) == len(CELLS) + (demo.KERNEL != "interp-rpc")
                and all(demo.EXECUTED_PROMPT.fullmatch(p) for p in observed.prompts)
                and demo.js(b, demo.KERNEL_STATUS_JS, demo.NOTEBOOK) == "idle")

    try:
        # The stopped map would run 40 s on its own: the wait ends well before.
        demo.wait(browser, demo.RUN_ALL_TIMEOUT, finished, "")
    except TimeoutException:
        pytest.fail(f"Run All did not finish; prompts {observed.prompts}, panel "
                    f"{panel_now(browser)}")


@pytest.fixture(scope="module", params=list(THEMES))
def watched(request: pytest.FixtureRequest, server: Server,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    theme = request.param
    server.shut_down_kernels()
    server.put_setting("@jupyterlab/apputils-extension:themes", {"theme": THEMES[theme]})
    browser = new_browser(tmp_path_factory, ARTIFACTS, theme)
    result = Watched(theme, browser)
    with browser_kept(browser, ARTIFACTS, theme):
        lab = server.lab
        path = f"workers-{theme}.ipynb"
        browser.get(f"{lab.url}/lab/workspaces/{theme}/tree/{path}?token={lab.token}")
        demo.wait(browser, PAGE_TIMEOUT,
                  lambda b: b.find_elements(By.CSS_SELECTOR, demo.CODE_CELLS)
                  and demo.js(b, demo.KERNEL_STATUS_JS, demo.NOTEBOOK) == "idle",
                  f"{path} and its kernel did not become ready")
        open_panel(browser)
        watch_run_all(result)
        # Afterwards: the map's end is sent at once, else the next heartbeat.
        demo.wait(browser, 30, lambda b: (s := panel_now(b))["states"]
                  and set(s["states"]) == {"idle"} and not s["map"],
                  "the panel did not show every worker idle after the maps")
        result.after = panel_now(browser)
        browser.find_element(By.CSS_SELECTOR, PANEL).screenshot(
            str(ARTIFACTS / f"{theme}-workers-idle.png"))
        yield result


def test_the_panel_shows_busy_and_stuck_workers_while_a_long_map_runs(
        watched: Watched) -> None:
    assert {"busy", "stuck"} <= watched.states_seen, watched.states_seen
    # Both maps' items outlast the stuck threshold: either map's rows turn stuck.
    assert any("nap" in row for row in watched.stuck_rows), watched.stuck_rows[:4]
    assert all("nap" in row or "doze" in row for row in watched.stuck_rows + watched.busy_rows)
    assert any("nap" in m for m in watched.maps_seen), watched.maps_seen


def test_the_panel_shows_every_worker_idle_afterwards(watched: Watched) -> None:
    assert watched.after["states"] == ["idle", "idle"], watched.after
    assert not watched.after["stopEnabled"]


def test_the_stop_button_ends_the_map_as_ctrl_c_does(watched: Watched) -> None:
    assert watched.stop_clicked, "the stop button was never enabled while the map ran"
    cell = demo.cell_containing(watched.browser, "%parallel_map doze")
    errors = " ".join(e.text for e in demo.outputs(cell, "") if e.text)
    assert "KeyboardInterrupt" in errors, errors[-500:]
    assert re.search(rf"Interrupted: \d+ of {STOPPED_ITEMS} items", errors), errors[-500:]


# Colours of the panel: [background, text] as rgb() strings.
COLOURS_JS = """
const panel = document.querySelector(arguments[0]);
const cell = panel.querySelector('tr.irpc-worker td');
return [getComputedStyle(panel).backgroundColor, getComputedStyle(cell).color];"""


def luminance(rgb: str) -> float:
    values = [float(v) / 255 for v in re.findall(r"[\d.]+", rgb)[:3]]
    linear = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in values]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def test_the_panel_follows_the_theme_and_its_text_is_readable(watched: Watched) -> None:
    background, text = demo.js(watched.browser, COLOURS_JS, PANEL)
    back, fore = luminance(background), luminance(text)
    if watched.theme == "dark":
        assert back < 0.1, f"the dark theme's panel is light: {background}"
    else:
        assert back > 0.8, f"the light theme's panel is dark: {background}"
    high, low = max(back, fore), min(back, fore)
    assert (high + 0.05) / (low + 0.05) >= demo.WCAG_AA, (background, text)


def test_no_error_in_the_browser_console_from_the_panel(watched: Watched) -> None:
    entries = watched.browser.get_log("browser")
    ours = [e["message"] for e in entries
            if e["level"] == "SEVERE" and "interp-rpc" in e["message"]]
    assert not ours, ours


def test_open_the_last_profile_shows_it_in_a_tab(watched: Watched) -> None:
    """The last map's profile (the stopped one), drawn by the profile's
    renderer in the main area."""
    browser = watched.browser
    button = browser.find_element(By.CSS_SELECTOR, f"{PANEL} button.irpc-workers-profile")
    assert button.is_enabled(), "no profile to open after two maps"
    button.click()
    svg = demo.wait(browser, demo.UI_TIMEOUT, lambda b: b.find_elements(
        By.CSS_SELECTOR, ".irpc-profile-tab .irpc-mime svg.interp-rpc-gantt"),
        "the profile did not open in a tab")[0]
    assert svg.find_elements(By.CSS_SELECTOR, "rect[data-item]"), "the timeline has no items"
    tab = browser.find_element(By.CSS_SELECTOR, ".irpc-profile-tab")
    tab.screenshot(str(ARTIFACTS / f"{watched.theme}-workers-profile.png"))
    # Closed: the notebook, which the panel follows, is the current tab again.
    browser.find_element(
        By.CSS_SELECTOR, "#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current "
        ".lm-TabBar-tabCloseIcon").click()
    demo.wait(browser, demo.UI_TIMEOUT,
              lambda b: not b.find_elements(By.CSS_SELECTOR, ".irpc-profile-tab"),
              "the profile's tab did not close")


def restart_the_kernel_from_the_menu(browser: WebDriver) -> None:
    """Kernel > Restart Kernel…, and Restart in the dialog, as a user does."""
    menus = browser.find_elements(By.CSS_SELECTOR, "#jp-menu-panel .lm-MenuBar-item")
    kernel = [m for m in menus if m.text.strip() == "Kernel"]
    assert kernel, f"no Kernel menu in the menu bar: {[m.text for m in menus]}"
    kernel[0].click()
    labels: list[str] = []

    def restart_item(b: WebDriver) -> list[Any]:
        items = b.find_elements(By.CSS_SELECTOR, ".lm-Menu .lm-Menu-item")
        labels[:] = [demo.js(b, "return (arguments[0].querySelector('.lm-Menu-itemLabel')"
                                " || {}).textContent || '';", i).strip() for i in items]
        return [i for i, label in zip(items, labels, strict=True)
                if re.fullmatch(r"Restart Kernel(…|\.\.\.)?", label)]

    try:
        item = demo.wait(browser, demo.UI_TIMEOUT, restart_item, "")
    except TimeoutException:
        pytest.fail(f"the Kernel menu has no 'Restart Kernel…' item: {labels}")
    item[0].click()
    demo.wait(browser, demo.UI_TIMEOUT, lambda b: b.find_elements(
        By.CSS_SELECTOR, ".jp-Dialog .jp-Dialog-button.jp-mod-accept"),
        "no dialog asked to confirm the restart")[0].click()


def test_the_panel_reconnects_after_a_kernel_restart(watched: Watched) -> None:
    """Runs last for its theme: the restart ends the pool the others read."""
    browser = watched.browser
    restart_the_kernel_from_the_menu(browser)
    # The new kernel has no pool: the panel, connected again, says so.
    try:
        demo.wait(browser, PAGE_TIMEOUT,
                  lambda b: "No pool" in (s := panel_now(b))["note"] and not s["states"], "")
    except TimeoutException:
        pytest.fail(f"the panel did not reconnect after the restart: {panel_now(browser)}")


# ------------------------------------- the panel follows the active notebook

#: Two notebooks with pools of different sizes, and one without a pool.
FOLLOWED = {"two": 2, "three": 3, "none": 0}
#: The map each notebook with a pool runs, so that its pool has a profile.
FOLLOWED_MAP = "%parallel_map abs [-1, -2]"

# The pool's line above the rows: "InterpreterPool · 2 workers".
POOL_LINE_JS = """
const line = document.querySelector(arguments[0] + ' .irpc-workers-pool');
return line ? line.textContent : '';"""


def followed_name(theme: str, which: str) -> str:
    return f"follow-{which}-{theme}.ipynb"


def followed_notebooks() -> dict[str, Any]:
    def cells(workers: int) -> list[str]:
        return [f"%parallel_pool -n {workers}", FOLLOWED_MAP] if workers else ["'no pool here'"]
    return {followed_name(theme, which): notebook(cells(workers))
            for theme in THEMES for which, workers in FOLLOWED.items()}


@dataclass
class Shown:
    """What the panel showed for one notebook."""

    notebook: str
    rows: int
    pool_line: str
    note: str


MAIN_TABS = "#jp-main-dock-panel .lm-TabBar-tab"


def current_tab(browser: WebDriver) -> Any:
    return browser.find_element(By.CSS_SELECTOR, f"{MAIN_TABS}.lm-mod-current")


def activate_tab(browser: WebDriver, name: str) -> None:
    tabs = [t for t in browser.find_elements(By.CSS_SELECTOR, MAIN_TABS)
            if t.text.strip() == name]
    assert tabs, f"no tab for {name} in the main area"
    tabs[0].click()
    demo.wait(browser, demo.UI_TIMEOUT, lambda b: current_tab(b).text.strip() == name,
              f"clicking {name}'s tab did not make it current")


def open_from_file_browser(browser: WebDriver, name: str) -> None:
    """Double-click ``name`` in the file browser, as a user opens a second
    notebook; then the Workers panel again."""
    browser.find_element(
        By.CSS_SELECTOR, '.jp-SideBar .lm-TabBar-tab[data-id="filebrowser"]').click()
    # In one script: the listing redraws as its "modified" times age.
    item = demo.wait(browser, demo.UI_TIMEOUT, lambda b: demo.js(b, """
        return Array.from(document.querySelectorAll('.jp-DirListing-item')).find(
          i => i.querySelector('.jp-DirListing-itemText').textContent.trim() === arguments[0]
        ) || null;""", name), f"the file browser does not list {name}")
    ActionChains(browser).double_click(item).perform()
    demo.wait(browser, PAGE_TIMEOUT, lambda b: current_tab(b).text.strip() == name
              and demo.js(b, CURRENT_KERNEL_STATUS_JS) == "idle",
              f"{name} did not open with an idle kernel")
    open_panel(browser)


# The kernel status of the notebook in the current tab (several are open).
CURRENT_KERNEL_STATUS_JS = """
const panel = document.querySelector('#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)');
const indicator = panel && panel.querySelector('.jp-Notebook-ExecutionIndicator');
return indicator ? indicator.getAttribute('data-status') : null;"""


def run_current_notebook(browser: WebDriver) -> None:
    demo.click_run_all(browser)
    demo.wait(browser, demo.KERNEL_READY_TIMEOUT, lambda b: demo.js(b, """
        const panel = document.querySelector(
          '#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)');
        return Array.from(panel.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt'))
          .every(p => /^\\[\\d+\\]:$/.test(p.textContent.trim()));""")
        and demo.js(b, CURRENT_KERNEL_STATUS_JS) == "idle",
        "Run All did not finish in the current notebook")


def shown_for(browser: WebDriver, name: str, workers: int) -> Shown:
    """What the panel shows once it shows ``workers`` rows (0: the no-pool
    note), the notebook ``name`` being current."""
    def settled(b: WebDriver) -> bool:
        shown = panel_now(b)
        if workers:
            return len(shown["states"]) == workers
        return "No pool" in shown["note"] and not shown["states"]

    try:
        demo.wait(browser, demo.KERNEL_READY_TIMEOUT, settled, "")
    except TimeoutException:
        pytest.fail(f"with {name} current, the panel shows {panel_now(browser)}, "
                    f"not {workers or 'no'} workers")
    shown = panel_now(browser)
    return Shown(name, len(shown["states"]), demo.js(browser, POOL_LINE_JS, PANEL),
                 shown["note"])


def close_current_tab(browser: WebDriver) -> None:
    """Close the current tab; its notebook ran cells, so discard the changes
    when asked."""
    name = current_tab(browser).text.strip()
    current_tab(browser).find_element(By.CSS_SELECTOR, ".lm-TabBar-tabCloseIcon").click()

    demo.wait(browser, demo.UI_TIMEOUT, lambda b: demo.js(b, CLOSED_JS, MAIN_TABS, name),
              f"{name}'s tab did not close")


# Whether the tab named arguments[1] is gone; clicks Discard when JupyterLab
# asks about unsaved changes. In one script: the dialog and tabs redraw.
CLOSED_JS = """
const discard = Array.from(document.querySelectorAll('.jp-Dialog .jp-Dialog-button'))
  .find(b => ['Discard', "Don't Save"].includes(b.textContent.trim()));
if (discard) discard.click();
return !Array.from(document.querySelectorAll(arguments[0]))
  .some(t => t.textContent.trim() === arguments[1]);"""


@dataclass
class Followed:
    """What the panel showed as one theme's user switched notebooks."""

    theme: str
    browser: WebDriver
    switches: list[Shown] = field(default_factory=list)
    after_closing: list[Shown] = field(default_factory=list)


@pytest.fixture(scope="module", params=list(THEMES))
def followed(request: pytest.FixtureRequest, server: Server,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Followed]:
    theme = request.param
    server.shut_down_kernels()
    server.put_setting("@jupyterlab/apputils-extension:themes", {"theme": THEMES[theme]})
    browser = new_browser(tmp_path_factory, ARTIFACTS, f"follow-{theme}")
    result = Followed(theme, browser)
    names = {which: followed_name(theme, which) for which in FOLLOWED}
    with browser_kept(browser, ARTIFACTS, f"follow-{theme}"):
        lab = server.lab
        browser.get(f"{lab.url}/lab/workspaces/follow-{theme}/tree/{names['two']}"
                    f"?token={lab.token}")
        demo.wait(browser, PAGE_TIMEOUT, lambda b: demo.js(b, CURRENT_KERNEL_STATUS_JS) == "idle",
                  f"{names['two']} and its kernel did not become ready")
        open_panel(browser)
        run_current_notebook(browser)
        result.switches.append(shown_for(browser, names["two"], FOLLOWED["two"]))
        open_from_file_browser(browser, names["three"])
        run_current_notebook(browser)
        result.switches.append(shown_for(browser, names["three"], FOLLOWED["three"]))
        for which in ("two", "three"):
            activate_tab(browser, names[which])
            result.switches.append(shown_for(browser, names[which], FOLLOWED[which]))
        open_from_file_browser(browser, names["none"])
        result.switches.append(shown_for(browser, names["none"], 0))
        browser.find_element(By.CSS_SELECTOR, PANEL).screenshot(
            str(ARTIFACTS / f"{theme}-workers-no-pool.png"))
        close_current_tab(browser)  # the one without a pool
        activate_tab(browser, names["three"])
        close_current_tab(browser)
        shown = shown_for(browser, names["two"], FOLLOWED["two"])
        result.after_closing.append(shown)
        browser.find_element(By.CSS_SELECTOR, PANEL).screenshot(
            str(ARTIFACTS / f"{theme}-workers-followed.png"))
        yield result


def test_switching_notebooks_switches_the_panel_to_their_pool(followed: Followed) -> None:
    seen = [(s.notebook, s.rows) for s in followed.switches]
    names = [followed_name(followed.theme, w) for w in ("two", "three", "two", "three", "none")]
    assert seen == list(zip(names, [2, 3, 2, 3, 0], strict=True)), seen
    for shown in followed.switches:
        if shown.rows:
            assert shown.pool_line.endswith(f"{shown.rows} workers"), shown


def test_a_notebook_without_a_pool_shows_the_no_pool_state(followed: Followed) -> None:
    none = followed.switches[-1]
    assert none.rows == 0 and "No pool" in none.note, none
    assert none.pool_line == "", "the last notebook's totals are still shown"


def test_closing_a_notebook_leaves_the_panel_on_the_other(followed: Followed) -> None:
    browser = followed.browser
    assert current_tab(browser).text.strip() == followed_name(followed.theme, "two")
    assert followed.after_closing[0].rows == 2, followed.after_closing


def restart_through_rest(server: Server, path: str) -> None:
    """POST /api/kernels/<id>/restart for the kernel of ``path``, as another
    tab or a script does: this page is not told."""
    lab = server.lab
    sessions = [s for s in lab.api("/api/sessions") if s["path"].endswith(path)]
    assert len(sessions) == 1, f"expected one session for {path}: {sessions}"
    # The server answers once the new kernel is up: allow for a loaded machine.
    request = urllib.request.Request(
        f"{lab.url}/api/kernels/{sessions[0]['kernel']['id']}/restart", data=b"",
        method="POST", headers={"Authorization": f"token {lab.token}"})
    with urllib.request.urlopen(request, timeout=demo.KERNEL_READY_TIMEOUT) as response:
        assert json.loads(response.read())["id"] == sessions[0]["kernel"]["id"]


def test_a_restart_made_elsewhere_shows_the_new_kernel_without_a_pool(
        followed: Followed, server: Server) -> None:
    """Runs after the tests of its theme that read the notebooks' pools: the
    restart ends the pool."""
    browser = followed.browser
    assert panel_now(browser)["states"] == ["idle", "idle"]
    restart_through_rest(server, followed_name(followed.theme, "two"))
    started = time.monotonic()
    try:
        demo.wait(browser, PAGE_TIMEOUT,
                  lambda b: "No pool" in (s := panel_now(b))["note"] and not s["states"], "")
    except TimeoutException:
        pytest.fail(f"after a restart through the REST API the panel still shows "
                    f"{panel_now(browser)}")
    (ARTIFACTS / f"{followed.theme}-restart-seconds.txt").write_text(
        f"the panel showed the restarted kernel {time.monotonic() - started:.1f} s after "
        "the server answered the restart\n")


def test_after_a_restart_made_elsewhere_the_buttons_reach_the_new_kernel(
        followed: Followed) -> None:
    """JupyterLab sends a comm's messages to the subshell it made for the
    comm's target, and forgets it only on restarts that this page asks for:
    after the restart made elsewhere (the test above), a button's request
    reached a subshell the new kernel never had, until the page was
    reloaded. The panel now sends to a subshell the kernel lists."""
    browser = followed.browser
    demo.click_run_all(browser)  # the notebook's pool and map, in the new kernel
    try:
        demo.wait(browser, demo.KERNEL_READY_TIMEOUT,
                  lambda b: len((s := panel_now(b))["states"]) == FOLLOWED["two"]
                  and s["profileEnabled"], "")
    except TimeoutException:
        pytest.fail(f"the new kernel's pool and profile did not show: {panel_now(browser)}")
    browser.find_element(By.CSS_SELECTOR, f"{PANEL} button.irpc-workers-profile").click()
    try:
        demo.wait(browser, demo.UI_TIMEOUT, lambda b: b.find_elements(
            By.CSS_SELECTOR, ".irpc-profile-tab .irpc-mime svg.interp-rpc-gantt"), "")
    except TimeoutException:
        pytest.fail(f"the profile did not open; the panel shows {panel_now(browser)}")
