"""get_access_token: refreshing provider tokens against the real test provider."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.core.cache import cache
from django.db import connections

from webauth import aget_access_token, get_access_token
from webauth.adapters.django import DjangoAdapter
from webauth.models import Account
from webauth.oauth.tokens import TokenRefreshError
from webauth.providers.oauth import OIDC

from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, sign_in, start_idp
from .support.token_endpoint import RotatingTokenEndpoint, rotating_provider

REPO_ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def account(client, live_server, settings):
    cache.clear()
    idp = start_idp(live_server)
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            OIDC(id="example", issuer=idp.issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        ],
        "adapter": "webauth.adapters.django.DjangoAdapter",
    }
    sign_in(client, idp)
    return Account.objects.get()


def expire(account):
    Account.objects.filter(pk=account.pk).update(expires_at=int(time.time()) - 10)


def test_fresh_token_is_returned_without_refreshing(account):
    assert get_access_token(account.user, "example") == account.access_token


def test_expired_token_is_refreshed_and_stored(account):
    expire(account)
    token = get_access_token(account.user, "example")
    assert token and token != account.access_token
    stored = Account.objects.get(pk=account.pk)
    assert stored.access_token == token
    assert stored.refresh_token != account.refresh_token  # the provider rotated it
    assert stored.expires_at > time.time()


def test_async_twin(account):
    expire(account)
    token = async_to_sync(aget_access_token)(account.user, "example")
    assert token == Account.objects.get(pk=account.pk).access_token


def test_no_account_is_none(account):
    from django.contrib.auth import get_user_model

    other = get_user_model().objects.create_user("nobody")
    assert get_access_token(other, "example") is None


def test_refused_refresh_raises(account):
    expire(account)
    Account.objects.filter(pk=account.pk).update(refresh_token="revoked")
    with pytest.raises(TokenRefreshError):
        get_access_token(account.user, "example")


def test_concurrent_calls_refresh_once(account):
    expire(account)
    results, errors = [], []
    barrier = threading.Barrier(6)

    def call():
        try:
            barrier.wait()
            results.append(get_access_token(account.user, "example"))
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The provider rotates refresh tokens: a second refresh with the old one would fail.
    assert not errors, errors
    assert len(set(results)) == 1 and results[0] != account.access_token


# -- through any adapter ---------------------------------------------------------------------


def test_refresh_goes_through_a_third_party_adapter(client, live_server, settings):
    from webauth.testing.memory import MemoryAdapter

    cache.clear()
    idp = start_idp(live_server)
    adapter = MemoryAdapter()
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            OIDC(id="example", issuer=idp.issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        ],
        "adapter": adapter,
        "session": {"strategy": "jwt"},
    }
    sign_in(client, idp)
    [(key, account)] = adapter.accounts.items()
    user = adapter.users[account.user_id]
    first = account.access_token
    assert get_access_token(user, "example") == first  # fresh: no refresh
    account.expires_at = int(time.time()) - 10
    results, errors = [], []
    barrier = threading.Barrier(4)

    def call():
        try:
            barrier.wait()
            results.append(get_access_token(user, "example"))
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The provider rotates refresh tokens: a second refresh with the old one would fail.
    assert not errors, errors
    assert len(set(results)) == 1 and results[0] != first
    assert adapter.accounts[key].access_token == results[0]
    assert not Account.objects.exists()  # nothing went to the Django tables


# -- several processes, one expired account ------------------------------------------------


def run_workers(count, user, endpoint):
    """Start *count* worker processes, release them together, return their results."""
    name = connections["default"].settings_dict["NAME"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.refresh_worker", name, str(user.pk), endpoint],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO_ROOT,
        )
        for _ in range(count)
    ]
    try:
        for worker in workers:
            assert worker.stdout.readline().strip() == "ready"
        for worker in workers:  # go
            worker.stdin.write("\n")
            worker.stdin.flush()
        return [json.loads(worker.communicate(timeout=120)[0]) for worker in workers]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()


@pytest.fixture
def rotating_account(db):
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("rotating-user")
    return Account.objects.create(
        user=user,
        type="oauth",
        provider="rotating",
        provider_account_id="acct-1",
        access_token="at-0",
        refresh_token="rt-0",
        token_type="bearer",
        expires_at=int(time.time()) - 10,
    )


def test_three_processes_refresh_once_and_share_the_new_token(rotating_account):
    # Three processes find the same expired token at once. The provider rotates
    # refresh tokens and refuses a reused one (and may then revoke the whole
    # family): exactly one request reaches it, and every process returns its token.
    with RotatingTokenEndpoint("rt-0") as endpoint:
        results = run_workers(3, rotating_account.user, endpoint.url)
    assert endpoint.calls == ["rt-0"], (endpoint.calls, results)
    assert results == [{"token": "at-1"}] * 3
    stored = Account.objects.get(pk=rotating_account.pk)
    assert (stored.access_token, stored.refresh_token) == ("at-1", "rt-1")
    assert stored.expires_at > time.time() + 3000


# -- the claim that stands in for a row lock (SQLite) -------------------------------------------


@pytest.fixture
def claims_only(monkeypatch):
    """The claim path on any database: as if it had no row locks (SQLite has none)."""
    features = type(connections["default"].features)
    monkeypatch.setattr(features, "has_select_for_update", False)


@pytest.fixture
def rotating(settings, rotating_account):
    """webauth configured with the rotating provider; yields its token endpoint."""
    with RotatingTokenEndpoint("rt-0", delay=0) as endpoint:
        settings.WEBAUTH = {
            **settings.WEBAUTH,
            "providers": [rotating_provider(endpoint.url)],
            "adapter": "webauth.adapters.django.DjangoAdapter",
        }
        yield endpoint


def claim(seconds):
    """A claim as a refreshing caller writes it, lapsing in *seconds* (negative: lapsed)."""
    return -((int(time.time()) + seconds) * 1_000_000 + 4242)


def test_a_claim_left_by_a_dead_process_is_taken_over(claims_only, rotating, rotating_account):
    Account.objects.filter(pk=rotating_account.pk).update(expires_at=claim(-1))
    assert get_access_token(rotating_account.user, "rotating") == "at-1"
    assert rotating.calls == ["rt-0"]
    assert Account.objects.get(pk=rotating_account.pk).expires_at > time.time()


def test_a_live_claim_is_waited_for(claims_only, rotating, rotating_account):
    Account.objects.filter(pk=rotating_account.pk).update(expires_at=claim(60))
    # Readers never see the marker: a claimed account reads as expired.
    record = DjangoAdapter().get_account_by_user_id(str(rotating_account.user_id), "rotating")
    assert record.expires_at == 0
    results = []

    def call():
        try:
            results.append(get_access_token(rotating_account.user, "rotating"))
        finally:
            connections.close_all()

    waiting = threading.Thread(target=call)
    waiting.start()
    time.sleep(0.5)
    assert waiting.is_alive() and results == []  # waiting for the claim's holder
    # The holder (another process) stores what its provider gave it.
    Account.objects.filter(pk=rotating_account.pk).update(
        access_token="at-other", refresh_token="rt-other", expires_at=int(time.time()) + 3600
    )
    waiting.join(10)
    assert results == ["at-other"]
    assert rotating.calls == []  # the provider was not asked again


@pytest.mark.parametrize("path", ["claim", "row lock"])
def test_a_refused_refresh_leaves_the_account_as_it_was(request, rotating, rotating_account, path):
    if path == "claim":
        request.getfixturevalue("claims_only")
    expired = Account.objects.get(pk=rotating_account.pk).expires_at
    Account.objects.filter(pk=rotating_account.pk).update(refresh_token="rt-revoked")
    with pytest.raises(TokenRefreshError):
        get_access_token(rotating_account.user, "rotating")
    stored = Account.objects.get(pk=rotating_account.pk)
    assert (stored.access_token, stored.refresh_token, stored.expires_at) == (
        "at-0",
        "rt-revoked",
        expired,
    )


def test_many_threads_on_the_claim_path_refresh_once(claims_only, rotating, rotating_account):
    rotating.delay = 0.3
    results, errors = [], []
    barrier = threading.Barrier(5)

    def call():
        try:
            barrier.wait()
            results.append(get_access_token(rotating_account.user, "rotating"))
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=call) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert results == ["at-1"] * 5 and rotating.calls == ["rt-0"]


def test_provider_error_text_is_escaped_in_the_log(rotating, rotating_account, caplog):
    rotating.error_description = "nope\r\n[auth][error] Forged: refresh ok\x1b[0m"
    Account.objects.filter(pk=rotating_account.pk).update(refresh_token="rt-revoked")
    with pytest.raises(TokenRefreshError):
        get_access_token(rotating_account.user, "rotating")
    assert "[auth][error] TokenRefreshError" in caplog.text
    assert not any(line.startswith("[auth][error]") for line in caplog.text.splitlines())
    assert r"nope\r\n[auth][error] Forged: refresh ok\x1b[0m" in caplog.text
