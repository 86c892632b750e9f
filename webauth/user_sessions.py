"""Session management for the database strategy: list, revoke, sign out everywhere.

For a "your devices" page::

    from webauth.user_sessions import list_sessions, revoke_session, sign_out_everywhere

    sessions = list_sessions(request.user, request)  # newest first; .current marks this one

These go through the adapter's session-management methods
(``list_sessions_by_user_id``, ``delete_session_by_id``,
``delete_sessions_by_user_id``; ``DjangoAdapter`` has them all, and without a
configured adapter its tables are used). JWT sessions live only in the browser's
cookie and cannot be listed or revoked server-side; see ``docs/sessions.md``.
Each function has an ``a``-prefixed twin for async views.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest

from .conf import get_config
from .sessions import check_cache
from .state import get_state
from .tokens.ended import end_user_sessions
from .types import UserSession
from .utils import user_id

__all__ = [
    "UserSession",
    "alist_sessions",
    "arevoke_session",
    "asign_out_everywhere",
    "list_sessions",
    "revoke_session",
    "sign_out_everywhere",
]


def _current_token(request: HttpRequest | None) -> str | None:
    return get_state(request).session_token if request is not None else None


def list_sessions(user: Any, request: HttpRequest | None = None) -> list[UserSession]:
    """The user's unexpired sessions, newest first; ``current`` marks *request*'s own."""
    storage = get_config().storage
    return storage.list_sessions_by_user_id(user_id(user), _current_token(request))


def revoke_session(user: Any, session_id: object) -> bool:
    """Delete one of the user's sessions; ``False`` if it was not theirs or is gone."""
    return get_config().storage.delete_session_by_id(user_id(user), session_id)


def sign_out_everywhere(user: Any, request: HttpRequest | None = None) -> int:
    """Delete all the user's sessions, keeping *request*'s own if given; returns the count.

    The user's trusted browsers (``mfa.trust_days``) are forgotten too: each
    asks for the second factor again.
    """
    config = get_config()
    storage = config.storage
    uid = user_id(user)
    if storage.has("delete_trusted_browsers"):
        storage.delete_trusted_browsers(uid)
    # The access tokens of every other session (under jwt too, whose sessions
    # live on: no token is minted for them again). The kept one is the request's
    # only while it is this user's.
    keep = get_state(request) if request is not None else None
    if keep is not None and keep.session_result.user_id != uid:
        keep = None
    end_user_sessions(config, uid, "signout_everywhere", keep=keep)
    # What the cached session check remembers of the user is no longer trusted.
    check_cache.forget_user(config, uid)
    return storage.delete_sessions_by_user_id(uid, _current_token(request))


async def alist_sessions(user: Any, request: HttpRequest | None = None) -> list[UserSession]:
    """Async :func:`list_sessions`."""
    return await sync_to_async(list_sessions)(user, request)


async def arevoke_session(user: Any, session_id: object) -> bool:
    """Async :func:`revoke_session`."""
    return await sync_to_async(revoke_session)(user, session_id)


async def asign_out_everywhere(user: Any, request: HttpRequest | None = None) -> int:
    """Async :func:`sign_out_everywhere`."""
    return await sync_to_async(sign_out_everywhere)(user, request)
