"""A user's linked provider accounts: list them, unlink one (never the last way in).

Works with the Django ORM adapter's tables. A user's ways to sign in are their
linked accounts, a usable password (for the credentials provider) and their
passkeys; unlinking is refused when it would leave none.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction

from .models import Account, Authenticator

__all__ = ["LastSignInMethod", "LinkedAccount", "linked_accounts", "sign_in_methods", "unlink"]


class LastSignInMethod(Exception):
    """Unlinking would leave the user with no way to sign in."""


@dataclass(frozen=True, slots=True)
class LinkedAccount:
    """One provider account of a user, without its tokens."""

    id: int
    provider: str
    provider_account_id: str
    type: str
    created_at: datetime


def linked_accounts(user: Any) -> list[LinkedAccount]:
    """The user's provider accounts, oldest first."""
    return [
        LinkedAccount(
            id=a.pk,
            provider=a.provider,
            provider_account_id=a.provider_account_id,
            type=a.type,
            created_at=a.created_at,
        )
        for a in Account.objects.filter(user=user).order_by("created_at", "pk")
    ]


def sign_in_methods(user: Any) -> int:
    """How many ways the user has to sign in (accounts, a usable password, passkeys)."""
    has_password = callable(getattr(user, "has_usable_password", None)) and (
        user.has_usable_password()
    )
    return (
        Account.objects.filter(user=user).count()
        + Authenticator.objects.filter(user=user).count()
        + int(bool(has_password))
    )


def unlink(user: Any, provider: str, provider_account_id: str | None = None) -> bool:
    """Remove the user's account at *provider*; ``False`` if there is none.

    Raises :class:`LastSignInMethod` when it is the user's only way to sign in.
    """
    with transaction.atomic():
        rows = Account.objects.select_for_update().filter(user=user, provider=provider)
        if provider_account_id is not None:
            rows = rows.filter(provider_account_id=provider_account_id)
        account = rows.first()
        if account is None:
            return False
        if sign_in_methods(user) <= 1:
            raise LastSignInMethod(
                f"{provider} is the only way this user can sign in; add a password, "
                "a passkey or another account first"
            )
        account.delete()
    return True
