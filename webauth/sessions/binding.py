"""A session's tie to its user: who it belongs to, and whether that user may still use it.

A session of a Django user carries the user's session auth hash (Django's HMAC
of the password hash) and its sign-in time; it lives only while the user
exists, is active and keeps the same password, under either strategy.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.utils.crypto import constant_time_compare

from ..types import AdapterUser
from ..utils import user_model
from . import check_cache
from .base import Assurance

if TYPE_CHECKING:
    from ..conf import Config

__all__ = [
    "AMR_CLAIM",
    "AUTH_HASH_CLAIM",
    "AUTH_TIME_CLAIM",
    "MFA_TIME_CLAIM",
    "OWN_CLAIMS",
    "SESSION_CHECK_METHOD",
    "SIGN_IN_ID_CLAIM",
    "UserUnavailable",
    "assurance_claims",
    "assurance_of",
    "auth_hash_matches",
    "auth_time",
    "binding_claims",
    "find_user",
    "session_auth_hash",
    "session_ends",
]

#: webauth's own claims in a session JWT: the user's session auth hash at sign-in
#: (the session ends when the password changes) and the sign-in time (from which
#: ``session.absolute_max_age`` counts). Auth.js ignores claims it does not know
#: and keeps them when it re-issues a token, so a token shared with an Auth.js
#: app keeps working; webauth keeps them whatever the ``jwt`` callback returns.
AUTH_HASH_CLAIM = "webauth_auth_hash"
AUTH_TIME_CLAIM = "webauth_auth_time"
#: A random id of the sign-in, kept as the token slides: what makes the session's
#: ``sid`` (docs/tokens.md) differ between two sign-ins of a user in one second.
SIGN_IN_ID_CLAIM = "webauth_sign_in"
#: How the user proved who they are (docs/mfa.md), and when two factors last were.
AMR_CLAIM = "amr"
MFA_TIME_CLAIM = "webauth_mfa_time"
OWN_CLAIMS = (AUTH_HASH_CLAIM, AUTH_TIME_CLAIM, AMR_CLAIM, MFA_TIME_CLAIM, SIGN_IN_ID_CLAIM)


class UserUnavailable(Exception):
    """The adapter failed while looking up a session's user (already logged)."""


# -- the user behind a session ------------------------------------------------------------
def find_user(config: Config, user_id: str) -> AdapterUser | None:
    """The stored user *user_id* with its ``AUTH_USER_MODEL`` instance, or ``None``.

    Through the adapter (``DjangoAdapter`` when none is configured); for an
    adapter whose users carry no instance, *user_id* is a key of
    ``AUTH_USER_MODEL``. Raises :class:`~webauth.errors.AuthError` when the
    adapter fails (it has logged the error).
    """
    record = config.storage.get_user(user_id)
    if record is None:
        return None
    if record.instance is None:
        record = config.django_adapter.get_user(record.id)
    return record if record is not None and record.instance is not None else None


def _instance(user: object) -> Any:
    return user.instance if isinstance(user, AdapterUser) else user


#: The adapter method that checks a session's user without loading it (optional).
SESSION_CHECK_METHOD = "get_user_session_check"


@lru_cache(maxsize=32)
def _check_answers_for_get_user(cls: type) -> bool:
    """Whether *cls*'s ``get_user_session_check`` is defined where its ``get_user`` is, or below.

    A subclass that overrides ``get_user`` (to hide soft-deleted users, say) but
    inherits the check would have the session route skip its rule.
    """

    def definer(name: str) -> type | None:
        return next((k for k in cls.__mro__ if name in k.__dict__), None)

    check, get_user = definer(SESSION_CHECK_METHOD), definer("get_user")
    if check is None or get_user is None or not issubclass(check, get_user):
        return False
    return callable(check.__dict__[SESSION_CHECK_METHOD])


def _session_check_usable(config: Config) -> bool:
    """Whether a session's user may be checked with the adapter's ``get_user_session_check``.

    When the adapter has one that answers for its ``get_user``, and ``AUTH_USER_MODEL``
    has Django's own session auth hash (made from the password hash alone).
    """
    adapter = config.storage.adapter
    own = getattr(adapter, "__dict__", None)
    if own and (SESSION_CHECK_METHOD in own or "get_user" in own):  # set on the object itself
        if not callable(own.get(SESSION_CHECK_METHOD)) or "get_user" not in own:
            return False
    elif not _check_answers_for_get_user(adapter.__class__):
        return False
    return _keeps_djangos_hash(user_model())


def _session_check(config: Config, user_id: str, auth_hash: Any) -> str | None:
    """Why the session of *user_id* bound to *auth_hash* must end, or ``None`` (no user loaded).

    Raises :class:`~webauth.errors.AuthError` when the adapter fails (logged).
    """
    cached = config.session.user_check_cache is not None
    if cached and check_cache.passed(config, user_id, auth_hash):
        return None  # passed within session.user_check_cache's max_staleness: no query
    found = config.storage.get_user_session_check(user_id)
    if found is None:
        return "user not found"
    if not found.is_active:
        return "user inactive"
    if not _password_hash_matches(found.password_hash, auth_hash):
        return "password changed"
    if cached:
        check_cache.remember(config, user_id, auth_hash)
    return None


# -- the session auth hash ----------------------------------------------------------------
# Django's own session auth hash depends only on the password hash and the key:
# its values are remembered per pair (an HMAC per request is measurable on the
# session route), for SECRET_KEY and each of SECRET_KEY_FALLBACKS. Only while
# the user model keeps both of Django's methods: an overridden one may read
# other fields (a "log out everywhere" counter), so it is always called.
_DEFAULT_AUTH_HASH = AbstractBaseUser.get_session_auth_hash
# Private in Django (and unknown to its type stubs), but what its fallback keys use.
_DEFAULT_KEYED_AUTH_HASH = getattr(AbstractBaseUser, "_get_session_auth_hash")  # noqa: B009
_auth_hashes: dict[tuple[str, str], str] = {}


class _PasswordOnly:
    """All that Django's ``_get_session_auth_hash`` reads of a user."""

    __slots__ = ("password",)

    def __init__(self, password: str) -> None:
        self.password = password


def _keeps_djangos_hash(cls: type) -> bool:
    """Whether users of *cls* have Django's own session auth hash (an HMAC of the password)."""
    return (
        getattr(cls, "get_session_auth_hash", None) is _DEFAULT_AUTH_HASH
        and getattr(cls, "_get_session_auth_hash", None) is _DEFAULT_KEYED_AUTH_HASH
    )


def _djangos_hash(password: str, secret: str) -> str:
    """Django's session auth hash for the password hash *password* under *secret*, remembered."""
    key = (password, secret)
    cached = _auth_hashes.get(key)
    if cached is None:
        if len(_auth_hashes) >= 1024:
            _auth_hashes.clear()
        # Django's own code, given the one attribute it reads.
        cached = _auth_hashes[key] = _DEFAULT_KEYED_AUTH_HASH(_PasswordOnly(password), secret)
    return cached


def _same_hash(value: str, expected: str) -> bool:
    # Constant time. An auth hash is hex: a value that is not ASCII is no match
    # (compare_digest refuses to compare such a str).
    return value.isascii() and hmac.compare_digest(value, expected)


def _password_hash_matches(password: Any, value: Any) -> bool:
    """Whether *value* is Django's session auth hash of the password hash *password*
    under ``SECRET_KEY`` or one of ``SECRET_KEY_FALLBACKS`` (constant time)."""
    if not isinstance(value, str) or not isinstance(password, str):
        return False
    if _same_hash(value, _djangos_hash(password, settings.SECRET_KEY)):
        return True
    for secret in getattr(settings, "SECRET_KEY_FALLBACKS", ()):
        if _same_hash(value, _djangos_hash(password, secret)):
            return True
    return False


def session_auth_hash(user: object) -> str | None:
    """*user*'s session auth hash (Django's ``get_session_auth_hash()``: an HMAC of the
    password hash), or ``None`` for a user without one (not a Django user)."""
    instance = _instance(user)
    # __class__, not type(): request.user is a lazy object standing in for the user.
    cls = instance.__class__
    method = getattr(cls, "get_session_auth_hash", None)
    if not callable(method):
        return None
    password = getattr(instance, "password", None)
    if isinstance(password, str) and _keeps_djangos_hash(cls):
        return _djangos_hash(password, settings.SECRET_KEY)
    value = method(instance)
    return value if isinstance(value, str) and value else None


def auth_hash_matches(user: object, value: Any) -> bool:
    """Whether *value* is *user*'s session auth hash, compared in constant time.

    As ``django.contrib.auth`` does after a ``SECRET_KEY`` rotation, a hash made
    with a key of ``SECRET_KEY_FALLBACKS`` still matches.
    """
    if not isinstance(value, str):
        return False
    instance = _instance(user)
    password = getattr(instance, "password", None)
    if isinstance(password, str) and _keeps_djangos_hash(instance.__class__):
        return _password_hash_matches(password, value)
    current = session_auth_hash(user)
    if current is None:
        return False
    if constant_time_compare(value, current):
        return True
    with_secret = getattr(instance, "_get_session_auth_hash", None)
    if callable(with_secret):
        for secret in getattr(settings, "SECRET_KEY_FALLBACKS", ()):
            if constant_time_compare(value, with_secret(secret=secret)):
                return True
    return False


def session_ends(config: Config, reason: str, user_id: str | None) -> None:
    """Log (debug) that the session of *user_id* ended, and why."""
    config.logger.debug("SESSION_ENDED", {"reason": reason, "userId": user_id})


def binding_claims(user: object, now: float, *, sign_in_id: bool = False) -> dict[str, object]:
    """webauth's own claims for a session of *user* signed in at *now*.

    The sign-in time always (so ``absolute_max_age`` applies from the real
    sign-in if it is turned on later), with *sign_in_id* (access tokens on) a
    random id of the sign-in (72 bits: the tokens' ``sid`` is made of it, so two
    sign-ins of a user in one second differ), and the session auth hash for a Django
    user: such a session lives only while its user exists, is active and
    keeps the same password.
    """
    claims: dict[str, object] = {AUTH_TIME_CLAIM: int(now)}
    if sign_in_id:
        claims[SIGN_IN_ID_CLAIM] = secrets.token_urlsafe(9)
    auth_hash = session_auth_hash(user)
    if auth_hash is not None:
        claims[AUTH_HASH_CLAIM] = auth_hash
    return claims


def assurance_claims(amr: Sequence[str], mfa_at: float | None) -> dict[str, object]:
    """The claims that say how a session's user proved who they are (none for none)."""
    claims: dict[str, object] = {}
    if amr:
        claims[AMR_CLAIM] = list(amr)
    if mfa_at is not None:
        claims[MFA_TIME_CLAIM] = int(mfa_at)
    return claims


def assurance_of(token: Mapping[str, object]) -> Assurance:
    """What a token's claims say of how its user proved who they are."""
    amr = token.get(AMR_CLAIM)
    mfa_at = token.get(MFA_TIME_CLAIM)
    return Assurance(
        amr=tuple(m for m in amr if isinstance(m, str)) if isinstance(amr, list) else (),
        mfa_at=float(mfa_at)
        if isinstance(mfa_at, int | float) and not isinstance(mfa_at, bool)
        else None,
    )


def auth_time(token: Mapping[str, object]) -> float | None:
    """The sign-in time a token records (``webauth_auth_time``), if any."""
    value = token.get(AUTH_TIME_CLAIM)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None
