"""API keys across processes: 4 gunicorn workers on one database and Redis.

A key works in every process; revoked or expired from outside (another
process: the account center, the admin, a shell), it is refused by every
worker at its very next request, since nothing about a key is cached; and the
per-key limit counted in Redis holds across them: exactly N of many concurrent
requests pass.
"""

from __future__ import annotations

import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from .support.gunicorn import REPO_ROOT, gunicorn, run_module
from .support.redis import HOST as REDIS_HOST
from .support.redis import PORT as REDIS_PORT
from .support.redis import redis_or_skip

# The processes share a file database and Redis; nothing of pytest-django's.
pytestmark = pytest.mark.backend_independent

KEY_RATE = 30


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings_api_keys",
        "WEBAUTH_TEST_API_KEYS_DB": str(tmp_path / "keys.sqlite3"),
        "WEBAUTH_TEST_REDIS_URL": f"redis://{REDIS_HOST}:{REDIS_PORT}/0",
        "WEBAUTH_TEST_REDIS_PREFIX": f"webauth-test-{uuid.uuid4().hex}",
        "WEBAUTH_TEST_API_KEY_RATE": f"{KEY_RATE}/1000d/key",
        "PYTHONPATH": str(REPO_ROOT),
    }


def _command(env: dict[str, str], *args: str) -> str:
    return run_module("tests.support.api_keys_site", env, *args)


@pytest.fixture
def fleet(tmp_path):
    """(base URL, environment, a key) with 4 workers serving it."""
    redis_or_skip()
    env = _env(tmp_path)
    key = _command(env, "setup")
    with gunicorn(env, tmp_path, app="tests.support.api_keys_site:application") as base:
        yield base, env, key


def _many(count, url, key):
    def ask(_):
        return requests.get(url, headers={"Authorization": f"Bearer {key}"}, timeout=30)

    with ThreadPoolExecutor(max_workers=16) as pool:
        return list(pool.map(ask, range(count)))


def test_a_key_is_refused_by_every_worker_once_revoked(fleet):
    base, env, key = fleet
    first = _many(16, f"{base}/key", key)
    assert [r.status_code for r in first] == [200] * 16
    assert {r.json()["user"] for r in first} == {"robot"}
    assert len({r.headers["X-Worker-Pid"] for r in first}) >= 2  # really several processes
    _command(env, "revoke", key[4:16])
    after = _many(12, f"{base}/key", key)
    assert [r.status_code for r in after] == [401] * 12
    assert len({r.headers["X-Worker-Pid"] for r in after}) >= 2


def test_an_expired_key_is_refused_by_every_worker(fleet):
    base, env, key = fleet
    assert _many(4, f"{base}/key", key)[0].status_code == 200
    _command(env, "expire", key[4:16])
    after = _many(12, f"{base}/key", key)
    assert [r.status_code for r in after] == [401] * 12


def test_the_per_key_limit_holds_across_the_workers(fleet):
    base, _, key = fleet
    answers = _many(80, f"{base}/key", key)
    statuses = [r.status_code for r in answers]
    assert statuses.count(200) == KEY_RATE
    assert statuses.count(429) == 80 - KEY_RATE
    assert len({r.headers["X-Worker-Pid"] for r in answers}) >= 2
