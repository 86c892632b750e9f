"""The account center in a real browser: Debian's Chromium, driven by Playwright.

The main path a person takes: sign in, open the account center, sign another
device out, then disconnect a provider, which asks them to confirm it is them
(the re-authentication page) and brings them back to finish. Skips without
``/usr/bin/chromium`` unless ``WEBAUTH_REQUIRE_BROWSER`` is set
(tests/support/browser.py).
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from webauth.models import Account, Session
from webauth.providers import DjangoCredentials
from webauth.providers.catalog.github import GitHub

PASSWORD = "correct horse battery staple"
SAFARI_IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
)

pytestmark = pytest.mark.browser


@pytest.fixture
def site(settings):
    settings.WEBAUTH = {
        "secret": "test-secret-0123456789abcdef0123456789abcdef",
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database"},
        "providers": [DjangoCredentials(), GitHub(client_id="gh-id", client_secret="gh-secret")],
    }


@pytest.fixture
def alice(django_user_model):
    user = django_user_model.objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )
    Account.objects.create(user=user, type="oauth", provider="github", provider_account_id="a1")
    return user


@pytest.fixture
def open_context(browser, live_server):
    contexts = []

    def open_context(**options):
        context = browser.new_context(base_url=live_server.url, **options)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield open_context
    for context in contexts:
        context.close()


def path_of(url):
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def sign_in_through_the_page(page, callback="/account/"):
    page.goto(f"/auth/signin?callbackUrl={callback}")
    page.fill("#input-username-for-credentials", "alice")
    page.fill("#input-password-for-credentials", PASSWORD)
    with page.expect_navigation():
        page.click("form[data-provider=credentials] button[type=submit]")


def session_of(page):
    return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")


def test_sign_in_revoke_a_device_and_disconnect_after_confirming(site, alice, open_context):
    phone = open_context(user_agent=SAFARI_IPHONE)
    sign_in_through_the_page(phone, "/")
    assert session_of(phone)["user"]["email"] == "alice@example.com"

    laptop = open_context()
    sign_in_through_the_page(laptop)
    assert path_of(laptop.url) == "/account/"
    assert laptop.get_by_role("heading", level=1).inner_text() == "Your account"
    assert "You are signed in on 2 devices." in laptop.inner_text("main")

    # Sessions: sign the phone out from the laptop.
    with laptop.expect_navigation():
        laptop.get_by_role("navigation", name="Your account").get_by_role(
            "link", name="Sessions"
        ).click()
    assert path_of(laptop.url) == "/account/sessions/"
    assert laptop.get_by_role("link", name="Sessions").get_attribute("aria-current") == "page"
    items = laptop.locator(".webauth-account-item")
    assert items.count() == 2
    assert "This device" in items.nth(0).inner_text()
    with laptop.expect_navigation():
        laptop.get_by_role("button", name="Sign out Safari on iPhone").click()
    assert laptop.get_by_role("status").inner_text() == "That device was signed out."
    assert laptop.locator(".webauth-account-item").count() == 1
    assert session_of(phone) is None
    assert session_of(laptop) is not None

    # An hour later (the laptop's sign-in is no longer fresh): disconnect GitHub.
    Session.objects.update(created_at=timezone.now() - timedelta(hours=1))
    with laptop.expect_navigation():
        laptop.get_by_role("link", name="Connections").click()
    disconnect = laptop.get_by_role("button", name="Disconnect GitHub")
    assert disconnect.is_enabled()  # a password is another way in
    with laptop.expect_navigation():
        disconnect.click()
    assert path_of(laptop.url) == "/account/reauthenticate/?next=%2Faccount%2Fconnections%2F"
    assert laptop.get_by_role("heading", level=1).inner_text() == "Confirm it is you"
    assert laptop.input_value("#input-username-for-credentials") == "alice"
    # Only the ways in alice has: her password, and GitHub (which she has connected).
    assert laptop.locator("form[data-provider]").count() == 2
    laptop.fill("#input-password-for-credentials", PASSWORD)
    with laptop.expect_navigation():
        laptop.press("#input-password-for-credentials", "Enter")
    assert path_of(laptop.url) == "/account/connections/"
    assert Account.objects.filter(provider="github").exists()  # nothing done unasked

    with laptop.expect_navigation():
        laptop.get_by_role("button", name="Disconnect GitHub").click()
    assert laptop.get_by_role("status").inner_text() == "GitHub was disconnected."
    assert laptop.get_by_role("button", name="Connect GitHub").is_visible()
    assert not Account.objects.filter(provider="github").exists()
    assert session_of(laptop)["user"]["email"] == "alice@example.com"


def test_a_passkey_proves_it_is_them_before_a_passkey_is_removed(settings, browser, live_server):
    """Re-authentication with a passkey (Chromium's virtual authenticator), then the removal."""
    from django.contrib.auth import get_user_model

    from webauth.models import Authenticator
    from webauth.providers import Passkey

    from .test_passkeys_browser import SIGNIN_BUTTON, Person, register

    assert live_server.url.startswith("http://localhost:"), live_server.url
    settings.WEBAUTH = {
        "secret": "test-secret-0123456789abcdef0123456789abcdef",
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database"},
        "experimental": {"enable_webauthn": True},
        "providers": [
            Passkey(
                relying_party={"id": "localhost", "name": "tests", "origins": [live_server.url]}
            ),
            DjangoCredentials(),
        ],
    }
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(30_000)
    try:
        person = Person(context, "hold")
        register(person, "pat@example.com", callback="/account/passkeys/")
        page = person.page
        pat = get_user_model().objects.get(email="pat@example.com")
        # A second way in, so that the passkey may go (a new password would end the session).
        Account.objects.create(user=pat, type="oauth", provider="github", provider_account_id="p")
        Session.objects.update(created_at=timezone.now() - timedelta(hours=1))
        [passkey] = Authenticator.objects.filter(user=pat)

        page.goto("/account/passkeys/")
        with page.expect_navigation():
            page.get_by_role("button", name="Remove").click()
        assert path_of(page.url) == "/account/reauthenticate/?next=%2Faccount%2Fpasskeys%2F"
        with page.expect_navigation(url="**/account/passkeys/"):
            page.click(SIGNIN_BUTTON)  # the device answers: it is Pat
        assert Authenticator.objects.filter(pk=passkey.pk).exists()

        with page.expect_navigation():
            page.get_by_role("button", name="Remove").click()
        assert page.get_by_role("status").inner_text() == "The passkey was removed."
        assert not Authenticator.objects.filter(user=pat).exists()
    finally:
        context.close()
