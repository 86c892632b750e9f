"""Which user a provider account signs in (Auth.js's ``handleLoginOrRegister`` for OAuth).

* A known account signs its user in; its stored tokens are replaced by the new
  ones (Auth.js never updates them). Signed in as someone else: refused.
* An unknown account is linked to the signed-in user, if any.
* Otherwise, a user with the same email (its canonical form, compared
  exactly: :mod:`webauth.identity`) refuses the sign-in
  (``OAuthAccountNotLinked``) unless the provider sets
  ``allow_dangerous_email_account_linking``; else a new user is created and the
  account linked to it, both or neither. A user that another request gives the
  address meanwhile (the adapter's ``EmailInUse``) counts as one found.
* A user a passkey registration made under an address nobody had proven
  (``mark_email_unproven``) loses every earlier way in when the address is
  proven, by an email sign-in or by linking through a provider trusted with
  ``allow_dangerous_email_account_linking`` (:func:`prove_address`).

Everything goes through the adapter.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import AuthError, EmailInUse, OAuthAccountNotLinked
from ..events import emit
from ..types import AdapterAccount, AdapterUser
from ..typing_aliases import SignalSender

if TYPE_CHECKING:
    from ..adapters.storage import Storage
    from ..state import AuthState

__all__ = [
    "LINKING_METHODS",
    "UNPROVEN_EMAIL_PROVEN",
    "LoginResult",
    "create_and_link",
    "current_user",
    "login_or_register",
    "prove_address",
]

#: The warning logged when proving an address removed a stranger's ways in.
UNPROVEN_EMAIL_PROVEN = "unproven-email-proven"

#: The adapter methods these rules need.
LINKING_METHODS = ("get_user_by_account", "get_user_by_email", "create_user", "link_account")


@dataclass(slots=True)
class LoginResult:
    """The user to sign in, the stored account, and whether the user is new."""

    user: AdapterUser
    account: AdapterAccount
    is_new_user: bool
    #: The account was linked to the user the request was signed in as.
    linked_to_session: bool = False
    #: Linking by the address proved it, which removed a stranger's ways in
    #: (:func:`prove_address`).
    proved_address: bool = False


def current_user(state: AuthState) -> AdapterUser | None:
    """The user the request is already signed in as (before this sign-in), if any.

    Only the cookie is read and the user looked up: no callback runs and a
    database session is not extended, since this is not a read of the session.
    A session that has ended (expired, its user inactive, the password
    changed) has no user.
    """
    return state.sessions.current_user(
        state.config, state.session_token, state.cookies["session_token"].name
    )


def _update_tokens(storage: Storage, account: AdapterAccount) -> AdapterAccount:
    if storage.has("update_account"):
        updated = storage.update_account(account)
        if updated is not None:
            return updated
    return account


def login_or_register(
    state: AuthState,
    *,
    user_data: dict[str, Any],
    account: AdapterAccount,
    allow_email_linking: bool,
    known: AdapterUser | None,
) -> LoginResult:
    """Apply the linking rules; raises :class:`OAuthAccountNotLinked`.

    *known* is the user the adapter already links to this account
    (``get_user_by_account``, looked up once by the caller before the
    ``sign_in`` callback). The events of what changed (``create_user``,
    ``link_account``, ``update_user`` when linking proved an address) are sent
    once the rules are applied, in the order the changes were made.
    """
    config = state.config
    storage = config.storage.require(*LINKING_METHODS)
    signed_in = current_user(state)
    result, changes = _apply_rules(
        storage, signed_in, user_data, account, allow_email_linking, known
    )
    if result.proved_address:
        config.logger.warn(UNPROVEN_EMAIL_PROVEN)
    # As documented in webauth.signals: sender = the provider id, and the request.
    signal: SignalSender = {"sender": account.provider, "request": state.request}
    for event, details in changes:
        emit(config, event, **signal, **details)
    return result


#: What applying the rules changed, in order: ``(event, its arguments)``.
_Changes = list[tuple[str, dict[str, Any]]]


def _apply_rules(
    storage: Storage,
    signed_in: AdapterUser | None,
    user_data: dict[str, Any],
    account: AdapterAccount,
    allow_email_linking: bool,
    known: AdapterUser | None,
) -> tuple[LoginResult, _Changes]:
    if known is not None:
        if signed_in is not None and signed_in.id != known.id:
            raise OAuthAccountNotLinked("The account is already associated with another user")
        account.user_id = known.id
        updated = _update_tokens(storage, account)
        return LoginResult(user=known, account=updated, is_new_user=False), []

    if signed_in is not None:
        account.user_id = signed_in.id
        linked = storage.link_account(account) or account
        result = LoginResult(
            user=signed_in, account=linked, is_new_user=False, linked_to_session=True
        )
        return result, [_linked(signed_in, linked, user_data)]

    email = user_data.get("email")
    existing = storage.get_user_by_email(email) if email else None
    if existing is None:
        new_user = AdapterUser(
            id="",
            email=email,
            name=user_data.get("name"),
            image=user_data.get("image"),
            email_verified=None,
        )
        try:
            created, stored = create_and_link(storage, new_user, account)
        except EmailInUse:
            # Another request gave a new user this address a moment ago: the
            # rules for an address that has a user apply.
            existing = storage.get_user_by_email(email) if email else None
            if existing is None:
                raise
        else:
            result = LoginResult(user=created, account=stored, is_new_user=True)
            return result, [("create_user", {"user": created}), _linked(created, stored, user_data)]

    if not allow_email_linking:
        raise OAuthAccountNotLinked("Another account already exists with the same e-mail address")
    account.user_id = existing.id
    linked = storage.link_account(account) or account
    changes = [_linked(existing, linked, user_data)]
    # The provider vouches for the address: it is proven now.
    proved = _prove(storage, existing, linked.provider, linked.provider_account_id)
    if proved:
        changes.append(("update_user", {"user": existing}))
    result = LoginResult(user=existing, account=linked, is_new_user=False, proved_address=proved)
    return result, changes


def _linked(
    user: AdapterUser, account: AdapterAccount, profile: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    return ("link_account", {"user": user, "account": account, "profile": profile})


def create_and_link(
    storage: Storage, user: AdapterUser, account: AdapterAccount
) -> tuple[AdapterUser, AdapterAccount]:
    """Create the user and link the account: both or neither.

    The adapter's ``create_user_and_link_account`` does it in one transaction
    when it has it. Otherwise the user is created, the account linked, and the
    user deleted again (``delete_user``, when the adapter has it) if linking fails.
    """
    if storage.has("create_user_and_link_account"):
        created, linked = storage.create_user_and_link_account(user, account)
    else:
        created = storage.create_user(user)
        if created is None:
            raise TypeError("create_user returned nothing")
        account.user_id = created.id
        try:
            linked = storage.link_account(account) or account
        except Exception:
            if storage.has("delete_user"):
                # The linking error is the one to report; a failed clean-up is logged.
                with contextlib.suppress(AuthError):
                    storage.delete_user(created.id)
            raise
    if created is None or linked is None:
        raise TypeError("the adapter did not return the created user and account")
    return created, linked


def prove_address(
    state: AuthState,
    user: AdapterUser,
    provider: str,
    provider_account_id: str,
    *,
    notify: bool = True,
) -> bool:
    """The owner of *user*'s address has just proven it; ``True`` if that removed ways in.

    Anyone can register a passkey under any address, which makes a user whose
    address nobody has proven (the adapter's ``mark_email_unproven``). Until
    its owner proves it, everything on that user may be a stranger's: when the
    owner signs in by email (or links a provider that is trusted to vouch for
    the address), the adapter's ``prove_email`` removes, in one step, the
    passkeys, every other linked account, a password and the sessions, and
    keeps the account identified by *provider* and *provider_account_id* (the
    one just proven with, when it is stored). A warning is logged then, and
    the ``update_user`` event sent (the user's password went), unless
    *notify* is false: a caller that changes the user further sends one event
    for both. An adapter without ``prove_email`` has no such users: nothing
    happens.
    """
    config = state.config
    if not _prove(config.storage, user, provider, provider_account_id):
        return False
    config.logger.warn(UNPROVEN_EMAIL_PROVEN)
    if notify:
        emit(config, "update_user", sender=provider, request=state.request, user=user)
    return True


def _prove(storage: Storage, user: AdapterUser, provider: str, provider_account_id: str) -> bool:
    # A step of the sign-in flows: without a configured adapter nothing is stored.
    if not storage.configured or not storage.has("prove_email"):
        return False
    return bool(storage.prove_email(user.id, provider, provider_account_id))
