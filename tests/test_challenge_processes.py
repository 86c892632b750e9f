"""The bot challenge's "abuse" across processes: 4 gunicorn workers sharing one Redis.

Whether an address must pass the challenge is read from the rate limiter's
counters (webauth.ratelimit.usage), so it holds wherever they do: failures
counted by one process make every other process ask. The site is
tests.support.settings_challenge: every password refused, the challenge asked
from an address's 3rd failure on, Turnstile's verify endpoint a local fake.
"""

import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from .support.challenge_fakes import FakeVerifier
from .support.gunicorn import gunicorn
from .support.redis import URL as REDIS_URL
from .support.redis import redis_or_skip

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVICE_SECRET = "0xTURNSTILE-secret-of-the-process-test"
FIELD = "cf-turnstile-response"


@pytest.fixture
def fake():
    with FakeVerifier("turnstile", SERVICE_SECRET, site_key="0xSITE-KEY") as fake:
        yield fake


@pytest.fixture
def site(tmp_path, fake):
    redis_or_skip()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings_challenge",
        "WEBAUTH_TEST_REDIS_PREFIX": f"webauth-test-{uuid.uuid4().hex}",
        "WEBAUTH_TEST_REDIS_URL": REDIS_URL,
        "WEBAUTH_TEST_CHALLENGE_URL": fake.url,
        "WEBAUTH_TEST_CHALLENGE_SECRET": SERVICE_SECRET,
        "PYTHONPATH": str(REPO_ROOT),
    }
    with gunicorn(env, tmp_path) as base:
        yield base


def test_failures_counted_by_any_process_make_every_process_ask(site, fake):
    session = requests.Session()
    token = session.get(f"{site}/auth/csrf").json()["csrfToken"]
    cookies = session.cookies.get_dict()

    def attempt(answer=None):
        data = {"csrfToken": token, "username": f"u-{uuid.uuid4().hex}", "password": "guess"}
        if answer is not None:
            data[FIELD] = answer
        # A new connection each time: the workers take turns.
        return requests.post(
            f"{site}/auth/callback/credentials",
            data=data,
            cookies=cookies,
            allow_redirects=False,
            timeout=30,
        )

    def error_of(response):
        assert response.status_code == 302, response.text[:300]
        location = response.headers["Location"]
        return location.split("error=", 1)[1]

    # Below the share (3 of 6): no challenge, the failures are counted.
    first = [attempt() for _ in range(3)]
    assert [error_of(r) for r in first] == ["CredentialsSignin&code=credentials"] * 3
    assert fake.requests == []
    # From now on every process asks for it, concurrently too.
    with ThreadPoolExecutor(max_workers=20) as pool:
        asked = list(pool.map(lambda _: attempt(), range(40)))
    assert {error_of(r) for r in asked} == {"ChallengeFailed&code=missing"}
    pids = {r.headers["X-Worker-Pid"] for r in first + asked}
    assert len(pids) >= 2  # really several processes
    assert fake.requests == []  # no answer: the service is never asked
    # An answer the service accepts gets the request through (to the password check),
    # in whichever process; one it refuses does not.
    passed = [attempt(fake.issue()) for _ in range(2)]
    assert [error_of(r) for r in passed] == ["CredentialsSignin&code=credentials"] * 2
    assert error_of(attempt("0.never-issued")) == "ChallengeFailed&code=refused"
    assert len(fake.requests) == 3
