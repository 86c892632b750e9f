"""Re-authentication (webauth.reauth, @reauth_required): the freshness window and the way back.

A sensitive view needs a session that signed in at most ``reauth_max_age``
seconds ago (the JWT's ``webauth_auth_time``, the database session's
``created_at``); an older one goes to the re-authentication page, signs in again
by a way the user has, and comes back. Linking a new account or passkey while
signed in does not make a session fresh.
"""

from __future__ import annotations

import re
import sys
import time
import types
from datetime import UTC, datetime, timedelta
from html import unescape
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import path
from django.utils import timezone
from django.views import View
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.conf import build_config
from webauth.decorators import ReauthRequiredMixin, reauth_required
from webauth.middleware import AuthMiddleware
from webauth.models import Account, Authenticator, Session
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.oauth import OIDC
from webauth.reauth import ais_fresh, is_fresh, reauth_url, safe_next, signed_in_at
from webauth.sessions import AUTH_TIME_CLAIM
from webauth.test import force_sign_in

from .support.authenticator import SoftAuthenticator
from .support.helpers import csrf_pair
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, start_idp
from .support.oidc_helpers import sign_in as oidc_sign_in
from .support.urls import urlpatterns as base_patterns

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
PASSWORD = "correct horse battery staple"
ADAPTER = "webauth.adapters.django.DjangoAdapter"
START = "2031-03-04 10:00:00"

pytestmark = pytest.mark.django_db


# -- a project's sensitive views -------------------------------------------------------------


@reauth_required
def sensitive(request):
    return HttpResponse("changed")


@reauth_required(max_age=60)
def very_sensitive(request):
    return HttpResponse("changed")


@reauth_required(redirect_to="/prove-it/")
def sensitive_custom(request):
    return HttpResponse("changed")


@reauth_required
async def sensitive_async(request):
    return HttpResponse("changed async")


class SensitiveView(ReauthRequiredMixin, View):
    def get(self, request):
        return HttpResponse("changed cbv")


class SensitiveAsyncView(ReauthRequiredMixin, View):
    reauth_max_age = 60

    async def get(self, request):
        return HttpResponse("changed async cbv")


urlpatterns = [
    *base_patterns,
    path("sensitive/", sensitive),
    path("very-sensitive/", very_sensitive),
    path("sensitive-custom/", sensitive_custom),
    path("sensitive-async/", sensitive_async),
    path("sensitive-cbv/", SensitiveView.as_view()),
    path("sensitive-cbv-async/", SensitiveAsyncView.as_view()),
]

# The same without the account center: reauth falls back to the sign-in page.
without_account = [p for p in urlpatterns if getattr(p, "app_name", None) != "webauth_account"]


@pytest.fixture
def site(settings):
    def configure(strategy="jwt", **options):
        settings.ROOT_URLCONF = __name__
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": ADAPTER,
            "session": {"strategy": strategy},
            "providers": [DjangoCredentials()],
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


def reauth_location(path):
    return f"/account/reauthenticate/?next={quote(path, safe='')}"


# -- the setting -------------------------------------------------------------------------


def test_reauth_max_age_defaults_to_five_minutes():
    assert build_config({"secret": SECRET}, {}.get).reauth_max_age == 300
    assert build_config({"secret": SECRET, "reauth_max_age": 60}, {}.get).reauth_max_age == 60


@pytest.mark.parametrize("value", [0, -5, True, "300", 1.5])
def test_reauth_max_age_must_be_a_positive_whole_number(value):
    with pytest.raises(ImproperlyConfigured, match=r"WEBAUTH\['reauth_max_age'\]"):
        build_config({"secret": SECRET, "reauth_max_age": value}, {}.get)


# -- the freshness window ------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_a_sign_in_is_fresh_for_reauth_max_age_seconds(client, site, alice, strategy):
    site(strategy)
    with freeze_time(START) as clock:
        token = csrf_pair(client)
        signed = client.post(
            "/auth/callback/credentials",
            {"csrfToken": token, "username": "alice", "password": PASSWORD},
        )
        assert signed.status_code == 302
        clock.tick(300)
        assert client.get("/sensitive/").content == b"changed"
        clock.tick(1)
        refused = client.get("/sensitive/")
        assert refused.status_code == 302
        assert refused["Location"] == reauth_location("/sensitive/")


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_the_window_follows_the_setting_and_the_decorator(client, site, alice, strategy):
    site(strategy, reauth_max_age=30)
    with freeze_time(START) as clock:
        force_sign_in(client, alice)
        clock.tick(31)
        assert client.get("/sensitive/").status_code == 302
    site(strategy, reauth_max_age=3600)
    with freeze_time(START) as clock:
        force_sign_in(client, alice)
        clock.tick(61)
        assert client.get("/sensitive/").status_code == 200
        assert client.get("/very-sensitive/").status_code == 302  # max_age=60


def test_signed_in_at_reads_the_jwt_claim_and_the_database_row(client, site, alice):
    with freeze_time(START):
        value = force_sign_in(client, alice)
        request = signed_in_request(value)
        assert signed_in_at(request) == timezone.now()
        assert is_fresh(request) and async_to_sync(ais_fresh)(signed_in_request(value))
    site("database")
    with freeze_time(START) as clock:
        value = force_sign_in(client, alice)
        Session.objects.update(created_at=timezone.now() - timedelta(hours=2))
        clock.tick(5)
        request = signed_in_request(value)
        assert signed_in_at(request) == timezone.now() - timedelta(hours=2, seconds=5)
        assert not is_fresh(request)


def signed_in_request(cookie, path="/"):
    request = RequestFactory().get(path)
    request.COOKIES[SESSION] = cookie
    AuthMiddleware(lambda r: HttpResponse())(request)  # as if it had been served
    return request


def test_a_session_without_a_sign_in_time_is_never_fresh(client, site, alice):
    # A token an Auth.js app made carries no webauth_auth_time.
    value = force_sign_in(client, alice)
    claims = jose.decode(token=value, secret=SECRET, salt=SESSION)
    del claims[AUTH_TIME_CLAIM]
    client.cookies[SESSION] = jose.encode(token=claims, secret=SECRET, salt=SESSION)
    assert client.get("/whoami/").json()["authenticated"] is True
    assert client.get("/sensitive/")["Location"] == reauth_location("/sensitive/")


def test_a_sign_in_time_in_the_future_is_not_believed(client, site, alice):
    force_sign_in(client, alice, claims={AUTH_TIME_CLAIM: int(time.time()) + 3600})
    assert client.get("/sensitive/").status_code == 302


# -- what the decorator and the mixin answer -----------------------------------------------


def test_without_a_session_the_view_answers_as_auth_required(client, site):
    response = client.get("/sensitive/")
    assert response.status_code == 302
    assert response["Location"] == "/auth/signin?callbackUrl=%2Fsensitive%2F&error=SessionRequired"
    response = client.get("/sensitive/", headers={"Accept": "application/json"})
    assert response.status_code == 401 and response.json() == {"error": "SessionRequired"}


@pytest.mark.parametrize(
    "path, body",
    [
        ("/sensitive/", b"changed"),
        ("/sensitive-async/", b"changed async"),
        ("/sensitive-cbv/", b"changed cbv"),
        ("/sensitive-cbv-async/", b"changed async cbv"),
    ],
)
def test_sync_async_and_class_based_views(client, site, alice, path, body):
    with freeze_time(START) as clock:
        force_sign_in(client, alice)
        assert client.get(path).content == body
        clock.tick(301)
        stale = client.get(path + "?tab=2")
        assert stale.status_code == 302
        assert stale["Location"] == reauth_location(path + "?tab=2")
        as_json = client.get(path, headers={"Accept": "application/json"})
        assert as_json.status_code == 401
        assert as_json.json() == {"error": "ReauthenticationRequired", "url": reauth_location(path)}


def test_redirect_to_and_the_fallback_to_the_sign_in_page(
    client, site, alice, settings, monkeypatch
):
    with freeze_time(START) as clock:
        force_sign_in(client, alice)
        clock.tick(301)
        assert client.get("/sensitive-custom/")["Location"] == "/prove-it/"
        # A project that does not route the account center: the sign-in page serves.
        module = types.ModuleType("tests.reauth_urls_without_account")
        module.urlpatterns = without_account
        monkeypatch.setitem(sys.modules, module.__name__, module)
        settings.ROOT_URLCONF = module.__name__
        response = client.get("/sensitive/")
        assert response["Location"] == "/auth/signin?callbackUrl=%2Fsensitive%2F"


def test_safe_next_keeps_the_browser_on_this_site():
    request = RequestFactory().get("/")
    for good in ("/account/", "/a?b=c", "http://testserver/x"):
        assert safe_next(request, good, "/home/") == good
    for bad in (
        "https://evil.example/",
        "//evil.example/",
        "/\\evil.example",
        "javascript:alert(1)",
        "",
        None,
        ["/"],
        "/" + "a" * 3000,
        "../../etc",
        "account/",
    ):
        assert safe_next(request, bad, "/home/") == "/home/"
    assert reauth_url(request, "https://evil.example/") == reauth_location("/")


# -- the re-authentication page ------------------------------------------------------------


def callback_url_of(html):
    """The sign-in forms' callbackUrl (in <main>: the header's sign-out form has its own)."""
    main = html[html.index("<main") :]
    return unescape(re.search(r'name="callbackUrl" value="([^"]*)"', main).group(1))


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_signing_in_again_comes_back_fresh(client, site, alice, strategy):
    site(strategy)
    with freeze_time(START) as clock:
        force_sign_in(client, alice)
        clock.tick(3600)
        refused = client.get("/sensitive/?x=1")
        page = client.get(refused["Location"])
        assert page.status_code == 200
        assert page["Cache-Control"] == "private, no-store"
        html = page.content.decode()
        assert '<h1 class="webauth-heading">Confirm it is you</h1>' in html
        assert "You are signed in as alice@example.com." in html
        callback = callback_url_of(html)
        assert callback == "http://testserver/sensitive/?x=1"
        # The password form, the username filled in.
        assert 'name="username"' in html and 'value="alice"' in html
        token = re.search(r'name="csrfToken" value="([^"]+)"', html).group(1)
        back = client.post(
            "/auth/callback/credentials",
            {
                "csrfToken": token,
                "username": "alice",
                "password": PASSWORD,
                "callbackUrl": callback,
            },
        )
        assert back.status_code == 302 and back["Location"] == callback
        assert client.get("/sensitive/?x=1").content == b"changed"
        # Once fresh, the page sends the browser straight back.
        again = client.get(reauth_location("/sensitive/"))
        assert again.status_code == 302 and again["Location"] == "/sensitive/"


def test_a_wrong_password_does_not_make_the_session_fresh(client, site, alice):
    with freeze_time(START) as clock:
        force_sign_in(client, alice)
        clock.tick(3600)
        token = csrf_pair(client)
        client.post(
            "/auth/callback/credentials",
            {"csrfToken": token, "username": "alice", "password": "wrong"},
        )
        assert client.get("/sensitive/").status_code == 302
        assert client.get("/whoami/").json()["username"] == "alice"  # still signed in


def test_the_page_offers_only_the_ways_in_the_user_has(client, site, alice, settings):
    oidc = OIDC(id="example", name="Example IdP", issuer="https://idp.example", client_id="c")
    other = OIDC(id="other", name="Other IdP", issuer="https://other.example", client_id="c")
    site(
        experimental={"enable_webauthn": True},
        providers=[DjangoCredentials(), Email(), Passkey(), oidc, other],
    )
    # A user with no password, an account at one provider and a passkey.
    bob = get_user_model().objects.create_user("bob", email="bob@example.com")
    Account.objects.create(user=bob, type="oidc", provider="example", provider_account_id="b1")
    Authenticator.objects.create(
        user=bob,
        credential_id="Y3JlZA",
        provider_account_id="Y3JlZA",
        credential_public_key="unused",
        credential_device_type="multiDevice",
    )
    with freeze_time(START) as clock:
        force_sign_in(client, bob)
        clock.tick(3600)
        html = client.get(reauth_location("/account/")).content.decode()
    assert 'data-provider="example"' in html and "Sign in with Example IdP" in html
    assert 'data-provider="other"' not in html  # not one of bob's
    assert 'data-provider="credentials"' not in html  # bob has no password
    assert (
        'action="http://testserver/auth/signin/email"' in html and 'value="bob@example.com"' in html
    )
    assert 'id="webauth-passkey-signin"' in html
    assert 'id="input-email-for-passkey"' not in html  # a discoverable passkey names its user
    assert "Create an account with a passkey" not in html
    assert callback_url_of(html) == "http://testserver/account/"


def test_the_page_goes_back_only_into_this_site(client, site, alice):
    with freeze_time(START) as clock:
        force_sign_in(client, alice)
        clock.tick(3600)
        html = client.get(
            "/account/reauthenticate/?next=" + quote("https://evil.example/steal")
        ).content.decode()
        assert callback_url_of(html) == "http://testserver/account/"
        clock.tick(-3600)
        fresh = client.get("/account/reauthenticate/?next=//evil.example/")
        assert fresh["Location"] == "/account/"


def test_the_page_for_a_visitor(client, site):
    response = client.get(reauth_location("/account/"))
    assert response.status_code == 302
    assert response["Location"].startswith("/auth/signin?callbackUrl=")


# -- linking while signed in does not make a session fresh -----------------------------------


@pytest.fixture
def oidc_site(settings, live_server):
    idp = start_idp(live_server)
    provider = OIDC(
        id="example",
        name="Example IdP",
        issuer=idp.issuer,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        checks=("pkce", "nonce"),
    )

    def configure(strategy):
        settings.ROOT_URLCONF = __name__
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": ADAPTER,
            "session": {"strategy": strategy},
            "providers": [DjangoCredentials(), provider],
        }

    return idp, configure


def session_signed_in_at(response, strategy):
    value = response.cookies[SESSION].value
    if strategy == "jwt":
        return jose.decode(token=value, secret=SECRET, salt=SESSION)[AUTH_TIME_CLAIM]
    return signed_in_at(signed_in_request(value)).timestamp()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_linking_an_account_keeps_the_sessions_sign_in_time(client, oidc_site, strategy):
    idp, configure = oidc_site
    configure(strategy)
    bob = get_user_model().objects.create_user("bob", email="bob@example.com", password=PASSWORD)
    an_hour_ago = int(time.time()) - 3600
    if strategy == "jwt":
        force_sign_in(client, bob, claims={AUTH_TIME_CLAIM: an_hour_ago})
    else:
        force_sign_in(client, bob)
        # The same instant as the JWT's claim: a second that ends between the two
        # readings of the clock must not look like a moved sign-in time.
        Session.objects.update(created_at=datetime.fromtimestamp(an_hour_ago, UTC))
    assert client.get("/sensitive/").status_code == 302

    linked = oidc_sign_in(client, idp, callback_url="/sensitive/")
    assert Account.objects.get(provider="example").user == bob  # linked to bob
    assert abs(session_signed_in_at(linked, strategy) - an_hour_ago) <= 1
    assert client.get("/sensitive/").status_code == 302  # still not fresh

    # Signing in with an account bob already has is a new proof: fresh.
    again = oidc_sign_in(client, idp, callback_url="/sensitive/")
    assert session_signed_in_at(again, strategy) >= time.time() - 5
    assert client.get("/sensitive/").content == b"changed"


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_adding_a_passkey_keeps_the_sessions_sign_in_time(client, settings, strategy):
    from .test_flows_webauthn import register

    settings.ROOT_URLCONF = __name__
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "session": {"strategy": strategy},
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey(), DjangoCredentials()],
    }
    bob = get_user_model().objects.create_user("bob", email="bob@example.com", password=PASSWORD)
    an_hour_ago = int(time.time()) - 3600
    if strategy == "jwt":
        force_sign_in(client, bob, claims={AUTH_TIME_CLAIM: an_hour_ago})
    else:
        force_sign_in(client, bob)
        # The same instant as the JWT's claim: a second that ends between the two
        # readings of the clock must not look like a moved sign-in time.
        Session.objects.update(created_at=datetime.fromtimestamp(an_hour_ago, UTC))
    response = register(client, SoftAuthenticator(), email=None)
    assert response.status_code == 200, response.content
    assert Authenticator.objects.get().user == bob
    assert abs(session_signed_in_at(response, strategy) - an_hour_ago) <= 1
    assert client.get("/sensitive/").status_code == 302


def test_a_new_client_is_fresh_after_its_own_sign_in(site, alice):
    # One browser's re-authentication says nothing about another's session.
    with freeze_time(START) as clock:
        old, new = Client(), Client()
        force_sign_in(old, alice)
        clock.tick(3600)
        force_sign_in(new, alice)
        assert old.get("/sensitive/").status_code == 302
        assert new.get("/sensitive/").status_code == 200


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_a_bearer_client_is_told_to_sign_in_again(client, site, alice, strategy):
    # An app holds its session token itself: no page to go to, RFC 9470's challenge.
    site(strategy, bearer=True)
    with freeze_time(START) as clock:
        token = force_sign_in(Client(), alice)
        header = {"Authorization": f"Bearer {token}"}
        assert client.get("/sensitive/", headers=header).content == b"changed"
        clock.tick(301)
        response = client.get("/sensitive-async/", headers=header)
        assert response.status_code == 401
        assert response.json() == {"error": "ReauthenticationRequired"}
        assert response["WWW-Authenticate"] == (
            'Bearer error="insufficient_user_authentication", max_age="300"'
        )
        assert client.get("/very-sensitive/", headers=header)["WWW-Authenticate"].endswith(
            'max_age="60"'
        )
