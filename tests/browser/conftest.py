"""The built site in a real browser: the server and browser fixtures of tests/browser.

A threaded HTTP server serves the existing build (see browsing.py) on 127.0.0.1, on a free
port, and Playwright drives a headless Chromium: Debian's /usr/bin/chromium, or the executable
named by $GPUKIT_CHROMIUM (``playwright install`` is never needed).
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator

import pytest
from browsing import (
    CHROMIUM_ARGS,
    DESKTOP,
    LANGUAGES,
    PHONE,
    SITE,
    TIMEOUT_MS,
    Site,
    chromium_executable,
)


def pytest_configure(config: pytest.Config) -> None:
    missing = [lang for lang in LANGUAGES if not (SITE / lang / "index.html").is_file()]
    if missing:
        raise pytest.UsageError(
            f"no built site in {SITE} (missing: {', '.join(missing)}): run `nox -s docs` "
            "first, or point GPUKIT_SITE at a built site"
        )


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def site() -> Iterator[Site]:
    handler = functools.partial(QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Site(f"http://127.0.0.1:{server.server_port}", SITE)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_executable(), args=CHROMIUM_ARGS
        )
        yield Browser(chromium)
        chromium.close()


class Browser:
    """Playwright's browser, whose new contexts wait at most TIMEOUT_MS for anything.

    The site is local and answers at once: a missing element fails in seconds, not in 30.
    """

    def __init__(self, chromium) -> None:
        self.chromium = chromium

    def new_context(self, **kwargs):
        context = self.chromium.new_context(**kwargs)
        context.set_default_timeout(TIMEOUT_MS)
        return context


@pytest.fixture
def desktop(browser, site: Site):
    """A fresh desktop-sized page (light colour scheme) that may read the clipboard."""
    context = browser.new_context(viewport=DESKTOP, color_scheme="light")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.base)
    yield context.new_page()
    context.close()


@pytest.fixture
def phone(browser):
    """A fresh page on a 375 px wide phone screen."""
    context = browser.new_context(
        viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    yield context.new_page()
    context.close()


@pytest.fixture(scope="module")
def desktop_tab(browser):
    """One desktop page that a module's read-only tests share (faster than a fresh one each)."""
    context = browser.new_context(viewport=DESKTOP, color_scheme="light")
    yield context.new_page()
    context.close()


@pytest.fixture(scope="module")
def phone_tab(browser):
    """One phone page that a module's read-only tests share."""
    context = browser.new_context(
        viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    yield context.new_page()
    context.close()
