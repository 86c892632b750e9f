"""Wrong second-factor codes are limited across processes: 4 gunicorn workers, one Redis.

A held sign-in (in Redis) gets 200 wrong codes at once, spread over the
workers: exactly the ``mfa_failed`` limit's number are judged (``401
SecondFactorFailed``) and the rest refused (``429``), whichever process
served them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from .support.gunicorn import REPO_ROOT, gunicorn
from .support.redis import URL as REDIS_URL
from .support.redis import redis_or_skip

PASSWORD = "correct horse battery staple"

# The users and their key, made in the SQLite file before the workers start.
SETUP = """
import django
django.setup()
import pyotp
from django.contrib.auth import get_user_model
from webauth.conf import get_config
from webauth.mfa import factors
user = get_user_model().objects.create_user("ada", "ada@example.com", {password!r})
config = get_config()
enrolment = factors.begin_totp(config, user.pk, account=user.email, issuer="x")
assert factors.confirm_totp(config, user.pk, enrolment.factor.id, pyotp.TOTP(enrolment.key).now())
"""


@pytest.fixture
def four_workers(tmp_path):
    redis_or_skip()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings_mfa_processes",
        "WEBAUTH_TEST_MFA_DB": str(tmp_path / "mfa.sqlite3"),
        "WEBAUTH_TEST_REDIS_PREFIX": f"webauth-test-{uuid.uuid4().hex}",
        "WEBAUTH_TEST_REDIS_URL": REDIS_URL,
        "PYTHONPATH": str(REPO_ROOT),
    }
    run = {"env": env, "cwd": REPO_ROOT, "check": True, "capture_output": True, "timeout": 300}
    subprocess.run([sys.executable, "-m", "django", "migrate", "-v", "0"], **run)
    subprocess.run([sys.executable, "-c", SETUP.format(password=PASSWORD)], **run)
    with gunicorn(env, tmp_path) as base:
        yield base


def test_exactly_the_limit_of_200_wrong_codes_is_judged_across_four_processes(four_workers):
    held = requests.post(
        f"{four_workers}/auth/app/signin/credentials",
        json={"username": "ada", "password": PASSWORD},
        timeout=30,
    ).json()
    assert held["step"] == "second_factor"
    body = json.dumps({"mfaToken": held["mfaToken"], "code": "not-a-code"})

    def wrong():
        return requests.post(
            f"{four_workers}/auth/app/mfa",
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=30,
        )

    with ThreadPoolExecutor(max_workers=40) as pool:
        answers = list(pool.map(lambda _: wrong(), range(200)))
    statuses = [r.status_code for r in answers]
    assert statuses.count(401) == 29
    assert all(r.json() == {"error": "SecondFactorFailed"} for r in answers if r.status_code == 401)
    assert statuses.count(429) == 171
    assert len({r.headers["X-Worker-Pid"] for r in answers}) >= 2  # really several processes
