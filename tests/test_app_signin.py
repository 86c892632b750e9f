"""App sign-in (issue 14): every method as JSON under /auth/app/, no cookie read or set.

A "client" here is a test ``Client`` that keeps no cookie between requests
(:func:`call` uses a fresh one each time, and checks that no answer sets a
cookie), as a native app or a single-page app calling with ``fetch`` would be.
The session token each sign-in answers is then proven to be exactly what the
session cookie would hold: put into that cookie, ``GET /auth/session`` reads it.
OAuth runs against the suite's real OpenID provider (tests/support/idp.py).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import secrets
import time
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.core import mail
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.conf import build_config
from webauth.models import Account, Authenticator, Session, token_hash
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.oauth import OIDC

from .support.app_helpers import (
    APP_REDIRECT,
    APP_SCHEME_REDIRECT,
    IOS_CLIENT_ID,
    hashed,
    register_ios_app,
    s256,
    sdk_id_token,
)
from .support.authenticator import SoftAuthenticator
from .support.helpers import query
from .support.oidc_helpers import (
    CLIENT_ID,
    CLIENT_SECRET,
    REDIRECT_URI,
    authorize,
    plain_oauth2,
    start_idp,
)

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"
ORIGIN = "http://testserver"
SIGNIN = "/auth/app/signin/credentials"
ALICE = {"username": "alice", "password": "correct horse"}

pytestmark = pytest.mark.django_db


# -- the site and the client ----------------------------------------------------------------------


@pytest.fixture
def site(settings):
    """webauth with bearer sessions on, DjangoAdapter, JWT sessions, a password provider."""

    def configure(*, providers=None, **options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": ADAPTER,
            "session": {"strategy": "jwt"},
            "bearer": True,
            "providers": providers or [DjangoCredentials()],
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


def call(path, body=None, *, method="post", client=None, raw=None, token=None, **extra):
    """One request of a client that keeps no cookie; the answer must set none either."""
    client = client or Client()
    headers = dict(extra.pop("headers", {}))
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if method == "get":
        response = client.get(path, body or {}, headers=headers, **extra)
    else:
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        extra.setdefault("content_type", "application/json")
        response = client.post(path, data, headers=headers, **extra)
    assert not response.cookies, f"the app route set cookies: {list(response.cookies)}"
    # The server's own failures only: a misconfiguration, an email that could not leave.
    if response.status_code == 500:
        assert response.json()["error"] in ("Configuration", "EmailSignInError")
    return response


def signed_in(response) -> dict:
    """The token answer of a successful app sign-in."""
    assert response.status_code == 200, response.content
    answer = response.json()
    assert set(answer) == {"sessionToken", "tokenType", "expires", "user"}
    assert answer["tokenType"] == "Bearer"
    assert answer["expires"].endswith("Z")
    assert "no-store" in response["Cache-Control"]
    return answer


def session_of(token: str) -> dict | None:
    """What GET /auth/session shows for a browser holding *token* as its session cookie."""
    browser = Client()
    browser.cookies[SESSION] = token
    return browser.get("/auth/session").json()


def whoami(token: str) -> str | None:
    """Who a view sees signed in for a request with *token* as its bearer token."""
    response = Client().get("/whoami/", headers={"Authorization": f"Bearer {token}"})
    assert not response.cookies
    return response.json()["username"]


def claims_of(token: str) -> dict:
    claims = jose.decode(token=token, secret=SECRET, salt=SESSION)
    assert claims is not None
    return claims


def error_of(response, status: int, kind: str) -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error"] == kind, body
    return body


# -- configuration --------------------------------------------------------------------------------


def config(**options):
    return build_config({"secret": SECRET, **options}, lambda name: None)


def test_bearer_and_app_redirect_uris_are_off_by_default():
    built = config()
    assert built.bearer is False
    assert built.app_redirect_uris == ()


@pytest.mark.parametrize(
    "uri",
    [
        APP_SCHEME_REDIRECT,
        "com.example.app://callback",
        "https://app.example.com/oauth/callback",
        "http://127.0.0.1/callback",
        "http://[::1]:8080/callback",
        "http://localhost/callback",
    ],
)
def test_app_redirect_uris_accepts_native_app_uris(uri):
    assert config(app_redirect_uris=[uri]).app_redirect_uris == (uri,)


@pytest.mark.parametrize(
    "value, problem",
    [
        ("https://app.example.com/cb", "must be a list"),
        ([42], "is not a string"),
        ([""], "is not a string"),
        (["https://*.example.com/cb"], "wildcard"),
        (["https://app.example.com/cb#x"], "fragment"),
        (["http://app.example.com/cb"], "loopback"),
        (["javascript:alert(1)"], "no browser may be sent to"),
        (["https:///cb"], "no host"),
        (["/relative/path"], "no scheme"),
        (["com.example.app:"], "nothing after its scheme"),
        (["https://app.example.com/a b"], "space"),
    ],
)
def test_app_redirect_uris_refuses_what_is_not_an_exact_safe_uri(value, problem):
    with pytest.raises(ImproperlyConfigured, match=problem):
        config(app_redirect_uris=value)


def test_app_client_ids_must_be_a_list_of_ids():
    assert OIDC(id="x", app_client_ids=["a", "b"]).app_client_ids == ("a", "b")
    with pytest.raises(ImproperlyConfigured, match="app_client_ids"):
        config(providers=[OIDC(id="x", issuer="https://i.example", app_client_ids="one")])
    with pytest.raises(ImproperlyConfigured, match="app_client_ids"):
        config(providers=[OIDC(id="x", issuer="https://i.example", app_client_ids=[""])])


# -- the ID token's audiences ---------------------------------------------------------------------


def audience_check(aud, azp=None, *, app_ids=()):
    """Validate an HS256 ID token for ``aud``/``azp`` as the exchange does (None: accepted)."""
    from jwcrypto import jwk, jws

    from webauth.conf import get_config
    from webauth.oauth.idtoken import InvalidIDToken, validate_id_token

    secret = "the-client-secret-0123456789abcdef"
    provider = OIDC(
        id="x",
        issuer="https://idp.example",
        client_id="web-client",
        client_secret=secret,
        id_token_signing_algs=("HS256",),
    )
    now = int(time.time())
    payload = {"iss": "https://idp.example", "aud": aud, "sub": "u", "exp": now + 60, "iat": now}
    if azp is not None:
        payload["azp"] = azp
    token = jws.JWS(json.dumps(payload))
    token.add_signature(jwk.JWK.from_password(secret), alg="HS256", protected='{"alg":"HS256"}')
    try:
        validate_id_token(
            get_config(),
            provider,
            token.serialize(compact=True),
            issuer="https://idp.example",
            jwks_uri=None,
            nonce=None,
            audiences=app_ids,
        )
    except InvalidIDToken as exc:
        return str(exc)
    return None


def test_an_app_client_id_is_accepted_as_the_audience_only_when_listed(settings):
    assert audience_check("web-client") is None
    assert "aud" in audience_check("ios-app")
    assert audience_check("ios-app", app_ids=("ios-app",)) is None


def test_an_app_client_id_is_accepted_as_the_authorized_party_only_when_listed(settings):
    # Google on Android: aud is the server's (web) client id, azp the app's.
    assert "azp" in audience_check("web-client", "android-app")
    assert audience_check("web-client", "android-app", app_ids=("android-app",)) is None
    assert "azp" in audience_check(["web-client", "other"], "other", app_ids=("android-app",))
    assert "aud" in audience_check("other", "android-app", app_ids=("android-app",))


# -- the routes -----------------------------------------------------------------------------------


APP_PATHS = [
    ("post", "/auth/app/signin/credentials"),
    ("post", "/auth/app/callback/credentials"),
    ("get", "/auth/app/webauthn-options/passkey"),
    ("post", "/auth/app/idtoken/example"),
    ("post", "/auth/app/authorize/example"),
    ("post", "/auth/app/token/example"),
]


@pytest.mark.parametrize("method, path", APP_PATHS)
def test_the_app_routes_do_not_exist_without_bearer(site, method, path):
    site(bearer=False)
    error_of(call(path, method=method), 404, "UnknownAction")


def test_an_unknown_provider_or_one_of_another_kind_is_404(site):
    error_of(call("/auth/app/signin/nobody", {}), 404, "InvalidProvider")
    error_of(call("/auth/app/idtoken/credentials", {}), 404, "InvalidProvider")
    error_of(call("/auth/app/callback/credentials", {}), 404, "InvalidProvider")
    error_of(call("/auth/app/webauthn-options/credentials", method="get"), 404, "InvalidProvider")


def test_a_route_answers_only_its_method(site):
    response = call("/auth/app/signin/credentials", method="get")
    error_of(response, 405, "UnknownAction")
    assert response["Allow"] == "POST"
    response = Client().put("/auth/app/signin/credentials", "{}", content_type="application/json")
    error_of(response, 405, "UnknownAction")
    response = call("/auth/app/webauthn-options/passkey", {})
    assert error_of(response, 405, "UnknownAction") and response["Allow"] == "GET"


def test_the_url_names(site):
    from django.urls import reverse

    kwargs = {"provider_id": "google"}
    assert reverse("webauth:app-idtoken", kwargs=kwargs) == "/auth/app/idtoken/google"
    assert reverse("webauth:app-token", kwargs=kwargs) == "/auth/app/token/google"
    assert (
        reverse("webauth:app-webauthn-options", kwargs={"provider_id": "passkey"})
        == "/auth/app/webauthn-options/passkey"
    )


def test_a_trailing_slash_is_accepted(site, alice):
    signed_in(call(SIGNIN + "/", ALICE))


# -- hostile bodies -------------------------------------------------------------------------------


HOSTILE_BODIES = [
    pytest.param("not json", id="not-json"),
    pytest.param("[1, 2]", id="array"),
    pytest.param('"text"', id="string"),
    pytest.param("null", id="null"),
    pytest.param("", id="empty"),
    pytest.param("[" * 100_000 + "]" * 100_000, id="deep-nesting"),
    pytest.param('{"a": ' + "9" * 5000 + "}", id="huge-number"),
    pytest.param(b"\xff\xfe{}", id="not-utf8"),
]


@pytest.mark.parametrize("raw", HOSTILE_BODIES)
@pytest.mark.parametrize(
    "path",
    [
        "/auth/app/signin/credentials",
        "/auth/app/signin/email",
        "/auth/app/callback/email",
        "/auth/app/callback/passkey",
        "/auth/app/idtoken/example",
        "/auth/app/authorize/example",
        "/auth/app/token/example",
    ],
)
def test_a_body_that_is_no_json_object_is_400(site, raw, path):
    site(
        providers=[
            DjangoCredentials(),
            Email(from_email="no-reply@example.com"),
            Passkey(),
            OIDC(id="example", issuer="https://idp.invalid", client_id="c", client_secret="s"),
        ],
        experimental={"enable_webauthn": True},
    )
    body = error_of(call(path, raw=raw), 400, "InvalidRequest")
    assert body["message"]


def test_the_longest_fields_an_app_may_send(site, alice):
    from webauth.flows import app as app_flows

    assert app_flows.MAX_FIELD_LENGTH == 16 * 1024  # an ID token is a few KB
    assert app_flows.MAX_REDIRECT_URI_LENGTH == 2048
    assert (app_flows.NONCE_LENGTHS.start, app_flows.NONCE_LENGTHS.stop) == (16, 513)
    # A credentials field of exactly 16384 characters is read (and refused as a
    # password); one more is no field at all. null is a value a form may send.
    right = call(SIGNIN, {**ALICE, "password": "p" * 16384, "remember": None})
    error_of(right, 401, "CredentialsSignin")
    error_of(call(SIGNIN, {**ALICE, "password": "p" * 16385}), 400, "InvalidRequest")
    signed_in(call(SIGNIN, {**ALICE, "remember": None}))


def test_a_body_must_be_sent_as_json(site):
    response = call("/auth/app/signin/credentials", raw="username=a", content_type="text/plain")
    error_of(response, 400, "InvalidRequest")


def test_a_body_with_more_fields_than_a_form_may_have_is_400(site, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10
    body = {f"field{i}": "x" for i in range(11)}
    error_of(call("/auth/app/signin/credentials", body), 400, "InvalidRequest")


def test_a_body_over_djangos_limit_is_400(site, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = call("/auth/app/signin/credentials", {"username": "a" * 2000, "password": "x"})
    error_of(response, 400, "InvalidRequest")


# -- the shared end: one sign-in, two answers -----------------------------------------------------


def test_credentials_sign_in_answers_the_session_cookies_value(site, alice):
    response = call(SIGNIN, ALICE)
    answer = signed_in(response)
    assert claims_of(answer["sessionToken"])["sub"] == str(alice.pk)
    assert answer["user"] == {
        "name": "Alice",
        "email": "alice@example.com",
    }  # no image on a Django user: left out (issue 13, point 11)
    session = session_of(answer["sessionToken"])
    assert session["user"]["email"] == "alice@example.com"
    assert session["expires"][:16] == answer["expires"][:16]
    assert whoami(answer["sessionToken"]) == "alice"


def test_the_token_under_database_sessions_is_the_stored_sessions(site, alice):
    site(session={"strategy": "database"})
    response = call(
        "/auth/app/signin/credentials",
        {"username": "alice", "password": "correct horse"},
        HTTP_USER_AGENT="ExampleApp/1.0 (iOS)",
    )
    answer = signed_in(response)
    stored = Session.objects.get(token_hash=token_hash(answer["sessionToken"]))
    assert stored.user_id == alice.pk and stored.user_agent == "ExampleApp/1.0 (iOS)"
    assert session_of(answer["sessionToken"])["user"]["email"] == "alice@example.com"
    assert whoami(answer["sessionToken"]) == "alice"


def test_callbacks_and_events_run_as_for_a_cookie_sign_in(site, alice):
    seen = []

    def jwt(token, user=None, account=None, trigger=None, **kw):
        seen.append(("jwt", trigger))
        if trigger == "signIn":
            token["role"] = "editor"
        return token

    def session(session, token, **kw):
        seen.append(("session", None))
        session["user"]["role"] = token.get("role")
        return session

    def on_sign_in(**message):
        seen.append(("event", message["account"]["provider"]))

    def sign_in(user, account, credentials=None, **kw):
        seen.append(("sign_in", credentials["username"]))
        return True

    logged_in = []
    receiver = lambda sender, user, **kw: logged_in.append(user.pk)  # noqa: E731
    user_logged_in.connect(receiver)
    try:
        site(
            callbacks={"jwt": jwt, "session": session, "sign_in": sign_in},
            events={"sign_in": on_sign_in},
        )
        response = call(SIGNIN, ALICE)
    finally:
        user_logged_in.disconnect(receiver)
    answer = signed_in(response)
    # sign_in, the jwt callback at sign-in, the event; then the session as the app will read it.
    assert seen == [
        ("sign_in", "alice"),
        ("jwt", "signIn"),
        ("event", "credentials"),
        ("jwt", None),
        ("session", None),
    ]
    assert answer["user"]["role"] == "editor"
    assert claims_of(answer["sessionToken"])["role"] == "editor"
    assert logged_in == [alice.pk]
    alice.refresh_from_db()
    assert alice.last_login is not None


def test_a_refusing_sign_in_callback_is_401(site, alice):
    site(callbacks={"sign_in": lambda **kw: False})
    response = call(SIGNIN, ALICE)
    error_of(response, 401, "AccessDenied")


def test_a_sign_in_callback_that_redirects_gives_the_app_the_url(site, alice):
    site(callbacks={"sign_in": lambda **kw: "/verify-phone/"})
    response = call(SIGNIN, ALICE)
    body = error_of(response, 401, "AccessDenied")
    assert body["url"] == "http://testserver/verify-phone/"


def test_a_redirecting_sign_in_callback_is_logged_as_such(site, alice, caplog):
    site(callbacks={"sign_in": lambda **kw: "/verify-phone/"})
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        call(SIGNIN, ALICE)
    assert "AccessDenied: The sign_in callback redirected the sign-in." in caplog.text


def test_the_new_session_is_read_back_without_loading_the_user_again(site, alice):
    # The user the sign-in found (an adapter record with its model instance) is
    # handed to the read-back: no second lookup through the adapter.
    from webauth.adapters.django import DjangoAdapter

    loads = []

    class Counting(DjangoAdapter):
        def get_user(self, id):
            loads.append(id)
            return super().get_user(id)

    site(adapter=Counting(), providers=[Email(from_email="Example <no-reply@example.com>")])
    binding = ask_code("alice@example.com")
    signed_in(redeem("alice@example.com", code_in(mail.outbox[-1]), binding))
    assert loads == []


def test_a_session_callback_that_returns_no_session_is_a_server_error(site, alice, caplog):
    site(callbacks={"session": lambda **kw: None})
    with caplog.at_level(logging.ERROR, logger="webauth"):
        error_of(call(SIGNIN, ALICE), 500, "Configuration")
    assert "JWTSessionError: The new session could not be read back." in caplog.text


def test_a_jwt_callback_that_returns_nothing_makes_no_session(site, alice):
    site(callbacks={"jwt": lambda **kw: None})
    response = call(SIGNIN, ALICE)
    error_of(response, 401, "AccessDenied")


def test_an_inactive_user_is_refused(site, alice):
    alice.is_active = False
    alice.save()
    # ModelBackend refuses inactive users itself: the answer is a refused password.
    response = call(SIGNIN, ALICE)
    error_of(response, 401, "CredentialsSignin")


def test_cookies_are_neither_read_nor_set(site, alice, client_factory):
    # A single-page app on the site's own origin sends the browser's cookies along:
    # another user's session, a Django session and CSRF cookie. None is used or renewed.
    bob = get_user_model().objects.create_user("bob", email="bob@example.com", password="pw-bob-1")
    browser = client_factory()
    browser.force_login(bob)
    from webauth.test import session_cookie_for

    name, value = session_cookie_for(bob)
    browser.cookies[name] = value
    browser.cookies["csrftoken"] = "a" * 32
    django_session = browser.cookies["sessionid"].value
    response = call(
        "/auth/app/signin/credentials",
        {"username": "alice", "password": "correct horse"},
        client=browser,
    )
    answer = signed_in(response)
    assert claims_of(answer["sessionToken"])["sub"] == str(alice.pk)
    assert browser.cookies["sessionid"].value == django_session


# -- credentials ----------------------------------------------------------------------------------


def test_wrong_credentials_are_401_with_the_code(site, alice):
    response = call("/auth/app/signin/credentials", {"username": "alice", "password": "wrong"})
    body = error_of(response, 401, "CredentialsSignin")
    assert body["code"] == "credentials"


def test_credentials_of_the_wrong_type_are_400(site, alice):
    for body in (
        {"username": ["alice"], "password": "correct horse"},
        {"username": {"$ne": 1}, "password": "correct horse"},
        {"username": "alice", "password": "x" * 20_000},
    ):
        error_of(call("/auth/app/signin/credentials", body), 400, "InvalidRequest")
    # Numbers and booleans pass as they would in a form's JSON: authorize decides.
    response = call("/auth/app/signin/credentials", {"username": 42, "password": True})
    error_of(response, 401, "CredentialsSignin")


def test_failed_credentials_are_rate_limited_as_the_form_is(site, alice):
    for _ in range(5):
        call("/auth/app/signin/credentials", {"username": "alice", "password": "wrong"})
    response = call("/auth/app/signin/credentials", {"username": "alice", "password": "wrong"})
    body = error_of(response, 429, "RateLimited")
    assert int(response["Retry-After"]) == body["retryAfter"] >= 1
    # The limit is the form's own: the browser's route is refused as well.
    browser = Client()
    token = browser.get("/auth/csrf").json()["csrfToken"]
    refused = browser.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "alice", "password": "wrong"},
        headers={"Accept": "application/json", "X-Auth-Return-Redirect": "1"},
    )
    assert refused.status_code == 429


def test_a_right_password_gives_its_failure_back(site, alice):
    for _ in range(4):
        call("/auth/app/signin/credentials", {"username": "alice", "password": "wrong"})
    for _ in range(3):
        signed_in(call(SIGNIN, ALICE))


# -- email codes ----------------------------------------------------------------------------------


@pytest.fixture
def email_site(site):
    site(providers=[Email(from_email="Example <no-reply@example.com>")])


def code_in(message) -> str:
    (code,) = re.findall(r"\b([0-9A-Z]{4}-[0-9A-Z]{4})\b", message.body)
    return code


def ask_code(address: str) -> str:
    """Ask for a code for *address* as an app does; the binding the answer carries."""
    response = call("/auth/app/signin/email", {"email": address})
    assert response.status_code == 200, response.content
    answer = response.json()
    assert set(answer) == {"sent", "binding"} and answer["sent"] is True
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", answer["binding"])
    return answer["binding"]


def redeem(address: str, code: str, binding: str | None):
    body = {"email": address, "code": code}
    if binding is not None:
        body["binding"] = binding
    return call("/auth/app/callback/email", body)


def test_email_code_sign_in(email_site, alice):
    binding = ask_code("Alice@Example.com")
    (message,) = mail.outbox
    assert message.to == ["alice@example.com"]
    assert binding not in message.body and binding not in message.alternatives[0][0]
    answer = signed_in(redeem("alice@example.com", code_in(message), binding))
    assert claims_of(answer["sessionToken"])["sub"] == str(alice.pk)
    # Used up.
    error_of(redeem("alice@example.com", code_in(message), binding), 401, "Verification")


def test_an_unknown_address_gets_the_same_answer_and_a_new_account(email_site):
    binding = ask_code("new@example.com")
    code = code_in(mail.outbox[-1])
    answer = signed_in(redeem("new@example.com", code, binding))
    user = get_user_model().objects.get(email="new@example.com")
    assert claims_of(answer["sessionToken"])["sub"] == str(user.pk)
    assert Account.objects.filter(user=user, provider="email").exists()
    assert whoami(answer["sessionToken"]) == user.get_username()


def test_a_code_needs_the_binding_of_the_request_that_asked_for_it(email_site, alice):
    # Someone who reads the code out of the message (over a shoulder, in a mail
    # scanner's log) has no binding: nothing they send redeems it.
    binding = ask_code("alice@example.com")
    code = code_in(mail.outbox[-1])
    error_of(redeem("alice@example.com", code, None), 400, "InvalidRequest")
    other = "A" * 43 if binding != "A" * 43 else "B" * 43
    error_of(redeem("alice@example.com", code, other), 401, "Verification")
    error_of(redeem("alice@example.com", code, binding[:-1]), 400, "InvalidRequest")
    # Each try was a wrong code for the grant; the app that asked still signs in.
    answer = signed_in(redeem("alice@example.com", code, binding))
    assert claims_of(answer["sessionToken"])["sub"] == str(alice.pk)


def test_a_browsers_code_is_not_redeemable_through_the_app_route(client, email_site, alice):
    # The browser asks; its binding is in its encrypted pending cookie only.
    token = client.get("/auth/csrf").json()["csrfToken"]
    client.post("/auth/signin/email", {"csrfToken": token, "email": "alice@example.com"})
    code = code_in(mail.outbox[-1])
    for binding in (None, "A" * 43):
        response = redeem("alice@example.com", code, binding)
        assert response.status_code in (400, 401) and "sessionToken" not in response.json()
    # The browser that asked still can.
    token = client.get("/auth/csrf").json()["csrfToken"]
    response = client.post("/auth/callback/email", {"csrfToken": token, "code": code})
    assert response.status_code == 302 and "authjs.session-token" in response.cookies


def test_an_apps_code_is_not_redeemable_in_a_browser(client, email_site, alice):
    ask_code("alice@example.com")
    code = code_in(mail.outbox[-1])
    # A browser that asked for a sign-in of its own holds a pending cookie for
    # the address; its own request voided the app's grant, and the app's code
    # is no code of its grant.
    token = client.get("/auth/csrf").json()["csrfToken"]
    client.post("/auth/signin/email", {"csrfToken": token, "email": "alice@example.com"})
    response = client.post("/auth/callback/email", {"csrfToken": token, "code": code})
    assert "authjs.session-token" not in response.cookies


def test_wrong_codes_use_up_the_grant(email_site, alice, settings):
    # The grant's own limit, with the rate limit (which would refuse first) out of the way.
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"code_failed": False}}
    binding = ask_code("alice@example.com")
    code = code_in(mail.outbox[-1])
    for _ in range(5):
        error_of(redeem("alice@example.com", "0000-0000", binding), 401, "Verification")
    # void after code_max_attempts
    error_of(redeem("alice@example.com", code, binding), 401, "Verification")


def test_a_code_is_only_good_for_its_own_address(email_site, alice):
    get_user_model().objects.create_user("bob", email="bob@example.com")
    binding = ask_code("alice@example.com")
    code = code_in(mail.outbox[-1])
    error_of(redeem("bob@example.com", code, binding), 401, "Verification")


def test_an_ask_the_sign_in_callback_sends_elsewhere_is_401_with_its_url(site, alice):
    def sign_in(*, user, account, email=None, **kwargs):
        if email and email.get("verification_request") and user.email == "alice@example.com":
            return "/blocked/"
        return True

    site(
        providers=[Email(from_email="Example <no-reply@example.com>")],
        callbacks={"sign_in": sign_in},
    )
    refused = error_of(
        call("/auth/app/signin/email", {"email": "alice@example.com"}), 401, "AccessDenied"
    )
    assert refused["url"] == "http://testserver/blocked/"
    assert not mail.outbox
    # Another address is mailed as usual.
    assert ask_code("bob@example.com")


def test_email_requests_are_rate_limited(email_site):
    for _ in range(5):
        assert call("/auth/app/signin/email", {"email": "x@example.com"}).status_code == 200
    error_of(call("/auth/app/signin/email", {"email": "x@example.com"}), 429, "RateLimited")


def test_wrong_codes_are_rate_limited(email_site, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"code_failed": "3/h/ip"}}
    binding = ask_code("x@example.com")
    for _ in range(3):
        redeem("x@example.com", "0000-0000", binding)
    error_of(redeem("x@example.com", "0000-0000", binding), 429, "RateLimited")


@pytest.mark.parametrize(
    "body, status, kind",
    [
        ({"email": "not an address"}, 400, "EmailSignInError"),
        ({"email": ["a@example.com"]}, 400, "InvalidRequest"),
        ({"email": "a@example.com" * 1000}, 400, "InvalidRequest"),
        ({}, 400, "InvalidRequest"),
    ],
)
def test_a_bad_address_is_400(email_site, body, status, kind):
    response = error_of(call("/auth/app/signin/email", body), status, kind)
    if kind == "EmailSignInError":
        assert response["code"] == "invalid_email"
    assert not mail.outbox


def test_a_code_of_64_characters_is_read_and_one_of_65_is_not(email_site, alice):
    binding = ask_code("alice@example.com")
    error_of(redeem("alice@example.com", "A" * 64, binding), 401, "Verification")
    error_of(redeem("alice@example.com", "A" * 65, binding), 400, "InvalidRequest")
    error_of(redeem("alice@example.com", "", binding), 400, "InvalidRequest")


def test_the_app_requests_message_links_back_to_the_site(email_site, alice):
    ask_code("alice@example.com")
    (link,) = re.findall(r"http://testserver/auth/callback/email\?\S+", mail.outbox[-1].body)
    assert query(link)["callbackUrl"] == "http://testserver"


@pytest.mark.parametrize(
    "body, kind",
    [
        ({"email": "alice@example.com", "binding": "b" * 43}, "InvalidRequest"),
        ({"email": "alice@example.com", "code": 12345678, "binding": "b" * 43}, "InvalidRequest"),
        ({"email": "alice@example.com", "code": "x" * 100, "binding": "b" * 43}, "InvalidRequest"),
        ({"code": "ABCD-EFGH", "binding": "b" * 43}, "InvalidRequest"),
        ({"email": "alice@example.com", "code": "ABCD-EFGH"}, "InvalidRequest"),
        ({"email": "alice@example.com", "code": "ABCD-EFGH", "binding": 7}, "InvalidRequest"),
        (
            {"email": "alice@example.com", "code": "ABCD-EFGH", "binding": "b" * 44},
            "InvalidRequest",
        ),
        (
            {"email": "alice@example.com", "code": "ABCD-EFGH", "binding": "b=" * 21 + "b"},
            "InvalidRequest",
        ),
        ({"email": "nope", "code": "ABCD-EFGH", "binding": "b" * 43}, "EmailSignInError"),
    ],
)
def test_a_bad_redemption_is_400(email_site, body, kind):
    error_of(call("/auth/app/callback/email", body), 400, kind)


def test_a_provider_that_sends_only_links_has_no_app_sign_in(site):
    site(providers=[Email(from_email="no-reply@example.com", code=None)])
    error_of(call("/auth/app/signin/email", {"email": "a@example.com"}), 404, "InvalidProvider")
    error_of(
        call("/auth/app/callback/email", {"email": "a@example.com", "code": "1"}),
        404,
        "InvalidProvider",
    )


def test_a_failed_delivery_is_the_servers_error(site):
    def broken(**kwargs):
        raise OSError("smtp down")

    site(providers=[Email(from_email="no-reply@example.com", send_verification_request=broken)])
    response = call("/auth/app/signin/email", {"email": "a@example.com"})
    error_of(response, 500, "EmailSignInError")


# -- passkeys -------------------------------------------------------------------------------------


@pytest.fixture
def passkey_site(site):
    site(
        providers=[Passkey(), DjangoCredentials()],
        experimental={"enable_webauthn": True},
    )


def app_options(token=None, **query):
    response = call("/auth/app/webauthn-options/passkey", query, method="get", token=token)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) == {"action", "options", "binding"}
    return body


def test_passkey_registration_and_sign_in(passkey_site):
    authenticator = SoftAuthenticator()
    asked = app_options(action="register", email="new@example.com")
    assert asked["action"] == "register"
    data = authenticator.create(asked["options"], origin=ORIGIN)
    registered = signed_in(
        call(
            "/auth/app/callback/passkey",
            {"action": "register", "data": data, "binding": asked["binding"]},
        )
    )
    user = get_user_model().objects.get(email="new@example.com")
    assert claims_of(registered["sessionToken"])["sub"] == str(user.pk)
    assert Authenticator.objects.filter(user=user).count() == 1

    asked = app_options(action="authenticate")
    data = authenticator.get(asked["options"], origin=ORIGIN)
    body = {"action": "authenticate", "data": json.dumps(data), "binding": asked["binding"]}
    answer = signed_in(call("/auth/app/callback/passkey", body))
    assert claims_of(answer["sessionToken"])["sub"] == str(user.pk)
    assert whoami(answer["sessionToken"]) == user.get_username()
    # The challenge was used up: the same assertion again finds nothing.
    replay = error_of(call("/auth/app/callback/passkey", body), 401, "WebAuthnVerificationError")
    assert "unknownCredential" not in replay


#: A native Android app's origin (Credential Manager's), and another app's.
ANDROID = "android:apk-key-hash:" + "Xu3H0G2lA4JtqV7nZx1pF8cYbQwR5sKmT9oLdE6vU0g"
OTHER_ANDROID = "android:apk-key-hash:" + "q1w2e3r4t5y6u7i8o9p0a1s2d3f4g5h6j7k8l9z0x1c"


def test_an_android_apps_passkey_signs_in_where_the_origin_is_listed(site):
    site(
        providers=[
            Passkey(relying_party={"id": "testserver", "origins": [ORIGIN, ANDROID]}),
            DjangoCredentials(),
        ],
        experimental={"enable_webauthn": True},
    )
    authenticator = SoftAuthenticator()
    asked = app_options(action="register", email="droid@example.com")
    data = authenticator.create(asked["options"], origin=ANDROID)
    body = {"action": "register", "data": data, "binding": asked["binding"]}
    registered = signed_in(call("/auth/app/callback/passkey", body))
    user = get_user_model().objects.get(email="droid@example.com")
    assert claims_of(registered["sessionToken"])["sub"] == str(user.pk)
    # Signed in from the app, then from the site's own pages' origin: one passkey, both ways.
    for origin in (ANDROID, ORIGIN):
        asked = app_options(action="authenticate")
        data = authenticator.get(asked["options"], origin=origin)
        body = {"action": "authenticate", "data": data, "binding": asked["binding"]}
        assert whoami(signed_in(call("/auth/app/callback/passkey", body))["sessionToken"])
    # Another app (another signing key) is refused.
    asked = app_options(action="authenticate")
    data = authenticator.get(asked["options"], origin=OTHER_ANDROID)
    body = {"action": "authenticate", "data": data, "binding": asked["binding"]}
    error_of(call("/auth/app/callback/passkey", body), 401, "WebAuthnVerificationError")


def test_an_android_origin_is_refused_unless_listed(passkey_site):
    authenticator = SoftAuthenticator()
    asked = app_options(action="register", email="droid@example.com")
    data = authenticator.create(asked["options"], origin=ANDROID)
    body = {"action": "register", "data": data, "binding": asked["binding"]}
    error_of(call("/auth/app/callback/passkey", body), 401, "WebAuthnVerificationError")
    assert not get_user_model().objects.filter(email="droid@example.com").exists()


def test_a_passkey_needs_the_binding_its_options_gave(passkey_site):
    authenticator = SoftAuthenticator()
    asked = app_options(action="register", email="new@example.com")
    data = authenticator.create(asked["options"], origin=ORIGIN)
    other = app_options(action="register", email="other@example.com")["binding"]
    for binding in (None, "", 42, "x" * 10, other):
        body = {"action": "register", "data": data}
        if binding is not None:
            body["binding"] = binding
        error_of(call("/auth/app/callback/passkey", body), 401, "WebAuthnVerificationError")
    assert not get_user_model().objects.filter(email="new@example.com").exists()


def test_an_unknown_passkey_is_named_for_the_app_to_forget(passkey_site):
    asked = app_options(action="authenticate")
    stranger = SoftAuthenticator()
    stranger.create(
        {"rp": {"id": "testserver"}, "user": {"id": "AAAA"}, "challenge": "x"}, origin=ORIGIN
    )
    data = stranger.get(asked["options"], origin=ORIGIN)
    body = {"action": "authenticate", "data": data, "binding": asked["binding"]}
    refused = error_of(call("/auth/app/callback/passkey", body), 401, "WebAuthnVerificationError")
    assert refused["unknownCredential"]["rpId"] == "testserver"


def test_a_signed_in_app_adds_a_passkey_to_its_user(passkey_site, alice):
    token = signed_in(call(SIGNIN, ALICE))["sessionToken"]
    asked = app_options(token=token, action="register")
    assert asked["options"]["user"]["name"] == "alice@example.com"
    data = SoftAuthenticator().create(asked["options"], origin=ORIGIN)
    body = {"action": "register", "data": data, "binding": asked["binding"]}
    answer = signed_in(call("/auth/app/callback/passkey", body, token=token))
    assert claims_of(answer["sessionToken"])["sub"] == str(alice.pk)
    assert Authenticator.objects.filter(user=alice).count() == 1


@pytest.mark.parametrize("token", ["garbage", "e30." * 4000, "x" * 20_000])
def test_an_unusable_bearer_token_is_a_visitor(passkey_site, token):
    asked = app_options(token=token, action="register", email="new@example.com")
    assert asked["action"] == "register"


def test_a_session_cookie_does_not_sign_the_app_in(passkey_site, alice):
    # Only the Authorization header says who is signed in: with the cookie alone,
    # a registration without an address cannot be decided.
    from webauth.test import session_cookie_for

    browser = Client()
    name, value = session_cookie_for(alice)
    browser.cookies[name] = value
    response = call(
        "/auth/app/webauthn-options/passkey", {"action": "register"}, method="get", client=browser
    )
    body = error_of(response, 400, "InvalidRequest")
    assert body["message"].startswith("the ceremony cannot be decided")


def test_an_unknown_ceremony_is_400(passkey_site):
    response = call("/auth/app/webauthn-options/passkey", {"action": "nothing"}, method="get")
    body = error_of(response, 400, "InvalidRequest")
    assert body["message"] == "action must be 'register' or 'authenticate'"


@pytest.mark.parametrize(
    "body, status, kind",
    [
        ({"action": "nothing", "data": "{}", "binding": "b" * 43}, 400, "InvalidRequest"),
        ({"action": ["register"], "data": "{}", "binding": "b" * 43}, 400, "InvalidRequest"),
        ({"action": "register", "data": "not json", "binding": "b" * 43}, 401, "WebAuthn"),
        ({"action": "register", "data": ["x"], "binding": "b" * 43}, 401, "WebAuthn"),
        ({"action": "register", "data": "x" * 70_000, "binding": "b" * 43}, 401, "WebAuthn"),
        ({"action": "authenticate", "data": {"id": 1}, "binding": "b" * 43}, 401, "WebAuthn"),
    ],
)
def test_bad_passkey_requests_are_refused_not_crashed(passkey_site, body, status, kind):
    kind = "WebAuthnVerificationError" if kind == "WebAuthn" else kind
    error_of(call("/auth/app/callback/passkey", body), status, kind)


def test_passkey_limits_are_the_routes(passkey_site, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"passkey_options": "2/h/ip"}}
    app_options(action="authenticate")
    app_options(action="authenticate")
    response = call("/auth/app/webauthn-options/passkey", {"action": "authenticate"}, method="get")
    error_of(response, 429, "RateLimited")


def test_failed_passkeys_are_limited_as_the_routes(passkey_site, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"passkey_failed": "2/h/ip"}}
    body = {"action": "authenticate", "data": "{}", "binding": "b" * 43}
    for _ in range(2):
        error_of(call("/auth/app/callback/passkey", body), 401, "WebAuthnVerificationError")
    error_of(call("/auth/app/callback/passkey", body), 429, "RateLimited")


def test_a_verified_passkey_gives_its_failure_count_back(passkey_site, settings):
    # passkey_failed counts each verification before it is checked; a sign-in
    # that verifies takes its count back, or an app's own users would run into it.
    authenticator = SoftAuthenticator()
    asked = app_options(action="register", email="new@example.com")
    body = {
        "action": "register",
        "data": authenticator.create(asked["options"], origin=ORIGIN),
        "binding": asked["binding"],
    }
    signed_in(call("/auth/app/callback/passkey", body))
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"passkey_failed": "2/h/ip"}}
    for _ in range(4):
        asked = app_options(action="authenticate")
        data = authenticator.get(asked["options"], origin=ORIGIN)
        body = {"action": "authenticate", "data": data, "binding": asked["binding"]}
        signed_in(call("/auth/app/callback/passkey", body))
    failed = {"action": "authenticate", "data": "{}", "binding": "b" * 43}
    for _ in range(2):
        error_of(call("/auth/app/callback/passkey", failed), 401, "WebAuthnVerificationError")
    error_of(call("/auth/app/callback/passkey", failed), 429, "RateLimited")


def test_passkeys_off_is_404(site):
    site(providers=[Passkey()], experimental={"enable_webauthn": False})
    response = call("/auth/app/webauthn-options/passkey", method="get")
    error_of(response, 404, "ExperimentalFeatureNotEnabled")


# -- OAuth against the real OpenID provider -------------------------------------------------------


@pytest.fixture
def idp(live_server, settings):
    cache.clear()
    # The provider (django-oauth-toolkit) lets the app's custom scheme through too.
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", "com.example.app"],
    }
    return start_idp(
        live_server, redirect_uri=" ".join([REDIRECT_URI, APP_REDIRECT, APP_SCHEME_REDIRECT])
    )


@pytest.fixture
def ios_app(idp):
    return register_ios_app(idp)


@pytest.fixture
def rp(site, idp):
    """webauth with the provider, app redirect URIs allowed, bearer on."""

    def configure(*, provider=None, **options):
        provider = provider or OIDC(
            id="example",
            issuer=idp.issuer,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            checks=("pkce", "nonce"),
            app_client_ids=[IOS_CLIENT_ID],
        )
        site(
            providers=[provider, DjangoCredentials()],
            app_redirect_uris=[APP_REDIRECT, APP_SCHEME_REDIRECT, "http://127.0.0.1/cb"],
            **options,
        )
        return provider

    configure()
    return configure


def test_id_token_exchange_signs_in_with_the_apps_own_client_id(rp, idp, ios_app):
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(idp, nonce=hashed(raw))
    answer = signed_in(call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw}))
    account = Account.objects.get(provider="example")
    assert account.provider_account_id == str(idp.user.pk) and account.id_token == id_token
    assert claims_of(answer["sessionToken"])["sub"] == str(account.user_id)
    assert answer["user"]["email"] == "ida@idp.example"
    assert session_of(answer["sessionToken"])["user"]["name"] == "Ida Provider"
    assert whoami(answer["sessionToken"]) == account.user.get_username()


def test_id_token_exchange_with_the_web_client_id(rp, idp):
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(
        idp, nonce=hashed(raw), client_id=CLIENT_ID, redirect_uri=REDIRECT_URI, secret=CLIENT_SECRET
    )
    signed_in(call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw}))


def test_an_app_client_id_must_be_configured(rp, idp, ios_app):
    rp(
        provider=OIDC(
            id="example", issuer=idp.issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET
        )
    )
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(idp, nonce=hashed(raw))
    response = call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw})
    error_of(response, 401, "CallbackRouteError")
    assert not Account.objects.exists()


def test_the_nonce_must_be_the_one_hashed_into_the_token(rp, idp, ios_app):
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(idp, nonce=hashed(raw))
    for nonce in (secrets.token_urlsafe(32), hashed(raw)):  # another, or the token's own claim
        response = call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": nonce})
        error_of(response, 401, "CallbackRouteError")
    no_nonce = sdk_id_token(idp, nonce=None)
    response = call("/auth/app/idtoken/example", {"id_token": no_nonce, "nonce": raw})
    error_of(response, 401, "CallbackRouteError")
    assert not Account.objects.exists()


def test_a_nonce_signs_in_once(rp, idp, ios_app):
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(idp, nonce=hashed(raw))
    signed_in(call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw}))
    replay = call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw})
    error_of(replay, 401, "InvalidCheck")


def test_a_nonce_stays_used_until_the_token_could_no_longer_be_accepted(rp, idp, ios_app, settings):
    from webauth.oauth.idtoken import CLOCK_TOLERANCE

    # A token that lives 2 minutes, so that its last accepted second is fresh.
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "ID_TOKEN_EXPIRE_SECONDS": 120}
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(idp, nonce=hashed(raw))
    payload = id_token.split(".")[1]
    expires = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"]
    signed_in(call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw}))
    # The token is still accepted until exp + the clock tolerance: so long the
    # nonce's record must last. Just before then, the replay is still refused.
    with freeze_time(datetime.fromtimestamp(expires + CLOCK_TOLERANCE - 5, tz=UTC)):
        replay = call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw})
        error_of(replay, 401, "InvalidCheck")


@pytest.mark.parametrize(
    "body",
    [
        {"id_token": "not.a.jwt", "nonce": "n" * 32},
        {"id_token": "x", "nonce": "n" * 32},
        {"id_token": "e30.e30.e30", "nonce": "n" * 32},
    ],
)
def test_a_forged_id_token_is_401(rp, body):
    error_of(call("/auth/app/idtoken/example", body), 401, "CallbackRouteError")


@pytest.mark.parametrize(
    "body",
    [
        {"nonce": "n" * 32},
        {"id_token": ["x"], "nonce": "n" * 32},
        {"id_token": "x" * 20_000, "nonce": "n" * 32},
        {"id_token": "x"},
        {"id_token": "x", "nonce": "short"},
        {"id_token": "x", "nonce": 12345678901234567890},
    ],
)
def test_a_malformed_id_token_request_is_400(rp, body):
    error_of(call("/auth/app/idtoken/example", body), 400, "InvalidRequest")


def test_a_provider_without_id_tokens_has_no_exchange(rp, idp):
    rp(provider=plain_oauth2(idp))
    response = call("/auth/app/idtoken/example", {"id_token": "x", "nonce": "n" * 32})
    error_of(response, 404, "InvalidProvider")


def test_an_id_token_of_another_issuer_is_refused(rp, idp, ios_app, settings):
    # Signed with the provider's own key, but naming another issuer: refused,
    # the provider's issuer comes from its discovery document.
    from jwcrypto import jwk, jwt

    key = jwk.JWK.from_pem(settings.OAUTH2_PROVIDER["OIDC_RSA_PRIVATE_KEY"].encode())
    raw = secrets.token_urlsafe(32)
    now = int(time.time())
    claims = {
        "iss": "https://evil.example",
        "aud": IOS_CLIENT_ID,
        "sub": str(idp.user.pk),
        "iat": now,
        "exp": now + 300,
        "nonce": hashed(raw),
    }
    forged = jwt.JWT(header={"alg": "RS256", "kid": key.thumbprint()}, claims=claims)
    forged.make_signed_token(key)
    response = call("/auth/app/idtoken/example", {"id_token": forged.serialize(), "nonce": raw})
    error_of(response, 401, "CallbackRouteError")
    assert not Account.objects.exists()
    # The same token with the provider's issuer signs in: only the issuer differed.
    right = jwt.JWT(
        header={"alg": "RS256", "kid": key.thumbprint()}, claims={**claims, "iss": idp.issuer}
    )
    right.make_signed_token(key)
    signed_in(call("/auth/app/idtoken/example", {"id_token": right.serialize(), "nonce": raw}))


def test_an_iss_for_a_provider_of_no_known_issuer_is_not_compared(rp, idp):
    # A plain OAuth 2 provider has no issuer to compare the response's iss with
    # (RFC 9207 applies where the client knows one): the code flow goes on.
    rp(provider=plain_oauth2(idp, scope="openid", client_auth_method="client_secret_post"))
    started, verifier = app_authorize()
    body = {**finish_body(idp, started, verifier), "iss": "https://anyone.example"}
    signed_in(call("/auth/app/token/example", body))


def test_id_token_exchange_links_to_the_signed_in_user(rp, idp, ios_app, alice):
    token = signed_in(call(SIGNIN, ALICE))["sessionToken"]
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(idp, nonce=hashed(raw))
    answer = signed_in(
        call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw}, token=token)
    )
    assert Account.objects.get(provider="example").user_id == alice.pk
    assert claims_of(answer["sessionToken"])["sub"] == str(alice.pk)


def test_apples_first_consent_name_may_come_along(rp, idp, ios_app, settings):
    from webauth.providers.catalog.apple import Apple

    apple = Apple(
        id="example",
        issuer=idp.issuer,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        app_client_ids=[IOS_CLIENT_ID],
    )
    rp(provider=apple)
    raw = secrets.token_urlsafe(32)
    id_token = sdk_id_token(idp, nonce=hashed(raw))
    user = {"name": {"firstName": "Ada", "lastName": "Lovelace"}}
    answer = signed_in(
        call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw, "user": user})
    )
    assert answer["user"]["name"] == "Ada Lovelace"


# -- OAuth: authorization code with PKCE, the app's redirect URI ----------------------------------


def app_authorize(redirect_uri=APP_REDIRECT, verifier=None, **extra):
    verifier = verifier or secrets.token_urlsafe(48)
    body = {
        "redirect_uri": redirect_uri,
        "code_challenge": s256(verifier),
        "code_challenge_method": "S256",
        **extra,
    }
    response = call("/auth/app/authorize/example", body)
    assert response.status_code == 200, response.content
    return response.json(), verifier


def test_code_flow_with_pkce_end_to_end(rp, idp):
    started, verifier = app_authorize()
    assert set(started) == {"url", "state"}
    sent = query(started["url"])
    assert sent["redirect_uri"] == APP_REDIRECT and sent["client_id"] == CLIENT_ID
    assert sent["code_challenge"] == s256(verifier) and sent["code_challenge_method"] == "S256"
    assert sent["state"] == started["state"] and sent["nonce"]
    # The app opens the URL; the provider sends the browser to the app's redirect URI.
    location = authorize(idp, started["url"])
    assert location.startswith(APP_REDIRECT + "?")
    back = query(location)
    assert back["state"] == started["state"]
    answer = signed_in(
        call(
            "/auth/app/token/example",
            {
                "code": back["code"],
                "state": back["state"],
                "code_verifier": verifier,
                "redirect_uri": APP_REDIRECT,
                "iss": idp.issuer,
            },
        )
    )
    account = Account.objects.get(provider="example")
    assert account.access_token and account.id_token
    assert claims_of(answer["sessionToken"])["sub"] == str(account.user_id)
    assert session_of(answer["sessionToken"])["user"]["email"] == "ida@idp.example"
    assert whoami(answer["sessionToken"]) == account.user.get_username()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, {"scope": "openid profile email", "nonce": True}),
        ({"scope": "openid email"}, {"scope": "openid email", "nonce": True}),
        ({"scope": ""}, {"scope": None, "nonce": True}),
        (
            {"authorization_params": {"scope": "openid"}, "checks": ("pkce", "state")},
            {"scope": "openid", "nonce": False},
        ),
        ({"response_mode": "form_post"}, {"response_mode": "form_post", "nonce": True}),
        (
            {"response_mode": "form_post", "authorization_params": {"response_mode": "query"}},
            {"response_mode": "query", "nonce": True},
        ),
    ],
    ids=repr,
)
def test_the_authorization_url_an_app_opens(rp, idp, options, expected):
    kwargs = {"checks": ("pkce", "nonce"), **options}
    rp(
        provider=OIDC(
            id="example",
            issuer=idp.issuer,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            **kwargs,
        )
    )
    started, _verifier = app_authorize()
    sent = query(started["url"])
    assert len(started["state"]) == 43 and sent["state"] == started["state"]
    if expected["nonce"]:
        assert len(sent["nonce"]) == 43
    else:
        assert "nonce" not in sent
    if "scope" in expected:
        assert sent.get("scope") == expected["scope"]
    if "response_mode" in expected:
        assert sent["response_mode"] == expected["response_mode"]


def test_a_provider_whose_endpoints_cannot_be_found_is_the_sign_in_error(site, caplog):
    site(
        providers=[
            OIDC(
                id="example",
                issuer="http://127.0.0.1:9/nothing",  # the discard port: nothing answers
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
            )
        ],
        app_redirect_uris=[APP_REDIRECT],
    )
    body = {
        "redirect_uri": APP_REDIRECT,
        "code_challenge": s256("v" * 43),
        "code_challenge_method": "S256",
    }
    with caplog.at_level(logging.ERROR, logger="webauth"):
        error_of(call("/auth/app/authorize/example", body), 500, "Configuration")
    assert "[auth][error] OAuthSignInError:" in caplog.text


def test_a_state_that_cannot_be_stored_is_refused(rp, idp, monkeypatch):
    from webauth.conf import get_config
    from webauth.flows import app as app_flows

    store = app_flows._cache(get_config())
    monkeypatch.setattr(type(store), "add", lambda self, *args, **kwargs: False)
    body = {
        "redirect_uri": APP_REDIRECT,
        "code_challenge": s256("v" * 43),
        "code_challenge_method": "S256",
    }
    response = call("/auth/app/authorize/example", body)
    assert response.status_code == 500 and "url" not in response.json()


@pytest.mark.parametrize(
    ("field", "ok", "too_long"),
    [("state", "s" * 512, "s" * 513), ("iss", "i" * 2048, "i" * 2049)],
)
def test_the_longest_state_and_issuer_an_app_may_send(rp, field, ok, too_long):
    body = {
        "code": "c",
        "state": secrets.token_urlsafe(32),
        "code_verifier": secrets.token_urlsafe(48),
        "redirect_uri": APP_REDIRECT,
    }
    error_of(call("/auth/app/token/example", {**body, field: ok}), 401, "InvalidCheck")
    error_of(call("/auth/app/token/example", {**body, field: too_long}), 400, "InvalidRequest")


def test_apples_user_field_is_passed_on_as_its_json():
    from webauth.flows.app import _apple_user

    name = {"name": {"firstName": "Ada", "lastName": "Lovelace"}}
    assert json.loads(_apple_user({"user": name})["user"]) == name
    assert _apple_user({"user": '{"name": {}}'}) == {"user": '{"name": {}}'}
    assert _apple_user({"user": 7}) == {}
    assert _apple_user({}) == {}
    assert _apple_user({"user": {"x": object()}}) == {}  # not JSON: left out


def test_a_nonce_with_a_lone_surrogate_is_no_server_error(rp, idp, ios_app):
    id_token = sdk_id_token(idp, nonce=hashed("n" * 32))
    response = call(
        "/auth/app/idtoken/example",
        raw=json.dumps({"id_token": id_token, "nonce": "\ud800" + "n" * 20}),
    )
    assert response.status_code == 401


def test_the_longest_address_an_app_may_send(email_site):
    error_of(call("/auth/app/signin/email", {"email": "a" * 1016}), 400, "EmailSignInError")
    error_of(call("/auth/app/signin/email", {"email": "a" * 1017}), 400, "InvalidRequest")


def test_code_flow_with_the_apps_custom_scheme(rp, idp):
    started, verifier = app_authorize(APP_SCHEME_REDIRECT)
    location = authorize(idp, started["url"])
    assert location.startswith(APP_SCHEME_REDIRECT + "?")
    back = query(location)
    body = {
        "code": back["code"],
        "state": back["state"],
        "code_verifier": verifier,
        "redirect_uri": APP_SCHEME_REDIRECT,
    }
    signed_in(call("/auth/app/token/example", body))


def finish_body(idp, started, verifier, redirect_uri=APP_REDIRECT):
    back = query(authorize(idp, started["url"]))
    return {
        "code": back["code"],
        "state": back["state"],
        "code_verifier": verifier,
        "redirect_uri": redirect_uri,
    }


def test_the_state_is_single_use(rp, idp):
    started, verifier = app_authorize()
    body = finish_body(idp, started, verifier)
    signed_in(call("/auth/app/token/example", body))
    error_of(call("/auth/app/token/example", body), 401, "InvalidCheck")


def test_of_concurrent_uses_of_a_state_exactly_one_gets_it(site):
    import threading

    from webauth.conf import get_config
    from webauth.flows import app as app_flows

    config = get_config()
    key = app_flows._cache_key("state", "the-state")
    for _ in range(20):
        cache.add(key, {"provider": "example"}, 60)
        barrier = threading.Barrier(8)
        won = []

        def take():
            barrier.wait()
            won.append(app_flows._take(config, key))

        threads = [threading.Thread(target=take) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [record for record in won if record is not None] == [{"provider": "example"}]


def test_of_two_takers_who_both_read_the_state_one_gets_it(site, monkeypatch):
    # Forced: both read the record before either deletes it. Only the one
    # whose delete removed it may use it.
    import threading

    from webauth.conf import get_config
    from webauth.flows import app as app_flows

    config = get_config()
    store = app_flows._cache(config)
    key = app_flows._cache_key("state", "read-by-both")
    store.add(key, {"provider": "example"}, 60)
    both_read = threading.Barrier(2)
    read = type(store).get

    def get_then_wait(self, *args, **kwargs):
        value = read(self, *args, **kwargs)
        both_read.wait(timeout=10)
        return value

    monkeypatch.setattr(type(store), "get", get_then_wait)
    won = []
    threads = [
        threading.Thread(target=lambda: won.append(app_flows._take(config, key))) for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won, key=lambda r: r is None) == [{"provider": "example"}, None]


def test_a_state_is_good_at_its_own_providers_token_route_only(site, idp):
    # Two providers of one issuer: a state made at one's authorize route is
    # refused at the other's token route (and used up there).
    def provider(provider_id):
        return OIDC(
            id=provider_id,
            issuer=idp.issuer,
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
            checks=("pkce", "nonce"),
        )

    site(providers=[provider("example"), provider("other")], app_redirect_uris=[APP_REDIRECT])
    started, verifier = app_authorize()
    body = finish_body(idp, started, verifier)
    error_of(call("/auth/app/token/other", body), 401, "InvalidCheck")
    error_of(call("/auth/app/token/example", body), 401, "InvalidCheck")  # used up
    assert not Account.objects.exists()


def test_a_wrong_verifier_costs_the_state(rp, idp):
    started, verifier = app_authorize()
    body = finish_body(idp, started, verifier)
    wrong = {**body, "code_verifier": secrets.token_urlsafe(48)}
    error_of(call("/auth/app/token/example", wrong), 401, "InvalidCheck")
    error_of(call("/auth/app/token/example", body), 401, "InvalidCheck")
    assert not Account.objects.exists()


def test_the_redirect_uri_must_be_the_authorizations(rp, idp):
    started, verifier = app_authorize()
    body = {**finish_body(idp, started, verifier), "redirect_uri": APP_SCHEME_REDIRECT}
    error_of(call("/auth/app/token/example", body), 401, "InvalidCheck")


def test_a_made_up_state_is_401(rp):
    body = {
        "code": "c",
        "state": secrets.token_urlsafe(32),
        "code_verifier": secrets.token_urlsafe(48),
        "redirect_uri": APP_REDIRECT,
    }
    error_of(call("/auth/app/token/example", body), 401, "InvalidCheck")


def test_another_issuer_in_the_response_is_a_mix_up(rp, idp):
    started, verifier = app_authorize()
    body = {**finish_body(idp, started, verifier), "iss": "https://evil.example"}
    error_of(call("/auth/app/token/example", body), 401, "InvalidCheck")
    assert not Account.objects.exists()


def test_a_code_the_provider_refuses_is_401(rp, idp):
    started, verifier = app_authorize()
    body = {**finish_body(idp, started, verifier), "code": "made-up-code"}
    error_of(call("/auth/app/token/example", body), 401, "CallbackRouteError")


@pytest.mark.parametrize(
    "changes",
    [
        {"redirect_uri": "https://evil.example/cb"},
        {"redirect_uri": APP_REDIRECT + "/more"},
        {"redirect_uri": "http://127.0.0.1:5000/cb?x=1"},
        {"redirect_uri": "http://user@127.0.0.1:5000/cb"},
        {"redirect_uri": ["x"]},
        {"code_challenge_method": "plain"},
        {"code_challenge_method": None},
        {"code_challenge": "short"},
        {"code_challenge": "!" * 43},
    ],
)
def test_authorize_refuses_a_bad_request(rp, changes):
    body = {
        "redirect_uri": APP_REDIRECT,
        "code_challenge": s256("v" * 43),
        "code_challenge_method": "S256",
        **changes,
    }
    body = {k: v for k, v in body.items() if v is not None}
    error_of(call("/auth/app/authorize/example", body), 400, "InvalidRequest")


@pytest.mark.parametrize(
    ("uri", "allowed"),
    [
        ("http://127.0.0.1:5000/cb", True),
        ("http://[::1]:5000/cb", True),
        ("http://localhost:5000/cb", True),
        ("http://127.0.0.1/cb", True),
        ("http://127.0.0.1:99999/cb", False),  # no port at all: urlsplit refuses it
        ("http://[::1/cb", False),  # cannot be parsed
        ("https://127.0.0.1:5000/cb", False),  # only http:// loopback entries take a port
        ("https://localhost:5000/cb", False),  # not even an https:// one that is listed
        ("https://localhost/cb", True),
        ("http://example.com:5000/cb", False),  # not loopback: exact only
        ("http://user@127.0.0.1:5000/cb", False),
        ("http://127.0.0.1:5000/other", False),
        ("com.example.app:/oauth", True),
        ("com.example.app:/oauth2", False),
    ],
)
def test_which_redirect_uris_an_app_may_use(uri, allowed):
    from webauth.flows.app import redirect_uri_allowed

    entries = (
        "http://127.0.0.1/cb",
        "http://[::1]/cb",
        "http://localhost/cb",
        "http://example.com/cb",
        "com.example.app:/oauth",
        "https://localhost/cb",
    )
    assert redirect_uri_allowed(entries, uri) is allowed


def test_the_longest_redirect_uri_and_nonce(rp, idp, ios_app):
    longest = APP_REDIRECT + "?" + "x" * (2048 - len(APP_REDIRECT) - 1)
    assert len(longest) == 2048
    # Not allowed (not in app_redirect_uris), but read: 400 for that reason, not its length.
    body = {
        "redirect_uri": longest,
        "code_challenge": s256("v" * 43),
        "code_challenge_method": "S256",
    }
    refused = error_of(call("/auth/app/authorize/example", body), 400, "InvalidRequest")
    assert "app_redirect_uris" in refused["message"]
    too_long = error_of(
        call("/auth/app/authorize/example", {**body, "redirect_uri": longest + "x"}),
        400,
        "InvalidRequest",
    )
    assert "too long" in too_long["message"]
    for raw in ("n" * 16, "n" * 512):
        id_token = sdk_id_token(idp, nonce=hashed(raw))
        signed_in(call("/auth/app/idtoken/example", {"id_token": id_token, "nonce": raw}))
    for raw in ("n" * 15, "n" * 513):
        response = call("/auth/app/idtoken/example", {"id_token": "x", "nonce": raw})
        error_of(response, 400, "InvalidRequest")


def test_the_apps_records_are_kept_under_webauths_prefix(site):
    from webauth.flows import app as app_flows

    key = app_flows._cache_key("state", "the-state")
    assert key.startswith("webauth:app:state:") and "the-state" not in key


def test_a_loopback_redirect_uri_may_take_any_port(rp):
    started, _ = app_authorize("http://127.0.0.1:53123/cb")
    assert query(started["url"])["redirect_uri"] == "http://127.0.0.1:53123/cb"


@pytest.mark.parametrize(
    "changes",
    [
        {"code": ["c"]},
        {"code": "c" * 9000},
        {"state": None},
        {"code_verifier": "short"},
        {"code_verifier": "v" * 129},
        {"code_verifier": "ü" * 50},
        {"iss": 42},
    ],
)
def test_token_refuses_a_bad_request(rp, changes):
    body = {
        "code": "c",
        "state": "s" * 43,
        "code_verifier": "v" * 43,
        "redirect_uri": APP_REDIRECT,
        **changes,
    }
    body = {k: v for k, v in body.items() if v is not None}
    error_of(call("/auth/app/token/example", body), 400, "InvalidRequest")


def test_oauth_app_requests_count_as_callbacks(rp, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"oauth_callback": "2/h/ip"}}
    app_authorize()
    app_authorize()
    body = {"redirect_uri": APP_REDIRECT, "code_challenge": s256("v" * 43)}
    body["code_challenge_method"] = "S256"
    error_of(call("/auth/app/authorize/example", body), 429, "RateLimited")
    error_of(
        call("/auth/app/idtoken/example", {"id_token": "x", "nonce": "n" * 32}), 429, "RateLimited"
    )
    body = {"code": "c", "state": "s" * 43, "code_verifier": "v" * 43, "redirect_uri": APP_REDIRECT}
    error_of(call("/auth/app/token/example", body), 429, "RateLimited")
