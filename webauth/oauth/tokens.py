"""Provider access tokens for the project's own API calls, refreshed when expired.

``get_access_token(user, "github")`` returns a usable access token from the
user's linked account, using the refresh token when the stored one has expired
and saving the new tokens. Concurrent callers refresh once: a per-account lock
in the process and a row lock in the database (``SELECT ... FOR UPDATE``) make
the others wait and then read the fresh token. Works with the Django ORM
adapter's tables.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from asgiref.sync import sync_to_async
from authlib.common.errors import AuthlibBaseError
from django.db import connection, transaction

from ..conf import get_config
from ..errors import AuthError
from ..models import Account
from ..providers.oauth import OAuth2
from .client import oauth_session
from .discovery import endpoints

__all__ = ["TokenRefreshError", "aget_access_token", "get_access_token"]

#: A token that expires within this many seconds is refreshed first.
LEEWAY = 60

_locks: dict[tuple[str, str], threading.Lock] = {}
_locks_guard = threading.Lock()


class TokenRefreshError(AuthError):
    """The access token expired and could not be refreshed (no refresh token, or refused)."""


def _lock(user_id: str, provider_id: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((user_id, provider_id), threading.Lock())


def _fresh(account: Account) -> bool:
    return account.expires_at is None or account.expires_at - LEEWAY > time.time()


def _user_id(user: Any) -> str:
    pk = getattr(user, "pk", None)
    if pk is None:
        pk = getattr(user, "id", None)
    if pk is None:
        raise ValueError("get_access_token needs a user (model instance or record with an id)")
    return str(pk)


def get_access_token(user: Any, provider_id: str) -> str | None:
    """A valid access token of *user*'s *provider_id* account, or ``None`` without one.

    Raises :class:`TokenRefreshError` when the token expired and refreshing failed.
    """
    user_id = _user_id(user)
    account = Account.objects.filter(user_id=user_id, provider=provider_id).first()
    if account is None:
        return None
    if _fresh(account):
        return account.access_token
    with _lock(user_id, provider_id):
        if not connection.features.has_select_for_update:
            # SQLite: no row locks, and a transaction held across the HTTP call
            # would block every writer; the process lock serialises callers and
            # the conditional save below detects another process's refresh.
            account = Account.objects.get(pk=account.pk)
            if _fresh(account):
                return account.access_token
            return _refresh(account, provider_id)
        with transaction.atomic():
            account = Account.objects.select_for_update().get(pk=account.pk)
            if _fresh(account):  # someone refreshed while we waited
                return account.access_token
            return _refresh(account, provider_id)


def _refresh(account: Account, provider_id: str) -> str | None:
    from .flow import normalize_tokens

    config = get_config()
    provider = config.get_provider(provider_id)
    if not isinstance(provider, OAuth2):
        raise TokenRefreshError(f"{provider_id!r} is not a configured OAuth provider")
    if not account.refresh_token:
        raise TokenRefreshError(
            f"the {provider_id!r} access token expired and there is no refresh token"
        )
    ep = endpoints(config, provider)
    client = oauth_session(config, provider, token_endpoint=ep["token_endpoint"])
    try:
        token = client.refresh_token(ep["token_endpoint"], refresh_token=account.refresh_token)
        tokens = normalize_tokens(provider.conform_token(dict(token)))
    except (AuthlibBaseError, OSError, ValueError, AuthError) as exc:
        error = TokenRefreshError(
            f"refreshing the {provider_id!r} token failed", cause={"err": exc}
        )
        config.logger.error(error)
        raise error from exc
    changes = {
        "access_token": tokens["access_token"],
        "refresh_token": tokens.get("refresh_token") or account.refresh_token,
        "expires_at": tokens.get("expires_at"),
        "token_type": tokens.get("token_type") or account.token_type,
        "scope": tokens.get("scope") or account.scope,
        "id_token": tokens.get("id_token") or account.id_token,
    }
    # Only if nobody refreshed meanwhile (always true under the row lock).
    saved = Account.objects.filter(pk=account.pk, refresh_token=account.refresh_token).update(
        **changes
    )
    if not saved:
        return Account.objects.get(pk=account.pk).access_token
    return str(changes["access_token"])


async def aget_access_token(user: Any, provider_id: str) -> str | None:
    """:func:`get_access_token` for async code."""
    return await sync_to_async(get_access_token)(user, provider_id)
