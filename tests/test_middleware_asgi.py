"""webauth under ASGI, through ``django.test.AsyncClient``.

The middleware runs its async path here: routes, sign-in and sign-out, async views
reading ``await request.auser()`` / ``aget_session``, ``@auth_required`` on an async
view, ``protected_paths``, the cookie refresh and the template tag's CSRF cookie.
"""

import re
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.test import force_sign_in, session_cookie_for

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
T0 = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


def get(client, path, **kwargs):
    return async_to_sync(client.get)(path, **kwargs)


def post(client, path, data=None, **kwargs):
    return async_to_sync(client.post)(path, data or {}, **kwargs)


def csrf_token(client):
    response = get(client, "/auth/csrf")
    assert response.status_code == 200
    return response.json()["csrfToken"]


def sign_in_with_password(client, password="correct horse", **extra):
    fields = {"username": "alice", "password": password, **extra}
    return post(client, "/auth/callback/credentials", {"csrfToken": csrf_token(client), **fields})


# -- routes ------------------------------------------------------------------------------


def test_session_route_without_cookie_is_null(async_client):
    response = get(async_client, "/auth/session")
    assert response.status_code == 200
    assert response.content == b"null"
    assert "authjs.csrf-token" in response.cookies


def test_session_route_returns_session_and_slides_cookie(async_client, alice):
    old = force_sign_in(async_client, alice)
    response = get(async_client, "/auth/session")
    assert response.json()["user"] == {"name": "Alice", "email": "alice@example.com"}
    new = response.cookies[COOKIE].value
    assert new != old
    assert jose.decode(token=new, secret=SECRET, salt=COOKIE)["sub"] == str(alice.pk)


def test_csrf_route(async_client):
    response = get(async_client, "/auth/csrf")
    token = response.json()["csrfToken"]
    assert response.cookies["authjs.csrf-token"].coded_value.startswith(token + "%7C")


# -- sign-in and sign-out ----------------------------------------------------------------


def test_sign_in_post_sets_the_session_cookie(async_client, alice):
    response = sign_in_with_password(async_client, callbackUrl="/session-async/")
    assert response.status_code == 302
    assert response["Location"] == "http://testserver/session-async/"
    claims = jose.decode(token=response.cookies[COOKIE].value, secret=SECRET, salt=COOKIE)
    assert claims["sub"] == str(alice.pk)


def test_signed_in_async_client_sees_its_session(async_client, alice):
    sign_in_with_password(async_client)
    data = get(async_client, "/session-async/").json()
    assert data["username"] == "alice"
    assert data["session"]["user"]["email"] == "alice@example.com"


def test_sign_in_with_wrong_password(async_client, alice):
    response = sign_in_with_password(async_client, password="wrong")
    assert response["Location"] == (
        "http://testserver/auth/signin?error=CredentialsSignin&code=credentials"
    )
    assert COOKIE not in response.cookies


def test_sign_in_without_csrf_token(async_client, alice):
    response = post(
        async_client,
        "/auth/callback/credentials",
        {"username": "alice", "password": "correct horse"},
    )
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"


def test_sign_out(async_client, alice):
    sign_in_with_password(async_client)
    response = post(async_client, "/auth/signout", {"csrfToken": csrf_token(async_client)})
    assert response.status_code == 302
    assert response.cookies[COOKIE]["max-age"] == "0"
    assert get(async_client, "/session-async/").json()["authenticated"] is False


# -- async views -------------------------------------------------------------------------


def test_async_view_reads_session_and_user(async_client, alice):
    force_sign_in(async_client, alice)
    data = get(async_client, "/session-async/").json()
    assert data["authenticated"] is True
    assert data["username"] == "alice"
    assert data["auth_session_matches"] is True
    assert data["session"]["user"]["name"] == "Alice"


def test_async_view_anonymous(async_client):
    data = get(async_client, "/session-async/").json()
    assert data == {
        "session": None,
        "auth_session_matches": True,
        "authenticated": False,
        "username": "",
    }


def test_auser_falls_back_to_contrib_login(async_client, alice):
    async_client.force_login(alice)
    data = get(async_client, "/session-async/").json()
    assert data["username"] == "alice"
    assert data["session"] is None


def test_sync_view_under_asgi(async_client, alice):
    force_sign_in(async_client, alice)
    assert get(async_client, "/whoami/").json()["username"] == "alice"


def test_auth_required_async_view_redirects_anonymous(async_client):
    response = get(async_client, "/private-async/")
    assert response.status_code == 302
    assert response["Location"] == (
        "/auth/signin?callbackUrl=%2Fprivate-async%2F&error=SessionRequired"
    )


def test_auth_required_async_view_gives_401_json(async_client):
    response = get(async_client, "/private-async/", headers={"Accept": "application/json"})
    assert response.status_code == 401
    assert response.json() == {"error": "SessionRequired"}


def test_auth_required_async_view_runs_when_signed_in(async_client, alice):
    force_sign_in(async_client, alice)
    response = get(async_client, "/private-async/")
    assert response.status_code == 200
    assert response.json()["session"]["user"]["email"] == "alice@example.com"


def test_auth_required_mixin_on_async_view(async_client, alice):
    response = get(async_client, "/private-cbv-async/")
    assert response["Location"] == (
        "/auth/signin?callbackUrl=%2Fprivate-cbv-async%2F&error=SessionRequired"
    )
    force_sign_in(async_client, alice)
    response = get(async_client, "/private-cbv-async/")
    assert response.json()["session"]["user"]["name"] == "Alice"


# -- middleware on the async path --------------------------------------------------------


def test_protected_path_redirects_anonymous(async_client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "protected_paths": ["/account/"]}
    response = get(async_client, "/account/settings/")
    assert response.status_code == 302
    assert response["Location"] == (
        "/auth/signin?callbackUrl=%2Faccount%2Fsettings%2F&error=SessionRequired"
    )


def test_protected_path_passes_when_signed_in(async_client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "protected_paths": ["/account/"]}
    force_sign_in(async_client, alice)
    assert get(async_client, "/account/settings/").json()["username"] == "alice"


def test_protected_path_redirect_deletes_an_unusable_cookie(async_client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "protected_paths": ["/account/"]}
    async_client.cookies[COOKIE] = "garbage"
    response = get(async_client, "/account/settings/")
    assert response.status_code == 302
    assert response.cookies[COOKIE]["max-age"] == "0"


def test_garbage_cookie_is_deleted_when_read(async_client):
    async_client.cookies[COOKIE] = "garbage"
    response = get(async_client, "/session-async/")
    assert response.json()["session"] is None
    assert response.cookies[COOKIE]["max-age"] == "0"


def test_cookie_untouched_when_view_reads_nothing(async_client):
    async_client.cookies[COOKIE] = "garbage"
    assert COOKIE not in get(async_client, "/").cookies


def test_cookie_slides_after_update_age(async_client, alice):
    with freeze_time(T0, real_asyncio=True):
        force_sign_in(async_client, alice)
        assert COOKIE not in get(async_client, "/session-async/").cookies
    later = T0 + timedelta(days=2)
    with freeze_time(later, real_asyncio=True):
        response = get(async_client, "/session-async/")
        claims = jose.decode(token=response.cookies[COOKIE].value, secret=SECRET, salt=COOKIE)
    assert claims["exp"] == int(later.timestamp()) + 30 * 24 * 3600


def test_signin_buttons_set_their_csrf_cookie(async_client):
    response = get(async_client, "/buttons/")
    [token] = re.findall(r'name="csrfToken" value="([^"]+)"', response.content.decode())
    assert response.cookies["authjs.csrf-token"].coded_value.startswith(token + "%7C")


# -- async callbacks ---------------------------------------------------------------------


async def async_jwt_callback(*, token, **kwargs):
    token["seen_by"] = "async callback"
    return token


def test_async_view_with_async_callbacks(async_client, alice, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": async_jwt_callback}}
    force_sign_in(async_client, alice)
    response = get(async_client, "/session-async/")
    assert response.json()["username"] == "alice"
    assert response.json()["session"]["user"]["name"] == "Alice"
    assert COOKIE not in response.cookies  # nothing to delete, nothing to refresh yet


def test_sync_read_from_async_code_is_an_error_not_a_sign_out(rf, alice, settings):
    from django.core.exceptions import SynchronousOnlyOperation
    from django.http import HttpResponse

    from webauth.middleware import AuthMiddleware

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"jwt": async_jwt_callback}}
    rf.cookies[COOKIE] = session_cookie_for(alice)[1]

    async def view(request):
        return HttpResponse(repr(request.auth_session))  # should be: await aget_session()

    with pytest.raises(SynchronousOnlyOperation, match="aget_session"):
        async_to_sync(AuthMiddleware(view))(rf.get("/"))
