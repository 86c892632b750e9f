"""The view helpers of ``webauth.helpers`` (spec 4.2 and 4.3).

``get_session`` / ``aget_session``, ``get_token`` (cookie or ``Authorization:
Bearer``), ``sign_in`` / ``sign_out`` with their redirect-or-``FormResult`` answers,
and ``signin_url``.
"""

from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.http import HttpResponseBase
from freezegun import freeze_time

from webauth import aget_session, asign_in, asign_out, get_session, get_token, sign_in, sign_out
from webauth import cookies as ck
from webauth import jwt as jose
from webauth.forms import FormResult
from webauth.helpers import signin_url
from webauth.test import force_sign_in, session_cookie_for

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
FAILED_MESSAGE = "Sign in failed. Check the details you provided are correct."

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", email="bob@example.com")


def request_with_cookie(rf, user, *, secure=False, path="/", method="get"):
    name, value = session_cookie_for(user, secure=secure)
    rf.cookies[name] = value
    return getattr(rf, method)(path, secure=secure)


def claims_of(value):
    return jose.decode(token=value, secret=SECRET, salt=COOKIE)


# -- get_session / aget_session ----------------------------------------------------------


def test_get_session_without_cookie_is_none(rf):
    assert get_session(rf.get("/")) is None


def test_get_session_returns_the_session_dict(rf, alice):
    session = get_session(request_with_cookie(rf, alice))
    assert session["user"] == {"name": "Alice", "email": "alice@example.com"}
    assert session["expires"].endswith("Z")


def test_get_session_with_garbage_cookie_is_none(rf):
    rf.cookies[COOKIE] = "garbage"
    assert get_session(rf.get("/")) is None


def test_get_session_runs_the_session_callback(rf, alice, settings):
    def session_cb(*, session, token, **kwargs):
        return {**session, "user_id": token["sub"]}

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"session": session_cb}}
    assert get_session(request_with_cookie(rf, alice))["user_id"] == str(alice.pk)


def test_aget_session_returns_the_same_session(rf, alice):
    request = request_with_cookie(rf, alice)
    assert async_to_sync(aget_session)(request) == get_session(request)


def test_aget_session_without_cookie_is_none(rf):
    assert async_to_sync(aget_session)(rf.get("/")) is None


def test_aget_session_supports_async_callbacks(rf, alice, settings):
    async def session_cb(*, session, **kwargs):
        return {**session, "async": True}

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"session": session_cb}}
    assert async_to_sync(aget_session)(request_with_cookie(rf, alice))["async"] is True


# -- get_token ---------------------------------------------------------------------------


def test_get_token_from_cookie(rf, alice):
    claims = get_token(request_with_cookie(rf, alice))
    assert claims["sub"] == str(alice.pk)
    assert claims["email"] == "alice@example.com"
    assert {"iat", "exp", "jti"} <= set(claims)


def test_get_token_from_bearer_header(rf, alice):
    _, value = session_cookie_for(alice)
    request = rf.get("/", headers={"Authorization": f"Bearer {value}"})
    assert get_token(request)["sub"] == str(alice.pk)


def test_get_token_from_url_encoded_bearer_header(rf, alice):
    _, value = session_cookie_for(alice)
    request = rf.get("/", headers={"Authorization": f"Bearer {quote(value, safe='')}"})
    assert get_token(request)["sub"] == str(alice.pk)


def test_get_token_raw_from_cookie(rf, alice):
    request = request_with_cookie(rf, alice)
    assert get_token(request, raw=True) == request.COOKIES[COOKIE]


def test_get_token_raw_from_bearer_header(rf, alice):
    _, value = session_cookie_for(alice)
    request = rf.get("/", headers={"Authorization": f"Bearer {value}"})
    assert get_token(request, raw=True) == value


def test_cookie_wins_over_bearer_header(rf, alice, bob):
    _, bob_token = session_cookie_for(bob)
    rf.cookies[COOKIE] = session_cookie_for(alice)[1]
    request = rf.get("/", headers={"Authorization": f"Bearer {bob_token}"})
    assert get_token(request)["sub"] == str(alice.pk)


def test_get_token_without_token_is_none(rf):
    assert get_token(rf.get("/")) is None
    assert get_token(rf.get("/"), raw=True) is None


@pytest.mark.parametrize(
    "header", ["Bearer garbage", "Bearer a.b.c.d.e", "Bearer %ff%fe", "Bearer ", "Basic YTpi"]
)
def test_get_token_with_unusable_header_is_none(rf, header):
    assert get_token(rf.get("/", headers={"Authorization": header})) is None


def test_get_token_with_expired_cookie_is_none(rf, alice):
    with freeze_time("2020-01-01"):
        request = request_with_cookie(rf, alice)
    assert get_token(request) is None


def test_get_token_reads_the_secure_cookie_over_https(rf, alice):
    request = request_with_cookie(rf, alice, secure=True)
    assert get_token(request)["sub"] == str(alice.pk)


def test_get_token_ignores_the_plain_cookie_over_https(rf, alice):
    rf.cookies[COOKIE] = session_cookie_for(alice, secure=False)[1]
    request = rf.get("/", secure=True)
    assert get_token(request) is None


def test_get_token_follows_use_secure_cookies(rf, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "use_secure_cookies": True}
    rf.cookies["__Secure-" + COOKIE] = session_cookie_for(alice, secure=True)[1]
    request = rf.get("/")  # plain http, yet webauth sets the __Secure- cookie
    assert get_token(request)["sub"] == str(alice.pk)
    assert get_session(request) is not None  # the same cookie as the middleware reads


def test_get_token_follows_an_https_auth_url(rf, alice, monkeypatch):
    from webauth.conf import reset_config

    monkeypatch.setenv("AUTH_URL", "https://app.example.com/auth")
    reset_config()
    rf.cookies["__Secure-" + COOKIE] = session_cookie_for(alice, secure=True)[1]
    assert get_token(rf.get("/"))["sub"] == str(alice.pk)


def test_get_token_secure_cookie_argument_overrides(rf, alice):
    rf.cookies["__Secure-" + COOKIE] = session_cookie_for(alice, secure=True)[1]
    assert get_token(rf.get("/")) is None
    assert get_token(rf.get("/"), secure_cookie=True)["sub"] == str(alice.pk)


def test_get_token_reassembles_chunked_cookies(rf, alice):
    _, value = session_cookie_for(alice, claims={"large": "y" * 6000})
    size = ck.CHUNK_SIZE
    for i in range(0, len(value), size):
        rf.cookies[f"{COOKIE}.{i // size}"] = value[i : i + size]
    assert get_token(rf.get("/"))["large"] == "y" * 6000


def test_get_token_with_custom_cookie_name_and_salt(rf, alice):
    token = jose.encode(token={"sub": str(alice.pk)}, secret=SECRET, salt="other-salt")
    rf.cookies["my-session"] = token
    request = rf.get("/")
    assert get_token(request, cookie_name="my-session", salt="other-salt")["sub"] == str(alice.pk)
    assert get_token(request, cookie_name="my-session") is None  # salt defaults to the name


# -- sign_in -----------------------------------------------------------------------------


def test_sign_in_with_credentials_redirects_with_session_cookie(rf, alice):
    result = sign_in(
        rf.post("/login/"),
        "credentials",
        redirect_to="/dashboard/",
        options={"username": "alice", "password": "correct horse"},
    )
    assert isinstance(result, HttpResponseBase)
    assert result.status_code == 302
    assert result["Location"] == "http://testserver/dashboard/"
    assert claims_of(result.cookies[COOKIE].value)["sub"] == str(alice.pk)


def test_sign_in_with_bad_credentials_returns_failed_form_result(rf, alice):
    result = sign_in(
        rf.post("/login/"), "credentials", options={"username": "alice", "password": "wrong"}
    )
    assert isinstance(result, FormResult)
    assert result.failed is True
    assert result.field_errors == {}
    assert result.form_errors == [FAILED_MESSAGE]


def test_sign_in_with_unknown_provider_is_a_field_error(rf):
    result = sign_in(rf.post("/login/"), "nope")
    assert result.failed is True
    assert result.field_errors == {"provider_id": ["Unknown provider."]}
    assert result.form_errors == []


def test_sign_in_with_options_that_are_not_a_mapping_is_a_field_error(rf):
    result = sign_in(rf.post("/login/"), "credentials", options=["alice", "correct horse"])
    assert result.failed is True
    assert list(result.field_errors) == ["options"]


def test_sign_in_with_bad_authorization_params_is_a_field_error(rf):
    result = sign_in(rf.post("/login/"), "credentials", authorization_params={"prompt": 1})
    assert result.failed is True
    assert list(result.field_errors) == ["authorization_params"]


def test_sign_in_without_redirect_to_returns_to_the_current_page(rf, alice):
    result = sign_in(
        rf.post("/login/?next=1"),
        "credentials",
        options={"username": "alice", "password": "correct horse"},
    )
    assert result["Location"] == "http://testserver/login/?next=1"


def test_sign_in_takes_redirect_to_from_options(rf, alice):
    result = sign_in(
        rf.post("/login/"),
        "credentials",
        options={"username": "alice", "password": "correct horse", "redirect_to": "/from-opts/"},
    )
    assert result["Location"] == "http://testserver/from-opts/"


def test_sign_in_never_redirects_to_a_foreign_host(rf, alice):
    result = sign_in(
        rf.post("/login/"),
        "credentials",
        redirect_to="https://evil.example/steal",
        options={"username": "alice", "password": "correct horse"},
    )
    assert result["Location"] == "http://testserver"


def test_sign_in_through_a_view_then_the_session_is_there(client, alice):
    response = client.post(
        "/helper-signin/",
        {
            "provider_id": "credentials",
            "redirect_to": "/whoami/",
            "options": {"username": "alice", "password": "correct horse"},
        },
        content_type="application/json",
    )
    assert response.status_code == 302
    assert client.get(response["Location"]).json()["username"] == "alice"


def test_failed_sign_in_through_a_view_sets_no_cookie(client, alice):
    response = client.post(
        "/helper-signin/",
        {"provider_id": "credentials", "options": {"username": "alice", "password": "no"}},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "failed": True,
        "field_errors": {},
        "form_errors": [FAILED_MESSAGE],
    }
    assert COOKIE not in response.cookies


def test_asign_in(rf, alice):
    result = async_to_sync(asign_in)(
        rf.post("/login/"),
        "credentials",
        redirect_to="/async/",
        options={"username": "alice", "password": "correct horse"},
    )
    assert result["Location"] == "http://testserver/async/"
    assert COOKIE in result.cookies


# -- sign_out ----------------------------------------------------------------------------


def test_sign_out_redirects_and_deletes_the_cookie(client, alice):
    force_sign_in(client, alice)
    response = client.post("/helper-signout/?next=/bye/")
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/bye/"
    assert response.cookies[COOKIE]["max-age"] == "0"
    assert client.get("/whoami/").json()["authenticated"] is False


def test_sign_out_without_session_just_redirects(rf):
    result = sign_out(rf.post("/logout/"), redirect_to="/bye/")
    assert result["Location"] == "http://testserver/bye/"
    assert COOKIE not in result.cookies


def test_sign_out_defaults_to_the_home_page(rf, alice):
    result = sign_out(request_with_cookie(rf, alice, method="post"))
    assert result["Location"] == "http://testserver/"


def test_sign_out_never_redirects_to_a_foreign_host(rf, alice):
    result = sign_out(request_with_cookie(rf, alice, method="post"), "https://evil.example/")
    assert result["Location"] == "http://testserver"


def test_sign_out_sends_the_signed_out_signal_with_the_token(rf, alice):
    from webauth.signals import signed_out

    seen = []

    def receiver(sender, token=None, **kwargs):
        seen.append(token["sub"])

    signed_out.connect(receiver)
    try:
        sign_out(request_with_cookie(rf, alice, method="post"))
    finally:
        signed_out.disconnect(receiver)
    assert seen == [str(alice.pk)]


def test_sign_out_deletes_every_chunk(rf, alice):
    _, value = session_cookie_for(alice, claims={"large": "z" * 6000})
    size = ck.CHUNK_SIZE
    names = []
    for i in range(0, len(value), size):
        names.append(f"{COOKIE}.{i // size}")
        rf.cookies[names[-1]] = value[i : i + size]
    result = sign_out(rf.post("/logout/"))
    assert len(names) >= 2
    assert all(result.cookies[name]["max-age"] == "0" for name in names)


def test_asign_out(rf, alice):
    result = async_to_sync(asign_out)(request_with_cookie(rf, alice, method="post"), "/bye/")
    assert result["Location"] == "http://testserver/bye/"
    assert result.cookies[COOKIE]["max-age"] == "0"


def test_sign_out_with_too_long_redirect_is_a_field_error(rf):
    result = sign_out(rf.post("/logout/"), "/" + "x" * 5000)
    assert isinstance(result, FormResult)
    assert result.failed is True
    assert list(result.field_errors) == ["redirect_to"]


# -- signin_url --------------------------------------------------------------------------


def test_signin_url_default(rf):
    assert signin_url(rf.get("/")) == "/auth/signin"


def test_signin_url_with_callback_url(rf):
    assert signin_url(rf.get("/"), callback_url="/private/?a=1") == (
        "/auth/signin?callbackUrl=%2Fprivate%2F%3Fa%3D1"
    )


def test_signin_url_with_error(rf):
    assert signin_url(rf.get("/"), callback_url="/p/", error="SessionRequired") == (
        "/auth/signin?callbackUrl=%2Fp%2F&error=SessionRequired"
    )


def test_signin_url_uses_the_custom_sign_in_page(rf, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"sign_in": "/login/?theme=dark"}}
    assert signin_url(rf.get("/"), callback_url="/p/") == "/login/?theme=dark&callbackUrl=%2Fp%2F"


def test_signin_url_follows_base_path(rf, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "base_path": "/api/auth"}
    assert signin_url(rf.get("/")) == "/api/auth/signin"


# -- sign_in with a redirect-based (OAuth) provider --------------------------------------


@pytest.fixture
def github(settings, monkeypatch):
    from webauth.conf import reset_config

    monkeypatch.setenv("AUTH_GITHUB_ID", "github-client-id")
    monkeypatch.setenv("AUTH_GITHUB_SECRET", "github-client-secret")
    settings.WEBAUTH = {**settings.WEBAUTH, "providers": ["github"]}
    reset_config()


def test_sign_in_with_oauth_provider_redirects_to_the_provider(rf, github):
    result = sign_in(rf.post("/page/"), "github", authorization_params={"prompt": "consent"})
    assert result.status_code == 302
    location = result["Location"]
    assert location.startswith("https://github.com/login/oauth/authorize?")
    assert "client_id=github-client-id" in location and "prompt=consent" in location
    assert {"authjs.state", "authjs.pkce.code_verifier"} <= set(result.cookies)


def test_sign_in_sends_only_authorization_params_to_the_provider(rf, github):
    result = sign_in(rf.post("/page/?next=/x&tab=2"), "github", authorization_params="login=al")
    location = result["Location"]
    assert "login=al" in location
    assert "next=" not in location and "tab=" not in location


def test_sign_in_with_oauth_provider_remembers_redirect_to(rf, github):
    result = sign_in(rf.post("/page/"), "github", redirect_to="/after/")
    morsel = result.cookies["authjs.callback-url"]
    assert ck.decode_value(morsel.coded_value) == "http://testserver/after/"


@pytest.mark.django_db(transaction=True)
def test_sign_in_with_oidc_provider_lands_on_redirect_to(client, live_server, settings):
    from django.core.cache import cache

    from webauth.providers.oauth import OIDC

    from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, authorize, callback, start_idp

    cache.clear()
    idp = start_idp(live_server)
    provider = OIDC(
        id="example", issuer=idp.issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET
    )
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [provider],
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
    }
    response = client.post(
        "/helper-signin/",
        {"provider_id": "example", "redirect_to": "/landing/"},
        content_type="application/json",
    )
    assert response["Location"].startswith(idp.issuer)
    final = callback(client, authorize(idp, response["Location"]))
    assert final.status_code == 302
    assert final["Location"] == "http://testserver/landing/"
    assert COOKIE in final.cookies
