"""The held sign-in's edges: what finishing it does besides the session, and each way it ends.

How a forced enrolment's session is named, the event of a refused key, the
Django session cycled whichever way the sign-in ends (a code, "not now"), a
user deleted or the second factor switched off while the sign-in waited, and
the ``mfa_failed`` limit (given back when the code is right).
"""

from __future__ import annotations

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.cache import caches
from django.test import Client
from freezegun import freeze_time

from webauth.conf import get_config
from webauth.mfa import factors
from webauth.models import Session
from webauth.signals import second_factor

from .support.helpers import csrf_pair, query, session_cookie
from .support.mfa import NOW, PASSWORD, add_key, at, mfa_settings, person


@pytest.fixture
def site(settings):
    def configure(**mfa):
        settings.WEBAUTH = mfa_settings(mfa=mfa)

    configure()
    caches["default"].clear()  # the limits' counters of earlier tests
    return configure


@pytest.fixture
def ada(db):
    return person("ada")


def first_factor(client):
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(client), "username": "ada", "password": PASSWORD},
    )


def send(client, **fields):
    return client.post("/auth/mfa", {"csrfToken": csrf_pair(client), **fields})


def events():
    seen: list[dict] = []

    def receiver(sender, **message):
        seen.append({k: v for k, v in message.items() if k not in ("signal", "request")})

    second_factor.connect(receiver, weak=False)
    return seen, receiver


def test_a_forced_enrolment_makes_a_session_that_says_otp_and_tells_of_the_key(site, ada):
    site(enabled=True, required="all")
    seen, receiver = events()
    client = Client()
    try:
        with freeze_time(at(NOW)):
            first_factor(client)
            page = client.get("/auth/mfa").content.decode()
            key = page.split("data-key>")[1].split("<")[0].replace(" ", "")
            assert session_cookie(send(client, code=pyotp.TOTP(key).at(NOW)))
    finally:
        second_factor.disconnect(receiver)
    assert Session.objects.latest("pk").amr == "pwd otp mfa"
    assert [e["action"] for e in seen] == ["added"]


def test_a_refused_key_and_a_wrong_code_each_send_the_failed_event(site, ada):
    add_key(ada)
    seen, receiver = events()
    try:
        client = Client()
        with freeze_time(at(NOW)):
            first_factor(client)
            send(client, credential='{"id": "x"}')
            send(client, code="000000" if pyotp.TOTP("A" * 32).at(NOW) else "1")
    finally:
        second_factor.disconnect(receiver)
    assert [(e["action"], e.get("kind")) for e in seen] == [
        ("failed", "webauthn"),
        ("failed", None),
    ]
    assert all(e["user"] == ada for e in seen)


@pytest.mark.urls("tests.test_session_end")
def test_the_code_gives_the_contrib_session_a_new_key(site, ada):
    key = add_key(ada)
    client = Client()
    client.get("/plant/")
    planted = client.cookies["sessionid"].value
    with freeze_time(at(NOW)):
        first_factor(client)
        assert client.cookies["sessionid"].value == planted  # nothing yet: held
        done = send(client, code=pyotp.TOTP(key).at(NOW))
    assert session_cookie(done)
    assert done.cookies["sessionid"].value != planted
    assert not SessionStore().exists(planted)


@pytest.mark.urls("tests.test_session_end")
def test_not_now_gives_the_contrib_session_a_new_key_too(site, ada):
    site(enabled=True, required="all", grace_days=7)
    client = Client()
    client.get("/plant/")
    planted = client.cookies["sessionid"].value
    first_factor(client)
    client.get("/auth/mfa")  # the key shown: the grace starts
    done = send(client, later="1")
    assert session_cookie(done)
    assert done.cookies["sessionid"].value != planted
    assert not SessionStore().exists(planted)


def test_not_now_is_refused_to_a_user_who_has_a_key(site, ada):
    site(enabled=True, required="all", grace_days=7)
    key = add_key(ada)
    # And a second key begun just now: the grace would still run for it.
    factors.begin_totp(get_config(), ada.pk, account=ada.email, issuer="x")
    client = Client()
    with freeze_time(at(NOW)):
        first_factor(client)
        put_off = send(client, later="1")
    assert session_cookie(put_off) is None
    assert query(put_off["Location"])["error"] == "SecondFactorExpired"
    assert key  # the key stays the way in


def test_a_user_deleted_while_the_sign_in_waited_gets_no_session(site, ada):
    key = add_key(ada)
    client = Client()
    with freeze_time(at(NOW)):
        first_factor(client)
        get_user_model().objects.filter(pk=ada.pk).delete()
        answer = send(client, code=pyotp.TOTP(key).at(NOW))
    assert session_cookie(answer) is None
    assert query(answer["Location"])["error"] == "AccessDenied"
    # And the held sign-in is gone with them.
    again = send(client, code="123456")
    assert query(again["Location"])["error"] == "SecondFactorExpired"


def test_a_second_factor_switched_off_meanwhile_ends_the_held_sign_in(site, ada):
    key = add_key(ada)
    client = Client()
    with freeze_time(at(NOW)):
        first_factor(client)
        site(enabled=False)
        answer = send(client, code=pyotp.TOTP(key).at(NOW))
    assert session_cookie(answer) is None
    assert query(answer["Location"])["error"] == "SecondFactorExpired"


def test_the_mfa_failed_limit_counts_wrong_codes_and_gives_back_a_right_ones(settings, ada):
    settings.WEBAUTH = mfa_settings(rate_limits={"mfa_failed": "2/m/key"})
    caches["default"].clear()
    key = add_key(ada)
    wrong = "000000" if pyotp.TOTP(key).at(NOW) != "000000" else "111111"
    with freeze_time(at(NOW)):
        client = Client()
        first_factor(client)
        assert send(client, code=wrong).status_code == 400  # one counted
        assert session_cookie(send(client, code=pyotp.TOTP(key).at(NOW)))  # given back
        client = Client()
        first_factor(client)
        assert send(client, code=wrong).status_code == 400  # the second counted
        refused = send(client, code=wrong)
    assert refused.status_code == 302
    assert query(refused["Location"])["error"] == "RateLimited"


def test_the_page_of_a_user_deleted_meanwhile_begins_no_key_for_them(site, ada):
    from webauth.models import SecondFactor

    site(enabled=True, required="all")
    client = Client()
    first_factor(client)
    get_user_model().objects.filter(pk=ada.pk).delete()
    page = client.get("/auth/mfa")
    assert query(page["Location"])["error"] == "SecondFactorExpired"
    assert not SecondFactor.objects.exists()
