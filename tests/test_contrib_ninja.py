"""``webauth.contrib.ninja`` against the real django-ninja.

``WebAuth`` signs Ninja operations in with the webauth session: a bearer token
(no CSRF, cookies ignored), or the session cookie with Django's CSRF check for
unsafe methods, as Ninja's own cookie auth classes check it.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.middleware.csrf import get_token
from django.test import Client, RequestFactory
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI

from webauth.contrib.ninja import WebAuth
from webauth.test import session_cookie_for

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"

api = NinjaAPI(auth=WebAuth(), urls_namespace="webauth-tests-ninja")


@api.get("/me")
def me(request):
    return {"username": request.auth.username, "session": request.auth_session}


@api.post("/me")
def change(request):
    return {"username": request.auth.username}


@api.get("/ame")
async def ame(request):
    return {"username": request.auth.username}


@api.post("/ame")
async def achange(request):
    return {"username": request.auth.username}


@api.post("/exempt")
@csrf_exempt
def exempt(request):
    return {"username": request.auth.username}


@api.post("/no-csrf", auth=WebAuth(csrf=False))
def no_csrf(request):
    return {"username": request.auth.username}


urlpatterns = [
    path("auth/", include("webauth.urls")),
    path("api/", api.urls),
]


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "bearer": True,
        **(
            {"adapter": ADAPTER, "session": {"strategy": "database"}}
            if request.param == "database"
            else {}
        ),
    }
    return request.param


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password="pw")


@pytest.fixture
def bob(db):
    return get_user_model().objects.create_user("bob", email="bob@example.com", password="pw")


def bearer(user):
    return {"HTTP_AUTHORIZATION": f"Bearer {session_cookie_for(user)[1]}"}


def browser(user):
    client = Client(enforce_csrf_checks=True)
    client.cookies[COOKIE] = session_cookie_for(user)[1]
    return client


def django_csrf(client):
    request = RequestFactory().get("/")
    token = get_token(request)
    client.cookies["csrftoken"] = request.META["CSRF_COOKIE"]
    return token


@pytest.mark.parametrize("path", ["/api/me", "/api/ame"])
def test_a_bearer_token_authenticates(strategy, alice, path):
    response = Client().get(path, **bearer(alice))
    assert response.status_code == 200
    assert response.json()["username"] == "alice"


@pytest.mark.parametrize("path", ["/api/me", "/api/ame"])
def test_a_bearer_post_needs_no_csrf_token(strategy, alice, path):
    response = Client(enforce_csrf_checks=True).post(path, **bearer(alice))
    assert response.status_code == 200 and response.json()["username"] == "alice"


def test_the_session_is_there_too(strategy, alice):
    body = Client().get("/api/me", **bearer(alice)).json()
    assert body["session"]["user"]["email"] == "alice@example.com"


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer", "Bearer a b"])
def test_a_broken_token_is_401_and_never_falls_back_to_the_cookie(strategy, alice, header):
    client = browser(alice)
    assert client.get("/api/me", HTTP_AUTHORIZATION=header).status_code == 401
    assert client.get("/api/ame", HTTP_AUTHORIZATION=header).status_code == 401
    assert client.get("/api/me").json()["username"] == "alice"


def test_the_bearer_user_wins_over_the_cookie_user(strategy, alice, bob):
    assert browser(bob).get("/api/me", **bearer(alice)).json()["username"] == "alice"


def test_without_a_session_401(strategy):
    assert Client().get("/api/me").status_code == 401
    assert Client().post("/api/me").status_code == 401


@pytest.mark.parametrize("path", ["/api/me", "/api/ame"])
def test_a_cookie_session_needs_djangos_csrf_token_for_unsafe_methods(strategy, alice, path):
    client = browser(alice)
    assert client.get(path).json()["username"] == "alice"
    refused = client.post(path)
    assert refused.status_code == 403
    token = django_csrf(client)
    accepted = client.post(path, HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 200 and accepted.json()["username"] == "alice"


def test_csrf_exempt_operations_and_csrf_false_skip_the_check(strategy, alice):
    client = browser(alice)
    assert client.post("/api/exempt").json()["username"] == "alice"
    assert client.post("/api/no-csrf").json()["username"] == "alice"


def test_an_ended_session_is_401(strategy, alice):
    client = browser(alice)
    headers = bearer(alice)
    alice.set_password("changed")
    alice.save()
    assert client.get("/api/me").status_code == 401
    assert Client().get("/api/me", **headers).status_code == 401


def test_openapi_shows_an_http_bearer_scheme():
    schemes = api.get_openapi_schema()["components"]["securitySchemes"]
    assert schemes == {"WebAuth": {"type": "http", "scheme": "bearer"}}
