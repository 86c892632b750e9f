"""The account center's Security section: adding an authenticator app, recovery codes, removal.

A signed-in user adds a key (behind re-authentication), scans its QR code or
types its key, confirms it with a code and is shown ten recovery codes once;
the next sign-in asks for a code. Removing the key (behind re-authentication
too) takes the recovery codes with it.
"""

from __future__ import annotations

import re
import time
from html import unescape

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from freezegun import freeze_time

from webauth.conf import get_config
from webauth.mfa import factors
from webauth.test import force_sign_in

from .support.helpers import csrf_pair, session_cookie
from .support.mfa import at

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
PAGE = "/account/security/"
# Now (the sessions the tests force are made at the real time): the codes are
# computed for it under freeze_time.
NOW = float(int(time.time()))


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
            "providers": ["webauth.providers.DjangoCredentials"],
            "mfa": {"enabled": True, **mfa},
        }

    configure()
    return configure


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)


@pytest.fixture
def browser(site, ada):
    client = Client()
    # Signed in at NOW, which the tests freeze the clock at or after: a session
    # issued later than the frozen clock would not be one yet.
    with freeze_time(at(NOW)):
        force_sign_in(client, ada)
    return client


def post(client, **fields):
    return client.post(PAGE, fields)


def shown_key(response) -> str:
    match = re.search(
        r"<code class=\"webauth-key\" data-key>([A-Z2-7 ]+)</code>", response.content.decode()
    )
    assert match, "no key on the page"
    return match.group(1).replace(" ", "")


def shown_factor(response) -> str:
    match = re.search(r'name="factor" value="(\d+)"', response.content.decode())
    assert match
    return match.group(1)


def shown_codes(response) -> list[str]:
    return re.findall(r"<li><code>([0-9a-z-]+)</code></li>", response.content.decode())


def test_the_section_is_offered_only_with_mfa_on(browser, site):
    page = browser.get(PAGE)
    assert page.status_code == 200 and b"Add an authenticator app" in page.content
    assert b'href="/account/security/"' in browser.get("/account/").content
    site(enabled=False)
    off = browser.get(PAGE)
    assert b"Two-step verification is not available on this site." in off.content
    assert b'href="/account/security/"' not in browser.get("/account/").content
    assert post(browser, op="begin").status_code == 302  # an unknown action, said as a message


def test_adding_a_key_shows_its_qr_code_and_counts_only_once_confirmed(browser, ada):
    with freeze_time(at(NOW)):
        adding = post(browser, op="begin")
        assert adding.status_code == 200
        html = adding.content.decode()
        assert "<svg" in html and "QR code for your authenticator app" in html
        key = shown_key(adding)
        factor = shown_factor(adding)
        assert factors.confirmed_factors(get_config(), ada.pk) == []

        wrong = post(
            browser,
            op="confirm",
            factor=factor,
            code="000000" if pyotp.TOTP(key).now() != "000000" else "111111",
        )
        assert wrong.status_code == 400
        assert b'aria-invalid="true"' in wrong.content
        assert shown_key(wrong) == key  # the same key, to try again

        done = post(browser, op="confirm", factor=factor, code=pyotp.TOTP(key).at(NOW))
        assert done.status_code == 200
        codes = shown_codes(done)
        assert len(codes) == 10
    [confirmed] = factors.confirmed_factors(get_config(), ada.pk)
    assert confirmed.id == factor
    assert factors.recovery_codes_left(get_config(), ada.pk) == 10
    listed = unescape(browser.get(PAGE).content.decode())
    assert "Authenticator app" in listed and "10 recovery codes left." in listed


def add_key(browser, when=None):
    when = NOW if when is None else when
    with freeze_time(at(when)):
        adding = post(browser, op="begin")
        key, factor = shown_key(adding), shown_factor(adding)
        done = post(browser, op="confirm", factor=factor, code=pyotp.TOTP(key).at(when))
    return key, factor, shown_codes(done)


def test_the_next_sign_in_asks_for_the_code(browser):
    _key, _factor, codes = add_key(browser)
    with freeze_time(at(NOW + 60)):
        other = Client()
        first = other.post(
            "/auth/callback/credentials",
            {"csrfToken": csrf_pair(other), "username": "ada", "password": PASSWORD},
        )
        assert first["Location"].endswith("/auth/mfa") and session_cookie(first) is None
        done = other.post("/auth/mfa", {"csrfToken": csrf_pair(other), "code": codes[0]})
        assert session_cookie(done)


def test_new_recovery_codes_void_the_old_ones(browser, ada):
    _key, _factor, first = add_key(browser)
    # On the clock the session was made on (a slow machine could otherwise take the
    # test past the re-authentication window).
    with freeze_time(at(NOW)):
        again = post(browser, op="codes")
    second = shown_codes(again)
    assert len(second) == 10 and not set(first) & set(second)
    assert factors.check_code(get_config(), ada.pk, first[0]) is None
    assert factors.check_code(get_config(), ada.pk, second[0]) == "recovery_code"


def test_removing_the_last_key_takes_the_recovery_codes_with_it(browser, ada):
    _key, factor, _codes = add_key(browser)
    with freeze_time(at(NOW)):  # as above
        removed = post(browser, op="remove", factor=factor)
    assert removed.status_code == 302  # with django.contrib.messages: the message and back
    assert factors.confirmed_factors(get_config(), ada.pk) == []
    assert factors.recovery_codes_left(get_config(), ada.pk) == 0
    # Without a key, the password alone signs in again.
    fresh = Client()
    signed = fresh.post(
        "/auth/callback/credentials",
        {"csrfToken": csrf_pair(fresh), "username": "ada", "password": PASSWORD},
    )
    assert session_cookie(signed)


def test_someone_elses_key_cannot_be_confirmed_or_removed(browser, db):
    grace = get_user_model().objects.create_user("grace", "grace@example.com", PASSWORD)
    theirs = factors.begin_totp(get_config(), grace.pk, account="g", issuer="x")
    assert post(browser, op="confirm", factor=theirs.factor.id, code="123456").status_code == 302
    assert post(browser, op="remove", factor=theirs.factor.id).status_code == 302
    assert factors.storage_of(get_config()).list_second_factors(str(grace.pk))


def test_a_stale_session_is_asked_to_prove_itself_first(site, ada):
    client = Client()
    with freeze_time(at(NOW)) as clock:
        force_sign_in(client, ada)
        clock.tick(3600)
        for op in ("begin", "codes", "remove"):
            refused = post(client, op=op, factor="1")
            assert refused.status_code == 302
            assert "/account/reauthenticate/" in refused["Location"], op
