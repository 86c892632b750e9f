"""Credentials sign-in (protocol section 7) and its callbacks and events."""

import pytest
from django.contrib.auth import get_user_model

from webauth import jwt as jose
from webauth.errors import CredentialsSignin
from webauth.providers import Credentials

from .support.helpers import csrf_pair, query

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice",
        email="alice@example.com",
        password="correct horse",
        first_name="Alice",
        last_name="Liddell",
    )


def post_credentials(client, provider="credentials", headers=None, **fields):
    token = csrf_pair(client)
    return client.post(
        f"/auth/callback/{provider}", {"csrfToken": token, **fields}, headers=headers or {}
    )


def test_django_credentials_success(client, alice):
    response = post_credentials(
        client, username="alice", password="correct horse", callbackUrl="/private/"
    )
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/private/"
    morsel = response.cookies["authjs.session-token"]
    assert morsel["httponly"] and morsel["samesite"] == "Lax" and morsel["path"] == "/"
    assert morsel["expires"] and not morsel["max-age"]
    claims = jose.decode(token=morsel.value, secret=SECRET, salt="authjs.session-token")
    assert claims["sub"] == str(alice.pk)
    assert claims["name"] == "Alice Liddell"
    assert claims["email"] == "alice@example.com"
    assert "picture" not in claims  # Django's User has no image field
    assert list(claims)[-3:] == ["iat", "exp", "jti"]
    alice.refresh_from_db()
    assert alice.last_login is not None  # contrib.auth's user_logged_in receiver ran


def test_django_credentials_json_body(client, alice):
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "alice", "password": "correct horse"},
        content_type="application/json",
    )
    assert response.status_code == 302
    assert "authjs.session-token" in response.cookies


@pytest.mark.parametrize(
    "fields",
    [
        {"username": "alice", "password": "wrong"},
        {"username": "nobody", "password": "correct horse"},
        {"username": "alice"},
        {},
        {"username": "", "password": ""},
    ],
)
def test_django_credentials_failure(client, alice, fields):
    response = post_credentials(client, **fields)
    assert response.status_code == 302
    assert response["Location"] == (
        "http://testserver/auth/signin?error=CredentialsSignin&code=credentials"
    )
    # No session; only the cookie keeping the typed username for the sign-in page.
    kept = {"authjs.signin-form"} if fields.get("username") else set()
    assert set(response.cookies) == kept


def test_inactive_user_cannot_sign_in(client, alice):
    alice.is_active = False
    alice.save()
    response = post_credentials(client, username="alice", password="correct horse")
    assert "error=CredentialsSignin" in response["Location"]


def test_credentials_without_csrf(client, alice):
    response = client.post(
        "/auth/callback/credentials", {"username": "alice", "password": "correct horse"}
    )
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"
    assert not response.cookies


def test_credentials_with_wrong_csrf(client, alice):
    csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": "f" * 64, "username": "alice", "password": "correct horse"},
    )
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"


def test_get_callback_on_credentials_is_a_sign_in_expired(client):
    # Auth.js: error=Configuration; webauth: a URL the visitor opened is no server error.
    response = client.get("/auth/callback/credentials")
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"


class WrongCode(CredentialsSignin):
    code = "wrong_code"


def custom_authorize(credentials, request):
    if credentials.get("code") == "raise":
        raise WrongCode()
    if credentials.get("code") == "boom":
        raise RuntimeError("database down")
    if credentials.get("code") == "ok":
        return {"id": 42, "name": "Custom", "email": "c@example.com"}
    if credentials.get("code") == "noid":
        return {"name": "No Id"}
    return None


@pytest.fixture
def custom(settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            Credentials(
                id="code",
                name="Code",
                credentials={"code": {"label": "Code", "type": "text"}},
                authorize="tests.test_flows_credentials.custom_authorize",
            )
        ],
    }


def test_custom_credentials_success_with_mapping_user(client, custom):
    response = post_credentials(client, provider="code", code="ok")
    claims = jose.decode(
        token=response.cookies["authjs.session-token"].value,
        secret=SECRET,
        salt="authjs.session-token",
    )
    assert claims["sub"] == "42" and claims["name"] == "Custom"


def test_custom_credentials_user_without_id_gets_uuid(client, custom):
    response = post_credentials(client, provider="code", code="noid")
    claims = jose.decode(
        token=response.cookies["authjs.session-token"].value,
        secret=SECRET,
        salt="authjs.session-token",
    )
    assert len(claims["sub"]) == 36


def test_custom_credentials_error_code(client, custom):
    response = post_credentials(client, provider="code", code="raise")
    assert query(response["Location"]) == {"error": "CredentialsSignin", "code": "wrong_code"}


def test_authorize_crash_is_configuration_error_not_500(client, custom, caplog):
    response = post_credentials(client, provider="code", code="boom")
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "CallbackRouteError" in caplog.text
    assert "database down" in caplog.text


def test_authorize_can_be_async(client, settings):
    async def authorize(credentials, request):
        return {"id": "async-user"}

    settings.WEBAUTH = {**settings.WEBAUTH, "providers": [Credentials(authorize=authorize)]}
    response = post_credentials(client, code="x")
    assert "authjs.session-token" in response.cookies


# -- callbacks ---------------------------------------------------------------------


def test_sign_in_callback_false_is_access_denied(client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"sign_in": lambda **kw: False}}
    response = post_credentials(client, username="alice", password="correct horse")
    assert response["Location"] == "http://testserver/auth/error?error=AccessDenied"
    assert "authjs.session-token" not in response.cookies


def test_sign_in_callback_raising_is_access_denied(client, alice, settings, caplog):
    def deny(**kw):
        raise ValueError("not today")

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"sign_in": deny}}
    response = post_credentials(client, username="alice", password="correct horse")
    assert response["Location"] == "http://testserver/auth/error?error=AccessDenied"
    assert "[auth][error] AccessDenied: not today" in caplog.text


def test_sign_in_callback_string_redirects(client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"sign_in": lambda **kw: "/welcome"}}
    response = post_credentials(client, username="alice", password="correct horse")
    assert response["Location"] == "http://testserver/welcome"
    assert "authjs.session-token" not in response.cookies


def test_sign_in_callback_receives_inputs(client, alice, settings):
    seen = {}

    def cb(*, user, account, credentials, **kw):
        seen.update(user=user, account=account, credentials=credentials)
        return True

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"sign_in": cb}}
    post_credentials(client, username="alice", password="correct horse")
    assert seen["user"] == alice
    assert seen["account"] == {
        "providerAccountId": str(alice.pk),
        "type": "credentials",
        "provider": "credentials",
    }
    assert seen["credentials"]["username"] == "alice"


def test_jwt_callback_at_sign_in(client, alice, settings):
    seen = {}

    def jwt_cb(*, token, user=None, account=None, trigger=None, **kw):
        if trigger:
            seen.update(trigger=trigger, user=user, account=account)
            token["role"] = "admin"
        return token

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": jwt_cb}}
    response = post_credentials(client, username="alice", password="correct horse")
    claims = jose.decode(
        token=response.cookies["authjs.session-token"].value,
        secret=SECRET,
        salt="authjs.session-token",
    )
    assert claims["role"] == "admin"
    assert seen["trigger"] == "signIn" and seen["user"] == alice


def test_redirect_callback_blocks_foreign_hosts(client, alice):
    response = post_credentials(
        client, username="alice", password="correct horse", callbackUrl="https://evil.example/x"
    )
    assert response["Location"] == "http://testserver"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("//evil.example/x", "http://testserver//evil.example/x"),
        ("/ok?x=1", "http://testserver/ok?x=1"),
        ("http://testserver/same", "http://testserver/same"),
        ("https://testserver/other-scheme", "http://testserver"),
        ("http://testserver.evil.example/", "http://testserver"),
    ],
)
def test_default_redirect_rules(client, alice, url, expected):
    response = post_credentials(client, username="alice", password="correct horse", callbackUrl=url)
    assert response["Location"] == expected


def test_custom_redirect_callback(client, alice, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "callbacks": {"redirect": lambda *, url, base_url: base_url + "/always"},
    }
    response = post_credentials(client, username="alice", password="correct horse")
    assert response["Location"] == "http://testserver/always"


# -- events ------------------------------------------------------------------------


def test_sign_in_event_and_signal(client, alice, settings):
    from webauth.signals import signed_in

    handler_calls, signal_calls = [], []
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "events": {"sign_in": lambda **m: handler_calls.append(m)},
    }

    def receiver(sender, **kwargs):
        signal_calls.append((sender, kwargs))

    signed_in.connect(receiver)
    try:
        post_credentials(client, username="alice", password="correct horse")
    finally:
        signed_in.disconnect(receiver)
    assert handler_calls[0]["user"] == alice
    assert handler_calls[0]["account"]["provider"] == "credentials"
    assert signal_calls[0][0] == "credentials"
    assert signal_calls[0][1]["user"] == alice


def test_failing_event_handler_never_breaks_sign_in(client, alice, settings, caplog):
    from webauth.signals import signed_in

    def boom(**m):
        raise RuntimeError("audit log down")

    def bad_receiver(sender, **kwargs):
        raise RuntimeError("receiver down")

    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_in": boom}}
    signed_in.connect(bad_receiver)
    try:
        response = post_credentials(client, username="alice", password="correct horse")
    finally:
        signed_in.disconnect(bad_receiver)
    assert "authjs.session-token" in response.cookies
    assert "EventError" in caplog.text
    assert "audit log down" in caplog.text and "receiver down" in caplog.text


def test_session_event(client, alice, settings):
    calls = []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"session": lambda **m: calls.append(m)}}
    post_credentials(client, username="alice", password="correct horse")
    client.get("/auth/session")
    assert calls[0]["session"]["user"]["name"] == "Alice Liddell"
    assert calls[0]["token"]["sub"] == str(alice.pk)


def test_large_session_is_chunked_and_read_back(client, alice, settings):
    def jwt_cb(*, token, **kw):
        token["blob"] = "x" * 6000
        return token

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": jwt_cb}}
    response = post_credentials(client, username="alice", password="correct horse")
    names = sorted(n for n in response.cookies if n.startswith("authjs.session-token"))
    assert names == ["authjs.session-token.0", "authjs.session-token.1", "authjs.session-token.2"]
    assert all(len(response.cookies[n].value) <= 3936 for n in names)
    data = client.get("/auth/session").json()
    assert data["user"]["email"] == "alice@example.com"
