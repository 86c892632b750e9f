"""The second factor for apps: a sign-in route answers the step, ``POST /auth/app/mfa`` finishes it.

JSON in and out, no cookie. A held sign-in made for an app is not one a
browser can finish, and the reverse.
"""

from __future__ import annotations

import json
import time

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from freezegun import freeze_time

from webauth import jwt as jose

from .support.helpers import csrf_pair, query, session_cookie
from .support.mfa import add_key, at
from .support.openapi_schemas import fits

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
NOW = float(int(time.time()))

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _now():
    """NOW is each test's own start: set at import, a long suite would reach the module
    minutes later, and keys confirmed at the real time would outrun codes made for it."""
    global NOW
    NOW = float(int(time.time()))


@pytest.fixture
def site(settings):
    def configure(**mfa):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "bearer": True,
            "providers": ["webauth.providers.DjangoCredentials"],
            "mfa": {"enabled": True, **mfa},
        }

    configure()
    return configure


@pytest.fixture
def key(site):
    ada = get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)
    return add_key(ada, NOW - 300)


def call(path, body, **extra):
    response = Client().post(path, json.dumps(body), content_type="application/json", **extra)
    assert not response.cookies, "an app route set a cookie"
    return response


def first_factor():
    return call("/auth/app/signin/credentials", {"username": "ada", "password": PASSWORD})


def test_the_sign_in_answers_the_step_and_the_code_the_session(key):
    with freeze_time(at(NOW)):
        step = first_factor()
        assert step.status_code == 200
        held = step.json()
        fits(held, "SecondFactorStep")  # as webauth/openapi.json describes it
        assert held["step"] == "second_factor" and "sessionToken" not in held
        assert held["methods"] == ["totp", "recovery_code"] and held["expiresIn"] == 300
        done = call(
            "/auth/app/mfa", {"mfaToken": held["mfaToken"], "code": pyotp.TOTP(key).at(NOW)}
        )
        assert done.status_code == 200
        answer = done.json()
        fits(answer, "SessionToken")
        assert answer["tokenType"] == "Bearer" and answer["user"]["email"] == "ada@example.com"
        session = call(
            "/auth/app/session", {}, headers={"Authorization": f"Bearer {answer['sessionToken']}"}
        )
        assert session.json()["user"]["email"] == "ada@example.com"


def test_a_wrong_code_may_be_tried_again_and_a_used_sign_in_is_gone(key):
    with freeze_time(at(NOW)):
        token = first_factor().json()["mfaToken"]
        right = pyotp.TOTP(key).at(NOW)
        wrong = call(
            "/auth/app/mfa",
            {"mfaToken": token, "code": "000000" if right != "000000" else "111111"},
        )
        assert (wrong.status_code, wrong.json()) == (401, {"error": "SecondFactorFailed"})
        assert call("/auth/app/mfa", {"mfaToken": token, "code": right}).status_code == 200
    with freeze_time(at(NOW + 30)):
        again = call("/auth/app/mfa", {"mfaToken": token, "code": pyotp.TOTP(key).at(NOW + 30)})
        assert (again.status_code, again.json()) == (401, {"error": "SecondFactorExpired"})


def test_too_many_wrong_codes_end_the_held_sign_in(site, key):
    site(attempts=2)
    with freeze_time(at(NOW)):
        token = first_factor().json()["mfaToken"]
        wrong = {"mfaToken": token, "code": "not-a-code"}
        assert call("/auth/app/mfa", wrong).json() == {"error": "SecondFactorFailed"}
        assert call("/auth/app/mfa", wrong).json() == {"error": "SecondFactorExpired"}
        right = {"mfaToken": token, "code": pyotp.TOTP(key).at(NOW)}
        assert call("/auth/app/mfa", right).json() == {"error": "SecondFactorExpired"}


def test_a_browsers_held_sign_in_is_not_an_apps_and_the_reverse(key):
    with freeze_time(at(NOW)):
        browser = Client()
        browser.post(
            "/auth/callback/credentials",
            {"csrfToken": csrf_pair(browser), "username": "ada", "password": PASSWORD},
        )
        cookie = browser.cookies["authjs.mfa-pending"].value
        browser_handle = jose.decode(token=cookie, secret=SECRET, salt="authjs.mfa-pending")[
            "handle"
        ]
        refused = call(
            "/auth/app/mfa", {"mfaToken": browser_handle, "code": pyotp.TOTP(key).at(NOW)}
        )
        assert refused.json() == {"error": "SecondFactorExpired"}

        app_handle = first_factor().json()["mfaToken"]
        planted = Client()
        planted.cookies["authjs.mfa-pending"] = jose.encode(
            token={"handle": app_handle}, secret=SECRET, salt="authjs.mfa-pending", max_age=300
        )
        answer = planted.post(
            "/auth/mfa", {"csrfToken": csrf_pair(planted), "code": pyotp.TOTP(key).at(NOW)}
        )
        assert query(answer["Location"])["error"] == "SecondFactorExpired"
        assert session_cookie(answer) is None
        # Each one still finishes where it was made.
        assert (
            call(
                "/auth/app/mfa", {"mfaToken": app_handle, "code": pyotp.TOTP(key).at(NOW)}
            ).status_code
            == 200
        )


def test_the_route_is_served_only_with_mfa_and_bearer_on_and_takes_post(key, site):
    assert Client().get("/auth/app/mfa").status_code == 405
    assert call("/auth/app/mfa", {"mfaToken": "x" * 43}).json() == {"error": "SecondFactorExpired"}
    bad = Client().post("/auth/app/mfa", "not json", content_type="application/json")
    assert bad.status_code == 400 and bad.json()["error"] == "InvalidRequest"
    site(enabled=False)
    off = call("/auth/app/mfa", {"mfaToken": "x" * 43, "code": "123456"})
    assert (off.status_code, off.json()) == (404, {"error": "UnknownAction"})
