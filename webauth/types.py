"""The records adapters take and return (spec section 2), as dataclasses.

Field names are the snake_case forms of Auth.js's (``providerAccountId`` is
``provider_account_id``); :meth:`to_wire` gives the Auth.js (camelCase) form for
JSON. Adapters may return these dataclasses or plain mappings with either
spelling: :func:`as_user` and friends read both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

__all__ = [
    "ACCOUNT_TOKEN_FIELDS",
    "AdapterAccount",
    "AdapterAuthenticator",
    "AdapterSession",
    "AdapterUser",
    "ApiKeyRecord",
    "LinkedAccount",
    "SecondFactor",
    "TrustedBrowser",
    "UserSession",
    "UserSessionCheck",
    "VerificationToken",
    "WebAuthnChallenge",
    "as_account",
    "as_api_key",
    "as_authenticator",
    "as_second_factor",
    "as_session",
    "as_session_and_user",
    "as_trusted_browser",
    "as_user",
    "as_user_session_check",
    "as_verification_token",
    "as_webauthn_challenge",
]

#: The token-response fields an account keeps in fields of their own; any other
#: key of a token response goes to ``AdapterAccount.extra``.
ACCOUNT_TOKEN_FIELDS = (
    "access_token",
    "refresh_token",
    "id_token",
    "scope",
    "token_type",
    "expires_at",
    "session_state",
)

_WIRE_NAMES = {
    "provider_account_id": "providerAccountId",
    "user_id": "userId",
    "email_verified": "emailVerified",
    "session_token": "sessionToken",
    "credential_id": "credentialID",
    "credential_public_key": "credentialPublicKey",
    "credential_backed_up": "credentialBackedUp",
    "credential_device_type": "credentialDeviceType",
    "is_active": "isActive",
    "password_hash": "passwordHash",
}
_PY_NAMES = {wire: py for py, wire in _WIRE_NAMES.items()}


class _Record:
    """Shared conversions of the record dataclasses."""

    def to_wire(self) -> dict[str, object]:
        """The record with Auth.js's field names (``extra`` keys merged in)."""
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.name in ("extra", "instance") or not f.init:
                continue
            out[_WIRE_NAMES.get(f.name, f.name)] = getattr(self, f.name)
        out.update(getattr(self, "extra", None) or {})
        return out


@dataclass(slots=True)
class AdapterUser(_Record):
    """A user as adapters store it (spec 2.3).

    ``instance`` is the framework object behind the record when the adapter has
    one (the Django model instance for :class:`~webauth.adapters.django.DjangoAdapter`);
    the middleware uses it as ``request.user`` without another query.
    """

    id: str
    email: str | None = None
    email_verified: datetime | None = None
    name: str | None = None
    image: str | None = None
    instance: AbstractBaseUser | None = field(default=None, repr=False, compare=False)


@dataclass(slots=True)
class AdapterAccount(_Record):
    """A link between a user and a provider account (spec 2.1).

    Token fields are those an OAuth provider returns; any other key a provider
    sends is kept in ``extra``.
    """

    user_id: str
    type: str
    provider: str
    provider_account_id: str
    access_token: str | None = None
    refresh_token: str | None = None
    id_token: str | None = None
    scope: str | None = None
    token_type: str | None = None
    expires_at: int | None = None
    session_state: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


@dataclass(slots=True)
class AdapterSession(_Record):
    """A database session (spec 2.5).

    ``user_agent`` and ``ip_address`` are webauth additions captured at sign-in
    for session management; adapters that do not store them ignore them.
    ``created_at`` (the sign-in, from which ``session.absolute_max_age`` counts)
    and ``auth_hash`` (the user's session auth hash at sign-in, which ends the
    session when the password changes) are webauth additions too: an adapter
    that returns them gets those checks, one that does not is read without them.
    So are ``amr`` (how the user proved who they are, space-separated names)
    and ``mfa_at`` (when two factors last were): docs/mfa.md.
    """

    session_token: str
    user_id: str
    expires: datetime
    user_agent: str | None = None
    ip_address: str | None = None
    created_at: datetime | None = None
    auth_hash: str | None = None
    amr: str | None = None
    mfa_at: datetime | None = None


@dataclass(slots=True)
class VerificationToken(_Record):
    """A single-use email sign-in grant (spec 2.6): a link token and, optionally, a code.

    ``token`` is what the flow hands over for the link (already
    ``sha256hex(token + secret)``). ``code`` and ``attempts`` are webauth
    additions: ``code`` is the one-time code, hashed the same way, which redeems
    the same grant (``None``: links only); ``attempts`` counts the wrong codes
    tried against the grant. Their defaults keep Auth.js adapters working.
    A record returned by ``use_verification_code`` carries the ``code`` it was
    redeemed with and an empty ``token`` when the adapter keeps only its hash.
    """

    identifier: str
    token: str
    expires: datetime
    code: str | None = None
    attempts: int = 0


@dataclass(slots=True)
class AdapterAuthenticator(_Record):
    """A WebAuthn credential (a passkey) registered to a user (spec 2.7).

    ``credential_backed_up`` is the backup state the authenticator last reported;
    ``transports`` are comma-joined. The rest are webauth additions, which
    Auth.js adapters may leave out: ``name`` (what the user calls the passkey),
    ``aaguid`` (the authenticator model, a UUID string), ``backup_eligible``
    (whether the credential may be synced), ``created_at`` and ``last_used_at``
    (set by a successful ``update_authenticator_counter``).
    """

    credential_id: str
    user_id: str
    provider_account_id: str
    credential_public_key: str
    counter: int
    credential_backed_up: bool
    credential_device_type: str
    transports: str | None = None
    name: str | None = None
    aaguid: str | None = None
    backup_eligible: bool = False
    created_at: datetime | None = None
    last_used_at: datetime | None = None


@dataclass(slots=True)
class WebAuthnChallenge(_Record):
    """A WebAuthn challenge waiting for its one answer (a webauth addition).

    ``challenge`` is the value sent to the browser in the options; ``ceremony``
    is ``"register"`` or ``"authenticate"``; ``binding`` is the random value
    kept in the browser's challenge cookie, so that only the browser that asked
    can use the challenge. Both are the raw values: an adapter may store them
    hashed (``DjangoAdapter`` does) and return the values it was given.
    ``user_data`` is what registration needs to know later (the new user's
    email and name, or the signed-in user's id), ``None`` for authentication.
    """

    challenge: str
    ceremony: str
    binding: str
    user_data: dict[str, Any] | None
    expires: datetime


@dataclass(slots=True)
class SecondFactor(_Record):
    """One of a user's second factors (a webauth addition, :mod:`webauth.mfa`).

    ``id`` is the adapter's (a string); ``kind`` is ``"totp"`` (an authenticator app) or
    ``"webauthn"`` (a security key); ``secret`` is what the method needs, opaque to the
    adapter (a TOTP key, or a security key's credential id and public key, sealed by webauth
    before it is stored); ``name`` what the user calls it. ``last_step`` is the last TOTP
    time step accepted (a security key's signature counter), which the adapter raises
    atomically (``use_totp_step``) so that a code is accepted once. A new factor is
    *confirmed* once its first code was right: until then (``confirmed`` false) it signs
    nobody in.
    """

    id: str
    user_id: str
    kind: str
    secret: str
    name: str = ""
    confirmed: bool = False
    last_step: int | None = None
    created_at: datetime | None = None
    last_used_at: datetime | None = None


@dataclass(slots=True)
class TrustedBrowser(_Record):
    """A browser a user chose to trust with their second factor (a webauth addition).

    Its sign-ins skip the code for a while (``mfa.trust_days``). The browser
    holds a random token in a cookie; the adapter keeps its SHA-256
    (``token_hash``), which finds the record. ``id`` is the adapter's.
    """

    id: str
    user_id: str
    token_hash: str
    expires: datetime
    user_agent: str = ""
    created_at: datetime | None = None
    last_used_at: datetime | None = None


@dataclass(slots=True)
class ApiKeyRecord(_Record):
    """An API key as stored (a webauth addition, docs/api-keys.md): never the key itself.

    ``key_id`` is the public part the key starts with (after its prefix), unique;
    ``secret_hash`` the SHA-256 (hex) of its secret; ``scopes`` the project's
    scope names it carries. ``owner`` is ``""`` for a user's key (``user_id``
    its user); for a key of a project-defined owner (``api_keys.owners``) it is
    ``"<app_label>.<model>:<pk>"`` and ``user_id`` is ``""``.
    """

    key_id: str
    user_id: str
    name: str
    secret_hash: str
    scopes: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    expires: datetime | None = None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    owner: str = ""


@dataclass(frozen=True, slots=True)
class UserSession:
    """One live database session of a user, as a "your devices" page shows it.

    A webauth addition (session management), returned by the adapter's
    ``list_sessions_by_user_id``. ``id`` identifies the session without
    revealing its token; ``current`` marks the session of the request that asked.
    """

    id: object
    created_at: datetime
    last_extended_at: datetime
    expires: datetime
    user_agent: str
    ip_address: str | None
    current: bool


@dataclass(frozen=True, slots=True)
class LinkedAccount:
    """One provider account of a user, without its tokens (a webauth addition).

    Returned by the adapter's ``list_accounts_by_user_id``; ``id`` identifies the
    stored account.
    """

    id: object
    provider: str
    provider_account_id: str
    type: str
    created_at: datetime | None


@dataclass(slots=True)
class UserSessionCheck:
    """What checking a session against its user needs, and no more (a webauth addition).

    Returned by the adapter's ``get_user_session_check``: ``is_active`` (``True``
    for a user model without the field) and ``password_hash``, the stored
    password hash (``AbstractBaseUser.password``) from which Django's session
    auth hash is made; ``None`` when the user has none.
    """

    id: str
    is_active: bool
    password_hash: str | None


R = TypeVar("R")


def _coerce(cls: type[R], value: object) -> R | None:
    if value is None or isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"expected {cls.__name__} or a mapping, got {type(value).__name__}")
    names = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    extra: dict[str, object] = {}
    for key, val in value.items():
        name = _PY_NAMES.get(key, key)
        if name in names:
            kwargs[name] = val
        else:
            extra[key] = val
    if "extra" in names:
        kwargs["extra"] = {**extra, **kwargs.get("extra", {})}
    for key in ("id", "user_id"):
        if key in kwargs and kwargs[key] is not None:
            kwargs[key] = str(kwargs[key])
    return cls(**kwargs)


def as_user(value: object) -> AdapterUser | None:
    """An :class:`AdapterUser` from a record or mapping (``None`` passes through)."""
    return _coerce(AdapterUser, value)


def as_account(value: object) -> AdapterAccount | None:
    """An :class:`AdapterAccount` from a record or mapping."""
    return _coerce(AdapterAccount, value)


def as_session(value: object) -> AdapterSession | None:
    """An :class:`AdapterSession` from a record or mapping."""
    return _coerce(AdapterSession, value)


def as_verification_token(value: object) -> VerificationToken | None:
    """A :class:`VerificationToken` from a record or mapping."""
    return _coerce(VerificationToken, value)


def as_authenticator(value: object) -> AdapterAuthenticator | None:
    """An :class:`AdapterAuthenticator` from a record or mapping."""
    return _coerce(AdapterAuthenticator, value)


def as_webauthn_challenge(value: object) -> WebAuthnChallenge | None:
    """A :class:`WebAuthnChallenge` from a record or mapping."""
    return _coerce(WebAuthnChallenge, value)


def as_second_factor(value: object) -> SecondFactor | None:
    """A :class:`SecondFactor` from a record or mapping."""
    return _coerce(SecondFactor, value)


def as_api_key(value: object) -> ApiKeyRecord | None:
    """An :class:`ApiKeyRecord` from a record or mapping."""
    return _coerce(ApiKeyRecord, value)


def as_trusted_browser(value: object) -> TrustedBrowser | None:
    """A :class:`TrustedBrowser` from a record or mapping."""
    return _coerce(TrustedBrowser, value)


def as_user_session_check(value: object) -> UserSessionCheck | None:
    """A :class:`UserSessionCheck` from a record or mapping."""
    return _coerce(UserSessionCheck, value)


def as_session_and_user(
    value: Mapping[str, object] | Sequence[object] | None,
) -> tuple[AdapterSession, AdapterUser] | None:
    """Read ``get_session_and_user``'s result: a pair or a ``{"session", "user"}`` mapping."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        session, user = as_session(value["session"]), as_user(value["user"])
    else:
        session, user = as_session(value[0]), as_user(value[1])
    if session is None or user is None:
        return None
    return session, user
