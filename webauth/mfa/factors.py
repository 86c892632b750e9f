"""A user's second factors through the adapter: enrol, confirm, check and remove them.

Every change and every check goes through the storage façade
(:class:`~webauth.adapters.storage.Storage`), so an adapter of the project's
own works once it has the ``mfa`` methods (``webauth.adapters.base.FLOW_METHODS``).

A TOTP key never reaches the database in the clear: it is sealed with
``WEBAUTH["secret"]`` (an encrypted token, as the session's) and opened when a
code is checked. Keep an old secret in the list when rotating (the first one
seals, all of them open), or the keys sealed with it can no longer be read and
their users must use a recovery code.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .. import jwt as jose
from ..adapters.base import FLOW_METHODS
from ..types import SecondFactor
from . import recovery, totp

if TYPE_CHECKING:
    from ..adapters.storage import Storage
    from ..conf import Config

__all__ = [
    "Enrolment",
    "begin_totp",
    "check_code",
    "confirm_enrolment",
    "confirm_totp",
    "confirmed_factors",
    "enrolment_for",
    "grace_left",
    "issuer_for",
    "new_recovery_codes",
    "recovery_codes_left",
    "remove_factor",
    "reset",
    "seal",
    "storage_of",
    "unseal",
]

#: The salt of a sealed TOTP key: no session token opens as one, nor the reverse.
SEAL_SALT = "webauth.mfa.totp-key"
#: A sealed key does not expire (its token's ``exp`` is a century away).
_SEAL_LIFE = 100 * 365 * 86400


def storage_of(config: Config) -> Storage:
    """The adapter's storage, which must have every ``mfa`` method."""
    return config.storage.require(*FLOW_METHODS["mfa"], feature="A second factor")


def seal(config: Config, key: str) -> str:
    """*key* encrypted with the first of ``WEBAUTH["secret"]``."""
    return jose.encode(
        token={"key": key}, secret=list(config.secret), salt=SEAL_SALT, max_age=_SEAL_LIFE
    )


def unseal(config: Config, sealed: str) -> str | None:
    """The key :func:`seal` sealed, or ``None`` when no secret of the list opens it."""
    payload = jose.decode(token=sealed, secret=config.secret, salt=SEAL_SALT)
    key = payload.get("key") if payload is not None else None
    return key if isinstance(key, str) else None


@dataclass(frozen=True, slots=True)
class Enrolment:
    """A TOTP key being added: the stored (unconfirmed) factor, and what the user is shown."""

    factor: SecondFactor
    #: The key as text, for typing it into an app by hand.
    key: str
    #: The ``otpauth://`` URI an app scans.
    uri: str


def begin_totp(
    config: Config, user_id: str, *, account: str, issuer: str, name: str = ""
) -> Enrolment:
    """Store a new unconfirmed TOTP key for the user; it counts once :func:`confirm_totp` passes.

    *account* is how an app labels the key (the user's address or username),
    *issuer* the site's name there.
    """
    key = totp.new_key()
    stored = storage_of(config).create_second_factor(
        SecondFactor(id="", user_id=str(user_id), kind="totp", secret=seal(config, key), name=name)
    )
    return Enrolment(
        factor=stored, key=key, uri=totp.provisioning_uri(key, account=account, issuer=issuer)
    )


def issuer_for(config: Config, host: str) -> str:
    """The name an authenticator app shows for a key: ``mfa.issuer``, else the site's *host*."""
    return config.mfa.issuer or host


def enrolment_for(config: Config, user_id: str, *, account: str, issuer: str) -> Enrolment:
    """The key the user is adding: the unconfirmed one they have, else a new one.

    A page that shows the key again (reloaded, or after a wrong code) shows the
    same key, so that one already scanned stays the right one.
    """
    for factor in storage_of(config).list_second_factors(str(user_id)):
        key = unseal(config, factor.secret) if not factor.confirmed else None
        if key is not None and factor.kind == "totp":
            uri = totp.provisioning_uri(key, account=account, issuer=issuer)
            return Enrolment(factor=factor, key=key, uri=uri)
    return begin_totp(config, user_id, account=account, issuer=issuer)


def grace_left(config: Config, user_id: str) -> timedelta | None:
    """How long a user whom ``mfa.required`` names may still put off adding a key.

    Counted from when they were first shown the key to add (their oldest
    unconfirmed key); ``None`` without ``mfa.grace_days``, before that, or
    once it is over.
    """
    days = config.mfa.grace_days
    if not days:
        return None
    started = [
        f.created_at
        for f in storage_of(config).list_second_factors(str(user_id))
        if not f.confirmed and f.created_at is not None
    ]
    if not started:
        return None
    left = min(started) + timedelta(days=days) - datetime.now(UTC)
    return left if left > timedelta(0) else None


def confirm_enrolment(config: Config, user_id: str, code: object) -> bool:
    """Confirm the key the user is adding (:func:`enrolment_for`) with a code from it."""
    for factor in storage_of(config).list_second_factors(str(user_id)):
        if not factor.confirmed and factor.kind == "totp":
            return confirm_totp(config, user_id, factor.id, code)
    return False


def confirm_totp(config: Config, user_id: str, factor_id: str, code: object) -> bool:
    """Confirm the user's new key with a right code from it; ``False`` otherwise.

    The code's time step is recorded with the confirmation, so the same code
    cannot then also pass a sign-in.
    """
    storage = storage_of(config)
    for factor in storage.list_second_factors(str(user_id)):
        if factor.id != str(factor_id) or factor.confirmed or factor.kind != "totp":
            continue
        key = unseal(config, factor.secret)
        step = totp.matching_step(key, code, skew=config.mfa.skew) if key else None
        return step is not None and storage.confirm_second_factor(str(user_id), factor.id, step)
    return False


def confirmed_factors(config: Config, user_id: str) -> list[SecondFactor]:
    """The user's factors that sign in (confirmed), oldest first."""
    return [f for f in storage_of(config).list_second_factors(str(user_id)) if f.confirmed]


def check_code(config: Config, user_id: str, code: object) -> str | None:
    """Whether *code* proves the second factor: ``"totp"`` or ``"recovery_code"``, else ``None``.

    Six digits are checked against each confirmed TOTP key (and accepted once:
    ``use_totp_step``); anything that reads as a recovery code spends it.
    """
    storage = storage_of(config)
    if totp.normalize_code(code) is not None:
        for factor in confirmed_factors(config, user_id):
            key = unseal(config, factor.secret) if factor.kind == "totp" else None
            step = totp.matching_step(key, code, skew=config.mfa.skew) if key else None
            if step is not None and storage.use_totp_step(factor.id, step):
                return "totp"
        return None
    normal = recovery.normalize(code)
    if normal is not None and storage.use_recovery_code(str(user_id), recovery.code_hash(normal)):
        return "recovery_code"
    return None


def new_recovery_codes(config: Config, user_id: str) -> list[str]:
    """A new set of recovery codes for the user, voiding the earlier set; shown once."""
    codes = recovery.new_codes()
    hashes = [recovery.code_hash(recovery.normalize(code) or "") for code in codes]
    storage_of(config).replace_recovery_codes(str(user_id), hashes)
    return codes


def recovery_codes_left(config: Config, user_id: str) -> int:
    """How many of the user's recovery codes are unused."""
    return storage_of(config).count_recovery_codes(str(user_id))


def reset(config: Config, user: object) -> bool:
    """Remove every second factor, recovery code and trusted browser of *user*; ``True`` if
    there was any."""
    uid = str(getattr(user, "pk", user))
    storage = storage_of(config)
    had = storage.list_second_factors(uid)
    for factor in had:
        storage.delete_second_factor(uid, factor.id)
    codes = storage.count_recovery_codes(uid)
    storage.replace_recovery_codes(uid, [])
    trusted = storage.delete_trusted_browsers(uid) if storage.has("delete_trusted_browsers") else 0
    return bool(had) or codes > 0 or trusted > 0


def remove_factor(config: Config, user_id: str, factor_id: str) -> bool:
    """Remove one of the user's factors; ``False`` when it is not the user's."""
    return storage_of(config).delete_second_factor(str(user_id), str(factor_id))
