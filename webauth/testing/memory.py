"""An adapter that keeps everything in memory, for tests: :class:`MemoryAdapter`.

It implements the whole contract (Auth.js's 19 methods and webauth's
extensions) with ``async def`` methods, so it also shows that webauth drives an
async adapter from its sync flows. Use it in a project's own tests where a real
store is not the point::

    import pytest
    from webauth.testing.memory import MemoryAdapter

    @pytest.fixture
    def adapter(settings):
        adapter = MemoryAdapter()
        settings.WEBAUTH = {**settings.WEBAUTH, "adapter": adapter}
        return adapter

    def test_a_new_user_is_stored(adapter, client):
        ...  # sign in through the routes, then
        assert any(u.email == "ada@example.com" for u in adapter.users.values())

Its records live in plain dicts (:attr:`~MemoryAdapter.users`,
:attr:`~MemoryAdapter.accounts`, :attr:`~MemoryAdapter.sessions`...) that a test
may read or fill directly. Importing this module needs Django set up (it uses
:class:`~webauth.adapters.django.DjangoAdapter` for the users behind records
without a model instance), as any test of a Django project has it.

It passes :class:`~webauth.testing.AdapterSuite`, and is a short example of a
third-party adapter: locks stand in for the transactions and row locks a
database adapter uses.
"""

from __future__ import annotations

import base64
import dataclasses
import hmac
import itertools
import secrets
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from asgiref.sync import sync_to_async

from ..adapters.base import TokenRefresher
from ..adapters.django import DjangoAdapter
from ..errors import EmailInUse, LastSignInMethod
from ..types import (
    ApiKeyRecord,
    LinkedAccount,
    UserSession,
    as_account,
    as_api_key,
    as_authenticator,
    as_second_factor,
    as_session,
    as_trusted_browser,
    as_user,
    as_verification_token,
    as_webauthn_challenge,
)

__all__ = ["MemoryAdapter"]

if TYPE_CHECKING:
    from ..types import (
        AdapterAccount,
        AdapterAuthenticator,
        AdapterSession,
        AdapterUser,
        SecondFactor,
        TrustedBrowser,
        UserSessionCheck,
        VerificationToken,
        WebAuthnChallenge,
    )

#: A record as webauth passes it: the dataclass, or a mapping with either spelling.
Record = object


def _new_handle() -> str:
    # A WebAuthn user handle as DjangoAdapter makes one: base64url of 64 random bytes.
    return base64.urlsafe_b64encode(secrets.token_bytes(64)).rstrip(b"=").decode()


R = TypeVar("R")


def _delete_users(rows: dict[str, Any], user_id: str, key: str) -> bool:
    """Delete ``rows[key]`` if it is *user_id*'s; whether it was."""
    found = rows.get(str(key))
    if found is None or found.user_id != str(user_id):
        return False
    del rows[str(key)]
    return True


def _record(value: R | None, name: str) -> R:
    if value is None:
        raise TypeError(f"a {name} record is required")
    return value


class MemoryAdapter:
    """Every adapter method, on dicts in memory; ``async def`` throughout.

    *first_id* is the first user id given out: a test that pairs these users
    with ``AUTH_USER_MODEL`` users by key starts it at one of theirs. One
    instance is one store; each test should make its own.
    """

    def __init__(self, first_id: int = 1) -> None:
        #: Users by id.
        self.users: dict[str, AdapterUser] = {}
        #: Accounts by ``(provider, provider_account_id)``.
        self.accounts: dict[tuple[str, str], AdapterAccount] = {}
        #: Database sessions by session token.
        self.sessions: dict[str, AdapterSession] = {}
        #: Email grants by ``(identifier, token)``.
        self.tokens: dict[tuple[str, str], VerificationToken] = {}
        #: Passkeys by credential id.
        self.authenticators: dict[str, AdapterAuthenticator] = {}
        self._ids = itertools.count(first_id)
        # When accounts and sessions were stored, and one lock for token
        # refreshes (webauth runs each call in an event loop of its own).
        self.linked_at: dict[tuple[str, str], datetime] = {}
        self.session_info: dict[str, tuple[int, datetime]] = {}
        self._session_ids = itertools.count(1)
        self._refreshing = threading.Lock()
        self._grants = threading.Lock()  # verification tokens: one caller at a time
        #: WebAuthn challenges by challenge.
        self.challenges: dict[str, WebAuthnChallenge] = {}
        #: WebAuthn user handles by user id.
        self.handles: dict[str, str] = {}
        #: The users a passkey registration made, whose address nobody has proven.
        self.unproven: set[str] = set()
        # Passkeys: challenges, user handles, counters and removals, one caller at a time.
        self._passkeys = threading.Lock()
        #: Second factors by id.
        self.second_factors: dict[str, SecondFactor] = {}
        #: Recovery codes: user id -> code hash -> whether it is spent.
        self.recovery_codes: dict[str, dict[str, bool]] = {}
        self._factor_ids = itertools.count(1)
        self._factors = threading.Lock()  # TOTP steps and recovery codes: one caller at a time
        #: Trusted browsers by id.
        self.trusted_browsers: dict[str, TrustedBrowser] = {}
        self._browser_ids = itertools.count(1)
        #: API keys by key id.
        self.api_keys: dict[str, ApiKeyRecord] = {}
        self._api_keys = threading.Lock()
        #: The sessions access tokens were minted for: sid -> [user id, expires,
        #: ended (or None), minted].
        self.token_sessions: dict[str, list[Any]] = {}
        self._token_sessions = threading.Lock()

    # -- users ---------------------------------------------------------------------------------
    async def create_user(self, user: Record) -> AdapterUser:
        """Store a new user under the next id; ``EmailInUse`` for an address taken."""
        given = as_user({"id": "", **user} if isinstance(user, Mapping) else user)
        record = dataclasses.replace(_record(given, "user"))
        if record.email and any(u.email == record.email for u in self.users.values()):
            raise EmailInUse("Another user has this email address")
        record.id = str(next(self._ids))
        self.users[record.id] = record
        return record

    async def get_user(self, id: str) -> AdapterUser | None:
        """The user with this id, or ``None``."""
        return self.users.get(str(id))

    async def get_user_by_email(self, email: str) -> AdapterUser | None:
        """The user with this address (compared exactly), or ``None``."""
        return next((u for u in self.users.values() if u.email == email), None)

    async def get_user_by_account(
        self, provider: str, provider_account_id: str
    ) -> AdapterUser | None:
        """The user linked to this account, or ``None``."""
        account = self.accounts.get((provider, provider_account_id))
        return self.users.get(account.user_id) if account else None

    async def update_user(self, user: Mapping[str, object]) -> AdapterUser:
        """Apply a partial update (``id`` required)."""
        record = self.users[str(user["id"])]
        for key, value in user.items():
            if key != "id":
                setattr(record, key, value)
        return record

    async def delete_user(self, user_id: str) -> AdapterUser | None:
        """Delete the user with its accounts, sessions, passkeys and handle."""
        user = self.users.pop(str(user_id), None)
        for key in [k for k, a in self.accounts.items() if a.user_id == user_id]:
            del self.accounts[key]
        for token in [k for k, s in self.sessions.items() if s.user_id == user_id]:
            del self.sessions[token]
        for credential_id in [k for k, a in self.authenticators.items() if a.user_id == user_id]:
            del self.authenticators[credential_id]
        self.handles.pop(str(user_id), None)
        return user

    # -- accounts ------------------------------------------------------------------------------
    async def link_account(self, account: Record) -> AdapterAccount:
        """Store the account."""
        record: AdapterAccount = _record(as_account(account), "account")
        key = (record.provider, record.provider_account_id)
        self.accounts[key] = record
        self.linked_at[key] = datetime.now(UTC)
        return record

    async def unlink_account(
        self, provider: str, provider_account_id: str
    ) -> AdapterAccount | None:
        """Remove the account; the removed one, or ``None``."""
        return self.accounts.pop((provider, provider_account_id), None)

    async def get_account(self, provider_account_id: str, provider: str) -> AdapterAccount | None:
        """The account, or ``None``."""
        return self.accounts.get((provider, provider_account_id))

    # -- database sessions ---------------------------------------------------------------------
    async def create_session(self, session: Record) -> AdapterSession:
        """Store the session, numbered in creation order."""
        record: AdapterSession = _record(as_session(session), "session")
        self.sessions[record.session_token] = record
        self.session_info[record.session_token] = (next(self._session_ids), datetime.now(UTC))
        return record

    async def get_session_and_user(self, session_token: str) -> dict[str, object] | None:
        """The session and its user, as a ``{"session", "user"}`` mapping (Auth.js's shape)."""
        session = self.sessions.get(session_token)
        if session is None or session.user_id not in self.users:
            return None
        return {"session": session, "user": self.users[session.user_id]}

    async def update_session(self, session: Mapping[str, Any]) -> AdapterSession | None:
        """Apply a new ``expires`` (``session_token`` required)."""
        record = self.sessions.get(session["session_token"])
        if record is not None and session.get("expires"):
            record.expires = session["expires"]
        return record

    async def delete_session(self, session_token: str) -> AdapterSession | None:
        """Delete the session; the deleted one, or ``None``."""
        return self.sessions.pop(session_token, None)

    # -- email grants --------------------------------------------------------------------------
    async def create_verification_token(self, token: Record) -> VerificationToken:
        """Store the grant."""
        record = dataclasses.replace(_record(as_verification_token(token), "token"))
        with self._grants:
            self.tokens[(record.identifier, record.token)] = record
        return record

    async def use_verification_token(self, identifier: str, token: str) -> VerificationToken | None:
        """Take the grant out (whether or not it has expired: the flow judges)."""
        with self._grants:
            return self.tokens.pop((identifier, token), None)

    def _grants_of(self, identifier: str) -> list[tuple[tuple[str, str], VerificationToken]]:
        # The grants of an identifier, oldest first (dicts keep insertion order).
        return [(key, t) for key, t in self.tokens.items() if t.identifier == identifier]

    async def replace_verification_token(self, token: Record) -> VerificationToken:
        """Store the grant, voiding the identifier's others; their wrong codes carry over."""
        record = dataclasses.replace(_record(as_verification_token(token), "token"))
        now = datetime.now(UTC)
        with self._grants:
            earlier = self._grants_of(record.identifier)
            live = [t.attempts for _, t in earlier if t.expires > now]
            record.attempts = max([record.attempts, *live])
            for key, _ in earlier:
                del self.tokens[key]
            self.tokens[(record.identifier, record.token)] = record
        return dataclasses.replace(record)

    async def use_verification_code(
        self, identifier: str, code: str, max_attempts: int
    ) -> VerificationToken | None:
        """Take out the live grant with this code, or count a wrong code against it."""
        now = datetime.now(UTC)
        with self._grants:
            live = [
                (key, t)
                for key, t in self._grants_of(identifier)
                if t.expires > now and t.attempts < max_attempts
            ]
            for key, grant in live:
                if grant.code is not None and hmac.compare_digest(grant.code, code):
                    return self.tokens.pop(key)
            for key, grant in live:  # a wrong code counts; the grant dies at the limit
                grant.attempts += 1
                if grant.attempts >= max_attempts:
                    del self.tokens[key]
            return None

    # -- passkeys ------------------------------------------------------------------------------
    async def create_authenticator(self, authenticator: Record) -> AdapterAuthenticator:
        """Store the passkey; ``ValueError`` for a credential id already stored."""
        record = dataclasses.replace(_record(as_authenticator(authenticator), "authenticator"))
        record.created_at = record.created_at or datetime.now(UTC)
        with self._passkeys:
            if record.credential_id in self.authenticators:
                raise ValueError("duplicate credential id")
            self.authenticators[record.credential_id] = record
        return dataclasses.replace(record)

    async def get_authenticator(self, credential_id: str) -> AdapterAuthenticator | None:
        """The passkey, or ``None``."""
        return self.authenticators.get(credential_id)

    async def list_authenticators_by_user_id(self, user_id: str) -> list[AdapterAuthenticator]:
        """The user's passkeys, oldest first."""
        return [a for a in self.authenticators.values() if a.user_id == user_id]

    async def update_authenticator_counter(
        self, credential_id: str, new_counter: int
    ) -> AdapterAuthenticator | None:
        """Store a counter that went up (or stayed at 0); ``KeyError`` for an unknown id."""
        with self._passkeys:
            record = self.authenticators[credential_id]
            if not (record.counter < new_counter or record.counter == new_counter == 0):
                return None  # it stood still or went back
            record.counter = new_counter
            record.last_used_at = datetime.now(UTC)
            return dataclasses.replace(record)

    async def rename_authenticator(
        self, user_id: str, credential_id: str, name: str
    ) -> AdapterAuthenticator | None:
        """Name the user's passkey (100 characters at most)."""
        with self._passkeys:
            record = self.authenticators.get(credential_id)
            if record is None or record.user_id != user_id:
                return None
            record.name = name[:100]
            return dataclasses.replace(record)

    async def delete_authenticator(
        self, user_id: str, credential_id: str
    ) -> AdapterAuthenticator | None:
        """Remove the user's passkey and its ``webauthn`` account, unless it is the last way in."""
        with self._passkeys:
            record = self.authenticators.get(credential_id)
            if record is None or record.user_id != user_id:
                return None
            if self._count(user_id) <= 1:
                raise LastSignInMethod("this passkey is this user's only way to sign in")
            del self.authenticators[credential_id]
            for key, account in list(self.accounts.items()):
                if self._pairs(account, record):
                    del self.accounts[key]
            return record

    async def create_webauthn_challenge(self, challenge: Record) -> WebAuthnChallenge:
        """Store the challenge (raw; a real store would hash it)."""
        record = dataclasses.replace(_record(as_webauthn_challenge(challenge), "challenge"))
        with self._passkeys:
            if record.challenge in self.challenges:
                raise ValueError("duplicate challenge")
            self.challenges[record.challenge] = record
        return record

    async def use_webauthn_challenge(
        self, challenge: str, ceremony: str, binding: str
    ) -> WebAuthnChallenge | None:
        """Take out the unexpired challenge of this ceremony and binding; else spend nothing."""
        with self._passkeys:
            record = self.challenges.get(challenge)
            if (
                record is None
                or record.ceremony != ceremony
                or not hmac.compare_digest(record.binding.encode(), binding.encode())
                or record.expires <= datetime.now(UTC)
            ):
                return None  # a stranger's attempt spends nothing
            return self.challenges.pop(challenge)

    async def get_user_handle(
        self, user_id: str, create: bool = True, handle: str | None = None
    ) -> str | None:
        """The user's handle, made (*handle*, or a random one) with *create*."""
        with self._passkeys:
            if user_id not in self.users:
                return None
            if user_id not in self.handles and create:
                self.handles[user_id] = handle or _new_handle()
            return self.handles.get(user_id)

    async def get_user_by_handle(self, handle: str) -> AdapterUser | None:
        """The user with this handle, or ``None``."""
        owner = next((u for u, h in self.handles.items() if h == handle), None)
        return self.users.get(owner) if owner is not None else None

    async def update_authenticator_backup_state(self, credential_id: str, backed_up: bool) -> None:
        """Store the passkey's backup state."""
        with self._passkeys:
            record = self.authenticators.get(credential_id)
            if record is not None:
                record.credential_backed_up = bool(backed_up)

    # -- unproven addresses --------------------------------------------------------------------
    async def mark_email_unproven(self, user_id: str) -> None:
        """Mark the user's address as unproven."""
        with self._passkeys:
            self.unproven.add(user_id)

    async def prove_email(
        self, user_id: str, keep_provider: str, keep_provider_account_id: str
    ) -> bool:
        """Take the mark away with the passkeys, other accounts and sessions it covered."""
        with self._passkeys:
            if user_id not in self.unproven:
                return False
            self.unproven.discard(user_id)
            for credential_id, record in list(self.authenticators.items()):
                if record.user_id == user_id:
                    del self.authenticators[credential_id]
            for key, account in list(self.accounts.items()):
                if account.user_id == user_id and key != (keep_provider, keep_provider_account_id):
                    del self.accounts[key]
            for token in [k for k, s in self.sessions.items() if s.user_id == user_id]:
                del self.sessions[token]
            return True

    async def forget_unproven_email(self, user_id: str) -> bool:
        """Take the mark away, nothing else."""
        with self._passkeys:
            if user_id not in self.unproven:
                return False
            self.unproven.discard(user_id)
            return True

    # -- webauth's extensions: accounts --------------------------------------------------------
    async def create_user_and_link_account(
        self, user: Record, account: Record
    ) -> tuple[AdapterUser, AdapterAccount]:
        """Create the user, then link the account to it."""
        created = await self.create_user(user)
        record = dataclasses.replace(_record(as_account(account), "account"), user_id=created.id)
        return created, await self.link_account(record)

    async def update_account(self, account: Record) -> AdapterAccount | None:
        """Replace a known account's tokens; ``None`` when it is unknown."""
        record: AdapterAccount = _record(as_account(account), "account")
        key = (record.provider, record.provider_account_id)
        if key not in self.accounts:
            return None
        record = dataclasses.replace(record, user_id=self.accounts[key].user_id)
        self.accounts[key] = record
        return record

    async def get_account_by_user_id(self, user_id: str, provider: str) -> AdapterAccount | None:
        """The user's account at *provider*, or ``None``."""
        mine = [a for a in self.accounts.values() if a.user_id == user_id]
        return next((a for a in mine if a.provider == provider), None)

    async def refresh_account_tokens(
        self, provider: str, provider_account_id: str, refresh: TokenRefresher
    ) -> AdapterAccount | None:
        """Call *refresh* with the account, one caller at a time, and store its changes."""
        key = (provider, provider_account_id)
        with self._refreshing:
            record = self.accounts.get(key)
            if record is None:
                return None
            changes = refresh(dataclasses.replace(record))
            if changes:
                record = dataclasses.replace(record, **changes)
                self.accounts[key] = record
            return record

    def _linked(self, key: tuple[str, str], account: AdapterAccount) -> LinkedAccount:
        return LinkedAccount(
            id="/".join(key),
            provider=account.provider,
            provider_account_id=account.provider_account_id,
            type=account.type,
            created_at=self.linked_at.get(key),
        )

    async def list_accounts_by_user_id(self, user_id: str) -> list[LinkedAccount]:
        """The user's accounts, oldest first."""
        mine = [(k, a) for k, a in self.accounts.items() if a.user_id == user_id]
        mine.sort(key=lambda item: self.linked_at[item[0]])
        return [self._linked(k, a) for k, a in mine]

    @staticmethod
    def _pairs(account: AdapterAccount, passkey: AdapterAuthenticator) -> bool:
        """Whether *account* is the webauthn account registered with *passkey*."""
        return (
            account.type == "webauthn"
            and account.user_id == passkey.user_id
            and account.provider_account_id == passkey.provider_account_id
        )

    def _count(self, user_id: str) -> int:
        accounts = [a for a in self.accounts.values() if a.user_id == user_id]
        passkeys = [a for a in self.authenticators.values() if a.user_id == user_id]
        lone = [p for p in passkeys if not any(self._pairs(a, p) for a in accounts)]
        return len(accounts) + len(lone)  # these users have no passwords

    async def count_sign_in_methods(self, user_id: str) -> int:
        """Accounts and passkeys (a passkey and its ``webauthn`` account counted once)."""
        return self._count(user_id)

    async def unlink_user_account(
        self, user_id: str, provider: str, provider_account_id: str | None = None
    ) -> LinkedAccount | None:
        """Remove the user's account at *provider* (and its passkey), never the last way in."""
        with self._passkeys:
            mine = [
                (k, a)
                for k, a in self.accounts.items()
                if a.user_id == user_id
                and a.provider == provider
                and provider_account_id in (None, a.provider_account_id)
            ]
            if not mine:
                return None
            if self._count(user_id) <= 1:
                raise LastSignInMethod(f"{provider} is this user's only way to sign in")
            key, account = mine[0]
            linked = self._linked(key, account)
            del self.accounts[key]
            for credential_id, passkey in list(self.authenticators.items()):
                if self._pairs(account, passkey):
                    del self.authenticators[credential_id]
            return linked

    # -- webauth's extensions: session management ----------------------------------------------
    async def list_sessions_by_user_id(
        self, user_id: str, current_session_token: str | None = None
    ) -> Sequence[UserSession]:
        """The user's unexpired sessions, newest first."""
        now = datetime.now(UTC)
        mine = [s for s in self.sessions.values() if s.user_id == user_id and s.expires > now]
        mine.sort(key=lambda s: self.session_info[s.session_token][0], reverse=True)
        return [
            UserSession(
                id=self.session_info[s.session_token][0],
                created_at=self.session_info[s.session_token][1],
                last_extended_at=self.session_info[s.session_token][1],
                expires=s.expires,
                user_agent=s.user_agent or "",
                ip_address=s.ip_address,
                current=s.session_token == current_session_token,
            )
            for s in mine
        ]

    async def delete_session_by_id(self, user_id: str, session_id: object) -> bool:
        """Delete the user's session numbered *session_id*."""
        for token, (number, _) in list(self.session_info.items()):
            session = self.sessions.get(token)
            if number == session_id and session is not None and session.user_id == user_id:
                del self.sessions[token]
                return True
        return False

    async def delete_sessions_by_user_id(
        self, user_id: str, keep_session_token: str | None = None
    ) -> int:
        """Delete the user's sessions but the one kept; how many went."""
        doomed = [
            token
            for token, s in self.sessions.items()
            if s.user_id == user_id and token != keep_session_token
        ]
        for token in doomed:
            del self.sessions[token]
        return len(doomed)

    async def get_user_session_check(
        self, user_id: str
    ) -> UserSessionCheck | Mapping[str, object] | None:
        """Whether the user exists and is active, and its password hash.

        A record without a model instance stands for the ``AUTH_USER_MODEL``
        user of the same key (webauth finds ``request.user`` there): the answer
        is Django's. Otherwise a mapping with Auth.js-style names, as a
        JavaScript-minded adapter might return.
        """
        user = self.users.get(str(user_id))
        if user is None:
            return None
        if user.instance is None:
            check: UserSessionCheck | None = await sync_to_async(
                DjangoAdapter().get_user_session_check
            )(user.id)
            return check
        return {
            "id": user.id,
            "isActive": bool(getattr(user.instance, "is_active", True)),
            "passwordHash": getattr(user.instance, "password", None),
        }

    # -- the second factor -------------------------------------------------------------------
    async def create_second_factor(self, factor: Record) -> SecondFactor:
        """Store a new factor under the next id, unconfirmed."""
        record = dataclasses.replace(_record(as_second_factor(factor), "second factor"))
        record.id = str(next(self._factor_ids))
        record.confirmed, record.last_step = False, None
        record.created_at, record.last_used_at = datetime.now(UTC), None
        self.second_factors[record.id] = record
        return dataclasses.replace(record)

    async def list_second_factors(self, user_id: str) -> list[SecondFactor]:
        """The user's factors, oldest first."""
        mine = [f for f in self.second_factors.values() if f.user_id == str(user_id)]
        return [dataclasses.replace(f) for f in sorted(mine, key=lambda f: int(f.id))]

    async def confirm_second_factor(self, user_id: str, factor_id: str, step: int) -> bool:
        """Confirm the user's unconfirmed factor at *step* (under a lock: one caller wins)."""
        with self._factors:
            found = self.second_factors.get(str(factor_id))
            if found is None or found.user_id != str(user_id) or found.confirmed:
                return False
            found.confirmed, found.last_step, found.last_used_at = True, step, datetime.now(UTC)
            return True

    async def delete_second_factor(self, user_id: str, factor_id: str) -> bool:
        """Remove the user's factor; ``False`` when it is not the user's."""
        return _delete_users(self.second_factors, user_id, factor_id)

    async def use_totp_step(self, factor_id: str, step: int) -> bool:
        """Raise the factor's last step to *step* if it is below (under a lock: one caller wins)."""
        with self._factors:
            found = self.second_factors.get(str(factor_id))
            if found is None or not found.confirmed:
                return False
            if found.last_step is not None and found.last_step >= step:
                return False
            found.last_step, found.last_used_at = step, datetime.now(UTC)
            return True

    async def touch_second_factor(self, factor_id: str) -> bool:
        """Set a confirmed factor's ``last_used_at`` to now."""
        with self._factors:
            found = self.second_factors.get(str(factor_id))
            if found is None or not found.confirmed:
                return False
            found.last_used_at = datetime.now(UTC)
            return True

    async def replace_recovery_codes(self, user_id: str, code_hashes: Sequence[str]) -> None:
        """The user's codes are these now, none spent."""
        with self._factors:
            self.recovery_codes[str(user_id)] = dict.fromkeys(code_hashes, False)

    async def use_recovery_code(self, user_id: str, code_hash: str) -> bool:
        """Spend an unspent code of the user's (under a lock: one caller wins)."""
        with self._factors:
            codes = self.recovery_codes.get(str(user_id), {})
            if codes.get(code_hash) is not False:
                return False
            codes[code_hash] = True
            return True

    async def count_recovery_codes(self, user_id: str) -> int:
        """The user's unspent codes."""
        return sum(not spent for spent in self.recovery_codes.get(str(user_id), {}).values())

    # -- trusted browsers --------------------------------------------------------------------
    async def create_trusted_browser(self, browser: Record) -> TrustedBrowser:
        """Store a trusted browser under the next id."""
        record = dataclasses.replace(_record(as_trusted_browser(browser), "trusted browser"))
        record.id = str(next(self._browser_ids))
        record.created_at, record.last_used_at = datetime.now(UTC), None
        self.trusted_browsers[record.id] = record
        return dataclasses.replace(record)

    async def use_trusted_browser(self, user_id: str, token_hash: str) -> TrustedBrowser | None:
        """The user's unexpired browser with this token hash, its last use set to now."""
        now = datetime.now(UTC)
        for record in self.trusted_browsers.values():
            if record.user_id == str(user_id) and hmac.compare_digest(
                record.token_hash, str(token_hash)
            ):
                if record.expires <= now:
                    return None
                record.last_used_at = now
                return dataclasses.replace(record)
        return None

    async def list_trusted_browsers(self, user_id: str) -> list[TrustedBrowser]:
        """The user's unexpired trusted browsers, newest first."""
        now = datetime.now(UTC)
        mine = [
            b
            for b in self.trusted_browsers.values()
            if b.user_id == str(user_id) and b.expires > now
        ]
        return [dataclasses.replace(b) for b in sorted(mine, key=lambda b: -int(b.id))]

    async def delete_trusted_browser(self, user_id: str, browser_id: str) -> bool:
        """Forget one of the user's trusted browsers."""
        return _delete_users(self.trusted_browsers, user_id, browser_id)

    async def delete_trusted_browsers(self, user_id: str) -> int:
        """Forget all the user's trusted browsers."""
        doomed = [k for k, b in self.trusted_browsers.items() if b.user_id == str(user_id)]
        for key in doomed:
            del self.trusted_browsers[key]
        return len(doomed)

    # -- API keys -------------------------------------------------------------------------------
    async def create_api_key(
        self, key: ApiKeyRecord | Mapping[str, object], max_keys: int
    ) -> ApiKeyRecord | None:
        """Store a key unless its user holds *max_keys* live ones (``None`` then)."""
        record = dataclasses.replace(_record(as_api_key(key), "API key"))
        now = datetime.now(UTC)
        with self._api_keys:
            live = [
                k
                for k in self.api_keys.values()
                if (k.user_id, k.owner) == (record.user_id, record.owner)
                and k.revoked_at is None
                and (k.expires is None or k.expires > now)
            ]
            if len(live) >= max_keys or record.key_id in self.api_keys:
                return None
            record.created_at = record.created_at or now
            self.api_keys[record.key_id] = record
            return record

    async def get_api_key(self, key_id: str) -> tuple[ApiKeyRecord, AdapterUser | None] | None:
        """The key and its user."""
        record = self.api_keys.get(key_id) if isinstance(key_id, str) else None
        if record is not None and record.owner:
            return record, None  # an owner's key: no user
        if record is None or record.user_id not in self.users:
            return None
        return record, self.users[record.user_id]

    async def list_api_keys(self, user_id: str, *, owner: str = "") -> list[ApiKeyRecord]:
        """The user's (or *owner*'s) keys, newest first."""
        holder = ("", owner) if owner else (str(user_id), "")
        mine = [k for k in self.api_keys.values() if (k.user_id, k.owner) == holder]
        return sorted(mine, key=lambda k: k.created_at or datetime.min, reverse=True)

    async def revoke_api_key(self, user_id: str, key_id: str, *, owner: str = "") -> bool:
        """Revoke the user's (or *owner*'s) key; ``False`` if not theirs or revoked already."""
        holder = ("", owner) if owner else (str(user_id), "")
        with self._api_keys:
            record = self.api_keys.get(key_id)
            if record is None or (record.user_id, record.owner) != holder or record.revoked_at:
                return False
            record.revoked_at = datetime.now(UTC)
            return True

    async def touch_api_key(self, key_id: str, now: datetime, every: float) -> None:
        """The key's last use, at most every *every* seconds."""
        with self._api_keys:
            record = self.api_keys.get(key_id)
            last = record.last_used_at if record is not None else None
            if record is not None and (last is None or (now - last).total_seconds() >= every):
                record.last_used_at = now

    # -- the sessions access tokens were minted for ------------------------------------------
    async def register_token_session(self, sid: str, user_id: str, expires: datetime) -> bool:
        """Note a token of *sid* until *expires*; ``False`` once the session has ended."""
        with self._token_sessions:
            row = self.token_sessions.setdefault(sid, [str(user_id), expires, None, True])
            if row[2] is not None:
                return False
            row[1], row[3] = max(row[1], expires), True
            return True

    async def end_token_session(self, sid: str, user_id: str, expires: datetime | None) -> bool:
        """End *sid*; ``True`` if it had tokens and was live (kept until *expires* if new)."""
        now = datetime.now(UTC)
        with self._token_sessions:
            row = self.token_sessions.get(sid)
            if row is None:
                if expires is not None:
                    self.token_sessions[sid] = [str(user_id), expires, now, False]
                return False
            if row[2] is not None:
                return False
            row[2] = now
            return bool(row[3])

    async def end_user_token_sessions(self, user_id: str, keep_sid: str | None = None) -> list[str]:
        """End the user's live sessions with tokens but *keep_sid*; their ids."""
        now = datetime.now(UTC)
        with self._token_sessions:
            ended = [
                sid
                for sid, row in self.token_sessions.items()
                if row[0] == str(user_id) and row[2] is None and sid != keep_sid
            ]
            for sid in ended:
                self.token_sessions[sid][2] = now
            return ended

    async def list_ended_token_sessions(
        self, since: datetime, limit: int, after_sid: str | None = None
    ) -> list[tuple[str, datetime]]:
        """``(sid, ended)`` of sessions with tokens ended at or after *since*, by time and sid;
        at *since* itself after *after_sid* when given."""
        with self._token_sessions:
            rows = [
                (sid, row[2])
                for sid, row in self.token_sessions.items()
                if row[2] is not None
                and row[3]
                and row[2] >= since
                and not (after_sid is not None and row[2] == since and sid <= after_sid)
            ]
        return sorted(rows, key=lambda item: (item[1], item[0]))[: max(0, limit)]
