"""Provider access tokens for the project's own API calls, refreshed when expired.

``get_access_token(user, "github")`` returns a usable access token from the
user's linked account, using the refresh token when the stored one has expired
and saving the new tokens. Concurrent callers, in any thread or process,
refresh once: the adapter's ``refresh_account_tokens`` runs the refresh with
the account locked (in ``DjangoAdapter`` a row lock, or on SQLite an atomic
claim on the row), and a caller that waited finds the account fresh and returns
the token the first one stored, without asking the provider again. Providers
that rotate refresh tokens refuse a reused one (and some then revoke every token
of the grant), so a second refresh with the same token must never be sent. It
goes through the adapter (``get_account_by_user_id``,
``refresh_account_tokens``); without a configured one, ``DjangoAdapter``'s
tables are used.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from authlib.common.errors import AuthlibBaseError

from ..conf import Config, get_config
from ..errors import AuthError, CallbackRouteError, TokenRefreshError
from ..providers.oauth import OAuth2
from ..types import AdapterAccount
from ..utils import user_id
from .client import oauth_session
from .discovery import endpoints

__all__ = [
    "LEEWAY",
    "TokenRefreshError",
    "aget_access_token",
    "get_access_token",
    "normalize_tokens",
]

#: A token that expires within this many seconds is refreshed first.
LEEWAY = 60


def _fresh(account: AdapterAccount) -> bool:
    return account.expires_at is None or account.expires_at - LEEWAY > time.time()


def normalize_tokens(token: Mapping[str, object]) -> dict[str, object]:
    """A token response as webauth stores it: lowercase ``token_type``, ``expires_at`` added."""
    tokens: dict[str, Any] = dict(token)
    if not isinstance(tokens.get("access_token"), str) or not tokens["access_token"]:
        raise CallbackRouteError("The token response has no access_token")
    if not isinstance(tokens.get("token_type"), str):
        raise CallbackRouteError("The token response has no token_type")
    tokens["token_type"] = tokens["token_type"].lower()
    expires_in = tokens.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit():
        expires_in = tokens["expires_in"] = int(expires_in)
    if isinstance(expires_in, int | float) and expires_in:
        tokens["expires_at"] = int(time.time()) + int(expires_in)
    return tokens


def get_access_token(user: Any, provider_id: str) -> str | None:
    """A valid access token of *user*'s *provider_id* account, or ``None`` without one.

    Raises :class:`~webauth.errors.TokenRefreshError` when the token expired and
    refreshing failed.
    """
    config = get_config()
    storage = config.storage
    account = storage.get_account_by_user_id(user_id(user), provider_id)
    if account is None:
        return None
    if _fresh(account):
        return account.access_token

    def refresh(locked: AdapterAccount) -> dict[str, object] | None:
        if _fresh(locked):  # refreshed by someone else while this caller waited
            return None
        return _refreshed_tokens(config, provider_id, locked)

    stored = storage.refresh_account_tokens(account.provider, account.provider_account_id, refresh)
    return stored.access_token if stored is not None else None


def _refreshed_tokens(
    config: Config, provider_id: str, account: AdapterAccount
) -> dict[str, object]:
    """Ask the provider for new tokens; the fields to store."""
    configured = config.get_provider(provider_id)
    # OAuth2 and OIDC providers (the oauth and oidc kinds); this layer is below
    # the flows' table, and what follows needs OAuth2's API anyway.
    if not isinstance(configured, OAuth2):
        raise TokenRefreshError(f"{provider_id!r} is not a configured OAuth provider")
    provider = configured
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
    return {
        "access_token": tokens["access_token"],
        "refresh_token": tokens.get("refresh_token") or account.refresh_token,
        "expires_at": tokens.get("expires_at"),
        "token_type": tokens.get("token_type") or account.token_type,
        "scope": tokens.get("scope") or account.scope,
        "id_token": tokens.get("id_token") or account.id_token,
    }


async def aget_access_token(user: Any, provider_id: str) -> str | None:
    """:func:`get_access_token` for async code."""
    return await sync_to_async(get_access_token)(user, provider_id)
