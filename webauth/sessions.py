"""Reading, creating and ending sessions.

One interface over the two strategies: with ``jwt`` the whole session is an
encrypted token in the session cookie; with ``database`` the cookie holds a
session token and the session lives in the adapter's storage.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from django.core.exceptions import SynchronousOnlyOperation

from . import jwt as jose
from .callbacks import run_jwt, run_session
from .errors import JWTSessionError, SessionTokenError
from .types import AdapterSession, AdapterUser, as_session, as_session_and_user
from .utils import aware, call

if TYPE_CHECKING:
    from .conf import Config

__all__ = [
    "SessionResult",
    "decode_token",
    "default_session",
    "encode_token",
    "iso_expires",
    "new_database_session",
    "new_jwt_session",
    "read_database_session",
    "read_jwt_session",
    "read_session",
]

_UNSET: Any = object()


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
def _iso_second(seconds: int) -> str:
    # Formatting dominates; sessions read in the same second share it.
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


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
    ``clear`` asks for the session cookie(s) to be deleted. With the database
    strategy ``user`` is the adapter's user (read in the same lookup as the
    session) and ``extended`` tells whether the session's expiry was just moved.
    """

    session: Any = None
    token: dict[str, Any] | None = None
    user_id: str | None = None
    cookie: str | None = None
    expires: datetime | None = None
    clear: bool = False
    user: AdapterUser | None = None
    extended: bool = False


def read_jwt_session(
    config: Config,
    raw: str | None,
    salt: str,
    *,
    trigger: str | None = None,
    new_session: Any = _UNSET,
    reissue: bool = True,
) -> SessionResult:
    """Read a JWT session as ``GET /auth/session`` does (``POST`` with ``trigger="update"``).

    With ``reissue`` the token is re-encoded with a new expiry (sliding session).
    """
    if not raw:
        return SessionResult()
    try:
        payload = decode_token(config, raw, salt)
        if payload is None:
            raise JWTSessionError("Invalid JWT")
        callbacks = config.callbacks
        if callbacks.jwt is None:
            token = payload  # the default jwt callback returns the token as it is
        else:
            params: dict[str, Any] = {"token": payload, "session": None}
            if trigger == "update":
                params.update(
                    trigger="update", session=None if new_session is _UNSET else new_session
                )
            returned = run_jwt(config, **params)
            if returned is None:
                return SessionResult(clear=True)
            token = dict(returned)
        expires_ts = time.time() + config.session.max_age
        session = default_session(token, iso_expires(expires_ts))
        if callbacks.session is not None:
            s_params: dict[str, Any] = {"session": session, "token": token}
            if trigger == "update":
                s_params.update(
                    trigger="update", new_session=None if new_session is _UNSET else new_session
                )
            session = run_session(config, **s_params)
        result = SessionResult(session=session, token=token, user_id=_sub(token))
        if reissue:
            result.cookie = encode_token(config, token, salt, config.jwt.max_age)
            result.expires = datetime.fromtimestamp(int(expires_ts), UTC)
        return result
    except SynchronousOnlyOperation:
        raise  # read from async code: a usage error, not an invalid token to delete
    except Exception as exc:
        error = exc if isinstance(exc, JWTSessionError) else JWTSessionError(cause={"err": exc})
        config.logger.error(error)
        return SessionResult(clear=True)


def new_jwt_session(
    config: Config,
    salt: str,
    *,
    user: Any,
    user_dict: Mapping[str, Any],
    account: Mapping[str, Any] | None,
    profile: Any = None,
    is_new_user: bool = False,
) -> SessionResult:
    """Create the JWT for a fresh sign-in (``jwt`` callback with trigger signIn/signUp)."""
    default = {
        "name": user_dict.get("name"),
        "email": user_dict.get("email"),
        "picture": user_dict.get("image"),
        "sub": str(user_dict["id"]) if user_dict.get("id") is not None else None,
    }
    params: dict[str, Any] = {
        "token": default,
        "user": user,
        "account": account,
        "profile": profile,
        "trigger": "signUp" if is_new_user else "signIn",
        "is_new_user": is_new_user,
    }
    token = run_jwt(config, **params)
    if token is None:
        return SessionResult(clear=True)
    token = dict(token)
    expires_ts = time.time() + config.session.max_age
    return SessionResult(
        token=token,
        user_id=_sub(token),
        cookie=encode_token(config, token, salt, config.jwt.max_age),
        expires=datetime.fromtimestamp(int(expires_ts), UTC),
    )


def read_session(
    config: Config,
    raw: str | None,
    salt: str,
    *,
    trigger: str | None = None,
    new_session: Any = _UNSET,
    reissue: bool = True,
) -> SessionResult:
    """Read a session cookie's value (*raw*) with the configured strategy.

    *salt* is the session cookie's name (the JWT's key depends on it). With
    ``reissue`` the cookie is made again with a new expiry, as ``GET
    /auth/session`` does; without it the database strategy still extends the
    stored session (and says so in ``extended``), as ordinary pages do.
    """
    if config.session.strategy == "database":
        return read_database_session(config, raw, trigger=trigger, new_session=new_session)
    return read_jwt_session(
        config, raw, salt, trigger=trigger, new_session=new_session, reissue=reissue
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
        if user.instance is not None and not getattr(user.instance, "is_active", True):
            # A deactivated user's sessions end, as contrib.auth's do.
            caller("delete_session", session_token)
            return SessionResult(clear=True)
        max_age = config.session.max_age
        extended = False
        if extend and expires - timedelta(seconds=max_age - config.session.update_age) <= now:
            caller(
                "update_session",
                {
                    "session_token": session_token,
                    "user_id": stored.user_id,
                    "expires": now + timedelta(seconds=max_age),
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
        expires=now + timedelta(seconds=max_age),
        extended=extended,
    )


def new_database_session(
    config: Config,
    *,
    user_id: str,
    user_agent: str | None = None,
    ip_address: str | None = None,
    replaces: str | None = None,
) -> SessionResult:
    """Create a database session for a fresh sign-in.

    ``replaces`` is the request's previous session token, deleted so that a
    sign-in always starts a new session (no session fixation).
    """
    caller = config.adapter_caller
    caller.require("create_session")
    generate = config.session.generate_session_token
    token = str(generate()) if generate is not None else secrets.token_urlsafe(32)
    expires = datetime.now(UTC) + timedelta(seconds=config.session.max_age)
    if replaces:
        caller("delete_session", replaces)
    record = AdapterSession(
        session_token=token,
        user_id=user_id,
        expires=expires,
        user_agent=(user_agent or "")[:512] or None,
        ip_address=ip_address,
    )
    created = as_session(caller("create_session", record))
    stored_expires = aware(created.expires) if created is not None else expires
    return SessionResult(user_id=user_id, cookie=token, expires=stored_expires)
