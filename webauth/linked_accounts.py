"""A user's linked provider accounts: list them, unlink one (never the last way in).

A user's ways to sign in are their linked accounts, a usable password (for the
credentials provider) and their passkeys; unlinking is refused when it would
leave none. These go through the adapter (``list_accounts_by_user_id``,
``count_sign_in_methods``, ``unlink_user_account``; ``DjangoAdapter`` has them
all, and without a configured adapter its tables are used). Each function has
an ``a``-prefixed twin for async views.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from .conf import get_config
from .errors import LastSignInMethod
from .types import LinkedAccount
from .utils import user_id

__all__ = [
    "LastSignInMethod",
    "LinkedAccount",
    "alinked_accounts",
    "asign_in_methods",
    "aunlink",
    "linked_accounts",
    "sign_in_methods",
    "unlink",
]


def linked_accounts(user: Any) -> list[LinkedAccount]:
    """The user's provider accounts, oldest first."""
    return get_config().storage.list_accounts_by_user_id(user_id(user))


def sign_in_methods(user: Any) -> int:
    """How many ways the user has to sign in (accounts, a usable password, passkeys)."""
    return get_config().storage.count_sign_in_methods(user_id(user))


def unlink(user: Any, provider: str, provider_account_id: str | None = None) -> bool:
    """Remove the user's account at *provider*; ``False`` if there is none.

    Raises :class:`LastSignInMethod` when it is the user's only way to sign in.
    """
    storage = get_config().storage
    removed = storage.unlink_user_account(user_id(user), provider, provider_account_id)
    return removed is not None


async def alinked_accounts(user: Any) -> list[LinkedAccount]:
    """Async :func:`linked_accounts`."""
    return await sync_to_async(linked_accounts)(user)


async def asign_in_methods(user: Any) -> int:
    """Async :func:`sign_in_methods`."""
    return await sync_to_async(sign_in_methods)(user)


async def aunlink(user: Any, provider: str, provider_account_id: str | None = None) -> bool:
    """Async :func:`unlink`."""
    return await sync_to_async(unlink)(user, provider, provider_account_id)
