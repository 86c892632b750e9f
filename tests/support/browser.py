"""Debian's Chromium, driven by Playwright, for the real-browser tests.

Playwright's own browser downloads are never used: a test that needs the browser
skips when ``/usr/bin/chromium`` (or playwright) is absent, or fails when
``WEBAUTH_REQUIRE_BROWSER`` is set (as CI does).
"""

import os
from contextlib import contextmanager

import pytest

CHROMIUM = "/usr/bin/chromium"


def unavailable(reason):
    """Skip, or fail where a browser is required (CI sets WEBAUTH_REQUIRE_BROWSER)."""
    if os.environ.get("WEBAUTH_REQUIRE_BROWSER"):
        pytest.fail(f"{reason}, and WEBAUTH_REQUIRE_BROWSER is set", pytrace=False)
    pytest.skip(reason)


@contextmanager
def chromium():
    """One headless Chromium for a module's tests (each test opens its own contexts)."""
    if not os.path.exists(CHROMIUM):
        unavailable(f"{CHROMIUM} is absent (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed")
    # Playwright's sync API keeps an asyncio loop running on this thread, so Django's
    # async-safety check would refuse the test's own ORM calls (creating users,
    # flushing the database) while the browser is open. They are plain synchronous
    # calls; the live server handles requests in its own thread either way.
    with pytest.MonkeyPatch.context() as mp, sync_playwright() as playwright:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()
