"""A small in-memory adapter with ``async def`` methods, for the tests.

It proves two things: the conformance suite accepts third-party adapters, and
webauth's flows drive async adapters end to end.
"""

from __future__ import annotations

import dataclasses
import itertools

from webauth.types import (
    AdapterAccount,
    AdapterAuthenticator,
    AdapterSession,
    AdapterUser,
    VerificationToken,
    as_account,
    as_authenticator,
    as_session,
    as_user,
    as_verification_token,
)


class MemoryAdapter:
    def __init__(self, first_id: int = 1) -> None:
        self.users: dict[str, AdapterUser] = {}
        self.accounts: dict[tuple[str, str], AdapterAccount] = {}
        self.sessions: dict[str, AdapterSession] = {}
        self.tokens: dict[tuple[str, str], VerificationToken] = {}
        self.authenticators: dict[str, AdapterAuthenticator] = {}
        self._ids = itertools.count(first_id)

    async def create_user(self, user):
        record = dataclasses.replace(
            as_user({"id": "", **user} if isinstance(user, dict) else user)
        )
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
        return user

    async def link_account(self, account):
        record = as_account(account)
        self.accounts[(record.provider, record.provider_account_id)] = record
        return record

    async def unlink_account(self, provider, provider_account_id):
        return self.accounts.pop((provider, provider_account_id), None)

    async def get_account(self, provider_account_id, provider):
        return self.accounts.get((provider, provider_account_id))

    async def create_session(self, session):
        record = as_session(session)
        self.sessions[record.session_token] = record
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
        record = as_verification_token(token)
        self.tokens[(record.identifier, record.token)] = record
        return record

    async def use_verification_token(self, identifier, token):
        return self.tokens.pop((identifier, token), None)

    async def create_authenticator(self, authenticator):
        record = as_authenticator(authenticator)
        if record.credential_id in self.authenticators:
            raise ValueError("duplicate credential id")
        self.authenticators[record.credential_id] = record
        return record

    async def get_authenticator(self, credential_id):
        return self.authenticators.get(credential_id)

    async def list_authenticators_by_user_id(self, user_id):
        return [a for a in self.authenticators.values() if a.user_id == user_id]

    async def update_authenticator_counter(self, credential_id, new_counter):
        record = self.authenticators[credential_id]
        record.counter = new_counter
        return record
