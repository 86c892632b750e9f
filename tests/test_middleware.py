"""``webauth.middleware.AuthMiddleware``: ``request.auth_session`` and ``request.user``.

Covers Integrations A and B of the spec (sections 4.2 and 4.3): the session and the
``AUTH_USER_MODEL`` user attached lazily to each request, the fall-back to
``django.contrib.auth``, sliding refresh of the JWT cookie, ``protected_paths``
(rule 5) and chunked session cookies.
"""

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.utils.http import http_date
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.middleware import AuthMiddleware
from webauth.test import force_sign_in, session_cookie_for

from .support.helpers import csrf_pair

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
T0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
MAX_AGE = 30 * 24 * 3600

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


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", password="battery staple")


def claims_of(value):
    return jose.decode(token=value, secret=SECRET, salt=COOKIE)


def through_middleware(rf, cookies=None, path="/"):
    """Run a RequestFactory request through the real middleware; return what the view saw."""
    for name, value in (cookies or {}).items():
        rf.cookies[name] = value
    seen = {}

    def view(request):
        seen["request"] = request
        return HttpResponse("ok")

    seen["response"] = AuthMiddleware(view)(rf.get(path))
    return seen["request"], seen["response"]


# -- request.auth_session ----------------------------------------------------------------


def test_anonymous_request_has_no_session(client):
    data = client.get("/whoami/").json()
    assert data["auth_session_is_none"] is True
    assert data["session"] is None
    assert data["authenticated"] is False


def test_valid_cookie_gives_the_session_dict(client, alice):
    with freeze_time(T0):
        force_sign_in(client, alice)
        response = client.get("/session-only/")
    assert response.json()["session"] == {
        "user": {"name": "Alice Liddell", "email": "alice@example.com"},
        "expires": "2030-01-31T12:00:00.000Z",
    }


def test_auth_session_is_a_plain_dict_not_a_proxy(rf, alice):
    request, _ = through_middleware(rf, dict([session_cookie_for(alice)]))
    assert type(request.auth_session) is dict
    assert request.auth_session["user"]["email"] == "alice@example.com"


def test_auth_session_is_none_itself_when_anonymous(rf):
    request, _ = through_middleware(rf)
    assert request.auth_session is None


def test_auth_session_can_be_assigned(rf, alice):
    request, _ = through_middleware(rf, dict([session_cookie_for(alice)]))
    request.auth_session = {"user": {"name": "Replaced"}, "expires": "x"}
    assert request.auth_session["user"]["name"] == "Replaced"


# -- request.user ------------------------------------------------------------------------


def test_request_user_is_the_user_model_instance_of_sub(rf, alice):
    request, _ = through_middleware(rf, dict([session_cookie_for(alice)]))
    assert isinstance(request.user, get_user_model())
    assert request.user.pk == alice.pk
    assert request.user.is_authenticated


def test_request_user_through_the_test_client(client, alice):
    force_sign_in(client, alice)
    data = client.get("/whoami/").json()
    assert data["authenticated"] is True
    assert data["username"] == "alice"


@pytest.mark.parametrize("sub", ["987654", "not-a-number", "9" * 30, "-1"])
def test_sub_without_a_user_is_anonymous_but_keeps_its_session(client, alice, sub):
    force_sign_in(client, {"id": sub, "name": "Ghost", "email": "ghost@example.com"})
    data = client.get("/whoami/").json()
    assert data["authenticated"] is False
    assert data["session"]["user"]["name"] == "Ghost"


def test_request_user_of_unknown_sub_is_anonymous_user(rf):
    request, _ = through_middleware(rf, dict([session_cookie_for({"id": "424242"})]))
    assert isinstance(request.user, AnonymousUser)


def test_inactive_user_is_anonymous(client, alice):
    force_sign_in(client, alice)
    alice.is_active = False
    alice.save()
    assert client.get("/whoami/").json()["authenticated"] is False


def test_deleted_user_is_anonymous(client, alice):
    force_sign_in(client, alice)
    alice.delete()
    assert client.get("/whoami/").json()["authenticated"] is False


def tampered(token):
    """Flip one character of the JWE's ciphertext."""
    header, key, iv, ciphertext, tag = token.split(".")
    flipped = ("A" if ciphertext[5] != "A" else "B").join([ciphertext[:5], ciphertext[6:]])
    return ".".join([header, key, iv, flipped, tag])


def expired(user):
    with freeze_time("2020-01-01"):
        return session_cookie_for(user)[1]


def wrong_secret(user):
    return jose.encode(token={"sub": str(user.pk)}, secret="another-" + "s" * 40, salt=COOKIE)


@pytest.mark.parametrize(
    "make_cookie",
    [
        pytest.param(lambda user: "garbage", id="garbage"),
        pytest.param(lambda user: "a.b.c.d.e", id="five-garbage-parts"),
        pytest.param(lambda user: tampered(session_cookie_for(user)[1]), id="tampered"),
        pytest.param(expired, id="expired"),
        pytest.param(wrong_secret, id="wrong-secret"),
    ],
)
def test_unusable_cookie_is_anonymous_and_deleted(client, alice, make_cookie):
    client.cookies[COOKIE] = make_cookie(alice)
    response = client.get("/whoami/")
    assert response.status_code == 200
    data = response.json()
    assert data["authenticated"] is False
    assert data["auth_session_is_none"] is True
    assert response.cookies[COOKIE]["max-age"] == "0"
    assert response.cookies[COOKIE].value == ""


# -- django.contrib.auth alongside -------------------------------------------------------


def test_contrib_force_login_still_gives_request_user(client, bob):
    client.force_login(bob)
    data = client.get("/whoami/").json()
    assert data["authenticated"] is True
    assert data["username"] == "bob"
    assert data["auth_session_is_none"] is True


def test_webauth_session_takes_precedence_over_contrib_login(client, alice, bob):
    client.force_login(bob)
    force_sign_in(client, alice)
    assert client.get("/whoami/").json()["username"] == "alice"


def test_unusable_webauth_cookie_falls_back_to_contrib_login(client, bob):
    client.force_login(bob)
    client.cookies[COOKIE] = "garbage"
    assert client.get("/whoami/").json()["username"] == "bob"


def test_contrib_login_in_the_same_request_sets_request_user(client, alice, bob):
    force_sign_in(client, bob)
    response = client.post("/contrib-login/", {"username": "alice", "password": "correct horse"})
    assert response.json() == {"username": "alice"}


def test_works_without_contrib_auth_middleware(client, alice, settings):
    settings.MIDDLEWARE = [
        "django.middleware.common.CommonMiddleware",
        "webauth.middleware.AuthMiddleware",
    ]
    assert client.get("/whoami/").json()["authenticated"] is False
    assert client.get("/whoami-async/").json()["authenticated"] is False
    force_sign_in(client, alice)
    assert client.get("/whoami/").json()["username"] == "alice"
    assert client.get("/whoami-async/").json()["username"] == "alice"


# -- request.auser() ---------------------------------------------------------------------


def test_auser_returns_the_webauth_user(client, alice):
    force_sign_in(client, alice)
    assert client.get("/whoami-async/").json() == {"authenticated": True, "username": "alice"}


def test_auser_is_anonymous_without_any_session(client):
    assert client.get("/whoami-async/").json() == {"authenticated": False, "username": ""}


def test_auser_falls_back_to_contrib_login(client, bob):
    client.force_login(bob)
    assert client.get("/whoami-async/").json()["username"] == "bob"


def test_auser_of_inactive_user_is_anonymous(client, alice):
    force_sign_in(client, alice)
    alice.is_active = False
    alice.save()
    assert client.get("/whoami-async/").json()["authenticated"] is False


def test_auser_and_user_are_the_same_user(rf, alice):
    request, _ = through_middleware(rf, dict([session_cookie_for(alice)]))
    user = async_to_sync(request.auser)()
    assert user == request.user == alice


# -- laziness ----------------------------------------------------------------------------


def test_view_reading_nothing_costs_no_query(client, alice, django_assert_num_queries):
    force_sign_in(client, alice)
    with django_assert_num_queries(0):
        assert client.get("/").status_code == 200


def test_reading_only_a_jwt_session_without_a_stored_user_costs_no_query(
    client, django_assert_num_queries
):
    force_sign_in(client, {"id": "ext-1", "name": "Outsider"})  # not a Django user
    with django_assert_num_queries(0):
        assert client.get("/session-only/").json()["session"] is not None


def test_reading_only_the_jwt_session_of_a_django_user_costs_one_query(
    client, alice, django_assert_num_queries
):
    # The session is checked against its user (active, same password): the
    # primary-key lookup request.user makes, and request.user reuses it.
    force_sign_in(client, alice)
    with django_assert_num_queries(1):
        assert client.get("/session-only/").json()["session"] is not None


def test_reading_user_and_session_costs_one_query(client, alice, django_assert_num_queries):
    force_sign_in(client, alice)
    with django_assert_num_queries(1):
        assert client.get("/whoami/").json()["username"] == "alice"


def test_anonymous_request_costs_no_query(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert client.get("/whoami/").json()["authenticated"] is False


def test_session_is_decoded_only_when_read_and_only_once(client, alice, settings):
    calls = []

    def jwt_cb(*, token, **kwargs):
        calls.append(token["sub"])
        return token

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": jwt_cb}}
    force_sign_in(client, alice)
    client.get("/")
    assert calls == []
    client.get("/whoami/")  # reads get_session(), auth_session and user
    assert calls == [str(alice.pk)]


# -- sliding refresh of the JWT cookie ---------------------------------------------------


def test_request_before_update_age_does_not_rewrite_cookie(client, alice):
    with freeze_time(T0):
        force_sign_in(client, alice)
    with freeze_time(T0 + timedelta(hours=23)):
        response = client.get("/whoami/")
    assert response.json()["username"] == "alice"
    assert COOKIE not in response.cookies


def test_request_after_update_age_slides_the_cookie(client, alice):
    with freeze_time(T0):
        old = force_sign_in(client, alice)
    later = T0 + timedelta(days=2)
    with freeze_time(later):
        response = client.get("/whoami/")
        morsel = response.cookies[COOKIE]
        new_claims = claims_of(morsel.value)
        old_claims = claims_of(old)
    assert response.json()["username"] == "alice"
    assert new_claims["exp"] == int(later.timestamp()) + MAX_AGE
    assert new_claims["exp"] > old_claims["exp"]
    assert new_claims["sub"] == str(alice.pk)
    assert morsel["expires"] == http_date(later.timestamp() + MAX_AGE)
    assert morsel["httponly"] and morsel["samesite"] == "Lax" and morsel["path"] == "/"


def test_refresh_keeps_custom_claims(client, alice):
    with freeze_time(T0):
        force_sign_in(client, alice, claims={"role": "editor"})
    with freeze_time(T0 + timedelta(days=2)):
        response = client.get("/whoami/")
        assert claims_of(response.cookies[COOKIE].value)["role"] == "editor"


def test_update_age_zero_refreshes_on_every_read(client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"update_age": 0}}
    with freeze_time(T0):
        force_sign_in(client, alice)
        assert COOKIE in client.get("/session-only/").cookies


def test_view_reading_nothing_never_refreshes(client, alice):
    with freeze_time(T0):
        force_sign_in(client, alice)
    with freeze_time(T0 + timedelta(days=2)):
        response = client.get("/")
    assert COOKIE not in response.cookies


def test_expired_token_deletes_the_cookie(client, alice):
    with freeze_time(T0):
        force_sign_in(client, alice)
    with freeze_time(T0 + timedelta(days=31)):
        response = client.get("/whoami/")
    assert response.json()["authenticated"] is False
    assert response.cookies[COOKIE]["max-age"] == "0"


def test_refresh_over_https_uses_the_secure_cookie(client, alice):
    with freeze_time(T0):
        force_sign_in(client, alice, secure=True)
    with freeze_time(T0 + timedelta(days=2)):
        response = client.get("/whoami/", secure=True)
    assert response.json()["username"] == "alice"
    morsel = response.cookies["__Secure-" + COOKIE]
    assert morsel["secure"]
    assert COOKIE not in response.cookies


# -- protected_paths (spec 4.3 rule 5) ---------------------------------------------------


@pytest.fixture
def protected(settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "protected_paths": ["/account/"]}


def test_protected_path_redirects_anonymous_to_sign_in(client, protected):
    response = client.get("/account/settings/?tab=profile")
    assert response.status_code == 302
    assert response["Location"] == (
        "/auth/signin?callbackUrl=%2Faccount%2Fsettings%2F%3Ftab%3Dprofile&error=SessionRequired"
    )


def test_protected_path_passes_when_signed_in(client, alice, protected):
    force_sign_in(client, alice)
    response = client.get("/account/settings/")
    assert response.status_code == 200
    assert response.json()["username"] == "alice"


def test_protected_path_redirects_with_an_expired_cookie(client, alice, protected):
    with freeze_time("2020-01-01"):
        force_sign_in(client, alice)
    response = client.get("/account/settings/")
    assert response.status_code == 302
    assert response.cookies[COOKIE]["max-age"] == "0"  # as Auth.js's middleware does


@pytest.mark.parametrize(
    "headers",
    [{"HTTP_ACCEPT": "application/json"}, {"HTTP_X_REQUESTED_WITH": "XMLHttpRequest"}],
)
def test_protected_path_answers_json_clients_with_401(client, alice, protected, headers):
    with freeze_time("2020-01-01"):
        force_sign_in(client, alice)  # expired by now: deleted on the way out
    response = client.get("/account/settings/", **headers)
    assert response.status_code == 401
    assert response.json() == {"error": "SessionRequired"}
    assert response.cookies[COOKIE]["max-age"] == "0"


def test_protected_path_still_redirects_browsers(client, protected):
    response = client.get("/account/settings/", HTTP_ACCEPT="text/html,application/json;q=0.9")
    assert response.status_code == 302


def test_paths_outside_protected_paths_are_open(client, protected):
    assert client.get("/whoami/").status_code == 200


def test_contrib_login_alone_does_not_open_protected_paths(client, bob, protected):
    client.force_login(bob)
    assert client.get("/account/settings/").status_code == 302


def test_protected_path_uses_custom_sign_in_page(client, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "protected_paths": ["/account/"],
        "pages": {"sign_in": "/login/"},
    }
    response = client.get("/account/settings/")
    assert response["Location"] == (
        "/login/?callbackUrl=%2Faccount%2Fsettings%2F&error=SessionRequired"
    )


# -- chunked session cookies -------------------------------------------------------------


def add_large_claim(*, token, **kwargs):
    token["large"] = "x" * 6000
    return token


@pytest.fixture
def large_tokens(settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": add_large_claim}}


def sign_in_with_password(client, username="alice", password="correct horse"):
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": username, "password": password},
    )


def joined_chunks(response):
    chunks = {}
    for name, morsel in response.cookies.items():
        if name.startswith(COOKIE + "."):
            chunks[int(name.rsplit(".", 1)[1])] = morsel.value
    return "".join(chunks[i] for i in sorted(chunks))


def test_large_token_is_written_in_chunks(client, alice, large_tokens):
    response = sign_in_with_password(client)
    assert response.status_code == 302
    assert {f"{COOKIE}.0", f"{COOKIE}.1"} <= set(response.cookies)
    assert COOKIE not in response.cookies


def test_chunked_session_cookie_is_read(client, alice, large_tokens):
    sign_in_with_password(client)
    data = client.get("/whoami/").json()
    assert data["username"] == "alice"
    assert data["session"]["user"]["email"] == "alice@example.com"


def test_chunked_session_cookie_is_refreshed_in_chunks(client, alice, large_tokens):
    with freeze_time(T0):
        sign_in_with_password(client)
    with freeze_time(T0 + timedelta(days=2)):
        response = client.get("/whoami/")
        joined = joined_chunks(response)
        assert claims_of(joined)["large"] == "x" * 6000
    assert response.json()["username"] == "alice"


# -- state made on first use ---------------------------------------------------------------


def test_a_request_that_reads_nothing_gets_no_state(rf):
    request = rf.get("/plain")
    response = AuthMiddleware(lambda r: HttpResponse("ok"))(request)
    assert "_webauth" not in request.__dict__
    assert response.cookies == {}


def test_user_logged_out_ends_a_session_nobody_read(rf, alice):
    from django.contrib.auth.signals import user_logged_out

    name, value = session_cookie_for(alice)
    request = rf.get("/logout")
    request.COOKIES[name] = value

    def view(request):
        # A logout that never touched request.user or the session first.
        user_logged_out.send(sender=type(alice), request=request, user=None)
        return HttpResponse("bye")

    response = AuthMiddleware(view)(request)
    assert response.cookies[name]["max-age"] == "0"


# -- Django's LoginRequiredMiddleware ------------------------------------------------------


def test_the_auth_routes_stay_open_under_login_required_middleware(client, settings):
    # With every view behind a session, webauth's own pages must still answer:
    # otherwise the sign-in page would redirect to the sign-in page.
    settings.MIDDLEWARE = [
        *settings.MIDDLEWARE,
        "django.contrib.auth.middleware.LoginRequiredMiddleware",
    ]
    settings.LOGIN_URL = "/auth/signin"
    assert client.get("/auth/signin").status_code == 200
    assert client.get("/auth/csrf").status_code == 200
    assert client.get("/auth/session").status_code == 200
    assert client.get("/whoami/").status_code == 302  # a project view is still closed
