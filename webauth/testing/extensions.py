"""webauth's extensions to the adapter contract, as a reusable pytest suite.

:class:`~webauth.testing.AdapterSuite` includes it; on its own it tests only
the extensions of an adapter (``DjangoAdapter`` has them all)::

    from webauth.testing import AdapterExtensionsSuite

    class TestMyExtensions(AdapterExtensionsSuite):
        @pytest.fixture
        def adapter(self):
            return MyAdapter()

Each group of methods serves one feature, which fails with
``MissingAdapterMethods`` on an adapter without them: a new user and its first
account in one step (``create_user_and_link_account``), fresh tokens on each
sign-in (``update_account``), :func:`webauth.get_access_token`
(``get_account_by_user_id``, ``refresh_account_tokens``),
:mod:`webauth.linked_accounts` (``list_accounts_by_user_id``,
``count_sign_in_methods``, ``unlink_user_account``) and
:mod:`webauth.user_sessions` (``list_sessions_by_user_id``,
``delete_session_by_id``, ``delete_sessions_by_user_id``); and the session
route's check of a JWT's user without loading it (``get_user_session_check``).
The suite calls them as webauth does, so sync and ``async def`` methods both pass.
"""

from __future__ import annotations

import secrets
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from ..errors import LastSignInMethod
from ..types import (
    AdapterAccount,
    AdapterUser,
    UserSessionCheck,
    as_account,
    as_user,
    as_user_session_check,
)
from .helpers import AdapterHelpers, now

__all__ = ["AdapterExtensionsSuite"]


class AdapterExtensionsSuite(AdapterHelpers):
    """Contract tests for webauth's adapter extensions. Needs an ``adapter`` fixture."""

    def make_account(
        self, user: AdapterUser, provider: str = "example", **tokens: Any
    ) -> AdapterAccount:
        """An OAuth account of *user* (not stored yet)."""
        return AdapterAccount(
            user_id=user.id,
            type="oauth",
            provider=provider,
            provider_account_id=f"{provider}-{user.id}-{secrets.token_hex(3)}",
            access_token=tokens.get("access_token", "at-1"),
            refresh_token=tokens.get("refresh_token", "rt-1"),
            token_type="bearer",
            expires_at=tokens.get("expires_at", 2_000_000_000),
        )

    def link(self, adapter: Any, user: AdapterUser, provider: str = "example") -> AdapterAccount:
        """Store a new account of *user* at *provider*."""
        account = self.make_account(user, provider)
        self.run(adapter, "link_account", account)
        return account

    # -- create_user_and_link_account, update_account ---------------------------------------
    def test_create_user_and_link_account(self, adapter: Any) -> None:
        user = AdapterUser(id="", email=f"n{secrets.token_hex(6)}@example.com", name="New")
        account = AdapterAccount(
            user_id="", type="oauth", provider="example", provider_account_id="first-1"
        )
        created, linked = self.run(adapter, "create_user_and_link_account", user, account)
        created, linked = as_user(created), as_account(linked)
        assert created is not None and created.id and created.email == user.email
        assert linked is not None and linked.user_id == created.id
        found = as_user(self.run(adapter, "get_user_by_account", "example", "first-1"))
        assert found is not None and found.id == created.id

    def test_update_account_replaces_the_tokens(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        account = self.link(adapter, user)
        account.access_token, account.refresh_token = "at-2", "rt-2"
        updated = as_account(self.run(adapter, "update_account", account))
        assert updated is not None and updated.access_token == "at-2"
        stored = as_account(
            self.run(adapter, "get_account", account.provider_account_id, "example")
        )
        assert stored is not None
        assert (stored.access_token, stored.refresh_token) == ("at-2", "rt-2")

    def test_update_account_of_unknown_account_is_none(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        assert self.run(adapter, "update_account", self.make_account(user)) is None

    # -- access tokens -------------------------------------------------------------------------
    def test_get_account_by_user_id(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        account = self.link(adapter, user, "github")
        found = as_account(self.run(adapter, "get_account_by_user_id", user.id, "github"))
        assert found is not None
        assert found.provider_account_id == account.provider_account_id
        assert found.access_token == "at-1" and found.refresh_token == "rt-1"
        assert self.run(adapter, "get_account_by_user_id", user.id, "gitlab") is None

    def test_refresh_account_tokens_stores_what_refresh_returns(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        account = self.link(adapter, user)
        seen: list[AdapterAccount] = []
        later = int(time.time()) + 3600

        def refresh(current: AdapterAccount) -> dict[str, Any]:
            seen.append(as_account(current))  # type: ignore[arg-type]
            return {"access_token": "at-new", "refresh_token": "rt-new", "expires_at": later}

        result = as_account(
            self.run(
                adapter, "refresh_account_tokens", "example", account.provider_account_id, refresh
            )
        )
        assert [s.refresh_token for s in seen] == ["rt-1"]  # called once, with the stored account
        assert seen[0].expires_at == account.expires_at  # as stored, whatever locking it takes
        assert result is not None and result.access_token == "at-new"
        stored = as_account(self.run(adapter, "get_account_by_user_id", user.id, "example"))
        assert stored is not None
        assert (stored.access_token, stored.refresh_token, stored.expires_at) == (
            "at-new",
            "rt-new",
            later,
        )

    def test_refresh_account_tokens_may_store_nothing(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        account = self.link(adapter, user)
        result = as_account(
            self.run(
                adapter,
                "refresh_account_tokens",
                "example",
                account.provider_account_id,
                lambda current: None,
            )
        )
        assert result is not None and result.access_token == "at-1"
        stored = as_account(self.run(adapter, "get_account_by_user_id", user.id, "example"))
        assert stored is not None
        assert (stored.access_token, stored.refresh_token, stored.expires_at) == (
            "at-1",
            "rt-1",
            account.expires_at,
        )

    def test_refresh_account_tokens_keeps_what_refresh_leaves_out(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        account = self.link(adapter, user)
        self.run(
            adapter,
            "refresh_account_tokens",
            "example",
            account.provider_account_id,
            lambda current: {"access_token": "at-only"},
        )
        stored = as_account(self.run(adapter, "get_account_by_user_id", user.id, "example"))
        assert stored is not None
        assert (stored.access_token, stored.refresh_token, stored.expires_at) == (
            "at-only",
            "rt-1",
            account.expires_at,
        )

    def test_refresh_account_tokens_that_fails_changes_nothing(self, adapter: Any) -> None:
        # The provider refused or could not be reached: the exception reaches the
        # caller, the account is as it was, and the next caller may try again.
        user = self.new_user(adapter)
        account = self.link(adapter, user)

        def refused(current: AdapterAccount) -> dict[str, Any]:
            raise ConnectionError("provider unreachable")

        with pytest.raises(ConnectionError):
            self.run(
                adapter, "refresh_account_tokens", "example", account.provider_account_id, refused
            )
        stored = as_account(self.run(adapter, "get_account_by_user_id", user.id, "example"))
        assert stored is not None
        assert (stored.access_token, stored.refresh_token, stored.expires_at) == (
            "at-1",
            "rt-1",
            account.expires_at,
        )
        seen: list[AdapterAccount] = []
        self.run(
            adapter,
            "refresh_account_tokens",
            "example",
            account.provider_account_id,
            lambda current: seen.append(current),
        )
        assert [(s.refresh_token, s.expires_at) for s in seen] == [("rt-1", account.expires_at)]

    # Other threads need committed rows (and their own database connections).
    @pytest.mark.django_db(transaction=True)
    def test_refresh_account_tokens_callers_wait_for_each_other(self, adapter: Any) -> None:
        # While one caller's refresh runs, another caller for the same account
        # waits, then refreshes from what the first one stored: providers that
        # rotate refresh tokens refuse the old one a second time.
        user = self.new_user(adapter)
        account = self.link(adapter, user)
        inside, release = threading.Event(), threading.Event()
        seen: list[str | None] = []
        results: list[Any] = []
        later = int(time.time()) + 3600

        def slow(current: AdapterAccount) -> dict[str, Any]:
            seen.append(current.refresh_token)
            inside.set()
            release.wait(10)
            return {"access_token": "at-2", "refresh_token": "rt-2", "expires_at": later}

        def second(current: AdapterAccount) -> None:
            seen.append(current.refresh_token)

        def run(refresh: Any) -> None:
            try:
                results.append(
                    as_account(
                        self.run(
                            adapter,
                            "refresh_account_tokens",
                            "example",
                            account.provider_account_id,
                            refresh,
                        )
                    )
                )
            finally:
                connections.close_all()

        first_thread = threading.Thread(target=run, args=(slow,))
        second_thread = threading.Thread(target=run, args=(second,))
        first_thread.start()
        try:
            assert inside.wait(10)
            second_thread.start()
            time.sleep(0.3)
            assert seen == ["rt-1"], "a second refresh ran while the first was running"
        finally:
            release.set()
            first_thread.join(10)
            if second_thread.is_alive() or second_thread.ident is not None:
                second_thread.join(10)
        assert seen == ["rt-1", "rt-2"]
        assert [r.access_token for r in results] == ["at-2", "at-2"]

    def test_refresh_account_tokens_of_unknown_account_is_none(self, adapter: Any) -> None:
        calls: list[Any] = []
        assert self.run(adapter, "refresh_account_tokens", "example", "nope", calls.append) is None
        assert calls == []

    # -- linked accounts -----------------------------------------------------------------------
    def test_list_accounts_by_user_id(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        first = self.link(adapter, user, "github")
        second = self.link(adapter, user, "google")
        self.link(adapter, self.new_user(adapter), "github")  # someone else's
        listed = list(self.run(adapter, "list_accounts_by_user_id", user.id))
        assert [(a.provider, a.provider_account_id) for a in listed] == [
            ("github", first.provider_account_id),
            ("google", second.provider_account_id),
        ]
        assert all(a.type == "oauth" and a.id is not None for a in listed)
        assert not any(hasattr(a, "access_token") for a in listed)

    def test_count_sign_in_methods(self, adapter: Any) -> None:
        user = self.new_user(adapter)  # made without a password
        assert self.run(adapter, "count_sign_in_methods", user.id) == 0
        self.link(adapter, user, "github")
        self.link(adapter, user, "google")
        self.new_authenticator(adapter, user)
        assert self.run(adapter, "count_sign_in_methods", user.id) == 3

    def test_unlink_user_account_when_another_way_remains(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        github = self.link(adapter, user, "github")
        self.link(adapter, user, "google")
        removed = self.run(adapter, "unlink_user_account", user.id, "github", None)
        assert removed is not None and removed.provider_account_id == github.provider_account_id
        listed = self.run(adapter, "list_accounts_by_user_id", user.id)
        assert [a.provider for a in listed] == ["google"]

    def test_unlink_user_account_never_the_last_way_in(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        self.link(adapter, user, "github")
        with pytest.raises(LastSignInMethod):
            self.run(adapter, "unlink_user_account", user.id, "github", None)
        assert len(list(self.run(adapter, "list_accounts_by_user_id", user.id))) == 1

    def test_unlink_user_account_by_account_id_and_unknown(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        self.link(adapter, user, "github")
        second = self.link(adapter, user, "github")
        removed = self.run(
            adapter, "unlink_user_account", user.id, "github", second.provider_account_id
        )
        assert removed is not None and removed.provider_account_id == second.provider_account_id
        assert self.run(adapter, "unlink_user_account", user.id, "gitlab", None) is None
        other = self.new_user(adapter)
        assert self.run(adapter, "unlink_user_account", other.id, "github", None) is None

    # -- session management ----------------------------------------------------------------------
    def test_list_sessions_by_user_id(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        older = self.new_session(adapter, user, user_agent="Phone")
        time.sleep(0.01)  # distinct creation times
        newer = self.new_session(adapter, user, user_agent="Laptop")
        self.new_session(adapter, user, expires=now() - timedelta(minutes=1))  # expired
        self.new_session(adapter, self.new_user(adapter))  # someone else's
        listed = list(self.run(adapter, "list_sessions_by_user_id", user.id, newer.session_token))
        assert [(s.user_agent, s.current) for s in listed] == [("Laptop", True), ("Phone", False)]
        assert abs((listed[1].expires - older.expires).total_seconds()) < 1
        none_current = self.run(adapter, "list_sessions_by_user_id", user.id, None)
        assert not any(s.current for s in none_current)

    def test_delete_session_by_id(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        session = self.new_session(adapter, user)
        [listed] = self.run(adapter, "list_sessions_by_user_id", user.id, None)
        other = self.new_user(adapter)
        assert self.run(adapter, "delete_session_by_id", other.id, listed.id) is False
        assert self.run(adapter, "delete_session_by_id", user.id, listed.id) is True
        assert self.run(adapter, "get_session_and_user", session.session_token) is None
        assert self.run(adapter, "delete_session_by_id", user.id, listed.id) is False

    def test_delete_sessions_by_user_id_keeps_one(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        keep = self.new_session(adapter, user)
        gone = [self.new_session(adapter, user) for _ in range(2)]
        theirs = self.new_session(adapter, self.new_user(adapter))
        assert self.run(adapter, "delete_sessions_by_user_id", user.id, keep.session_token) == 2
        assert self.run(adapter, "get_session_and_user", keep.session_token) is not None
        for session in gone:
            assert self.run(adapter, "get_session_and_user", session.session_token) is None
        assert self.run(adapter, "get_session_and_user", theirs.session_token) is not None
        assert self.run(adapter, "delete_sessions_by_user_id", user.id, None) == 1

    # -- checking a session's user ------------------------------------------------------------
    def session_check(self, adapter: Any, user_id: str) -> UserSessionCheck | None:
        """``get_user_session_check(user_id)`` as webauth reads it."""
        return as_user_session_check(self.run(adapter, "get_user_session_check", user_id))

    def test_get_user_session_check_of_unknown_user_is_none(self, adapter: Any) -> None:
        assert self.session_check(adapter, "999999999") is None

    def test_get_user_session_check_of_deleted_user_is_none(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        assert self.run(adapter, "get_user", user.id) is not None
        self.run(adapter, "delete_user", user.id)
        assert self.session_check(adapter, user.id) is None

    def instance_behind(self, adapter: Any, user: AdapterUser) -> Any:
        """The ``AUTH_USER_MODEL`` instance behind *user*: the one its record carries, else
        the one of the same key (where webauth finds ``request.user``), else ``None``."""
        stored = as_user(self.run(adapter, "get_user", user.id))
        assert stored is not None
        if stored.instance is not None:
            return stored.instance
        return get_user_model()._default_manager.filter(pk=user.id).first()

    def test_get_user_session_check_agrees_with_get_user(self, adapter: Any) -> None:
        user = self.new_user(adapter)
        instance = self.instance_behind(adapter, user)
        check = self.session_check(adapter, user.id)
        if instance is None:  # no Django user behind it: nothing a session could be bound to
            assert check is None
            return
        assert check is not None and check.id == user.id
        assert check.is_active is bool(getattr(instance, "is_active", True))
        assert check.password_hash == instance.password

    def test_get_user_session_check_follows_deactivation_and_password_changes(
        self, adapter: Any
    ) -> None:
        # The changes a project makes to its users, through the model instance.
        user = self.new_user(adapter)
        instance = self.instance_behind(adapter, user)
        if instance is None:
            assert self.session_check(adapter, user.id) is None
            return
        before = self.session_check(adapter, user.id)
        assert before is not None and before.password_hash == instance.password
        instance.set_password("a-new-password-for-the-suite")
        has_field = "is_active" in {f.attname for f in instance._meta.concrete_fields}
        if has_field:
            instance.is_active = False
        instance.save()
        after = self.session_check(adapter, user.id)
        assert after is not None and after.id == user.id
        assert after.password_hash == instance.password != before.password_hash
        assert after.is_active is not has_field
