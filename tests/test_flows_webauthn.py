"""Passkeys (issue 12) through the routes, with a software authenticator.

One browser is one test ``Client`` holding the challenge cookie; the software
authenticator (tests/support/authenticator.py) answers the options as a
platform authenticator would, so every refusal of the issue is made here,
byte by byte, without a browser. tests/test_passkeys_browser.py does the same
ceremonies in Chromium.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.contrib.auth import get_user_model
from django.core.checks import Error
from django.core.exceptions import ImproperlyConfigured
from django.template import Context, Template
from django.test import Client, RequestFactory
from django.utils import timezone
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.checks import check_config
from webauth.conf import build_config
from webauth.models import Account, Authenticator, WebAuthnChallenge, WebAuthnUserHandle
from webauth.providers import DjangoCredentials, Passkey, WebAuthn
from webauth.providers.webauthn import device_name, is_registrable_suffix
from webauth.signals import account_linked, user_created
from webauth.test import force_sign_in
from webauth.testing.memory import MemoryAdapter

from .support.authenticator import GOOGLE_AAGUID, SoftAuthenticator, b64url, unb64url

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
CHALLENGE = "authjs.challenge"
ADAPTER = "webauth.adapters.django.DjangoAdapter"
ORIGIN = "http://testserver"
#: A native Android app's origin: base64url of a (made-up) signing certificate's SHA-256.
ANDROID = "android:apk-key-hash:" + "Xu3H0G2lA4JtqV7nZx1pF8cYbQwR5sKmT9oLdE6vU0g"
CHROME_LINUX = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/131.0.0.0 Safari/537.36"
)
JSON_HEADERS = {"X-Auth-Return-Redirect": "1", "Accept": "application/json"}

pytestmark = pytest.mark.django_db


# -- the site ------------------------------------------------------------------------------------


@pytest.fixture
def site(settings):
    """A Passkey provider (and a password one) on DjangoAdapter with JWT sessions."""

    def configure(*, provider=None, experimental=True, providers=None, **options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": ADAPTER,
            "session": {"strategy": "jwt"},
            "experimental": {"enable_webauthn": experimental},
            "providers": providers or [provider or Passkey(), DjangoCredentials()],
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )


def ask(client, provider="passkey", **query):
    """``GET /auth/webauthn-options/<provider>`` as the script asks."""
    return client.get(
        f"/auth/webauthn-options/{provider}", query, headers={"Accept": "application/json"}
    )


def options_of(client, provider="passkey", **query) -> dict:
    response = ask(client, provider, **query)
    assert response.status_code == 200, response.content
    return response.json()["options"]


def answer(
    client,
    action,
    data,
    *,
    provider="passkey",
    as_json=True,
    callback=None,
    error_page=False,
    **extra,
):
    """``POST /auth/callback/<provider>`` with ``action`` and ``data``, as the script does.

    A JSON answer of 200 is a sign-in, unless *error_page* says the test expects the
    error page's URL (a refusal by a callback, a server-side failure).
    """
    body = {"action": action, "data": data if isinstance(data, str) else json.dumps(data)}
    if callback is not None:
        body["callbackUrl"] = callback
    headers = {**(JSON_HEADERS if as_json else {}), **extra.pop("headers", {})}
    response = client.post(f"/auth/callback/{provider}", body, headers=headers, **extra)
    if as_json and response.status_code == 200 and not error_page:
        # A JSON client is told about a server-side failure with 200 and the error
        # page's URL (X-Auth-Return-Redirect): never let that pass for a sign-in.
        assert "/auth/error" not in response.json()["url"], response.content
    return response


def register(
    client,
    authenticator,
    email="new@example.com",
    *,
    provider="passkey",
    error_page=False,
    **kwargs,
):
    """Ask for registration options and answer them; returns the callback's response."""
    query = {"action": "register"}
    if email is not None:
        query["email"] = email
    options = options_of(client, provider, **query)
    data = authenticator.create(options, origin=ORIGIN, **kwargs)
    return answer(
        client,
        "register",
        data,
        provider=provider,
        error_page=error_page,
        HTTP_USER_AGENT=CHROME_LINUX,
    )


def sign_in(client, authenticator, *, provider="passkey", query=None, error_page=False, **kwargs):
    options = options_of(client, provider, action="authenticate", **(query or {}))
    data = authenticator.get(options, origin=ORIGIN, **kwargs)
    return answer(client, "authenticate", data, provider=provider, error_page=error_page)


def signed_in_as(response) -> str | None:
    """The email in the session cookie the response set, if any."""
    morsel = response.cookies.get(SESSION)
    if morsel is None or not morsel.value:
        return None
    claims = jose.decode(token=morsel.value, secret=SECRET, salt=SESSION)
    return claims["email"] if claims else None


def assert_refused(response, *, unknown=False):
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "WebAuthnVerificationError"
    assert body["url"] == "http://testserver/auth/error?error=WebAuthnVerificationError"
    assert ("unknownCredential" in body) == unknown
    assert signed_in_as(response) is None
    return body


@pytest.fixture
def passkey_user(client, site):
    """A user made by registering a passkey; the client is signed in as them."""
    authenticator = SoftAuthenticator()
    response = register(client, authenticator)
    assert response.status_code == 200, response.content
    user = get_user_model().objects.get(email="new@example.com")
    return user, authenticator


# -- the options route ---------------------------------------------------------------------------


def test_authentication_options_for_a_visitor(client, site):
    response = ask(client, action="authenticate")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    assert body["action"] == "authenticate"
    options = body["options"]
    assert options["rpId"] == "testserver"
    assert options["timeout"] == 300_000
    assert options["userVerification"] == "required"
    assert options["allowCredentials"] == []
    assert len(unb64url(options["challenge"])) == 32
    # The challenge is stored (hashed), bound to this browser by the cookie.
    row = WebAuthnChallenge.objects.get()
    assert row.ceremony == "authenticate"
    assert options["challenge"] not in json.dumps(
        list(WebAuthnChallenge.objects.values()), default=str
    )
    morsel = response.cookies[CHALLENGE]
    assert morsel["httponly"] and morsel["samesite"] == "Lax" and morsel["path"] == "/"
    payload = jose.decode(token=morsel.value, secret=SECRET, salt=CHALLENGE)
    assert set(payload) >= {"binding", "provider"} and payload["provider"] == "passkey"
    assert "challenge" not in payload  # only the binding: the challenge is on the server


def test_registration_options_for_a_new_address(client, site):
    body = ask(client, action="register", email="New@Example.com").json()
    assert body["action"] == "register"
    options = body["options"]
    assert options["rp"] == {"name": "testserver", "id": "testserver"}
    assert options["user"]["name"] == "new@example.com"
    assert len(unb64url(options["user"]["id"])) == 64  # a random handle, not the pk
    assert options["authenticatorSelection"] == {
        "residentKey": "required",
        "requireResidentKey": True,
        "userVerification": "required",
    }
    assert options["attestation"] == "none"
    assert options["extensions"] == {"credProps": True}
    assert options["excludeCredentials"] == []
    assert [p["alg"] for p in options["pubKeyCredParams"]] == [-8, -7, -257]
    assert WebAuthnChallenge.objects.get().ceremony == "register"


def test_options_decide_as_auth_js(client, site, alice):
    # No action: an unknown address registers, a known one (or none) authenticates.
    assert ask(client, email="new@example.com").json()["action"] == "register"
    assert ask(client, email="alice@example.com").json()["action"] == "authenticate"
    assert ask(client).json()["action"] == "authenticate"
    # A visitor cannot register an address that has an account.
    response = ask(client, action="register", email="alice@example.com")
    assert response.status_code == 400 and response.json() == {"error": "Invalid request"}
    response = ask(client, action="register")
    assert response.status_code == 400 and response.json() == {"error": "Invalid request"}
    response = ask(client, action="delete")
    assert response.status_code == 400 and response.json() == {"error": "Invalid action"}


def test_a_signed_in_user_must_say_what_they_want(client, site, alice):
    force_sign_in(client, alice)
    response = ask(client)
    assert response.status_code == 400 and response.json() == {"error": "Invalid request"}
    assert ask(client, action="register").json()["action"] == "register"
    assert ask(client, action="authenticate").json()["action"] == "authenticate"


def test_the_binding_is_kept_across_options(client, site):
    ask(client)
    first = jose.decode(token=client.cookies[CHALLENGE].value, secret=SECRET, salt=CHALLENGE)
    ask(client)
    second = jose.decode(token=client.cookies[CHALLENGE].value, secret=SECRET, salt=CHALLENGE)
    # Two tabs of one browser may each have a ceremony under way.
    assert first["binding"] == second["binding"]
    assert WebAuthnChallenge.objects.count() == 2


def test_options_while_the_feature_is_off(client, site):
    site(experimental=False)
    response = ask(client)
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert not WebAuthnChallenge.objects.exists()


def test_options_of_other_providers(client, site):
    for provider in ("credentials", "nope", "undefined"):
        response = ask(client, provider)
        assert response.status_code == 302
        assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"
    assert client.post("/auth/webauthn-options/passkey").status_code == 302  # GET only


def test_configured_relying_party(client, site):
    site(
        provider=Passkey(
            relying_party={
                "id": "example.com",
                "name": "Example",
                "origins": ["https://app.example.com"],
            }
        )
    )
    options = options_of(client, action="register", email="new@example.com")
    assert options["rp"] == {"name": "Example", "id": "example.com"}


# -- registration ----------------------------------------------------------------------------------


def test_registration_creates_the_user_account_passkey_and_session(client, site):
    created, linked = [], []
    user_created.connect(lambda sender, user, **kw: created.append(user), weak=False)
    account_linked.connect(lambda sender, account, **kw: linked.append(account), weak=False)
    authenticator = SoftAuthenticator()
    options = options_of(client, action="register", email="new@example.com")
    data = authenticator.create(options, origin=ORIGIN)
    response = answer(client, "register", data, callback="/welcome/", HTTP_USER_AGENT=CHROME_LINUX)
    assert response.status_code == 200, response.content
    assert response.json() == {"url": "http://testserver/welcome/"}
    assert signed_in_as(response) == "new@example.com"
    # The challenge was used up, and its cookie deleted.
    assert not WebAuthnChallenge.objects.exists()
    assert response.cookies[CHALLENGE].value == ""

    user = get_user_model().objects.get(email="new@example.com")
    (credential,) = authenticator.credentials.values()
    account = Account.objects.get(user=user)
    assert (account.provider, account.type) == ("passkey", "webauthn")
    assert account.provider_account_id == credential.id_b64  # Auth.js: standard base64
    row = Authenticator.objects.get(user=user)
    assert row.credential_id == credential.id_b64
    assert row.provider_account_id == credential.id_b64
    assert row.counter == 0
    assert row.name == "Chrome on Linux"
    assert row.aaguid == "0badc0de-0bad-c0de-0bad-c0de0badc0de"
    assert row.backup_eligible and row.credential_backed_up
    assert row.credential_device_type == "multiDevice"
    assert row.transports == "hybrid,internal"
    # The handle the browser was given is the user's handle.
    assert WebAuthnUserHandle.objects.get(user=user).handle == options["user"]["id"]
    assert created and linked and linked[0].provider == "passkey"


def test_a_well_known_passkey_provider_names_the_passkey(client, site):
    response = register(client, SoftAuthenticator(aaguid=GOOGLE_AAGUID))
    assert response.status_code == 200
    assert Authenticator.objects.get().name == "Google Password Manager"


def test_a_new_user_lands_on_the_new_user_page(client, site):
    site(pages={"new_user": "/welcome/"})
    response = register(client, SoftAuthenticator())
    assert response.json()["url"].startswith("/welcome/?callbackUrl=")


def test_a_browser_without_json_gets_redirected(client, site):
    authenticator = SoftAuthenticator()
    options = options_of(client, action="register", email="new@example.com")
    response = answer(
        client, "register", authenticator.create(options, origin=ORIGIN), as_json=False
    )
    assert response.status_code == 302 and response["Location"] == "http://testserver"
    assert signed_in_as(response) == "new@example.com"


def test_a_signed_in_user_adds_a_second_passkey(client, site, passkey_user):
    user, first = passkey_user
    handle = WebAuthnUserHandle.objects.get(user=user).handle
    second = SoftAuthenticator()
    options = options_of(client, action="register")
    assert options["user"]["id"] == handle  # the same handle: one user in the browser
    excluded = [d["id"] for d in options["excludeCredentials"]]
    assert excluded == [next(iter(first.credentials.values())).id_b64url]
    response = answer(client, "register", second.create(options, origin=ORIGIN))
    assert response.status_code == 200, response.content
    assert Authenticator.objects.filter(user=user).count() == 2
    assert Account.objects.filter(user=user, provider="passkey").count() == 2
    assert get_user_model().objects.count() == 1


def test_a_password_user_adds_a_passkey_and_signs_in_with_it(client, site, alice):
    force_sign_in(client, alice)
    authenticator = SoftAuthenticator()
    response = register(client, authenticator, email=None)
    assert response.status_code == 200, response.content
    assert Authenticator.objects.get().user == alice
    other = Client()
    response = sign_in(other, authenticator)
    assert response.status_code == 200
    assert signed_in_as(response) == "alice@example.com"


def test_a_registration_asked_by_another_session_is_refused(client, site, alice):
    force_sign_in(client, alice)
    options = options_of(client, action="register")
    bob = get_user_model().objects.create_user("bob", email="bob@example.com")
    force_sign_in(client, bob)  # the session changed before the answer came
    response = answer(client, "register", SoftAuthenticator().create(options, origin=ORIGIN))
    assert_refused(response)
    assert not Authenticator.objects.exists()


def test_a_registration_asked_while_signed_in_and_answered_signed_out(client, site, alice):
    force_sign_in(client, alice)
    options = options_of(client, action="register")
    client.cookies.pop(SESSION)  # signed out (or the session ended) before the answer
    response = answer(client, "register", SoftAuthenticator().create(options, origin=ORIGIN))
    assert_refused(response)
    assert not Authenticator.objects.exists()


@pytest.mark.parametrize(
    "extensions",
    [[], "credProps", {"credProps": "rk"}, {"credProps": ["rk"]}, {"credProps": {"rk": None}}],
    ids=["a-list", "a-string", "props-a-string", "props-a-list", "rk-null"],
)
def test_odd_extension_results_do_not_stop_a_registration(client, site, extensions):
    """What the browser says of credProps is only believed when it says rk is false."""
    options = options_of(client, action="register", email="new@example.com")
    data = SoftAuthenticator().create(options, origin=ORIGIN)
    data["clientExtensionResults"] = extensions
    response = answer(client, "register", data)
    assert signed_in_as(response) == "new@example.com", response.content
    assert Authenticator.objects.count() == 1


def test_an_address_taken_meanwhile_is_account_not_linked(client, site):
    options = options_of(client, action="register", email="late@example.com")
    get_user_model().objects.create_user("late", email="late@example.com")
    response = answer(client, "register", SoftAuthenticator().create(options, origin=ORIGIN))
    assert response.status_code == 200
    assert response.json()["url"] == "http://testserver/auth/signin?error=AccountNotLinked"
    assert not Authenticator.objects.exists() and not Account.objects.exists()


def test_a_credential_registered_twice_is_refused(client, site, passkey_user):
    user, authenticator = passkey_user
    (credential,) = authenticator.credentials.values()
    # The same credential id again (an authenticator that ignored excludeCredentials),
    # from this user and from a visitor who would take it over.
    options = options_of(client, action="register")
    data = SoftAuthenticator().create(options, origin=ORIGIN, credential_id=credential.id)
    assert_refused(answer(client, "register", data))
    visitor = Client()
    options = options_of(visitor, action="register", email="thief@example.com")
    data = SoftAuthenticator().create(options, origin=ORIGIN, credential_id=credential.id)
    assert_refused(answer(visitor, "register", data))
    assert Authenticator.objects.get().user == user
    assert not get_user_model().objects.filter(email="thief@example.com").exists()


def test_registration_requires_a_discoverable_credential_for_passkeys(client, site):
    response = register(client, SoftAuthenticator(), discoverable=False)
    assert_refused(response)
    assert not get_user_model().objects.filter(email="new@example.com").exists()


def test_the_generic_provider_accepts_a_server_side_credential(client, site):
    site(provider=WebAuthn())
    response = register(client, SoftAuthenticator(), provider="webauthn", discoverable=False)
    assert response.status_code == 200, response.content


def test_a_failing_authenticator_store_takes_the_new_user_back(client, site, monkeypatch):
    from webauth.adapters.django import DjangoAdapter

    def fail(self, authenticator):
        raise RuntimeError("disk full")

    monkeypatch.setattr(DjangoAdapter, "create_authenticator", fail)
    response = register(client, SoftAuthenticator(), error_page=True)
    assert response.status_code == 200
    assert response.json()["url"] == "http://testserver/auth/error?error=Configuration"
    assert not get_user_model().objects.filter(email="new@example.com").exists()
    assert not Account.objects.exists()


# -- sign-in -------------------------------------------------------------------------------------


def test_sign_in_with_a_passkey(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    response = sign_in(browser, authenticator)
    assert response.status_code == 200, response.content
    assert response.json() == {"url": "http://testserver"}
    assert signed_in_as(response) == "new@example.com"
    row = Authenticator.objects.get()
    assert row.counter == 1 and row.last_used_at is not None
    assert response.cookies[CHALLENGE].value == ""
    # The session works.
    assert browser.get("/auth/session").json()["user"]["email"] == "new@example.com"


def test_sign_in_with_an_address_lists_its_passkeys(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, email="new@example.com")
    (credential,) = authenticator.credentials.values()
    assert [d["id"] for d in options["allowCredentials"]] == [credential.id_b64url]
    assert options["allowCredentials"][0]["transports"] == ["hybrid", "internal"]


def test_synced_passkeys_may_stay_at_zero(site, client):
    authenticator = SoftAuthenticator(counter_step=0)
    assert register(client, authenticator).status_code == 200
    for _ in range(3):
        response = sign_in(Client(), authenticator)
        assert response.status_code == 200, response.content
    assert Authenticator.objects.get().counter == 0


def test_the_database_strategy(site, client):
    site(session={"strategy": "database"})
    authenticator = SoftAuthenticator()
    assert register(client, authenticator).status_code == 200
    browser = Client()
    response = sign_in(browser, authenticator)
    assert response.status_code == 200
    assert browser.get("/auth/session").json()["user"]["email"] == "new@example.com"


def test_an_inactive_user_is_refused(site, passkey_user):
    user, authenticator = passkey_user
    user.is_active = False
    user.save()
    response = sign_in(Client(), authenticator, error_page=True)
    assert response.json()["url"] == "http://testserver/auth/error?error=AccessDenied"
    assert signed_in_as(response) is None


def test_the_sign_in_callback_can_refuse(site, passkey_user, settings):
    _user, authenticator = passkey_user
    seen = []

    def refuse(*, user, account, **kwargs):
        seen.append(account)
        return False

    site(callbacks={"sign_in": refuse})
    response = sign_in(Client(), authenticator, error_page=True)
    assert response.json()["url"] == "http://testserver/auth/error?error=AccessDenied"
    assert seen[0]["type"] == "webauthn" and seen[0]["provider"] == "passkey"


def test_a_passkey_of_another_user_while_signed_in(site, passkey_user, alice):
    _user, authenticator = passkey_user
    browser = Client()
    force_sign_in(browser, alice)
    response = sign_in(browser, authenticator)
    assert response.json()["url"] == "http://testserver/auth/signin?error=AccountNotLinked"
    assert signed_in_as(response) is None


# -- refusals: each one a 400 (or the error page), never a 500, never a session ------------------


def test_tampered_client_data(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    data = authenticator.get(options, origin=ORIGIN)
    client_data = json.loads(unb64url(data["response"]["clientDataJSON"]))
    client_data["crossOrigin"] = True  # signed over the original bytes
    data["response"]["clientDataJSON"] = b64url(json.dumps(client_data).encode())
    assert_refused(answer(browser, "authenticate", data))


def test_tampered_signature(site, passkey_user):
    _user, authenticator = passkey_user
    assert_refused(sign_in(Client(), authenticator, tamper_signature=True))


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://testserver", "http://testserver:8000"]
)
def test_wrong_origin(site, client, passkey_user, origin):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    assert_refused(answer(browser, "authenticate", authenticator.get(options, origin=origin)))
    options = options_of(client, action="register")
    assert_refused(answer(client, "register", SoftAuthenticator().create(options, origin=origin)))


def test_wrong_rp_id(site, client, passkey_user):
    _user, authenticator = passkey_user
    assert_refused(sign_in(Client(), authenticator, rp_id="evil.example"))
    options = options_of(client, action="register")
    data = SoftAuthenticator().create(options, origin=ORIGIN, rp_id="evil.example")
    assert_refused(answer(client, "register", data))
    assert Authenticator.objects.count() == 1


@pytest.mark.parametrize("step", [1, 0], ids=["counting", "synced 0/0"])
def test_a_replayed_assertion(site, client, step):
    # With a synced passkey (its counter always 0) only the challenge stops a replay.
    authenticator = SoftAuthenticator(counter_step=step)
    assert register(client, authenticator).status_code == 200
    browser = Client()
    options = options_of(browser, action="authenticate")
    data = authenticator.get(options, origin=ORIGIN)
    assert answer(browser, "authenticate", data).status_code == 200
    # The same bytes again, from the same browser and from another: the challenge is gone.
    options_of(browser, action="authenticate")  # a new challenge cookie, the same binding
    assert_refused(answer(browser, "authenticate", data))
    assert_refused(answer(Client(), "authenticate", data))
    assert Authenticator.objects.get().counter == step


def test_a_replay_within_the_challenge_lifetime_with_the_cookie(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    saved = browser.cookies[CHALLENGE].value
    data = authenticator.get(options, origin=ORIGIN)
    assert answer(browser, "authenticate", data).status_code == 200
    attacker = Client()
    attacker.cookies[CHALLENGE] = saved  # even with the binding cookie copied
    assert_refused(answer(attacker, "authenticate", data))
    assert Authenticator.objects.get().counter == 1


def test_an_unknown_credential(site, client):
    authenticator = SoftAuthenticator()
    options = options_of(client, action="register", email="x@example.com")
    authenticator.create(options, origin=ORIGIN)  # created, never sent
    response = sign_in(Client(), authenticator)
    body = assert_refused(response, unknown=True)
    (credential,) = authenticator.credentials.values()
    assert body["unknownCredential"] == {"rpId": "testserver", "credentialId": credential.id_b64url}


def test_a_missing_challenge_cookie(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    data = authenticator.get(options, origin=ORIGIN)
    del browser.cookies[CHALLENGE]
    assert_refused(answer(browser, "authenticate", data))
    # Nothing was consumed: the asking browser still could.
    assert WebAuthnChallenge.objects.count() == 1


def _rewrite_challenge_cookie(browser, **changes):
    """The browser's challenge cookie with some of its payload changed, encrypted again."""
    payload = jose.decode(token=browser.cookies[CHALLENGE].value, secret=SECRET, salt=CHALLENGE)
    browser.cookies[CHALLENGE] = jose.encode(
        token={**payload, **changes}, secret=SECRET, salt=CHALLENGE
    )
    return payload


@pytest.mark.parametrize(
    "changes",
    [
        {"provider": "another-passkey-provider"},  # a cookie another WebAuthn provider set
        {"provider": None},
        {"binding": "x" * 31},  # shorter than any binding webauth makes
        {"binding": "x" * 129},
        {"binding": 12345678901234567890123456789012345},
    ],
)
def test_a_challenge_cookie_that_is_not_this_providers_binding(site, passkey_user, changes):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    data = authenticator.get(options, origin=ORIGIN)
    before = _rewrite_challenge_cookie(browser, **changes)
    crafted = browser.cookies[CHALLENGE].value
    assert_refused(answer(browser, "authenticate", data))
    assert WebAuthnChallenge.objects.count() == 1  # nothing consumed
    # The options route does not take it as the browser's binding either.
    browser.cookies[CHALLENGE] = crafted
    options_of(browser, action="authenticate")
    after = jose.decode(token=browser.cookies[CHALLENGE].value, secret=SECRET, salt=CHALLENGE)
    assert after["binding"] not in (before["binding"], changes.get("binding"))
    assert after["provider"] == "passkey"


@pytest.mark.parametrize("cookie", ["garbage", "e30", ""])
def test_a_challenge_cookie_that_does_not_decrypt(site, passkey_user, cookie):
    _user, authenticator = passkey_user
    browser = Client()
    data = authenticator.get(options_of(browser, action="authenticate"), origin=ORIGIN)
    browser.cookies[CHALLENGE] = cookie
    assert_refused(answer(browser, "authenticate", data))
    assert WebAuthnChallenge.objects.count() == 1  # nothing consumed
    browser.cookies[CHALLENGE] = cookie
    assert options_of(browser, action="authenticate")  # a new binding, no error


def test_the_binding_lengths_webauth_accepts(site, passkey_user):
    """A binding of 32 or 128 characters (the ends of the range) is the browser's own."""
    _user, authenticator = passkey_user
    for length in (32, 128):
        browser = Client()
        options_of(browser, action="authenticate")
        _rewrite_challenge_cookie(browser, binding="b" * length)
        options = options_of(browser, action="authenticate")  # stored under that binding
        kept = jose.decode(token=browser.cookies[CHALLENGE].value, secret=SECRET, salt=CHALLENGE)
        assert kept["binding"] == "b" * length
        data = authenticator.get(options, origin=ORIGIN)
        assert answer(browser, "authenticate", data).status_code == 200


def test_a_foreign_challenge(site, passkey_user):
    _user, authenticator = passkey_user
    victim, attacker = Client(), Client()
    options = options_of(victim, action="authenticate")
    options_of(attacker, action="authenticate")  # the attacker's own cookie and challenge
    data = authenticator.get(options, origin=ORIGIN)
    assert_refused(answer(attacker, "authenticate", data))
    assert answer(victim, "authenticate", data).status_code == 200  # untouched for its owner


def test_a_challenge_of_the_other_ceremony(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="register", email="other@example.com")
    data = authenticator.get({"challenge": options["challenge"]}, origin=ORIGIN, rp_id="testserver")
    assert_refused(answer(browser, "authenticate", data))


def test_a_made_up_challenge(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options_of(browser, action="authenticate")
    data = authenticator.get({"challenge": b64url(b"\x00" * 32)}, origin=ORIGIN, rp_id="testserver")
    assert_refused(answer(browser, "authenticate", data))


def test_an_expired_challenge(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    data = authenticator.get(options, origin=ORIGIN)
    with freeze_time(timezone.now() + timedelta(seconds=301)):
        assert_refused(answer(browser, "authenticate", data))


def test_user_verification_not_performed(site, client, passkey_user):
    _user, authenticator = passkey_user
    assert_refused(sign_in(Client(), authenticator, uv=False))
    assert_refused(register(client, SoftAuthenticator(), email=None, uv=False))
    assert_refused(sign_in(Client(), authenticator, up=False))


def test_user_verification_can_be_optional_for_the_generic_provider(site, client):
    site(provider=WebAuthn(require_user_verification=False))
    authenticator = SoftAuthenticator()
    assert register(client, authenticator, provider="webauthn", uv=False).status_code == 200
    assert sign_in(Client(), authenticator, provider="webauthn", uv=False).status_code == 200


@pytest.mark.parametrize("count", [0, 1, 5])
def test_counter_regression(site, passkey_user, count):
    _user, authenticator = passkey_user
    (_credential,) = authenticator.credentials.values()
    for _ in range(5):
        assert sign_in(Client(), authenticator).status_code == 200
    assert Authenticator.objects.get().counter == 5
    assert_refused(sign_in(Client(), authenticator, sign_count=count))
    assert Authenticator.objects.get().counter == 5


def test_a_user_handle_that_is_not_the_owners_is_refused(site, passkey_user):
    # The credential's own signature is good, but the handle it carries names
    # another user: a passkey record moved (or was copied) between users.
    _user, authenticator = passkey_user
    (credential,) = authenticator.credentials.values()
    credential.user_handle = b"\x01" * 64
    assert_refused(sign_in(Client(), authenticator))
    assert Authenticator.objects.get().counter == 0
    credential.user_handle = unb64url(WebAuthnUserHandle.objects.get().handle)
    assert sign_in(Client(), authenticator).status_code == 200


def test_a_passkey_without_a_stored_handle_signs_in(site, passkey_user):
    # A passkey stored before handles existed (or by an Auth.js app sharing the
    # database) has no handle to compare: the signature decides.
    _user, authenticator = passkey_user
    WebAuthnUserHandle.objects.all().delete()
    assert sign_in(Client(), authenticator).status_code == 200


def test_the_backup_state_follows_the_assertions(site, client):
    authenticator = SoftAuthenticator(backed_up=False)
    assert register(client, authenticator).status_code == 200
    assert Authenticator.objects.get().credential_backed_up is False
    authenticator.backed_up = True  # the password manager started syncing it
    assert sign_in(Client(), authenticator).status_code == 200
    assert Authenticator.objects.get().credential_backed_up is True
    authenticator.backed_up = False
    assert sign_in(Client(), authenticator).status_code == 200
    assert Authenticator.objects.get().credential_backed_up is False


def test_counter_refused_by_the_adapter(site, passkey_user, monkeypatch):
    # py_webauthn saw a higher counter, but another request stored a higher one
    # meanwhile: the adapter's conditional update refuses, and so does the flow.
    from webauth.adapters.django import DjangoAdapter

    _user, authenticator = passkey_user
    monkeypatch.setattr(DjangoAdapter, "update_authenticator_counter", lambda self, c, n: None)
    assert_refused(sign_in(Client(), authenticator))


@pytest.mark.parametrize(
    "data",
    [
        "",
        "null",
        "[]",
        "{}",
        "not json",
        '{"id": 1}',
        '{"id": "x", "rawId": "x", "type": "public-key", "response": {}}',
        '{"id": "!!", "rawId": "!!", "type": "public-key", "response": '
        '{"clientDataJSON": "!!", "authenticatorData": "!!", "signature": "!!"}}',
        "[" * 100_000,
        '"' + "a" * 70_000 + '"',
        "\x00",
    ],
    ids=lambda d: ascii(d[:30]),
)
@pytest.mark.parametrize("action", ["authenticate", "register"])
def test_garbage_data(site, client, action, data):
    options_of(client, action=action, email="z@example.com")
    assert_refused(answer(client, action, data))


def test_garbage_inside_a_well_formed_credential(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    data = authenticator.get(options, origin=ORIGIN)
    data["response"]["authenticatorData"] = b64url(b"\x01" * 10)
    assert_refused(answer(browser, "authenticate", data))


def test_a_json_body_with_the_credential_as_an_object(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    body = {"action": "authenticate", "data": authenticator.get(options, origin=ORIGIN)}
    response = browser.post(
        "/auth/callback/passkey",
        json.dumps(body),
        content_type="application/json",
        headers=JSON_HEADERS,
    )
    assert response.status_code == 200 and signed_in_as(response) == "new@example.com"


def test_a_credential_over_64_kib_is_not_read(site, passkey_user):
    """A valid assertion padded past 64 KiB is refused before anything parses it."""
    from webauth.flows.webauthn import MAX_CREDENTIAL_LENGTH

    _user, authenticator = passkey_user
    browser = Client()
    data = authenticator.get(options_of(browser, action="authenticate"), origin=ORIGIN)
    unpadded = len(json.dumps({**data, "padding": ""}))

    def padded(length):
        text = json.dumps({**data, "padding": "a" * (length - unpadded)})
        assert len(text) == length
        return text

    cookie = browser.cookies[CHALLENGE].value
    assert_refused(answer(browser, "authenticate", padded(MAX_CREDENTIAL_LENGTH + 1)))
    assert WebAuthnChallenge.objects.count() == 1  # refused before the challenge was used
    browser.cookies[CHALLENGE] = cookie  # a refusal clears it
    response = answer(browser, "authenticate", padded(MAX_CREDENTIAL_LENGTH))
    assert response.status_code == 200 and signed_in_as(response) == "new@example.com"


@pytest.mark.parametrize("data", [12345, 1.5, True, ["a"], None])
def test_a_json_body_whose_data_is_not_a_credential(site, client, data):
    options_of(client, action="authenticate")
    response = client.post(
        "/auth/callback/passkey",
        json.dumps({"action": "authenticate", "data": data}),
        content_type="application/json",
        headers=JSON_HEADERS,
    )
    assert_refused(response)


def test_a_credential_encoded_twice_is_refused(site, passkey_user):
    """``data`` is the credential's JSON object, not a JSON string holding it.

    py_webauthn would decode a string a second time; webauth reads only what
    Auth.js's client sends.
    """
    _user, authenticator = passkey_user
    browser = Client()
    data = authenticator.get(options_of(browser, action="authenticate"), origin=ORIGIN)
    assert_refused(answer(browser, "authenticate", json.dumps(json.dumps(data))))


def test_no_data_at_all(site, client):
    response = client.post(
        "/auth/callback/passkey", {"action": "authenticate"}, headers=JSON_HEADERS
    )
    assert_refused(response)


@pytest.mark.parametrize("action", ["", "login", None])
def test_an_invalid_action(site, client, action):
    body = {"data": "{}"} if action is None else {"action": action, "data": "{}"}
    response = client.post("/auth/callback/passkey", body)
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"


def test_a_browser_refusal_lands_on_the_error_page(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    response = answer(
        browser, "authenticate", authenticator.get(options, origin=ORIGIN, uv=False), as_json=False
    )
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/error?error=WebAuthnVerificationError"
    page = browser.get(response["Location"])
    assert page.status_code == 200 and b"passkey could not be verified" in page.content


def test_the_callback_is_post_only(site, client):
    response = client.get("/auth/callback/passkey?action=authenticate&data={}")
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"


def test_the_callback_while_the_feature_is_off(site, passkey_user):
    _user, authenticator = passkey_user
    browser = Client()
    options = options_of(browser, action="authenticate")
    site(experimental=False)
    response = answer(
        browser, "authenticate", authenticator.get(options, origin=ORIGIN), error_page=True
    )
    assert response.json()["url"] == "http://testserver/auth/error?error=Configuration"
    assert signed_in_as(response) is None


def test_nothing_secret_reaches_the_logs(site, client, caplog):
    caplog.set_level(logging.DEBUG, logger="webauth")
    authenticator = SoftAuthenticator()
    options = options_of(client, action="register", email="new@example.com")
    binding = jose.decode(token=client.cookies[CHALLENGE].value, secret=SECRET, salt=CHALLENGE)[
        "binding"
    ]
    data = authenticator.create(options, origin="http://evil.example")
    answer(client, "register", data)
    text = caplog.text
    assert "WebAuthnVerificationError" in text
    for secret in (options["challenge"], binding, options["user"]["id"]):
        assert secret not in text


# -- rate limits ---------------------------------------------------------------------------------


def test_options_are_rate_limited(site, client):
    site(rate_limits={"passkey_options": "3/h/ip"})
    for _ in range(3):
        assert ask(client).status_code == 200
    response = ask(client)
    assert response.status_code == 429
    assert response.json()["error"] == "RateLimited" and int(response["Retry-After"]) >= 1
    assert WebAuthnChallenge.objects.count() == 3


def test_failed_verifications_are_rate_limited(site, passkey_user):
    site(rate_limits={"passkey_failed": "3/h/ip"})
    _user, authenticator = passkey_user
    for _ in range(3):
        assert_refused(sign_in(Client(), authenticator, uv=False))
    response = sign_in(Client(), authenticator)  # right, but after three failures
    assert response.status_code == 429
    assert response.json()["url"] == "http://testserver/auth/signin?error=RateLimited"
    assert signed_in_as(response) is None


def test_a_verified_passkey_gives_its_attempt_back(site, passkey_user):
    site(rate_limits={"passkey_failed": "2/h/ip"})
    _user, authenticator = passkey_user
    for _ in range(5):
        assert sign_in(Client(), authenticator).status_code == 200


# -- an async third-party adapter ----------------------------------------------------------------


def test_the_whole_flow_on_the_async_memory_adapter(settings):
    memory = on_memory(settings, MemoryAdapter(), strategy="database")
    authenticator = SoftAuthenticator()
    browser = Client()
    response = register(browser, authenticator)
    assert response.status_code == 200, response.content
    (user,) = memory.users.values()
    assert user.email == "new@example.com"
    assert memory.handles[user.id]
    response = sign_in(Client(), authenticator)
    assert response.status_code == 200, response.content
    assert_refused(sign_in(Client(), authenticator, sign_count=1))


class CountingAdapter(MemoryAdapter):
    """The memory adapter, counting the calls the flow makes of two of its methods."""

    def __init__(self):
        super().__init__()
        self.challenge_uses = 0
        self.backup_updates = 0

    async def use_webauthn_challenge(self, challenge, ceremony, binding):
        self.challenge_uses += 1
        return await super().use_webauthn_challenge(challenge, ceremony, binding)

    async def update_authenticator_backup_state(self, credential_id, backed_up):
        self.backup_updates += 1
        return await super().update_authenticator_backup_state(credential_id, backed_up)


class ChallengesWithoutExpiry(MemoryAdapter):
    """An adapter that hands back a challenge however old it is (its expiry unchecked)."""

    async def use_webauthn_challenge(self, challenge, ceremony, binding):
        with self._passkeys:
            record = self.challenges.get(challenge)
            if record is None or record.ceremony != ceremony or record.binding != binding:
                return None
            return self.challenges.pop(challenge)


class WithoutBackupState(MemoryAdapter):
    """An adapter that keeps no backup state (the method is optional)."""

    update_authenticator_backup_state = None


def on_memory(settings, adapter, strategy="jwt"):
    """Passkeys on *adapter* (one of the memory adapters above)."""
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": adapter,
        "session": {"strategy": strategy},
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey()],
    }
    return adapter


def test_a_browser_without_a_binding_never_reaches_the_adapter(settings):
    adapter = on_memory(settings, CountingAdapter())
    authenticator = SoftAuthenticator()
    assert register(Client(), authenticator).status_code == 200
    assert adapter.challenge_uses == 1
    browser = Client()
    data = authenticator.get(options_of(browser, action="authenticate"), origin=ORIGIN)
    del browser.cookies[CHALLENGE]
    assert_refused(answer(browser, "authenticate", data))
    assert adapter.challenge_uses == 1  # no binding: the adapter was not asked


def test_the_flow_refuses_an_expired_challenge_whatever_the_adapter_says(settings):
    on_memory(settings, ChallengesWithoutExpiry())
    authenticator = SoftAuthenticator()
    with freeze_time("2026-01-01T12:00:00Z") as clock:
        assert register(Client(), authenticator).status_code == 200
        browser = Client()
        options = options_of(browser, action="authenticate")
        clock.tick(timedelta(milliseconds=options["timeout"]))  # the instant it expires
        assert_refused(answer(browser, "authenticate", authenticator.get(options, origin=ORIGIN)))

        browser = Client()
        options = options_of(browser, action="authenticate")
        clock.tick(timedelta(milliseconds=options["timeout"] - 1000))
        response = answer(browser, "authenticate", authenticator.get(options, origin=ORIGIN))
        assert signed_in_as(response) == "new@example.com", response.content


def test_the_backup_state_is_written_only_when_it_changed(settings):
    adapter = on_memory(settings, CountingAdapter())
    authenticator = SoftAuthenticator(backed_up=False)
    assert register(Client(), authenticator).status_code == 200
    assert signed_in_as(sign_in(Client(), authenticator)) == "new@example.com"
    assert adapter.backup_updates == 0  # unchanged: nothing written
    authenticator.backed_up = True
    assert signed_in_as(sign_in(Client(), authenticator)) == "new@example.com"
    assert adapter.backup_updates == 1
    [record] = adapter.authenticators.values()
    assert record.credential_backed_up is True


def test_an_adapter_without_backup_state_still_signs_in(settings):
    adapter = on_memory(settings, WithoutBackupState())
    authenticator = SoftAuthenticator(backed_up=False)
    assert register(Client(), authenticator).status_code == 200
    authenticator.backed_up = True  # changed, and nowhere to write it
    assert signed_in_as(sign_in(Client(), authenticator)) == "new@example.com"
    [record] = adapter.authenticators.values()
    assert record.credential_backed_up is False


class UsersGoMissing(MemoryAdapter):
    """An adapter whose users can vanish while their passkeys stay (no cascade)."""

    gone: frozenset[str] | set[str] = frozenset()

    async def get_user(self, id):
        return None if str(id) in self.gone else await super().get_user(id)


def test_a_passkey_whose_user_is_gone_signs_nobody_in(settings):
    adapter = on_memory(settings, UsersGoMissing())
    authenticator = SoftAuthenticator()
    assert register(Client(), authenticator).status_code == 200
    [user] = adapter.users.values()
    adapter.gone = {user.id}
    assert_refused(sign_in(Client(), authenticator))


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        ("aW1wb3J0ZWQgZnJvbSBBdXRoLmpz", "aW1wb3J0ZWQgZnJvbSBBdXRoLmpz"),  # its own, kept
        ("", None),  # none stored: the credential id
    ],
)
def test_the_sign_in_callback_sees_the_passkeys_account_id(settings, stored, expected):
    adapter = on_memory(settings, MemoryAdapter())
    seen = []

    def record(*, account, **kwargs):
        seen.append(account)
        return True

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"sign_in": record}}
    authenticator = SoftAuthenticator()
    assert register(Client(), authenticator).status_code == 200
    [(credential_id, passkey)] = adapter.authenticators.items()
    passkey.provider_account_id = stored
    seen.clear()
    assert signed_in_as(sign_in(Client(), authenticator)) == "new@example.com"
    [account] = seen
    assert account["providerAccountId"] == (expected or credential_id)
    assert account["type"] == "webauthn" and account["provider"] == "passkey"


class DamagedChallenges(MemoryAdapter):
    """An adapter that hands back a registration challenge with damaged ``user_data``."""

    def __init__(self, damage):
        super().__init__()
        self.damage = damage

    async def use_webauthn_challenge(self, challenge, ceremony, binding):
        record = await super().use_webauthn_challenge(challenge, ceremony, binding)
        if record is not None and ceremony == "register":
            record = dataclasses.replace(record, user_data=self.damage(dict(record.user_data)))
        return record


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: None,
        lambda data: ["not", "a", "mapping"],
        lambda data: {k: v for k, v in data.items() if k != "handle"},
        lambda data: {**data, "handle": ""},
        lambda data: {**data, "handle": 12345},
        lambda data: {k: v for k, v in data.items() if k != "email"},
        lambda data: {**data, "email": ""},
        lambda data: {**data, "email": 12345},
    ],
    ids=[
        "none",
        "a-list",
        "no-handle",
        "empty-handle",
        "a-number",
        "no-email",
        "empty-email",
        "a-number-email",
    ],
)
def test_a_registration_challenge_with_damaged_user_data_creates_nobody(settings, damage):
    adapter = on_memory(settings, DamagedChallenges(damage))
    assert_refused(register(Client(), SoftAuthenticator()))
    assert adapter.users == {} and adapter.authenticators == {}


def test_a_new_accounts_passkey_finished_after_signing_in_is_refused(site, alice):
    """Options asked as a visitor (a new account), answered once signed in as someone."""
    browser = Client()
    options = options_of(browser, action="register", email="new@example.com")
    force_sign_in(browser, alice)
    assert_refused(answer(browser, "register", SoftAuthenticator().create(options, origin=ORIGIN)))
    assert not get_user_model().objects.filter(email="new@example.com").exists()
    assert not Authenticator.objects.exists()


def test_a_registration_that_names_no_transports(settings):
    """Browsers may leave ``transports`` out (``getTransports()`` is recent): none stored."""
    adapter = on_memory(settings, MemoryAdapter())
    browser = Client()
    options = options_of(browser, action="register", email="new@example.com")
    data = SoftAuthenticator().create(options, origin=ORIGIN)
    del data["response"]["transports"]
    assert signed_in_as(answer(browser, "register", data)) == "new@example.com"
    [record] = adapter.authenticators.values()
    assert record.transports is None


# -- configuration and checks --------------------------------------------------------------------


def checks(settings, **webauth):
    settings.WEBAUTH = {"secret": SECRET, "adapter": ADAPTER, **webauth}
    return [(m.id, type(m)) for m in check_config()]


def test_e011_when_the_switch_is_off(settings):
    found = checks(settings, providers=[Passkey()])
    assert ("webauth.E011", Error) in found
    found = checks(settings, providers=[Passkey()], experimental={"enable_webauthn": True})
    assert not [i for i, _ in found if i.startswith("webauth.E")]


@pytest.mark.parametrize(
    ("rp", "expected"),
    [
        ({"id": "example.com", "origins": ["https://app.example.com", "https://example.com"]}, []),
        ({"id": "com", "origins": ["https://example.com"]}, ["webauth.E012"]),
        ({"id": "evil.example", "origins": ["https://example.com"]}, ["webauth.E012"]),
        ({"id": "app.example.com", "origins": ["https://example.com"]}, ["webauth.E012"]),
        ({"id": "ample.com", "origins": ["https://example.com"]}, ["webauth.E012"]),
        ({"id": "localhost", "origins": ["http://localhost:8000"]}, []),
        ({"id": "example.com", "origins": ["http://example.com"]}, ["webauth.W010"]),
        ({"origins": ["http://intranet.example"]}, ["webauth.W010"]),
        # An Android app's origin has no host: neither E012 nor W010 applies to it.
        ({"id": "example.com", "origins": ["https://example.com", ANDROID]}, []),
    ],
)
def test_relying_party_checks(settings, rp, expected):
    found = checks(
        settings, providers=[Passkey(relying_party=rp)], experimental={"enable_webauthn": True}
    )
    assert sorted(i for i, _ in found if i in ("webauth.E012", "webauth.W010")) == expected


@pytest.mark.parametrize(
    ("origins", "problem"),
    [
        (["https://example.com", "android:apk-key-hash:short"], "is not an origin"),
        (["https://example.com", ANDROID + "A"], "is not an origin"),
        (["https://example.com", "ios:bundle-id:com.example"], "is not an origin"),
        ([ANDROID], "list only Android apps"),
    ],
)
def test_android_origins_must_be_well_formed_and_beside_a_web_origin(settings, origins, problem):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey(relying_party={"id": "example.com", "origins": origins})],
    }
    [message] = [m for m in check_config() if m.id == "webauth.E004"]
    assert problem in message.msg


def test_conditional_ui_checks(settings):
    found = checks(
        settings,
        providers=[Passkey(), WebAuthn()],
        experimental={"enable_webauthn": True},
    )
    assert ("webauth.E013", Error) in found
    found = checks(
        settings,
        providers=[Passkey(), WebAuthn(enable_conditional_ui=False)],
        experimental={"enable_webauthn": True},
    )
    assert "webauth.E013" not in [i for i, _ in found]
    found = checks(
        settings,
        providers=[Passkey(form_fields={"email": {"label": "Email", "autocomplete": "email"}})],
        experimental={"enable_webauthn": True},
    )
    assert ("webauth.E013", Error) in found


def test_e008_without_an_adapter(settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": [Passkey()],
        "experimental": {"enable_webauthn": True},
    }
    assert "webauth.E008" in [m.id for m in check_config()]


def test_e008_names_missing_methods(settings):
    class Partial:
        def get_user(self, user_id):
            return None

    found = checks(
        settings, adapter=Partial(), providers=[Passkey()], experimental={"enable_webauthn": True}
    )
    messages = [m for m in check_config() if m.id == "webauth.E008"]
    assert any("use_webauthn_challenge" in m.msg for m in messages), found


@pytest.mark.parametrize(
    "options",
    [
        {"user_verification": "always"},
        {"resident_key": True},
        {"timeout": 0},
        {"timeout": 10**6},
        {"timeout": "300"},
        {"relying_party": {"id": "example.com", "origin": "example.com"}},
        {"relying_party": {"origins": ["https://example.com/path"]}},
        {"relying_party": {"idd": "example.com"}},
        {"relying_party": {"id": "https://example.com"}},
        {"require_user_verification": "yes"},
        {"passkey_name": "no.such.module.fn"},
    ],
)
def test_bad_provider_options(options):
    with pytest.raises(ImproperlyConfigured):
        build_config({"secret": SECRET, "providers": [WebAuthn(**options)]}, lambda _: None)


def test_passkey_defaults():
    passkey, webauthn = Passkey(), WebAuthn()
    assert (passkey.id, passkey.name, passkey.type) == ("passkey", "Passkey", "webauthn")
    assert (passkey.user_verification, passkey.resident_key) == ("required", "required")
    assert (webauthn.id, webauthn.user_verification, webauthn.resident_key) == (
        "webauthn",
        "preferred",
        "preferred",
    )
    assert webauthn.require_user_verification and webauthn.enable_conditional_ui
    assert webauthn.conditional_ui_field == "email"
    rp = webauthn.relying_party_for("https://app.example.com:8443")
    assert (rp.id, rp.name, rp.origins) == (
        "app.example.com",
        "app.example.com:8443",
        ("https://app.example.com:8443",),
    )


@pytest.mark.parametrize(
    ("rp_id", "host", "ok"),
    [
        ("example.com", "example.com", True),
        ("example.com", "app.example.com", True),
        ("example.com", "a.b.example.com", True),
        ("EXAMPLE.com", "App.Example.COM", True),
        ("com", "example.com", False),
        ("ample.com", "example.com", False),
        ("example.com", "example.com.evil.example", False),
        ("localhost", "localhost", True),
        ("127.0.0.1", "127.0.0.1", True),
        ("0.0.1", "127.0.0.1", False),
        ("", "example.com", False),
    ],
)
def test_registrable_suffix(rp_id, host, ok):
    assert is_registrable_suffix(rp_id, host) is ok


@pytest.mark.parametrize(
    ("ua", "name"),
    [
        (CHROME_LINUX, "Chrome on Linux"),
        (
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.1 Safari/605.1.15",
            "Safari on macOS",
        ),
        (
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
            "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
            "Edge on Windows",
        ),
        (
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 "
            "(KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
            "Safari on iPhone",
        ),
        (
            "Mozilla/5.0 (Android 14; Mobile; rv:121.0) Gecko/121.0 Firefox/121.0",
            "Firefox on Android",
        ),
        ("curl/8.0", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_device_names(ua, name):
    assert device_name(ua) == name


def test_a_passkey_name_hook(client, site):
    site(provider=Passkey(passkey_name=lambda aaguid, ua: f"Key {aaguid[:4]}"))
    assert register(client, SoftAuthenticator()).status_code == 200
    assert Authenticator.objects.get().name == "Key 0bad"


def test_the_provider_in_the_providers_list(client, site):
    entry = client.get("/auth/providers").json()["passkey"]
    assert entry == {
        "id": "passkey",
        "name": "Passkey",
        "type": "webauthn",
        "signinUrl": "http://testserver/auth/signin/passkey",
        "callbackUrl": "http://testserver/auth/callback/passkey",
    }


def test_post_signin_redirects_to_the_page(client, site):
    from .support.helpers import csrf_pair

    response = client.post("/auth/signin/passkey", {"csrfToken": csrf_pair(client)})
    assert response.status_code == 302 and response["Location"] == "http://testserver/auth/signin"


# -- pages and tags ------------------------------------------------------------------------------


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def by_id(self, element_id):
        found = [a for _, a in self.elements if a.get("id") == element_id]
        return found[0] if found else None


def elements(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


def test_the_sign_in_page_offers_passkeys(client, site):
    html = client.get("/auth/signin?callbackUrl=/after/").content.decode()
    page = elements(html)
    assert page.by_id("webauth-passkey-signin") is not None
    assert page.by_id("webauth-passkey-register") is not None
    error = page.by_id("webauth-passkey-error")
    assert error["role"] == "alert" and "hidden" in error
    # One identifier field on the page: the password form's, where the browser
    # offers passkeys (autofill); the passkey widgets read it by its id.
    identifier = page.by_id("input-username-for-credentials")
    assert identifier["autocomplete"] == "username webauthn"
    [autofill] = [a for _, a in page.elements if a.get("autocomplete") == "username webauthn"]
    assert autofill is identifier
    # A new account's address has a field of its own (the identifier is a username).
    assert page.by_id("input-email-for-passkey")["autocomplete"] == "email"
    signin, register = [a for _, a in page.elements if "data-webauth-passkeys" in a]
    for container in (signin, register):
        assert container["data-provider"] == "passkey"
        assert container["data-base-url"] == "http://testserver/auth"
        assert container["data-callback-url"] == "http://testserver/after/"
        assert container["data-identifier"] == "input-username-for-credentials"
        assert "hidden" in container and "data-webauth-reveal" in container
    assert signin["data-autofill"] == "true"
    assert register["data-autofill"] == "false"
    scripts = [a["src"] for t, a in page.elements if t == "script"]
    assert scripts == ["/static/webauth/passkeys.js"]
    # The password form is still there.
    assert 'action="http://testserver/auth/callback/credentials"' in html


def test_the_sign_in_page_without_the_switch(client, site):
    site(experimental=False)
    html = client.get("/auth/signin").content.decode()
    assert "webauth-passkey" not in html and "passkeys.js" not in html


def test_the_script_is_served_by_staticfiles():
    from django.contrib.staticfiles import finders

    path = finders.find("webauth/passkeys.js")
    assert path is not None
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for needle in (
        "window.webauth.passkeys",
        "parseRequestOptionsFromJSON",
        "parseCreationOptionsFromJSON",
        "toJSON",
        "signalUnknownCredential",
        'mediation: "conditional"',
        "AbortController",
        "X-Auth-Return-Redirect",
    ):
        assert needle in text


def render(source, request):
    return Template("{% load webauth %}" + source).render(Context({"request": request}))


def request_for(client_user=None):
    request = RequestFactory().get("/account/")
    from django.contrib.auth.models import AnonymousUser

    request.user = AnonymousUser()
    request.COOKIES = {}
    if client_user is not None:
        client = Client()
        value = force_sign_in(client, client_user)
        request.COOKIES[SESSION] = value
    return request


def test_the_signin_tag(site):
    html = render('{% webauth_passkey_signin callback_url="/next/" %}', request_for())
    page = elements(html)
    assert page.by_id("webauth-passkey-signin") is not None
    assert page.by_id("webauth-passkey-register") is None
    (container,) = [a for _, a in page.elements if "data-webauth-passkeys" in a]
    assert container["data-callback-url"] == "http://testserver/next/"


def test_the_register_tag(site, alice):
    anonymous = elements(render("{% webauth_passkey_register %}", request_for()))
    (container,) = [a for _, a in anonymous.elements if "data-webauth-passkeys" in a]
    assert container["data-needs-email"] == "true"
    assert anonymous.by_id("webauth-passkey-register") is not None
    signed_in = elements(render("{% webauth_passkey_register %}", request_for(alice)))
    (container,) = [a for _, a in signed_in.elements if "data-webauth-passkeys" in a]
    assert container["data-needs-email"] == "false"


def test_the_offer_tag_only_for_users_without_a_passkey(site, alice, passkey_user):
    user, _ = passkey_user
    assert render("{% webauth_passkey_offer %}", request_for()).strip() == ""
    assert "webauth-passkey-register" in render("{% webauth_passkey_offer %}", request_for(alice))
    assert render("{% webauth_passkey_offer %}", request_for(user)).strip() == ""


def test_tags_without_an_enabled_provider(site):
    site(experimental=False)
    for tag in ("webauth_passkey_signin", "webauth_passkey_register", "webauth_passkey_offer"):
        assert render(f"{{% {tag} %}}", request_for()).strip() == ""


def test_a_tag_for_an_unknown_provider(site):
    from django.template import TemplateSyntaxError

    with pytest.raises(TemplateSyntaxError):
        render('{% webauth_passkey_signin provider="nope" %}', request_for())
