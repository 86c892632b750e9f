"""The typed façade every flow and helper stores and reads through: :class:`Storage`.

One method per entry of the adapter contract (:data:`~webauth.adapters.base.ADAPTER_METHODS`
and :data:`~webauth.adapters.base.EXTENSION_METHODS`), each taking the
contract's parameters and returning the records of :mod:`webauth.types`
(whatever the adapter returned, a dataclass or a mapping with either spelling,
is converted by the ``as_*`` readers here), so that the type checker sees what
each call gives back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from asgiref.sync import sync_to_async
from django.core.exceptions import SynchronousOnlyOperation

from ..errors import AdapterError, AuthError, MissingAdapter, MissingAdapterMethods
from ..types import (
    as_account,
    as_api_key,
    as_authenticator,
    as_second_factor,
    as_session,
    as_session_and_user,
    as_trusted_browser,
    as_user,
    as_user_session_check,
    as_verification_token,
    as_webauthn_challenge,
)
from ..utils import call, is_async, is_awaitable
from .base import missing_methods

if TYPE_CHECKING:
    from datetime import datetime

    from .. import types as records
    from ..logger import AuthLogger
    from .base import TokenRefresher

__all__ = ["Storage"]

_NO_ADAPTER = "An adapter is required for this operation; set WEBAUTH['adapter']"


class Storage:
    """The adapter, called the way every flow and helper needs it called.

    Each method calls the adapter's method of the same name: it checks the
    method exists (:class:`~webauth.errors.MissingAdapterMethods` naming it
    otherwise), logs the call at debug level (the method name only: arguments
    carry tokens), runs a plain or an ``async def`` method from sync code
    (:func:`webauth.utils.call`), and converts the answer into the records of
    :mod:`webauth.types`. An exception raised inside the adapter is logged and
    re-raised as :class:`~webauth.errors.AdapterError`;
    :class:`~webauth.errors.AuthError` (``EmailInUse``, ``LastSignInMethod``...)
    and Django's ``SynchronousOnlyOperation`` pass through unchanged.

    **The fallback.** ``config.storage`` (:attr:`webauth.conf.Config.storage`)
    is the one instance everything uses. When ``WEBAUTH["adapter"]`` is set it
    calls that adapter and :attr:`configured` is true. When it is not, it calls
    :class:`~webauth.adapters.django.DjangoAdapter` on the default database and
    :attr:`configured` is false: ``request.user``, linked accounts, user
    sessions, access tokens, passkey management and the account center read the
    project's own tables through the same seam. The sign-in flows must store
    nothing without a configured adapter (as in Auth.js): they call
    :meth:`require` first, which refuses the fallback.

    ``Storage(None, logger)`` is storage without an adapter: :meth:`has` is
    false and every call raises :class:`~webauth.errors.MissingAdapterMethods`.
    """

    __slots__ = ("adapter", "configured", "logger")

    def __init__(self, adapter: Any, logger: AuthLogger, *, configured: bool | None = None) -> None:
        #: The adapter object called (``DjangoAdapter`` for the fallback).
        self.adapter = adapter
        self.logger = logger
        #: Whether *adapter* is the configured one (``False`` for the fallback).
        self.configured = adapter is not None if configured is None else configured

    # -- asking about methods ---------------------------------------------------------------
    def has(self, method: str) -> bool:
        """Whether the adapter implements *method* (the fallback's answer when not configured)."""
        return self.adapter is not None and callable(getattr(self.adapter, method, None))

    def require(self, *methods: str, feature: str | None = None) -> Storage:
        """This storage, if a configured adapter has all of *methods*: it refuses the fallback.

        Without a configured adapter, or with one that lacks some of *methods*,
        raises :class:`~webauth.errors.MissingAdapterMethods` naming them; with
        *feature* (``"Email login"``), raises :class:`~webauth.errors.MissingAdapter`
        saying what *feature* lacks instead, as Auth.js's "Email login requires
        an adapter" (system check ``webauth.E008`` says the same at start-up).
        """
        if feature is not None:
            if not self.configured:
                raise MissingAdapter(f"{feature} requires an adapter")
            missing = missing_methods(self.adapter, methods)
            if missing:
                raise MissingAdapter(
                    f"{feature} requires an adapter with {', '.join(missing)} "
                    f"({type(self.adapter).__name__} lacks them)"
                )
            return self
        if not self.configured:
            raise MissingAdapterMethods(_NO_ADAPTER)
        missing = missing_methods(self.adapter, methods)
        if missing:
            raise MissingAdapterMethods(
                f"Required adapter methods were missing: {', '.join(missing)}"
            )
        return self

    # -- calling ---------------------------------------------------------------------------
    def _missing(self, name: str) -> MissingAdapterMethods:
        if self.adapter is None:
            return MissingAdapterMethods(_NO_ADAPTER)
        return MissingAdapterMethods(f"Required adapter methods were missing: {name}")

    def _failed(self, name: str, exc: Exception) -> AdapterError:
        error = AdapterError(f"adapter_{name} failed", cause={"err": exc})
        self.logger.error(error)
        return error

    def _call(self, name: str, *args: object, **kwargs: object) -> Any:
        """Call ``adapter.<name>(*args, **kwargs)`` from sync code; the raw answer."""
        fn = getattr(self.adapter, name, None)
        if not callable(fn):
            raise self._missing(name)
        if self.logger.debug_enabled:
            self.logger.debug(f"adapter_{name}")
        try:
            return call(fn, *args, **kwargs)
        except (AuthError, SynchronousOnlyOperation):
            raise
        except Exception as exc:
            raise self._failed(name, exc) from exc

    async def acall(self, name: str, *args: object) -> Any:
        """Call ``adapter.<name>(*args)`` from async code; the raw answer."""
        fn = getattr(self.adapter, name, None)
        if not callable(fn):
            raise self._missing(name)
        if self.logger.debug_enabled:
            self.logger.debug(f"adapter_{name}")
        try:
            if is_async(fn):
                return await fn(*args)
            result = await sync_to_async(fn)(*args)
            if is_awaitable(result):
                result = await result
            return result
        except AuthError:
            raise
        except Exception as exc:
            raise self._failed(name, exc) from exc

    # -- Auth.js's 19 methods -----------------------------------------------------------------
    def create_user(self, user: records.AdapterUser) -> records.AdapterUser | None:
        """Store a new user; the stored user with its real ``id``."""
        return as_user(self._call("create_user", user))

    def get_user(self, id: str) -> records.AdapterUser | None:
        """The user with this id, or ``None``."""
        return as_user(self._call("get_user", id))

    def get_user_by_email(self, email: str) -> records.AdapterUser | None:
        """The user with this (canonical) email address, or ``None``."""
        return as_user(self._call("get_user_by_email", email))

    def get_user_by_account(
        self, provider: str, provider_account_id: str
    ) -> records.AdapterUser | None:
        """The user linked to this provider account, or ``None``."""
        return as_user(self._call("get_user_by_account", provider, provider_account_id))

    def update_user(self, user: Mapping[str, object]) -> records.AdapterUser | None:
        """Apply a partial update (``id`` required); the updated user."""
        return as_user(self._call("update_user", user))

    def delete_user(self, user_id: str) -> records.AdapterUser | None:
        """Delete the user with its accounts, sessions and authenticators."""
        return as_user(self._call("delete_user", user_id))

    def link_account(self, account: records.AdapterAccount) -> records.AdapterAccount | None:
        """Store a provider account for a user; the stored account, if the adapter returns it."""
        return as_account(self._call("link_account", account))

    def unlink_account(
        self, provider: str, provider_account_id: str
    ) -> records.AdapterAccount | None:
        """Remove a provider account; the removed account, if the adapter returns it."""
        return as_account(self._call("unlink_account", provider, provider_account_id))

    def get_account(self, provider_account_id: str, provider: str) -> records.AdapterAccount | None:
        """The account, or ``None`` when it does not exist."""
        return as_account(self._call("get_account", provider_account_id, provider))

    def create_session(self, session: records.AdapterSession) -> records.AdapterSession | None:
        """Store a new database session."""
        return as_session(self._call("create_session", session))

    def get_session_and_user(
        self, session_token: str
    ) -> tuple[records.AdapterSession, records.AdapterUser] | None:
        """The session and its user in one lookup, or ``None``."""
        return as_session_and_user(self._call("get_session_and_user", session_token))

    def update_session(self, session: Mapping[str, object]) -> records.AdapterSession | None:
        """Apply a partial update (``session_token`` required)."""
        return as_session(self._call("update_session", session))

    def delete_session(self, session_token: str) -> records.AdapterSession | None:
        """Delete the session; the deleted session, when it existed."""
        return as_session(self._call("delete_session", session_token))

    def create_verification_token(
        self, token: records.VerificationToken
    ) -> records.VerificationToken | None:
        """Store a verification token."""
        return as_verification_token(self._call("create_verification_token", token))

    def use_verification_token(
        self, identifier: str, token: str
    ) -> records.VerificationToken | None:
        """The token, deleted atomically (only one caller ever gets it), or ``None``."""
        return as_verification_token(self._call("use_verification_token", identifier, token))

    def create_authenticator(
        self, authenticator: records.AdapterAuthenticator
    ) -> records.AdapterAuthenticator | None:
        """Store a WebAuthn credential (the adapter raises on failure)."""
        return as_authenticator(self._call("create_authenticator", authenticator))

    def get_authenticator(self, credential_id: str) -> records.AdapterAuthenticator | None:
        """The credential, or ``None`` when it does not exist."""
        return as_authenticator(self._call("get_authenticator", credential_id))

    def list_authenticators_by_user_id(self, user_id: str) -> list[records.AdapterAuthenticator]:
        """The user's credentials (empty when the user is unknown)."""
        records = self._call("list_authenticators_by_user_id", user_id) or ()
        return [r for r in map(as_authenticator, records) if r is not None]

    def update_authenticator_counter(
        self, credential_id: str, new_counter: int
    ) -> records.AdapterAuthenticator | None:
        """Store a signature counter that went up (or stayed 0/0); ``None`` when it did not."""
        return as_authenticator(
            self._call("update_authenticator_counter", credential_id, new_counter)
        )

    # -- webauth's extensions --------------------------------------------------------------
    def create_user_and_link_account(
        self, user: records.AdapterUser, account: records.AdapterAccount
    ) -> tuple[records.AdapterUser | None, records.AdapterAccount | None]:
        """Store a new user and its first account atomically: both or neither."""
        created, linked = self._call("create_user_and_link_account", user, account)
        return as_user(created), as_account(linked)

    def update_account(self, account: records.AdapterAccount) -> records.AdapterAccount | None:
        """Replace the stored tokens of a known account; ``None`` when it is unknown."""
        return as_account(self._call("update_account", account))

    def get_account_by_user_id(self, user_id: str, provider: str) -> records.AdapterAccount | None:
        """The user's account at *provider*, with its tokens, or ``None``."""
        return as_account(self._call("get_account_by_user_id", user_id, provider))

    def refresh_account_tokens(
        self, provider: str, provider_account_id: str, refresh: TokenRefresher
    ) -> records.AdapterAccount | None:
        """Call ``refresh(account)`` with the account locked and store what it returns."""
        return as_account(
            self._call("refresh_account_tokens", provider, provider_account_id, refresh)
        )

    def list_accounts_by_user_id(self, user_id: str) -> list[records.LinkedAccount]:
        """The user's provider accounts, oldest first, without tokens."""
        return list(self._call("list_accounts_by_user_id", user_id))

    def count_sign_in_methods(self, user_id: str) -> int:
        """How many ways the user has to sign in: accounts, a usable password, passkeys."""
        return int(self._call("count_sign_in_methods", user_id))

    def unlink_user_account(
        self, user_id: str, provider: str, provider_account_id: str | None
    ) -> records.LinkedAccount | None:
        """Remove the user's account at *provider*; ``None`` when there is none.

        The adapter raises :class:`~webauth.errors.LastSignInMethod` when it is
        the user's last way in.
        """
        removed: records.LinkedAccount | None = self._call(
            "unlink_user_account", user_id, provider, provider_account_id
        )
        return removed

    def list_sessions_by_user_id(
        self, user_id: str, current_session_token: str | None
    ) -> list[records.UserSession]:
        """The user's unexpired sessions, newest first, ``current`` marking the token's."""
        return list(self._call("list_sessions_by_user_id", user_id, current_session_token))

    def delete_session_by_id(self, user_id: str, session_id: object) -> bool:
        """Delete one of the user's sessions by its ``UserSession.id``; ``False`` if none."""
        return bool(self._call("delete_session_by_id", user_id, session_id))

    def delete_sessions_by_user_id(self, user_id: str, keep_session_token: str | None) -> int:
        """Delete the user's sessions except the one with *keep_session_token*; the count."""
        return int(self._call("delete_sessions_by_user_id", user_id, keep_session_token) or 0)

    def replace_verification_token(
        self, token: records.VerificationToken
    ) -> records.VerificationToken | None:
        """Store *token* and void every earlier token of its identifier."""
        return as_verification_token(self._call("replace_verification_token", token))

    def use_verification_code(
        self, identifier: str, code: str, max_attempts: int
    ) -> records.VerificationToken | None:
        """Redeem the identifier's grant by its (hashed) code, or count a wrong code."""
        return as_verification_token(
            self._call("use_verification_code", identifier, code, max_attempts)
        )

    def create_webauthn_challenge(
        self, challenge: records.WebAuthnChallenge
    ) -> records.WebAuthnChallenge | None:
        """Store a challenge the options route has just sent to a browser."""
        return as_webauthn_challenge(self._call("create_webauthn_challenge", challenge))

    def use_webauthn_challenge(
        self, challenge: str, ceremony: str, binding: str
    ) -> records.WebAuthnChallenge | None:
        """Delete and return the challenge, if it is unexpired and matches."""
        return as_webauthn_challenge(
            self._call("use_webauthn_challenge", challenge, ceremony, binding)
        )

    def get_user_handle(
        self, user_id: str, create: bool = True, handle: str | None = None
    ) -> str | None:
        """The user's WebAuthn user handle (made with *create*); ``None`` when there is none."""
        found = self._call("get_user_handle", user_id, create, handle)
        return found if isinstance(found, str) and found else None

    def get_user_by_handle(self, handle: str) -> records.AdapterUser | None:
        """The user with this WebAuthn user handle, or ``None``."""
        return as_user(self._call("get_user_by_handle", handle))

    def mark_email_unproven(self, user_id: str) -> None:
        """Mark the user's address as unproven (a passkey registration just made the user)."""
        self._call("mark_email_unproven", user_id)

    def prove_email(self, user_id: str, keep_provider: str, keep_provider_account_id: str) -> bool:
        """The user's address has just been proven; whether that removed ways in."""
        return bool(self._call("prove_email", user_id, keep_provider, keep_provider_account_id))

    def forget_unproven_email(self, user_id: str) -> bool:
        """Take the unproven mark away (the address changed); whether there was one."""
        return bool(self._call("forget_unproven_email", user_id))

    def rename_authenticator(
        self, user_id: str, credential_id: str, name: str
    ) -> records.AdapterAuthenticator | None:
        """Set the name of the user's passkey; ``None`` when the user has no such passkey."""
        return as_authenticator(self._call("rename_authenticator", user_id, credential_id, name))

    def delete_authenticator(
        self, user_id: str, credential_id: str
    ) -> records.AdapterAuthenticator | None:
        """Remove the user's passkey; ``None`` if none, ``LastSignInMethod`` if the last way in."""
        return as_authenticator(self._call("delete_authenticator", user_id, credential_id))

    def update_authenticator_backup_state(self, credential_id: str, backed_up: bool) -> None:
        """Store whether the passkey is backed up now."""
        self._call("update_authenticator_backup_state", credential_id, backed_up)

    def get_user_session_check(self, user_id: str) -> records.UserSessionCheck | None:
        """Whether the user exists, is active, and its password hash, or ``None``."""
        return as_user_session_check(self._call("get_user_session_check", user_id))

    # -- the second factor (webauth.mfa) -----------------------------------------------
    def create_second_factor(self, factor: records.SecondFactor) -> records.SecondFactor:
        """Store a new, unconfirmed second factor; the stored record (with its ``id``)."""
        stored = as_second_factor(self._call("create_second_factor", factor))
        if stored is None:
            raise AdapterError("create_second_factor returned nothing")
        return stored

    def list_second_factors(self, user_id: str) -> list[records.SecondFactor]:
        """The user's second factors, confirmed or not."""
        found = self._call("list_second_factors", user_id) or []
        return [f for f in (as_second_factor(item) for item in found) if f is not None]

    def confirm_second_factor(self, user_id: str, factor_id: str, step: int) -> bool:
        """Confirm the user's unconfirmed factor at *step*: ``True`` for exactly one caller."""
        return bool(self._call("confirm_second_factor", user_id, factor_id, step))

    def delete_second_factor(self, user_id: str, factor_id: str) -> bool:
        """Remove the user's factor; ``False`` when it is not the user's."""
        return bool(self._call("delete_second_factor", user_id, factor_id))

    def use_totp_step(self, factor_id: str, step: int) -> bool:
        """Accept a code of time step *step* once: ``True`` for exactly one caller."""
        return bool(self._call("use_totp_step", factor_id, step))

    def touch_second_factor(self, factor_id: str) -> bool:
        """Note that a confirmed factor was used now (optional: ``False`` without it)."""
        if not self.has("touch_second_factor"):
            return False
        return bool(self._call("touch_second_factor", factor_id))

    def replace_recovery_codes(self, user_id: str, code_hashes: Sequence[str]) -> None:
        """Store the user's new recovery codes (hashes), voiding the earlier ones."""
        self._call("replace_recovery_codes", user_id, list(code_hashes))

    def use_recovery_code(self, user_id: str, code_hash: str) -> bool:
        """Spend the unused code with this hash: ``True`` for exactly one caller."""
        return bool(self._call("use_recovery_code", user_id, code_hash))

    def count_recovery_codes(self, user_id: str) -> int:
        """How many of the user's recovery codes are left."""
        return int(self._call("count_recovery_codes", user_id) or 0)

    # -- trusted browsers ----------------------------------------------------------------
    def create_trusted_browser(self, browser: records.TrustedBrowser) -> records.TrustedBrowser:
        """Store a browser the user trusts; the stored record."""
        stored = as_trusted_browser(self._call("create_trusted_browser", browser))
        if stored is None:
            raise AdapterError("create_trusted_browser returned nothing")
        return stored

    def use_trusted_browser(self, user_id: str, token_hash: str) -> records.TrustedBrowser | None:
        """The user's unexpired trusted browser with this token hash, or ``None``."""
        return as_trusted_browser(self._call("use_trusted_browser", user_id, token_hash))

    def list_trusted_browsers(self, user_id: str) -> list[records.TrustedBrowser]:
        """The user's unexpired trusted browsers, newest first."""
        found = self._call("list_trusted_browsers", user_id) or []
        return [b for b in (as_trusted_browser(item) for item in found) if b is not None]

    def delete_trusted_browser(self, user_id: str, browser_id: str) -> bool:
        """Forget one of the user's trusted browsers."""
        return bool(self._call("delete_trusted_browser", user_id, browser_id))

    def delete_trusted_browsers(self, user_id: str) -> int:
        """Forget every trusted browser of the user; how many."""
        return int(self._call("delete_trusted_browsers", user_id) or 0)

    # -- API keys -------------------------------------------------------------------------------
    def create_api_key(
        self, key: records.ApiKeyRecord, max_keys: int
    ) -> records.ApiKeyRecord | None:
        """Store a new key; ``None`` when its user holds *max_keys* live keys."""
        return as_api_key(self._call("create_api_key", key, max_keys))

    def get_api_key(self, key_id: str) -> tuple[records.ApiKeyRecord, Any] | None:
        """The key and its user, or ``None``."""
        found = self._call("get_api_key", key_id)
        if found is None:
            return None
        record, user = found
        key = as_api_key(record)
        return (key, user) if key is not None else None

    def list_api_keys(self, user_id: str, *, owner: str = "") -> list[records.ApiKeyRecord]:
        """The user's (or *owner*'s) keys, newest first."""
        # *owner* is passed only when set: an adapter without owners' keys still works.
        extra = {"owner": owner} if owner else {}
        rows = self._call("list_api_keys", user_id, **extra) or ()
        return [key for key in (as_api_key(row) for row in rows) if key is not None]

    def revoke_api_key(self, user_id: str, key_id: str, *, owner: str = "") -> bool:
        """Revoke the user's (or *owner*'s) key; whether it was live and theirs."""
        extra = {"owner": owner} if owner else {}
        return bool(self._call("revoke_api_key", user_id, key_id, **extra))

    def touch_api_key(self, key_id: str, now: datetime, every: float) -> None:
        """The key's last use, written at most every *every* seconds."""
        self._call("touch_api_key", key_id, now, every)

    def delete_owner_api_keys(self, owner: str) -> int:
        """Delete *owner*'s keys (its row is gone); ``0`` from an adapter without the method."""
        if not callable(getattr(self.adapter, "delete_owner_api_keys", None)):
            return 0
        return int(self._call("delete_owner_api_keys", owner) or 0)

    # -- the sessions access tokens were minted for ------------------------------------------
    def register_token_session(self, sid: str, user_id: str, expires: datetime) -> bool:
        """Note a token of *sid* until *expires*; ``False`` once the session has ended."""
        return bool(self._call("register_token_session", sid, user_id, expires))

    def end_token_session(self, sid: str, user_id: str, expires: datetime | None) -> bool:
        """End *sid*; whether it had tokens and was live."""
        return bool(self._call("end_token_session", sid, user_id, expires))

    def end_user_token_sessions(self, user_id: str, keep_sid: str | None = None) -> list[str]:
        """End the user's live sessions with tokens but *keep_sid*; their ids."""
        return [str(sid) for sid in self._call("end_user_token_sessions", user_id, keep_sid) or ()]

    def list_ended_token_sessions(
        self, since: datetime, limit: int, after_sid: str | None = None
    ) -> list[tuple[str, datetime]]:
        """``(sid, ended)`` of sessions with tokens ended at or after *since*, by time and sid."""
        rows = self._call("list_ended_token_sessions", since, limit, after_sid) or ()
        return [(str(sid), ended) for sid, ended in rows]
