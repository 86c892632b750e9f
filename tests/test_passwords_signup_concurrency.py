"""50 sign-ups at once through the live server: one address, or one username, makes one user.

Each racer is a browser of its own (its own CSRF pair), and all post
``/auth/signup`` at the same moment, as a script racing itself or a double
submit from many tabs would. ``DjangoAdapter.create_user`` must let exactly one
through, on whichever database the suite runs on: SQLite by default, PostgreSQL
with WEBAUTH_TEST_POSTGRES=1, MariaDB with WEBAUTH_TEST_MARIADB=1 (the address
under the per-address lock, ``adapters/_exact.address_transaction``; the
username under the column's unique constraint). The losers get the answer of
any taken address or username (the "check your email" page), never a 500.
"""

import re
from collections import Counter
from functools import partial
from types import SimpleNamespace

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core import mail

from webauth.models import UnprovenEmail, VerificationToken
from webauth.passwords import signup as flow

from .support.race import RACERS, at_once, wide_live_server

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
PASSWORD = "correct horse battery 9"


@pytest.fixture
def server(transactional_db):
    """Django's live server with room for 50 at once (tests/support/race.py)."""
    with wide_live_server() as url:
        yield SimpleNamespace(url=url)
        flow.wait_for_mail()


@pytest.fixture
def site(settings):
    def configure(verify):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "providers": ["webauth.providers.DjangoCredentials"],
            "passwords": {"signup": {"verify_email": verify}},
            # The race is the adapter's to decide, not the limiter's.
            "rate_limits": {
                "signup": "1000/m/ip,1000/h/key",
                "code_failed": "1000/m/ip,1000/5m/key",
            },
        }

    return configure


def race(url, browsers, forms):
    """POST each form from its browser at once; the responses, in order."""
    return at_once(
        [
            partial(browser.post, url, data=form, allow_redirects=False, timeout=120)
            for browser, form in zip(browsers, forms, strict=True)
        ]
    )


def browsers_with_tokens(server, count):
    browsers = [requests.Session() for _ in range(count)]
    tokens = [b.get(f"{server.url}/auth/csrf").json()["csrfToken"] for b in browsers]
    return browsers, tokens


def _signed_up(server, forms, browsers):
    responses = race(f"{server.url}/auth/signup", browsers, forms)
    flow.wait_for_mail()
    statuses = Counter(r.status_code for r in responses)
    assert not [s for s in statuses if s >= 500], statuses
    return responses, statuses


def test_fifty_sign_ups_of_one_address_make_one_user(site, server):
    site(verify=False)
    browsers, tokens = browsers_with_tokens(server, RACERS)
    forms = [
        {
            "csrfToken": tokens[i],
            "username": f"racer{i}",
            "email": "one@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        }
        for i in range(RACERS)
    ]
    responses, statuses = _signed_up(server, forms, browsers)
    users = get_user_model().objects.filter(email="one@example.com")
    assert users.count() == 1, statuses
    winners = [r for r in responses if r.cookies.get(SESSION)]
    assert len(winners) == 1 and winners[0].status_code == 302
    # The others: the page any taken address gets, and the owner's email.
    assert statuses[200] == RACERS - 1
    assert all(b"Check your email" in r.content for r in responses if r.status_code == 200)
    assert UnprovenEmail.objects.filter(user=users.get()).exists()
    assert len([m for m in mail.outbox if m.to == ["one@example.com"]]) == RACERS - 1


def test_fifty_sign_ups_of_one_username_make_one_user(site, server):
    site(verify=False)
    browsers, tokens = browsers_with_tokens(server, RACERS)
    forms = [
        {
            "csrfToken": tokens[i],
            "username": "samename",
            "email": f"racer{i}@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        }
        for i in range(RACERS)
    ]
    responses, statuses = _signed_up(server, forms, browsers)
    assert get_user_model().objects.filter(username__iexact="samename").count() == 1, statuses
    assert get_user_model().objects.count() == 1
    assert len([r for r in responses if r.cookies.get(SESSION)]) == 1


def test_fifty_redemptions_of_one_sign_up_make_one_user(site, server):
    """verify_email: one browser's code and link posted 50 times at once."""
    site(verify=True)
    person = requests.Session()
    csrf = person.get(f"{server.url}/auth/csrf").json()["csrfToken"]
    asked = person.post(
        f"{server.url}/auth/signup",
        data={
            "csrfToken": csrf,
            "username": "bea",
            "email": "bea@example.com",
            "password1": PASSWORD,
            "password2": PASSWORD,
        },
        allow_redirects=False,
    )
    assert asked.status_code == 200
    flow.wait_for_mail()
    [message] = mail.outbox
    code = re.search(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body).group()
    token = re.search(r"token=([0-9a-f]+)", message.body).group(1)
    browsers = []
    for _ in range(RACERS):
        tab = requests.Session()
        tab.cookies.update(person.cookies.get_dict())
        browsers.append(tab)
    forms = [
        {"csrfToken": csrf, "token": token} if i % 2 else {"csrfToken": csrf, "code": code}
        for i in range(RACERS)
    ]
    responses, statuses = _signed_up(server, forms, browsers)
    assert get_user_model().objects.filter(email="bea@example.com").count() == 1, statuses
    assert len([r for r in responses if r.cookies.get(SESSION)]) == 1, statuses
    assert VerificationToken.objects.count() == 0
