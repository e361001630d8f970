"""notebooks/demo.ipynb run in JupyterLab, in headless Chromium, through the UI.

A JupyterLab server from the environment serves a temporary copy of
notebooks/ (the repository's notebook is never modified). Chromium, driven by
selenium through Debian's chromedriver, opens demo.ipynb, checks that the
intended kernel is selected, runs Run > Run All Cells from the menu and
waits for every cell to finish. The tests then read the page a user sees: the
progress and status renderings, the remote error, the shareability tree, the
profile's timeline (drawn by interp-rpc's JupyterLab extension), and the stuck
flag shown live while the slow map ran.

Artifacts, kept after the run (also when it fails), in build/artifacts/browser/:

- ``running-stuck.png``: the viewport while the slow map runs, showing the
  live status with its stuck worker;
- ``after-run-all-dark.png``: the whole notebook after Run All (Lab runs in
  its dark theme, where contrast is hardest; the light fallbacks of our
  colours are checked in tests/interp_rpc/notebook/test_notebook_render.py);
- ``after-run-all.png``: the whole notebook after Run All;
- ``after-run-all-viewport.png``: the viewport at the same moment;
- ``after-run-all.html``: the page's DOM at the same moment;
- ``failure.png``: the viewport when opening or running the notebook failed;
- ``jupyter-server.log``, ``chromedriver.log``, ``browser-console.log``.

Lab runs in its dark theme, and every text of our outputs must meet WCAG AA
contrast against what is behind it, read from the computed styles.

The kernel is ``KERNEL`` below. Under ipykernel the notebook copy gets a first
cell ``%load_ext interp_rpc`` and ipykernel's kernelspec; the interp-rpc kernel
loads the extension at startup and runs the notebook as it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import TimeoutException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

#: The kernel the notebook runs in. "python3" is ipykernel with %load_ext;
#: "interp-rpc" is "Python (interp-rpc)", which runs the notebook unchanged.
KERNEL = "interp-rpc"

#: Lab's theme: the dark one, where low contrast shows.
THEME = "JupyterLab Dark"

#: WCAG 2 AA: the least contrast ratio for normal-size text.
WCAG_AA = 4.5

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
ARTIFACTS = REPO / "build" / "artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

SERVER_START_TIMEOUT = 60.0
KERNEL_READY_TIMEOUT = 60.0
RUN_ALL_TIMEOUT = 120.0
UI_TIMEOUT = 20.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
                       reason="needs Debian's chromium and chromium-driver"),
    pytest.mark.skipif(shutil.which("jupyter-lab") is None, reason="needs JupyterLab"),
]


# ---------------------------------------------------------------- the server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def kernel_display_name(kernel: str) -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    name: str = KernelSpecManager().get_kernel_spec(kernel).display_name
    return name


def prepare_notebooks(dest: Path, kernel: str) -> None:
    """A copy of notebooks/, with demo.ipynb set up for ``kernel``."""
    shutil.copytree(NOTEBOOKS, dest, ignore=shutil.ignore_patterns(
        "__pycache__", ".ipynb_checkpoints"))
    path = dest / "demo.ipynb"
    nb = json.loads(path.read_text())
    if kernel != "interp-rpc":
        nb["cells"].insert(0, {"id": "load-ext", "cell_type": "code", "execution_count": None,
                               "metadata": {}, "outputs": [],
                               "source": ["%load_ext interp_rpc"]})
    nb["metadata"]["kernelspec"] = {"name": kernel, "display_name": kernel_display_name(kernel),
                                    "language": "python"}
    path.write_text(json.dumps(nb, indent=1))


def write_lab_settings(settings: Path) -> None:
    """User settings for a quiet, deterministic Lab: every cell attached to
    the DOM (the default windowing detaches cells out of view), no blank space
    past the last cell (for the whole-notebook screenshot), and no news or
    update checks (this machine has no network)."""
    files = {
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none",
                                                   "scrollPastEnd": False},
        "@jupyterlab/apputils-extension/notification": {
            "fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/apputils-extension/themes": {"theme": THEME},
    }
    for name, values in files.items():
        path = settings / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"{self.url}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read()
        return json.loads(body) if body else None

    def code_cells(self) -> int:
        """How many code cells the served demo.ipynb has."""
        nb = json.loads((self.root / "demo.ipynb").read_text())
        return sum(cell["cell_type"] == "code" for cell in nb["cells"])

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def wait_for_server(lab: Lab) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if lab.process.poll() is not None:
            raise AssertionError(f"jupyter lab exited with {lab.process.returncode}:\n"
                                 f"{lab.log_tail()}")
        try:
            lab.api("/api/status")
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)  # polling a server that is starting: nothing to wait on
    raise AssertionError(f"jupyter lab did not answer within {SERVER_START_TIMEOUT:.0f} s:\n"
                         f"{lab.log_tail()}")


def stop_server(lab: Lab) -> None:
    """Ask the server to shut down (it stops its kernels), then insist."""
    if lab.process.poll() is None:
        with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
            lab.api("/api/shutdown", method="POST")
        try:
            lab.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            lab.process.send_signal(signal.SIGTERM)
            try:
                lab.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                lab.process.kill()
                lab.process.wait()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # no screenshot left from an earlier run
    ARTIFACTS.mkdir(parents=True)
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    prepare_notebooks(root, KERNEL)
    write_lab_settings(base / "settings")
    server = start_lab(base, root, ARTIFACTS)
    try:
        yield server
    finally:
        stop_server(server)


def start_lab(base: Path, root: Path, artifacts: Path) -> Lab:
    """JupyterLab serving ``root``, with its config, runtime, settings and
    workspaces under ``base``, its log in ``artifacts``; ready when it returns."""
    port, token = free_port(), secrets.token_hex(16)
    env = dict(os.environ,
               JUPYTER_CONFIG_DIR=str(base / "config"),
               JUPYTER_RUNTIME_DIR=str(base / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(base / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
               IPYTHONDIR=str(base / "ipython"))
    argv = ["jupyter-lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
            "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}", "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    log = artifacts / "jupyter-server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, cwd=root, env=env)
    server = Lab(f"http://127.0.0.1:{port}", token, root, process, log)
    try:
        wait_for_server(server)
    except BaseException:
        stop_server(server)
        raise
    return server


# ---------------------------------------------------------------- the browser


@pytest.fixture(scope="module")
def driver(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(CHROMEDRIVER, log_output=str(ARTIFACTS / "chromedriver.log"))
    browser = webdriver.Chrome(service=service, options=options)
    try:
        yield browser
    finally:
        try:
            entries = browser.get_log("browser")
            (ARTIFACTS / "browser-console.log").write_text(
                "".join(f"{e['level']} {e['message']}\n" for e in entries))
        finally:
            browser.quit()


def wait(browser: WebDriver, timeout: float, condition: Any, message: str) -> Any:
    return WebDriverWait(browser, timeout, poll_frequency=0.1).until(condition, message)


def js(browser: WebDriver, script: str, *args: Any) -> Any:
    return browser.execute_script(script, *args)


NOTEBOOK = ".jp-NotebookPanel"
CODE_CELLS = f"{NOTEBOOK} .jp-CodeCell"
# Lab renders error outputs, like stderr, as this MIME type.
STDERR = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
EXECUTED_PROMPT = re.compile(r"\[\d+\]:")

PROMPTS_JS = """
return Array.from(document.querySelectorAll(arguments[0])).map(cell => {
  const prompt = cell.querySelector('.jp-InputArea-prompt');
  return prompt ? prompt.textContent.trim() : '';
});"""

KERNEL_STATUS_JS = """
const indicator = document.querySelector(arguments[0] + ' .jp-Notebook-ExecutionIndicator');
return indicator ? indicator.getAttribute('data-status') : null;"""

KERNEL_NAME_JS = """
const name = document.querySelector(arguments[0] + ' .jp-Toolbar-kernelName');
return name ? name.textContent.trim() : null;"""

# The text of every live progress line on the page: the HTML one, or the
# widget bar's label (with the status table's target beside it).
PROGRESS_JS = """
const html = Array.from(document.querySelectorAll('.interp-rpc-progress'))
  .map(p => p.textContent.trim());
const widgets = Array.from(document.querySelectorAll('.interp-rpc-widget-progress'))
  .filter(w => w.offsetHeight > 0)
  .map(w => {
    const area = w.closest('.jp-OutputArea');
    const target = area ? area.querySelector('.interp-rpc-status code') : null;
    return (target ? target.textContent.trim() + ' ' : '') + w.textContent.trim();
  });
return html.concat(widgets);"""

STATUS_TEXTS_JS = """
return Array.from(document.querySelectorAll('table.interp-rpc-status'))
  .map(t => t.textContent.trim());"""

WIDGET_BAR_SHOWN_JS = """
return Array.from(document.querySelectorAll('.widget-hprogress .progress'))
  .some(bar => bar.offsetWidth > 0 && bar.offsetHeight > 0);"""

# The first stuck row's text, scrolled into view ('' if none): found, read and
# scrolled in one script, because the live table is redrawn four times a
# second and an element found by one WebDriver command is often gone by the
# next (StaleElementReferenceException).
STUCK_ROW_JS = """
const row = document.querySelector('.interp-rpc-status .interp-rpc-stuck');
if (!row) return '';
row.scrollIntoView({block: 'center'});
return row.innerText;"""

# Every text in our outputs whose contrast with what is behind it is below
# arguments[0]: [text, colour, background, ratio]. Backgrounds are composited
# up the ancestors; SVG text is checked by its fill.
CONTRAST_JS = """
const minimum = arguments[0];
function rgba(value) {
  const m = value.match(/rgba?\\(([^)]+)\\)/);
  if (!m) return null;
  const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
}
function over(top, bottom) {
  const a = top[3];
  return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]);
}
function background(element) {
  const layers = [];
  for (let e = element; e; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let colour = [255, 255, 255, 1];
  for (const layer of layers.reverse()) colour = over(layer, colour);
  return colour;
}
function luminance(c) {
  const [r, g, b] = c.slice(0, 3).map(v => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const failures = [];
const outputs = document.querySelectorAll('.jp-OutputArea-output');
for (const output of outputs) {
  for (const e of output.querySelectorAll('*')) {
    const own = Array.from(e.childNodes)
      .filter(n => n.nodeType === 3 && n.textContent.trim()).map(n => n.textContent.trim());
    if (!own.length || e.offsetParent === null && !(e instanceof SVGElement)) continue;
    if (e.closest('title, style, script')) continue;  // tooltips and code: not drawn
    const style = getComputedStyle(e);
    const isSvg = e instanceof SVGElement;
    let colour = rgba(isSvg ? style.fill : style.color);
    if (!colour) continue;
    const back = isSvg ? background(e.ownerSVGElement.parentElement) : background(e);
    colour = over(colour, back);
    const [hi, lo] = [luminance(colour), luminance(back)].sort((x, y) => y - x);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio < minimum)
      failures.push([own.join(' ').slice(0, 60), colour.join(','), back.join(','),
                     Math.round(ratio * 100) / 100]);
  }
}
return failures;"""


@dataclass
class RunAll:
    """What was seen while Run All ran."""

    kernel_name: str = ""
    seconds: float = 0.0
    prompts: list[str] = field(default_factory=list)
    #: The stuck row's text, the first time one was on the page.
    stuck_row: str = ""
    #: Every distinct text of a progress line seen while the cells ran.
    progress_texts: set[str] = field(default_factory=set)
    #: Every distinct text of a live status table seen while the cells ran.
    status_texts: set[str] = field(default_factory=set)
    #: Whether a status table and an ipywidgets bar were seen while maps ran.
    status_seen: bool = False
    widget_bar_seen: bool = False


def open_notebook(browser: WebDriver, lab: Lab, observed: RunAll) -> None:
    browser.get(f"{lab.url}/lab/tree/demo.ipynb?token={lab.token}")
    wait(browser, UI_TIMEOUT, lambda b: b.find_elements(By.CSS_SELECTOR, CODE_CELLS),
         "JupyterLab did not show demo.ipynb's cells")
    expected = kernel_display_name(KERNEL)

    def kernel_selected(b: WebDriver) -> bool:
        observed.kernel_name = js(b, KERNEL_NAME_JS, NOTEBOOK) or ""
        return observed.kernel_name == expected

    try:
        wait(browser, KERNEL_READY_TIMEOUT, kernel_selected, "")
    except TimeoutException:
        pytest.fail(f"the notebook's kernel is {observed.kernel_name!r}, not {expected!r}")
    wait(browser, KERNEL_READY_TIMEOUT,
         lambda b: js(b, KERNEL_STATUS_JS, NOTEBOOK) == "idle",
         f"the {expected} kernel did not become idle within {KERNEL_READY_TIMEOUT:.0f} s")


def click_run_all(browser: WebDriver) -> None:
    """Run > Run All Cells, from the menu bar."""
    menus = browser.find_elements(By.CSS_SELECTOR, "#jp-menu-panel .lm-MenuBar-item")
    run = [m for m in menus if m.text.strip() == "Run"]
    assert run, f"no Run menu in the menu bar: {[m.text for m in menus]}"
    run[0].click()
    item = wait(browser, UI_TIMEOUT, lambda b: [
        i for i in b.find_elements(By.CSS_SELECTOR, ".lm-Menu .lm-Menu-item")
        if i.text.split("\n")[0].strip() == "Run All Cells"],
        "the Run menu has no 'Run All Cells' item")
    item[0].click()


def run_all(browser: WebDriver, observed: RunAll, code_cells: int) -> None:
    """Run All Cells, watching the live renderings, until every cell has run:
    each code cell shows an execution count and the kernel is idle.

    JupyterLab 4.4 turns the queued cells' ``[*]`` back into ``[ ]`` once a
    cell raises, even when the ``raises-exception`` tag lets the kernel go on
    running them; they get their counts as they run."""
    started = time.monotonic()
    click_run_all(browser)

    def finished(b: WebDriver) -> bool:
        observed.progress_texts.update(js(b, PROGRESS_JS))
        tables = js(b, STATUS_TEXTS_JS)
        observed.status_texts.update(tables)
        observed.status_seen = observed.status_seen or bool(tables)
        # In one script: the widget may close between a lookup and a read.
        observed.widget_bar_seen = observed.widget_bar_seen or bool(js(b, WIDGET_BAR_SHOWN_JS))
        if not observed.stuck_row:
            observed.stuck_row = js(b, STUCK_ROW_JS)
            if observed.stuck_row:
                b.save_screenshot(str(ARTIFACTS / "running-stuck.png"))
        observed.prompts = js(b, PROMPTS_JS, CODE_CELLS)
        return (len(observed.prompts) == code_cells
                and all(EXECUTED_PROMPT.fullmatch(p) for p in observed.prompts)
                and js(b, KERNEL_STATUS_JS, NOTEBOOK) == "idle")

    try:
        wait(browser, RUN_ALL_TIMEOUT, finished, "")
    except TimeoutException:
        pytest.fail(f"Run All did not finish within {RUN_ALL_TIMEOUT:.0f} s; "
                    f"the input prompts read {observed.prompts}")
    observed.seconds = time.monotonic() - started


def screenshot_whole_notebook(browser: WebDriver, path: Path) -> None:
    """Lab scrolls the notebook inside its panel, so a screenshot only shows
    the viewport: grow the window to the notebook's height, from the top."""
    size = browser.get_window_size()
    extra = js(browser, f"""
        const panel = document.querySelector('{NOTEBOOK} .jp-WindowedPanel-outer');
        panel.scrollTop = 0;
        return panel.scrollHeight - panel.clientHeight;""")
    browser.set_window_size(size["width"], min(size["height"] + int(extra) + 40, 16000))
    try:
        js(browser, f"document.querySelector('{NOTEBOOK} .jp-WindowedPanel-outer').scrollTop = 0;")
        browser.save_screenshot(str(path))
    finally:
        browser.set_window_size(size["width"], size["height"])


@pytest.fixture(scope="module")
def ran(lab: Lab, driver: WebDriver) -> RunAll:
    """The notebook, opened and run through Run All, with what was seen."""
    observed = RunAll()
    try:
        open_notebook(driver, lab, observed)
        run_all(driver, observed, lab.code_cells())
    except BaseException:
        driver.save_screenshot(str(ARTIFACTS / "failure.png"))
        raise
    driver.save_screenshot(str(ARTIFACTS / "after-run-all-viewport.png"))
    screenshot_whole_notebook(driver, ARTIFACTS / "after-run-all-dark.png")
    (ARTIFACTS / "after-run-all.html").write_text(driver.page_source)
    print(f"\nRun All took {observed.seconds:.1f} s; screenshots in {ARTIFACTS}")
    return observed


# ---------------------------------------------------------------- the tests


def cell_containing(browser: WebDriver, text: str) -> Any:
    """The code cell whose source contains ``text``."""
    for cell in browser.find_elements(By.CSS_SELECTOR, CODE_CELLS):
        source = js(browser, """
            const lines = arguments[0].querySelectorAll('.jp-InputArea-editor .cm-line');
            return Array.from(lines).map(line => line.textContent).join('\\n');""", cell)
        if text in source:
            return cell
    raise AssertionError(f"no code cell contains {text!r}")


def outputs(cell: Any, selector: str) -> list[Any]:
    return list(cell.find_elements(By.CSS_SELECTOR, f".jp-OutputArea-output {selector}"))


def only(elements: list[Any], what: str) -> Any:
    assert len(elements) == 1, f"expected one {what}, found {len(elements)}"
    return elements[0]


def visible(element: Any) -> bool:
    size = element.size
    return bool(element.is_displayed() and size["width"] > 0 and size["height"] > 0)


def test_the_notebook_runs_in_the_intended_kernel(ran: RunAll) -> None:
    assert ran.kernel_name == kernel_display_name(KERNEL)


def test_run_all_runs_every_cell_past_the_error_cells(ran: RunAll, lab: Lab) -> None:
    assert len(ran.prompts) == lab.code_cells(), ran.prompts
    assert all(EXECUTED_PROMPT.fullmatch(p) for p in ran.prompts), (
        f"some cells did not run (the raises-exception tag should let Run All go on past "
        f"the error cells): {ran.prompts}")


def test_the_map_shows_its_progress_and_the_workers_status(ran: RunAll,
                                                            driver: WebDriver) -> None:
    assert ran.status_seen, "no status table was shown while the maps ran"
    counted = [t for t in ran.progress_texts if t.startswith("demo_work.count_primes")]
    assert counted, f"no progress of the count_primes map was seen: {ran.progress_texts}"
    assert not [t for t in counted if re.search(r"\b([0-9]+)/8\b", t) is None], counted
    cell = cell_containing(driver, "%parallel_map demo_work.count_primes")
    summary = only(outputs(cell, ".interp-rpc-summary"), "one-line summary of the map")
    assert visible(summary), "the summary is not visible"
    assert summary.text.startswith("demo_work.count_primes: 8 of 8 items in "), summary.text
    assert re.search(r"speed-up [0-9.]+x", cell.text), cell.text
    assert not outputs(cell, ".widget-hprogress"), "the progress widget was not closed"


def test_the_status_updates_in_place_while_a_map_runs(ran: RunAll) -> None:
    # The slow map's table shows how long each busy worker has been running,
    # which changes on every refresh during its 2.5 s item. (Its progress
    # count changes only during the six quick items, 0.6 s in all, which a
    # poll under load missed: only "6/7" was seen.)
    frames = sorted(t for t in ran.status_texts if "demo_work.nap" in t)
    assert len(frames) > 1, f"the slow map's status was not updated while it ran: {frames}"


def test_the_stuck_worker_is_flagged_live(ran: RunAll) -> None:
    assert ran.stuck_row, "no worker was flagged stuck while the 2.5 s call ran"
    assert "stuck" in ran.stuck_row and "demo_work.nap" in ran.stuck_row, ran.stuck_row


def test_the_remote_error_shows_a_header_and_the_remote_traceback(ran: RunAll,
                                                                  driver: WebDriver) -> None:
    cell = cell_containing(driver, "demo_work.checked_sqrt")
    error = only([o for o in cell.find_elements(By.CSS_SELECTOR, STDERR)
                  if "RemoteError" in o.text], "RemoteError output")
    lines = error.text.splitlines()
    headers = [line for line in lines if line.startswith("RemoteError in worker ")]
    assert len(headers) == 1, error.text[:400]
    assert "target demo_work.checked_sqrt · item 2" in headers[0], headers
    assert "NegativeInputError: cannot take the square root of -1" in error.text, error.text
    header = [s for s in error.find_elements(By.CSS_SELECTOR, "span.ansi-bold")
              if s.text == "RemoteError"]
    assert header, "the header is not coloured"


def test_the_shareability_error_shows_the_tree_once(ran: RunAll, driver: WebDriver) -> None:
    cell = cell_containing(driver, "threading.Lock()")
    (error,) = [o for o in cell.find_elements(By.CSS_SELECTOR, STDERR)
                if "ShareabilityError" in o.text]
    assert "└── ['handle']  ◀ lock" in error.text, error.text
    assert cell.text.count("── ['handle']") == 1, cell.text  # the tree, once


def test_the_profile_draws_an_interactive_timeline(ran: RunAll, driver: WebDriver) -> None:
    # JupyterLab draws the profile with interp-rpc's extension (its MIME
    # renderer), in front of the HTML fallback that the output also carries.
    cell = cell_containing(driver, "%parallel_profile")
    svg = only([s for s in outputs(cell, ".irpc-mime svg.interp-rpc-gantt") if visible(s)],
               "interactive profile timeline (.irpc-mime svg.interp-rpc-gantt)")
    texts = [t.text for t in svg.find_elements(By.CSS_SELECTOR, "text")]
    assert "worker 0" in texts and "worker 1" in texts, texts
    bars = svg.find_elements(By.CSS_SELECTOR, "rect[data-item]")
    assert len(bars) == 7, f"expected a bar per item of the last map, found {len(bars)}"
    assert not outputs(cell, "img.irpc-timeline-img"), "the HTML fallback is shown too"


def test_the_ipywidgets_progress_bar_was_visible_while_the_map_ran(ran: RunAll) -> None:
    assert ran.widget_bar_seen, "no visible ipywidgets progress bar while the maps ran"


def test_every_text_of_our_outputs_meets_wcag_aa_in_the_dark_theme(
        ran: RunAll, driver: WebDriver) -> None:
    theme = js(driver, "return document.body.dataset.jpThemeName")
    assert theme == THEME, f"Lab runs the theme {theme!r}, not {THEME!r}"
    failures = js(driver, CONTRAST_JS, WCAG_AA)
    assert not failures, ("texts below WCAG AA (text, colour, background, ratio):\n"
                          + "\n".join(map(str, failures)))
