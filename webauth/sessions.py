"""Reading, creating and ending sessions.

One interface over the two strategies: with ``jwt`` the whole session is an
encrypted token in the session cookie; with ``database`` the cookie holds a
session token and the session lives in the adapter's storage.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from . import jwt as jose
from .callbacks import run_jwt, run_session
from .conf import Config
from .errors import JWTSessionError

if TYPE_CHECKING:
    from .context import AuthContext

__all__ = [
    "SessionResult",
    "decode_token",
    "default_session",
    "encode_token",
    "iso_expires",
    "new_jwt_session",
    "read_jwt_session",
    "read_session",
]

_UNSET: Any = object()


def encode_token(config: Config, token: Mapping[str, Any], salt: str, max_age: int) -> str:
    """Encode a session JWT with ``jwt.encode`` if configured, else :func:`webauth.jwt.encode`."""
    fn = config.jwt.encode or jose.encode
    from .utils import call

    return call(fn, token=token, secret=list(config.secret), salt=salt, max_age=max_age)


def decode_token(config: Config, token: str, salt: str) -> dict[str, Any] | None:
    """Decode a session JWT; ``None`` for anything invalid."""
    if config.jwt.decode is None:
        return jose.decode(token=token, secret=config.secret, salt=salt)
    from .utils import call

    result = call(config.jwt.decode, token=token, secret=list(config.secret), salt=salt)
    return dict(result) if isinstance(result, Mapping) else None


def iso_expires(ts: float) -> str:
    """JavaScript's ``Date.toISOString()``: milliseconds and ``Z``."""
    dt = datetime.fromtimestamp(ts, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def default_session(token: Mapping[str, Any], expires: str) -> dict[str, Any]:
    """Auth.js's default session: name, email and image from the token, and ``expires``."""
    user = {}
    for key, claim in (("name", "name"), ("email", "email"), ("image", "picture")):
        if key in ("name", "email", "image") and claim in token:
            user[key] = token[claim]
    return {"user": user, "expires": expires}


@dataclass(slots=True)
class SessionResult:
    """The outcome of reading a session.

    ``session`` is what the client sees (``None`` without a session); ``token`` the
    decoded JWT after the ``jwt`` callback; ``user_id`` the user's id (``sub``).
    ``cookie`` is a new session cookie value to write, ``expires`` its expiry;
    ``clear`` asks for the session cookie(s) to be deleted.
    """

    session: Any = None
    token: dict[str, Any] | None = None
    user_id: str | None = None
    cookie: str | None = None
    expires: datetime | None = None
    clear: bool = False


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
        params: dict[str, Any] = {"token": payload, "session": None}
        if trigger == "update":
            params.update(trigger="update", session=None if new_session is _UNSET else new_session)
        token = run_jwt(config, **params)
        if token is None:
            return SessionResult(clear=True)
        token = dict(token)
        now = time.time()
        max_age = config.session.max_age
        expires_ts = now + max_age
        session = default_session(token, iso_expires(expires_ts))
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
    ctx: AuthContext,
    *,
    trigger: str | None = None,
    new_session: Any = _UNSET,
    reissue: bool = True,
) -> SessionResult:
    """Read the request's session with the configured strategy."""
    return read_jwt_session(
        ctx.config,
        ctx.session_cookie_value,
        ctx.cookies["session_token"].name,
        trigger=trigger,
        new_session=new_session,
        reissue=reissue,
    )


def _sub(token: Mapping[str, Any]) -> str | None:
    sub = token.get("sub")
    return str(sub) if sub is not None else None


def end_session(ctx: AuthContext) -> dict[str, Any]:
    """End the request's session; returns the ``sign_out`` event's message."""
    raw = ctx.session_cookie_value
    token = decode_token(ctx.config, raw, ctx.cookies["session_token"].name) if raw else None
    return {"token": token}
