"""Kernel subshells in JupyterLab, in headless Chromium, in the light and the
dark theme, as a user meets them.

A notebook on "Python (interp-rpc)" shows an ipywidgets slider whose
``observe`` callback writes a label, then runs a cell that sleeps. While it
sleeps:
- the notebook's context menu offers "New Subshell Console for Notebook"
  (JupyterLab shows it only for a kernel that advertises subshells), and the
  console it opens answers a cell;
- moving the slider runs its callback, which updates the label: JupyterLab
  sends each comm target's messages to a subshell of its own
  (``commsOverSubshells``), so the callback does not wait for the cell.

Artifacts, kept after the run, in build/artifacts/browser-subshells/:
``{theme}-subshells.png`` (the notebook and the console side by side, while
the cell sleeps), the browser console logs and the server log. The server
and browser helpers come from test_lab_demo.py and test_lab_profile.py.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
import test_lab_demo as demo  # noqa: E402
import test_lab_profile as profile  # noqa: E402
from lab_session import Server, browser_kept, new_browser, serving  # noqa: E402
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402

ARTIFACTS = demo.REPO / "build" / "artifacts" / "browser-subshells"
THEMES = profile.THEMES
MENU_ITEM = "New Subshell Console for Notebook"
# Long enough for everything below to happen while it runs, on a loaded machine.
SLEEP_SECONDS = 90
CALLBACK_NOT_RUN = "callback not run yet"

WIDGET_CELL = f"""import time
import ipywidgets as widgets
slider = widgets.IntSlider(value=0, min=0, max=100, description="value")
label = widgets.Label({CALLBACK_NOT_RUN!r})
def on_value(change):
    label.value = f"callback saw {{change['new']}}"
slider.observe(on_value, names="value")
widgets.VBox([slider, label])"""
SLEEP_CELL = f"time.sleep({SLEEP_SECONDS}); 'slept'"

pytestmark = demo.pytestmark


def notebook() -> dict[str, Any]:
    cells = [{"id": f"cell-{i}", "cell_type": "code", "execution_count": None,
              "metadata": {}, "outputs": [], "source": source.splitlines(keepends=True)}
             for i, source in enumerate((WIDGET_CELL, SLEEP_CELL))]
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": demo.KERNEL, "language": "python",
                                        "display_name": demo.kernel_display_name(demo.KERNEL)}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serving(tmp_path_factory, ARTIFACTS,
                 {f"subshells-{theme}.ipynb": notebook() for theme in THEMES}) as server:
        yield server


@dataclass
class Seen:
    """What the user saw in one theme, while the notebook's cell slept."""

    theme: str
    menu_items: list[str]
    console_answer: str
    slider_value: str
    label: str
    sleeping_cell_prompt: str


def run_cell(browser: WebDriver, cell: Any) -> None:
    """Select the cell by its prompt, and run it with Shift+Enter."""
    cell.find_element(By.CSS_SELECTOR, ".jp-InputArea-prompt").click()
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()


def prompt_of(browser: WebDriver, cell: Any) -> str:
    text: str = demo.js(browser, """
        const p = arguments[0].querySelector('.jp-InputArea-prompt');
        return p ? p.textContent.trim() : '';""", cell)
    return text


def context_menu_items(browser: WebDriver, cell: Any) -> list[Any]:
    ActionChains(browser).context_click(
        cell.find_element(By.CSS_SELECTOR, ".jp-InputArea-prompt")).perform()
    return list(demo.wait(browser, demo.UI_TIMEOUT, lambda b: [
        i for i in b.find_elements(By.CSS_SELECTOR, ".lm-Menu .lm-Menu-item") if i.text.strip()],
        "right-clicking the notebook showed no context menu"))


def item_label(item: Any) -> str:
    return str(item.text.split("\n")[0].strip())


CONSOLE_OUTPUTS = ".jp-CodeConsole-content .jp-OutputArea-output"


CONSOLE_PROMPT = ".jp-CodeConsole-promptCell .cm-content"
PROMPT_TEXT_JS = """
const editor = document.querySelector(arguments[0]);
return editor ? editor.textContent : null;"""
#: Clicks on the console's prompt until what is typed lands there.
TYPING_ATTEMPTS = 3


def type_in_console(browser: WebDriver, editor: Any, code: str) -> None:
    """Types ``code`` into the console's prompt, and checks that it landed.

    After Shift+Enter in the notebook, JupyterLab moves the focus to the new
    cell a frame or more later: a click on the console before that loses the
    focus to the notebook, and the keys go there. So: click, type, and look
    at the prompt; again if the keys went elsewhere."""
    for _ in range(TYPING_ATTEMPTS):
        editor.click()
        if demo.js(browser, PROMPT_TEXT_JS, CONSOLE_PROMPT):  # part of an earlier attempt
            ActionChains(browser).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL) \
                .send_keys(Keys.BACKSPACE).perform()
        ActionChains(browser).send_keys(code).perform()
        try:
            demo.wait(browser, 2, lambda b: demo.js(b, PROMPT_TEXT_JS, CONSOLE_PROMPT) == code,
                      "")
            return
        except TimeoutException:
            continue
    raise AssertionError(f"{code!r} did not land in the console's prompt in "
                         f"{TYPING_ATTEMPTS} attempts; it shows "
                         f"{demo.js(browser, PROMPT_TEXT_JS, CONSOLE_PROMPT)!r}")


def ask_console(browser: WebDriver, code: str) -> str:
    """Type ``code`` in the console's prompt, run it, and return its output."""
    editor = demo.wait(browser, demo.KERNEL_READY_TIMEOUT, lambda b: [
        e for e in b.find_elements(By.CSS_SELECTOR, CONSOLE_PROMPT)
        if demo.visible(e)], "the subshell console shows no prompt")[0]
    before = len(browser.find_elements(By.CSS_SELECTOR, CONSOLE_OUTPUTS))
    type_in_console(browser, editor, code)
    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
    outputs = demo.wait(browser, demo.KERNEL_READY_TIMEOUT, lambda b: [
        o.text.strip() for o in b.find_elements(By.CSS_SELECTOR, CONSOLE_OUTPUTS)
        ][before:], f"the subshell console did not answer {code!r}")
    return str(outputs[-1])


# In a subshell console, cells run on the subshell's thread, not Python's
# main thread (JupyterLab creates the subshell once the console's kernel
# connection is up, so its first cells may still go to the main shell).
ON_A_SUBSHELL = "import threading; threading.current_thread() is not threading.main_thread()"


def wait_for_subshell(browser: WebDriver) -> None:
    deadline = time.monotonic() + demo.KERNEL_READY_TIMEOUT
    while ask_console(browser, ON_A_SUBSHELL) != "True":
        if time.monotonic() > deadline:
            pytest.fail("the subshell console's cells run on the main shell")
        time.sleep(0.5)


# Arrow key presses on the slider's focused handle: each moves it one step.
STEPS = 5


def move_slider(browser: WebDriver, cell: Any) -> str:
    """Move the slider with the keyboard, as a user can: focus its handle,
    press the right arrow; its readout. (Debian's JupyterLab widgets do not
    load the slider's stylesheet, so the handle has no size to drag.)"""
    handle = demo.wait(browser, demo.UI_TIMEOUT, lambda b: cell.find_elements(
        By.CSS_SELECTOR, ".widget-slider .noUi-handle"), "the slider did not render")[0]
    demo.js(browser, "arguments[0].focus();", handle)
    ActionChains(browser).send_keys(Keys.ARROW_RIGHT * STEPS).perform()
    readout = cell.find_element(By.CSS_SELECTOR, ".widget-readout")
    demo.wait(browser, demo.UI_TIMEOUT, lambda b: readout.text.strip() == str(STEPS),
              f"the slider's readout shows {readout.text.strip()!r} after {STEPS} steps")
    return str(readout.text.strip())


@pytest.fixture(scope="module", params=list(THEMES))
def seen(request: pytest.FixtureRequest, server: Server,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seen]:
    theme = request.param
    server.shut_down_kernels()  # the other theme's kernel, asleep in its cell
    server.put_setting("@jupyterlab/apputils-extension:themes", {"theme": THEMES[theme]})
    browser = new_browser(tmp_path_factory, ARTIFACTS, theme)
    with browser_kept(browser, ARTIFACTS, theme):
        profile.open_and_wait_idle(browser, server, f"subshells-{theme}.ipynb")
        widget_cell = demo.cell_containing(browser, "ipywidgets")
        sleep_cell = demo.cell_containing(browser, "time.sleep")
        items = context_menu_items(browser, widget_cell)
        labels = [item_label(i) for i in items]
        wanted = [i for i in items if item_label(i) == MENU_ITEM]
        if not wanted:
            pytest.fail(f"the notebook's context menu has no {MENU_ITEM!r}: {labels}")
        wanted[0].click()
        wait_for_subshell(browser)
        run_cell(browser, widget_cell)
        demo.wait(browser, demo.KERNEL_READY_TIMEOUT,
                  lambda b: widget_cell.find_elements(By.CSS_SELECTOR, ".widget-slider"),
                  "the widget cell showed no slider")
        run_cell(browser, sleep_cell)
        demo.wait(browser, demo.UI_TIMEOUT, lambda b: prompt_of(b, sleep_cell) == "[*]:",
                  "the sleeping cell did not start")
        answer = ask_console(browser, "6 * 7")
        value = move_slider(browser, widget_cell)
        label = widget_cell.find_element(By.CSS_SELECTOR, "div.widget-label")  # the Label
        # On a timeout, the assertion on Seen.label says what was shown instead.
        with contextlib.suppress(TimeoutException):
            demo.wait(browser, demo.UI_TIMEOUT,
                      lambda b: label.text.strip() == f"callback saw {value}", "")
        browser.save_screenshot(str(ARTIFACTS / f"{theme}-subshells.png"))
        yield Seen(theme, labels, answer, value, label.text.strip(),
                   prompt_of(browser, sleep_cell))


def test_the_notebook_offers_a_subshell_console(seen: Seen) -> None:
    assert MENU_ITEM in seen.menu_items


def test_the_subshell_console_answers_while_a_cell_sleeps(seen: Seen) -> None:
    assert seen.console_answer == "42"
    assert seen.sleeping_cell_prompt == "[*]:", "the notebook's cell ended first"


def test_a_slider_moved_during_a_busy_cell_runs_its_callback(seen: Seen) -> None:
    assert seen.label == f"callback saw {seen.slider_value}"
    assert seen.sleeping_cell_prompt == "[*]:", "the notebook's cell ended first"
