"""The account center's header and menu in a real browser (Debian's Chromium, Playwright).

Every account page has the same header (the site linking home, and signing
out) and its menu of tabs at the same height, on a desktop window and on a
phone's: the card is not centred, so the tabs do not jump from page to page.
On a phone the six tabs stay on one row (a strip that scrolls sideways), each
reached by the keyboard and scrolled into view when it has the focus. Skips
without ``/usr/bin/chromium`` unless ``WEBAUTH_REQUIRE_BROWSER`` is set
(tests/support/browser.py).
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from webauth.models import Session

from .support import tour

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TABS = ["/account/", "/account/sessions/", "/account/connections/", "/account/passkeys/"]
TABS += ["/account/email/", "/account/security/"]


@pytest.fixture
def site(settings, live_server):
    """The tour's site (every provider kind), with the second factor on: all six tabs."""
    assert live_server.url.startswith("http://localhost:"), live_server.url
    settings.WEBAUTH = tour.site_settings(live_server.url, strategy="database", mfa=True)
    settings.LOGIN_REDIRECT_URL = "/whoami/"
    tour.create_people()
    return settings


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(30_000)
    page = context.new_page()
    signed_in = tour.Tour(browser_page=page, base_url=live_server.url, configure=lambda w: None)
    signed_in.signed_in("alice")
    yield page
    context.close()


def path_of(url):
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def make_stale():
    """The session signed in an hour ago: the re-authentication page shows (not a redirect)."""
    Session.objects.update(created_at=timezone.now() - timedelta(hours=1))


def session_of(page):
    return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")


def nav_box(page):
    """Where the menu is, and each tab's top and whether it is inside the visible strip."""
    return page.evaluate(
        """() => {
          const nav = document.querySelector('nav.webauth-account-nav');
          const strip = nav.querySelector('ul').getBoundingClientRect();
          const box = nav.getBoundingClientRect();
          return {
            y: box.y + window.scrollY, x: box.x, height: box.height,
            tops: [...nav.querySelectorAll('a')].map((a) => a.getBoundingClientRect().top),
            overflow: document.documentElement.scrollWidth - window.innerWidth,
            strip: { left: strip.left, right: strip.right },
          };
        }"""
    )


@pytest.mark.parametrize("size", ["desktop", "mobile"])
def test_the_menu_stays_put_on_every_tab(site, page, size):
    page.set_viewport_size(tour.SIZES[size])
    boxes = {}
    for path in TABS:
        page.goto(path)
        assert page.locator("nav.webauth-account-nav a").count() == len(TABS)
        boxes[path] = nav_box(page)
    ys = {path: (box["y"], box["x"], box["height"]) for path, box in boxes.items()}
    assert len(set(ys.values())) == 1, ys
    for path, box in boxes.items():
        assert len(set(box["tops"])) == 1, (path, box["tops"])  # one row of tabs
        assert box["overflow"] <= 0, path  # the page itself never scrolls sideways


def test_on_a_phone_every_tab_is_reached_by_the_keyboard(site, page):
    page.set_viewport_size(tour.SIZES["mobile"])
    page.goto("/account/security/")
    box = nav_box(page)
    tabs = page.locator("nav.webauth-account-nav a")
    # The current tab (the last) is scrolled into view when the page opens.
    current = page.locator('nav.webauth-account-nav a[aria-current="page"]').bounding_box()
    assert box["strip"]["left"] <= current["x"]
    assert current["x"] + current["width"] <= box["strip"]["right"] + 1
    # The strip is narrower than its tabs: it scrolls.
    assert page.evaluate(
        "() => { const ul = document.querySelector('nav.webauth-account-nav ul');"
        " return ul.scrollWidth > ul.clientWidth; }"
    )
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    reached = []
    for _ in range(20):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            """() => {
              const a = document.activeElement;
              if (!a.closest('nav.webauth-account-nav')) return null;
              const strip = a.closest('ul').getBoundingClientRect();
              const r = a.getBoundingClientRect();
              return { href: a.getAttribute('href'), at: [r.left, r.right, strip.left, strip.right],
                       inside: r.left >= strip.left - 1 && r.right <= strip.right + 1 };
            }"""
        )
        if focused is None:
            if reached:
                break
            continue
        assert focused["inside"], focused  # a tab with the focus is scrolled into view
        reached.append(focused["href"])
    assert reached == TABS
    assert tabs.nth(len(TABS) - 1).get_attribute("aria-current") == "page"
    page.keyboard.press("Shift+Tab")  # back from past the menu: Security
    page.keyboard.press("Shift+Tab")
    with page.expect_navigation():
        page.keyboard.press("Enter")  # on the Email tab
    assert path_of(page.url) == "/account/email/"


def test_the_header_links_home_to_login_redirect_url_by_default(site, page):
    for path in (*TABS, "/account/reauthenticate/?next=/account/email/"):
        if "reauthenticate" in path:
            make_stale()
        page.goto(path)
        assert path_of(page.url) == path
        header = page.get_by_role("banner")
        home = header.get_by_role("link", name="localhost:")  # RequestSite's name: the host
        assert home.get_attribute("href") == "/whoami/", path
    with page.expect_navigation():
        home.click()
    assert path_of(page.url) == "/whoami/"


def test_the_header_links_to_the_configured_home_and_name(site, page, live_server):
    site.WEBAUTH = {**site.WEBAUTH, "account": {"home_url": "home", "site_name": "Example shop"}}
    page.goto("/account/connections/")
    home = page.get_by_role("banner").get_by_role("link", name="Example shop")
    assert home.get_attribute("href") == "/"  # the URL name "home", reversed
    site.WEBAUTH = {
        **site.WEBAUTH,
        "theme": {"logo": "/static/logo.svg"},
        "account": {"home_url": "/private/"},
    }
    page.goto("/account/")
    logo = page.get_by_role("banner").get_by_role("link", name="localhost")
    assert logo.get_attribute("href") == "/private/"
    assert logo.locator("img").get_attribute("alt") == urlsplit(live_server.url).netloc
    # Not twice: the logo above the card is hidden on account pages.
    assert not page.locator("main > img.webauth-logo").is_visible()


@pytest.mark.parametrize("path", ["/account/passkeys/", "/account/reauthenticate/"])
def test_signing_out_from_the_header(site, page, path):
    if "reauthenticate" in path:
        make_stale()
    page.goto(path)
    assert path_of(page.url) == path
    assert session_of(page)["user"]["email"] == "alice@example.com"
    with page.expect_navigation(url="**/whoami/"):
        page.get_by_role("banner").get_by_role("button", name="Sign out").click()
    assert session_of(page) is None
    page.goto("/account/")
    assert path_of(page.url).startswith("/auth/signin?")
