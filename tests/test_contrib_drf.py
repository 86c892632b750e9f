"""``webauth.contrib.rest_framework`` against the real Django REST framework.

``WebAuthAuthentication`` signs DRF requests in with the webauth session: a
bearer token (no CSRF, cookies ignored, a broken token is 401), or the session
cookie with Django's CSRF check for unsafe methods, as DRF's
``SessionAuthentication``. ``IsSignedIn`` lets through only what it signed in.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.middleware.csrf import get_token
from django.test import Client, RequestFactory
from django.urls import include, path
from rest_framework.authentication import BasicAuthentication
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from webauth.contrib.rest_framework import HasSession, IsSignedIn, WebAuthAuthentication
from webauth.test import session_cookie_for

pytestmark = [pytest.mark.django_db, pytest.mark.urls(__name__)]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
COOKIE = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"


class Profile(APIView):
    authentication_classes = [WebAuthAuthentication]
    permission_classes = [IsSignedIn]
    renderer_classes = [JSONRenderer]

    def get(self, request):
        return Response({"username": request.user.username, "session": request.auth})

    def post(self, request):
        return Response({"changed": request.data.get("name"), "username": request.user.username})


class Either(Profile):
    # webauth first, then Basic: a request webauth knows nothing of goes on to Basic.
    authentication_classes = [WebAuthAuthentication, BasicAuthentication]


@api_view(["GET"])
@authentication_classes([WebAuthAuthentication])
@permission_classes([AllowAny])
def maybe(request):
    return Response({"authenticated": request.user.is_authenticated})


urlpatterns = [
    path("auth/", include("webauth.urls")),
    path("api/profile", Profile.as_view()),
    path("api/either", Either.as_view()),
    path("api/maybe", maybe),
]


def configure(settings, strategy="jwt", bearer=True):
    settings.WEBAUTH = {
        "secret": SECRET,
        "bearer": bearer,
        **(
            {"adapter": ADAPTER, "session": {"strategy": "database"}}
            if strategy == "database"
            else {}
        ),
    }


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    configure(settings, request.param)
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
    """A client holding *user*'s session cookie that enforces CSRF as a browser would."""
    client = Client(enforce_csrf_checks=True)
    client.cookies[COOKIE] = session_cookie_for(user)[1]
    return client


def django_csrf(client):
    """Django's CSRF cookie on *client*; returns the token for ``X-CSRFToken``."""
    request = RequestFactory().get("/")
    token = get_token(request)
    client.cookies["csrftoken"] = request.META["CSRF_COOKIE"]
    return token


# -- bearer ----------------------------------------------------------------------------


def test_a_bearer_token_authenticates(strategy, alice):
    response = Client(enforce_csrf_checks=True).get("/api/profile", **bearer(alice))
    assert response.status_code == 200
    body = response.json()
    assert body["username"] == "alice"
    assert body["session"]["user"]["email"] == "alice@example.com"  # request.auth


def test_a_bearer_post_needs_no_csrf_token(strategy, alice):
    response = Client(enforce_csrf_checks=True).post(
        "/api/profile", {"name": "Al"}, content_type="application/json", **bearer(alice)
    )
    assert response.status_code == 200
    assert response.json() == {"changed": "Al", "username": "alice"}


@pytest.mark.parametrize("header", ["Bearer nope", "Bearer", "Bearer a b", "bearer x.y.z.w.v"])
def test_a_broken_token_is_401_and_never_falls_back_to_the_cookie(strategy, alice, header):
    client = browser(alice)
    response = client.get("/api/profile", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    # Even where anonymous access is allowed, a broken token is refused.
    assert client.get("/api/maybe", HTTP_AUTHORIZATION=header).status_code == 401
    assert client.get("/api/profile").json()["username"] == "alice"


def test_the_bearer_user_wins_over_the_cookie_user(strategy, alice, bob):
    response = browser(bob).get("/api/profile", **bearer(alice))
    assert response.json()["username"] == "alice"


def test_without_credentials_drf_answers_401_bearer(strategy):
    response = Client().get("/api/profile")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    assert Client().get("/api/maybe").json() == {"authenticated": False}


def test_with_bearer_off_it_is_a_cookie_only_class(settings, alice):
    configure(settings, bearer=False)
    response = Client().get("/api/profile", **bearer(alice))
    assert response.status_code == 403  # as SessionAuthentication: no WWW-Authenticate
    assert "WWW-Authenticate" not in response
    assert browser(alice).get("/api/profile").json()["username"] == "alice"


# -- cookie ----------------------------------------------------------------------------


def test_a_cookie_session_authenticates_safe_methods(strategy, alice):
    response = browser(alice).get("/api/profile")
    assert response.status_code == 200 and response.json()["username"] == "alice"


def test_a_cookie_session_needs_djangos_csrf_token_for_unsafe_methods(strategy, alice):
    client = browser(alice)
    refused = client.post("/api/profile", {"name": "Al"}, content_type="application/json")
    assert refused.status_code == 403
    assert "CSRF Failed" in refused.json()["detail"]
    # webauth's own (Auth.js's) CSRF token is not Django's.
    authjs = client.get("/auth/csrf").json()["csrfToken"]
    refused = client.post(
        "/api/profile", {"name": "Al"}, content_type="application/json", HTTP_X_CSRFTOKEN=authjs
    )
    assert refused.status_code == 403
    token = django_csrf(client)
    accepted = client.post(
        "/api/profile", {"name": "Al"}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 200 and accepted.json()["username"] == "alice"


def test_an_anonymous_unsafe_request_is_not_a_csrf_failure(strategy):
    response = Client(enforce_csrf_checks=True).post("/api/profile", {})
    assert response.status_code == 401


def test_an_ended_cookie_session_is_no_session(strategy, alice):
    client = browser(alice)
    alice.is_active = False
    alice.save()
    assert client.get("/api/profile").status_code == 401


# -- the permission --------------------------------------------------------------------


def test_is_signed_in_needs_webauths_authentication(strategy, alice):
    # Signed in by Basic, not by a webauth session: not IsSignedIn.
    response = Client().get("/api/either", HTTP_AUTHORIZATION="Basic YWxpY2U6cHc=")
    assert response.status_code == 403
    assert Client().get("/api/either", **bearer(alice)).status_code == 200


def test_has_session_is_is_signed_in():
    assert HasSession is IsSignedIn
