"""One reset grant, 50 simultaneous redemptions through the live server: one new password.

The person's browser holds the reset's pending cookie and a CSRF pair; 50
requests carry them at once, half with the link's token (the new-password
form's POST), half with the code (the "check your email" form's POST), each
with a password of its own, as 50 tabs or a script racing itself would. The
adapter's single-use redemption (a conditional DELETE, and for codes a claimed
attempt) must let exactly one set the password, on whichever database the suite
runs on: SQLite by default, PostgreSQL with WEBAUTH_TEST_POSTGRES=1, MariaDB
with WEBAUTH_TEST_MARIADB=1. The same for 50 apps' redemptions of one
``resetToken``.
"""

import json
import re
from collections import Counter
from functools import partial
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core import mail

from webauth import signals
from webauth.models import VerificationToken
from webauth.passwords import reset
from webauth.providers import Email

from .support.race import RACERS, at_once, wide_live_server

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
OLD = "old password 1"


@pytest.fixture
def server(transactional_db):
    """Django's live server with room for 50 at once (tests/support/race.py)."""
    with wide_live_server() as url:
        yield SimpleNamespace(url=url)
    assert reset.outbox.flush()


@pytest.fixture
def site(settings):
    def configure(strategy):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "bearer": True,
            "providers": [
                "webauth.providers.DjangoCredentials",
                Email(from_email="Example <no-reply@example.com>"),
            ],
            "passwords": {"reset": True},
            # The race is the adapter's to decide, not the limiter's: the default
            # code_failed limit (5 per identifier) would turn most code racers away first.
            "rate_limits": {"code_failed": "1000/m/ip,1000/5m/key"},
        }

    return configure


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", email="alice@example.com", password=OLD)


@pytest.fixture
def changes():
    """Every password_changed event sent while the test runs."""
    seen = []

    def receiver(sender, **kwargs):
        seen.append(kwargs["how"])

    signals.password_changed.connect(receiver)
    yield seen
    signals.password_changed.disconnect(receiver)


def race(url, cookies, bodies, *, as_json=False):
    """POST every body at once, each from a browser of its own; the responses, in order."""
    browsers = [requests.Session() for _ in bodies]
    for browser in browsers:
        browser.cookies.update(cookies)
    if as_json:
        calls = [
            partial(b.post, url, json=body, timeout=60)
            for b, body in zip(browsers, bodies, strict=True)
        ]
    else:
        calls = [
            partial(b.post, url, data=body, allow_redirects=False, timeout=60)
            for b, body in zip(browsers, bodies, strict=True)
        ]
    return at_once(calls)


def the_message():
    assert reset.outbox.flush()
    [message] = mail.outbox
    [link] = re.findall(r"http://\S+/auth/reset/confirm\?\S+", message.body)
    [code] = re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body)
    return parse_qs(urlsplit(link).query)["token"][0], code


def new_passwords():
    """Which racer's password is alice's now: the indexes whose password it is."""
    user = get_user_model().objects.get(username="alice")
    return [i for i in range(RACERS) if user.check_password(f"racer {i} password")]


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_fifty_simultaneous_redemptions_set_the_password_once(
    site, server, alice, changes, strategy
):
    site(strategy)
    person = requests.Session()
    csrf = person.get(f"{server.url}/auth/csrf").json()["csrfToken"]
    asked = person.post(
        f"{server.url}/auth/reset",
        data={"csrfToken": csrf, "identifier": "alice"},
        allow_redirects=False,
    )
    assert asked.status_code == 302
    token, code = the_message()
    bodies = []
    for i in range(RACERS):
        secret = {"token": token} if i % 2 else {"code": code}
        password = f"racer {i} password"
        bodies.append(
            {"csrfToken": csrf, "new_password1": password, "new_password2": password, **secret}
        )

    responses = race(f"{server.url}/auth/reset/confirm", person.cookies.get_dict(), bodies)

    statuses = Counter(r.status_code for r in responses)
    assert not [s for s in statuses if s >= 500], statuses
    winners = [i for i, r in enumerate(responses) if r.status_code == 302]
    assert len(winners) == 1, statuses
    [winner] = winners
    assert responses[winner].headers["Location"] == f"{server.url}/auth/reset/done"
    assert new_passwords() == [winner]
    assert changes == ["reset"]
    # The losers: a link already used is no longer valid; a code whose grant is gone
    # is a wrong code. Nobody else set anything.
    for i, response in enumerate(responses):
        if i != winner:
            assert response.status_code == 400
            expected = b"no longer valid" if "token" in bodies[i] else b"That code is not right"
            assert expected in response.content, response.content[:2000]
    assert VerificationToken.objects.count() == 0


def test_fifty_apps_redeem_one_reset_token_once(site, server, alice, changes):
    site("jwt")
    answer = requests.post(f"{server.url}/auth/app/reset", json={"identifier": "alice"}).json()
    token, code = the_message()
    bodies = [
        {
            "resetToken": answer["resetToken"],
            **({"token": token} if i % 2 else {"code": code}),
            "password": f"racer {i} password",
        }
        for i in range(RACERS)
    ]

    responses = race(f"{server.url}/auth/app/reset/confirm", {}, bodies, as_json=True)

    statuses = Counter(r.status_code for r in responses)
    winners = [i for i, r in enumerate(responses) if r.status_code == 200]
    assert len(winners) == 1 and statuses[401] == RACERS - 1, statuses
    assert responses[winners[0]].json() == {"reset": True}
    assert all(
        json.loads(r.content) == {"error": "Verification"}
        for r in responses
        if r.status_code == 401
    )
    assert new_passwords() == winners
    assert changes == ["reset"]
