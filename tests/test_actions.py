"""Every route of protocol section 4 through Django's test client."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings

from webauth import jwt as jose
from webauth.test import force_sign_in

from .support.helpers import csrf_pair

SECRET = "test-secret-0123456789abcdef0123456789abcdef"

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


def sign_in_with_password(client, username="alice", password="correct horse", **extra):
    token = csrf_pair(client)
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": username, "password": password, **extra},
    )


# -- request parsing ---------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/auth/unknown",
        "/auth/",
        "/auth/session/extra",
        "/auth/csrf/x",
        "/auth/a/b/c",
        "/auth/providers/github",
    ],
)
def test_unknown_routes_are_400_bad_request(client, path):
    response = client.get(path)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content) == "Bad request."


@pytest.mark.parametrize("method", ["put", "patch", "delete", "options"])
def test_other_methods_are_400(client, method):
    response = getattr(client, method)("/auth/session")
    assert response.status_code == 400
    assert json.loads(response.content) == "Bad request."


def test_trailing_slash_is_tolerated(client):
    assert client.get("/auth/providers/").status_code == 200
    assert client.get("/auth/csrf/").status_code == 200


@pytest.mark.parametrize("path", ["/auth/csrf", "/auth/providers"])
def test_post_on_get_only_routes_is_unknown_action(client, path):
    response = client.post(path)
    assert response.status_code == 302
    # Auth.js: error=Configuration; webauth: the URL is the visitor's, no server error.
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"


# -- csrf ------------------------------------------------------------------------


def test_csrf_returns_token_and_sets_cookie(client):
    response = client.get("/auth/csrf")
    assert response.status_code == 200
    token = response.json()["csrfToken"]
    assert len(token) == 64 and int(token, 16) >= 0
    assert response["Cache-Control"] == "private, no-cache, no-store"
    assert response["Expires"] == "0" and response["Pragma"] == "no-cache"
    morsel = response.cookies["authjs.csrf-token"]
    assert morsel.coded_value.startswith(token + "%7C")
    assert morsel["httponly"] and morsel["samesite"] == "Lax" and morsel["path"] == "/"
    assert not morsel["secure"] and not morsel["max-age"] and not morsel["expires"]


def test_csrf_cookie_is_reused(client):
    first = csrf_pair(client)
    response = client.get("/auth/csrf")
    assert response.json()["csrfToken"] == first
    assert "authjs.csrf-token" not in response.cookies


def test_csrf_over_https_uses_host_prefix(client):
    response = client.get("/auth/csrf", secure=True)
    morsel = response.cookies["__Host-authjs.csrf-token"]
    assert morsel["secure"] and morsel["path"] == "/"
    assert "authjs.csrf-token" not in response.cookies


def test_forged_csrf_cookie_is_replaced(client):
    client.cookies["authjs.csrf-token"] = "a" * 64 + "%7C" + "b" * 64
    response = client.get("/auth/csrf")
    assert response.json()["csrfToken"] != "a" * 64
    assert "authjs.csrf-token" in response.cookies


def test_skip_csrf_check_disables_route(client, settings, caplog):
    settings.WEBAUTH = {**settings.WEBAUTH, "skip_csrf_check": True}
    response = client.get("/auth/csrf")
    assert response.status_code == 404
    assert response.content == b""
    assert response.cookies["authjs.csrf-token"]["max-age"] == "0"
    assert "[auth][warn][csrf-disabled]" in caplog.text


# -- providers ---------------------------------------------------------------------


def test_providers(client):
    response = client.get("/auth/providers")
    assert response.status_code == 200
    assert response.json() == {
        "credentials": {
            "id": "credentials",
            "name": "Password",
            "type": "credentials",
            "signinUrl": "http://testserver/auth/signin/credentials",
            "callbackUrl": "http://testserver/auth/callback/credentials",
        }
    }
    assert not response.cookies
    assert not response.has_header("Cache-Control")


def test_providers_use_https_origin(client):
    data = client.get("/auth/providers", secure=True).json()
    assert data["credentials"]["signinUrl"] == "https://testserver/auth/signin/credentials"


# -- session -----------------------------------------------------------------------


def test_session_without_cookie_is_null_and_sets_std_cookies(client):
    response = client.get("/auth/session")
    assert response.status_code == 200
    assert response.content == b"null"
    assert response["Cache-Control"] == "private, no-cache, no-store"
    assert "authjs.csrf-token" in response.cookies
    assert response.cookies["authjs.callback-url"].coded_value == "http%3A%2F%2Ftestserver"
    assert "authjs.session-token" not in response.cookies


def test_session_with_valid_jwt_returns_session_and_slides_cookie(client, alice):
    old = force_sign_in(client, alice)
    response = client.get("/auth/session")
    data = response.json()
    # Django's User has no image field: no "image" (as Auth.js leaves undefined out).
    assert data["user"] == {"name": "Alice", "email": "alice@example.com"}
    assert data["expires"].endswith("Z") and len(data["expires"]) == 24
    morsel = response.cookies["authjs.session-token"]
    assert morsel.value != old
    assert morsel["httponly"] and morsel["samesite"] == "Lax" and morsel["expires"]
    claims = jose.decode(token=morsel.value, secret=SECRET, salt="authjs.session-token")
    assert claims["sub"] == str(alice.pk)


@pytest.mark.parametrize(
    "value",
    ["garbage", "a.b.c.d.e", "", "eyJ..x.y.z", "%%%", "\u00e9" * 10, "x" * 10000],
)
def test_session_with_garbage_cookie_is_null_and_deletes_cookie(client, value):
    client.cookies["authjs.session-token"] = value
    response = client.get("/auth/session")
    assert response.status_code == 200
    assert response.content == b"null"
    if value:
        assert response.cookies["authjs.session-token"]["max-age"] == "0"


def test_session_with_expired_jwt_is_null(client, alice):
    from freezegun import freeze_time

    with freeze_time("2020-01-01"):
        force_sign_in(client, alice)
    response = client.get("/auth/session")
    assert response.content == b"null"
    assert response.cookies["authjs.session-token"]["max-age"] == "0"


def test_session_with_wrong_secret_is_null(client, alice):
    token = jose.encode(
        token={"sub": str(alice.pk)},
        secret="another-secret-" + "x" * 30,
        salt="authjs.session-token",
    )
    client.cookies["authjs.session-token"] = token
    assert client.get("/auth/session").content == b"null"


def test_http_cookie_is_not_read_over_https(client, alice):
    force_sign_in(client, alice)
    assert client.get("/auth/session", secure=True).content == b"null"
    force_sign_in(client, alice, secure=True)
    assert client.get("/auth/session", secure=True).json()["user"]["name"] == "Alice"


def test_session_update_requires_csrf(client, alice):
    force_sign_in(client, alice)
    response = client.post("/auth/session", {"data": "x"}, content_type="application/json")
    assert response.status_code == 400
    assert response.content == b"null"


def test_session_update_calls_jwt_callback_with_trigger(client, alice, settings):
    calls = []

    def jwt_cb(*, token, trigger=None, session=None, **kw):
        calls.append((trigger, session))
        if trigger == "update":
            token["name"] = session["name"]
        return token

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": jwt_cb}}
    force_sign_in(client, alice)
    token = csrf_pair(client)
    response = client.post(
        "/auth/session",
        {"csrfToken": token, "data": {"name": "Alicia"}},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["user"]["name"] == "Alicia"
    assert not response.has_header("Cache-Control")
    assert ("update", {"name": "Alicia"}) in calls
    new = response.cookies["authjs.session-token"].value
    assert jose.decode(token=new, secret=SECRET, salt="authjs.session-token")["name"] == "Alicia"


def test_jwt_callback_returning_none_ends_session(client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": lambda **kw: None}}
    force_sign_in(client, alice)
    response = client.get("/auth/session")
    assert response.content == b"null"
    assert response.cookies["authjs.session-token"]["max-age"] == "0"


def test_session_callback_shapes_result(client, alice, settings):
    def session_cb(*, session, token, **kw):
        session["user"]["id"] = token["sub"]
        return session

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"session": session_cb}}
    force_sign_in(client, alice)
    assert client.get("/auth/session").json()["user"]["id"] == str(alice.pk)


def test_async_callbacks_are_supported(client, alice, settings):
    async def session_cb(*, session, token, **kw):
        session["async"] = True
        return session

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"session": session_cb}}
    force_sign_in(client, alice)
    assert client.get("/auth/session").json()["async"] is True


def test_failing_session_callback_gives_null_not_500(client, alice, settings):
    def boom(**kw):
        raise RuntimeError("boom")

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"session": boom}}
    force_sign_in(client, alice)
    response = client.get("/auth/session")
    assert response.status_code == 200 and response.content == b"null"


# -- sign-in page ------------------------------------------------------------------


def test_signin_page_renders_forms(client):
    response = client.get("/auth/signin?callbackUrl=/private/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    html = response.content.decode()
    assert 'action="http://testserver/auth/callback/credentials"' in html
    assert 'name="username"' in html and 'type="password"' in html
    token = response.cookies["authjs.csrf-token"].value.split("|")[0]
    assert f'name="csrfToken" value="{token}"' in html
    assert 'name="callbackUrl" value="http://testserver/private/"' in html


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ("CredentialsSignin", "Sign in failed. Check the details you provided are correct."),
        ("OAuthAccountNotLinked", "To confirm your identity"),
        ("SessionRequired", "Please sign in to access this page."),
        ("Whatever", "Unable to sign in."),
    ],
)
def test_signin_page_shows_error_message(client, error, message):
    html = client.get(f"/auth/signin?error={error}").content.decode()
    assert message in html


def test_signin_page_redirects_to_custom_page(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"sign_in": "/login/"}}
    response = client.get("/auth/signin?error=CredentialsSignin")
    assert response.status_code == 302
    assert response["Location"] == (
        "/login/?callbackUrl=http%3A%2F%2Ftestserver&error=CredentialsSignin"
    )


def test_get_signin_provider_is_unsupported(client):
    response = client.get("/auth/signin/credentials")
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"


def test_post_signin_requires_csrf(client):
    response = client.post("/auth/signin/credentials", {})
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"
    assert not response.cookies


def test_post_signin_credentials_redirects_to_signin_page(client):
    token = csrf_pair(client)
    response = client.post("/auth/signin/credentials", {"csrfToken": token})
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/auth/signin"


def test_post_signin_unknown_provider(client):
    token = csrf_pair(client)
    response = client.post("/auth/signin/nope", {"csrfToken": token})
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"


# -- sign-out ----------------------------------------------------------------------


def test_signout_page(client, alice):
    force_sign_in(client, alice)  # a visitor who is not signed in gets no form
    response = client.get("/auth/signout")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'action="http://testserver/auth/signout"' in html
    assert 'name="csrfToken"' in html


def test_signout_page_custom(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"sign_out": "/bye/"}}
    response = client.get("/auth/signout")
    assert response["Location"] == "/bye/"


def test_signout_deletes_session_and_fires_event(client, alice, settings):
    events = []
    settings.WEBAUTH = {**settings.WEBAUTH, "events": {"sign_out": lambda **m: events.append(m)}}
    force_sign_in(client, alice)
    token = csrf_pair(client)
    response = client.post("/auth/signout", {"csrfToken": token, "callbackUrl": "/bye"})
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/bye"
    assert response.cookies["authjs.session-token"]["max-age"] == "0"
    assert events and events[0]["token"]["sub"] == str(alice.pk)
    assert client.get("/auth/session").content == b"null"


def test_signout_without_csrf(client, alice):
    force_sign_in(client, alice)
    response = client.post("/auth/signout", {})
    # Auth.js: the sign-in page; webauth shows a browser the sign-out page again.
    assert response["Location"] == "http://testserver/auth/signout?error=MissingCSRF"
    assert "authjs.session-token" not in response.cookies


def test_signout_without_session_just_redirects(client):
    token = csrf_pair(client)
    response = client.post("/auth/signout", {"csrfToken": token})
    assert response["Location"] == "http://testserver"
    assert "authjs.session-token" not in response.cookies


# -- error and verify-request pages ------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "status", "text"),
    [
        ("Configuration", 500, "Server error"),
        ("AccessDenied", 403, "Access denied"),
        ("Verification", 403, "Unable to sign in"),
        ("Other", 200, "Error"),
        ("", 200, "Error"),
    ],
)
def test_error_page_status_by_type(client, error, status, text):
    response = client.get(f"/auth/error?error={error}")
    assert response.status_code == status
    assert text in response.content.decode()


def test_error_page_escapes_input(client):
    response = client.get("/auth/error?error=<script>alert(1)</script>")
    assert b"<script>alert" not in response.content


def test_error_page_custom(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"error": "/oops/"}}
    response = client.get("/auth/error?error=AccessDenied")
    assert response["Location"] == "/oops/?error=AccessDenied"


def test_configuration_error_on_a_page_route_goes_to_the_custom_error_page(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"error": "/oops/"}, "trust_host": False}
    response = client.get("/auth/signin")
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/oops/?error=Configuration"
    # Everything else gets the JSON 500.
    response = client.get("/auth/session")
    assert response.status_code == 500
    assert "server configuration" in response.json()["message"]


def test_verify_request_page(client):
    response = client.get("/auth/verify-request?provider=email&type=email")
    assert response.status_code == 200
    assert "Check your email" in response.content.decode()


def test_verify_request_custom_keeps_query(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"verify_request": "/check/"}}
    response = client.get("/auth/verify-request?provider=email&type=email")
    assert response["Location"] == "/check/?provider=email&type=email"


# -- X-Auth-Return-Redirect --------------------------------------------------------


def test_return_redirect_header_turns_302_into_json(client, alice):
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {
            "csrfToken": token,
            "username": "alice",
            "password": "correct horse",
            "callbackUrl": "/private/",
        },
        headers={"X-Auth-Return-Redirect": "1"},
    )
    assert response.status_code == 200
    assert response.json() == {"url": "http://testserver/private/"}
    assert "authjs.session-token" in response.cookies


def test_return_redirect_header_on_error(client):
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "alice", "password": "wrong"},
        headers={"X-Auth-Return-Redirect": "1"},
    )
    assert response.status_code == 200
    assert response.json() == {
        "url": "http://testserver/auth/signin?error=CredentialsSignin&code=credentials"
    }
    assert not response.cookies


# -- configuration errors ----------------------------------------------------------


@override_settings(WEBAUTH={"providers": ["webauth.providers.DjangoCredentials"]})
def test_missing_secret_json_routes_500(client):
    response = client.get("/auth/session")
    assert response.status_code == 500
    assert response.json() == {
        "message": "There was a problem with the server configuration. "
        "Check the server logs for more information."
    }


@override_settings(WEBAUTH={"providers": ["webauth.providers.DjangoCredentials"]})
def test_missing_secret_page_routes_show_error_page(client):
    response = client.get("/auth/signin")
    assert response.status_code == 500
    assert "Server error" in response.content.decode()


def test_untrusted_host(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "trust_host": False}
    assert client.get("/auth/session").status_code == 500


def test_auth_url_pins_origin(client, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "trust_host": False,
        "url": "https://app.example.com/auth",
    }
    data = client.get("/auth/providers").json()
    assert data["credentials"]["signinUrl"] == "https://app.example.com/auth/signin/credentials"


@pytest.mark.parametrize("value", ["javascript:alert(1)", "ftp://x.example/", "data:text/html,x"])
def test_invalid_callback_url_in_query_falls_back_to_the_origin(client, value):
    # Auth.js answers 500 (InvalidCallbackUrl); webauth uses the origin instead, so a
    # crafted link cannot break a route (issue 10, item 6).
    response = client.get("/auth/session", {"callbackUrl": value})
    assert response.status_code == 200
    assert response.cookies["authjs.callback-url"].value == "http://testserver"
    response = client.get("/auth/signin", {"callbackUrl": value})
    assert response.status_code == 200
    assert 'value="http://testserver"' in response.content.decode()


def test_disallowed_host_is_400_not_500(client):
    response = client.get("/auth/session", HTTP_HOST="evil.example")
    assert response.status_code == 400
