"""The adapter contract (spec 4.4) and how webauth calls an adapter.

An adapter is any object with some of the 19 methods of :class:`Adapter`. Every
method is optional and may be a plain function or ``async def``. A flow that
needs a method the adapter lacks fails with
:class:`~webauth.errors.MissingAdapterMethods` naming the methods; an exception
raised inside a method is logged and re-raised as
:class:`~webauth.errors.AdapterError` (shown to the user as ``error=Configuration``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from asgiref.sync import sync_to_async
from django.core.exceptions import SynchronousOnlyOperation

from ..errors import AdapterError, AuthError, MissingAdapterMethods
from ..utils import call

if TYPE_CHECKING:
    from ..logger import AuthLogger
    from ..types import (
        AdapterAccount,
        AdapterAuthenticator,
        AdapterSession,
        AdapterUser,
        VerificationToken,
    )

__all__ = ["ADAPTER_METHODS", "FLOW_METHODS", "Adapter", "AdapterCaller", "missing_methods"]

ADAPTER_METHODS: tuple[str, ...] = (
    "create_user",
    "get_user",
    "get_user_by_email",
    "get_user_by_account",
    "update_user",
    "delete_user",
    "link_account",
    "unlink_account",
    "get_account",
    "create_session",
    "get_session_and_user",
    "update_session",
    "delete_session",
    "create_verification_token",
    "use_verification_token",
    "create_authenticator",
    "get_authenticator",
    "list_authenticators_by_user_id",
    "update_authenticator_counter",
)

#: The methods each flow calls, so a system check can name what is missing before
#: a user hits it.
FLOW_METHODS: dict[str, tuple[str, ...]] = {
    "database_session": (
        "create_session",
        "get_session_and_user",
        "update_session",
        "delete_session",
    ),
    "jwt_with_adapter": ("get_user",),
    "oauth": ("get_user_by_account", "get_user_by_email", "create_user", "link_account"),
}


class Adapter(Protocol):
    """Every method an adapter may implement (all optional; sync or ``async def``).

    Records may be the dataclasses of :mod:`webauth.types` or mappings using
    either Python or Auth.js field names.
    """

    def create_user(self, user: AdapterUser) -> AdapterUser:
        """Store a new user and return it with its real ``id``."""

    def get_user(self, id: str) -> AdapterUser | None:
        """The user with this id, or ``None``."""

    def get_user_by_email(self, email: str) -> AdapterUser | None:
        """The user with this email address, or ``None``."""

    def get_user_by_account(self, provider: str, provider_account_id: str) -> AdapterUser | None:
        """The user linked to this provider account, or ``None``."""

    def update_user(self, user: dict[str, Any]) -> AdapterUser:
        """Apply a partial update (``id`` required) and return the user."""

    def delete_user(self, user_id: str) -> AdapterUser | None:
        """Delete the user with its accounts, sessions and authenticators."""

    def link_account(self, account: AdapterAccount) -> AdapterAccount | None:
        """Store a provider account for a user."""

    def unlink_account(self, provider: str, provider_account_id: str) -> AdapterAccount | None:
        """Remove a provider account."""

    def get_account(self, provider_account_id: str, provider: str) -> AdapterAccount | None:
        """The account, or ``None`` when it does not exist."""

    def create_session(self, session: AdapterSession) -> AdapterSession:
        """Store a new database session."""

    def get_session_and_user(self, session_token: str) -> tuple[AdapterSession, AdapterUser] | None:
        """The session and its user in one lookup, or ``None``."""

    def update_session(self, session: dict[str, Any]) -> AdapterSession | None:
        """Apply a partial update (``session_token`` required)."""

    def delete_session(self, session_token: str) -> AdapterSession | None:
        """Delete the session; return it when it existed."""

    def create_verification_token(self, token: VerificationToken) -> VerificationToken | None:
        """Store a verification token."""

    def use_verification_token(self, identifier: str, token: str) -> VerificationToken | None:
        """Return the token and delete it, atomically: only one caller ever gets it."""

    def create_authenticator(self, authenticator: AdapterAuthenticator) -> AdapterAuthenticator:
        """Store a WebAuthn credential; raise on failure."""

    def get_authenticator(self, credential_id: str) -> AdapterAuthenticator | None:
        """The credential, or ``None`` when it does not exist."""

    def list_authenticators_by_user_id(self, user_id: str) -> Sequence[AdapterAuthenticator]:
        """The user's credentials (empty when the user is unknown); raise on failure."""

    def update_authenticator_counter(
        self, credential_id: str, new_counter: int
    ) -> AdapterAuthenticator:
        """Set the signature counter; raise on failure (for example an unknown id)."""


def missing_methods(adapter: Any, methods: Iterable[str]) -> list[str]:
    """The names in *methods* that *adapter* does not implement."""
    return [m for m in methods if not callable(getattr(adapter, m, None))]


class AdapterCaller:
    """Calls adapter methods the way every flow needs them called.

    Checks the method exists, logs the call at debug level (the method name only:
    arguments carry tokens), runs sync or async methods from sync or async code,
    and turns a failure into :class:`AdapterError` after logging it.
    """

    __slots__ = ("adapter", "logger")

    def __init__(self, adapter: Any, logger: AuthLogger) -> None:
        self.adapter = adapter
        self.logger = logger

    def require(self, *methods: str) -> None:
        """Raise :class:`MissingAdapterMethods` unless every method exists."""
        if self.adapter is None:
            raise MissingAdapterMethods(
                "An adapter is required for this operation; set WEBAUTH['adapter']"
            )
        missing = missing_methods(self.adapter, methods)
        if missing:
            raise MissingAdapterMethods(
                f"Required adapter methods were missing: {', '.join(missing)}"
            )

    def _method(self, name: str) -> Any:
        self.require(name)
        self.logger.debug(f"adapter_{name}")
        return getattr(self.adapter, name)

    def _failed(self, name: str, exc: Exception) -> AdapterError:
        error = AdapterError(f"adapter_{name} failed", cause={"err": exc})
        self.logger.error(error)
        return error

    def __call__(self, name: str, *args: Any) -> Any:
        """Call ``adapter.<name>(*args)`` from sync code."""
        fn = self._method(name)
        try:
            return call(fn, *args)
        except (AuthError, SynchronousOnlyOperation):
            raise
        except Exception as exc:
            raise self._failed(name, exc) from exc

    async def acall(self, name: str, *args: Any) -> Any:
        """Call ``adapter.<name>(*args)`` from async code."""
        fn = self._method(name)
        try:
            if inspect.iscoroutinefunction(fn):
                return await fn(*args)
            result = await sync_to_async(fn)(*args)
            if inspect.isawaitable(result):
                result = await result
            return result
        except AuthError:
            raise
        except Exception as exc:
            raise self._failed(name, exc) from exc
