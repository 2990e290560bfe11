"""Headless Chromium for tests that look at a page as a person would: Debian's chromium, driven by
Selenium through Debian's chromedriver (``make browser`` installs both). The driver is given by
path, so Selenium Manager never looks for, or downloads, a browser or a driver of its own.

    require_browser()
    with headless_page(url, tmp_path / "page.png", wait_for_css="#status") as page:
        assert page.driver.find_element(By.CSS_SELECTOR, "#status").text == "ok"
    assert page.console_errors() == []
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from selenium.webdriver.chromium.webdriver import ChromiumDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")  # chromium-driver: same source package, same version

# A fixed viewport, so screenshots of the same page compare. --window-size alone leaves a headless
# viewport of 1400x757 (the window keeps room for a toolbar it does not draw); see headless_page.
WIDTH, HEIGHT = 1400, 900
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # the tests run as root, and Chromium refuses its sandbox as root
    "--disable-gpu",  # no GPU here: render in software from the start instead of probing for one
    "--disable-dev-shm-usage",  # shared memory in /tmp: a small /dev/shm (containers) crashes tabs
    f"--window-size={WIDTH},{HEIGHT}",
    # Every host name but localhost fails to resolve: the page may use loopback only, so a CDN
    # script or font shows as a failed load (a console error) rather than as a flaky download.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.*, EXCLUDE ::1",
)


def require_browser() -> None:
    """Skip the calling test, naming what is missing, unless a headless page can be opened."""
    for binary in (CHROMIUM, CHROMEDRIVER):
        if not binary.is_file():
            pytest.skip(f"{binary} is not installed: make browser")
    try:
        import selenium  # noqa: F401
    except ImportError:
        pytest.skip("selenium is not importable: make setup (it is pinned in pyproject.toml's dev extra)")


@dataclass
class Page:
    driver: ChromiumDriver  # Chrome: WebDriver plus get_log and execute_cdp_cmd
    _console: list[dict[str, Any]] = field(default_factory=list)
    _open: bool = True

    def console(self) -> list[dict[str, Any]]:
        """Every console entry so far: {"level", "message", "source", "timestamp"}. The driver
        hands each entry out once, so they are kept here, and stay readable after the page closed."""
        if self._open:
            self._console += self.driver.get_log("browser")
        return list(self._console)

    def console_errors(self) -> list[dict[str, Any]]:
        """The SEVERE entries: console.error, uncaught exceptions, and failed loads. A resource
        that answers 4xx/5xx counts too, the browser's own /favicon.ico request among them: the
        dashboard serves a favicon, so a 404 there is a real error and is not filtered out."""
        return [entry for entry in self.console() if entry["level"] == "SEVERE"]


@contextlib.contextmanager
def headless_page(
    url: str, screenshot: Path, wait_for_css: str, timeout: float = 30, token: str | None = None
) -> Iterator[Page]:
    """Open ``url`` in headless Chromium and yield once an element matches ``wait_for_css``. On
    exit, whether the block passed or not (and also when the wait timed out), the page is saved
    as a PNG to ``screenshot`` and the console is collected into the Page, then the browser quits.
    ``token`` is sent as ``Authorization: Bearer <token>`` with every request of the page, the
    document and its fetch/XHR calls alike (not with pages opened in another tab or window)."""
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # console.log/info too, not only errors
    # Chromium's profile, its shared memory files and the singleton socket that it leaves behind on
    # every quit all go under TMPDIR: a directory of its own, removed afterwards, keeps /tmp clean.
    with tempfile.TemporaryDirectory(prefix="greenops-browser-", ignore_cleanup_errors=True) as scratch:
        service = Service(executable_path=str(CHROMEDRIVER), env={**os.environ, "TMPDIR": scratch})
        driver = webdriver.Chrome(service=service, options=options)
        page = Page(driver)
        try:
            driver.set_page_load_timeout(timeout)
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False},
            )
            if token is not None:
                # WebDriver has no way to set request headers; the DevTools protocol of the same
                # browser does, for the tab it is sent to. It must be on before the first request.
                driver.execute_cdp_cmd("Network.enable", {})
                driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Bearer {token}"}})
            driver.get(url)
            try:
                WebDriverWait(driver, timeout).until(
                    expected_conditions.presence_of_element_located((By.CSS_SELECTOR, wait_for_css))
                )
            except TimeoutException:
                # The with-block never sees the Page then, so the console (often the why) goes here
                raise TimeoutException(
                    f"no element matched {wait_for_css!r} on {url} within {timeout:g}s; console: {page.console()}"
                ) from None
            yield page
        finally:
            try:
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                if not driver.save_screenshot(str(screenshot)):
                    raise OSError(f"Chromium could not write the screenshot {screenshot}")
                page.console()
            finally:
                page._open = False
                driver.quit()
