"""JupyterLab's Debugger panel on the interp-rpc kernel, in headless Chromium,
in the light and the dark theme, as a user drives it.

The notebook's toolbar turns the debugger on (its bug button); a click in a
cell's breakpoint gutter sets a breakpoint; running the cell stops there: the
Call Stack shows the cell's frame and the Variables panel the cell's values;
Continue lets the cell finish with its output. Then the same through a
function: a breakpoint in a function one cell defines, hit when a second cell
calls it.

Artifacts, kept after the run, in build/artifacts/browser-debugger/:
``{theme}-stopped-in-cell.png``, ``{theme}-stopped-in-function.png`` (the
page while stopped), the browser console and the server log.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
import test_lab_demo as demo  # noqa: E402
import test_lab_profile as profile  # noqa: E402
from lab_session import Server, browser_kept, new_browser, serving  # noqa: E402
from profile_notebooks import notebook  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

ARTIFACTS = demo.REPO / "build" / "artifacts" / "browser-debugger"
THEMES = profile.THEMES

# The cell stops on its line 2 (1-based), once x is set.
CELL = "x = 21\ny = x * 2\nprint('cell done', y)"
CELL_LINE = 2
# The function stops on its line 3, with both locals set.
FUNCTION = "def double(n):\n    m = n * 2\n    return m"
FUNCTION_LINE = 3
CALL = "print('double gave', double(21))"

SIDEBAR = "#jp-debugger-sidebar"

# What the Debugger panel shows now, in one script (React redraws it).
DEBUGGER_JS = """
const bar = document.querySelector(arguments[0]);
if (!bar) return null;
const texts = sel => Array.from(bar.querySelectorAll(sel)).map(e => e.textContent.trim());
const variables = {};
for (const item of bar.querySelectorAll('.jp-DebuggerVariables-body .jp-TreeItem')) {
  const name = item.querySelector(':scope > .jp-DebuggerVariables-name');
  const detail = item.querySelector(':scope > .jp-DebuggerVariables-detail');
  if (name) variables[name.textContent.trim()] = detail ? detail.textContent.trim() : '';
}
return {
  visible: bar.offsetWidth > 0,
  frames: texts('.jp-DebuggerCallstackFrame-name'),
  breakpoints: texts('.jp-DebuggerBreakpoint'),
  variables: variables,
};"""

pytestmark = demo.pytestmark


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory, ARTIFACTS,
                 {f"debugger-{theme}.ipynb": notebook([CELL, FUNCTION, CALL])
                  for theme in THEMES}) as server:
        yield server


@dataclass
class Stop:
    """What the Debugger panel showed while a cell was stopped."""

    frames: list[str]
    variables: dict[str, str]
    output_while_stopped: str
    output_after: str


@dataclass
class Session:
    """One theme's debugging session: a stop in a cell, one in a function."""

    theme: str
    browser: WebDriver
    button_pressed: bool = False
    breakpoints: list[str] = field(default_factory=list)
    stops: dict[str, Stop] = field(default_factory=dict)


def panel_now(browser: WebDriver) -> dict[str, Any]:
    shown: dict[str, Any] | None = demo.js(browser, DEBUGGER_JS, SIDEBAR)
    assert shown is not None, "there is no Debugger panel in the page"
    return shown


def turn_debugger_on(browser: WebDriver) -> bool:
    """Click the notebook toolbar's bug button once the kernel enables it;
    whether it then shows as pressed."""
    # A <jp-button> web component; its tooltip tells its state.
    selector = f"{demo.NOTEBOOK} .jp-DebuggerBugButton"
    try:
        # "Enable Debugger" once JupyterLab knows the kernel can debug
        # (before, a click does nothing).
        button = demo.wait(browser, demo.KERNEL_READY_TIMEOUT, lambda b: [
            e for e in b.find_elements(By.CSS_SELECTOR, selector)
            if e.get_attribute("title") == "Enable Debugger"], "")[0]
    except TimeoutException:
        pytest.fail("the notebook's debugger button stayed disabled: JupyterLab does not "
                    "see a kernel that supports debugging")
    button.click()
    try:
        demo.wait(browser, demo.UI_TIMEOUT, lambda b: b.find_element(
            By.CSS_SELECTOR, selector).get_attribute("title") == "Disable Debugger", "")
    except TimeoutException:
        return False
    return True


def open_sidebar(browser: WebDriver) -> None:
    tab = demo.wait(browser, demo.UI_TIMEOUT, lambda b: b.find_elements(
        By.CSS_SELECTOR, f'.jp-SideBar .lm-TabBar-tab[data-id="{SIDEBAR[1:]}"]'),
        "the right side bar has no Debugger tab")[0]
    if "lm-mod-current" not in (tab.get_attribute("class") or ""):
        tab.click()
    demo.wait(browser, demo.UI_TIMEOUT, lambda b: panel_now(b)["visible"],
              "clicking the Debugger tab did not show the panel")


def set_breakpoint(browser: WebDriver, cell: Any, line: int) -> None:
    """Click the breakpoint gutter beside ``line`` (1-based) of the cell."""
    markers = demo.wait(browser, demo.UI_TIMEOUT, lambda b: [
        e for e in cell.find_elements(By.CSS_SELECTOR, ".cm-breakpoint-gutter .cm-gutterElement")
        if e.size["height"] > 0], "the cell shows no breakpoint gutter with the debugger on")
    assert len(markers) >= line, f"the gutter has {len(markers)} lines, not {line}"
    before = len(panel_now(browser)["breakpoints"])
    ActionChains(browser).move_to_element(markers[line - 1]).click().perform()
    demo.wait(browser, demo.UI_TIMEOUT,
              lambda b: len(panel_now(b)["breakpoints"]) == before + 1,
              f"clicking the gutter of line {line} set no breakpoint")


def run_cell(browser: WebDriver, cell: Any) -> None:
    cell.find_element(By.CSS_SELECTOR, ".jp-InputArea-prompt").click()
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()


def cell_output(browser: WebDriver, cell: Any) -> str:
    text: str = demo.js(browser, """
        return Array.from(arguments[0].querySelectorAll('.jp-OutputArea-output'))
          .map(o => o.textContent).join('');""", cell)
    return text


def prompt_of(browser: WebDriver, cell: Any) -> str:
    text: str = demo.js(browser, """
        const p = arguments[0].querySelector('.jp-InputArea-prompt');
        return p ? p.textContent.trim() : '';""", cell)
    return text


# The Call Stack's Continue button, when it is enabled: the toolbar item
# named "continue" (the sidebar shows it in the Call Stack's heading), a
# <jp-button> whose state is in its aria attributes.
CONTINUE_JS = """
const bar = document.querySelector(arguments[0]);
const button = bar.querySelector(
  '[data-jp-item-name="continue"] .jp-ToolbarButtonComponent');
return button && button.getAttribute('aria-disabled') !== 'true' ? button : null;"""


def stop_and_continue(session: Session, cell: Any, wanted: dict[str, str], name: str) -> Stop:
    """Run ``cell``; once the panel shows the ``wanted`` variables, read it,
    Continue, and wait until the cell has finished."""
    browser = session.browser
    run_cell(browser, cell)
    try:
        shown = demo.wait(browser, demo.KERNEL_READY_TIMEOUT, lambda b: (
            s := panel_now(b))["frames"] and all(
                s["variables"].get(k) == v for k, v in wanted.items()) and s, "")
    except TimeoutException:
        pytest.fail(f"running the cell did not stop with {wanted} in the Variables panel: "
                    f"{panel_now(browser)}")
    browser.save_screenshot(str(ARTIFACTS / f"{session.theme}-stopped-in-{name}.png"))
    while_stopped = cell_output(browser, cell)
    try:
        demo.wait(browser, demo.UI_TIMEOUT, lambda b: demo.js(b, CONTINUE_JS, SIDEBAR), "").click()
    except TimeoutException:
        toolbar = demo.js(browser, """const t = document.querySelector(
            '[data-jp-item-name="continue"]'); return t ? t.outerHTML : null;""")
        pytest.fail(f"the Call Stack has no enabled Continue button while stopped: {toolbar}")
    try:
        demo.wait(browser, demo.KERNEL_READY_TIMEOUT,
                  lambda b: demo.EXECUTED_PROMPT.fullmatch(prompt_of(b, cell))
                  and demo.js(b, demo.KERNEL_STATUS_JS, demo.NOTEBOOK) == "idle", "")
    except TimeoutException:
        pytest.fail(f"the cell did not finish after Continue: prompt {prompt_of(browser, cell)!r}, "
                    f"output {cell_output(browser, cell)!r}, panel {panel_now(browser)}")
    return Stop(shown["frames"], shown["variables"], while_stopped, cell_output(browser, cell))


@pytest.fixture(scope="module", params=list(THEMES))
def session(request: pytest.FixtureRequest, server: Server,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    theme = request.param
    server.shut_down_kernels()
    server.put_setting("@jupyterlab/apputils-extension:themes", {"theme": THEMES[theme]})
    browser = new_browser(tmp_path_factory, ARTIFACTS, theme)
    result = Session(theme, browser)
    with browser_kept(browser, ARTIFACTS, theme):
        profile.open_and_wait_idle(browser, server, f"debugger-{theme}.ipynb")
        result.button_pressed = turn_debugger_on(browser)
        open_sidebar(browser)
        in_cell = demo.cell_containing(browser, "x = 21")
        set_breakpoint(browser, in_cell, CELL_LINE)
        result.stops["cell"] = stop_and_continue(result, in_cell, {"x": "21"}, "cell")
        definition = demo.cell_containing(browser, "def double")
        set_breakpoint(browser, definition, FUNCTION_LINE)
        result.breakpoints = panel_now(browser)["breakpoints"]
        run_cell(browser, definition)
        demo.wait(browser, demo.KERNEL_READY_TIMEOUT,
                  lambda b: demo.EXECUTED_PROMPT.fullmatch(prompt_of(b, definition)),
                  "the cell defining the function did not run")
        call = demo.cell_containing(browser, "double(21)")
        result.stops["function"] = stop_and_continue(
            result, call, {"n": "21", "m": "42"}, "function")
        yield result


def test_the_toolbar_button_turns_the_debugger_on(session: Session) -> None:
    assert session.button_pressed


def test_a_gutter_click_sets_a_breakpoint_listed_in_the_panel(session: Session) -> None:
    # One in the first cell, one in the function's cell.
    assert len(session.breakpoints) == 2, session.breakpoints


def test_a_cell_stops_at_its_breakpoint_with_its_variables_shown(session: Session) -> None:
    stop = session.stops["cell"]
    assert stop.variables["x"] == "21"
    assert "y" not in stop.variables, "the cell stopped after line 2 ran"
    # The cell's frame only: the kernel's own frames stay hidden.
    assert stop.frames == ["<module>"], stop.frames
    assert "cell done" not in stop.output_while_stopped


def test_continue_lets_the_cell_finish_with_its_output(session: Session) -> None:
    assert "cell done 42" in session.stops["cell"].output_after


def test_a_breakpoint_in_a_function_stops_when_another_cell_calls_it(session: Session) -> None:
    stop = session.stops["function"]
    assert (stop.variables.get("n"), stop.variables.get("m")) == ("21", "42"), stop.variables
    assert "x" not in stop.variables, "the function's frame shows the cell's globals"
    assert stop.frames == ["double", "<module>"], stop.frames
    assert "double gave" not in stop.output_while_stopped
    assert "double gave 42" in stop.output_after


def test_no_error_in_the_browser_console_from_the_debugger(session: Session) -> None:
    entries = session.browser.get_log("browser")
    severe = [e["message"] for e in entries if e["level"] == "SEVERE"
              and ("debug" in e["message"].lower() or "interp-rpc" in e["message"])]
    assert not severe, severe
