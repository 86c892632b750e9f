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
import threading
from collections import Counter
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.core import mail
from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread, _StaticFilesHandler

from webauth.models import Session, VerificationToken
from webauth.providers import Email

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
RACERS = 50


class WideServer(ThreadedWSGIServer):
    # Django's test server listens with a backlog of 10: 50 connections opened at
    # once overflow it, and the kernel resets some before Django sees them.
    request_queue_size = 2 * RACERS


class WideLiveServer(LiveServerThread):
    server_class = WideServer


@pytest.fixture
def server(transactional_db):
    """pytest-django's live server (Django's LiveServerThread), with room for 50 at once.

    Each request runs in its own thread with its own database connection, as
    under a threaded WSGI server in production.
    """
    thread = WideLiveServer("127.0.0.1", _StaticFilesHandler)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield type("Server", (), {"url": f"http://127.0.0.1:{thread.port}"})
    finally:
        thread.terminate()


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
    """POST every form at once (each from its own thread); the responses, in order."""
    start = threading.Barrier(len(forms))
    responses = [None] * len(forms)

    def redeem(i):
        with requests.Session() as http:
            http.cookies.update(cookies)
            start.wait()
            responses[i] = http.post(url, data=forms[i], allow_redirects=False, timeout=60)

    threads = [threading.Thread(target=redeem, args=(i,)) for i in range(len(forms))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return responses


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
