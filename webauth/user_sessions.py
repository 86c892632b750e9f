"""Session management for the database strategy: list, revoke, sign out everywhere.

These functions work on :class:`webauth.models.Session` (the Django ORM
adapter's table). JWT sessions live only in the browser's cookie and cannot be
listed or revoked server-side; see ``docs/sessions.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from .models import Session, token_hash

__all__ = ["UserSession", "list_sessions", "revoke_session", "sign_out_everywhere"]


@dataclass(frozen=True, slots=True)
class UserSession:
    """One active database session of a user, as shown in a "your devices" page."""

    id: int
    created_at: datetime
    last_extended_at: datetime
    expires: datetime
    user_agent: str
    ip_address: str | None
    current: bool


def _current_hash(request: HttpRequest | None) -> str | None:
    if request is None:
        return None
    from .middleware import get_request_auth

    raw = get_request_auth(request).raw_token
    return token_hash(raw) if raw else None


def list_sessions(user: Any, request: HttpRequest | None = None) -> list[UserSession]:
    """The user's unexpired sessions, newest first; ``current`` marks *request*'s own."""
    current = _current_hash(request)
    rows = Session.objects.filter(user=user, expires__gt=timezone.now()).order_by("-created_at")
    return [
        UserSession(
            id=row.pk,
            created_at=row.created_at,
            last_extended_at=row.updated_at,
            expires=row.expires,
            user_agent=row.user_agent,
            ip_address=row.ip_address,
            current=row.token_hash == current,
        )
        for row in rows
    ]


def revoke_session(user: Any, session_id: int) -> bool:
    """Delete one of the user's sessions; ``False`` if it was not theirs or is gone."""
    deleted, _ = Session.objects.filter(user=user, pk=session_id).delete()
    return bool(deleted)


def sign_out_everywhere(user: Any, request: HttpRequest | None = None) -> int:
    """Delete all the user's sessions, keeping *request*'s own if given; returns the count."""
    rows = Session.objects.filter(user=user)
    current = _current_hash(request)
    if current is not None:
        rows = rows.exclude(token_hash=current)
    deleted, _ = rows.delete()
    return deleted
