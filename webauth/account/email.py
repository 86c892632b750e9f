"""Changing a signed-in user's email address, proven by a code sent to the new one.

Two steps, each a ``POST`` of the account center's email page (behind
re-authentication): :func:`send_code` mails a one-time code to the new address,
and :func:`change_email` redeems it and makes the address the user's, with
``email_verified`` set (the ``update_user`` event). Nothing changes until the
code comes back: whoever holds the session must also read the new address's
mail, and a mistyped address stays unused.

The code is the email provider's (its alphabet, ``max_age`` and
``code_max_attempts``); the grant lives in the adapter as a sign-in grant does
(``replace_verification_token``, ``use_verification_code``), under an
identifier of its own, ``email-change:<user id>:<address>``, which no sign-in
can redeem (no address webauth accepts holds a ``:``) and which is worthless
for any other user. The same rate limits as email sign-in apply: ``email_send``
per address for sending, ``code_failed`` for wrong codes.

The user's ``email`` account (the row an email sign-in made) follows the
address, and a user made by a passkey registration under an address nobody
proved loses that mark (the adapter's ``forget_unproven_email``): the unproven
address is no longer theirs. The message comes from the templates
``webauth/email/email_change_subject.txt``, ``email_change_message.txt`` and
``email_change_message.html``, sent through Django's email framework.
"""

from __future__ import annotations

import math
from contextlib import suppress
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from .. import mail, ratelimit
from ..conf import Config, get_config
from ..errors import AuthError, EmailInUse, LastSignInMethod, RateLimited
from ..events import emit
from ..flows.email import use_code
from ..pages import usable_providers
from ..providers.email import Email
from ..types import (
    AdapterAccount,
    AdapterUser,
    VerificationToken,
)
from ..typing_aliases import SignalSender
from ..utils import user_id

__all__ = [
    "GRANT_PREFIX",
    "EmailChangeError",
    "change_email",
    "change_provider",
    "grant_identifier",
    "send_code",
]

#: The identifiers of email-change grants start with this.
GRANT_PREFIX = "email-change:"

#: The adapter methods an email change needs.
METHODS = ("replace_verification_token", "use_verification_code", "get_user", "update_user")


class EmailChangeError(Exception):
    """A change that could not be made; ``str()`` is what the page tells the user."""


def change_provider(config: Config | None = None) -> Email | None:
    """The email provider whose codes prove a new address, or ``None`` when there is none.

    The first configured :class:`~webauth.providers.Email` that sends codes,
    with an adapter that stores its grants.
    """
    config = config or get_config()
    storage = config.storage
    if not storage.configured or not all(storage.has(m) for m in METHODS):
        return None
    for provider in usable_providers(config):
        if isinstance(provider, Email) and provider.code is not None:
            return provider
    return None


def grant_identifier(uid: str, address: str) -> str:
    """The grant's identifier: the user and the address, so a code is good for both only."""
    return f"{GRANT_PREFIX}{uid}:{address}"


def _provider() -> Email:
    provider = change_provider()
    if provider is None:
        raise EmailChangeError(_("Changing your email address is not available on this site."))
    return provider


def _user(request: HttpRequest) -> AdapterUser:
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        raise EmailChangeError(_("Sign in to change your email address."))
    record = get_config().storage.get_user(user_id(user))
    if record is None:
        raise EmailChangeError(_("Sign in to change your email address."))
    return record


def _normalize(provider: Email, typed: Any) -> str:
    try:
        return provider.normalize(typed)
    except ValueError as exc:
        raise EmailChangeError(str(exc)) from None


def _normalize_or_none(provider: Email, value: str) -> str | None:
    try:
        return provider.normalize(value)
    except ValueError:
        return None


def send_code(request: HttpRequest, typed: Any) -> str:
    """Mail a code to the address *typed*; returns the address as stored.

    Raises :class:`EmailChangeError` for an address webauth cannot use, the
    user's own address, too many emails (``email_send``), or a failed delivery.
    """
    config = get_config()
    provider = _provider()
    user = _user(request)
    address = _normalize(provider, typed)
    if user.email and address == _normalize_or_none(provider, user.email):
        raise EmailChangeError(_("This is already your email address."))
    decision = ratelimit.hit(request, "email_send", address, config=config)
    if not decision:
        raise EmailChangeError(
            _("Too many attempts. Please wait a few minutes before you try again.")
        )
    storage = config.storage
    identifier = grant_identifier(user.id, address)
    code = provider.new_code()
    assert code is not None  # change_provider() only picks a provider that sends codes
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=provider.max_age)
    # The grant needs a link token too; this one is never sent, so only the code redeems it.
    grant = VerificationToken(
        identifier=identifier,
        token=provider.hash_value(provider.new_token(), config.secret),
        expires=expires,
        code=provider.hash_value(code, config.secret),
    )
    storage.replace_verification_token(grant)
    try:
        _send(request, provider, address, provider.display_code(code), expires, config)
    except Exception as exc:
        # Nobody received this grant: void it, so nothing usable is left behind.
        with suppress(AuthError):
            storage.use_verification_token(identifier, grant.token)
        config.logger.error(
            AuthError(f"Sending the email-change code with provider {provider.id!r} failed")
        )
        raise EmailChangeError(_("The e-mail could not be sent.")) from exc
    return address


def _send(
    request: HttpRequest,
    provider: Email,
    address: str,
    code: str,
    expires: datetime,
    config: Config,
) -> None:
    seconds = (expires - datetime.now(UTC)).total_seconds()
    theme = config.theme
    context = {
        "code": code,
        "host": request.get_host(),
        "address": address,
        "expires": expires,
        "minutes": max(1, math.ceil(seconds / 60)),
        "theme": asdict(theme),
    }
    message = mail.message("email_change", context, provider.sender, address, request)
    message.send(fail_silently=False)


def change_email(request: HttpRequest, typed_address: Any, typed_code: Any) -> AdapterUser:
    """Redeem the code sent to *typed_address* and make it the user's address.

    Returns the updated user. Raises :class:`EmailChangeError` for a wrong or
    expired code (``code_failed`` counts it), and for an address that has
    become another user's meanwhile.
    """
    config = get_config()
    provider = _provider()
    user = _user(request)
    address = _normalize(provider, typed_address)
    identifier = grant_identifier(user.id, address)
    storage = config.storage
    # Counted and given back as the sign-in code is (flows.email.use_code).
    try:
        right = use_code(request, config, storage, provider, identifier, typed_code)
    except RateLimited:
        raise EmailChangeError(
            _("Too many attempts. Please wait a few minutes before you try again.")
        ) from None
    if not right:
        raise EmailChangeError(
            _("That code is not right, or it has expired. Check it, or ask for a new code.")
        )
    # Told only now, to someone who has shown they read the address's mail.
    owner = storage.get_user_by_email(address) if storage.has("get_user_by_email") else None
    if owner is not None and owner.id != user.id:
        raise EmailChangeError(_("Another account uses this email address."))
    previous = user.email
    try:
        updated = storage.update_user(
            {"id": user.id, "email": address, "email_verified": datetime.now(UTC)}
        )
    except EmailInUse:
        # Taken between the check above and the change (the adapter checks and
        # writes in one step).
        raise EmailChangeError(_("Another account uses this email address.")) from None
    except AuthError as exc:
        # Logged by the adapter's caller.
        raise EmailChangeError(
            _("Your email address could not be changed. Please try again.")
        ) from exc
    updated = updated or user
    signal: SignalSender = {"sender": provider.id, "request": request}
    emit(config, "update_user", **signal, user=updated)
    _move_email_account(config, provider, updated, previous, address, signal)
    if storage.has("forget_unproven_email"):
        # The address nobody had proven is no longer this user's: no stranger's claim left.
        storage.forget_unproven_email(user.id)
    return updated


def _move_email_account(
    config: Config,
    provider: Email,
    user: AdapterUser,
    previous: str | None,
    address: str,
    signal: SignalSender,
) -> None:
    """Give the user's ``email`` account (if they have one) the new address."""
    storage = config.storage
    if not previous or not all(
        storage.has(m) for m in ("get_account", "link_account", "unlink_user_account")
    ):
        return
    old_id = _normalize_or_none(provider, previous)
    if old_id is None:
        return
    old = storage.get_account(old_id, provider.id)
    if old is None or str(old.user_id) != user.id:
        return
    if storage.get_account(address, provider.id) is None:
        account = AdapterAccount(
            user_id=user.id, type="email", provider=provider.id, provider_account_id=address
        )
        linked = storage.link_account(account) or account
        emit(config, "link_account", **signal, user=user, account=linked, profile=user)
    # The new account was linked first: the old one is never the last way in.
    with suppress(LastSignInMethod):
        storage.unlink_user_account(user.id, provider.id, old_id)
