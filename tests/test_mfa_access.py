"""``webauth.mfa.access``: what a view under ``@mfa_required`` answers each kind of client.

A signed-out visitor, a session without two factors (a browser, a client that
reads JSON, a bearer token), a site without the account center, the step-up
window's edge, and the async forms.
"""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import include, path
from freezegun import freeze_time

from webauth.decorators import mfa_required
from webauth.mfa import access
from webauth.mfa.access import Assurance
from webauth.test import force_sign_in, session_cookie_for

from .support.mfa import NOW, add_key, at, mfa_settings, person


@mfa_required
def protected(request):
    return HttpResponse("two factors")


urlpatterns = [path("auth/", include("webauth.urls")), path("protected/", protected)]


@pytest.fixture
def site(settings):
    settings.WEBAUTH = mfa_settings(bearer=True)
    return settings


@pytest.fixture
def ada(db, site):
    return person("ada")


def signed_in(user) -> Client:
    client = Client()
    with freeze_time(at(NOW)):
        force_sign_in(client, user)
    return client


def test_a_request_without_a_session_has_no_assurance(db, site):
    request = RequestFactory().get("/")
    assert access.assurance(request) == Assurance()
    assert access.has_mfa(request) is False
    assert async_to_sync(access.ahas_mfa)(RequestFactory().get("/")) is False


@pytest.mark.urls("tests.test_mfa_access")
def test_without_the_account_center_a_user_with_no_key_is_refused_plainly(ada):
    # No Security section to send them to: 403 says what is missing.
    answer = signed_in(ada).get("/protected/")
    assert answer.status_code == 403
    assert answer.json() == {"error": "SecondFactorRequired"}


def test_a_client_that_reads_json_is_told_where_to_go(ada):
    add_key(ada)
    answer = signed_in(ada).get("/mfa-protected/", HTTP_ACCEPT="application/json")
    assert answer.status_code == 401
    body = answer.json()
    assert body["error"] == "SecondFactorRequired"
    assert body["url"].startswith("/account/reauthenticate/?") and "mfa=1" in body["url"]


def test_a_bearer_request_gets_the_step_up_challenge(ada):
    add_key(ada)
    # A bearer session of the first factor alone: what an app with an old token has.
    _, token = session_cookie_for(ada)
    answer = Client().get("/mfa-protected/", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 401
    assert 'error="insufficient_user_authentication"' in answer["WWW-Authenticate"]
    assert answer.json() == {"error": "SecondFactorRequired"}


def test_the_step_up_window_includes_its_last_second(ada):
    request = RequestFactory().get("/")
    proven = Assurance(amr=("pwd", "otp", "mfa"), mfa_at=int(NOW))
    original = access.assurance
    try:
        access.assurance = lambda request: proven  # type: ignore[assignment]
        with freeze_time(at(NOW + 600)):
            assert access.has_mfa(request, max_age=600) is True
        with freeze_time(at(NOW + 601)):
            assert access.has_mfa(request, max_age=600) is False
    finally:
        access.assurance = original  # type: ignore[assignment]


def test_the_async_check_answers_as_the_sync_one(ada):
    client = signed_in(ada)
    request = RequestFactory().get("/", HTTP_ACCEPT="application/json")
    request.COOKIES.update({k: v.value for k, v in client.cookies.items()})
    request.user = ada  # as AuthenticationMiddleware would
    answer = async_to_sync(access.arequire_mfa)(request)
    assert answer is not None and answer.status_code == 401
    body = json.loads(answer.content)
    assert body == {"error": "SecondFactorRequired", "url": "/account/security/"}
