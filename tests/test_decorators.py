"""``@auth_required``, ``AuthRequiredMixin`` and ``session_passes_test``.

Without a session a view redirects to the sign-in page with ``callbackUrl`` (or to
``redirect_to``), or answers ``401`` JSON to a request that asks for JSON; a session
without a ``user`` counts as no session (spec 4.3 rule 4). Sync, async and
class-based views.
"""

import pytest
from asgiref.sync import async_to_sync, iscoroutinefunction
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from freezegun import freeze_time

from webauth.decorators import auth_required, session_passes_test
from webauth.test import force_sign_in, session_cookie_for

from .support import views

COOKIE = "authjs.session-token"

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse", first_name="Alice"
    )


@pytest.fixture
def carol(db):
    return get_user_model().objects.create_user("carol", email="carol@staff.example.com")


def assert_sign_in_redirect(response, callback_url):
    from urllib.parse import quote

    assert response.status_code == 302
    assert response["Location"] == (
        "/auth/signin?callbackUrl=" + quote(callback_url, safe="") + "&error=SessionRequired"
    )


def assert_401_json(response):
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": "SessionRequired"}


# -- @auth_required on a sync view -------------------------------------------------------


def test_anonymous_is_redirected_to_sign_in_with_callback_url(client):
    response = client.get("/private/")
    assert response.status_code == 302
    assert response["Location"] == "/auth/signin?callbackUrl=%2Fprivate%2F&error=SessionRequired"


def test_callback_url_keeps_the_query_string(client):
    assert_sign_in_redirect(client.get("/private/?page=2&q=a b"), "/private/?page=2&q=a%20b")


def test_signed_in_user_gets_the_view(client, alice):
    force_sign_in(client, alice)
    response = client.get("/private/")
    assert response.status_code == 200
    assert response.json()["session"]["user"]["email"] == "alice@example.com"


def test_custom_redirect_to(client):
    response = client.get("/private-custom/")
    assert response.status_code == 302
    assert response["Location"] == "/custom-login/"


def test_sign_in_redirect_follows_custom_sign_in_page(client, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"sign_in": "/login/"}}
    assert client.get("/private/")["Location"] == (
        "/login/?callbackUrl=%2Fprivate%2F&error=SessionRequired"
    )


def test_expired_session_is_redirected(client, alice):
    with freeze_time("2020-01-01"):
        force_sign_in(client, alice)
    response = client.get("/private/")
    assert_sign_in_redirect(response, "/private/")


def test_garbage_cookie_is_redirected(client):
    client.cookies[COOKIE] = "garbage"
    assert_sign_in_redirect(client.get("/private/"), "/private/")


def test_contrib_login_alone_is_not_a_webauth_session(client, alice):
    client.force_login(alice)
    assert_sign_in_redirect(client.get("/private/"), "/private/")


def test_session_without_user_is_not_signed_in(client, alice, settings):
    def session_cb(*, session, **kwargs):
        return {"expires": session["expires"]}

    settings.WEBAUTH = {**settings.WEBAUTH, "callbacks": {"session": session_cb}}
    force_sign_in(client, alice)
    assert_sign_in_redirect(client.get("/private/"), "/private/")


# -- 401 JSON for requests that ask for JSON ---------------------------------------------


@pytest.mark.parametrize(
    "accept",
    ["application/json", "application/json, text/html", "text/html;q=0.5, application/json"],
)
def test_request_preferring_json_gets_401(client, accept):
    assert_401_json(client.get("/private/", headers={"Accept": accept}))


def test_xmlhttprequest_gets_401(client):
    assert_401_json(client.get("/private/", headers={"X-Requested-With": "XMLHttpRequest"}))


@pytest.mark.parametrize(
    "accept",
    [
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",  # a browser
        "*/*",
        "text/html, application/json;q=0.9",
        "application/json;q=0",
    ],
)
def test_request_not_preferring_json_is_redirected(client, accept):
    assert_sign_in_redirect(client.get("/private/", headers={"Accept": accept}), "/private/")


def test_json_wins_over_custom_redirect_to(client):
    assert_401_json(client.get("/private-custom/", headers={"Accept": "application/json"}))


def test_signed_in_json_request_gets_the_view(client, alice):
    force_sign_in(client, alice)
    response = client.get("/private/", headers={"Accept": "application/json"})
    assert response.status_code == 200


# -- async views -------------------------------------------------------------------------


def test_decorated_async_view_stays_a_coroutine_function():
    assert iscoroutinefunction(views.private_async)
    assert not iscoroutinefunction(views.private)


def test_decorator_keeps_the_view_name():
    assert views.private.__name__ == "private"
    assert views.private_async.__name__ == "private_async"


def test_async_view_redirects_anonymous(client):
    assert_sign_in_redirect(client.get("/private-async/?a=1"), "/private-async/?a=1")


def test_async_view_gives_401_json(client):
    assert_401_json(client.get("/private-async/", headers={"Accept": "application/json"}))


def test_async_view_runs_when_signed_in(client, alice):
    force_sign_in(client, alice)
    response = client.get("/private-async/")
    assert response.status_code == 200
    assert response.json()["session"]["user"]["name"] == "Alice"


def test_auth_required_with_empty_parentheses(rf, alice):
    @auth_required()
    def view(request):
        return HttpResponse("ok")

    assert view(rf.get("/x/"))["Location"] == (
        "/auth/signin?callbackUrl=%2Fx%2F&error=SessionRequired"
    )
    rf.cookies[COOKIE] = session_cookie_for(alice)[1]
    assert view(rf.get("/x/")).status_code == 200


def test_async_view_called_directly(rf, alice):
    @auth_required(redirect_to="/elsewhere/")
    async def view(request):
        return HttpResponse("ok")

    assert async_to_sync(view)(rf.get("/x/"))["Location"] == "/elsewhere/"
    rf.cookies[COOKIE] = session_cookie_for(alice)[1]
    assert async_to_sync(view)(rf.get("/x/")).status_code == 200


# -- AuthRequiredMixin -------------------------------------------------------------------


def test_mixin_redirects_anonymous(client):
    assert_sign_in_redirect(client.get("/private-cbv/"), "/private-cbv/")


def test_mixin_lets_signed_in_user_through(client, alice):
    force_sign_in(client, alice)
    response = client.get("/private-cbv/")
    assert response.status_code == 200
    assert response.content == b"cbv"


def test_mixin_custom_redirect_to(client):
    assert client.get("/private-cbv-custom/")["Location"] == "/cbv-login/"


def test_mixin_on_async_view_redirects_anonymous(client):
    assert_sign_in_redirect(client.get("/private-cbv-async/"), "/private-cbv-async/")


def test_mixin_on_async_view_gives_401_json(client):
    assert_401_json(client.get("/private-cbv-async/", headers={"Accept": "application/json"}))


def test_mixin_on_async_view_runs_when_signed_in(client, alice):
    force_sign_in(client, alice)
    response = client.get("/private-cbv-async/")
    assert response.status_code == 200
    assert response.json()["session"]["user"]["email"] == "alice@example.com"


def test_mixin_gives_401_json(client):
    assert_401_json(client.get("/private-cbv/", headers={"Accept": "application/json"}))


# -- session_passes_test -----------------------------------------------------------------


def test_predicate_true_runs_the_view(client, carol):
    force_sign_in(client, carol)
    response = client.get("/staff-only/")
    assert response.status_code == 200
    assert response.content == b"staff"


def test_predicate_false_redirects_to_sign_in(client, alice):
    force_sign_in(client, alice)
    assert_sign_in_redirect(client.get("/staff-only/"), "/staff-only/")


def test_predicate_receives_none_when_anonymous(client):
    assert_sign_in_redirect(client.get("/staff-only/"), "/staff-only/")


def test_predicate_on_async_view_with_redirect_to(client, alice, carol):
    assert client.get("/staff-only-async/")["Location"] == "/not-staff/"
    force_sign_in(client, alice)
    assert client.get("/staff-only-async/")["Location"] == "/not-staff/"
    force_sign_in(client, carol)
    assert client.get("/staff-only-async/").content == b"staff async"


def test_predicate_sees_the_session_dict(rf, alice):
    seen = []

    @session_passes_test(lambda session: seen.append(session) or True)
    def view(request):
        return HttpResponse("ok")

    view(rf.get("/"))
    rf.cookies[COOKIE] = session_cookie_for(alice)[1]
    view(rf.get("/"))
    assert seen[0] is None
    assert seen[1]["user"]["email"] == "alice@example.com"
