"""The second factor in a real browser (Chromium): add an app, sign in with a code, step up.

A person adds an authenticator app in the account center (the key read off the
page, as they type it into an app), signs out, signs in with the password and
then a code, typed and sent with the keyboard; next time with a recovery code;
and a page under ``@mfa_required(max_age=...)`` asks them to prove it again.
A security key (Chromium's virtual authenticator over CDP: a USB key that
stores no credential, without user verification) is added and then used.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pyotp
import pytest

from webauth.mfa import factors
from webauth.models import TrustedBrowser

from .support.browser import VirtualAuthenticators, focus_lands_on

PASSWORD = "correct horse battery staple"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def site(settings):
    settings.WEBAUTH = {
        "secret": "test-secret-0123456789abcdef0123456789abcdef",
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database"},
        "providers": ["webauth.providers.DjangoCredentials"],
        "mfa": {"enabled": True},
    }


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def path_of(url: str) -> str:
    return urlsplit(url).path


def session_of(page):
    return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")


def password_first(page, callback="/account/security/"):
    page.goto(f"/auth/signin?callbackUrl={callback}")
    page.fill("#input-username-for-credentials", "alice")
    page.fill("#input-password-for-credentials", PASSWORD)
    with page.expect_navigation():
        page.press("#input-password-for-credentials", "Enter")


def type_code(page, code: str):
    """At the code page: the field has the focus; type and press Enter."""
    assert focus_lands_on(page, "webauth-mfa-code") == "webauth-mfa-code"
    page.keyboard.type(code)
    with page.expect_navigation():
        page.keyboard.press("Enter")


def test_add_an_app_then_sign_in_with_a_code_and_a_recovery_code(site, alice, page):
    password_first(page)
    assert path_of(page.url) == "/account/security/"
    with page.expect_navigation():
        page.get_by_role("button", name="Add an authenticator app").click()
    assert page.locator(".webauth-qr-code svg title").text_content() == (
        "QR code for your authenticator app"
    )
    key = page.locator("[data-key]").inner_text().replace(" ", "")
    page.get_by_label("Code").fill(pyotp.TOTP(key).now())
    with page.expect_navigation():
        page.get_by_role("button", name="Verify").click()
    assert page.get_by_role("status").inner_text() == "The authenticator app was added."
    codes = [c.inner_text() for c in page.locator(".webauth-code-list code").all()]
    assert len(codes) == 10

    # Signed out, then in: the password, then a code from the app.
    page.goto("/auth/signout")
    with page.expect_navigation():
        page.click("#submitButton")
    password_first(page, "/account/")
    assert path_of(page.url) == "/auth/mfa" and session_of(page) is None
    # The app's next code (the one shown at enrolment was used up there; one
    # step of clock drift either way is allowed).
    type_code(page, pyotp.TOTP(key).at(time.time() + 30))
    assert path_of(page.url) == "/account/"
    assert session_of(page)["user"]["email"] == "alice@example.com"

    # A wrong code first, then a recovery code (the app is lost).
    page.context.clear_cookies()
    password_first(page, "/account/")
    type_code(page, "000000" if pyotp.TOTP(key).now() != "000000" else "111111")
    assert page.get_by_role("alert").inner_text() == "That code is not right. Try again."
    field = page.locator("#webauth-mfa-code")
    assert field.get_attribute("aria-invalid") == "true"
    field.fill(codes[0])
    with page.expect_navigation():
        field.press("Enter")
    assert session_of(page)["user"]["email"] == "alice@example.com"
    assert factors.recovery_codes_left(_config(), alice.pk) == 9


def _config():
    from webauth.conf import get_config

    return get_config()


def test_a_protected_page_asks_for_the_second_factor_again(site, alice, page, settings):
    enrolment = factors.begin_totp(_config(), alice.pk, account=alice.email, issuer="x")
    assert factors.confirm_totp(
        _config(), alice.pk, enrolment.factor.id, pyotp.TOTP(enrolment.key).now()
    )
    codes = factors.new_recovery_codes(_config(), alice.pk)
    password_first(page, "/")
    type_code(page, codes[0])
    assert page.goto("/mfa-protected/").status == 200  # two factors, just now

    # The same page under a stricter step-up (proven in the last second) asks again.
    settings.WEBAUTH = {**settings.WEBAUTH, "reauth_max_age": 300}
    page.wait_for_timeout(1100)
    page.goto("/mfa-protected/strict/")
    assert path_of(page.url) == "/account/reauthenticate/"
    page.fill("#input-password-for-credentials", PASSWORD)
    with page.expect_navigation():
        page.press("#input-password-for-credentials", "Enter")
    type_code(page, codes[1])
    assert path_of(page.url) == "/mfa-protected/strict/"
    assert "two factors" in page.inner_text("body")


def test_add_a_security_key_then_sign_in_with_it(site, alice, page, settings):
    keys = VirtualAuthenticators(page)
    usb = keys.add(
        protocol="ctap2",
        transport="usb",
        hasResidentKey=False,
        hasUserVerification=False,
        isUserVerified=False,
    )
    password_first(page)
    assert path_of(page.url) == "/account/security/"
    with page.expect_navigation():
        page.get_by_role("button", name="Add a security key").click()
    # By keyboard: the name, Tab to the button, Enter.
    page.get_by_label("Name (optional)").fill("Yellow key")
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Add this security key"
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.get_by_role("status").inner_text() == "The security key was added."
    assert len(page.locator(".webauth-code-list code").all()) == 10
    [credential] = keys.credentials(usb)
    assert credential["isResidentCredential"] is False  # a plain security key's
    page.goto("/account/security/")
    assert "Yellow key" in page.inner_text(".webauth-account-security")

    page.context.clear_cookies()
    settings.WEBAUTH = {**settings.WEBAUTH, "mfa": {"enabled": True, "trust_days": 30}}
    password_first(page, "/account/")
    assert path_of(page.url) == "/auth/mfa" and session_of(page) is None
    page.get_by_label("Don't ask again on this browser for 30 days").check()
    page.get_by_role("button", name="Use your security key").focus()
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert path_of(page.url) == "/account/"
    assert session_of(page)["user"]["email"] == "alice@example.com"
    # The choice of the code form went with the key's answer.
    assert TrustedBrowser.objects.filter(user=alice).count() == 1
    settings.WEBAUTH = {**settings.WEBAUTH, "mfa": {"enabled": True}}
    [used] = keys.credentials(usb)
    assert used["signCount"] > credential["signCount"]

    # Another key than the one added: the page says so and the code field stays.
    keys.remove(usb)
    keys.add(
        protocol="ctap2",
        transport="usb",
        hasResidentKey=False,
        hasUserVerification=False,
        isUserVerified=False,
    )
    page.context.clear_cookies()
    password_first(page, "/account/")
    page.get_by_role("button", name="Use your security key").click()
    alert = page.locator(".webauth-security-key [role=alert]")
    alert.wait_for(state="visible")
    assert alert.inner_text() == "The security key request was cancelled or timed out."
    assert path_of(page.url) == "/auth/mfa"


def test_the_security_pages_work_from_the_keyboard_alone(site, alice, page):
    """Tab to each action of the Security section and press Enter: nothing needs a pointer."""
    password_first(page)

    def tab_to(name: str, most: int = 40) -> None:
        for _ in range(most):
            page.keyboard.press("Tab")
            focused = page.evaluate(
                "() => (document.activeElement.getAttribute('aria-label')"
                " || document.activeElement.textContent || '').trim()"
            )
            if focused == name:
                return
        raise AssertionError(f"{name!r} is not reachable with Tab")

    tab_to("Add a security key")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    tab_to("Add this security key")  # past the name field, in order
    page.goto("/account/security/")
    tab_to("Add an authenticator app")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    key = page.locator("[data-key]").inner_text().replace(" ", "")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement.id") == "webauth-add-key-code":
            break
    else:
        raise AssertionError("the code field is not reachable with Tab")
    page.keyboard.type(pyotp.TOTP(key).now())
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.get_by_role("status").inner_text() == "The authenticator app was added."


def test_the_policy_makes_a_staff_member_add_an_app_before_the_session(site, alice, page, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "mfa": {"enabled": True, "required": "staff"}}
    alice.is_staff = True
    alice.save()
    password_first(page, "/account/")
    assert path_of(page.url) == "/auth/mfa" and session_of(page) is None
    assert page.get_by_role("heading", level=1).inner_text() == "Two-step verification"
    key = page.locator("[data-key]").inner_text().replace(" ", "")
    # Nothing else is reachable until it is done.
    page.goto("/account/")
    assert path_of(page.url) == "/auth/signin" and session_of(page) is None
    page.goto("/auth/mfa")
    page.locator("#webauth-mfa-code").fill(pyotp.TOTP(key).now())
    with page.expect_navigation():
        page.locator("#webauth-mfa-code").press("Enter")
    codes = page.locator(".webauth-code-list code").all()
    assert len(codes) == 10  # shown once, with the new session
    assert session_of(page)["user"]["email"] == "alice@example.com"
    with page.expect_navigation():
        page.get_by_role("link", name="Continue").click()
    assert path_of(page.url) == "/account/"
