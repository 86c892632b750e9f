"""Security keys and platform authenticators as a second factor, through py_webauthn.

A user adds a key in the account center's Security section
(:func:`registration_options`, then :func:`register`); a sign-in held for its
second factor may then be finished with it (:func:`assertion_options` on the
second-factor page, then :func:`check_assertion`). Such a key is a
:class:`~webauth.types.SecondFactor` of kind ``"webauthn"``, not a passkey:

* It may be non-discoverable (a plain U2F/FIDO2 security key): registration
  discourages a discoverable credential and prefers, but does not require,
  user verification; the first factor already named the user, and the
  assertion is asked for with that user's keys only (``allowCredentials``).
* Its credential id, public key and transports are sealed in ``secret`` as a
  TOTP key is (:func:`webauth.mfa.factors.seal`); its signature counter is the
  factor's ``last_step``, raised atomically (``use_totp_step``), so a cloned
  key's count is refused as a reused TOTP code is.
* Each ceremony's challenge is single-use (``use_webauthn_challenge``), of its
  own ceremony (``mfa-register``/``mfa-authenticate``, never a passkey's),
  and bound: an assertion's to the held sign-in's handle (which only the
  browser or app holding that sign-in has), a registration's to a random
  value on the page and to the signed-in user it was made for.
* Its user handle begins with :data:`~webauth.flows.webauthn.MFA_HANDLE_PREFIX`,
  so that a browser offering it in passkey autofill is refused without being
  told to forget it.

The relying party is the site's first WebAuthn provider's (its ``relying_party``
option), else the request's host, as a passkey's would be.
"""

from __future__ import annotations

import binascii
import json
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url, options_to_json_dict
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from ..adapters.base import FLOW_METHODS
from ..errors import WebAuthnVerificationError
from ..flows.webauthn import MFA_HANDLE_PREFIX, descriptor, read_credential, refusal
from ..providers._aaguids import AAGUID_NAMES
from ..providers.webauthn import (
    DEFAULT_TIMEOUT,
    RelyingParty,
    WebAuthn,
    device_name,
    distinct_name,
)
from ..types import SecondFactor, WebAuthnChallenge
from ..utils import aware
from .factors import seal, storage_of, unseal
from .pending import count_options

if TYPE_CHECKING:
    from ..conf import Config
    from .pending import Pending

__all__ = [
    "AUTHENTICATE",
    "KIND",
    "REGISTER",
    "Registration",
    "assertion_options",
    "check_assertion",
    "kind_name",
    "offered",
    "register",
    "registration_options",
    "relying_party",
    "usable",
    "user_keys",
]

#: A security key's ``SecondFactor.kind``.
KIND = "webauthn"
#: The challenges' ceremonies: their own, so a passkey's callback never finds one.
REGISTER = "mfa-register"
AUTHENTICATE = "mfa-authenticate"
_CHALLENGE_BYTES = 32
_HANDLE_BYTES = 32


def usable(config: Config) -> bool:
    """Whether keys users have added can prove their second factor: the second factor on,
    and an adapter that stores second factors and single-use WebAuthn challenges.

    Turning ``mfa.security_keys`` off stops new keys only: the ones added keep working.
    """
    storage = config.storage
    return (
        config.mfa.enabled
        and storage.configured
        and all(storage.has(m) for m in (*FLOW_METHODS["mfa"], *FLOW_METHODS["security_keys"]))
    )


def offered(config: Config) -> bool:
    """Whether users may add security keys: :func:`usable`, and ``mfa.security_keys`` on."""
    return config.mfa.security_keys and usable(config)


def relying_party(config: Config, origin: str) -> RelyingParty:
    """The site as WebAuthn knows it: the first WebAuthn provider's, else *origin*'s."""
    for provider in config.providers:
        if isinstance(provider, WebAuthn):
            return provider.relying_party_for(origin)
    return WebAuthn().relying_party_for(origin)


@dataclass(frozen=True, slots=True)
class _Key:
    """What a security key's sealed ``secret`` holds."""

    factor: SecondFactor
    credential_id: bytes
    public_key: bytes
    transports: tuple[str, ...]


def _open(config: Config, factor: SecondFactor) -> _Key | None:
    # The sealed JSON of a confirmed webauthn factor; None for anything else.
    if factor.kind != KIND or not factor.confirmed:
        return None
    raw = unseal(config, factor.secret)
    try:
        data: Any = json.loads(raw) if raw else {}
        return _Key(
            factor=factor,
            credential_id=base64url_to_bytes(data["id"]),
            public_key=base64url_to_bytes(data["key"]),
            transports=tuple(str(t) for t in data.get("transports") or ()),
        )
    except (ValueError, TypeError, KeyError, binascii.Error):
        return None


def user_keys(config: Config, user_id: str) -> list[_Key]:
    """The user's confirmed security keys (their sealed part opened), oldest first."""
    keys = (_open(config, f) for f in storage_of(config).list_second_factors(str(user_id)))
    return [key for key in keys if key is not None]


def _descriptor(key: _Key) -> PublicKeyCredentialDescriptor:
    return descriptor(key.credential_id, key.transports)


def _store_challenge(
    config: Config, challenge: bytes, ceremony: str, binding: str, user_id: str
) -> None:
    config.storage.create_webauthn_challenge(
        WebAuthnChallenge(
            challenge=bytes_to_base64url(challenge),
            ceremony=ceremony,
            binding=binding,
            user_data={"user_id": str(user_id)},
            expires=datetime.now(UTC) + timedelta(seconds=DEFAULT_TIMEOUT),
        )
    )


def _use_challenge(
    config: Config, client_data: Any, ceremony: str, binding: str, user_id: str
) -> bytes:
    """The challenge the response answers, spent (before any signature is checked)."""
    record = config.storage.use_webauthn_challenge(
        bytes_to_base64url(client_data.challenge), ceremony, binding
    )
    if record is None or aware(record.expires) <= datetime.now(UTC):
        raise WebAuthnVerificationError(
            "The security key's challenge is unknown, used, expired, or another client's"
        )
    data = record.user_data if isinstance(record.user_data, dict) else {}
    if str(data.get("user_id")) != str(user_id):
        raise WebAuthnVerificationError("The security key's challenge was made for another user")
    return base64url_to_bytes(record.challenge)


# -- adding a key (the account center) -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Registration:
    """A key being added: the options for ``navigator.credentials.create()``, and the
    binding the page posts back with the browser's answer."""

    options: dict[str, Any]
    binding: str


def registration_options(
    config: Config, user_id: str, origin: str, *, user_name: str, display_name: str = ""
) -> Registration:
    """Options to add a security key for the signed-in *user_id*; the challenge stored.

    Non-discoverable credentials welcome (``residentKey: discouraged``), user
    verification preferred; the user's keys are excluded, so a key is added once.
    """
    rp = relying_party(config, origin)
    challenge = secrets.token_bytes(_CHALLENGE_BYTES)
    generated = generate_registration_options(
        rp_id=rp.id,
        rp_name=rp.name,
        user_name=user_name or rp.name,
        # Never the user's id: a random handle marked as a second factor's.
        user_id=MFA_HANDLE_PREFIX + secrets.token_bytes(_HANDLE_BYTES),
        user_display_name=display_name or user_name or rp.name,
        challenge=challenge,
        timeout=DEFAULT_TIMEOUT * 1000,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.DISCOURAGED,
            user_verification=UserVerificationRequirement.PREFERRED,
        ),
        exclude_credentials=[_descriptor(k) for k in user_keys(config, user_id)],
    )
    binding = secrets.token_urlsafe(32)
    _store_challenge(config, challenge, REGISTER, binding, user_id)
    return Registration(options=options_to_json_dict(generated), binding=binding)


def register(
    config: Config,
    user_id: str,
    origin: str,
    data: object,
    binding: object,
    *,
    name: str = "",
    user_agent: str | None = None,
) -> SecondFactor:
    """Verify the browser's answer to :func:`registration_options` and store the key.

    The key is stored confirmed (the ceremony proved it). Raises
    ``WebAuthnVerificationError`` for anything that does not verify: another
    user's or a spent challenge, a key the user has already, a bad attestation.
    """
    if not isinstance(binding, str) or not binding:
        raise WebAuthnVerificationError("The security key's answer carries no binding")
    _raw, credential, client_data = read_credential("register", data)
    expected = _use_challenge(config, client_data, REGISTER, binding, user_id)
    rp = relying_party(config, origin)
    with refusal("The security key's registration"):
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=expected,
            require_user_verification=False,
            **rp.expected,
        )
    if any(k.credential_id == verified.credential_id for k in user_keys(config, user_id)):
        raise WebAuthnVerificationError("This security key is already added")
    sealed = seal(
        config,
        json.dumps(
            {
                "id": bytes_to_base64url(verified.credential_id),
                "key": bytes_to_base64url(verified.credential_public_key),
                "transports": [t.value for t in credential.response.transports or []],
            }
        ),
    )
    storage = storage_of(config)
    label = name.strip()[:100] or _default_name(
        verified.aaguid, user_agent, storage.list_second_factors(str(user_id))
    )
    factor = storage.create_second_factor(
        SecondFactor(id="", user_id=str(user_id), kind=KIND, secret=sealed, name=label)
    )
    if not storage.confirm_second_factor(str(user_id), factor.id, int(verified.sign_count)):
        # Not left behind unconfirmed: under ``required`` with ``grace_days`` its
        # creation time would count as the start of the user's grace.
        storage.delete_second_factor(str(user_id), factor.id)
        raise WebAuthnVerificationError("The new security key could not be stored")
    return factor


def _default_name(
    aaguid: str | None, user_agent: str | None, factors: Iterable[SecondFactor] = ()
) -> str:
    # A known authenticator's name (from its AAGUID), else the browser's
    # ("Chrome on Linux"), told apart by the day it is added from the names of
    # the user's keys as the Security page shows them (an unnamed one by its
    # kind); the account center lets the user type their own.
    named = AAGUID_NAMES.get((aaguid or "").lower()) or device_name(user_agent)
    shown = [f.name or kind_name(f.kind) for f in factors if f.confirmed]
    if named:
        return distinct_name(named, shown)
    told = distinct_name(kind_name(KIND), shown)
    return "" if told == kind_name(KIND) else told  # "": shown as the reader's "Security key"


def kind_name(kind: str) -> str:
    """What a second factor of *kind* is called where it has no name of its own."""
    names = {"totp": gettext("Authenticator app"), KIND: gettext("Security key")}
    return names.get(kind, kind)


# -- proving the second factor with a key (the held sign-in) ---------------------------------


def assertion_options(config: Config, pending: Pending, origin: str) -> dict[str, Any] | None:
    """Options for ``navigator.credentials.get()`` with the held sign-in's user's keys;
    ``None`` when that user has none (or keys are not offered). The challenge is
    bound to the held sign-in's handle; ``None`` too beyond
    :data:`~webauth.mfa.pending.OPTIONS_PER_SIGN_IN` for this sign-in."""
    if not usable(config):
        return None
    keys = user_keys(config, pending.user_id)
    if not keys or not count_options(config, pending):
        return None
    rp = relying_party(config, origin)
    challenge = secrets.token_bytes(_CHALLENGE_BYTES)
    generated = generate_authentication_options(
        rp_id=rp.id,
        challenge=challenge,
        timeout=DEFAULT_TIMEOUT * 1000,
        allow_credentials=[_descriptor(k) for k in keys],
        user_verification=UserVerificationRequirement.PREFERRED,
    )
    _store_challenge(config, challenge, AUTHENTICATE, pending.handle, pending.user_id)
    return options_to_json_dict(generated)


def check_assertion(config: Config, pending: Pending, origin: str, data: object) -> bool:
    """Whether *data* (the browser's ``credential.toJSON()``) proves one of the held
    sign-in's user's keys; the challenge and the key's count are spent either way.

    ``False`` (the reason logged) for anything that does not verify: no or a
    spent challenge, another sign-in's, a key that is not this user's, a bad
    signature, a signature counter that did not go up.
    """
    if not usable(config):
        return False
    try:
        _prove(config, pending, origin, data)
    except WebAuthnVerificationError as exc:
        config.logger.error(exc)
        return False
    return True


def _prove(config: Config, pending: Pending, origin: str, data: object) -> None:
    _raw, credential, client_data = read_credential("authenticate", data)
    expected = _use_challenge(config, client_data, AUTHENTICATE, pending.handle, pending.user_id)
    presented = bytes(credential.raw_id)
    key = next(
        (k for k in user_keys(config, pending.user_id) if k.credential_id == presented), None
    )
    if key is None:
        raise WebAuthnVerificationError("The security key is not one of the user's")
    rp = relying_party(config, origin)
    stored_count = key.factor.last_step or 0
    with refusal("The security key's assertion"):
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=expected,
            credential_public_key=key.public_key,
            credential_current_sign_count=stored_count,
            require_user_verification=False,
            **rp.expected,
        )
    storage = storage_of(config)
    count = int(verified.new_sign_count)
    if count == 0 and stored_count == 0:
        # A key that keeps no counter: the spent challenge already made this
        # assertion count once; only the time of use is noted.
        storage.touch_second_factor(key.factor.id)
    elif not storage.use_totp_step(key.factor.id, count):
        # Raised atomically: a cloned key (or a racing copy of this answer) loses.
        raise WebAuthnVerificationError("The security key's signature counter did not go up")
