"""The adapter contract as a reusable pytest suite.

Point it at your adapter by subclassing :class:`AdapterSuite` in a test module
and providing an ``adapter`` fixture::

    import pytest
    from webauth.testing import AdapterSuite

    pytestmark = pytest.mark.django_db  # if your adapter uses Django's database

    class TestMyAdapter(AdapterSuite):
        @pytest.fixture
        def adapter(self):
            return MyAdapter()

:class:`AdapterSuite` is the whole contract: Auth.js's 19 methods
(:class:`AdapterCoreSuite`) and webauth's extensions
(:class:`~webauth.testing.extensions.AdapterExtensionsSuite`). An adapter that
implements only Auth.js's methods subclasses :class:`AdapterCoreSuite` instead.
Every method is exercised through webauth's own calling convention (sync or
``async def`` both work). Set ``stores_image`` or ``stores_email_verified`` to
``False`` on the subclass when the adapter's user storage has no place for those
fields (as with Django's ``auth.User``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

import pytest

from ..errors import EmailInUse
from ..types import (
    AdapterAccount,
    AdapterSession,
    AdapterUser,
    VerificationToken,
    as_account,
    as_authenticator,
    as_session,
    as_session_and_user,
    as_user,
    as_verification_token,
)
from .extensions import AdapterExtensionsSuite
from .helpers import AdapterHelpers, now

__all__ = ["AdapterCoreSuite", "AdapterSuite"]


def _close(a: datetime, b: datetime) -> bool:
    return abs((a - b).total_seconds()) < 1


class AdapterCoreSuite(AdapterHelpers):
    """Auth.js's 19 adapter methods (spec 4.4) as tests. Subclass and add an ``adapter`` fixture."""

    stores_image: bool = True
    stores_email_verified: bool = True

    # -- users ------------------------------------------------------------------
    def test_create_user_returns_the_stored_user(self, adapter: object) -> None:
        verified = now()
        user = self.new_user(
            adapter,
            email="ada@example.com",
            name="Ada Lovelace",
            image="https://example.com/ada.png",
            email_verified=verified,
        )
        assert user.email == "ada@example.com"
        assert user.name == "Ada Lovelace"
        if self.stores_image:
            assert user.image == "https://example.com/ada.png"
        if self.stores_email_verified:
            assert user.email_verified is not None and _close(user.email_verified, verified)

    def test_get_user(self, adapter: object) -> None:
        user = self.new_user(adapter, name="Grace")
        found = as_user(self.run(adapter, "get_user", user.id))
        assert found is not None and found.id == user.id and found.email == user.email

    def test_get_user_unknown_is_none(self, adapter: object) -> None:
        assert self.run(adapter, "get_user", "999999999") is None

    def test_get_user_by_email(self, adapter: object) -> None:
        user = self.new_user(adapter)
        found = as_user(self.run(adapter, "get_user_by_email", user.email))
        assert found is not None and found.id == user.id

    def test_get_user_by_email_unknown_is_none(self, adapter: object) -> None:
        assert self.run(adapter, "get_user_by_email", "nobody@example.com") is None

    def test_get_user_by_email_compares_exactly(self, adapter: object) -> None:
        """Look-alike addresses are other people: no case- or accent-insensitive match.

        webauth passes canonical addresses (:mod:`webauth.identity`); on MySQL's
        and MariaDB's usual collations ``jöhn`` = ``john`` in SQL, which would
        give one person's account to another.
        """
        john = self.new_user(adapter, email="john@example.com")
        accented = self.new_user(adapter, email="jöhn@example.com")
        dotless = self.new_user(adapter, email="al\u0131ce@example.com")
        for user in (john, accented, dotless):
            found = as_user(self.run(adapter, "get_user_by_email", user.email))
            assert found is not None and found.id == user.id
        for other in ("jóhn@example.com", "alice@example.com", "john@exämple.com"):
            assert self.run(adapter, "get_user_by_email", other) is None

    def test_create_user_refuses_an_address_another_user_has(self, adapter: object) -> None:
        """webauth's stricter rule: ``EmailInUse`` rather than a second user with the address."""
        first = self.new_user(adapter, email="taken@example.com")
        with pytest.raises(EmailInUse):
            self.run(adapter, "create_user", AdapterUser(id="", email="taken@example.com"))
        found = as_user(self.run(adapter, "get_user_by_email", "taken@example.com"))
        assert found is not None and found.id == first.id

    def test_update_user(self, adapter: object) -> None:
        user = self.new_user(adapter, name="Old Name")
        verified = now()
        updated = as_user(
            self.run(
                adapter,
                "update_user",
                {"id": user.id, "name": "New Name", "email_verified": verified},
            )
        )
        assert updated is not None and updated.name == "New Name"
        again = as_user(self.run(adapter, "get_user", user.id))
        assert again is not None and again.name == "New Name" and again.email == user.email
        if self.stores_email_verified:
            assert again.email_verified is not None and _close(again.email_verified, verified)

    def test_delete_user_removes_its_sessions_and_accounts(self, adapter: object) -> None:
        user = self.new_user(adapter)
        session = self.new_session(adapter, user)
        self.run(adapter, "link_account", self._account(user))
        self.run(adapter, "delete_user", user.id)
        assert self.run(adapter, "get_user", user.id) is None
        assert self.run(adapter, "get_session_and_user", session.session_token) is None
        assert self.run(adapter, "get_user_by_account", "example", f"acct-{user.id}") is None

    # -- accounts ---------------------------------------------------------------
    def _account(self, user: AdapterUser) -> AdapterAccount:
        return AdapterAccount(
            user_id=user.id,
            type="oauth",
            provider="example",
            provider_account_id=f"acct-{user.id}",
            access_token="at",
            refresh_token="rt",
            scope="openid email",
            token_type="bearer",
            expires_at=2_000_000_000,
        )

    def test_link_account_and_get_user_by_account(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.run(adapter, "link_account", self._account(user))
        found = as_user(self.run(adapter, "get_user_by_account", "example", f"acct-{user.id}"))
        assert found is not None and found.id == user.id

    def test_get_account(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.run(adapter, "link_account", self._account(user))
        account = as_account(self.run(adapter, "get_account", f"acct-{user.id}", "example"))
        assert account is not None
        assert account.user_id == user.id and account.type == "oauth"
        assert account.access_token == "at" and account.refresh_token == "rt"
        assert account.expires_at == 2_000_000_000 and account.token_type == "bearer"

    def test_get_account_unknown_is_none(self, adapter: object) -> None:
        assert self.run(adapter, "get_account", "nope", "example") is None

    def test_get_user_by_account_unknown_is_none(self, adapter: object) -> None:
        assert self.run(adapter, "get_user_by_account", "example", "nope") is None

    def test_unlink_account(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.run(adapter, "link_account", self._account(user))
        self.run(adapter, "unlink_account", "example", f"acct-{user.id}")
        assert self.run(adapter, "get_account", f"acct-{user.id}", "example") is None
        assert self.run(adapter, "get_user_by_account", "example", f"acct-{user.id}") is None

    # -- sessions ---------------------------------------------------------------
    def test_create_and_get_session_and_user(self, adapter: object) -> None:
        user = self.new_user(adapter)
        session = self.new_session(adapter, user)
        result = self.run(adapter, "get_session_and_user", session.session_token)
        assert result is not None
        got_session, got_user = _pair(result)
        assert got_session.session_token == session.session_token
        assert got_session.user_id == user.id and _close(got_session.expires, session.expires)
        assert got_user.id == user.id and got_user.email == user.email

    def test_get_session_and_user_unknown_is_none(self, adapter: object) -> None:
        assert self.run(adapter, "get_session_and_user", "no-such-token") is None

    def test_update_session_expiry(self, adapter: object) -> None:
        user = self.new_user(adapter)
        session = self.new_session(adapter, user)
        later = now() + timedelta(days=30)
        self.run(
            adapter, "update_session", {"session_token": session.session_token, "expires": later}
        )
        got_session, _ = _pair(self.run(adapter, "get_session_and_user", session.session_token))
        assert _close(got_session.expires, later)

    def test_delete_session(self, adapter: object) -> None:
        user = self.new_user(adapter)
        session = self.new_session(adapter, user)
        deleted = as_session(self.run(adapter, "delete_session", session.session_token))
        if deleted is not None:  # returning the deleted session is preferred, not required
            assert deleted.session_token == session.session_token
        assert self.run(adapter, "get_session_and_user", session.session_token) is None

    # -- verification tokens ------------------------------------------------------
    def test_verification_token_is_single_use(self, adapter: object) -> None:
        expires = now() + timedelta(hours=1)
        record = VerificationToken(identifier="v@example.com", token="hashed-1", expires=expires)
        self.run(adapter, "create_verification_token", record)
        used = as_verification_token(
            self.run(adapter, "use_verification_token", "v@example.com", "hashed-1")
        )
        assert used is not None and used.identifier == "v@example.com"
        assert used.token == "hashed-1" and _close(used.expires, expires)
        assert self.run(adapter, "use_verification_token", "v@example.com", "hashed-1") is None

    def test_verification_token_needs_identifier_and_token(self, adapter: object) -> None:
        record = VerificationToken(identifier="w@example.com", token="hashed-2", expires=now())
        self.run(adapter, "create_verification_token", record)
        assert self.run(adapter, "use_verification_token", "x@example.com", "hashed-2") is None
        assert self.run(adapter, "use_verification_token", "w@example.com", "hashed-3") is None
        assert self.run(adapter, "use_verification_token", "w@example.com", "hashed-2")

    # -- authenticators -----------------------------------------------------------
    def test_create_and_get_authenticator(self, adapter: object) -> None:
        user = self.new_user(adapter)
        created = self.new_authenticator(adapter, user)
        found = as_authenticator(self.run(adapter, "get_authenticator", created.credential_id))
        assert found is not None
        assert found.user_id == user.id and found.counter == 0
        assert found.credential_public_key == "pQECAyYgASFYIA"
        assert found.credential_device_type == "singleDevice"
        assert found.transports == "internal,hybrid" and found.credential_backed_up is False

    def test_get_authenticator_unknown_is_none(self, adapter: object) -> None:
        assert self.run(adapter, "get_authenticator", "no-such-credential") is None

    def test_create_authenticator_duplicate_raises(self, adapter: object) -> None:
        user = self.new_user(adapter)
        created = self.new_authenticator(adapter, user)
        with pytest.raises(Exception):  # noqa: B017 - the contract only says "throws"
            self.run(adapter, "create_authenticator", created)

    def test_list_authenticators_by_user_id(self, adapter: object) -> None:
        user = self.new_user(adapter)
        first = self.new_authenticator(adapter, user)
        second = self.new_authenticator(adapter, user)
        listed = [
            as_authenticator(a)
            for a in self.run(adapter, "list_authenticators_by_user_id", user.id)
        ]
        assert {a.credential_id for a in listed if a} == {
            first.credential_id,
            second.credential_id,
        }

    def test_list_authenticators_unknown_user_is_empty(self, adapter: object) -> None:
        assert list(self.run(adapter, "list_authenticators_by_user_id", "999999999")) == []

    def test_update_authenticator_counter(self, adapter: object) -> None:
        user = self.new_user(adapter)
        created = self.new_authenticator(adapter, user)
        updated = as_authenticator(
            self.run(adapter, "update_authenticator_counter", created.credential_id, 7)
        )
        assert updated is not None and updated.counter == 7
        found = as_authenticator(self.run(adapter, "get_authenticator", created.credential_id))
        assert found is not None and found.counter == 7

    def test_update_authenticator_counter_unknown_raises(self, adapter: object) -> None:
        with pytest.raises(Exception):  # noqa: B017 - the contract only says "throws"
            self.run(adapter, "update_authenticator_counter", "no-such-credential", 1)


def _pair(
    result: Mapping[str, object] | Sequence[object] | None,
) -> tuple[AdapterSession, AdapterUser]:
    pair = as_session_and_user(result)
    assert pair is not None, "get_session_and_user returned nothing"
    return pair


class AdapterSuite(AdapterCoreSuite, AdapterExtensionsSuite):
    """The whole adapter contract: Auth.js's methods and webauth's extensions."""
