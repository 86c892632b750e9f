"""Reading, creating and ending sessions.

One interface over the two strategies: with ``jwt`` the whole session is an
encrypted token in the session cookie; with ``database`` the cookie holds a
session token and the session lives in the adapter's storage.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import SynchronousOnlyOperation
from django.utils.crypto import constant_time_compare

from . import jwt as jose
from .callbacks import run_jwt, run_session
from .errors import AuthError, JWTSessionError, SessionTokenError
from .types import (
    AdapterSession,
    AdapterUser,
    as_session,
    as_session_and_user,
    as_user,
    as_user_session_check,
)
from .utils import aware, call, user_model

if TYPE_CHECKING:
    from .conf import Config

__all__ = [
    "AUTH_HASH_CLAIM",
    "AUTH_TIME_CLAIM",
    "SESSION_CHECK_METHOD",
    "SessionResult",
    "auth_hash_matches",
    "binding_claims",
    "current_user",
    "decode_token",
    "default_session",
    "default_token",
    "encode_token",
    "find_user",
    "iso_expires",
    "jwt_lifetime",
    "new_database_session",
    "new_jwt_session",
    "read_database_session",
    "read_jwt_session",
    "read_session",
    "rebind_database_session",
    "rebind_jwt",
    "reissue_jwt",
    "session_auth_hash",
    "signed_in_at",
]

_UNSET: Any = object()

#: webauth's own claims in a session JWT: the user's session auth hash at sign-in
#: (the session ends when the password changes) and the sign-in time (from which
#: ``session.absolute_max_age`` counts). Auth.js ignores claims it does not know
#: and keeps them when it re-issues a token, so a token shared with an Auth.js
#: app keeps working; webauth keeps them whatever the ``jwt`` callback returns.
AUTH_HASH_CLAIM = "webauth_auth_hash"
AUTH_TIME_CLAIM = "webauth_auth_time"
_OWN_CLAIMS = (AUTH_HASH_CLAIM, AUTH_TIME_CLAIM)


class _UserUnavailable(Exception):
    """The adapter failed while looking up a session's user (already logged)."""


# -- the user behind a session ------------------------------------------------------------
def find_user(config: Config, user_id: str) -> AdapterUser | None:
    """The stored user *user_id* with its ``AUTH_USER_MODEL`` instance, or ``None``.

    Through the adapter (``DjangoAdapter`` when none is configured); for an
    adapter whose users carry no instance, *user_id* is a key of
    ``AUTH_USER_MODEL``. Raises :class:`~webauth.errors.AuthError` when the
    adapter fails (it has logged the error).
    """
    record = as_user(config.storage("get_user", user_id))
    if record is None:
        return None
    if record.instance is None:
        record = config.django_adapter.get_user(record.id)
    return record if record is not None and record.instance is not None else None


def _instance(user: Any) -> Any:
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
    found = as_user_session_check(config.storage(SESSION_CHECK_METHOD, user_id))
    if found is None:
        return "user not found"
    if not found.is_active:
        return "user inactive"
    if not _password_hash_matches(found.password_hash, auth_hash):
        return "password changed"
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


def session_auth_hash(user: Any) -> str | None:
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


def auth_hash_matches(user: Any, value: Any) -> bool:
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


def _ends(config: Config, reason: str, user_id: str | None) -> None:
    config.logger.debug("SESSION_ENDED", {"reason": reason, "userId": user_id})


# -- lifetimes ------------------------------------------------------------------------
def binding_claims(user: Any, now: float) -> dict[str, Any]:
    """webauth's own claims for a session of *user* signed in at *now*.

    The sign-in time always (so ``absolute_max_age`` applies from the real
    sign-in if it is turned on later), and the session auth hash for a Django
    user: such a session lives only while its user exists, is active and
    keeps the same password.
    """
    claims: dict[str, Any] = {AUTH_TIME_CLAIM: int(now)}
    auth_hash = session_auth_hash(user)
    if auth_hash is not None:
        claims[AUTH_HASH_CLAIM] = auth_hash
    return claims


def _auth_time(token: Mapping[str, Any]) -> float | None:
    value = token.get(AUTH_TIME_CLAIM)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _deadline(config: Config, signed_in: float | None) -> float | None:
    """When a session signed in at *signed_in* must end (``absolute_max_age``), if ever."""
    limit = config.session.absolute_max_age
    if limit is None or signed_in is None:
        return None
    return signed_in + limit


def _token_deadline(config: Config, token: Mapping[str, Any]) -> float | None:
    """When the session of *token* must end (``absolute_max_age`` after its sign-in), if ever."""
    limit = config.session.absolute_max_age
    if limit is None:
        return None
    signed_in = _auth_time(token)
    return None if signed_in is None else signed_in + limit


def jwt_lifetime(config: Config, token: Mapping[str, Any], now: float) -> tuple[int, float]:
    """``(the JWT's max_age, the cookie's expiry)`` for issuing *token* at *now*.

    Both stop at the absolute deadline when there is one: ``exp`` keeps its
    meaning (the token is not valid after it), only earlier.
    """
    max_age = config.jwt.max_age
    expires_ts = now + config.session.max_age
    deadline = _token_deadline(config, token)
    if deadline is not None:
        max_age = max(0, min(max_age, int(deadline - now)))
        expires_ts = min(expires_ts, deadline)
    return max_age, expires_ts


def reissue_jwt(config: Config, token: Mapping[str, Any], salt: str) -> tuple[str, datetime]:
    """*token* encoded again with a new expiry: ``(cookie value, cookie expiry)``."""
    now = time.time()
    max_age, expires_ts = jwt_lifetime(config, token, now)
    value = encode_token(config, token, salt, max_age)
    return value, _cookie_expiry(int(expires_ts))


def encode_token(config: Config, token: Mapping[str, Any], salt: str, max_age: int) -> str:
    """Encode a session JWT with ``jwt.encode`` if configured, else :func:`webauth.jwt.encode`."""
    if config.jwt.encode is None:
        return jose.encode(token=token, secret=config.secret, salt=salt, max_age=max_age)
    return call(
        config.jwt.encode, token=token, secret=list(config.secret), salt=salt, max_age=max_age
    )


def decode_token(config: Config, token: str, salt: str) -> dict[str, Any] | None:
    """Decode a session JWT; ``None`` for anything invalid."""
    if config.jwt.decode is None:
        return jose.decode(token=token, secret=config.secret, salt=salt)
    result = call(config.jwt.decode, token=token, secret=list(config.secret), salt=salt)
    return dict(result) if isinstance(result, Mapping) else None


def iso_expires(ts: float) -> str:
    """JavaScript's ``Date.toISOString()``: milliseconds and ``Z``."""
    seconds = int(ts // 1)
    micros = round((ts - seconds) * 1_000_000)  # as datetime.fromtimestamp rounds
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    return f"{_iso_second(seconds)}.{micros // 1000:03d}Z"


@lru_cache(maxsize=4)
def _cookie_expiry(seconds: int) -> datetime:
    # A session cookie's expiry (immutable): sessions read in the same second share it.
    return datetime.fromtimestamp(seconds, UTC)


@lru_cache(maxsize=4)
def _iso_second(seconds: int) -> str:
    # Formatting dominates; sessions read in the same second share it.
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


#: The user's members a new JWT copies, and the claims they become.
_TOKEN_CLAIMS = (("name", "name"), ("email", "email"), ("image", "picture"))


def default_token(user_dict: Mapping[str, Any]) -> dict[str, Any]:
    """Auth.js's token at sign-in, before the ``jwt`` callback: ``name``, ``email``,
    ``picture`` (the user's ``image``) and ``sub`` (its id as a string).

    A member the user does not have is left out (Auth.js's ``undefined``, which
    JSON drops), one that is ``None`` stays ``None``: a credentials user returned
    without ``image`` gives a session without ``image``, a stored user (whose
    row always has the column) ``"image": null``.
    """
    token = {claim: user_dict[key] for key, claim in _TOKEN_CLAIMS if key in user_dict}
    if user_dict.get("id") is not None:
        token["sub"] = str(user_dict["id"])
    return token


def default_session(token: Mapping[str, Any], expires: str) -> dict[str, Any]:
    """Auth.js's default session: name, email and image from the token, and ``expires``."""
    user = {}
    if "name" in token:
        user["name"] = token["name"]
    if "email" in token:
        user["email"] = token["email"]
    if "picture" in token:
        user["image"] = token["picture"]
    return {"user": user, "expires": expires}


@dataclass(slots=True)
class SessionResult:
    """The outcome of reading a session.

    ``session`` is what the client sees (``None`` without a session); ``token`` the
    decoded JWT after the ``jwt`` callback; ``user_id`` the user's id (``sub``).
    ``cookie`` is a new session cookie value to write, ``expires`` its expiry;
    ``clear`` asks for the session cookie(s) to be deleted. ``user`` is the
    adapter's user when the read found it: with the database strategy (in the
    same lookup as the session), and for a JWT bound to a Django user (the
    check of its user). ``extended`` tells whether a database session's expiry
    was just moved. ``valid_until`` is when the session's token stops being
    accepted, where the read or the sign-in knows it: a newly encoded JWT's
    ``exp``, a database session's stored expiry (after any extension). A bearer
    client is told it (:func:`webauth.bearer.token_answer`): it has no cookie
    expiry to go by.
    """

    session: Any = None
    token: dict[str, Any] | None = None
    user_id: str | None = None
    cookie: str | None = None
    expires: datetime | None = None
    clear: bool = False
    user: AdapterUser | None = None
    extended: bool = False
    valid_until: datetime | None = None


def read_jwt_session(
    config: Config,
    raw: str | None,
    salt: str,
    *,
    trigger: str | None = None,
    new_session: Any = _UNSET,
    reissue: bool = True,
    known_user: AdapterUser | None = None,
    load_user: bool = True,
) -> SessionResult:
    """Read a JWT session as ``GET /auth/session`` does (``POST`` with ``trigger="update"``).

    With ``reissue`` the token is re-encoded with a new expiry (sliding session).
    A session bound to a Django user is checked against it: *known_user*, the
    adapter's user this request already loaded, when it is the token's (no
    query); else the user is loaded for ``request.user`` to reuse (``result.user``),
    or, without ``load_user``, checked with the adapter's lean
    ``get_user_session_check`` when it has one.
    """
    if not raw:
        return SessionResult()
    try:
        payload = decode_token(config, raw, salt)
        if payload is None:
            # Expired, forged, or sealed with a secret no longer configured: a
            # stale cookie or an app's old bearer token is everyday traffic, so
            # one warning line rather than an error (issue 13's rule).
            raise JWTSessionError("Invalid JWT", user_caused=True)
        now = time.time()
        deadline = _token_deadline(config, payload)
        if deadline is not None and now >= deadline:
            _ends(config, "absolute_max_age", _sub(payload))
            return SessionResult(clear=True)
        # A session bound to a Django user (it carries the auth hash) lives only
        # while that user exists, is active and has the same password: one query
        # by primary key, the one request.user would make (it reuses this user),
        # or none when this request has loaded the user already.
        user = (
            _bound_user(config, payload, known=known_user, load=load_user)
            if AUTH_HASH_CLAIM in payload
            else None
        )
        if user is False:
            return SessionResult(clear=True)
        # A token from before absolute_max_age was set: its clock starts now.
        start_clock = config.session.absolute_max_age is not None and AUTH_TIME_CLAIM not in payload
        callbacks = config.callbacks
        if callbacks.jwt is None:
            token = payload  # the default jwt callback returns the token as it is
            if start_clock:
                token[AUTH_TIME_CLAIM] = int(now)
        else:
            # webauth's claims are not the callback's to drop or change.
            own = {k: payload[k] for k in _OWN_CLAIMS if k in payload}
            if start_clock:
                own[AUTH_TIME_CLAIM] = int(now)
            params: dict[str, Any] = {"token": payload, "session": None}
            if trigger == "update":
                params.update(
                    trigger="update", session=None if new_session is _UNSET else new_session
                )
            returned = run_jwt(config, **params)
            if returned is None:
                return SessionResult(clear=True)
            token = dict(returned)
            token.update(own)
        jwt_max_age, expires_ts = jwt_lifetime(config, token, now)
        session = default_session(token, iso_expires(expires_ts))
        if callbacks.session is not None:
            s_params: dict[str, Any] = {"session": session, "token": token}
            if trigger == "update":
                s_params.update(
                    trigger="update", new_session=None if new_session is _UNSET else new_session
                )
            session = run_session(config, **s_params)
        user_id = _sub(token)
        return SessionResult(
            session=session,
            token=token,
            user_id=user_id,
            cookie=encode_token(config, token, salt, jwt_max_age) if reissue else None,
            expires=_cookie_expiry(int(expires_ts)) if reissue else None,
            user=user if isinstance(user, AdapterUser) and user.id == user_id else None,
            valid_until=_cookie_expiry(int(now) + jwt_max_age) if reissue else None,
        )
    except SynchronousOnlyOperation:
        raise  # read from async code: a usage error, not an invalid token to delete
    except _UserUnavailable:
        return SessionResult()  # signed out for this request only; the cookie stays
    except Exception as exc:
        error = exc if isinstance(exc, JWTSessionError) else JWTSessionError(cause={"err": exc})
        config.logger.error(error)
        return SessionResult(clear=True)


def _bound_user(
    config: Config,
    token: Mapping[str, Any],
    *,
    known: AdapterUser | None = None,
    load: bool = True,
) -> AdapterUser | bool:
    """Whether the user of a bound token may still use the session.

    ``False`` if not. Else the user: *known* when it is the token's (loaded
    already: no query), else loaded through the adapter; or, without *load*,
    ``True`` after the adapter's lean ``get_user_session_check`` when it can
    answer (nothing loaded for ``request.user``).
    """
    sub = _sub(token)
    user: AdapterUser | None
    try:
        if sub is None:
            user = None
        elif known is not None and known.id == sub and known.instance is not None:
            user = known
        elif not load and _session_check_usable(config):
            reason = _session_check(config, sub, token.get(AUTH_HASH_CLAIM))
            if reason is None:
                return True
            _ends(config, reason, sub)
            return False
        else:
            user = find_user(config, sub)
    except AuthError as exc:
        raise _UserUnavailable from exc
    except SynchronousOnlyOperation as exc:
        raise SynchronousOnlyOperation(
            "Reading a webauth session checks its user in the database. In async views "
            "use the async API: await aget_session(request), await request.auser()."
        ) from exc
    if user is None:
        _ends(config, "user not found", sub)
    elif not getattr(user.instance, "is_active", True):
        _ends(config, "user inactive", sub)
    elif not auth_hash_matches(user.instance, token.get(AUTH_HASH_CLAIM)):
        _ends(config, "password changed", sub)
    else:
        return user
    return False


def new_jwt_session(
    config: Config,
    salt: str,
    *,
    user: Any,
    user_dict: Mapping[str, Any],
    account: Mapping[str, Any] | None,
    profile: Any = None,
    is_new_user: bool = False,
    since: float | None = None,
) -> SessionResult:
    """Create the JWT for a fresh sign-in (``jwt`` callback with trigger signIn/signUp).

    *since* is the sign-in time to record when it is not now: a sign-in that
    only linked a new account to the user already signed in carries on that
    session's time (see :func:`webauth.flows.signin.finish`).
    """
    params: dict[str, Any] = {
        "token": default_token(user_dict),
        "user": user,
        "account": account,
        "profile": profile,
        "trigger": "signUp" if is_new_user else "signIn",
        "is_new_user": is_new_user,
    }
    token = run_jwt(config, **params)
    if token is None:
        return SessionResult(clear=True)
    now = time.time()
    token = {**token, **binding_claims(user, now if since is None else min(since, now))}
    jwt_max_age, expires_ts = jwt_lifetime(config, token, now)
    return SessionResult(
        token=token,
        user_id=_sub(token),
        cookie=encode_token(config, token, salt, jwt_max_age),
        expires=_cookie_expiry(int(expires_ts)),
        valid_until=_cookie_expiry(int(now) + jwt_max_age),
    )


def rebind_jwt(config: Config, raw: str | None, salt: str, user: Any) -> str | None:
    """The JWT *raw* carrying *user*'s current session auth hash (its password changed).

    ``None`` unless *raw* is a valid session of *user* that carries the hash.
    No callback runs: the token is the same session, re-encoded.
    """
    payload = decode_token(config, raw, salt) if raw else None
    if payload is None or AUTH_HASH_CLAIM not in payload:
        return None
    new_hash = session_auth_hash(user)
    if new_hash is None or _sub(payload) != str(getattr(user, "pk", None)):
        return None
    payload[AUTH_HASH_CLAIM] = new_hash
    now = time.time()
    deadline = _token_deadline(config, payload)
    if deadline is not None and now >= deadline:
        return None
    jwt_max_age, _ = jwt_lifetime(config, payload, now)
    return encode_token(config, payload, salt, jwt_max_age)


def read_session(
    config: Config,
    raw: str | None,
    salt: str,
    *,
    trigger: str | None = None,
    new_session: Any = _UNSET,
    reissue: bool = True,
    known_user: AdapterUser | None = None,
    load_user: bool = True,
) -> SessionResult:
    """Read a session cookie's value (*raw*) with the configured strategy.

    *salt* is the session cookie's name (the JWT's key depends on it). With
    ``reissue`` the cookie is made again with a new expiry, as ``GET
    /auth/session`` does; without it the database strategy still extends the
    stored session (and says so in ``extended``), as ordinary pages do.
    ``known_user`` and ``load_user`` say how a JWT's user is checked
    (:func:`read_jwt_session`); a database session comes with its user.
    """
    if config.session.strategy == "database":
        return read_database_session(config, raw, trigger=trigger, new_session=new_session)
    return read_jwt_session(
        config,
        raw,
        salt,
        trigger=trigger,
        new_session=new_session,
        reissue=reissue,
        known_user=known_user,
        load_user=load_user,
    )


def _sub(token: Mapping[str, Any]) -> str | None:
    sub = token.get("sub")
    return str(sub) if sub is not None else None


def end_session(config: Config, raw: str | None, salt: str) -> dict[str, Any]:
    """End the session of cookie value *raw*; returns the ``sign_out`` event's message."""
    if config.session.strategy == "database":
        deleted = config.adapter_caller("delete_session", raw) if raw else None
        return {"session": as_session(deleted)}
    token = decode_token(config, raw, salt) if raw else None
    return {"token": token}


def _user_session(user: AdapterUser, expires: datetime) -> dict[str, Any]:
    """Auth.js's default session for the database strategy."""
    return {
        "user": {"name": user.name, "email": user.email, "image": user.image},
        "expires": iso_expires(expires.timestamp()),
    }


def read_database_session(
    config: Config,
    session_token: str | None,
    *,
    trigger: str | None = None,
    new_session: Any = _UNSET,
    extend: bool = True,
) -> SessionResult:
    """Read a database session as ``GET /auth/session`` does.

    An expired session is deleted. A live one has its expiry moved to
    ``now + max_age`` when it was last extended at least ``update_age`` ago (one
    write per ``update_age`` at most). The cookie is always re-issued with the
    new expiry, as Auth.js does; ``extended`` tells callers that only want to
    write it when the stored expiry moved.
    """
    if not session_token:
        return SessionResult()
    caller = config.adapter_caller
    try:
        pair = as_session_and_user(caller("get_session_and_user", session_token))
        if pair is None:
            return SessionResult(clear=True)
        stored, user = pair
        now = datetime.now(UTC)
        expires = aware(stored.expires)
        if expires <= now:
            caller("delete_session", session_token)
            return SessionResult(clear=True)
        reason = _database_session_ended(config, stored, user, now)
        if reason is not None:
            # Deactivated, password changed or past absolute_max_age: the session
            # ends for good, as contrib.auth's do.
            _ends(config, reason, stored.user_id)
            caller("delete_session", session_token)
            return SessionResult(clear=True)
        max_age = config.session.max_age
        new_expires = now + timedelta(seconds=max_age)
        deadline = _deadline(config, _timestamp(stored.created_at))
        if deadline is not None:
            new_expires = min(new_expires, datetime.fromtimestamp(deadline, UTC))
        extended = False
        due = expires - timedelta(seconds=max_age - config.session.update_age) <= now
        if extend and due and (deadline is None or new_expires > expires):
            caller(
                "update_session",
                {
                    "session_token": session_token,
                    "user_id": stored.user_id,
                    "expires": new_expires,
                },
            )
            extended = True
        # As in Auth.js, the session shows the stored expiry read before extending it.
        session: Any = _user_session(user, expires)
        params: dict[str, Any] = {"session": session, "user": user}
        if trigger == "update":
            params.update(
                trigger="update", new_session=None if new_session is _UNSET else new_session
            )
        session = run_session(config, **params)
    except SynchronousOnlyOperation:
        raise  # read from async code: use aget_session() / request.auser()
    except Exception as exc:
        error = exc if isinstance(exc, SessionTokenError) else SessionTokenError(cause={"err": exc})
        config.logger.error(error)
        return SessionResult()
    return SessionResult(
        session=session,
        user_id=user.id,
        user=user,
        cookie=session_token,
        expires=new_expires,
        extended=extended,
        valid_until=new_expires if extended else expires,
    )


def _timestamp(value: datetime | None) -> float | None:
    return aware(value).timestamp() if value is not None else None


def _database_session_ended(
    config: Config, stored: AdapterSession, user: AdapterUser, now: datetime
) -> str | None:
    """Why a stored, unexpired session must end now, or ``None``.

    The auth hash and the sign-in time are checked when the adapter returns
    them (``DjangoAdapter`` does); the user comes with the session, so no
    check costs a query.
    """
    deadline = _deadline(config, _timestamp(stored.created_at))
    if deadline is not None and now.timestamp() >= deadline:
        return "absolute_max_age"
    instance = user.instance
    if instance is not None and not getattr(instance, "is_active", True):
        return "user inactive"
    changed = stored.auth_hash and not auth_hash_matches(instance, stored.auth_hash)
    if instance is not None and changed:
        return "password changed"
    return None


def new_database_session(
    config: Config,
    *,
    user_id: str,
    user_agent: str | None = None,
    ip_address: str | None = None,
    replaces: str | None = None,
    user: Any = None,
    since: float | None = None,
) -> SessionResult:
    """Create a database session for a fresh sign-in.

    ``replaces`` is the request's previous session token, deleted so that a
    sign-in always starts a new session (no session fixation). ``user`` (the
    model instance or ``AdapterUser``) gives the session its auth hash: it ends
    when the password changes. ``since`` is the sign-in time to record
    (``created_at``) when it is not now: see :func:`new_jwt_session`.
    """
    caller = config.adapter_caller
    caller.require("create_session")
    generate = config.session.generate_session_token
    token = str(generate()) if generate is not None else secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    signed_in = now if since is None else min(datetime.fromtimestamp(since, UTC), now)
    expires = now + timedelta(seconds=config.session.max_age)
    if config.session.absolute_max_age is not None:
        expires = min(expires, signed_in + timedelta(seconds=config.session.absolute_max_age))
    if replaces:
        caller("delete_session", replaces)
    record = AdapterSession(
        session_token=token,
        user_id=user_id,
        expires=expires,
        user_agent=(user_agent or "")[:512] or None,
        ip_address=ip_address,
        created_at=signed_in,
        auth_hash=session_auth_hash(user) if user is not None else None,
    )
    created = as_session(caller("create_session", record))
    stored_expires = aware(created.expires) if created is not None else expires
    return SessionResult(
        user_id=user_id, cookie=token, expires=stored_expires, valid_until=stored_expires
    )


def rebind_database_session(config: Config, session_token: str | None, user: Any) -> bool:
    """Store *user*'s current session auth hash on the database session *session_token*.

    Only for a session of *user* whose adapter keeps the hash; returns whether
    it was updated.
    """
    if not session_token:
        return False
    caller = config.adapter_caller
    pair = as_session_and_user(caller("get_session_and_user", session_token))
    new_hash = session_auth_hash(user)
    if pair is None or new_hash is None:
        return False
    stored, owner = pair
    if not stored.auth_hash or owner.id != str(getattr(user, "pk", None)):
        return False
    updated = caller(
        "update_session",
        {"session_token": session_token, "user_id": stored.user_id, "auth_hash": new_hash},
    )
    return updated is not None


def signed_in_at(config: Config, raw: str | None, salt: str) -> float | None:
    """When the session of cookie value *raw* signed in (a POSIX time), if it says.

    The JWT's ``webauth_auth_time`` claim as the token carries it, or the
    database session's ``created_at``, read through the adapter. ``None`` for no
    session, an unreadable one, or one that does not record it (a token an
    Auth.js app made, an adapter that returns no ``created_at``). Only the time
    is read: whether the session is still valid is the caller's concern.
    """
    if not raw:
        return None
    if config.session.strategy == "database":
        try:
            pair = as_session_and_user(config.adapter_caller("get_session_and_user", raw))
        except AuthError:  # a failing adapter (logged): the time is unknown
            return None
        return _timestamp(pair[0].created_at) if pair is not None else None
    try:
        token = decode_token(config, raw, salt)
    except Exception:  # a custom jwt.decode may raise for a bad token
        return None
    return _auth_time(token) if token is not None else None


def current_user(config: Config, raw: str | None, salt: str) -> AdapterUser | None:
    """The user whose live session cookie value *raw* is, through the configured adapter.

    For a sign-in that links an account to the user already signed in: only
    the cookie is read (no callback runs, nothing is extended), but a session
    that has ended (expired, past ``absolute_max_age``, its user inactive or
    with another password) has no user.
    """
    if not raw:
        return None
    caller = config.adapter_caller
    if config.session.strategy == "database":
        pair = as_session_and_user(caller("get_session_and_user", raw))
        if pair is None:
            return None
        stored, user = pair
        now = datetime.now(UTC)
        if aware(stored.expires) <= now or _database_session_ended(config, stored, user, now):
            return None
        return user
    token = decode_token(config, raw, salt)
    if not token or not token.get("sub"):
        return None
    deadline = _token_deadline(config, token)
    if deadline is not None and time.time() >= deadline:
        return None
    if AUTH_HASH_CLAIM in token:
        try:
            bound = _bound_user(config, token)
        except _UserUnavailable:
            return None
        return bound if isinstance(bound, AdapterUser) else None
    return as_user(caller("get_user", str(token["sub"])))
