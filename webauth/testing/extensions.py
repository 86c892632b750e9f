"""webauth's extensions to the adapter contract, as a reusable pytest suite.

:class:`~webauth.testing.AdapterSuite` includes it; on its own it tests only
the extensions of an adapter (``DjangoAdapter`` has them all)::

    from webauth.testing import AdapterExtensionsSuite

    class TestMyExtensions(AdapterExtensionsSuite):
        @pytest.fixture
        def adapter(self):
            return MyAdapter()

Each group of methods serves one feature, which fails with ``MissingAdapterMethods`` on an
adapter without them: a new user and its first account in one step
(``create_user_and_link_account``), fresh tokens on each sign-in (``update_account``),
:func:`webauth.get_access_token` (``get_account_by_user_id``, ``refresh_account_tokens``),
:mod:`webauth.linked_accounts` (``list_accounts_by_user_id``, ``count_sign_in_methods``,
``unlink_user_account``) and :mod:`webauth.user_sessions` (``list_sessions_by_user_id``,
``delete_session_by_id``, ``delete_sessions_by_user_id``), email sign-in
(``replace_verification_token``, ``use_verification_code``, beside Auth.js's
``use_verification_token``) and passkeys (``create_webauthn_challenge``,
``use_webauthn_challenge``, ``get_user_handle``, ``get_user_by_handle``,
``rename_authenticator``, ``delete_authenticator``, ``mark_email_unproven``, ``prove_email``,
``forget_unproven_email``, and the stricter ``update_authenticator_counter`` that refuses a
counter that does not go up); the session route's check of a JWT's user without loading it
(``get_user_session_check``); and the second factor (``create_second_factor``,
``list_second_factors``, ``confirm_second_factor``, ``delete_second_factor``, ``use_totp_step``,
``replace_recovery_codes``, ``use_recovery_code``, ``count_recovery_codes``, and the optional
``touch_second_factor``), whose TOTP steps and recovery codes must be accepted once even by
racing callers. The suite calls them as webauth does, so sync and ``async def`` methods both
pass. The tests marked ``django_db(transaction=True)`` race threads against one record (each
thread with its own database connection).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connections

from ..errors import LastSignInMethod
from ..types import (
    AdapterAccount,
    AdapterAuthenticator,
    AdapterUser,
    ApiKeyRecord,
    SecondFactor,
    TrustedBrowser,
    UserSessionCheck,
    VerificationToken,
    WebAuthnChallenge,
    as_account,
    as_api_key,
    as_authenticator,
    as_second_factor,
    as_trusted_browser,
    as_user,
    as_user_session_check,
    as_verification_token,
    as_webauthn_challenge,
)
from .helpers import AdapterHelpers, now

__all__ = ["AdapterExtensionsSuite"]

T = TypeVar("T")


def race(calls: Sequence[Callable[[], T]]) -> list[T | None]:
    """Run *calls* in threads released at once; their results, in order.

    Each thread closes its database connections when done. An exception in any
    call fails the test (after all threads have finished).
    """
    barrier = threading.Barrier(len(calls))
    results: list[T | None] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int, fn: Callable[[], T]) -> None:
        try:
            barrier.wait(30)
            results[index] = fn()
        except BaseException as exc:  # reported below, never swallowed
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=item) for item in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads), "a caller never returned"
    assert not errors, f"{len(errors)} callers failed, the first with {errors[0]!r}"
    return results


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

    def link(self, adapter: object, user: AdapterUser, provider: str = "example") -> AdapterAccount:
        """Store a new account of *user* at *provider*."""
        account = self.make_account(user, provider)
        self.run(adapter, "link_account", account)
        return account

    # -- create_user_and_link_account, update_account ---------------------------------------
    def test_create_user_and_link_account(self, adapter: object) -> None:
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

    def test_update_account_replaces_the_tokens(self, adapter: object) -> None:
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

    def test_update_account_of_unknown_account_is_none(self, adapter: object) -> None:
        user = self.new_user(adapter)
        assert self.run(adapter, "update_account", self.make_account(user)) is None

    # -- access tokens -------------------------------------------------------------------------
    def test_get_account_by_user_id(self, adapter: object) -> None:
        user = self.new_user(adapter)
        account = self.link(adapter, user, "github")
        found = as_account(self.run(adapter, "get_account_by_user_id", user.id, "github"))
        assert found is not None
        assert found.provider_account_id == account.provider_account_id
        assert found.access_token == "at-1" and found.refresh_token == "rt-1"
        assert self.run(adapter, "get_account_by_user_id", user.id, "gitlab") is None

    def test_refresh_account_tokens_stores_what_refresh_returns(self, adapter: object) -> None:
        user = self.new_user(adapter)
        account = self.link(adapter, user)
        seen: list[AdapterAccount] = []
        later = int(time.time()) + 3600

        def refresh(current: AdapterAccount) -> dict[str, object]:
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

    def test_refresh_account_tokens_may_store_nothing(self, adapter: object) -> None:
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

    def test_refresh_account_tokens_keeps_what_refresh_leaves_out(self, adapter: object) -> None:
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

    def test_refresh_account_tokens_that_fails_changes_nothing(self, adapter: object) -> None:
        # The provider refused or could not be reached: the exception reaches the
        # caller, the account is as it was, and the next caller may try again.
        user = self.new_user(adapter)
        account = self.link(adapter, user)

        def refused(current: AdapterAccount) -> dict[str, object]:
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
    def test_refresh_account_tokens_callers_wait_for_each_other(self, adapter: object) -> None:
        # While one caller's refresh runs, another caller for the same account
        # waits, then refreshes from what the first one stored: providers that
        # rotate refresh tokens refuse the old one a second time.
        user = self.new_user(adapter)
        account = self.link(adapter, user)
        inside, release = threading.Event(), threading.Event()
        seen: list[str | None] = []
        results: list[Any] = []
        later = int(time.time()) + 3600

        def slow(current: AdapterAccount) -> dict[str, object]:
            seen.append(current.refresh_token)
            inside.set()
            release.wait(10)
            return {"access_token": "at-2", "refresh_token": "rt-2", "expires_at": later}

        def second(current: AdapterAccount) -> None:
            seen.append(current.refresh_token)

        def run(refresh: Callable[[AdapterAccount], object]) -> None:
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

    def test_refresh_account_tokens_of_unknown_account_is_none(self, adapter: object) -> None:
        calls: list[AdapterAccount] = []
        assert self.run(adapter, "refresh_account_tokens", "example", "nope", calls.append) is None
        assert calls == []

    # -- linked accounts -----------------------------------------------------------------------
    def test_list_accounts_by_user_id(self, adapter: object) -> None:
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

    def test_count_sign_in_methods(self, adapter: object) -> None:
        user = self.new_user(adapter)  # made without a password
        assert self.run(adapter, "count_sign_in_methods", user.id) == 0
        self.link(adapter, user, "github")
        self.link(adapter, user, "google")
        self.new_authenticator(adapter, user)
        assert self.run(adapter, "count_sign_in_methods", user.id) == 3

    def test_unlink_user_account_when_another_way_remains(self, adapter: object) -> None:
        user = self.new_user(adapter)
        github = self.link(adapter, user, "github")
        self.link(adapter, user, "google")
        removed = self.run(adapter, "unlink_user_account", user.id, "github", None)
        assert removed is not None and removed.provider_account_id == github.provider_account_id
        listed = self.run(adapter, "list_accounts_by_user_id", user.id)
        assert [a.provider for a in listed] == ["google"]

    def test_unlink_user_account_never_the_last_way_in(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.link(adapter, user, "github")
        with pytest.raises(LastSignInMethod):
            self.run(adapter, "unlink_user_account", user.id, "github", None)
        assert len(list(self.run(adapter, "list_accounts_by_user_id", user.id))) == 1

    def test_unlink_user_account_by_account_id_and_unknown(self, adapter: object) -> None:
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
    def test_list_sessions_by_user_id(self, adapter: object) -> None:
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

    def test_delete_session_by_id(self, adapter: object) -> None:
        user = self.new_user(adapter)
        session = self.new_session(adapter, user)
        [listed] = self.run(adapter, "list_sessions_by_user_id", user.id, None)
        other = self.new_user(adapter)
        assert self.run(adapter, "delete_session_by_id", other.id, listed.id) is False
        assert self.run(adapter, "delete_session_by_id", user.id, listed.id) is True
        assert self.run(adapter, "get_session_and_user", session.session_token) is None
        assert self.run(adapter, "delete_session_by_id", user.id, listed.id) is False

    def test_delete_sessions_by_user_id_keeps_one(self, adapter: object) -> None:
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

    # -- email sign-in: grants with a link token and a code ------------------------------------
    def grant(
        self,
        adapter: object,
        identifier: str,
        token: str = "link-hash",
        code: str | None = "code-hash",
        *,
        expires: datetime | None = None,
        attempts: int = 0,
    ) -> VerificationToken:
        """Store a grant with ``replace_verification_token``; the record it returns."""
        record = VerificationToken(
            identifier=identifier,
            token=token,
            expires=expires or now() + timedelta(hours=1),
            code=code,
            attempts=attempts,
        )
        stored = as_verification_token(self.run(adapter, "replace_verification_token", record))
        assert stored is not None, "replace_verification_token must return the stored record"
        return stored

    def code(
        self, adapter: object, identifier: str, code: str, max_attempts: int = 5
    ) -> VerificationToken | None:
        """``use_verification_code`` as the email flow calls it."""
        return as_verification_token(
            self.run(adapter, "use_verification_code", identifier, code, max_attempts)
        )

    def test_replace_verification_token_returns_the_record(self, adapter: object) -> None:
        expires = now() + timedelta(minutes=15)
        stored = self.grant(adapter, "r@example.com", "t-1", "c-1", expires=expires)
        assert (stored.identifier, stored.code, stored.attempts) == ("r@example.com", "c-1", 0)
        assert abs((stored.expires - expires).total_seconds()) < 1

    def test_link_redeems_the_grant_once_and_the_code_with_it(self, adapter: object) -> None:
        self.grant(adapter, "l@example.com", "t-1", "c-1")
        used = as_verification_token(
            self.run(adapter, "use_verification_token", "l@example.com", "t-1")
        )
        assert used is not None and used.identifier == "l@example.com"
        assert self.run(adapter, "use_verification_token", "l@example.com", "t-1") is None
        assert self.code(adapter, "l@example.com", "c-1") is None

    def test_code_redeems_the_grant_once_and_the_link_with_it(self, adapter: object) -> None:
        expires = now() + timedelta(minutes=10)
        self.grant(adapter, "c@example.com", "t-1", "c-1", expires=expires)
        used = self.code(adapter, "c@example.com", "c-1")
        assert used is not None and used.identifier == "c@example.com"
        assert abs((used.expires - expires).total_seconds()) < 1
        assert self.code(adapter, "c@example.com", "c-1") is None
        assert self.run(adapter, "use_verification_token", "c@example.com", "t-1") is None

    def test_a_wrong_code_counts(self, adapter: object) -> None:
        self.grant(adapter, "w@example.com", "t-1", "c-1")
        assert self.code(adapter, "w@example.com", "wrong-1", max_attempts=3) is None
        assert self.code(adapter, "w@example.com", "wrong-2", max_attempts=3) is None
        # Two counted: a resend carries them.
        assert self.grant(adapter, "w@example.com", "t-2", "c-2").attempts == 2

    def test_a_right_code_within_the_limit_redeems(self, adapter: object) -> None:
        self.grant(adapter, "k@example.com", "t-1", "c-1")
        for n in range(2):
            assert self.code(adapter, "k@example.com", f"wrong-{n}", max_attempts=3) is None
        assert self.code(adapter, "k@example.com", "c-1", max_attempts=3) is not None

    def test_the_grant_dies_at_max_attempts(self, adapter: object) -> None:
        self.grant(adapter, "d@example.com", "t-1", "c-1")
        for n in range(3):
            assert self.code(adapter, "d@example.com", f"wrong-{n}", max_attempts=3) is None
        # Void: the link no longer redeems it, and a resend starts afresh.
        assert self.run(adapter, "use_verification_token", "d@example.com", "t-1") is None
        assert self.grant(adapter, "d@example.com", "t-2", "c-2").attempts == 0

    def test_a_right_code_after_max_wrong_ones_is_refused(self, adapter: object) -> None:
        self.grant(adapter, "m@example.com", "t-1", "c-1")
        for n in range(5):
            assert self.code(adapter, "m@example.com", f"wrong-{n}") is None
        assert self.code(adapter, "m@example.com", "c-1") is None

    def test_replace_voids_earlier_grants(self, adapter: object) -> None:
        self.grant(adapter, "v@example.com", "t-1", "c-1")
        self.grant(adapter, "v@example.com", "t-2", "c-2")
        assert self.run(adapter, "use_verification_token", "v@example.com", "t-1") is None
        assert self.code(adapter, "v@example.com", "c-1") is None  # a wrong code now
        assert self.code(adapter, "v@example.com", "c-2") is not None

    def test_replace_carries_the_attempts(self, adapter: object) -> None:
        self.grant(adapter, "a@example.com", "t-1", "c-1")
        for n in range(2):
            assert self.code(adapter, "a@example.com", f"wrong-{n}", max_attempts=3) is None
        assert self.grant(adapter, "a@example.com", "t-2", "c-2").attempts == 2
        # One more wrong code reaches the limit of 3: the new grant dies too.
        assert self.code(adapter, "a@example.com", "wrong-3", max_attempts=3) is None
        assert self.code(adapter, "a@example.com", "c-2", max_attempts=3) is None
        assert self.run(adapter, "use_verification_token", "a@example.com", "t-2") is None

    def test_replace_keeps_the_higher_count_and_ignores_expired_grants(
        self, adapter: object
    ) -> None:
        past = now() - timedelta(minutes=1)
        self.grant(adapter, "e@example.com", "t-1", "c-1", expires=past, attempts=4)
        assert self.grant(adapter, "e@example.com", "t-2", "c-2").attempts == 0
        assert self.grant(adapter, "e@example.com", "t-3", "c-3", attempts=1).attempts == 1
        assert self.grant(adapter, "e@example.com", "t-4", "c-4").attempts == 1

    def test_an_expired_grant_is_not_redeemed_by_code(self, adapter: object) -> None:
        past = now() - timedelta(seconds=1)
        self.grant(adapter, "x@example.com", "t-1", "c-1", expires=past)
        assert self.code(adapter, "x@example.com", "c-1") is None

    def test_a_link_only_grant_has_no_code(self, adapter: object) -> None:
        self.grant(adapter, "o@example.com", "t-1", None)
        assert self.code(adapter, "o@example.com", "") is None
        assert self.code(adapter, "o@example.com", "anything") is None
        assert self.run(adapter, "use_verification_token", "o@example.com", "t-1") is not None

    def test_identifiers_do_not_cross(self, adapter: object) -> None:
        self.grant(adapter, "one@example.com", "t-1", "c-1")
        self.grant(adapter, "two@example.com", "t-2", "c-2")  # voids nothing of one@
        assert self.code(adapter, "two@example.com", "c-1", max_attempts=1) is None
        assert self.run(adapter, "use_verification_token", "two@example.com", "t-1") is None
        assert self.code(adapter, "nobody@example.com", "c-1") is None
        # two@'s wrong code counted against two@'s grant only (a limit of 1 voided it).
        assert self.code(adapter, "one@example.com", "c-1", max_attempts=1) is not None
        assert self.run(adapter, "use_verification_token", "two@example.com", "t-2") is None

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_redemptions_by_link_and_code_have_one_winner(self, adapter: object) -> None:
        for round_no in range(3):
            identifier = f"race-{round_no}@example.com"
            self.grant(adapter, identifier, f"t-{round_no}", f"c-{round_no}")
            token, code = f"t-{round_no}", f"c-{round_no}"
            by_link = partial(self.run, adapter, "use_verification_token", identifier, token)
            by_code = partial(self.code, adapter, identifier, code)
            calls = [by_code if n % 2 else by_link for n in range(50)]
            winners = [r for r in race(calls) if r is not None]
            assert len(winners) == 1, f"round {round_no}: {len(winners)} callers got the grant"
            assert self.code(adapter, identifier, code) is None
            assert self.run(adapter, "use_verification_token", identifier, token) is None

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_wrong_codes_are_all_counted(self, adapter: object) -> None:
        # 50 at once under a limit of 60: every one counted, none lost.
        self.grant(adapter, "count@example.com", "t-1", "c-1")
        results = race(
            [partial(self.code, adapter, "count@example.com", f"w-{n}", 60) for n in range(50)]
        )
        assert results == [None] * 50
        assert self.grant(adapter, "count@example.com", "t-2", "c-2").attempts == 50

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_wrong_codes_void_the_grant_at_the_limit(self, adapter: object) -> None:
        self.grant(adapter, "limit@example.com", "t-1", "c-1")
        results = race(
            [partial(self.code, adapter, "limit@example.com", f"w-{n}") for n in range(50)]
        )
        assert results == [None] * 50
        assert self.code(adapter, "limit@example.com", "c-1") is None
        assert self.run(adapter, "use_verification_token", "limit@example.com", "t-1") is None

    # -- passkeys: single-use challenges ---------------------------------------------------------
    def new_challenge(
        self,
        adapter: object,
        ceremony: str = "authenticate",
        *,
        binding: str = "binding-1",
        user_data: dict[str, Any] | None = None,
        expires: datetime | None = None,
    ) -> WebAuthnChallenge:
        """Store a new challenge with ``create_webauthn_challenge``; the record stored."""
        record = WebAuthnChallenge(
            challenge=secrets.token_urlsafe(32),
            ceremony=ceremony,
            binding=binding,
            user_data=user_data,
            expires=expires or now() + timedelta(minutes=5),
        )
        stored = as_webauthn_challenge(self.run(adapter, "create_webauthn_challenge", record))
        assert stored is not None and stored.challenge == record.challenge
        return record

    def use_challenge(
        self, adapter: object, challenge: str, ceremony: str, binding: str
    ) -> WebAuthnChallenge | None:
        """``use_webauthn_challenge`` as the passkey flow calls it."""
        return as_webauthn_challenge(
            self.run(adapter, "use_webauthn_challenge", challenge, ceremony, binding)
        )

    def test_a_challenge_is_used_once(self, adapter: object) -> None:
        data = {"email": "new@example.com", "name": "New Person"}
        made = self.new_challenge(adapter, "register", user_data=data)
        used = self.use_challenge(adapter, made.challenge, "register", "binding-1")
        assert used is not None
        assert (used.challenge, used.ceremony, used.binding) == (
            made.challenge,
            "register",
            "binding-1",
        )
        assert used.user_data == data
        assert abs((used.expires - made.expires).total_seconds()) < 1
        assert self.use_challenge(adapter, made.challenge, "register", "binding-1") is None

    def test_an_authentication_challenge_carries_no_user_data(self, adapter: object) -> None:
        made = self.new_challenge(adapter)
        used = self.use_challenge(adapter, made.challenge, "authenticate", "binding-1")
        assert used is not None and not used.user_data

    def test_a_mismatching_challenge_use_spends_nothing(self, adapter: object) -> None:
        made = self.new_challenge(adapter, "register")
        assert self.use_challenge(adapter, made.challenge, "authenticate", "binding-1") is None
        assert self.use_challenge(adapter, made.challenge, "register", "binding-2") is None
        assert self.use_challenge(adapter, made.challenge, "register", "") is None
        assert self.use_challenge(adapter, made.challenge, "register", "BINDING-1") is None
        assert self.use_challenge(adapter, made.challenge, "register", "binding-1") is not None

    def test_an_expired_challenge_is_refused(self, adapter: object) -> None:
        made = self.new_challenge(adapter, expires=now() - timedelta(seconds=1))
        assert self.use_challenge(adapter, made.challenge, "authenticate", "binding-1") is None

    def test_challenges_of_two_browsers_do_not_cross(self, adapter: object) -> None:
        mine = self.new_challenge(adapter, binding="browser-a")
        theirs = self.new_challenge(adapter, binding="browser-b")
        assert self.use_challenge(adapter, mine.challenge, "authenticate", "browser-b") is None
        assert self.use_challenge(adapter, theirs.challenge, "authenticate", "browser-a") is None
        assert self.use_challenge(adapter, "no-such-challenge", "authenticate", "browser-a") is None
        assert self.use_challenge(adapter, mine.challenge, "authenticate", "browser-a")
        assert self.use_challenge(adapter, theirs.challenge, "authenticate", "browser-b")

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_uses_of_a_challenge_have_one_winner(self, adapter: object) -> None:
        for round_no in range(3):
            made = self.new_challenge(adapter, binding=f"b-{round_no}")
            use = partial(self.use_challenge, adapter, made.challenge, "authenticate", made.binding)
            winners = [r for r in race([use] * 50) if r is not None]
            assert len(winners) == 1, f"round {round_no}: {len(winners)} callers got the challenge"
            assert use() is None

    # -- passkeys: user handles -------------------------------------------------------------------
    def test_a_user_handle_is_made_once_and_kept(self, adapter: object) -> None:
        user = self.new_user(adapter)
        assert self.run(adapter, "get_user_handle", user.id, False) is None
        handle = self.run(adapter, "get_user_handle", user.id, True)
        assert isinstance(handle, str) and re.fullmatch(r"[A-Za-z0-9_-]{86}", handle)
        assert self.run(adapter, "get_user_handle", user.id, True) == handle
        assert self.run(adapter, "get_user_handle", user.id, False) == handle
        other = self.run(adapter, "get_user_handle", self.new_user(adapter).id, True)
        assert other != handle and user.id not in (handle, other)

    def test_a_given_handle_is_stored_for_a_user_without_one(self, adapter: object) -> None:
        user = self.new_user(adapter)
        given = secrets.token_urlsafe(64)
        assert self.run(adapter, "get_user_handle", user.id, True, given) == given
        later = secrets.token_urlsafe(64)
        assert self.run(adapter, "get_user_handle", user.id, True, later) == given

    def test_an_unknown_user_has_no_handle(self, adapter: object) -> None:
        assert self.run(adapter, "get_user_handle", "999999999", True) is None

    def test_get_user_by_handle(self, adapter: object) -> None:
        user = self.new_user(adapter)
        handle = self.run(adapter, "get_user_handle", user.id, True)
        found = as_user(self.run(adapter, "get_user_by_handle", handle))
        assert found is not None and found.id == user.id
        assert self.run(adapter, "get_user_by_handle", handle.swapcase()) is None
        assert self.run(adapter, "get_user_by_handle", secrets.token_urlsafe(64)) is None
        assert self.run(adapter, "get_user_by_handle", "") is None
        self.run(adapter, "delete_user", user.id)
        assert self.run(adapter, "get_user_by_handle", handle) is None

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_first_handles_agree(self, adapter: object) -> None:
        user = self.new_user(adapter)
        handles = race([partial(self.run, adapter, "get_user_handle", user.id, True)] * 50)
        assert len(set(handles)) == 1 and handles[0] is not None
        assert self.run(adapter, "get_user_handle", user.id, False) == handles[0]

    # -- passkeys: what is stored, the counter ----------------------------------------------------
    def test_authenticator_keeps_name_aaguid_and_backup_state(self, adapter: object) -> None:
        user = self.new_user(adapter)
        created = self.new_authenticator(
            adapter,
            user,
            name="Work laptop",
            aaguid="fbfc3007-154e-4ecc-8c0b-6e020557d7bd",
            backup_eligible=True,
            credential_backed_up=True,
            credential_device_type="multiDevice",
        )
        found = as_authenticator(self.run(adapter, "get_authenticator", created.credential_id))
        assert found is not None
        assert (found.name, found.aaguid) == ("Work laptop", "fbfc3007-154e-4ecc-8c0b-6e020557d7bd")
        assert found.backup_eligible is True and found.credential_backed_up is True
        assert found.credential_device_type == "multiDevice"
        assert found.created_at is not None and found.last_used_at is None
        plain = self.new_authenticator(adapter, user)
        found = as_authenticator(self.run(adapter, "get_authenticator", plain.credential_id))
        assert found is not None and not found.name and not found.aaguid
        assert found.backup_eligible is False

    def counter(
        self, adapter: object, credential_id: str, value: int
    ) -> AdapterAuthenticator | None:
        """``update_authenticator_counter``: the updated record, or ``None`` if refused."""
        return as_authenticator(
            self.run(adapter, "update_authenticator_counter", credential_id, value)
        )

    def test_the_counter_only_goes_up(self, adapter: object) -> None:
        user = self.new_user(adapter)
        passkey = self.new_authenticator(adapter, user)
        updated = self.counter(adapter, passkey.credential_id, 5)
        assert updated is not None and updated.counter == 5 and updated.last_used_at is not None
        used_at = updated.last_used_at
        for replayed in (5, 4, 0):
            assert self.counter(adapter, passkey.credential_id, replayed) is None, replayed
        found = as_authenticator(self.run(adapter, "get_authenticator", passkey.credential_id))
        assert found is not None and found.counter == 5
        assert found.last_used_at is not None
        assert abs((found.last_used_at - used_at).total_seconds()) < 1  # refusals left it
        assert self.counter(adapter, passkey.credential_id, 6) is not None

    def test_a_counter_of_zero_may_stay_zero(self, adapter: object) -> None:
        # Synced passkeys keep no counter: they always send 0.
        user = self.new_user(adapter)
        passkey = self.new_authenticator(adapter, user)
        for _ in range(2):
            updated = self.counter(adapter, passkey.credential_id, 0)
            assert updated is not None and updated.counter == 0
            assert updated.last_used_at is not None

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_equal_counters_have_one_winner(self, adapter: object) -> None:
        user = self.new_user(adapter)
        passkey = self.new_authenticator(adapter, user)
        for round_no, value in enumerate((7, 8, 20)):
            update = partial(self.counter, adapter, passkey.credential_id, value)
            winners = [r for r in race([update] * 50) if r is not None]
            assert len(winners) == 1, f"round {round_no}: {len(winners)} callers stored {value}"
            found = as_authenticator(self.run(adapter, "get_authenticator", passkey.credential_id))
            assert found is not None and found.counter == value

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_zero_counters_all_pass(self, adapter: object) -> None:
        user = self.new_user(adapter)
        passkey = self.new_authenticator(adapter, user)
        results = race([partial(self.counter, adapter, passkey.credential_id, 0)] * 50)
        assert all(r is not None and r.counter == 0 for r in results)

    # -- passkeys: rename and remove --------------------------------------------------------------
    def pair(self, adapter: object, user: AdapterUser, **fields: Any) -> AdapterAuthenticator:
        """A passkey of *user* and the ``webauthn`` account registered with it."""
        passkey = self.new_authenticator(adapter, user, **fields)
        account = AdapterAccount(
            user_id=user.id,
            type="webauthn",
            provider="passkey",
            provider_account_id=passkey.provider_account_id,
        )
        self.run(adapter, "link_account", account)
        return passkey

    def test_rename_authenticator(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        passkey = self.new_authenticator(adapter, user, name="Old")
        renamed = as_authenticator(
            self.run(adapter, "rename_authenticator", user.id, passkey.credential_id, "Phone")
        )
        assert renamed is not None and renamed.name == "Phone"
        found = as_authenticator(self.run(adapter, "get_authenticator", passkey.credential_id))
        assert found is not None and found.name == "Phone"
        theirs = self.run(adapter, "rename_authenticator", other.id, passkey.credential_id, "Mine")
        assert theirs is None
        assert self.run(adapter, "rename_authenticator", user.id, "no-such-credential", "X") is None
        found = as_authenticator(self.run(adapter, "get_authenticator", passkey.credential_id))
        assert found is not None and found.name == "Phone"

    def test_a_passkey_and_its_account_are_one_way_in(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.pair(adapter, user)
        assert self.run(adapter, "count_sign_in_methods", user.id) == 1
        self.pair(adapter, user)
        self.new_authenticator(adapter, user)  # a passkey without an account
        assert self.run(adapter, "count_sign_in_methods", user.id) == 3

    def test_delete_authenticator_removes_the_passkey_and_its_account(
        self, adapter: object
    ) -> None:
        user = self.new_user(adapter)
        self.link(adapter, user, "github")
        passkey = self.pair(adapter, user)
        assert self.run(adapter, "count_sign_in_methods", user.id) == 2
        removed = as_authenticator(
            self.run(adapter, "delete_authenticator", user.id, passkey.credential_id)
        )
        assert removed is not None and removed.credential_id == passkey.credential_id
        assert self.run(adapter, "get_authenticator", passkey.credential_id) is None
        assert self.run(adapter, "get_account", passkey.provider_account_id, "passkey") is None
        assert list(self.run(adapter, "list_authenticators_by_user_id", user.id)) == []
        assert self.run(adapter, "count_sign_in_methods", user.id) == 1
        assert self.run(adapter, "delete_authenticator", user.id, passkey.credential_id) is None

    def test_delete_authenticator_of_another_user_is_none(self, adapter: object) -> None:
        owner, other = self.new_user(adapter), self.new_user(adapter)
        passkey = self.new_authenticator(adapter, owner)
        self.new_authenticator(adapter, owner)
        self.new_authenticator(adapter, other)
        assert self.run(adapter, "delete_authenticator", other.id, passkey.credential_id) is None
        assert self.run(adapter, "delete_authenticator", owner.id, "no-such-credential") is None
        assert self.run(adapter, "get_authenticator", passkey.credential_id) is not None

    def test_delete_authenticator_never_the_last_way_in(self, adapter: object) -> None:
        user = self.new_user(adapter)
        first = self.pair(adapter, user)
        with pytest.raises(LastSignInMethod):
            self.run(adapter, "delete_authenticator", user.id, first.credential_id)
        assert self.run(adapter, "get_authenticator", first.credential_id) is not None
        assert self.run(adapter, "get_account", first.provider_account_id, "passkey") is not None
        second = self.new_authenticator(adapter, user)
        assert self.run(adapter, "delete_authenticator", user.id, first.credential_id)
        with pytest.raises(LastSignInMethod):
            self.run(adapter, "delete_authenticator", user.id, second.credential_id)
        assert self.run(adapter, "get_authenticator", second.credential_id) is not None

    def test_unlinking_with_a_nul_finds_nothing(self, adapter: object) -> None:
        # What a hostile form sends: no account has it, and no database error follows.
        user = self.new_user(adapter)
        account = self.link(adapter, user, "github")
        assert self.run(adapter, "unlink_user_account", user.id, "git\x00hub", None) is None
        assert (
            self.run(
                adapter,
                "unlink_user_account",
                user.id,
                "github",
                "\x00" + account.provider_account_id,
            )
            is None
        )
        assert self.run(adapter, "get_account", account.provider_account_id, "github") is not None

    def test_unlinking_a_webauthn_account_removes_its_passkey(self, adapter: object) -> None:
        user = self.new_user(adapter)
        passkey = self.pair(adapter, user)
        with pytest.raises(LastSignInMethod):
            self.run(adapter, "unlink_user_account", user.id, "passkey", None)
        assert self.run(adapter, "get_authenticator", passkey.credential_id) is not None
        self.link(adapter, user, "github")
        removed = self.run(
            adapter, "unlink_user_account", user.id, "passkey", passkey.provider_account_id
        )
        assert removed is not None
        assert self.run(adapter, "get_authenticator", passkey.credential_id) is None
        assert self.run(adapter, "count_sign_in_methods", user.id) == 1

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_removals_leave_a_way_in(self, adapter: object) -> None:
        # A user with two passkeys and nothing else: 50 removals of either at
        # once remove exactly one; the other passkey is the last way in.
        def remove(user_id: str, credential_id: str) -> str:
            try:
                done = self.run(adapter, "delete_authenticator", user_id, credential_id)
            except LastSignInMethod:
                return "refused"
            return "removed" if done is not None else "gone"

        for round_no in range(3):
            user = self.new_user(adapter)
            first, second = self.pair(adapter, user), self.new_authenticator(adapter, user)
            calls = [
                partial(remove, user.id, (first if n % 2 else second).credential_id)
                for n in range(50)
            ]
            results = race(calls)
            assert results.count("removed") == 1, f"round {round_no}: {results.count('removed')}"
            left = list(self.run(adapter, "list_authenticators_by_user_id", user.id))
            assert len(left) == 1
            assert self.run(adapter, "count_sign_in_methods", user.id) == 1

    def test_update_authenticator_backup_state(self, adapter: object) -> None:
        user = self.new_user(adapter)
        passkey = self.new_authenticator(adapter, user, backup_eligible=True)
        other = self.new_authenticator(adapter, user, backup_eligible=True)
        self.run(adapter, "update_authenticator_backup_state", passkey.credential_id, True)
        found = as_authenticator(self.run(adapter, "get_authenticator", passkey.credential_id))
        assert found is not None and found.credential_backed_up is True
        untouched = as_authenticator(self.run(adapter, "get_authenticator", other.credential_id))
        assert untouched is not None and untouched.credential_backed_up is False
        self.run(adapter, "update_authenticator_backup_state", passkey.credential_id, False)
        found = as_authenticator(self.run(adapter, "get_authenticator", passkey.credential_id))
        assert found is not None and found.credential_backed_up is False
        # An unknown credential changes nothing and raises nothing.
        self.run(adapter, "update_authenticator_backup_state", "no-such-credential", True)

    # -- addresses nobody has proven: mark_email_unproven, prove_email ---------------------------
    def test_proving_an_unmarked_user_changes_nothing(self, adapter: object) -> None:
        user = self.new_user(adapter)
        passkey = self.pair(adapter, user)
        account = self.link(adapter, user, "github")
        session = self.new_session(adapter, user)
        assert self.run(adapter, "prove_email", user.id, "email", user.email) is False
        assert self.run(adapter, "get_authenticator", passkey.credential_id) is not None
        assert self.run(adapter, "get_account", account.provider_account_id, "github") is not None
        assert self.run(adapter, "get_session_and_user", session.session_token) is not None

    def test_proving_a_marked_user_removes_every_earlier_way_in(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        self.run(adapter, "mark_email_unproven", user.id)
        self.run(adapter, "mark_email_unproven", user.id)  # twice is once
        passkeys = [self.pair(adapter, user), self.new_authenticator(adapter, user)]
        stranger = self.link(adapter, user, "github")
        kept = self.link(adapter, user, "google")
        session = self.new_session(adapter, user)
        bystander = (self.pair(adapter, other), self.new_session(adapter, other))
        proved = self.run(adapter, "prove_email", user.id, "google", kept.provider_account_id)
        assert proved is True
        for passkey in passkeys:
            assert self.run(adapter, "get_authenticator", passkey.credential_id) is None
        assert self.run(adapter, "get_account", stranger.provider_account_id, "github") is None
        assert self.run(adapter, "get_account", kept.provider_account_id, "google") is not None
        assert self.run(adapter, "get_session_and_user", session.session_token) is None
        # Once proven, always proven; another user's ways in are untouched.
        assert (
            self.run(adapter, "prove_email", user.id, "google", kept.provider_account_id) is False
        )
        assert self.run(adapter, "get_authenticator", bystander[0].credential_id) is not None
        assert self.run(adapter, "get_session_and_user", bystander[1].session_token) is not None

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_proofs_have_one_winner(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.run(adapter, "mark_email_unproven", user.id)
        self.pair(adapter, user)
        prove = partial(self.run, adapter, "prove_email", user.id, "email", user.email)
        results = race([prove] * 20)
        assert results.count(True) == 1 and results.count(False) == 19

    def test_forgetting_the_mark_keeps_every_way_in(self, adapter: object) -> None:
        user = self.new_user(adapter)
        assert self.run(adapter, "forget_unproven_email", user.id) is False
        self.run(adapter, "mark_email_unproven", user.id)
        passkey = self.pair(adapter, user)
        account = self.link(adapter, user, "github")
        session = self.new_session(adapter, user)
        assert self.run(adapter, "forget_unproven_email", user.id) is True
        assert self.run(adapter, "forget_unproven_email", user.id) is False
        assert self.run(adapter, "get_authenticator", passkey.credential_id) is not None
        assert self.run(adapter, "get_account", account.provider_account_id, "github") is not None
        assert self.run(adapter, "get_session_and_user", session.session_token) is not None
        # Without the mark, proving the address later removes nothing.
        assert self.run(adapter, "prove_email", user.id, "email", user.email) is False
        assert self.run(adapter, "get_authenticator", passkey.credential_id) is not None

    # -- checking a session's user ------------------------------------------------------------
    def session_check(self, adapter: object, user_id: str) -> UserSessionCheck | None:
        """``get_user_session_check(user_id)`` as webauth reads it."""
        return as_user_session_check(self.run(adapter, "get_user_session_check", user_id))

    def test_get_user_session_check_of_unknown_user_is_none(self, adapter: object) -> None:
        assert self.session_check(adapter, "999999999") is None

    def test_get_user_session_check_of_deleted_user_is_none(self, adapter: object) -> None:
        user = self.new_user(adapter)
        assert self.run(adapter, "get_user", user.id) is not None
        self.run(adapter, "delete_user", user.id)
        assert self.session_check(adapter, user.id) is None

    def instance_behind(self, adapter: object, user: AdapterUser) -> AbstractBaseUser | None:
        """The ``AUTH_USER_MODEL`` instance behind *user*: the one its record carries, else
        the one of the same key (where webauth finds ``request.user``), else ``None``."""
        stored = as_user(self.run(adapter, "get_user", user.id))
        assert stored is not None
        if stored.instance is not None:
            return stored.instance
        return get_user_model()._default_manager.filter(pk=user.id).first()

    def test_get_user_session_check_agrees_with_get_user(self, adapter: object) -> None:
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
        self, adapter: object
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

    # -- the second factor: TOTP keys and recovery codes ----------------------------------------
    def new_factor(
        self, adapter: object, user: AdapterUser, *, confirm_at: int | None = None
    ) -> SecondFactor:
        """A stored TOTP factor of *user*; confirmed at step *confirm_at* when given."""
        factor = as_second_factor(
            self.run(
                adapter,
                "create_second_factor",
                SecondFactor(
                    id="", user_id=user.id, kind="totp", secret="sealed-key", name="Phone"
                ),
            )
        )
        assert factor is not None and factor.id and not factor.confirmed
        if confirm_at is not None:
            assert self.run(adapter, "confirm_second_factor", user.id, factor.id, confirm_at)
        return factor

    def factors(self, adapter: object, user: AdapterUser) -> list[SecondFactor]:
        found = self.run(adapter, "list_second_factors", user.id) or []
        return [f for f in (as_second_factor(item) for item in found) if f is not None]

    def test_a_second_factor_is_stored_unconfirmed(self, adapter: object) -> None:
        user = self.new_user(adapter)
        factor = self.new_factor(adapter, user)
        [listed] = self.factors(adapter, user)
        assert (listed.id, listed.kind, listed.secret, listed.name) == (
            factor.id,
            "totp",
            "sealed-key",
            "Phone",
        )
        assert listed.confirmed is False and listed.last_step is None
        assert self.factors(adapter, self.new_user(adapter)) == []

    def test_an_unconfirmed_factor_accepts_no_code(self, adapter: object) -> None:
        user = self.new_user(adapter)
        factor = self.new_factor(adapter, user)
        assert not self.run(adapter, "use_totp_step", factor.id, 100)

    def test_a_factor_is_confirmed_once_and_only_by_its_user(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        factor = self.new_factor(adapter, user)
        assert not self.run(adapter, "confirm_second_factor", other.id, factor.id, 100)
        assert self.run(adapter, "confirm_second_factor", user.id, factor.id, 100)
        assert not self.run(adapter, "confirm_second_factor", user.id, factor.id, 101)
        [listed] = self.factors(adapter, user)
        assert listed.confirmed is True and listed.last_step == 100

    def test_touch_second_factor_marks_only_a_confirmed_factor_used(self, adapter: object) -> None:
        user = self.new_user(adapter)
        unconfirmed = self.new_factor(adapter, user)
        assert not self.run(adapter, "touch_second_factor", unconfirmed.id)
        confirmed = self.new_factor(adapter, user, confirm_at=0)
        before = {f.id: f.last_used_at for f in self.factors(adapter, user)}
        time.sleep(0.01)
        assert self.run(adapter, "touch_second_factor", confirmed.id)
        after = {f.id: f for f in self.factors(adapter, user)}
        assert after[unconfirmed.id].last_used_at is None
        used, earlier = after[confirmed.id].last_used_at, before[confirmed.id]
        assert used is not None
        assert earlier is None or used > earlier
        assert after[confirmed.id].last_step == 0  # the counter is untouched

    def test_a_time_step_is_accepted_once_and_never_an_earlier_one(self, adapter: object) -> None:
        user = self.new_user(adapter)
        factor = self.new_factor(adapter, user, confirm_at=100)
        assert not self.run(adapter, "use_totp_step", factor.id, 100)  # the enrolment's code
        assert self.run(adapter, "use_totp_step", factor.id, 101)
        assert not self.run(adapter, "use_totp_step", factor.id, 101)
        assert not self.run(adapter, "use_totp_step", factor.id, 99)
        assert self.run(adapter, "use_totp_step", factor.id, 103)
        [listed] = self.factors(adapter, user)
        assert listed.last_step == 103 and listed.last_used_at is not None

    def test_delete_second_factor_only_the_users_own(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        factor = self.new_factor(adapter, user, confirm_at=1)
        assert not self.run(adapter, "delete_second_factor", other.id, factor.id)
        assert self.run(adapter, "delete_second_factor", user.id, factor.id)
        assert self.factors(adapter, user) == []
        assert not self.run(adapter, "delete_second_factor", user.id, factor.id)

    def test_recovery_codes_are_spent_once_and_replaced_together(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        self.run(adapter, "replace_recovery_codes", user.id, ["a" * 64, "b" * 64, "c" * 64])
        assert self.run(adapter, "count_recovery_codes", user.id) == 3
        assert not self.run(adapter, "use_recovery_code", other.id, "a" * 64)
        assert self.run(adapter, "use_recovery_code", user.id, "a" * 64)
        assert not self.run(adapter, "use_recovery_code", user.id, "a" * 64)
        assert not self.run(adapter, "use_recovery_code", user.id, "d" * 64)
        assert self.run(adapter, "count_recovery_codes", user.id) == 2
        self.run(adapter, "replace_recovery_codes", user.id, ["e" * 64])
        assert not self.run(adapter, "use_recovery_code", user.id, "b" * 64)
        assert self.run(adapter, "count_recovery_codes", user.id) == 1
        assert self.run(adapter, "count_recovery_codes", other.id) == 0

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_uses_of_one_totp_code_have_one_winner(self, adapter: object) -> None:
        user = self.new_user(adapter)
        factor = self.new_factor(adapter, user, confirm_at=1)
        for round_no, step in enumerate((2, 3, 10)):
            use = partial(self.run, adapter, "use_totp_step", factor.id, step)
            winners = [r for r in race([use] * 50) if r]
            assert len(winners) == 1, f"round {round_no}: {len(winners)} callers used step {step}"

    @pytest.mark.django_db(transaction=True)
    def test_concurrent_uses_of_one_recovery_code_have_one_winner(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.run(adapter, "replace_recovery_codes", user.id, ["f" * 64, "0" * 64])
        use = partial(self.run, adapter, "use_recovery_code", user.id, "f" * 64)
        winners = [r for r in race([use] * 50) if r]
        assert len(winners) == 1, f"{len(winners)} callers spent one code"
        assert self.run(adapter, "count_recovery_codes", user.id) == 1

    # -- trusted browsers (mfa.trust_days) --------------------------------------------------------
    def trust(
        self, adapter: object, user: AdapterUser, token_hash: str, days: int = 30
    ) -> TrustedBrowser:
        stored = as_trusted_browser(
            self.run(
                adapter,
                "create_trusted_browser",
                TrustedBrowser(
                    id="",
                    user_id=user.id,
                    token_hash=token_hash,
                    expires=now() + timedelta(days=days),
                    user_agent="Firefox on Linux",
                ),
            )
        )
        assert stored is not None and stored.id
        return stored

    def test_a_trusted_browser_is_found_by_its_users_token_hash_only(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        stored = self.trust(adapter, user, "a" * 64)
        found = as_trusted_browser(self.run(adapter, "use_trusted_browser", user.id, "a" * 64))
        assert found is not None and found.id == stored.id and found.last_used_at is not None
        assert self.run(adapter, "use_trusted_browser", other.id, "a" * 64) is None
        assert self.run(adapter, "use_trusted_browser", user.id, "b" * 64) is None

    def test_an_expired_trusted_browser_is_neither_used_nor_listed(self, adapter: object) -> None:
        user = self.new_user(adapter)
        self.trust(adapter, user, "c" * 64, days=-1)
        assert self.run(adapter, "use_trusted_browser", user.id, "c" * 64) is None
        assert self.run(adapter, "list_trusted_browsers", user.id) == []

    def test_trusted_browsers_are_listed_and_forgotten(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        first = self.trust(adapter, user, "d" * 64)
        self.trust(adapter, user, "e" * 64)
        self.trust(adapter, other, "f" * 64)
        listed = self.run(adapter, "list_trusted_browsers", user.id) or []
        assert len(listed) == 2
        assert not self.run(adapter, "delete_trusted_browser", other.id, first.id)
        assert self.run(adapter, "delete_trusted_browser", user.id, first.id)
        assert self.run(adapter, "use_trusted_browser", user.id, "d" * 64) is None
        assert self.run(adapter, "delete_trusted_browsers", user.id) == 1
        assert self.run(adapter, "list_trusted_browsers", user.id) == []
        assert len(self.run(adapter, "list_trusted_browsers", other.id) or []) == 1

    # -- API keys (WEBAUTH["api_keys"]) ----------------------------------------------------------
    #: The owner of the owners' keys below: a reference as webauth.api_keys makes it.
    api_key_owner = "auth.group:1"

    def new_api_key(
        self, adapter: object, user_id: str, *, owner: str = "", max_keys: int = 50
    ) -> ApiKeyRecord | None:
        """Store a key of *user_id* (or of *owner*); what ``create_api_key`` returns."""
        record = ApiKeyRecord(
            key_id=secrets.token_hex(6),
            user_id=user_id,
            name="a key",
            secret_hash=secrets.token_hex(32),
            scopes=["read"],
            owner=owner,
        )
        return as_api_key(self.run(adapter, "create_api_key", record, max_keys))

    def test_an_api_key_is_found_by_its_id_with_its_user(self, adapter: object) -> None:
        user = self.new_user(adapter)
        made = self.new_api_key(adapter, user.id)
        assert made is not None and made.created_at is not None
        found = self.run(adapter, "get_api_key", made.key_id)
        assert found is not None
        record, holder = as_api_key(found[0]), found[1]
        assert record is not None and record.secret_hash == made.secret_hash
        assert record.user_id == str(user.id) and record.scopes == ["read"]
        assert str(getattr(holder, "pk", getattr(holder, "id", None))) == str(user.id)
        assert self.run(adapter, "get_api_key", "nosuchkeyid0") is None

    def test_api_keys_are_listed_newest_first_and_revoked_once(self, adapter: object) -> None:
        user, other = self.new_user(adapter), self.new_user(adapter)
        first = self.new_api_key(adapter, user.id)
        time.sleep(0.01)  # distinct creation times
        second = self.new_api_key(adapter, user.id)
        self.new_api_key(adapter, other.id)
        assert first is not None and second is not None
        listed = [k.key_id for k in self.run(adapter, "list_api_keys", user.id)]
        assert listed == [second.key_id, first.key_id]
        assert not self.run(adapter, "revoke_api_key", other.id, first.key_id)
        assert self.run(adapter, "revoke_api_key", user.id, first.key_id)
        assert not self.run(adapter, "revoke_api_key", user.id, first.key_id)
        revoked = as_api_key(self.run(adapter, "get_api_key", first.key_id)[0])
        assert revoked is not None and revoked.revoked_at is not None

    def test_a_user_holds_at_most_max_keys_live(self, adapter: object) -> None:
        user = self.new_user(adapter)
        first = self.new_api_key(adapter, user.id, max_keys=2)
        assert first is not None and self.new_api_key(adapter, user.id, max_keys=2)
        assert self.new_api_key(adapter, user.id, max_keys=2) is None
        self.run(adapter, "revoke_api_key", user.id, first.key_id)
        assert self.new_api_key(adapter, user.id, max_keys=2) is not None

    def test_an_api_keys_last_use_is_written_at_most_every_interval(self, adapter: object) -> None:
        made = self.new_api_key(adapter, self.new_user(adapter).id)
        assert made is not None
        moment = now()
        self.run(adapter, "touch_api_key", made.key_id, moment, 60.0)
        self.run(adapter, "touch_api_key", made.key_id, moment + timedelta(seconds=30), 60.0)
        stored = as_api_key(self.run(adapter, "get_api_key", made.key_id)[0])
        assert stored is not None and stored.last_used_at == moment

    def test_an_owners_api_keys_have_no_user_and_count_apart(self, adapter: object) -> None:
        user = self.new_user(adapter)
        owner = self.api_key_owner
        made = self.new_api_key(adapter, "", owner=owner, max_keys=1)
        assert made is not None and made.owner == owner and made.user_id == ""
        assert self.new_api_key(adapter, "", owner=owner, max_keys=1) is None
        assert self.new_api_key(adapter, user.id, max_keys=1) is not None  # the user's own
        found = self.run(adapter, "get_api_key", made.key_id)
        assert found is not None and found[1] is None
        stored = as_api_key(found[0])
        assert stored is not None and stored.owner == owner
        listed = self.run(adapter, "list_api_keys", "", owner=owner)
        assert [k.key_id for k in listed] == [made.key_id]
        assert made.key_id not in [k.key_id for k in self.run(adapter, "list_api_keys", user.id)]
        assert not self.run(adapter, "revoke_api_key", user.id, made.key_id)
        assert not self.run(adapter, "revoke_api_key", "", made.key_id, owner=owner + "0")
        assert self.run(adapter, "revoke_api_key", "", made.key_id, owner=owner)
