"""One passkey assertion, replayed 50 times at once through the live server: one session.

The issue's rule: a replayed assertion is refused even within the challenge's
lifetime, and 50 concurrent replays of one assertion give no extra session.
Each request runs in its own server thread with its own database connection;
the adapter's single use of the challenge (one conditional DELETE) and its
atomic counter update decide, on whichever database the suite runs on (SQLite
by default, PostgreSQL with WEBAUTH_TEST_POSTGRES=1, MariaDB with
WEBAUTH_TEST_MARIADB=1).
"""

import threading
from collections import Counter

import pytest
import requests

from webauth.models import Authenticator, Session, WebAuthnChallenge
from webauth.providers import Passkey

from .support.authenticator import SoftAuthenticator
from .test_email_concurrency import RACERS, server  # noqa: F401 - the live server fixture

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
HEADERS = {"X-Auth-Return-Redirect": "1", "Accept": "application/json"}


@pytest.fixture
def site(settings):
    def configure(strategy):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": strategy},
            "experimental": {"enable_webauthn": True},
            "providers": [Passkey()],
            # The race is the adapter's to decide, not the limiter's.
            "rate_limits": {"passkey_failed": "1000/h/ip", "passkey_options": "1000/h/ip"},
        }

    return configure


def options(browser, url, **query):
    response = browser.get(f"{url}/auth/webauthn-options/passkey", params=query, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["options"]


def post(browser, url, action, data):
    import json

    return browser.post(
        f"{url}/auth/callback/passkey",
        data={"action": action, "data": json.dumps(data)},
        headers=HEADERS,
        timeout=60,
        allow_redirects=False,
    )


@pytest.mark.parametrize("strategy", ["jwt", "database"])
def test_fifty_concurrent_replays_give_one_session(server, site, strategy):  # noqa: F811
    site(strategy)
    url = server.url
    authenticator = SoftAuthenticator()
    with requests.Session() as first:
        created = options(first, url, action="register", email="racer@example.com")
        response = post(first, url, "register", authenticator.create(created, origin=url))
        assert response.status_code == 200, response.text
    sessions_before = Session.objects.count()

    browser = requests.Session()
    asked = options(browser, url, action="authenticate")
    assertion = authenticator.get(asked, origin=url)
    cookies = browser.cookies.get_dict()

    barrier = threading.Barrier(RACERS)
    results: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def race():
        with requests.Session() as racer:
            racer.cookies.update(cookies)
            barrier.wait()
            answer = post(racer, url, "authenticate", assertion)
            with lock:
                results.append((answer.status_code, SESSION in answer.cookies))

    threads = [threading.Thread(target=race) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    browser.close()

    assert len(results) == RACERS
    tally = Counter(results)
    assert tally[(200, True)] == 1, tally
    assert tally[(400, False)] == RACERS - 1, tally
    assert Authenticator.objects.get().counter == 1
    assert not WebAuthnChallenge.objects.exists()
    if strategy == "database":
        assert Session.objects.count() == sessions_before + 1
