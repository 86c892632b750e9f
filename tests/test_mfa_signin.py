"""The second factor at sign-in: the step after the first factor, the code page, the session.

A user with a confirmed TOTP key signs in with a password: no session is
made, the browser holds the sign-in's handle in ``authjs.mfa-pending`` and is
sent to ``/auth/mfa``; a right code (or a recovery code) makes the session
that the sign-in would have made, once. The flows know nothing of it
(webauth.flows.steps).
"""

from __future__ import annotations

import threading

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client
from freezegun import freeze_time

from webauth.conf import get_config
from webauth.mfa import factors

from .support.helpers import csrf_pair, query, session_cookie
from .support.mfa import add_key, at, race

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
PENDING = "authjs.mfa-pending"
NOW = 1_900_000_000.0


@pytest.fixture
def site(settings):
    def configure(**mfa):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "providers": ["webauth.providers.DjangoCredentials"],
            "mfa": {"enabled": True, **mfa},
        }

    configure()
    return configure


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)


@pytest.fixture
def key(site, ada):
    """Ada's confirmed TOTP key (confirmed with the code of NOW - 300 s)."""
    return add_key(ada, NOW - 300)


def first_factor(client, password=PASSWORD):
    token = csrf_pair(client)
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "ada", "password": password, "callbackUrl": "/landing"},
    )


def send_code(client, code):
    return client.post("/auth/mfa", {"csrfToken": csrf_pair(client), "code": code})


def test_the_first_factor_makes_no_session_and_asks_for_the_second(client, key):
    with freeze_time(at(NOW)):
        response = first_factor(client)
        assert response.status_code == 302
        assert response["Location"] == "http://testserver/auth/mfa"
        assert session_cookie(response) is None
        assert (
            response.cookies[PENDING]["httponly"] and response.cookies[PENDING]["max-age"] == "300"
        )
        # Skipping the step: the session route has nobody.
        assert client.get("/auth/session").json() is None
        page = client.get("/auth/mfa")
        assert page.status_code == 200
        assert b'autocomplete="one-time-code"' in page.content and b'name="code"' in page.content


def test_a_right_code_makes_the_session_and_lands_where_the_sign_in_was_going(client, key):
    with freeze_time(at(NOW)):
        first_factor(client)
        done = send_code(client, pyotp.TOTP(key).at(NOW))
        assert done.status_code == 302
        assert done["Location"] == "http://testserver/landing"
        assert session_cookie(done)
        assert done.cookies[PENDING]["max-age"] == "0"
        assert client.get("/auth/session").json()["user"]["email"] == "ada@example.com"


def test_a_wrong_code_shows_the_form_again_and_the_right_one_still_passes(client, key):
    with freeze_time(at(NOW)):
        first_factor(client)
        wrong = send_code(client, "000000" if pyotp.TOTP(key).at(NOW) != "000000" else "111111")
        assert wrong.status_code == 400
        assert (
            b'data-error="SecondFactor"' in wrong.content
            and b'aria-invalid="true"' in wrong.content
        )
        assert session_cookie(wrong) is None
        assert session_cookie(send_code(client, pyotp.TOTP(key).at(NOW)))


def test_a_held_sign_in_is_finished_once(client, key):
    with freeze_time(at(NOW)):
        first_factor(client)
        pending = client.cookies[PENDING].value
        assert session_cookie(send_code(client, pyotp.TOTP(key).at(NOW)))
    with freeze_time(at(NOW + 30)):
        # The same browser state again, with a new right code: the sign-in is used.
        replay = Client()
        replay.cookies[PENDING] = pending
        again = send_code(replay, pyotp.TOTP(key).at(NOW + 30))
        assert again.status_code == 302
        assert query(again["Location"])["error"] == "SecondFactorExpired"
        assert session_cookie(again) is None


def test_a_code_is_accepted_once_even_by_two_sign_ins(client, key):
    with freeze_time(at(NOW)):
        code = pyotp.TOTP(key).at(NOW)
        first_factor(client)
        assert session_cookie(send_code(client, code))
        other = Client()
        first_factor(other)
        assert send_code(other, code).status_code == 400


def test_a_recovery_code_passes_once(client, key, ada):
    codes = factors.new_recovery_codes(get_config(), ada.pk)
    with freeze_time(at(NOW)):
        first_factor(client)
        assert session_cookie(send_code(client, codes[3].upper()))
        other = Client()
        first_factor(other)
        assert send_code(other, codes[3]).status_code == 400
    assert factors.recovery_codes_left(get_config(), ada.pk) == 9


def test_too_many_wrong_codes_drop_the_held_sign_in(client, key, site):
    site(attempts=3)
    right = pyotp.TOTP(key).at(NOW)
    wrong = "000000" if right != "000000" else "111111"
    with freeze_time(at(NOW)):
        first_factor(client)
        kept = client.cookies[PENDING].value  # as an attacker would keep it
        assert send_code(client, wrong).status_code == 400
        assert send_code(client, wrong).status_code == 400
        dropped = send_code(client, wrong)
        assert query(dropped["Location"])["error"] == "SecondFactorExpired"
        late = send_code(client, right)
        assert query(late["Location"])["error"] == "SecondFactorExpired"
        assert session_cookie(late) is None
        # The held sign-in itself is gone, not only the browser's cookie.
        replay = Client()
        replay.cookies[PENDING] = kept
        again = send_code(replay, right)
        assert query(again["Location"])["error"] == "SecondFactorExpired"
        assert session_cookie(again) is None


def test_two_held_sign_ins_never_cross(site, key, ada):
    grace = get_user_model().objects.create_user("grace", "grace@example.com", PASSWORD)
    grace_key = add_key(grace, NOW - 300)
    with freeze_time(at(NOW)):
        ada_browser, grace_browser = Client(), Client()
        first_factor(ada_browser)
        grace_browser.post(
            "/auth/callback/credentials",
            {"csrfToken": csrf_pair(grace_browser), "username": "grace", "password": PASSWORD},
        )
        assert session_cookie(send_code(ada_browser, pyotp.TOTP(key).at(NOW)))
        assert session_cookie(send_code(grace_browser, pyotp.TOTP(grace_key).at(NOW)))
    assert ada_browser.get("/auth/session").json()["user"]["email"] == "ada@example.com"
    assert grace_browser.get("/auth/session").json()["user"]["email"] == "grace@example.com"


@pytest.mark.django_db(transaction=True)
def test_two_right_codes_racing_on_one_held_sign_in_make_one_session(key, ada):
    codes = factors.new_recovery_codes(get_config(), ada.pk)
    with freeze_time(at(NOW)):
        client = Client()
        first_factor(client)
        # Ten different recovery codes, each right once: the held sign-in is used once.
        answers = race(client, [{"code": code} for code in codes])
    assert len([a for a in answers if session_cookie(a)]) == 1
    # Each of the others is told the sign-in is over (another request finished it),
    # or, beyond the mfa_failed limit's 5 a user, to wait.
    losers = [query(a["Location"]).get("error") for a in answers if not session_cookie(a)]
    assert len(losers) == 9 and "SecondFactorExpired" in losers
    assert set(losers) <= {"SecondFactorExpired", "RateLimited"}


def test_a_held_sign_in_expires(client, key):
    with freeze_time(at(NOW)) as clock:
        first_factor(client)
        clock.tick(301)
        expired = send_code(client, pyotp.TOTP(key).at(NOW + 301))
        assert query(expired["Location"])["error"] == "SecondFactorExpired"
        assert client.get("/auth/mfa")["Location"].endswith("error=SecondFactorExpired")


@pytest.mark.parametrize("cookie", ["", "garbage", "a" * 400])
def test_a_forged_handle_holds_nothing(client, key, cookie):
    client.cookies[PENDING] = cookie
    with freeze_time(at(NOW)):
        response = send_code(client, pyotp.TOTP(key).at(NOW))
    assert query(response["Location"])["error"] == "SecondFactorExpired"


def test_the_code_form_needs_the_csrf_token(client, key):
    with freeze_time(at(NOW)):
        first_factor(client)
        refused = client.post("/auth/mfa", {"code": pyotp.TOTP(key).at(NOW)})
        assert refused.status_code == 302
        assert "MissingCSRF" in refused["Location"]
        assert session_cookie(refused) is None


def test_a_user_deactivated_meanwhile_is_refused(client, key, ada):
    with freeze_time(at(NOW)):
        first_factor(client)
        ada.is_active = False
        ada.save()
        refused = send_code(client, pyotp.TOTP(key).at(NOW))
        assert session_cookie(refused) is None
        assert client.get("/auth/session").json() is None


def test_a_wrong_password_never_reaches_the_second_factor(client, key):
    with freeze_time(at(NOW)):
        refused = first_factor(client, password="wrong")
    assert PENDING not in refused.cookies
    assert "CredentialsSignin" in refused["Location"]


def test_without_a_second_factor_or_with_mfa_off_the_sign_in_is_as_before(client, ada, site):
    with freeze_time(at(NOW)):
        assert session_cookie(first_factor(client))  # ada has no key
    config = get_config()
    enrolment = factors.begin_totp(config, ada.pk, account=ada.email, issuer="Example")
    with freeze_time(at(NOW)):
        assert factors.confirm_totp(
            config, ada.pk, enrolment.factor.id, pyotp.TOTP(enrolment.key).at(NOW)
        )
    site(enabled=False)
    with freeze_time(at(NOW + 30)):
        direct = first_factor(Client())
        assert session_cookie(direct) and PENDING not in direct.cookies
        assert Client().get("/auth/mfa")["Location"].endswith("error=SecondFactorExpired")


@pytest.mark.django_db(transaction=True)
def test_fifty_simultaneous_right_codes_make_one_session(key):
    with freeze_time(at(NOW)):
        client = Client()
        first_factor(client)
        answers = race(client, [{"code": pyotp.TOTP(key).at(NOW)}] * 50)
    assert len([a for a in answers if session_cookie(a)]) == 1


@pytest.mark.django_db(transaction=True)
def test_fifty_sign_ins_racing_with_one_recovery_code_make_one_session(key, ada):
    codes = factors.new_recovery_codes(get_config(), ada.pk)
    with freeze_time(at(NOW)):
        # Fifty browsers, each with its own held sign-in (the password is known).
        browsers = []
        for _ in range(50):
            client = Client()
            first_factor(client)
            browsers.append((client, csrf_pair(client)))
        barrier = threading.Barrier(50)
        sessions: list[str | None] = []

        def send(client, token) -> None:
            try:
                barrier.wait(30)
                answer = client.post("/auth/mfa", {"csrfToken": token, "code": codes[0]})
                sessions.append(session_cookie(answer))
            finally:
                connections.close_all()

        threads = [threading.Thread(target=send, args=pair) for pair in browsers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert len(sessions) == 50
    assert len([s for s in sessions if s]) == 1
    assert factors.recovery_codes_left(get_config(), ada.pk) == 9


@pytest.mark.parametrize(("require_uv", "asked"), [(True, False), (False, True)])
def test_a_passkey_is_two_factors_only_with_user_verification(settings, db, require_uv, asked):
    from webauth.providers import Passkey

    from .support.authenticator import SoftAuthenticator
    from .test_flows_webauthn import register, sign_in

    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey(require_user_verification=require_uv)],
        "mfa": {"enabled": True},
    }
    authenticator = SoftAuthenticator()
    assert register(Client(), authenticator).status_code == 200
    user = get_user_model().objects.get(email="new@example.com")
    add_key(user, NOW - 300)
    with freeze_time(at(NOW)):
        answer = sign_in(Client(), authenticator)
    if asked:
        assert answer.json()["url"].endswith("/auth/mfa")
        assert session_cookie(answer) is None
    else:
        assert session_cookie(answer)


def test_the_finished_sign_in_reports_the_first_factors_account(client, key):
    from webauth.signals import signed_in

    seen = []

    def receiver(sender, **message):
        seen.append(message.get("account"))

    signed_in.connect(receiver)
    try:
        with freeze_time(at(NOW)):
            first_factor(client)
            assert not seen  # no sign-in yet: it is held
            assert session_cookie(send_code(client, pyotp.TOTP(key).at(NOW)))
    finally:
        signed_in.disconnect(receiver)
    [account] = seen
    assert account is not None
    assert (account["provider"], account["type"]) == ("credentials", "credentials")
