"""The adapter contract (spec 4.4, plus webauth's extensions) and how webauth calls an adapter.

An adapter is any object with some of the methods of :class:`Adapter`: the 19 of
Auth.js's contract (:data:`ADAPTER_METHODS`) and webauth's extensions
(:data:`EXTENSION_METHODS`), which serve what Auth.js leaves to the application
(storing a new user and its account in one transaction, refreshing provider
tokens, session management, linked accounts, email sign-in codes, passkeys).
Every method is optional and may be a plain function or ``async def``; webauth
calls either from sync or async code (:class:`~webauth.adapters.storage.Storage`,
the typed façade flows and helpers call it through), so each operation has its
async twin for free.
Everything webauth stores or reads goes through these methods: a third-party
adapter gets every feature whose methods it has.

A flow that needs a method the adapter lacks fails with
:class:`~webauth.errors.MissingAdapterMethods` naming the methods (and the
system check ``webauth.E008`` names them at start-up); an exception raised inside
a method is logged and re-raised as :class:`~webauth.errors.AdapterError` (shown
to the user as ``error=Configuration``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datetime import datetime

    from .. import types as records

__all__ = [
    "ADAPTER_METHODS",
    "EXTENSION_METHODS",
    "FLOW_METHODS",
    "Adapter",
    "missing_methods",
]

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

#: The second factor's methods (webauth.mfa): TOTP keys and recovery codes.
_MFA_METHODS = (
    "create_second_factor",
    "list_second_factors",
    "confirm_second_factor",
    "delete_second_factor",
    "use_totp_step",
    "replace_recovery_codes",
    "use_recovery_code",
    "count_recovery_codes",
)
#: "Trust this browser" (``mfa.trust_days``).
_TRUSTED_BROWSER_METHODS = (
    "create_trusted_browser",
    "use_trusted_browser",
    "list_trusted_browsers",
    "delete_trusted_browser",
    "delete_trusted_browsers",
)

#: API keys (``WEBAUTH["api_keys"]``, webauth.api_keys).
_API_KEY_METHODS = (
    "create_api_key",
    "get_api_key",
    "list_api_keys",
    "revoke_api_key",
    "touch_api_key",
)
#: Access tokens (``WEBAUTH["tokens"]``): the sessions tokens were minted for,
#: their end, and the revocation feed (webauth.tokens.ended).
_TOKEN_SESSION_METHODS = (
    "register_token_session",
    "end_token_session",
    "end_user_token_sessions",
    "list_ended_token_sessions",
)

#: webauth's additions to the contract; each is optional like the others.
EXTENSION_METHODS: tuple[str, ...] = (
    "create_user_and_link_account",
    "update_account",
    "get_account_by_user_id",
    "refresh_account_tokens",
    "list_accounts_by_user_id",
    "count_sign_in_methods",
    "unlink_user_account",
    "list_sessions_by_user_id",
    "delete_session_by_id",
    "delete_sessions_by_user_id",
    "replace_verification_token",
    "use_verification_code",
    "create_webauthn_challenge",
    "use_webauthn_challenge",
    "get_user_handle",
    "get_user_by_handle",
    "mark_email_unproven",
    "prove_email",
    "forget_unproven_email",
    "rename_authenticator",
    "delete_authenticator",
    "update_authenticator_backup_state",
    "get_user_session_check",
    *_MFA_METHODS,
    "touch_second_factor",
    *_TRUSTED_BROWSER_METHODS,
    *_TOKEN_SESSION_METHODS,
    *_API_KEY_METHODS,
)

#: The methods each session strategy or helper calls, so a system check (or the
#: helper) can name what is missing before a user hits it. What each kind of
#: provider's sign-in calls is its flow's (``webauth.flows.FLOWS[<type>].adapter_methods``).
FLOW_METHODS: dict[str, tuple[str, ...]] = {
    "database_session": (
        "create_session",
        "get_session_and_user",
        "update_session",
        "delete_session",
    ),
    "jwt_with_adapter": ("get_user",),
    "access_tokens": ("get_account_by_user_id", "refresh_account_tokens"),
    "linked_accounts": (
        "list_accounts_by_user_id",
        "count_sign_in_methods",
        "unlink_user_account",
    ),
    "session_management": (
        "list_sessions_by_user_id",
        "delete_session_by_id",
        "delete_sessions_by_user_id",
    ),
    # The second factor (webauth.mfa) and "trust this browser" (mfa.trust_days).
    "mfa": _MFA_METHODS,
    "trusted_browsers": _TRUSTED_BROWSER_METHODS,
    "token_sessions": _TOKEN_SESSION_METHODS,
    "api_keys": _API_KEY_METHODS,
    # Security keys as a second factor (webauth.mfa.keys): their single-use
    # challenges, and the last-used time of a key that keeps no counter.
    "security_keys": ("create_webauthn_challenge", "use_webauthn_challenge"),
    # A signed-in user's passkeys: list, rename, remove (never the last way in).
    "passkeys": (
        "list_authenticators_by_user_id",
        "rename_authenticator",
        "delete_authenticator",
        "count_sign_in_methods",
    ),
}

#: What :meth:`Adapter.refresh_account_tokens` calls with the locked account:
#: the token fields to store, or ``None`` to store nothing.
TokenRefresher = Callable[["records.AdapterAccount"], Mapping[str, Any] | None]


class Adapter(Protocol):
    """Every method an adapter may implement (all optional; sync or ``async def``).

    Records may be the dataclasses of :mod:`webauth.types` or mappings using
    either Python or Auth.js field names.
    """

    def create_user(self, user: records.AdapterUser) -> records.AdapterUser:
        """Store a new user and return it with its real ``id``."""

    def get_user(self, id: str) -> records.AdapterUser | None:
        """The user with this id, or ``None``."""

    def get_user_by_email(self, email: str) -> records.AdapterUser | None:
        """The user with this email address, or ``None``."""

    def get_user_by_account(
        self, provider: str, provider_account_id: str
    ) -> records.AdapterUser | None:
        """The user linked to this provider account, or ``None``."""

    def update_user(self, user: Mapping[str, object]) -> records.AdapterUser:
        """Apply a partial update (``id`` required) and return the user."""

    def delete_user(self, user_id: str) -> records.AdapterUser | None:
        """Delete the user with its accounts, sessions and authenticators."""

    def link_account(self, account: records.AdapterAccount) -> records.AdapterAccount | None:
        """Store a provider account for a user."""

    def unlink_account(
        self, provider: str, provider_account_id: str
    ) -> records.AdapterAccount | None:
        """Remove a provider account."""

    def get_account(self, provider_account_id: str, provider: str) -> records.AdapterAccount | None:
        """The account, or ``None`` when it does not exist."""

    def create_session(self, session: records.AdapterSession) -> records.AdapterSession:
        """Store a new database session."""

    def get_session_and_user(
        self, session_token: str
    ) -> tuple[records.AdapterSession, records.AdapterUser] | None:
        """The session and its user in one lookup, or ``None``."""

    def update_session(self, session: Mapping[str, object]) -> records.AdapterSession | None:
        """Apply a partial update (``session_token`` required)."""

    def delete_session(self, session_token: str) -> records.AdapterSession | None:
        """Delete the session; return it when it existed."""

    def create_verification_token(
        self, token: records.VerificationToken
    ) -> records.VerificationToken | None:
        """Store a verification token."""

    def use_verification_token(
        self, identifier: str, token: str
    ) -> records.VerificationToken | None:
        """Return the token and delete it, atomically: only one caller ever gets it."""

    def create_authenticator(
        self, authenticator: records.AdapterAuthenticator
    ) -> records.AdapterAuthenticator:
        """Store a WebAuthn credential; raise on failure."""

    def get_authenticator(self, credential_id: str) -> records.AdapterAuthenticator | None:
        """The credential, or ``None`` when it does not exist."""

    def list_authenticators_by_user_id(
        self, user_id: str
    ) -> Sequence[records.AdapterAuthenticator]:
        """The user's credentials (empty when the user is unknown); raise on failure."""

    def update_authenticator_counter(
        self, credential_id: str, new_counter: int
    ) -> records.AdapterAuthenticator | None:
        """Set the signature counter and ``last_used_at``; raise for an unknown id.

        webauth's stricter form of Auth.js's method: store *new_counter* only if
        it is greater than the stored counter, or if both are 0 (authenticators
        that keep no counter, as synced passkeys do), in one atomic step (``UPDATE
        ... WHERE counter < new OR (counter = 0 AND new = 0)``), and return the
        updated record; otherwise store nothing and return ``None``: a counter
        that stands still or goes back means a cloned authenticator or a replayed
        assertion, and the sign-in is refused. Of concurrent callers with the
        same counter, exactly one succeeds (all of them when it is 0/0).
        """

    # -- webauth's extensions ------------------------------------------------------
    def create_user_and_link_account(
        self, user: records.AdapterUser, account: records.AdapterAccount
    ) -> tuple[records.AdapterUser, records.AdapterAccount]:
        """Store a new user and its first account atomically: both or neither.

        Without it, webauth calls ``create_user`` then ``link_account`` and, if
        linking fails, ``delete_user`` on the user it just made.
        """

    def update_account(self, account: records.AdapterAccount) -> records.AdapterAccount | None:
        """Replace the stored tokens of a known account (on each new sign-in with it).

        Without it the tokens stay as first stored, as in Auth.js.
        """

    def get_account_by_user_id(self, user_id: str, provider: str) -> records.AdapterAccount | None:
        """The user's account at *provider*, with its tokens, or ``None``."""

    def refresh_account_tokens(
        self, provider: str, provider_account_id: str, refresh: TokenRefresher
    ) -> records.AdapterAccount | None:
        """Call ``refresh(account)`` with the account locked, and store what it returns.

        *refresh* gets the account as stored at that moment and returns the token
        fields to store (``access_token``, ``refresh_token``, ``expires_at``,
        ``token_type``, ``scope``, ``id_token``; fields left out keep their
        values), or ``None`` when nothing must change. Calls for one account must
        never overlap, across threads and processes (a row lock, for example): a
        caller that arrives during another's refresh waits, then gets the account
        as that one stored it, so that *refresh* sees the new tokens and asks the
        provider nothing. Providers that rotate refresh tokens refuse a second
        refresh with the same one. When *refresh* raises, nothing is stored and
        the exception propagates. Returns the account as stored afterwards, or
        ``None`` when it does not exist.
        """

    def list_accounts_by_user_id(self, user_id: str) -> Sequence[records.LinkedAccount]:
        """The user's provider accounts, oldest first, without tokens."""

    def count_sign_in_methods(self, user_id: str) -> int:
        """How many ways the user has to sign in: accounts, a usable password, passkeys.

        A passkey and the ``webauthn`` account made with it (the account whose
        ``provider_account_id`` is the passkey's) are one way in, counted once.
        """

    def unlink_user_account(
        self, user_id: str, provider: str, provider_account_id: str | None
    ) -> records.LinkedAccount | None:
        """Remove the user's account at *provider* (``None`` when there is none).

        Raise :class:`~webauth.errors.LastSignInMethod` instead when it is the
        user's last way to sign in; the check and the removal are atomic.
        Unlinking a ``webauthn`` account removes its passkey with it.
        """

    def list_sessions_by_user_id(
        self, user_id: str, current_session_token: str | None
    ) -> Sequence[records.UserSession]:
        """The user's unexpired sessions, newest first; mark the one whose token is
        *current_session_token* as ``current``."""

    def delete_session_by_id(self, user_id: str, session_id: object) -> bool:
        """Delete one of the user's sessions by its ``UserSession.id``; ``False`` if none."""

    def delete_sessions_by_user_id(self, user_id: str, keep_session_token: str | None) -> int:
        """Delete the user's sessions except the one with *keep_session_token*; the count."""

    def replace_verification_token(
        self, token: records.VerificationToken
    ) -> records.VerificationToken:
        """Store *token* and void (delete) every earlier token of its identifier.

        The email flow's store: one sign-in request is one grant, and a new
        request voids the earlier ones. The new grant's ``attempts`` starts at the
        highest ``attempts`` of the unexpired grants it voids (or the record's own
        count, if higher), so that resending does not reset the code's attempt
        count; the record is returned with that count. ``token`` and ``code`` are
        already hashed by the flow; store them as ``create_verification_token``
        stores ``token``. Under concurrency the latest grant wins: of two
        replaces racing for one identifier, the one stored last survives
        (where the store cannot order them, both may).
        """

    def use_verification_code(
        self, identifier: str, code: str, max_attempts: int
    ) -> records.VerificationToken | None:
        """Redeem the identifier's grant by its code, or count a wrong code.

        If the identifier's unexpired grant has this ``code`` (hashed by the flow,
        as given to ``replace_verification_token``) and fewer than *max_attempts*
        failed attempts, delete it and return it: of any number of concurrent
        callers (with the code or the grant's link token) exactly one gets it.
        Otherwise count one failed attempt on the identifier's live grant, delete
        the grant once its ``attempts`` reach *max_attempts*, and return ``None``.
        However many callers race, no more than *max_attempts* wrong codes may be
        counted against one grant. An expired grant is never redeemed by code.
        """

    def create_webauthn_challenge(
        self, challenge: records.WebAuthnChallenge
    ) -> records.WebAuthnChallenge:
        """Store a challenge the options route has just sent to a browser; return it.

        ``challenge`` and ``binding`` are raw values (32 random bytes, base64url,
        and the browser's random binding): store them hashed if you can, as
        ``DjangoAdapter`` does.
        """

    def use_webauthn_challenge(
        self, challenge: str, ceremony: str, binding: str
    ) -> records.WebAuthnChallenge | None:
        """Delete and return the challenge, if it is unexpired and matches.

        It matches when it was stored for this *ceremony* (``"register"`` or
        ``"authenticate"``) and this *binding*; compare the binding in constant
        time. Of any number of concurrent callers exactly one gets it (a
        conditional delete: only the caller whose delete removed it). A
        mismatching ceremony or binding returns ``None`` and consumes nothing,
        so a stranger who learned the challenge cannot spend it.
        """

    def get_user_handle(
        self, user_id: str, create: bool = True, handle: str | None = None
    ) -> str | None:
        """The user's WebAuthn user handle; ``None`` when there is none (or no user).

        With *create*, a user who has no handle yet gets one: *handle* when given
        (the one a new user's registration options carried), else the base64url
        form of 64 random bytes. One handle per user, never changed: concurrent
        callers all get the one that was stored.
        """

    def get_user_by_handle(self, handle: str) -> records.AdapterUser | None:
        """The user with this WebAuthn user handle (compared exactly), or ``None``."""

    def update_authenticator_backup_state(self, credential_id: str, backed_up: bool) -> None:
        """Store whether the passkey is backed up now (its assertion's BS flag)."""

    def mark_email_unproven(self, user_id: str) -> None:
        """Mark the user's address as unproven (a passkey registration just made the user).

        Anyone may register a passkey under any address; until the owner proves
        the address, whatever was added to the user may belong to a stranger.
        """

    def prove_email(self, user_id: str, keep_provider: str, keep_provider_account_id: str) -> bool:
        """The user's address has just been proven: take the unproven mark away.

        Return ``False`` when the user carries no mark (nothing else changes).
        Otherwise remove, together with the mark and atomically: the user's
        passkeys, every linked account except the one identified by
        *keep_provider* and *keep_provider_account_id* (compared exactly; the
        account the address was just proven with, if any), a usable password,
        and the user's sessions; then return ``True``. Of concurrent callers at
        most one gets ``True``.
        """

    def forget_unproven_email(self, user_id: str) -> bool:
        """The user no longer has the unproven address: take the mark away, nothing else.

        Their address was changed to one its holder proved (the account
        center's email change); the address nobody proved is no longer the
        user's, so nothing on the user is a stranger's claim to it. Return
        whether there was a mark.
        """

    def rename_authenticator(
        self, user_id: str, credential_id: str, name: str
    ) -> records.AdapterAuthenticator | None:
        """Set the name of the user's passkey; ``None`` when the user has no such passkey."""

    def delete_authenticator(
        self, user_id: str, credential_id: str
    ) -> records.AdapterAuthenticator | None:
        """Remove the user's passkey (and its ``webauthn`` account); ``None`` if none.

        Raise :class:`~webauth.errors.LastSignInMethod` instead when it is the
        user's last way to sign in (``count_sign_in_methods``); the check and the
        removal are atomic, so two concurrent removals cannot leave the user
        with no way in.
        """

    def get_user_session_check(self, user_id: str) -> records.UserSessionCheck | None:
        """What checking a JWT session against its user needs: ``None`` when there is no
        such user, else whether it is active and its stored password hash.

        ``GET``/``POST /auth/session`` calls it instead of :meth:`get_user` when
        nothing in the request has loaded the user yet: a session of a Django user
        ends when the user is gone, inactive or has another password, and this
        answers that without loading the whole user (``DjangoAdapter`` reads three
        columns and makes no model instance). It must find exactly the users
        :meth:`get_user` finds. Without it, or when the adapter's class overrides
        ``get_user`` below the class that defines this method (a subclass adding a
        filter of its own), webauth checks through ``get_user``. Only used while
        ``AUTH_USER_MODEL`` keeps Django's own session auth hash (the HMAC of the
        password hash): a model that overrides ``get_session_auth_hash`` is always
        checked through ``get_user``. For an adapter whose users carry no model
        instance (webauth finds ``request.user`` in ``AUTH_USER_MODEL`` by the
        same key), the answer is about that ``AUTH_USER_MODEL`` user.
        """

    # -- the second factor (webauth.mfa) -------------------------------------------
    def create_second_factor(self, factor: records.SecondFactor) -> records.SecondFactor:
        """Store a new, unconfirmed second factor and return it with its ``id``."""

    def list_second_factors(self, user_id: str) -> list[records.SecondFactor]:
        """The user's second factors, confirmed or not, oldest first."""

    def confirm_second_factor(self, user_id: str, factor_id: str, step: int) -> bool:
        """Confirm the user's unconfirmed factor at TOTP time step *step*, atomically.

        ``True`` for the one request that confirmed it (the step is recorded as
        ``last_step``); ``False`` when it is not the user's, already confirmed,
        or gone.
        """

    def delete_second_factor(self, user_id: str, factor_id: str) -> bool:
        """Remove the user's factor; ``False`` when it is not the user's."""

    def use_totp_step(self, factor_id: str, step: int) -> bool:
        """Record that a code of time step *step* was accepted, if no later one was.

        For a security key, *step* is its signature counter (a cloned key's
        count does not go up, so it is refused the same way).

        Atomic: of any number of concurrent calls with the same *step*, exactly
        one gets ``True`` (one ``UPDATE ... WHERE last_step < step``), so a
        code is accepted at most once. ``False`` for an unconfirmed factor.
        """

    def touch_second_factor(self, factor_id: str) -> bool:
        """Set a confirmed factor's ``last_used_at`` to now; ``False`` for none such.

        For a security key whose authenticator keeps no signature counter
        (it always says 0, so :meth:`use_totp_step` has nothing to raise);
        its challenge being single-use already makes each assertion count once.
        Optional: without it such a key's last use is not shown.
        """

    def replace_recovery_codes(self, user_id: str, code_hashes: Sequence[str]) -> None:
        """Store the user's new recovery codes (their hashes), voiding every earlier one."""

    def use_recovery_code(self, user_id: str, code_hash: str) -> bool:
        """Spend the user's unused code with this hash: ``True`` for exactly one caller."""

    def count_recovery_codes(self, user_id: str) -> int:
        """How many of the user's recovery codes are left unused."""

    def create_trusted_browser(self, browser: records.TrustedBrowser) -> records.TrustedBrowser:
        """Store a browser the user trusts; the record with its ``id``."""

    def use_trusted_browser(self, user_id: str, token_hash: str) -> records.TrustedBrowser | None:
        """The user's unexpired trusted browser with this token hash (its ``last_used_at``
        now set), or ``None``."""

    def list_trusted_browsers(self, user_id: str) -> list[records.TrustedBrowser]:
        """The user's unexpired trusted browsers, newest first."""

    def delete_trusted_browser(self, user_id: str, browser_id: str) -> bool:
        """Forget one of the user's trusted browsers; ``False`` when it is not theirs."""

    def delete_trusted_browsers(self, user_id: str) -> int:
        """Forget every trusted browser of the user; how many there were."""

    # -- API keys (WEBAUTH["api_keys"]) ------------------------------------------------
    def create_api_key(
        self, key: records.ApiKeyRecord | Mapping[str, object], max_keys: int
    ) -> records.ApiKeyRecord | None:
        """Store a new key (its id and secret hash, never the key), unless its user holds
        *max_keys* live keys already: then ``None``. A key whose ``owner`` is set (a
        project-defined owner, docs/api-keys.md) counts against that owner instead,
        and has no user (``user_id`` is ``""``)."""

    def get_api_key(self, key_id: str) -> tuple[records.ApiKeyRecord, Any] | None:
        """The key with this id and its user (ideally the ``AUTH_USER_MODEL`` instance;
        ``None`` for an owner's key), or ``None``: what authenticates a request, in one
        lookup."""

    def list_api_keys(self, user_id: str, *, owner: str = "") -> list[records.ApiKeyRecord]:
        """The user's keys (with *owner*, that owner's), newest first, revoked and expired
        ones too. *owner* is only passed for an owner's keys."""

    def revoke_api_key(self, user_id: str, key_id: str, *, owner: str = "") -> bool:
        """Revoke the user's key (with *owner*, that owner's) at once; ``False`` when it is
        not theirs or revoked already. *owner* is only passed for an owner's key."""

    def touch_api_key(self, key_id: str, now: datetime, every: float) -> None:
        """Set the key's last use to *now*, unless set less than *every* seconds before."""

    # -- the sessions access tokens were minted for (WEBAUTH["tokens"]) ----------------
    def register_token_session(self, sid: str, user_id: str, expires: datetime) -> bool:
        """Keep session *sid* noted at least until *expires* (its tokens' life); ``False``
        once it has ended, and then no token is minted."""

    def end_token_session(self, sid: str, user_id: str, expires: datetime | None) -> bool:
        """End session *sid* (kept as ended until *expires* if no token was minted for it);
        ``True`` if it had tokens and was live."""

    def end_user_token_sessions(self, user_id: str, keep_sid: str | None = None) -> list[str]:
        """End every live session of the user that tokens were minted for, but *keep_sid*;
        the ids ended."""

    def list_ended_token_sessions(
        self, since: datetime, limit: int, after_sid: str | None = None
    ) -> list[tuple[str, datetime]]:
        """``(sid, ended)`` of sessions with tokens that ended at or after *since*, by time
        and then sid, at most *limit*; at *since* itself only sids after *after_sid*
        when given (where the previous full answer stopped)."""


def missing_methods(adapter: object, methods: Iterable[str]) -> list[str]:
    """The names in *methods* that *adapter* does not implement."""
    return [m for m in methods if not callable(getattr(adapter, m, None))]
