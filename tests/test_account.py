"""The account center (webauth.account): its pages, each action, and the same as template tags.

Every change is a POST with Django's CSRF token; disconnecting, connecting,
removing a passkey, signing out everywhere and changing the address need a
fresh sign-in (tests/test_reauth.py covers the window itself); the last way in
is never removed, and its button says why.
"""

from __future__ import annotations

import re
import sys
import types
from datetime import UTC, datetime, timedelta
from html import unescape
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.http import HttpResponse
from django.template import TemplateSyntaxError, engines
from django.test import Client
from django.urls import path
from django.utils import timezone
from django.views.decorators.csrf import ensure_csrf_cookie
from freezegun import freeze_time

from webauth.models import Account, Authenticator, Session, UnprovenEmail, VerificationToken
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.catalog.github import GitHub
from webauth.test import force_sign_in

from .support.urls import urlpatterns as base_patterns

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
ADAPTER = "webauth.adapters.django.DjangoAdapter"
FIREFOX_WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"
CHROME_LINUX = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36"
)
SAFARI_IPHONE = (
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 "
    "(KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
)
START = "2031-03-04 10:00:00"

pytestmark = pytest.mark.django_db

TAGS = (
    "{% load webauth %}<main><h1>Settings</h1>"
    "{% webauth_account_sessions %}{% webauth_account_connections %}"
    "{% webauth_account_passkeys %}{% webauth_account_email %}</main>"
)


def project_settings_page(request):
    """A project's own settings page built from the account center's tags."""
    return HttpResponse(engines["django"].from_string(TAGS).render({}, request))


urlpatterns = [
    *base_patterns,
    path("settings/", project_settings_page),
    path("csrf-cookie/", ensure_csrf_cookie(lambda request: HttpResponse())),
]


@pytest.fixture
def site(settings):
    def configure(strategy="database", providers=None, **options):
        settings.ROOT_URLCONF = __name__
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": ADAPTER,
            "session": {"strategy": strategy},
            "experimental": {"enable_webauthn": True},
            "providers": providers
            or [
                DjangoCredentials(),
                Email(from_email="Example <no-reply@example.com>"),
                Passkey(),
                GitHub(client_id="gh-id", client_secret="gh-secret"),
            ],
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


class Browser:
    """One browser: a test client that enforces Django's CSRF check, as a real one faces."""

    def __init__(self, agent=CHROME_LINUX):
        self.client = Client(enforce_csrf_checks=True, HTTP_USER_AGENT=agent)

    def sign_in(self, username="alice", password=PASSWORD):
        token = self.client.get("/auth/csrf").json()["csrfToken"]
        response = self.client.post(
            "/auth/callback/credentials",
            {"csrfToken": token, "username": username, "password": password},
        )
        assert response.status_code == 302, response.content
        return self

    def get(self, path, **kwargs):
        return self.client.get(path, **kwargs)

    def post(self, path, data, *, csrf=True, **kwargs):
        if csrf and "csrftoken" not in self.client.cookies:
            self.client.get("/csrf-cookie/")  # as a page with a form would have set it
        if csrf:
            data = {**data, "csrfmiddlewaretoken": self.client.cookies["csrftoken"].value}
        return self.client.post(path, data, **kwargs)

    def page(self, path):
        response = self.get(path)
        assert response.status_code == 200, response
        return response.content.decode()


def announced(html):
    """The outcomes on a page: [(role, text)]."""
    return [
        (role, unescape(text).strip())
        for role, text in re.findall(
            r'<div class="webauth-(?:notice|error)" role="(status|alert)">([^<]*)</div>', html
        )
    ]


def make_stale():
    """Every database session signed in an hour ago."""
    Session.objects.update(created_at=timezone.now() - timedelta(hours=1))


# -- the pages -----------------------------------------------------------------------------

PAGES = ["/account/", "/account/sessions/", "/account/connections/", "/account/passkeys/"]
PAGES += ["/account/email/"]


@pytest.mark.parametrize("page", PAGES)
def test_a_visitor_is_sent_to_sign_in(client, site, page):
    response = client.get(page)
    assert response.status_code == 302
    assert (
        response["Location"]
        == f"/auth/signin?callbackUrl={quote(page, safe='')}&error=SessionRequired"
    )
    as_json = client.get(page, headers={"Accept": "application/json"})
    assert as_json.status_code == 401


@pytest.mark.parametrize("strategy", ["database", "jwt"])
@pytest.mark.parametrize("page", PAGES)
def test_each_page_in_the_account_frame(site, alice, page, strategy):
    site(strategy)
    browser = Browser().sign_in()
    response = browser.get(page)
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    html = response.content.decode()
    assert html.count("<h1") == 1
    assert '<nav class="webauth-account-nav" aria-label="Your account">' in html
    assert html.count('aria-current="page"') == 1
    assert re.search(rf'<a href="{re.escape(page)}" aria-current="page">', html)
    assert 'class="webauth-card webauth-card-wide"' in html


def test_the_overview_sums_up_each_section(site, alice):
    Account.objects.create(user=alice, type="oauth", provider="github", provider_account_id="1")
    browser = Browser().sign_in()
    html = browser.page("/account/")
    assert "<p>alice@example.com</p>" in html  # auth.User keeps no verification date
    assert "You are signed in on 1 device." in html
    assert "1 connected account." in html
    assert "No passkeys yet." in html and "0 passkeys." not in html


# -- sessions ------------------------------------------------------------------------------


def test_sessions_lists_each_device_and_marks_this_one(site, alice):
    Browser(FIREFOX_WINDOWS).sign_in()
    Browser(SAFARI_IPHONE).sign_in()
    laptop = Browser(CHROME_LINUX).sign_in()
    html = laptop.page("/account/sessions/")
    devices = re.findall(r"<strong>([^<]+)</strong>", html)
    assert devices == ["Chrome on Linux", "Safari on iPhone", "Firefox on Windows"]
    assert html.count('<span class="webauth-badge">This device</span>') == 1
    # The others each have a form; this one links to the sign-out page.
    assert html.count('name="op" value="revoke"') == 2
    assert 'href="http://testserver/auth/signout"' in html
    assert 'aria-label="Sign out Firefox on Windows"' in html
    assert "Sign out everywhere else" in html


def test_revoking_a_session_signs_that_device_out(site, alice):
    phone = Browser(SAFARI_IPHONE).sign_in()
    laptop = Browser().sign_in()
    make_stale()  # signing one device out needs no fresh sign-in
    other = Session.objects.get(user_agent=SAFARI_IPHONE)
    response = laptop.post("/account/sessions/", {"op": "revoke", "session_id": other.pk})
    assert response.status_code == 302 and response["Location"] == "/account/sessions/"
    assert announced(laptop.page("/account/sessions/")) == [
        ("status", "That device was signed out.")
    ]
    assert phone.get("/auth/session").json() is None
    assert laptop.get("/auth/session").json() is not None


def test_a_change_without_djangos_csrf_token_is_refused(site, alice):
    phone = Browser(SAFARI_IPHONE).sign_in()
    laptop = Browser().sign_in()
    other = Session.objects.get(user_agent=SAFARI_IPHONE)
    refused = laptop.post(
        "/account/sessions/", {"op": "revoke", "session_id": other.pk}, csrf=False
    )
    assert refused.status_code == 403
    laptop.get("/csrf-cookie/")
    forged = laptop.post(
        "/account/sessions/",
        {"op": "revoke", "session_id": other.pk, "csrfmiddlewaretoken": "x" * 64},
        csrf=False,
    )
    assert forged.status_code == 403
    assert phone.get("/auth/session").json() is not None


def test_revoking_what_is_not_ones_own_session(site, alice):
    bob = get_user_model().objects.create_user("bob", password=PASSWORD)
    Browser().sign_in("bob")
    laptop = Browser().sign_in()
    bobs = Session.objects.get(user=bob)
    for session_id in (bobs.pk, "not-an-id", ""):
        laptop.post("/account/sessions/", {"op": "revoke", "session_id": session_id})
        assert announced(laptop.page("/account/sessions/")) == [
            ("alert", "No such session: it may have ended already.")
        ]
    assert Session.objects.filter(pk=bobs.pk).exists()


def test_sign_out_everywhere_needs_a_fresh_sign_in(site, alice):
    with freeze_time(START) as clock:
        others = [Browser(FIREFOX_WINDOWS).sign_in(), Browser(SAFARI_IPHONE).sign_in()]
        laptop = Browser().sign_in()
        clock.tick(600)
        refused = laptop.post("/account/sessions/", {"op": "everywhere"})
        assert refused.status_code == 302
        assert refused["Location"] == "/account/reauthenticate/?next=%2Faccount%2Fsessions%2F"
        assert Session.objects.count() == 3
        laptop.sign_in()  # the re-authentication page's password form does this
        response = laptop.post("/account/sessions/", {"op": "everywhere"})
        assert response["Location"] == "/account/sessions/"
        html = laptop.page("/account/sessions/")
        assert announced(html) == [("status", "2 other sessions were signed out.")]
        assert "Sign out everywhere else" not in html  # nothing left to sign out
        assert [b.get("/auth/session").json() for b in others] == [None, None]
        assert laptop.get("/auth/session").json() is not None


def test_under_jwt_sessions_are_explained_not_listed(site, alice):
    site("jwt")
    browser = Browser().sign_in()
    html = browser.page("/account/sessions/")
    assert "Your sessions are kept by your browsers, not by this site" in html
    assert 'name="op"' not in html
    assert 'href="http://testserver/auth/signout">Sign out of this browser</a>' in html
    browser.post("/account/sessions/", {"op": "everywhere"})
    assert announced(browser.page("/account/sessions/")) == [
        ("alert", "Sessions cannot be managed here.")
    ]


# -- connections ---------------------------------------------------------------------------


def link_github(user, ident="gh-1"):
    return Account.objects.create(
        user=user, type="oauth", provider="github", provider_account_id=ident
    )


def test_connections_list_each_provider(site, alice):
    browser = Browser().sign_in()
    html = browser.page("/account/connections/")
    assert 'data-provider="github"' in html and "Not connected" in html
    assert 'aria-label="Connect GitHub"' in html
    link_github(alice)
    Account.objects.create(user=alice, type="oidc", provider="retired", provider_account_id="r")
    html = browser.page("/account/connections/")
    assert 'aria-label="Disconnect GitHub"' in html
    assert "No longer offered by this site" in html  # still removable
    assert html.count('name="op" value="disconnect"') == 2
    assert " disabled" not in html


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_connecting_starts_the_providers_sign_in_after_a_fresh_one(site, alice, strategy):
    site(strategy)
    with freeze_time(START) as clock:
        browser = Browser().sign_in()
        response = browser.post("/account/connections/", {"op": "connect", "provider": "github"})
        assert response.status_code == 302
        assert response["Location"].startswith("https://github.com/login/oauth/authorize?")
        assert "authjs.state" in response.cookies
        clock.tick(600)
        refused = browser.post("/account/connections/", {"op": "connect", "provider": "github"})
        assert refused["Location"].startswith("/account/reauthenticate/")


def test_connecting_an_unknown_provider(site, alice):
    browser = Browser().sign_in()
    for provider in ("nope", "credentials", "email"):
        browser.post("/account/connections/", {"op": "connect", "provider": provider})
        assert announced(browser.page("/account/connections/")) == [("alert", "No such provider.")]


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_disconnecting_needs_a_fresh_sign_in(site, alice, strategy):
    site(strategy)
    account = link_github(alice)
    with freeze_time(START) as clock:
        browser = Browser().sign_in()
        clock.tick(301)
        data = {"op": "disconnect", "provider": "github", "account": "gh-1"}
        refused = browser.post("/account/connections/", data)
        assert refused["Location"] == ("/account/reauthenticate/?next=%2Faccount%2Fconnections%2F")
        assert Account.objects.filter(pk=account.pk).exists()
        browser.sign_in()
        done = browser.post("/account/connections/", data)
        assert done["Location"] == "/account/connections/"
        html = browser.page("/account/connections/")
        assert announced(html) == [("status", "GitHub was disconnected.")]
        assert not Account.objects.filter(pk=account.pk).exists()


def test_the_last_way_in_cannot_be_disconnected(site):
    # No password, no passkey: GitHub is how this user signs in.
    carol = get_user_model().objects.create_user("carol", email="carol@example.com")
    account = link_github(carol)
    browser = Browser()
    force_sign_in(browser.client, carol)
    html = browser.page("/account/connections/")
    assert re.search(
        r'aria-label="Disconnect GitHub" disabled aria-describedby="webauth-connections-last"',
        html,
    )
    assert (
        '<p class="webauth-hint" id="webauth-connections-last">This connection is your only way'
        " to sign in, so it cannot be disconnected. Create a passkey first.</p>" in html
    )
    # A form sent anyway (an old page, a hand-made request) is refused too.
    browser.post(
        "/account/connections/", {"op": "disconnect", "provider": "github", "account": "gh-1"}
    )
    assert announced(browser.page("/account/connections/")) == [
        (
            "alert",
            "This connection is your only way to sign in, so it cannot be disconnected. "
            "Create a passkey first.",
        )
    ]
    assert Account.objects.filter(pk=account.pk).exists()


def test_disconnecting_what_is_not_there(site, alice):
    browser = Browser().sign_in()
    browser.post("/account/connections/", {"op": "disconnect", "provider": "github"})
    assert announced(browser.page("/account/connections/")) == [("alert", "No such connection.")]
    browser.post("/account/connections/", {"op": "dance"})
    assert announced(browser.page("/account/connections/")) == [("alert", "Unknown action.")]


# -- passkeys ------------------------------------------------------------------------------


def add_passkey(user, n=1):
    return Authenticator.objects.create(
        user=user,
        credential_id=f"Y3JlZC{n}",
        provider_account_id=f"Y3JlZC{n}",
        credential_public_key="unused",
        credential_device_type="multiDevice",
        name=f"Key {n}",
    )


def test_passkeys_in_the_account_frame(site, alice):
    add_passkey(alice)
    browser = Browser().sign_in()
    html = browser.page("/account/passkeys/")
    assert '<h1 class="webauth-heading">Your passkeys</h1>' in html
    assert 'data-credential-id="Y3JlZC1"' in html and 'aria-label="Remove Key 1"' in html
    assert 'id="webauth-passkey-register"' in html  # add one


def test_removing_a_passkey_needs_a_fresh_sign_in_renaming_does_not(site, alice):
    passkey = add_passkey(alice)
    with freeze_time(START) as clock:
        browser = Browser().sign_in()
        clock.tick(301)
        rename = {"op": "rename", "credential_id": passkey.credential_id, "name": "Phone"}
        renamed = browser.post("/account/passkeys/", rename)
        assert renamed["Location"] == "/account/passkeys/"
        assert announced(browser.page("/account/passkeys/")) == [
            ("status", "The passkey was renamed.")
        ]
        assert Authenticator.objects.get(pk=passkey.pk).name == "Phone"
        remove = {"op": "remove", "credential_id": passkey.credential_id}
        refused = browser.post("/account/passkeys/", remove)
        assert refused["Location"] == "/account/reauthenticate/?next=%2Faccount%2Fpasskeys%2F"
        assert Authenticator.objects.filter(pk=passkey.pk).exists()
        browser.sign_in()
        browser.post("/account/passkeys/", remove)
        assert announced(browser.page("/account/passkeys/")) == [
            ("status", "The passkey was removed.")
        ]
        assert not Authenticator.objects.filter(pk=passkey.pk).exists()


def test_the_only_passkey_cannot_be_removed(site):
    dave = get_user_model().objects.create_user("dave", email="dave@example.com")
    add_passkey(dave)
    browser = Browser()
    force_sign_in(browser.client, dave)
    html = browser.page("/account/passkeys/")
    assert 'aria-label="Remove Key 1" disabled aria-describedby="webauth-passkeys-last"' in html
    assert 'id="webauth-passkeys-last"' in html


# -- email ---------------------------------------------------------------------------------


def code_in(message):
    return re.search(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body).group(0)


def test_the_email_page_shows_the_address(site, alice):
    browser = Browser().sign_in()
    html = browser.page("/account/email/")
    assert "<dd data-email>alice@example.com</dd>" in html
    assert 'name="op" value="send"' in html
    # Django's auth.User keeps no verification date: nothing is said about it.
    assert "verified" not in html.lower()


@pytest.mark.parametrize(
    "verified_at, says",
    [
        (None, "<dd>Not verified</dd>"),
        (datetime(2031, 3, 4, 12, tzinfo=UTC), "<dd>Verified on March 4, 2031</dd>"),
    ],
)
def test_the_email_section_says_whether_the_address_is_verified(rf, verified_at, says):
    template = engines["django"].get_template("webauth/account/includes/email.html")
    html = template.render(
        {"email": "a@example.com", "verified_at": verified_at, "tracks_verification": True},
        rf.get("/"),
    )
    assert says in html


def test_changing_the_address_with_a_code(site, alice):
    seen = []
    site(events={"update_user": lambda **m: seen.append(m["user"].email)})
    Account.objects.create(
        user=alice, type="email", provider="email", provider_account_id="alice@example.com"
    )
    browser = Browser().sign_in()
    sent = browser.post("/account/email/", {"op": "send", "email": " New@Example.com "})
    assert sent.status_code == 200
    html = sent.content.decode()
    assert announced(html) == [
        ("status", "We sent a code to new@example.com. Enter it here to confirm the address.")
    ]
    assert 'name="op" value="confirm"' in html and 'value="new@example.com"' in html
    assert 'autocomplete="one-time-code"' in html
    [message] = mail.outbox
    assert message.to == ["new@example.com"]
    assert message.subject == "Confirm your new email address for testserver"
    assert message.from_email == "Example <no-reply@example.com>"
    code = code_in(message)
    # The grant is this user's and this address's only: no sign-in can redeem it.
    [grant] = VerificationToken.objects.all()
    assert grant.identifier == f"email-change:{alice.pk}:new@example.com"

    wrong = browser.post(
        "/account/email/", {"op": "confirm", "email": "new@example.com", "code": "AAAA-AAAA"}
    )
    assert wrong.status_code == 400
    assert announced(wrong.content.decode()) == [
        ("alert", "That code is not right, or it has expired. Check it, or ask for a new code.")
    ]
    done = browser.post(
        "/account/email/", {"op": "confirm", "email": "new@example.com", "code": code.lower()}
    )
    assert done.status_code == 302 and done["Location"] == "/account/email/"
    html = browser.page("/account/email/")
    assert announced(html) == [("status", "Your email address is now new@example.com.")]
    assert "<dd data-email>new@example.com</dd>" in html
    alice.refresh_from_db()
    assert alice.email == "new@example.com"
    assert seen == ["new@example.com"]
    # The email account follows the address.
    accounts = Account.objects.filter(user=alice).values_list("provider_account_id", flat=True)
    assert list(accounts) == ["new@example.com"]
    # Used once.
    again = browser.post(
        "/account/email/", {"op": "confirm", "email": "new@example.com", "code": code}
    )
    assert again.status_code == 400


def test_sending_a_code_needs_a_fresh_sign_in(site, alice):
    with freeze_time(START) as clock:
        browser = Browser().sign_in()
        clock.tick(301)
        refused = browser.post("/account/email/", {"op": "send", "email": "new@example.com"})
        assert refused["Location"] == "/account/reauthenticate/?next=%2Faccount%2Femail%2F"
        assert mail.outbox == []


@pytest.mark.parametrize(
    "typed, error",
    [
        ("alice@example.com", "This is already your email address."),
        ("ALICE@example.com", "This is already your email address."),
        ("not an address", "Enter a valid email address."),
        ("", "Enter your email address."),
    ],
)
def test_addresses_that_cannot_be_used(site, alice, typed, error):
    browser = Browser().sign_in()
    response = browser.post("/account/email/", {"op": "send", "email": typed})
    assert response.status_code == 400
    assert announced(response.content.decode()) == [("alert", error)]
    assert mail.outbox == []


def test_an_address_another_user_has_is_refused_once_proven(site, alice):
    get_user_model().objects.create_user("bob", email="bob@example.com")
    browser = Browser().sign_in()
    browser.post("/account/email/", {"op": "send", "email": "bob@example.com"})
    code = code_in(mail.outbox[0])
    response = browser.post(
        "/account/email/", {"op": "confirm", "email": "bob@example.com", "code": code}
    )
    assert response.status_code == 400
    assert announced(response.content.decode()) == [
        ("alert", "Another account uses this email address.")
    ]
    alice.refresh_from_db()
    assert alice.email == "alice@example.com"


def test_a_code_is_good_for_its_user_only(site, alice):
    get_user_model().objects.create_user("bob", email="bob@example.com", password=PASSWORD)
    alices = Browser().sign_in()
    alices.post("/account/email/", {"op": "send", "email": "new@example.com"})
    code = code_in(mail.outbox[0])
    bobs = Browser().sign_in("bob")
    response = bobs.post(
        "/account/email/", {"op": "confirm", "email": "new@example.com", "code": code}
    )
    assert response.status_code == 400
    assert get_user_model().objects.filter(email="new@example.com").count() == 0


def test_a_passkey_users_unproven_mark_goes_with_the_old_address(site):
    # Made by a passkey registration: the address was never proven.
    erin = get_user_model().objects.create_user("erin", email="erin@example.com")
    UnprovenEmail.objects.create(user=erin)
    add_passkey(erin)
    browser = Browser()
    force_sign_in(browser.client, erin)
    browser.post("/account/email/", {"op": "send", "email": "erin.new@example.com"})
    code = code_in(mail.outbox[0])
    browser.post(
        "/account/email/", {"op": "confirm", "email": "erin.new@example.com", "code": code}
    )
    assert get_user_model().objects.get(pk=erin.pk).email == "erin.new@example.com"
    assert not UnprovenEmail.objects.filter(user=erin).exists()
    assert Authenticator.objects.filter(user=erin).exists()  # nothing else removed


def test_sending_is_rate_limited_per_address(site, alice):
    browser = Browser().sign_in()
    for _ in range(5):
        ok = browser.post("/account/email/", {"op": "send", "email": "new@example.com"})
        assert ok.status_code == 200
    refused = browser.post("/account/email/", {"op": "send", "email": "new@example.com"})
    assert refused.status_code == 400
    assert "Too many attempts" in announced(refused.content.decode())[0][1]
    assert len(mail.outbox) == 5


def test_without_an_email_provider_the_address_is_shown_only(site, alice):
    site(providers=[DjangoCredentials()])
    browser = Browser().sign_in()
    html = browser.page("/account/email/")
    assert "alice@example.com" in html and 'name="op"' not in html
    response = browser.post("/account/email/", {"op": "send", "email": "new@example.com"})
    assert announced(response.content.decode()) == [
        ("alert", "Changing your email address is not available on this site.")
    ]


# -- the template tags ---------------------------------------------------------------------


def test_the_tags_render_each_section_on_a_projects_page(site, alice):
    link_github(alice, "gh-1")
    add_passkey(alice)
    browser = Browser().sign_in()
    html = browser.page("/settings/?tab=security")
    for section in ("sessions", "connections", "passkeys", "email"):
        assert f'<div class="webauth-account-{section}">' in html
    # Each form posts to its section's page and comes back here (this device has no
    # form of its own, and there is no other device to sign out).
    for section, forms in (("sessions", 0), ("connections", 1), ("passkeys", 2), ("email", 1)):
        assert html.count(f'action="/account/{section}/"') == forms, section
    assert html.count('name="next" value="/settings/?tab=security"') == 4
    assert html.count('name="csrfmiddlewaretoken"') == 4


def test_a_tag_form_comes_back_to_the_projects_page(site, alice):
    link_github(alice, "gh-1")
    browser = Browser().sign_in()
    browser.get("/settings/")
    response = browser.post(
        "/account/connections/",
        {"op": "disconnect", "provider": "github", "account": "gh-1", "next": "/settings/"},
    )
    assert response.status_code == 302 and response["Location"] == "/settings/"
    [message] = list(response.wsgi_request._messages)
    assert str(message) == "GitHub was disconnected."
    assert message.tags == "webauth-account success"
    # Somewhere else: back to the account center's own page.
    link_github(alice, "gh-2")
    response = browser.post(
        "/account/connections/",
        {"op": "disconnect", "provider": "github", "next": "https://evil.example/"},
    )
    assert response["Location"] == "/account/connections/"


def test_the_tags_render_nothing_for_a_visitor(client, site):
    html = client.get("/settings/").content.decode()
    assert html == "<main><h1>Settings</h1></main>"


def test_the_tags_need_the_account_center_routed(site, alice, settings, monkeypatch):
    module = types.ModuleType("tests.account_urls_without_account")
    module.urlpatterns = [
        p for p in urlpatterns if getattr(p, "app_name", None) != "webauth_account"
    ]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    settings.ROOT_URLCONF = module.__name__
    browser = Browser()
    force_sign_in(browser.client, alice)
    request = browser.get("/whoami/").wsgi_request
    template = engines["django"].from_string("{% load webauth %}{% webauth_account_sessions %}")
    with pytest.raises(TemplateSyntaxError, match=r'include\("webauth.account.urls"\)'):
        template.render({}, request)


# -- without django.contrib.messages ---------------------------------------------------------


def test_without_the_messages_framework_the_page_says_it(site, alice, settings):
    settings.MIDDLEWARE = [
        m
        for m in settings.MIDDLEWARE
        if m != "django.contrib.messages.middleware.MessageMiddleware"
    ]
    phone = Browser(SAFARI_IPHONE).sign_in()
    laptop = Browser().sign_in()
    other = Session.objects.get(user_agent=SAFARI_IPHONE)
    response = laptop.post("/account/sessions/", {"op": "revoke", "session_id": other.pk})
    assert response.status_code == 200
    assert announced(response.content.decode()) == [("status", "That device was signed out.")]
    refused = laptop.post("/account/sessions/", {"op": "revoke", "session_id": other.pk})
    assert refused.status_code == 400
    assert announced(refused.content.decode())[0][0] == "alert"
    assert phone.get("/auth/session").json() is None


def test_a_failing_store_refuses_the_change_without_a_server_error(site, alice, monkeypatch):
    from django.db import IntegrityError

    from webauth.adapters.django import DjangoAdapter

    def taken_meanwhile(self, user):
        raise IntegrityError("UNIQUE constraint failed: webauth_user.email")

    browser = Browser().sign_in()
    browser.post("/account/email/", {"op": "send", "email": "new@example.com"})
    code = code_in(mail.outbox[0])
    monkeypatch.setattr(DjangoAdapter, "update_user", taken_meanwhile)
    response = browser.post(
        "/account/email/", {"op": "confirm", "email": "new@example.com", "code": code}
    )
    assert response.status_code == 400
    assert announced(response.content.decode()) == [
        ("alert", "Your email address could not be changed. Please try again.")
    ]
    alice.refresh_from_db()
    assert alice.email == "alice@example.com"


HOSTILE = ["", "x" * 20000, "\x00", "../../etc", "javascript:alert(1)", "\ufffd", "%00", "🙂" * 500]


@pytest.mark.parametrize("page", ["sessions", "connections", "passkeys", "email"])
def test_hostile_forms_never_give_a_server_error(site, alice, page):
    link_github(alice)
    add_passkey(alice)
    browser = Browser().sign_in()
    fields = ("op", "session_id", "provider", "account", "credential_id", "name", "email", "code")
    ops = {
        "sessions": ["revoke", "everywhere"],
        "connections": ["connect", "disconnect"],
        "passkeys": ["rename", "remove"],
        "email": ["send", "confirm"],
    }[page]
    for op in [*ops, *HOSTILE]:
        for value in HOSTILE:
            data = {field: value for field in fields[1:]}
            response = browser.post(f"/account/{page}/", {**data, "op": op, "next": value})
            assert response.status_code in (200, 302, 400), (op, value[:20], response.status_code)
            if response.status_code == 302:
                assert response["Location"].startswith("/"), response["Location"]
    assert Account.objects.filter(user=alice).exists()  # no hostile value removed anything
    assert Authenticator.objects.filter(user=alice).exists()
