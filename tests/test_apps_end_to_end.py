"""Issue 14's end-to-end promise: an app that never stores a cookie, by every sign-in method.

For each method (credentials, an email code, a passkey from the software
authenticator, the ID token of a platform SDK and OAuth with PKCE, both against
the suite's real OpenID provider) and each session strategy, the client signs
in through ``/auth/app/``, calls a Django REST framework view and a django-ninja
view with its bearer token, refreshes it (``POST /auth/app/session``) and uses
the new one, then signs out (``POST /auth/app/signout``). No request carries a
cookie and no answer sets one: every request goes through a fresh test client.
"""

from __future__ import annotations

import json
import re
import secrets

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.urls import include, path
from ninja import NinjaAPI
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from webauth.contrib.ninja import WebAuth
from webauth.contrib.rest_framework import IsSignedIn, WebAuthAuthentication
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.oauth import OIDC

from .support.app_helpers import (
    APP_REDIRECT,
    IOS_CLIENT_ID,
    hashed,
    register_ios_app,
    s256,
    sdk_id_token,
)
from .support.authenticator import SoftAuthenticator
from .support.helpers import query
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, authorize, start_idp

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.urls(__name__)]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
ORIGIN = "http://testserver"


class Profile(APIView):
    authentication_classes = [WebAuthAuthentication]
    permission_classes = [IsSignedIn]
    renderer_classes = [JSONRenderer]

    def get(self, request):
        return Response({"email": request.user.email})


api = NinjaAPI(auth=WebAuth(), urls_namespace="webauth-tests-apps-ninja")


@api.get("/me")
def me(request):
    return {"email": request.auth.email}


urlpatterns = [
    path("auth/", include("webauth.urls")),
    path("idp/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("api/drf/profile", Profile.as_view()),
    path("api/ninja/", api.urls),
]


def request(method, url, body=None, *, token=None, query_params=None):
    """One request of the app: a fresh client (no cookie jar), no cookie in the answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    client = Client()
    if method == "get":
        response = client.get(url, query_params or {}, headers=headers)
    else:
        response = client.post(
            url, json.dumps(body or {}), content_type="application/json", headers=headers
        )
    assert not response.cookies, (url, list(response.cookies))
    return response


def token_of(response) -> str:
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["tokenType"] == "Bearer" and answer["expires"]
    return answer["sessionToken"]


@pytest.fixture
def idp(live_server):
    cache.clear()
    idp = start_idp(live_server, redirect_uri=f"{REDIRECT_URI} {APP_REDIRECT}")
    register_ios_app(idp)
    return idp


@pytest.fixture(params=["jwt", "database"])
def site(request, settings, idp):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": request.param},
        "bearer": True,
        "app_redirect_uris": [APP_REDIRECT],
        "experimental": {"enable_webauthn": True},
        "providers": [
            DjangoCredentials(),
            Email(from_email="no-reply@example.com"),
            Passkey(),
            OIDC(
                id="example",
                issuer=idp.issuer,
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
                checks=("pkce", "nonce"),
                app_client_ids=[IOS_CLIENT_ID],
            ),
        ],
    }
    get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )
    return request.param


# -- each method, as an app does it ------------------------------------------------------------


def by_credentials(idp) -> tuple[str, str]:
    body = {"username": "alice", "password": "correct horse"}
    return token_of(request("post", "/auth/app/signin/credentials", body)), "alice@example.com"


def by_email_code(idp) -> tuple[str, str]:
    sent = request("post", "/auth/app/signin/email", {"email": "alice@example.com"})
    assert sent.json()["sent"] is True
    (code,) = re.findall(r"\b([0-9A-Z]{4}-[0-9A-Z]{4})\b", mail.outbox[-1].body)
    body = {"email": "alice@example.com", "code": code, "binding": sent.json()["binding"]}
    return token_of(request("post", "/auth/app/callback/email", body)), "alice@example.com"


def by_passkey(idp) -> tuple[str, str]:
    authenticator = SoftAuthenticator()
    asked = request(
        "get",
        "/auth/app/webauthn-options/passkey",
        query_params={"action": "register", "email": "pat@example.com"},
    ).json()
    data = authenticator.create(asked["options"], origin=ORIGIN)
    body = {"action": "register", "data": data, "binding": asked["binding"]}
    token_of(request("post", "/auth/app/callback/passkey", body))
    # Registered: now the sign-in an app does every day.
    asked = request(
        "get", "/auth/app/webauthn-options/passkey", query_params={"action": "authenticate"}
    ).json()
    data = authenticator.get(asked["options"], origin=ORIGIN)
    body = {"action": "authenticate", "data": data, "binding": asked["binding"]}
    return token_of(request("post", "/auth/app/callback/passkey", body)), "pat@example.com"


def by_id_token(idp) -> tuple[str, str]:
    raw = secrets.token_urlsafe(32)
    body = {"id_token": sdk_id_token(idp, nonce=hashed(raw)), "nonce": raw}
    return token_of(request("post", "/auth/app/idtoken/example", body)), "ida@idp.example"


def by_code_and_pkce(idp) -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    started = request(
        "post",
        "/auth/app/authorize/example",
        {
            "redirect_uri": APP_REDIRECT,
            "code_challenge": s256(verifier),
            "code_challenge_method": "S256",
        },
    ).json()
    back = query(authorize(idp, started["url"]))  # the system browser, at the provider
    body = {
        "code": back["code"],
        "state": back["state"],
        "code_verifier": verifier,
        "redirect_uri": APP_REDIRECT,
    }
    return token_of(request("post", "/auth/app/token/example", body)), "ida@idp.example"


METHODS = [by_credentials, by_email_code, by_passkey, by_id_token, by_code_and_pkce]


@pytest.mark.parametrize("sign_in", METHODS, ids=lambda fn: fn.__name__)
def test_an_app_without_cookies_signs_in_calls_apis_refreshes_and_signs_out(site, idp, sign_in):
    token, email = sign_in(idp)

    # The APIs: DRF and django-ninja, with the bearer token alone.
    assert request("get", "/api/drf/profile", token=token).json() == {"email": email}
    assert request("get", "/api/ninja/me", token=token).json() == {"email": email}

    # Refresh: a new token under jwt (the same one under database), which works.
    refreshed = request("post", "/auth/app/session", token=token)
    new_token = token_of(refreshed)
    assert refreshed.json()["user"]["email"] == email
    assert (new_token == token) is (site == "database")
    assert request("get", "/api/drf/profile", token=new_token).json() == {"email": email}
    assert request("get", "/api/ninja/me", token=new_token).json() == {"email": email}

    # Sign out: the database session is gone; a JWT is forgotten by the app.
    signed_out = request("post", "/auth/app/signout", token=new_token)
    assert signed_out.status_code == 200
    assert signed_out.json() == {"revoked": site == "database"}
    if site == "database":
        assert request("get", "/api/drf/profile", token=new_token).status_code == 401
        assert request("get", "/api/ninja/me", token=new_token).status_code == 401
    # Without a token, neither API lets the app in.
    assert request("get", "/api/drf/profile").status_code == 401
    assert request("get", "/api/ninja/me").status_code == 401
