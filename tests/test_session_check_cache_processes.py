"""The cached session check across processes: 4 gunicorn workers, PostgreSQL over TCP, Redis.

``session.user_check_cache`` (docs/sessions.md) keeps the JWT session check in
Redis. Once a session's check has passed, no worker queries the database for it
(``X-Queries: 0``). Every revocation is seen by every worker within its bound:
a deactivation, a new password or a deletion through the ORM, made by another
process (a shell, the admin), at the very next request; webauth's "sign out
everywhere" sends every worker back to the database at once; a deactivation
behind the ORM's back (``QuerySet.update()``) once ``max_staleness`` (3 s here)
has passed.
"""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from .support.gunicorn import REPO_ROOT, gunicorn, run_module
from .support.postgres import postgres_or_skip
from .support.redis import HOST as REDIS_HOST
from .support.redis import PORT as REDIS_PORT
from .support.redis import redis_or_skip

# The processes share their own PostgreSQL schema and Redis prefix; nothing of pytest-django's.
pytestmark = pytest.mark.backend_independent

WORKERS = 4
MAX_STALENESS = 6
USERS = ("alice", "bob", "carol", "dave", "erin")
COOKIE = "authjs.session-token"


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings_check_cache",
        "WEBAUTH_TEST_PG_SCHEMA": f"webauth_check_{uuid.uuid4().hex[:12]}",
        "WEBAUTH_TEST_REDIS_URL": f"redis://{REDIS_HOST}:{REDIS_PORT}/0",
        "WEBAUTH_TEST_REDIS_PREFIX": f"webauth-test-{uuid.uuid4().hex}",
        "WEBAUTH_TEST_MAX_STALENESS": str(MAX_STALENESS),
        "PYTHONPATH": str(REPO_ROOT),
    }


def _command(env: dict[str, str], *args: str) -> str:
    return run_module("tests.support.check_cache_site", env, *args)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """(base URL, environment, session cookie by user) with 4 workers serving it."""
    redis_or_skip()
    postgres_or_skip()
    env = _env()
    lines = _command(env, "setup", *USERS).splitlines()
    cookies = dict(zip(USERS, (line.split(" ", 1)[1] for line in lines), strict=True))
    try:
        log_dir = Path(tmp_path_factory.mktemp("check-cache"))
        with gunicorn(
            env, log_dir, workers=WORKERS, app="tests.support.check_cache_site:application"
        ) as base:
            yield base, env, cookies
    finally:
        _command(env, "drop")


def _answers(base: str, cookie: str, count: int = 48) -> list[requests.Response]:
    """*count* concurrent ``GET /auth/session`` with *cookie*, until every worker answered."""

    def ask(_):
        return requests.get(f"{base}/auth/session", cookies={COOKIE: cookie}, timeout=30)

    answers: list[requests.Response] = []
    for _ in range(10):
        with ThreadPoolExecutor(max_workers=12) as pool:
            answers += pool.map(ask, range(count))
        if len({r.headers["X-Worker-Pid"] for r in answers}) == WORKERS:
            return answers
    raise AssertionError("not every worker answered")


def _signed_in(answer: requests.Response) -> bool:
    assert answer.status_code == 200
    return answer.json() is not None


def _primed(base: str, cookie: str) -> None:
    """The session's check has passed, and every worker now answers it with no query.

    Tried again when a round straddles the entry's expiry (``MAX_STALENESS`` is
    short, and a loaded machine can take that long): one round in which every
    worker answered from the cache is the proof.
    """
    for _ in range(3):
        first = requests.get(f"{base}/auth/session", cookies={COOKIE: cookie}, timeout=30)
        assert _signed_in(first)
        answers = _answers(base, cookie)
        assert all(_signed_in(a) for a in answers)
        if {a.headers["X-Queries"] for a in answers} == {"0"}:
            return
    raise AssertionError("the workers kept querying the database for a cached check")


def _entry(env: dict[str, str], user: str) -> object:
    """What the cache holds for *user*'s checks, read from Redis directly."""
    import pickle

    import redis

    pk = USERS.index(user) + 1  # created in this order in a fresh schema
    raw = redis.Redis(host=REDIS_HOST, port=REDIS_PORT).get(
        f"{env['WEBAUTH_TEST_REDIS_PREFIX']}:1:webauth:check:{pk}"
    )
    return None if raw is None else pickle.loads(raw)


@pytest.mark.parametrize("change", ["deactivate", "password", "delete"])
def test_a_change_through_the_orm_is_seen_by_every_worker_at_once(fleet, change):
    base, env, cookies = fleet
    user = {"deactivate": "alice", "password": "bob", "delete": "carol"}[change]
    _primed(base, cookies[user])
    _command(env, change, user)
    assert _entry(env, user) == "-"  # revoked in the shared cache, not left to expire
    answers = _answers(base, cookies[user])
    assert not any(_signed_in(a) for a in answers), change


def test_sign_out_everywhere_sends_every_worker_back_to_the_database(fleet):
    base, env, cookies = fleet
    _primed(base, cookies["dave"])
    _command(env, "everywhere", "dave")
    marked = time.monotonic()
    assert _entry(env, "dave") == "-"
    answers = _answers(base, cookies["dave"])
    # A JWT session lives on (nothing stores it), but no worker trusts the cache for
    # it while the mark lasts (MAX_STALENESS s; a loaded machine may outlast it).
    assert all(_signed_in(a) for a in answers)
    if time.monotonic() - marked < MAX_STALENESS:
        assert {a.headers["X-Queries"] for a in answers} == {"1"}


def test_a_change_behind_the_orms_back_is_seen_within_max_staleness(fleet):
    base, env, cookies = fleet
    _primed(base, cookies["erin"])
    _command(env, "update", "erin")  # QuerySet.update(): no signal, no revocation
    changed = time.monotonic()
    # The entry was written before the update, so it is gone MAX_STALENESS s later
    # at the latest (Redis expires it); every worker then asks the database.
    time.sleep(max(0.0, changed + MAX_STALENESS + 0.5 - time.monotonic()))
    answers = _answers(base, cookies["erin"])
    assert not any(_signed_in(a) for a in answers)
