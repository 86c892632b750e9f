"""A small in-memory adapter with ``async def`` methods, for the tests.

It proves two things: the conformance suite accepts third-party adapters, and
webauth's flows drive async adapters end to end.
"""

from __future__ import annotations

import dataclasses
import hmac
import itertools
import threading
from datetime import UTC, datetime

from asgiref.sync import sync_to_async

from webauth.adapters.django import DjangoAdapter
from webauth.errors import EmailInUse, LastSignInMethod
from webauth.models import new_user_handle
from webauth.types import (
    AdapterAccount,
    AdapterAuthenticator,
    AdapterSession,
    AdapterUser,
    LinkedAccount,
    UserSession,
    VerificationToken,
    as_account,
    as_authenticator,
    as_session,
    as_user,
    as_verification_token,
    as_webauthn_challenge,
)


class MemoryAdapter:
    def __init__(self, first_id: int = 1) -> None:
        self.users: dict[str, AdapterUser] = {}
        self.accounts: dict[tuple[str, str], AdapterAccount] = {}
        self.sessions: dict[str, AdapterSession] = {}
        self.tokens: dict[tuple[str, str], VerificationToken] = {}
        self.authenticators: dict[str, AdapterAuthenticator] = {}
        self._ids = itertools.count(first_id)
        # Webauth's extensions: when accounts and sessions were stored, and one lock
        # for token refreshes (webauth runs each call in an event loop of its own).
        self.linked_at: dict[tuple[str, str], datetime] = {}
        self.session_info: dict[str, tuple[int, datetime]] = {}
        self._session_ids = itertools.count(1)
        self._refreshing = threading.Lock()
        self._grants = threading.Lock()  # verification tokens: one caller at a time
        # Passkeys: challenges, user handles, counters and removals, one caller at a time.
        self.challenges: dict[str, object] = {}
        self.handles: dict[str, str] = {}  # user id -> handle
        self.unproven: set[str] = set()  # users made by a passkey registration
        self._passkeys = threading.Lock()

    async def create_user(self, user):
        record = dataclasses.replace(
            as_user({"id": "", **user} if isinstance(user, dict) else user)
        )
        if record.email and any(u.email == record.email for u in self.users.values()):
            raise EmailInUse("Another user has this email address")
        record.id = str(next(self._ids))
        self.users[record.id] = record
        return record

    async def get_user(self, id):
        return self.users.get(str(id))

    async def get_user_by_email(self, email):
        return next((u for u in self.users.values() if u.email == email), None)

    async def get_user_by_account(self, provider, provider_account_id):
        account = self.accounts.get((provider, provider_account_id))
        return self.users.get(account.user_id) if account else None

    async def update_user(self, user):
        record = self.users[str(user["id"])]
        for key, value in user.items():
            if key != "id":
                setattr(record, key, value)
        return record

    async def delete_user(self, user_id):
        user = self.users.pop(str(user_id), None)
        for key in [k for k, a in self.accounts.items() if a.user_id == user_id]:
            del self.accounts[key]
        for key in [k for k, s in self.sessions.items() if s.user_id == user_id]:
            del self.sessions[key]
        for key in [k for k, a in self.authenticators.items() if a.user_id == user_id]:
            del self.authenticators[key]
        self.handles.pop(str(user_id), None)
        return user

    async def link_account(self, account):
        record = as_account(account)
        key = (record.provider, record.provider_account_id)
        self.accounts[key] = record
        self.linked_at[key] = datetime.now(UTC)
        return record

    async def unlink_account(self, provider, provider_account_id):
        return self.accounts.pop((provider, provider_account_id), None)

    async def get_account(self, provider_account_id, provider):
        return self.accounts.get((provider, provider_account_id))

    async def create_session(self, session):
        record = as_session(session)
        self.sessions[record.session_token] = record
        self.session_info[record.session_token] = (next(self._session_ids), datetime.now(UTC))
        return record

    async def get_session_and_user(self, session_token):
        session = self.sessions.get(session_token)
        if session is None or session.user_id not in self.users:
            return None
        return {"session": session, "user": self.users[session.user_id]}

    async def update_session(self, session):
        record = self.sessions.get(session["session_token"])
        if record is not None and session.get("expires"):
            record.expires = session["expires"]
        return record

    async def delete_session(self, session_token):
        return self.sessions.pop(session_token, None)

    async def create_verification_token(self, token):
        record = dataclasses.replace(as_verification_token(token))
        with self._grants:
            self.tokens[(record.identifier, record.token)] = record
        return record

    async def use_verification_token(self, identifier, token):
        with self._grants:
            return self.tokens.pop((identifier, token), None)

    # The grants of an identifier, oldest first (dicts keep insertion order).
    def _grants_of(self, identifier):
        return [(key, t) for key, t in self.tokens.items() if t.identifier == identifier]

    async def replace_verification_token(self, token):
        record = dataclasses.replace(as_verification_token(token))
        now = datetime.now(UTC)
        with self._grants:
            earlier = self._grants_of(record.identifier)
            live = [t.attempts for _, t in earlier if t.expires > now]
            record.attempts = max([record.attempts, *live])
            for key, _ in earlier:
                del self.tokens[key]
            self.tokens[(record.identifier, record.token)] = record
        return dataclasses.replace(record)

    async def use_verification_code(self, identifier, code, max_attempts):
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

    async def create_authenticator(self, authenticator):
        record = dataclasses.replace(as_authenticator(authenticator))
        record.created_at = record.created_at or datetime.now(UTC)
        with self._passkeys:
            if record.credential_id in self.authenticators:
                raise ValueError("duplicate credential id")
            self.authenticators[record.credential_id] = record
        return dataclasses.replace(record)

    async def get_authenticator(self, credential_id):
        return self.authenticators.get(credential_id)

    async def list_authenticators_by_user_id(self, user_id):
        return [a for a in self.authenticators.values() if a.user_id == user_id]

    async def update_authenticator_counter(self, credential_id, new_counter):
        with self._passkeys:
            record = self.authenticators[credential_id]  # KeyError when unknown
            if not (record.counter < new_counter or record.counter == new_counter == 0):
                return None  # it stood still or went back
            record.counter = new_counter
            record.last_used_at = datetime.now(UTC)
            return dataclasses.replace(record)

    async def rename_authenticator(self, user_id, credential_id, name):
        with self._passkeys:
            record = self.authenticators.get(credential_id)
            if record is None or record.user_id != user_id:
                return None
            record.name = name[:100]
            return dataclasses.replace(record)

    async def delete_authenticator(self, user_id, credential_id):
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

    async def create_webauthn_challenge(self, challenge):
        record = dataclasses.replace(as_webauthn_challenge(challenge))
        with self._passkeys:
            if record.challenge in self.challenges:
                raise ValueError("duplicate challenge")
            self.challenges[record.challenge] = record
        return record

    async def use_webauthn_challenge(self, challenge, ceremony, binding):
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

    async def get_user_handle(self, user_id, create=True, handle=None):
        with self._passkeys:
            if user_id not in self.users:
                return None
            if user_id not in self.handles and create:
                self.handles[user_id] = handle or new_user_handle()
            return self.handles.get(user_id)

    async def update_authenticator_backup_state(self, credential_id, backed_up):
        with self._passkeys:
            record = self.authenticators.get(credential_id)
            if record is not None:
                record.credential_backed_up = bool(backed_up)

    async def mark_email_unproven(self, user_id):
        with self._passkeys:
            self.unproven.add(user_id)

    async def prove_email(self, user_id, keep_provider, keep_provider_account_id):
        with self._passkeys:
            if user_id not in self.unproven:
                return False
            self.unproven.discard(user_id)
            for key, record in list(self.authenticators.items()):
                if record.user_id == user_id:
                    del self.authenticators[key]
            for key, account in list(self.accounts.items()):
                if account.user_id == user_id and key != (keep_provider, keep_provider_account_id):
                    del self.accounts[key]
            for key in [k for k, s in self.sessions.items() if s.user_id == user_id]:
                del self.sessions[key]
            return True

    async def forget_unproven_email(self, user_id):
        with self._passkeys:
            if user_id not in self.unproven:
                return False
            self.unproven.discard(user_id)
            return True

    async def get_user_by_handle(self, handle):
        owner = next((u for u, h in self.handles.items() if h == handle), None)
        return self.users.get(owner) if owner is not None else None

    # -- webauth's extensions ----------------------------------------------------------
    async def create_user_and_link_account(self, user, account):
        created = await self.create_user(user)
        record = dataclasses.replace(as_account(account), user_id=created.id)
        return created, await self.link_account(record)

    async def update_account(self, account):
        record = as_account(account)
        key = (record.provider, record.provider_account_id)
        if key not in self.accounts:
            return None
        record = dataclasses.replace(record, user_id=self.accounts[key].user_id)
        self.accounts[key] = record
        return record

    async def get_account_by_user_id(self, user_id, provider):
        mine = [a for a in self.accounts.values() if a.user_id == user_id]
        return next((a for a in mine if a.provider == provider), None)

    async def refresh_account_tokens(self, provider, provider_account_id, refresh):
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

    def _linked(self, key, account):
        return LinkedAccount(
            id="/".join(key),
            provider=account.provider,
            provider_account_id=account.provider_account_id,
            type=account.type,
            created_at=self.linked_at.get(key),
        )

    async def list_accounts_by_user_id(self, user_id):
        mine = [(k, a) for k, a in self.accounts.items() if a.user_id == user_id]
        mine.sort(key=lambda item: self.linked_at[item[0]])
        return [self._linked(k, a) for k, a in mine]

    @staticmethod
    def _pairs(account, passkey):
        """Whether *account* is the webauthn account registered with *passkey*."""
        return (
            account.type == "webauthn"
            and account.user_id == passkey.user_id
            and account.provider_account_id == passkey.provider_account_id
        )

    def _count(self, user_id):
        accounts = [a for a in self.accounts.values() if a.user_id == user_id]
        passkeys = [a for a in self.authenticators.values() if a.user_id == user_id]
        lone = [p for p in passkeys if not any(self._pairs(a, p) for a in accounts)]
        return len(accounts) + len(lone)  # these users have no passwords

    async def count_sign_in_methods(self, user_id):
        return self._count(user_id)

    async def unlink_user_account(self, user_id, provider, provider_account_id=None):
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

    async def list_sessions_by_user_id(self, user_id, current_session_token=None):
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

    async def delete_session_by_id(self, user_id, session_id):
        for token, (number, _) in list(self.session_info.items()):
            session = self.sessions.get(token)
            if number == session_id and session is not None and session.user_id == user_id:
                del self.sessions[token]
                return True
        return False

    async def delete_sessions_by_user_id(self, user_id, keep_session_token=None):
        doomed = [
            token
            for token, s in self.sessions.items()
            if s.user_id == user_id and token != keep_session_token
        ]
        for token in doomed:
            del self.sessions[token]
        return len(doomed)

    async def get_user_session_check(self, user_id):
        user = self.users.get(str(user_id))
        if user is None:
            return None
        if user.instance is None:
            # These users stand for AUTH_USER_MODEL's of the same key (webauth finds
            # request.user there): whether they are active, and their passwords, are Django's.
            return await sync_to_async(DjangoAdapter().get_user_session_check)(user.id)
        # A mapping with Auth.js-style names, as a JavaScript-minded adapter might return.
        return {
            "id": user.id,
            "isActive": bool(getattr(user.instance, "is_active", True)),
            "passwordHash": getattr(user.instance, "password", None),
        }
