"""One email grant, 50 simultaneous redemptions through the live server: one session.

The person's browser holds the pending cookie and a CSRF pair; 50 requests carry
them at once, half with the link's token (the confirmation page's POST), half with
the code (the verify-request page's POST), as 50 tabs or a script racing itself
would. The adapter's single-use redemption (a conditional DELETE, and for codes a
claimed attempt) must let exactly one through, on whichever database the suite
runs on: SQLite by default, PostgreSQL with WEBAUTH_TEST_POSTGRES=1, MariaDB with
WEBAUTH_TEST_MARIADB=1.
"""

import re
from collections import Counter
from functools import partial
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.core import mail

from webauth.models import Session, VerificationToken
from webauth.providers import Email

from .support.race import RACERS, at_once, wide_live_server

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"


@pytest.fixture
def server(transactional_db):
    """Django's live server with room for 50 at once (tests/support/race.py)."""
    with wide_live_server() as url:
        yield SimpleNamespace(url=url)


@pytest.fixture
def site(settings):
    def configure(strategy):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "providers": [Email(from_email="Example <no-reply@example.com>")],
            # The race is the adapter's to decide, not the limiter's: the default
            # code_failed limit (5 per address) would turn most code racers away first.
            "rate_limits": {"code_failed": "1000/m/ip,1000/5m/key"},
        }

    return configure


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", email="alice@example.com")


def race(url, cookies, forms):
    """POST every form at once, each from a browser of its own; the responses, in order."""
    browsers = [requests.Session() for _ in forms]
    for browser in browsers:
        browser.cookies.update(cookies)
    return at_once(
        [
            partial(browser.post, url, data=form, allow_redirects=False, timeout=60)
            for browser, form in zip(browsers, forms, strict=True)
        ]
    )


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_fifty_simultaneous_redemptions_give_one_session(site, server, alice, strategy):
    site(strategy)
    person = requests.Session()
    csrf = person.get(f"{server.url}/auth/csrf").json()["csrfToken"]
    asked = person.post(
        f"{server.url}/auth/signin/email",
        data={"csrfToken": csrf, "email": "alice@example.com", "callbackUrl": "/after/"},
        allow_redirects=False,
    )
    assert asked.status_code == 302
    [message] = mail.outbox
    link = re.search(r"http://\S+/auth/callback/email\?\S+", message.body).group()
    code = re.search(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body).group()
    query = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    by_link = {"csrfToken": csrf, "token": query["token"], "email": query["email"]}
    by_code = {"csrfToken": csrf, "code": code}
    forms = [by_link if i % 2 else by_code for i in range(RACERS)]

    responses = race(f"{server.url}/auth/callback/email", person.cookies.get_dict(), forms)

    winners = [i for i, r in enumerate(responses) if r.cookies.get(SESSION)]
    statuses = Counter(r.status_code for r in responses)
    assert len(winners) == 1, statuses
    assert not [s for s in statuses if s >= 500], statuses
    [winner] = winners
    assert responses[winner].status_code == 302
    assert responses[winner].headers["Location"] == f"{server.url}/after/"
    # The losers: a link already used goes to the error page; a code whose grant is
    # gone is a wrong code (the form again, 400). Nobody else got anything.
    for i, response in enumerate(responses):
        if i == winner:
            continue
        if "token" in forms[i]:
            assert response.status_code == 302
            assert response.headers["Location"].endswith("/auth/error?error=Verification")
        else:
            assert response.status_code == 400
    assert VerificationToken.objects.count() == 0
    if strategy == "database":
        assert Session.objects.count() == 1
