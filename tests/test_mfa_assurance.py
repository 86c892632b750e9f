"""The assurance in the session: how the user proved who they are, and ``@mfa_required``.

A session records the methods (``amr``: ``pwd``, ``email``, ``fed``,
``passkey``, ``otp``, ``recovery_code``, ``mfa``) and when two factors were
last proven: the JWT's ``amr`` and ``webauth_mfa_time`` claims (an Auth.js
app sharing the secret reads them), the database session's columns.
``@mfa_required``, DRF's ``HasSecondFactor`` and Ninja's ``WebAuth(mfa=True)``
let only such sessions through.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import Client
from django.urls import include, path
from freezegun import freeze_time
from ninja import NinjaAPI
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.response import Response

from webauth import jwt as jose
from webauth.conf import get_config
from webauth.contrib.ninja import WebAuth
from webauth.contrib.rest_framework import HasSecondFactor, WebAuthAuthentication
from webauth.decorators import mfa_required
from webauth.mfa import factors
from webauth.mfa.access import assurance
from webauth.models import Session
from webauth.test import force_sign_in

from .support.helpers import csrf_pair, session_cookie
from .support.mfa import add_key, at

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
SALT = "authjs.session-token"
NOW = float(int(time.time()))

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _now():
    """NOW is each test's own start: set at import, a long suite would reach the module
    minutes later, and keys confirmed at the real time would outrun codes made for it."""
    global NOW
    NOW = float(int(time.time()))


@mfa_required
def payroll(request):
    return HttpResponse("payroll")


@mfa_required(max_age=600)
def wire_money(request):
    return HttpResponse("wired")


def whoami(request):
    found = assurance(request)
    return HttpResponse(" ".join(found.amr) + f"|{found.mfa_at is not None}")


@api_view(["GET"])
@authentication_classes([WebAuthAuthentication])
@permission_classes([HasSecondFactor])
def drf_payroll(request):
    return Response({"ok": True})


ninja_api = NinjaAPI(urls_namespace="mfa-ninja")


@ninja_api.get("/payroll", auth=WebAuth(mfa=True))
def ninja_payroll(request):
    return {"ok": True}


urlpatterns = [
    path("auth/", include("webauth.urls")),
    path("account/", include("webauth.account.urls")),
    path("payroll/", payroll),
    path("wire/", wire_money),
    path("assurance/", whoami),
    path("api/payroll", drf_payroll),
    path("ninja/", ninja_api.urls),
]


@pytest.fixture
def site(settings):
    def configure(strategy="jwt"):
        settings.ROOT_URLCONF = __name__
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "providers": ["webauth.providers.DjangoCredentials"],
            "mfa": {"enabled": True},
        }

    configure()
    return configure


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)


def password(client):
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "ada", "password": PASSWORD},
    )


def with_code(client, code):
    password(client)
    return client.post("/auth/mfa", {"csrfToken": csrf_pair(client), "code": code})


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_a_password_alone_says_pwd_and_no_second_factor(site, ada, strategy):
    site(strategy)
    client = Client()
    assert session_cookie(password(client))
    assert client.get("/assurance/").content == b"pwd|False"


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_a_password_and_a_code_say_both_and_when(site, ada, strategy):
    site(strategy)
    key = add_key(ada)
    client = Client()
    with freeze_time(at(NOW)):
        assert session_cookie(with_code(client, pyotp.TOTP(key).at(NOW)))
        assert client.get("/assurance/").content == b"pwd otp mfa|True"
    if strategy == "database":
        row = Session.objects.get()
        assert (row.amr, row.mfa_at) == ("pwd otp mfa", datetime.fromtimestamp(NOW, UTC))


def test_the_jwt_carries_the_claims_an_authjs_app_can_read(site, ada):
    key = add_key(ada)
    with freeze_time(at(NOW)):
        token = session_cookie(with_code(Client(), pyotp.TOTP(key).at(NOW)))
    claims = jose.decode(token=token, secret=SECRET, salt=SALT)
    assert claims["amr"] == ["pwd", "otp", "mfa"]
    assert claims["webauth_mfa_time"] == int(NOW)


def test_a_recovery_code_is_named_as_such(site, ada):
    add_key(ada)
    codes = factors.new_recovery_codes(get_config(), ada.pk)
    client = Client()
    assert session_cookie(with_code(client, codes[0]))
    assert client.get("/assurance/").content == b"pwd recovery_code mfa|True"


def test_the_jwt_callback_cannot_drop_the_assurance(site, ada, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "callbacks": {"jwt": lambda token, **kwargs: {"sub": token["sub"]}},
    }
    key = add_key(ada)
    client = Client()
    with freeze_time(at(NOW)):
        with_code(client, pyotp.TOTP(key).at(NOW))
        client.get("/auth/session")  # read (and re-issued) through the callback
        assert client.get("/assurance/").content == b"pwd otp mfa|True"


def test_mfa_required_lets_through_only_two_factors(site, ada):
    client = Client()
    assert "/auth/signin" in client.get("/payroll/")["Location"]  # signed out
    password(client)
    # No key: go and add one.
    assert client.get("/payroll/")["Location"] == "/account/security/"
    key = add_key(ada)
    # A key, but this session proved only the password: sign in again, even fresh.
    refused = client.get("/payroll/")
    assert refused["Location"].startswith("/account/reauthenticate/?")
    assert "mfa=1" in refused["Location"]
    assert client.get(refused["Location"]).status_code == 200  # not sent straight back
    with freeze_time(at(NOW)):
        with_code(client, pyotp.TOTP(key).at(NOW))
        assert client.get("/payroll/").content == b"payroll"
    # JSON clients are told where to go (a session made without the second factor).
    other = Client()
    force_sign_in(other, ada)
    answer = other.get("/payroll/", headers={"Accept": "application/json"})
    assert answer.status_code == 401 and answer.json()["error"] == "SecondFactorRequired"


def test_step_up_asks_again_after_max_age(site, ada):
    key = add_key(ada)
    client = Client()
    with freeze_time(at(NOW)) as clock:
        with_code(client, pyotp.TOTP(key).at(NOW))
        assert client.get("/wire/").content == b"wired"
        clock.tick(601)
        assert "mfa=1" in client.get("/wire/")["Location"]
        assert client.get("/payroll/").content == b"payroll"  # no max_age there


def test_drf_and_ninja_let_through_only_two_factors(site, ada):
    key = add_key(ada)
    weak = Client()
    force_sign_in(weak, ada)  # a session that proved no second factor
    assert weak.get("/api/payroll").status_code == 403
    assert weak.get("/ninja/payroll").status_code == 403
    strong = Client()
    with freeze_time(at(NOW)):
        with_code(strong, pyotp.TOTP(key).at(NOW))
        assert strong.get("/api/payroll").json() == {"ok": True}
        assert strong.get("/ninja/payroll").json() == {"ok": True}


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_the_session_route_makes_no_more_queries_with_mfa_on(site, ada, settings, strategy):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    site(strategy)
    key = add_key(ada)
    client = Client()
    with freeze_time(at(NOW)):
        with_code(client, pyotp.TOTP(key).at(NOW))
        client.get("/auth/session")  # warm: the first read may bind or re-issue
        with CaptureQueriesContext(connection) as on:
            assert client.get("/auth/session").json()["user"]["email"] == "ada@example.com"
        settings.WEBAUTH = {**settings.WEBAUTH, "mfa": {"enabled": False}}
        with CaptureQueriesContext(connection) as off:
            assert client.get("/auth/session").json()["user"]["email"] == "ada@example.com"
    assert len(on.captured_queries) == len(off.captured_queries)
