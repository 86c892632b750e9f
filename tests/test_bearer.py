"""Bearer sessions: ``Authorization: Bearer <session token>`` with ``WEBAUTH["bearer"]``.

The token is the session cookie's value. A bearer request takes its session from
the header alone (cookies ignored, contrib.auth's user too), gets ``401`` JSON
where a browser is redirected, and never receives a session cookie. The Auth.js
routes ignore the header; the app routes under ``/auth/app/`` read nothing else.
Hostile headers never give a 500, and no token reaches the log.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import Client, RequestFactory
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.bearer import (
    MAX_TOKEN_LENGTH,
    bearer_token,
    is_bearer_request,
    session_required,
    token_answer,
)
from webauth.conf import get_config
from webauth.models import Session
from webauth.signals import session_read, signed_out
from webauth.test import session_cookie_for

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"


def configure(settings, strategy="jwt", **extra):
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": ["webauth.providers.DjangoCredentials"],
        "bearer": True,
        **(
            {"adapter": ADAPTER, "session": {"strategy": "database"}}
            if strategy == "database"
            else {}
        ),
        **extra,
    }


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    configure(settings, request.param)
    return request.param


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="pw", first_name="Alice"
    )


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", email="bob@example.com", password="pw")


def token_for(user):
    return session_cookie_for(user)[1]


def auth(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def session_cookies_set(response):
    return [name for name in response.cookies if COOKIE in name]


# -- the option ---------------------------------------------------------------------------


def test_bearer_is_off_by_default():
    assert get_config().bearer is False


@pytest.mark.parametrize("value", ["yes", 1, {"on": True}])
def test_bearer_must_be_a_bool(settings, value):
    settings.WEBAUTH = {"secret": SECRET, "bearer": value}
    with pytest.raises(ImproperlyConfigured, match="bearer"):
        get_config()


# -- reading the header --------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, token",
    [
        ("Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl"),
        ("bearer abc", "abc"),
        ("BEARER abc", "abc"),
        ("Bearer\tabc", "abc"),
        ("  Bearer   abc  ", "abc"),
        ("Bearer a+b/c==", "a+b/c=="),
        ("Bearer", None),
        ("Bearer ", None),
        ("Bearerx", None),  # 7 characters: another scheme
        ("BearerXabc", None),  # only a space or a tab ends the scheme
        ("Bearer\x0babc", None),
        ("Bearer\t", None),
        ("Bearerabc", None),
        ("Bearer a b", None),
        ("Bearer a, Bearer b", None),
        ("Bearer a\x00b", None),
        ("Bearer a\r\nX-Injected: 1", None),
        ("Bearer caf\xe9", None),
        ("Bearer %41%42", None),
        ("Bearer =abc", None),
        ("Bearer a=b", None),
        ("Bearer " + "A" * 16385, None),
        ("Basic YWxpY2U6cHc=", None),
        ("Token abc", None),
        ("", None),
    ],
)
def test_bearer_token_takes_only_a_well_formed_token(settings, header, token):
    configure(settings)
    request = RequestFactory().get("/", HTTP_AUTHORIZATION=header)
    assert bearer_token(request) == token
    # A bearer request whatever its token: its cookies are not looked at.
    scheme = header.strip().split(" ")[0].split("\t")[0].lower()
    assert is_bearer_request(request) is (scheme == "bearer")


def test_the_longest_token_is_read(settings):
    configure(settings)
    assert MAX_TOKEN_LENGTH == 16384
    value = "A" * 16384
    assert bearer_token(RequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {value}")) == value


@pytest.mark.parametrize("value", [None, 7, b"Bearer abc", ["Bearer abc"]])
def test_a_header_that_is_no_string_is_no_token(settings, value):
    # Django's own requests hold strings; a middleware or test of a project's
    # may put anything in META, which must not break reading the session.
    configure(settings)
    request = RequestFactory().get("/")
    request.META["HTTP_AUTHORIZATION"] = value
    assert bearer_token(request) is None
    assert is_bearer_request(request) is False


def test_the_token_answer_carries_the_session_and_the_token():
    from types import MappingProxyType

    expires = datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC)
    session = MappingProxyType({"user": {"name": "Ada"}})
    answer = token_answer(session, "tok", expires)
    assert answer == {
        "user": {"name": "Ada"},
        "sessionToken": "tok",
        "tokenType": "Bearer",
        "expires": "2031-01-02T03:04:05.000Z",
    }
    assert token_answer(None, "tok", expires) == {
        "sessionToken": "tok",
        "tokenType": "Bearer",
        "expires": "2031-01-02T03:04:05.000Z",
    }


def test_with_bearer_off_the_header_is_nothing(settings):
    settings.WEBAUTH = {"secret": SECRET}
    request = RequestFactory().get("/", HTTP_AUTHORIZATION="Bearer abc")
    assert bearer_token(request) is None
    assert is_bearer_request(request) is False


def test_with_bearer_off_a_header_neither_signs_in_nor_hides_the_cookie(settings, alice, bob):
    settings.WEBAUTH = {"secret": SECRET, "providers": ["webauth.providers.DjangoCredentials"]}
    client = Client()
    assert client.get("/whoami/", **auth(token_for(alice))).json()["authenticated"] is False
    client.cookies[COOKIE] = token_for(bob)
    assert client.get("/whoami/", **auth("garbage")).json()["username"] == "bob"


# -- request.user, request.auth_session, helpers ----------------------------------------------


def test_a_bearer_token_signs_the_request_in(strategy, alice):
    client = Client()
    data = client.get("/whoami/", **auth(token_for(alice))).json()
    assert data["authenticated"] is True and data["username"] == "alice"
    assert data["session"]["user"]["email"] == "alice@example.com"
    assert client.get("/session-only/", **auth(token_for(alice))).json()["session"]["user"][
        "email"
    ] == ("alice@example.com")


def test_async_views_read_the_bearer_session(strategy, alice):
    data = Client().get("/session-async/", **auth(token_for(alice))).json()
    assert data["authenticated"] is True and data["username"] == "alice"
    assert data["session"]["user"]["email"] == "alice@example.com"
    assert data["auth_session_matches"] is True


def test_the_header_wins_over_a_cookie_of_another_user(strategy, alice, bob):
    client = Client()
    client.cookies[COOKIE] = token_for(bob)
    data = client.get("/whoami/", **auth(token_for(alice))).json()
    assert data["username"] == "alice"


@pytest.mark.parametrize("header", ["Bearer garbage", "Bearer", "Bearer a b", "bearer x.y.z"])
def test_a_broken_token_is_no_session_even_with_a_valid_cookie(strategy, alice, header):
    client = Client()
    client.cookies[COOKIE] = token_for(alice)
    data = client.get("/whoami/", HTTP_AUTHORIZATION=header).json()
    assert data["authenticated"] is False and data["session"] is None
    async_data = client.get("/session-async/", HTTP_AUTHORIZATION=header).json()
    assert async_data["authenticated"] is False and async_data["session"] is None


def test_contrib_auths_user_does_not_stand_in_on_a_bearer_request(settings, alice):
    configure(settings)
    client = Client()
    client.force_login(alice)  # django.contrib.sessions' cookie
    assert client.get("/whoami/").json()["username"] == "alice"
    assert client.get("/whoami/", **auth("garbage")).json()["authenticated"] is False
    assert client.get("/whoami-async/", **auth("garbage")).json()["authenticated"] is False


def test_a_deactivated_user_or_a_new_password_ends_the_bearer_session(strategy, alice):
    token = token_for(alice)
    client = Client()
    assert client.get("/whoami/", **auth(token)).json()["authenticated"] is True
    alice.set_password("another")
    alice.save()
    assert client.get("/whoami/", **auth(token)).json()["authenticated"] is False


def test_an_expired_jwt_is_no_session(settings, alice, caplog):
    configure(settings, session={"max_age": 60})
    with freeze_time(datetime.now(UTC) - timedelta(minutes=5)):
        token = token_for(alice)
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        assert Client().get("/whoami/", **auth(token)).json()["authenticated"] is False
    # An app sending an old token is everyday traffic: a warning, never an error.
    assert "[auth][warn][JWTSessionError]" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_token_for_https_is_not_read_over_http(settings, alice):
    # The JWT's key depends on the cookie's name, __Secure- prefix included.
    configure(settings)
    _, token = session_cookie_for(alice, secure=True)
    assert Client().get("/whoami/", **auth(token)).json()["authenticated"] is False
    data = Client().get("/whoami/", secure=True, **auth(token)).json()
    assert data["authenticated"] is True


# -- no session cookie on a bearer response ----------------------------------------------


def test_a_bearer_response_never_sets_the_session_cookie(settings, alice):
    configure(settings, session={"update_age": 0})  # a cookie request would get a new JWT
    token = token_for(alice)
    cookie_client = Client()
    cookie_client.cookies[COOKIE] = token
    assert session_cookies_set(cookie_client.get("/whoami/")) == [COOKIE]

    response = Client().get("/whoami/", **auth(token))
    assert response.json()["authenticated"] is True
    assert session_cookies_set(response) == []


def test_a_bad_token_does_not_delete_the_cookie(strategy, alice):
    client = Client()
    client.cookies[COOKIE] = token_for(alice)
    # Without the header a broken cookie is deleted; a broken header deletes nothing.
    response = client.get("/whoami/", **auth("x.y.z.w.v"))
    assert session_cookies_set(response) == []
    assert client.get("/whoami/").json()["username"] == "alice"


# -- what a bearer request without a session gets --------------------------------------------


@pytest.mark.parametrize("path", ["/private/", "/private-async/", "/private-cbv/"])
def test_auth_required_answers_401_with_www_authenticate(strategy, alice, path):
    client = Client()
    client.cookies[COOKIE] = token_for(alice)  # ignored
    response = client.get(path, **auth("expired-or-forged"))
    assert response.status_code == 401
    assert response.json() == {"error": "SessionRequired"}
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert "no-store" in response["Cache-Control"]
    assert Client().get(path, **auth(token_for(alice))).status_code == 200


def test_the_401_is_never_cached():
    # It answers one token: no shared cache may serve it for another.
    response = session_required()
    assert response.status_code == 401
    assert response["Cache-Control"] == "private, no-cache, no-store"
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'


def test_redirect_to_is_not_used_for_bearer_requests(settings):
    configure(settings)
    response = Client().get("/private-custom/", **auth("nope"))
    assert response.status_code == 401 and "Location" not in response


def test_protected_paths_answer_401_to_a_bearer_request(settings, alice):
    configure(settings, protected_paths=["/account/"])
    response = Client().get("/account/settings/", **auth("nope"))
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    ok = Client().get("/account/settings/", **auth(token_for(alice)))
    assert ok.status_code == 200 and ok.json()["username"] == "alice"
    assert Client().get("/account/settings/").status_code == 302  # a browser: the sign-in page


# -- the Auth.js routes ignore the header --------------------------------------------------


def test_auth_session_reads_the_cookie_not_the_header(strategy, alice, bob):
    assert Client().get("/auth/session", **auth(token_for(alice))).json() is None
    client = Client()
    client.cookies[COOKIE] = token_for(bob)
    body = client.get("/auth/session", **auth(token_for(alice))).json()
    assert body["user"]["email"] == "bob@example.com"


def test_the_header_is_no_csrf_token_for_the_cookie_routes(strategy, alice):
    client = Client()
    client.cookies[COOKIE] = token_for(alice)
    headers = auth(token_for(alice))
    update = client.post(
        "/auth/session", {"data": {"x": 1}}, content_type="application/json", **headers
    )
    assert update.status_code == 400 and update.content == b"null"
    signout = client.post("/auth/signout", {}, **headers)
    assert signout.status_code == 302
    assert client.get("/auth/session").json()["user"]["email"] == "alice@example.com"


def test_a_cookie_route_read_after_the_middleware_read_the_header(settings, alice, bob):
    # A protected /auth/ prefix makes the middleware read the session before the
    # route; the route still answers from the cookie.
    configure(settings, protected_paths=["/auth/session"])
    client = Client()
    client.cookies[COOKIE] = token_for(bob)
    body = client.get("/auth/session", **auth(token_for(alice))).json()
    assert body["user"]["email"] == "bob@example.com"


# -- POST /auth/app/session --------------------------------------------------------------


def app_post(path, token=None, data=None, client=None, **headers):
    client = client or Client()
    if token is not None:
        headers.update(auth(token))
    return client.post(path, data or {}, content_type="application/json", **headers)


def test_the_app_routes_need_bearer_on(settings, alice):
    settings.WEBAUTH = {"secret": SECRET}
    for route in ("session", "signout", "signout-everywhere"):
        response = app_post(f"/auth/app/{route}", token_for(alice))
        assert response.status_code == 404
        assert response.json() == {"error": "UnknownAction"}


def test_the_app_routes_take_post_only(strategy, alice):
    response = Client().get("/auth/app/session", **auth(token_for(alice)))
    assert response.status_code == 405 and response["Allow"] == "POST"


@pytest.mark.parametrize("route", ["session", "signout", "signout-everywhere"])
def test_a_cookie_never_stands_in_for_the_header_on_the_app_routes(strategy, alice, route):
    client = Client()
    client.cookies[COOKIE] = token_for(alice)
    csrf = csrf_pair(client)
    response = client.post(
        f"/auth/app/{route}", {"csrfToken": csrf}, content_type="application/json"
    )
    assert response.status_code == 401
    assert response.json() == {"error": "SessionRequired"}
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/auth/session").json()["user"]["email"] == "alice@example.com"


def test_refresh_a_jwt(settings, alice):
    configure(settings)
    with freeze_time(datetime.now(UTC) - timedelta(days=2)):
        old = token_for(alice)
    seen = []
    session_read.connect(receiver := lambda **kw: seen.append(kw))
    try:
        response = app_post("/auth/app/session", old)
    finally:
        session_read.disconnect(receiver)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user"] == {
        "name": "Alice",
        "email": "alice@example.com",
    }  # no image on a Django user: left out
    assert body["tokenType"] == "Bearer"
    assert body["sessionToken"] != old
    claims = jose.decode(token=body["sessionToken"], secret=SECRET, salt=COOKIE)
    assert claims["sub"] == str(alice.pk)
    expires = datetime.fromisoformat(body["expires"].replace("Z", "+00:00"))
    assert expires.timestamp() == claims["exp"]
    assert abs(claims["exp"] - (time.time() + 30 * 24 * 3600)) < 5
    assert "no-store" in response["Cache-Control"]
    assert session_cookies_set(response) == [] and not response.cookies
    assert len(seen) == 1 and seen[0]["token"]["sub"] == str(alice.pk)
    # The new token works as a bearer token.
    assert Client().get("/whoami/", **auth(body["sessionToken"])).json()["username"] == "alice"


def test_a_refresh_never_passes_the_absolute_lifetime(settings, alice):
    configure(settings, session={"absolute_max_age": 3600})
    start = datetime.now(UTC) - timedelta(minutes=50)
    with freeze_time(start):
        token = token_for(alice)
    body = app_post("/auth/app/session", token).json()
    claims = jose.decode(token=body["sessionToken"], secret=SECRET, salt=COOKIE)
    assert claims["exp"] <= start.timestamp() + 3600 + 1
    with freeze_time(start + timedelta(minutes=61)):
        late = app_post("/auth/app/session", body["sessionToken"])
    assert late.status_code == 401


def test_refresh_a_database_session(settings, alice):
    configure(settings, "database", session={"strategy": "database", "update_age": 0})
    token = token_for(alice)
    row = Session.objects.get()
    Session.objects.filter(pk=row.pk).update(expires=datetime.now(UTC) + timedelta(days=1))
    body = app_post("/auth/app/session", token).json()
    assert body["sessionToken"] == token and body["tokenType"] == "Bearer"
    row.refresh_from_db()
    assert row.expires > datetime.now(UTC) + timedelta(days=29)
    expires = datetime.fromisoformat(body["expires"].replace("Z", "+00:00"))
    assert abs((expires - row.expires).total_seconds()) < 1


def test_a_database_refresh_before_update_age_keeps_the_stored_expiry(settings, alice):
    configure(settings, "database")
    token = token_for(alice)
    stored = Session.objects.get().expires
    body = app_post("/auth/app/session", token).json()
    expires = datetime.fromisoformat(body["expires"].replace("Z", "+00:00"))
    assert abs((expires - stored).total_seconds()) < 1
    assert Session.objects.get().expires == stored


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer nope", "Bearer a b"])
def test_refresh_without_a_working_token_is_401(strategy, header):
    headers = {"HTTP_AUTHORIZATION": header} if header is not None else {}
    response = app_post("/auth/app/session", **headers)
    assert response.status_code == 401
    assert response.json() == {"error": "SessionRequired"}


def test_an_update_runs_the_callbacks_with_trigger_update(settings, alice):
    calls = []

    def jwt_callback(token, trigger=None, session=None, **kw):
        calls.append(("jwt", trigger, session))
        if trigger == "update":
            return {**token, "name": session["name"]}
        return token

    def session_callback(session, token, trigger=None, new_session=None, **kw):
        calls.append(("session", trigger, new_session))
        return {**session, "plan": token.get("plan", "free")}

    configure(settings, callbacks={"jwt": jwt_callback, "session": session_callback})
    body = app_post("/auth/app/session", token_for(alice), {"data": {"name": "Al"}}).json()
    assert calls == [("jwt", "update", {"name": "Al"}), ("session", "update", {"name": "Al"})]
    assert body["user"]["name"] == "Al" and body["plan"] == "free"
    claims = jose.decode(token=body["sessionToken"], secret=SECRET, salt=COOKIE)
    assert claims["name"] == "Al"
    calls.clear()
    app_post("/auth/app/session", body["sessionToken"])
    assert calls == [("jwt", None, None), ("session", None, None)]


def test_updates_are_rate_limited_as_the_cookie_route(settings, alice):
    configure(settings, rate_limits={"session_update": "2/h/ip"})
    token = token_for(alice)
    for _ in range(2):
        assert app_post("/auth/app/session", token, {"data": {}}).status_code == 200
    limited = app_post("/auth/app/session", token, {"data": {}})
    assert limited.status_code == 429 and limited.json()["error"] == "RateLimited"
    assert app_post("/auth/app/session", token).status_code == 200  # a plain refresh


# -- signing out ------------------------------------------------------------------------


def test_signout_deletes_a_database_session(settings, alice):
    configure(settings, "database")
    token = token_for(alice)
    other = token_for(alice)
    events = []
    signed_out.connect(receiver := lambda **kw: events.append(kw))
    try:
        response = app_post("/auth/app/signout", token)
    finally:
        signed_out.disconnect(receiver)
    assert response.status_code == 200 and response.json() == {"revoked": True}
    assert len(events) == 1 and events[0]["session"].user_id == str(alice.pk)
    assert Client().get("/whoami/", **auth(token)).json()["authenticated"] is False
    assert Client().get("/whoami/", **auth(other)).json()["authenticated"] is True
    again = app_post("/auth/app/signout", token)
    assert again.status_code == 200 and again.json() == {"revoked": False}


def test_signout_of_a_jwt_is_client_side(settings, alice):
    configure(settings)
    token = token_for(alice)
    events = []
    signed_out.connect(receiver := lambda **kw: events.append(kw))
    try:
        response = app_post("/auth/app/signout", token)
        garbage = app_post("/auth/app/signout", "not.a.token")
    finally:
        signed_out.disconnect(receiver)
    assert response.status_code == 200 and response.json() == {"revoked": False}
    assert garbage.status_code == 200 and garbage.json() == {"revoked": False}
    assert [e["token"]["sub"] for e in events] == [str(alice.pk)]
    assert not response.cookies


def test_signout_everywhere_deletes_every_database_session_of_the_user(settings, alice, bob):
    configure(settings, "database")
    tokens = [token_for(alice) for _ in range(3)]
    bobs = token_for(bob)
    response = app_post("/auth/app/signout-everywhere", tokens[0])
    assert response.status_code == 200
    assert response.json() == {"revoked": True, "sessions": 3}
    for token in tokens:
        assert Client().get("/whoami/", **auth(token)).json()["authenticated"] is False
    assert Client().get("/whoami/", **auth(bobs)).json()["username"] == "bob"
    assert app_post("/auth/app/signout-everywhere", tokens[0]).status_code == 401


def test_signout_everywhere_under_jwt_says_nothing_was_revoked(settings, alice):
    configure(settings)
    response = app_post("/auth/app/signout-everywhere", token_for(alice))
    assert response.status_code == 200 and response.json() == {"revoked": False}
    assert app_post("/auth/app/signout-everywhere", "forged").status_code == 401


# -- hostile headers --------------------------------------------------------------------

ROUTES = ("session", "signout", "signout-everywhere")

HOSTILE = [
    "Bearer",
    "Bearer ",
    "Bearer \x00",
    "Bearer a\x00b",
    "Bearer \x7f\x7f",
    "Bearer " + "A" * 100_000,
    "Bearer " + "a." * 5_000,
    "Bearer ....",
    "Bearer a.b.c.d.e",
    "Bearer a.b.c.d.e.f",
    "Bearer eyJhbGciOiJub25lIn0..x.y.z",
    "Bearer eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0....",
    "Bearer eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2Q0JDLUhTNTEyIiwia2lkIjoieCJ9..AAAA.AAAA.AAAA",
    "Bearer ===",
    "Bearer a, Bearer b",
    "Bearer \u2028",
    "Bearer caf\xe9",
    "Bearer ../../etc/passwd",
    "Bearer %00%ff",
    "Bearer {}",
    'Bearer realm="x", error="y"',
    "Bearer\r\nSet-Cookie: x=y",
    "BEARER " + "~" * 300,
    "Basic " + "=" * 50,
    "Negotiate abc",
    "\x00",
    " " * 1000,
]


@pytest.mark.parametrize("header", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_authorization_headers_never_give_a_500(strategy, alice, header, caplog):
    client = Client(raise_request_exception=False)
    client.cookies[COOKIE] = token_for(alice)
    h = {"HTTP_AUTHORIZATION": header}
    stripped = header.lstrip(" \t")
    bearer = stripped[:6].lower() == "bearer" and stripped[6:7] in ("", " ", "\t")
    with caplog.at_level(logging.DEBUG, logger="webauth"):  # logging them must not fail
        whoami = client.get("/whoami/", **h)
        private = client.get("/private/", **h)
        answers = [app_post(f"/auth/app/{r}", client=client, **h) for r in ROUTES]
        cookie_route = client.get("/auth/session", **h)
    assert whoami.status_code == 200
    assert whoami.json()["authenticated"] is (not bearer)
    assert private.status_code == (401 if bearer else 200)
    for answer in answers:
        assert answer.status_code in (200, 401), answer.content
    assert cookie_route.status_code == 200
    assert cookie_route.json()["user"]["email"] == "alice@example.com"


BODIES = {
    # Found by the contract test (tests/test_openapi_contract.py): a 500 before.
    "multipart without boundary": ("multipart/form-data", b'{"data": null}', 200),
    "multipart broken": (
        "multipart/form-data; boundary=zz",
        b"--zz\r\nContent-Disposition: x",
        200,
    ),
    "too many form fields": (
        "application/x-www-form-urlencoded",
        b"&".join(b"f%d=1" % i for i in range(1500)),
        400,
    ),
    "larger than DATA_UPLOAD_MAX_MEMORY_SIZE": (
        "application/json",
        b'{"data": "' + b"a" * 3_000_000 + b'"}',
        400,
    ),
}


@pytest.mark.parametrize("body", list(BODIES))
def test_a_body_django_refuses_is_the_requests_fault_not_a_500(strategy, alice, body):
    content_type, data, status = BODIES[body]
    client = Client(raise_request_exception=False)
    token = token_for(alice)
    response = client.generic(
        "POST", "/auth/app/session", data, content_type=content_type, **auth(token)
    )
    assert response.status_code == status, response.content
    if status == 400:
        assert response.json()["error"] == "InvalidRequest"
        assert response["Cache-Control"] == "private, no-cache, no-store"
    else:  # no readable body: a refresh
        assert response.json()["user"]["email"] == "alice@example.com"
    for route in ("signout", "signout-everywhere"):  # they read no body
        answer = client.generic(
            "POST", f"/auth/app/{route}", data, content_type=content_type, **auth(token)
        )
        assert answer.status_code in (200, 401), answer.content


def test_tokens_are_never_logged(strategy, alice, caplog):
    token = token_for(alice)
    tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        refreshed = app_post("/auth/app/session", token, {"data": {"x": 1}}).json()
        Client().get("/whoami/", **auth(tampered))
        Client().get("/private/", **auth(tampered))
        app_post("/auth/app/session", tampered)
        app_post("/auth/app/signout", tampered)
        app_post("/auth/app/signout-everywhere", tampered)
        app_post("/auth/app/signout", token)
    if strategy == "jwt":
        assert caplog.records  # the tampered token was reported, without itself
    text = "\n".join(
        f"{r.getMessage()} {r.exc_text or ''} {r.args!r} {r.__dict__!r}" for r in caplog.records
    )
    for secret in {token, tampered, refreshed["sessionToken"]}:
        for piece in (secret, secret[-40:], secret[:40]):
            assert piece not in text


def test_the_app_routes_have_names_and_take_a_trailing_slash(settings, alice):
    from django.urls import reverse

    configure(settings)
    assert reverse("webauth:app-session") == "/auth/app/session"
    assert reverse("webauth:app-signout") == "/auth/app/signout"
    assert reverse("webauth:app-signout-everywhere") == "/auth/app/signout-everywhere"
    assert app_post("/auth/app/session/", token_for(alice)).status_code == 200


# -- under ASGI ------------------------------------------------------------------------


def test_under_asgi_the_header_alone_decides(strategy, alice, bob, async_client):
    from asgiref.sync import async_to_sync

    get = async_to_sync(async_client.get)
    async_client.cookies[COOKIE] = token_for(bob)
    data = get("/session-async/", headers={"Authorization": f"Bearer {token_for(alice)}"}).json()
    assert data["username"] == "alice" and data["session"]["user"]["email"] == "alice@example.com"
    broken = get("/private-async/", headers={"Authorization": "Bearer nope"})
    assert broken.status_code == 401 and broken["WWW-Authenticate"].startswith("Bearer")
    assert not broken.cookies
    assert get("/session-async/").json()["username"] == "bob"


def test_under_asgi_protected_paths_answer_401(settings, alice, async_client):
    from asgiref.sync import async_to_sync

    configure(settings, protected_paths=["/account/"])
    get = async_to_sync(async_client.get)
    assert get("/account/settings/", headers={"Authorization": "Bearer x"}).status_code == 401
    ok = get("/account/settings/", headers={"Authorization": f"Bearer {token_for(alice)}"})
    assert ok.status_code == 200 and ok.json()["username"] == "alice"
