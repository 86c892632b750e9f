"""get_access_token: refreshing provider tokens against the real test provider."""

import threading
import time

import pytest
from asgiref.sync import async_to_sync
from django.core.cache import cache
from django.db import connections

from webauth import aget_access_token, get_access_token
from webauth.models import Account
from webauth.oauth.tokens import TokenRefreshError
from webauth.providers.oauth import OIDC

from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, sign_in, start_idp

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
    from .support.memory_adapter import MemoryAdapter

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
