"""What the JupyterLab browser tests share: the running server's handle, and
a headless Chromium that keeps its console log."""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
import test_lab_demo as demo  # noqa: E402
from selenium.webdriver.remote.webdriver import WebDriver  # noqa: E402


@dataclass
class Server:
    lab: demo.Lab

    def put_setting(self, plugin: str, values: dict[str, Any]) -> None:
        body = json.dumps({"raw": json.dumps(values)}).encode()
        request = urllib.request.Request(
            f"{self.lab.url}/lab/api/settings/{plugin}", data=body, method="PUT",
            headers={"Authorization": f"token {self.lab.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10):
            pass

    def shut_down_kernels(self) -> None:
        for session in self.lab.api("/api/sessions"):
            self.lab.api(f"/api/sessions/{session['id']}", method="DELETE")


@contextmanager
def serving(tmp_path_factory: pytest.TempPathFactory, artifacts: Path,
            notebooks: dict[str, Any],
            write_more: Callable[[Path], None] | None = None) -> Iterator[Server]:
    """JupyterLab serving ``notebooks`` (file name: notebook JSON), and what
    ``write_more(root)`` adds, with the tests' settings; ``artifacts``
    emptied first, and given the server's log."""
    shutil.rmtree(artifacts, ignore_errors=True)
    artifacts.mkdir(parents=True)
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    root.mkdir()
    for name, content in notebooks.items():
        (root / name).write_text(json.dumps(content, indent=1))
    if write_more is not None:
        write_more(root)
    demo.write_lab_settings(base / "settings")
    lab = demo.start_lab(base, root, artifacts)
    try:
        yield Server(lab)
    finally:
        demo.stop_server(lab)


@contextmanager
def browser_kept(browser: WebDriver, artifacts: Path, name: str,
                 console: list[str] | None = None) -> Iterator[None]:
    """Around what a test module's browser does (a fixture's setup and the
    tests that use it): if it fails, a screenshot and the page's DOM
    (``{name}-failure.png`` and ``.html``); in any case, the browser's
    console log, after the lines of ``console`` that a test read already
    (``browser-console-{name}.log``; ``console`` gets the rest too); then
    the browser quits."""
    lines = console if console is not None else []
    try:
        yield
    except BaseException:
        browser.save_screenshot(str(artifacts / f"{name}-failure.png"))
        (artifacts / f"{name}-failure.html").write_text(browser.page_source)
        raise
    finally:
        try:
            lines.extend(f"{e['level']} {e['message']}" for e in browser.get_log("browser"))
            (artifacts / f"browser-console-{name}.log").write_text(
                "".join(f"{line}\n" for line in lines))
        finally:
            browser.quit()


def new_browser(tmp_path_factory: pytest.TempPathFactory, artifacts: Path,
                name: str) -> WebDriver:
    """Headless Chromium, its chromedriver log in ``artifacts``."""
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = demo.CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(demo.CHROMEDRIVER, log_output=str(artifacts / f"chromedriver-{name}.log"))
    return webdriver.Chrome(service=service, options=options)
