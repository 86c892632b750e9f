"""Changing and setting a password in a real browser: Debian's Chromium, driven by Playwright.

A person with a password changes it from the account center's Password tab,
by keyboard alone, while signed in on a second browser: this browser stays
signed in, the other is signed out, the old password no longer signs in and
the new one does. A person who signed up by email (no password) sets one, and
then signs in with their username and it. Skips without ``/usr/bin/chromium``
unless ``WEBAUTH_REQUIRE_BROWSER`` is set (tests/support/browser.py).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core import mail

from webauth.providers import DjangoCredentials, Email

from .support.browser import focus_lands_on

PASSWORD = "correct horse battery staple"
NEW = "a brand new passphrase 7"
CHANGED = "Your password was changed. Every other device was signed out."
SET = "Your password was set. Every other device was signed out."

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def site(settings, live_server):
    def configure(strategy):
        settings.AUTH_PASSWORD_VALIDATORS = [
            {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
            {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
        ]
        settings.WEBAUTH = {
            "secret": "test-secret-0123456789abcdef0123456789abcdef",
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "providers": [DjangoCredentials(), Email(from_email="Example <no-reply@example.com>")],
            "passwords": {"change": True},
        }

    return configure


@pytest.fixture
def open_page(browser, live_server):
    contexts = []

    def open_page():
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


def path_of(url):
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def session_of(page):
    return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")


def sign_in(page, username, password, callback="/account/"):
    page.goto(f"/auth/signin?callbackUrl={callback}")
    page.fill("#input-username-for-credentials", username)
    page.fill("#input-password-for-credentials", password)
    with page.expect_navigation():
        page.click("form[data-provider=credentials] button[type=submit]")


def tab_to(page, element_id, limit=40):
    """Press Tab until *element_id* has the focus (as a keyboard user gets there)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement && document.activeElement.id") == element_id:
            return
    raise AssertionError(f"#{element_id} never got the focus by Tab")


def focused_id(page):
    return page.evaluate("() => document.activeElement.id")


def sign_out(page):
    with page.expect_navigation():
        page.get_by_role("button", name="Sign out").click()
    assert session_of(page) is None


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_change_by_keyboard_signs_the_other_browser_out(site, open_page, strategy):
    site(strategy)
    get_user_model().objects.create_user("alice", email="alice@example.com", password=PASSWORD)
    phone = open_page()
    sign_in(phone, "alice", PASSWORD, "/")
    laptop = open_page()
    sign_in(laptop, "alice", PASSWORD)
    assert session_of(phone) is not None

    # The Password tab, by keyboard: Tab to it, Enter.
    laptop.goto("/account/")
    tab = laptop.get_by_role("navigation", name="Your account").get_by_role("link", name="Password")
    for _ in range(30):
        laptop.keyboard.press("Tab")
        if tab.evaluate("(a) => a === document.activeElement"):
            break
    with laptop.expect_navigation():
        laptop.keyboard.press("Enter")
    assert path_of(laptop.url) == "/account/password/"
    assert laptop.get_by_role("heading", level=1).inner_text() == "Change your password"
    assert tab.get_attribute("aria-current") == "page"

    # A wrong current password first: said on its field, which has the focus again.
    tab_to(laptop, "webauth-password-current")
    laptop.keyboard.type("not my password")
    laptop.keyboard.press("Tab")
    assert focused_id(laptop) == "webauth-password-new1"
    laptop.keyboard.type(NEW)
    laptop.keyboard.press("Tab")
    assert focused_id(laptop) == "webauth-password-new2"
    laptop.keyboard.type(NEW)
    with laptop.expect_navigation():
        laptop.keyboard.press("Enter")
    assert focus_lands_on(laptop, "webauth-password-current") == "webauth-password-current"
    error = laptop.locator("#webauth-password-current-error")
    assert error.get_attribute("role") == "alert"
    assert error.inner_text() == "That is not your current password. Enter it again."
    assert laptop.get_attribute("#webauth-password-current", "aria-invalid") == "true"
    assert laptop.input_value("#webauth-password-new1") == ""  # nothing typed comes back

    # Then the right one, still by keyboard alone.
    laptop.keyboard.type(PASSWORD)
    for value in (NEW, NEW):
        laptop.keyboard.press("Tab")
        laptop.keyboard.type(value)
    with laptop.expect_navigation():
        laptop.keyboard.press("Enter")
    assert path_of(laptop.url) == "/account/password/"
    assert laptop.get_by_role("status").inner_text() == CHANGED
    assert session_of(laptop)["user"]["email"] == "alice@example.com"
    assert session_of(phone) is None
    laptop.goto("/account/sessions/")  # still in
    assert path_of(laptop.url) == "/account/sessions/"

    # The old password no longer signs in; the new one does.
    sign_out(laptop)
    sign_in(laptop, "alice", PASSWORD)
    assert "error=CredentialsSignin" in laptop.url
    assert session_of(laptop) is None
    sign_in(laptop, "alice", NEW)
    assert path_of(laptop.url) == "/account/"
    assert session_of(laptop)["user"]["email"] == "alice@example.com"
    assert [m.to for m in mail.outbox] == [["alice@example.com"]]  # the owner is told


def sign_up_by_email(page, address):
    """Sign in with an email code, as a new user: the adapter makes the user, no password."""
    api = page.context.request
    csrf = api.get("/auth/csrf").json()["csrfToken"]
    before = len(mail.outbox)
    answer = api.post(
        "/auth/signin/email",
        form={"csrfToken": csrf, "email": address, "callbackUrl": "/account/password/"},
        max_redirects=0,
    )
    assert answer.status == 302, answer.text()[:300]
    [message] = mail.outbox[before:]
    [code] = re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body)
    page.goto("/auth/verify-request?provider=email&type=email")
    page.fill("#webauth-email-code-input", code)
    with page.expect_navigation():
        page.press("#webauth-email-code-input", "Enter")


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_set_for_a_user_made_by_email_sign_in(site, open_page, strategy):
    site(strategy)
    other = open_page()
    sign_up_by_email(other, "nova@example.com")
    page = open_page()
    sign_up_by_email(page, "nova@example.com")
    nova = get_user_model().objects.get(email="nova@example.com")
    assert not nova.has_usable_password()
    assert path_of(page.url) == "/account/password/"
    assert page.get_by_role("heading", level=1).inner_text() == "Set a password"
    assert page.locator("#webauth-password-current").count() == 0
    username = page.inner_text("[data-username]")
    assert username == nova.get_username()

    # A validator's refusal first, then a password it takes; by keyboard.
    tab_to(page, "webauth-password-new1")
    page.keyboard.type("short")
    page.keyboard.press("Tab")
    page.keyboard.type("short")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert focus_lands_on(page, "webauth-password-new1") == "webauth-password-new1"
    assert "too short" in page.inner_text("#webauth-password-new1-error")
    assert page.get_by_role("heading", level=1).inner_text() == "Set a password"
    page.keyboard.type(NEW)
    page.keyboard.press("Tab")
    page.keyboard.type(NEW)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.get_by_role("status").inner_text() == SET
    assert page.get_by_role("heading", level=1).inner_text() == "Change your password"
    assert session_of(page)["user"]["email"] == "nova@example.com"
    assert session_of(other) is None

    sign_out(page)
    sign_in(page, username, NEW)
    assert path_of(page.url) == "/account/"
    assert session_of(page)["user"]["email"] == "nova@example.com"
