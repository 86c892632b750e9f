"""What the contract suites share: calling an adapter as webauth does, and making records."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from ..types import (
    AdapterAuthenticator,
    AdapterSession,
    AdapterUser,
    as_authenticator,
    as_session,
    as_user,
)
from ..utils import call

__all__ = ["AdapterHelpers", "now"]


def now() -> datetime:
    """The current time in UTC, to the second (what any store keeps)."""
    return datetime.now(UTC).replace(microsecond=0)


class AdapterHelpers:
    """Helpers for tests of an adapter: available to the tests a project adds too."""

    def run(self, adapter: object, method: str, *args: object, **kwargs: object) -> Any:
        """Call an adapter method as webauth does (sync or async)."""
        fn = getattr(adapter, method, None)
        assert callable(fn), f"the adapter has no {method}()"
        return call(fn, *args, **kwargs)

    def new_user(self, adapter: object, **fields: Any) -> AdapterUser:
        """Create a user with a unique email."""
        email = fields.pop("email", None) or f"u{secrets.token_hex(6)}@example.com"
        record = AdapterUser(id="", email=email, **fields)
        user = as_user(self.run(adapter, "create_user", record))
        assert user is not None and user.id, "create_user must return the user with its id"
        return user

    def new_session(self, adapter: object, user: AdapterUser, **fields: Any) -> AdapterSession:
        """Create a session for *user* expiring in a day (``expires``, ``user_agent`` to change)."""
        record = AdapterSession(
            session_token=secrets.token_urlsafe(32),
            user_id=user.id,
            expires=fields.pop("expires", now() + timedelta(days=1)),
            user_agent=fields.pop("user_agent", None),
        )
        session = as_session(self.run(adapter, "create_session", record))
        assert session is not None
        return session

    def new_authenticator(
        self, adapter: object, user: AdapterUser, **fields: Any
    ) -> AdapterAuthenticator:
        """Register a credential for *user* (any ``AdapterAuthenticator`` field to change)."""
        values: dict[str, Any] = {
            "credential_id": secrets.token_urlsafe(16),
            "provider_account_id": secrets.token_urlsafe(16),
            "credential_public_key": "pQECAyYgASFYIA",
            "counter": 0,
            "credential_backed_up": False,
            "credential_device_type": "singleDevice",
            "transports": "internal,hybrid",
            **fields,
        }
        record = AdapterAuthenticator(user_id=user.id, **values)
        result = as_authenticator(self.run(adapter, "create_authenticator", record))
        assert result is not None
        return result
