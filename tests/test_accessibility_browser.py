"""Accessibility of every built-in page, checked in a real browser.

axe-core (the npm package: ``package.json`` at the repository root, installed by
``npm ci``, which ./scripts/test and .ci/run do) is injected into each page of
tests/support/tour.py and run with the WCAG 2.1 A and AA rules, in the light and
the dark colour scheme, at 1280x800 and at 390x844. Each page must have no
violation; its buttons and fields must be at least 44 px tall and wide; it must
fit the window's width and follow the colour scheme; its title must be its
heading, in sentence case.

Then a person who uses only the keyboard signs in with each method: a password,
an email code, the OpenID provider, a passkey (Chromium's virtual authenticator),
and sees where the focus is at every step.

Without ``node_modules/axe-core`` the axe tests skip, saying what to install (they
fail when ``WEBAUTH_REQUIRE_AXE`` is set, as in CI).
"""

import os
import re
import socket
import subprocess
import sys
from contextlib import contextmanager

import pytest

from .support import a11y, tour
from .support.a11y import BACKGROUND_LUMINANCE, OVERFLOW, RUN_AXE, SMALL_TARGETS, WCAG_21_AA
from .support.browser import CHROMIUM, unavailable
from .support.helpers import wait_until_serving

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def context(browser, live_server):
    """A fresh browser profile on the live server (http://localhost:<port>)."""
    assert live_server.url.startswith("http://localhost:"), live_server.url
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(30_000)
    yield context
    context.close()


@pytest.fixture
def site(context, live_server, settings):
    """The tour of tests/support/tour.py on the live server, its people created."""

    def configure(webauth):
        settings.WEBAUTH = webauth

    tour.create_people()
    return tour.Tour(browser_page=context.new_page(), base_url=live_server.url, configure=configure)


def sentence_case(text):
    """Only the first word capitalised (an acronym such as "API" aside; a proper noun
    aside: none so far)."""
    words = text.split()
    return (
        bool(words)
        and words[0][0].isupper()
        and all(w == w.lower() or (len(w) > 1 and w.isupper()) for w in words[1:])
    )


def test_every_built_in_page_passes_axe_in_both_schemes_and_sizes(site):
    script = a11y.axe_script()
    problems = []
    for stop in tour.stops():
        page = tour.visit(site, stop)
        page.add_script_tag(path=script)
        title, heading = page.title(), page.locator("h1").inner_text()
        if title != heading or not sentence_case(heading):
            problems.append(f"{stop.name}: title {title!r}, heading {heading!r}")
        problems += a11y.problems_of(page, stop.name)
        problems += a11y.unseen_focus(page, stop.name)
    assert not problems, "\n".join(problems)


def test_the_checks_catch_what_they_look_for(site):
    """axe, the size check and the scheme check each report a page that breaks them."""
    site.configure(tour.site_settings(site.base_url))
    page = site.page()
    page.goto("/auth/signin")
    page.add_script_tag(path=a11y.axe_script())
    page.emulate_media(color_scheme="dark")
    page.set_viewport_size(tour.SIZES["mobile"])
    page.add_style_tag(
        content=".webauth-link, .webauth-label { color: #346df1 !important; }"
        " .webauth-button { min-height: 0 !important; padding: 2px !important; }"
        " body.webauth { background: #fff !important; }"
    )
    ids = {v["id"] for v in page.evaluate(RUN_AXE, WCAG_21_AA)}
    assert "color-contrast" in ids
    assert any("#webauth-passkey-signin" in s for s in page.evaluate(SMALL_TARGETS, 44))
    assert page.evaluate(BACKGROUND_LUMINANCE) == pytest.approx(1)
    page.add_style_tag(content=".webauth-card { min-width: 500px; }")
    assert page.evaluate(OVERFLOW) > 0
    assert not sentence_case("Access Denied") and sentence_case("Access denied")
    assert sentence_case("Your API keys") and not sentence_case("Your Api keys")


def png_size(path):
    """(width, height) of a PNG, from its header."""
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def test_the_screenshot_script_shows_the_pages_axe_checks(tmp_path):
    """scripts/screenshots walks the same pages; on two of them it makes 8 PNGs and an index."""
    if not os.path.exists(CHROMIUM):  # the script drives it: skip (or fail in CI) as the rest
        unavailable(f"{CHROMIUM} is absent (apt-get install chromium)")
    script = a11y.ROOT / "scripts" / "screenshots.py"

    def run(*args):
        return subprocess.run(
            [sys.executable, str(script), *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )

    listed = run("--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == [stop.name for stop in tour.stops()]

    out = tmp_path / "shots"
    made = run("--out", str(out), "signout", "error-AccessDenied")
    assert made.returncode == 0, made.stdout + made.stderr
    assert f"Saved 8 screenshots of 2 pages in {out}/" in made.stdout
    pngs = sorted(out.glob("*.png"))
    assert [p.name for p in pngs] == sorted(
        f"{page}-{scheme}-{size}.png"
        for page in ("signout", "error-AccessDenied")
        for scheme in tour.SCHEMES
        for size in tour.SIZES
    )
    for png in pngs:
        width, height = png_size(png)
        viewport = tour.SIZES[png.stem.rsplit("-", 1)[1]]
        assert width == viewport["width"] and height >= viewport["height"], png.name
    index = (out / "index.html").read_text()
    assert all(f'src="{png.name}"' in index for png in pngs)


# -- the keyboard alone ------------------------------------------------------------------------


class Keyboard:
    """A person who uses only the keyboard: Tab, Shift+Tab, Enter, Space and typing."""

    def __init__(self, page):
        self.page = page

    def tab_to(self, selector, *, back=False, limit=60):
        """Press Tab (Shift+Tab if *back*) until *selector* has the focus.

        Every element the focus passes on webauth's pages must show it (an outline).
        """
        for _ in range(limit):
            self.page.keyboard.press("Shift+Tab" if back else "Tab")
            focused = self.page.evaluate(a11y.FOCUSED, selector)
            if focused is None:
                continue
            if self.page.locator("body.webauth").count():
                assert focused["visible"], f"{focused['label']} has the focus, but no outline"
            if focused["matches"]:
                return
        raise AssertionError(f"{selector} never got the focus in {limit} presses")

    def type(self, text):
        self.page.keyboard.type(text)

    def press(self, key, *, navigates=True):
        if navigates:
            with self.page.expect_navigation():
                self.page.keyboard.press(key)
        else:
            self.page.keyboard.press(key)


def session_of(page):
    """``GET /auth/session`` as this browser (an assertion, not something the person does)."""
    return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")


@pytest.fixture
def signin_site(settings, live_server):
    """Every provider kind on the sign-in page (tests/support/tour.py's site)."""
    settings.WEBAUTH = tour.site_settings(live_server.url)
    tour.create_people()
    return live_server


def test_keyboard_sign_in_with_a_password(context, signin_site):
    page = context.new_page()
    page.goto("/auth/signin?callbackUrl=/whoami/")
    keys = Keyboard(page)
    keys.tab_to("#input-username-for-credentials")
    keys.type("alice")
    keys.tab_to("#input-password-for-credentials")
    keys.type(tour.PASSWORD)
    keys.tab_to("form[data-provider=credentials] button[type=submit]")
    keys.tab_to("#input-password-for-credentials", back=True)
    keys.press("Enter")  # Enter in a field submits its form

    assert page.url == f"{signin_site.url}/whoami/"
    assert session_of(page)["user"]["email"] == "alice@example.com"

    # And out again: the sign-out page's button, with Space.
    page.goto("/auth/signout")
    keys.tab_to("#submitButton")
    keys.press("Space")
    assert session_of(page) is None


def read_the_email(base_url, address):
    """The link and the code of the one message to *address* (Django's locmem outbox)."""
    from django.core import mail

    [message] = [m for m in mail.outbox if address in m.to]
    [link] = re.findall(re.escape(base_url) + r"/auth/callback/email\?\S+", message.body)
    [code] = re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body)
    return link, code


def test_keyboard_sign_in_with_an_email_code_and_link(context, signin_site, browser):
    page = context.new_page()
    keys = Keyboard(page)
    page.goto("/auth/signin?callbackUrl=/whoami/")
    # With a password form on the page, the email link is behind its disclosure.
    keys.tab_to("details[data-provider=email] > summary")
    keys.press("Enter", navigates=False)
    keys.tab_to("#input-email-for-email")
    keys.type("reader@example.com")
    keys.press("Enter")
    assert page.locator("h1").inner_text() == "Check your email"
    _, code = read_the_email(signin_site.url, "reader@example.com")
    keys.tab_to("#webauth-email-code-input")
    keys.type(code)
    keys.press("Enter")
    assert page.url == f"{signin_site.url}/whoami/"
    assert session_of(page)["user"]["email"] == "reader@example.com"

    # The link, in another browser of the same person: the confirmation page's button.
    other = browser.new_context(base_url=signin_site.url)
    try:
        page = other.new_page()
        keys = Keyboard(page)
        page.goto("/auth/signin?callbackUrl=/whoami/")
        keys.tab_to("details[data-provider=email] > summary")
        keys.press("Space", navigates=False)
        keys.tab_to("#input-email-for-email")
        keys.type("writer@example.com")
        keys.press("Enter")
        link, _ = read_the_email(signin_site.url, "writer@example.com")
        page.goto(link)  # opened from the mail program
        keys.tab_to("#webauth-email-confirm")
        keys.press("Space")
        assert session_of(page)["user"]["email"] == "writer@example.com"
    finally:
        other.close()


def test_keyboard_sign_in_through_the_openid_provider(context, signin_site):
    """The provider's pages too: its login form (Django's admin login) by keyboard."""
    from .support.oidc_helpers import start_idp

    idp = start_idp(signin_site, redirect_uri=f"{signin_site.url}/auth/callback/example")
    idp.user.is_staff = True  # the provider's login page is the admin's
    idp.user.save()
    page = context.new_page()
    keys = Keyboard(page)
    page.goto("/auth/signin?callbackUrl=/whoami/")
    keys.tab_to("form[data-provider=example] button[type=submit]")
    keys.press("Enter")

    assert page.url.startswith(f"{tour.idp_origin(signin_site.url)}/admin/login/?next=/idp/")
    keys.tab_to("#id_username")
    keys.type("ida")
    keys.tab_to("#id_password")
    keys.type("ida-password-123")
    with page.expect_navigation(url=f"{signin_site.url}/whoami/"):
        page.keyboard.press("Enter")
    assert session_of(page)["user"]["email"] == "ida@idp.example"


def test_keyboard_sign_up_and_in_with_a_passkey(context, signin_site):
    from .support.browser import (
        AUTOFILL_FIELD,
        NEW_ACCOUNT_MORE,
        VirtualAuthenticators,
        watch_credentials,
    )

    watch_credentials(context, autofill="hold")  # a person who ignores the suggestions
    page = context.new_page()
    VirtualAuthenticators(page).add()
    keys = Keyboard(page)

    # A new account: "Create an account with a passkey" (a disclosure, since the
    # page's identifier field is a username here), the address, then the button.
    page.goto("/auth/signin?callbackUrl=/whoami/")
    keys.tab_to(AUTOFILL_FIELD)  # the one identifier field comes first
    keys.tab_to(f"{NEW_ACCOUNT_MORE} > summary")
    keys.press("Enter", navigates=False)
    keys.tab_to("#input-email-for-passkey")
    keys.type("keys@example.com")
    keys.tab_to("#webauth-passkey-register")
    keys.press("Enter")
    assert session_of(page)["user"]["email"] == "keys@example.com"

    page.context.clear_cookies()  # signed out
    page.goto("/auth/signin?callbackUrl=/whoami/")
    keys.tab_to("#webauth-passkey-signin")
    keys.press("Space")
    assert page.url == f"{signin_site.url}/whoami/"
    assert session_of(page)["user"]["email"] == "keys@example.com"


# -- the example project's own pages -----------------------------------------------------------


@contextmanager
def example_site(tmp_path):
    """The example project on http://localhost:<free port> (runserver, no reloader).

    Its own settings with its tables made straight from the models
    (tests/support/example_settings.py), on a new database: seconds, not tens.
    """
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AUTH_", "DJANGO_"))}
    port = free_port()
    env = {
        **clean,
        "DJANGO_SETTINGS_MODULE": "tests.support.example_settings",
        "PYTHONPATH": os.pathsep.join([str(a11y.ROOT), clean.get("PYTHONPATH", "")]),
        "EXAMPLE_DB": str(tmp_path / "example.sqlite3"),
        "EXAMPLE_OUTBOX": str(tmp_path / "outbox.json"),
        "PORT": str(port),
    }
    manage = [sys.executable, "manage.py"]
    cwd = a11y.ROOT / "example_project"
    migrated = subprocess.run(
        [*manage, "migrate", "--run-syncdb", "-v", "0"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    log = tmp_path / "runserver.log"
    with open(log, "w") as output:
        server = subprocess.Popen(
            [*manage, "runserver", "--noreload", f"localhost:{port}"],
            cwd=cwd,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://localhost:{port}"
    try:
        wait_until_serving(base, server, log)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_example_project_pages_pass_axe_in_both_schemes_and_sizes(browser, tmp_path):
    """The example's pages follow the colour scheme too, at AA contrast, with 44px targets:
    its language switcher and the Example IdP's page (a site of its own) included.

    Signed in by email (its code read on the outbox page): no demo user to set up.
    """
    script = a11y.axe_script()
    problems = []
    with example_site(tmp_path) as base:
        context = browser.new_context(base_url=base)
        context.set_default_timeout(15_000)
        page = context.new_page()

        def look_at(path, name):
            page.goto(path)
            page.add_script_tag(path=script)
            problems.extend(a11y.problems_of(page, name))

        look_at("/", "home")
        look_at("/idp/login/?next=/", "idp-login")
        api = context.request
        csrf = api.get("/auth/csrf").json()["csrfToken"]
        asked = api.post(
            "/auth/signin/email",
            form={"csrfToken": csrf, "email": "reader@example.com", "callbackUrl": "/"},
            max_redirects=0,
        )
        assert asked.status == 302, asked.text()[:500]
        look_at("/dev/outbox/", "outbox")
        [code] = set(re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", page.content()))
        signed_in = api.post(
            "/auth/callback/email", form={"csrfToken": csrf, "code": code}, max_redirects=0
        )
        assert signed_in.status == 302, signed_in.text()[:500]
        look_at("/", "home-signed-in")
        look_at("/private/", "private")
        look_at("/account/passkeys/", "account-passkeys")  # the example's passkeys page
        context.close()
    assert not problems, "\n".join(problems)
