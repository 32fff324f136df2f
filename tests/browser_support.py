"""Headless Chromium through selenium for the report's browser tests (the system `chromium` and
`chromium-driver` packages; a test skips, naming them, where either is missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

BROWSER, DRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1600")


def browser_or_skip():
    if not (BROWSER.is_file() and DRIVER.is_file()):
        pytest.skip(
            "no system Chromium: `apt-get install -y chromium chromium-driver` (see docs/pipeline.md)"
        )
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium is not installed: pip install -e '.[test]'"
    )
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(BROWSER)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(str(DRIVER)), options=options)


def wait_for_every_element(driver, selector: str, expected: int, seconds: float = 60) -> None:
    """Until the page is loaded and holds `expected` elements matching `selector`: on a loaded machine
    chromedriver has returned from get() with the document still being parsed."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, seconds).until(
        lambda d: (
            d.execute_script(
                "return document.readyState === 'complete' && document.querySelectorAll(arguments[0]).length",
                selector,
            )
            >= expected
        )
    )


def first_screen(driver, page: Path, width: int = 1280, height: int = 800) -> None:
    """Open `page` as a `width` x `height` screen at one device pixel per CSS pixel."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    driver.get(page.as_uri())
