"""The ``jwt`` strategy: the whole session is an encrypted token in the session cookie.

Auth.js's own: the token is a JWE that an Auth.js app sharing the secret reads
(and writes) too. The server keeps nothing, so a session cannot be revoked one
by one: it ends when it expires, or when its user is deactivated or changes
password (the token is bound to them, :mod:`webauth.sessions.binding`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

from django.core.exceptions import SynchronousOnlyOperation

from .. import jwt as jose
from ..callbacks import run_jwt, run_session
from ..errors import AuthError, JWTSessionError
from ..types import AdapterUser
from ..typing_aliases import EventFields
from ..utils import call, user_to_dict
from .base import (
    UNSET,
    Assurance,
    EndedSession,
    SessionFacts,
    SessionResult,
    SessionStrategy,
    cookie_expiry,
    iso_expires,
    session_id,
    sub_of,
)
from .binding import (
    AUTH_HASH_CLAIM,
    AUTH_TIME_CLAIM,
    OWN_CLAIMS,
    SIGN_IN_ID_CLAIM,
    UserUnavailable,
    _session_check,
    _session_check_usable,
    assurance_claims,
    assurance_of,
    auth_hash_matches,
    auth_time,
    binding_claims,
    find_user,
    session_auth_hash,
    session_ends,
)

if TYPE_CHECKING:
    from ..conf import Config
    from .base import BindUser, Claims, NewSession

__all__ = [
    "JwtSessions",
    "decode_token",
    "default_session",
    "default_token",
    "encode_token",
    "jwt_lifetime",
    "new_jwt_session",
    "read_jwt_session",
    "rebind_jwt",
    "reissue_jwt",
]


def _token_deadline(config: Config, token: Mapping[str, object]) -> float | None:
    """When the session of *token* must end (``absolute_max_age`` after its sign-in), if ever."""
    limit = config.session.absolute_max_age
    if limit is None:
        return None
    signed_in = auth_time(token)
    return None if signed_in is None else signed_in + limit


def jwt_lifetime(config: Config, token: Mapping[str, object], now: float) -> tuple[int, float]:
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


def reissue_jwt(config: Config, token: Mapping[str, object], salt: str) -> tuple[str, datetime]:
    """*token* encoded again with a new expiry: ``(cookie value, cookie expiry)``."""
    now = time.time()
    max_age, expires_ts = jwt_lifetime(config, token, now)
    value = encode_token(config, token, salt, max_age)
    return value, cookie_expiry(int(expires_ts))


def encode_token(config: Config, token: Mapping[str, object], salt: str, max_age: int) -> str:
    """Encode a session JWT with ``jwt.encode`` if configured, else :func:`webauth.jwt.encode`."""
    if config.jwt.encode is None:
        return jose.encode(token=token, secret=config.secret, salt=salt, max_age=max_age)
    # The project's own encoder; what it returns is the cookie's value.
    value: str = call(
        config.jwt.encode, token=token, secret=list(config.secret), salt=salt, max_age=max_age
    )
    return value


def decode_token(config: Config, token: str, salt: str) -> dict[str, object] | None:
    """Decode a session JWT; ``None`` for anything invalid."""
    if config.jwt.decode is None:
        return jose.decode(token=token, secret=config.secret, salt=salt)
    result = call(config.jwt.decode, token=token, secret=list(config.secret), salt=salt)
    return dict(result) if isinstance(result, Mapping) else None


_TOKEN_CLAIMS = (("name", "name"), ("email", "email"), ("image", "picture"))


def default_token(user_dict: Mapping[str, object]) -> dict[str, object]:
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


def default_session(token: Mapping[str, object], expires: str) -> dict[str, object]:
    """Auth.js's default session: name, email and image from the token, and ``expires``."""
    user = {}
    if "name" in token:
        user["name"] = token["name"]
    if "email" in token:
        user["email"] = token["email"]
    if "picture" in token:
        user["image"] = token["picture"]
    return {"user": user, "expires": expires}


def read_jwt_session(
    config: Config,
    raw: str | None,
    salt: str,
    *,
    trigger: str | None = None,
    new_session: object = UNSET,
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
            session_ends(config, "absolute_max_age", sub_of(payload))
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
            own = {k: payload[k] for k in OWN_CLAIMS if k in payload}
            if start_clock:
                own[AUTH_TIME_CLAIM] = int(now)
            params: dict[str, object] = {"token": payload, "session": None}
            if trigger == "update":
                params.update(
                    trigger="update", session=None if new_session is UNSET else new_session
                )
            returned = run_jwt(config, **params)
            if returned is None:
                return SessionResult(clear=True)
            token = dict(returned)
            token.update(own)
        jwt_max_age, expires_ts = jwt_lifetime(config, token, now)
        session = default_session(token, iso_expires(expires_ts))
        if callbacks.session is not None:
            s_params: dict[str, object] = {"session": session, "token": token}
            if trigger == "update":
                s_params.update(
                    trigger="update", new_session=None if new_session is UNSET else new_session
                )
            session = run_session(config, **s_params)
        user_id = sub_of(token)
        return SessionResult(
            session=session,
            token=token,
            user_id=user_id,
            cookie=encode_token(config, token, salt, jwt_max_age) if reissue else None,
            expires=cookie_expiry(int(expires_ts)) if reissue else None,
            user=user if isinstance(user, AdapterUser) and user.id == user_id else None,
            valid_until=cookie_expiry(int(now) + jwt_max_age) if reissue else None,
        )
    except SynchronousOnlyOperation:
        raise  # read from async code: a usage error, not an invalid token to delete
    except UserUnavailable:
        return SessionResult()  # signed out for this request only; the cookie stays
    except Exception as exc:
        error = exc if isinstance(exc, JWTSessionError) else JWTSessionError(cause={"err": exc})
        config.logger.error(error)
        return SessionResult(clear=True)


def _bound_user(
    config: Config,
    token: Mapping[str, object],
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
    sub = sub_of(token)
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
            session_ends(config, reason, sub)
            return False
        else:
            user = find_user(config, sub)
    except AuthError as exc:
        raise UserUnavailable from exc
    except SynchronousOnlyOperation as exc:
        raise SynchronousOnlyOperation(
            "Reading a webauth session checks its user in the database. In async views "
            "use the async API: await aget_session(request), await request.auser()."
        ) from exc
    if user is None:
        session_ends(config, "user not found", sub)
    elif not getattr(user.instance, "is_active", True):
        session_ends(config, "user inactive", sub)
    elif not auth_hash_matches(user.instance, token.get(AUTH_HASH_CLAIM)):
        session_ends(config, "password changed", sub)
    else:
        return user
    return False


def new_jwt_session(config: Config, salt: str, new: NewSession) -> SessionResult:
    """Create the JWT for a fresh sign-in (``jwt`` callback with trigger signIn/signUp).

    ``new.since`` is the sign-in time to record when it is not now: a sign-in
    that only linked a new account to the user already signed in carries on
    that session's time (see :func:`webauth.flows.signin.conclude`).
    """
    user, since = new.user, new.since
    params: dict[str, object] = {
        "token": default_token(new.user_dict),
        "user": user,
        "account": new.account,
        "profile": new.profile,
        "trigger": "signUp" if new.is_new_user else "signIn",
        "is_new_user": new.is_new_user,
    }
    token = run_jwt(config, **params)
    if token is None:
        return SessionResult(clear=True)
    now = time.time()
    token = {
        **token,
        **binding_claims(
            user, now if since is None else min(since, now), sign_in_id=config.tokens is not None
        ),
        **assurance_claims(new.amr, new.mfa_at),
    }
    jwt_max_age, expires_ts = jwt_lifetime(config, token, now)
    return SessionResult(
        token=token,
        user_id=sub_of(token),
        cookie=encode_token(config, token, salt, jwt_max_age),
        expires=cookie_expiry(int(expires_ts)),
        valid_until=cookie_expiry(int(now) + jwt_max_age),
    )


def rebind_jwt(config: Config, raw: str | None, salt: str, user: object) -> str | None:
    """The JWT *raw* carrying *user*'s current session auth hash (its password changed).

    ``None`` unless *raw* is a valid session of *user* that carries the hash.
    No callback runs: the token is the same session, re-encoded.
    """
    payload = decode_token(config, raw, salt) if raw else None
    if payload is None or AUTH_HASH_CLAIM not in payload:
        return None
    new_hash = session_auth_hash(user)
    if new_hash is None or sub_of(payload) != str(getattr(user, "pk", None)):
        return None
    payload[AUTH_HASH_CLAIM] = new_hash
    now = time.time()
    deadline = _token_deadline(config, payload)
    if deadline is not None and now >= deadline:
        return None
    jwt_max_age, _ = jwt_lifetime(config, payload, now)
    return encode_token(config, payload, salt, jwt_max_age)


class JwtSessions(SessionStrategy):
    """Sessions as encrypted tokens in the cookie (``strategy: "jwt"``)."""

    name: ClassVar[str] = "jwt"
    stored: ClassVar[bool] = False
    adapter_feature: ClassVar[str] = "jwt_with_adapter"

    # The function itself, not a method calling it: one frame less on every
    # GET /auth/session (SessionStrategy.read has its signature, bar self).
    read = staticmethod(read_jwt_session)

    def create(self, config: Config, salt: str, new: NewSession) -> SessionResult:
        # A new token replaces the cookie: there is nothing stored to delete.
        return new_jwt_session(config, salt, new)

    def end(self, config: Config, raw: str | None, salt: str) -> EndedSession:
        token = decode_token(config, raw, salt) if raw else None
        return EndedSession(message={"token": token}, ended=token is not None)

    def revoke(self, config: Config, raw: str | None) -> None:
        return None  # the token stays valid until it expires; the cookie goes

    def slide(
        self, config: Config, result: SessionResult, salt: str, bind: BindUser
    ) -> tuple[str | None, datetime | None] | None:
        if result.cookie is not None:  # a JWT made for this response (use_session_token)
            return result.cookie, result.expires
        token = result.token
        if token is None:
            return None
        iat = token.get("iat")
        age = time.time() - iat if isinstance(iat, int | float) else float("inf")
        if age < config.session.update_age:
            return None
        if AUTH_HASH_CLAIM not in token:
            # An older token, not bound to its user yet: bind it now (a query at
            # most once per update_age), or end it if its user is inactive.
            auth_hash = bind()
            if auth_hash is False:
                return None, None
            if isinstance(auth_hash, str):
                token = {**token, AUTH_HASH_CLAIM: auth_hash}
        return reissue_jwt(config, token, salt)

    def signed_in_at(self, config: Config, raw: str | None, salt: str) -> float | None:
        if not raw:
            return None
        try:
            token = decode_token(config, raw, salt)
        except Exception:  # a custom jwt.decode may raise for a bad token
            return None
        return auth_time(token) if token is not None else None

    def assurance(self, config: Config, raw: str | None, salt: str) -> Assurance:
        if not raw:
            return Assurance()
        try:
            token = decode_token(config, raw, salt)
        except Exception:  # a custom jwt.decode may raise for a bad token
            return Assurance()
        return assurance_of(token) if token is not None else Assurance()

    def facts(self, config: Config, raw: str | None, salt: str) -> SessionFacts | None:
        if not raw:
            return None
        try:
            token = decode_token(config, raw, salt)
        except Exception:  # a custom jwt.decode may raise for a bad token
            return None
        sub = sub_of(token) if token is not None else None
        if token is None or sub is None:
            return None
        signed_in = auth_time(token)
        # A JWT is encoded anew as it slides; its user, sign-in (time and random
        # id) and password era stay: they are the id (a password change kept by
        # this browser makes a new one). A token without a sign-in time (an
        # Auth.js app's) gets the id of this encoding, which changes as it slides.
        era = token.get(AUTH_HASH_CLAIM) or ""
        sign_in = token.get(SIGN_IN_ID_CLAIM) or ""
        material = (
            f"jwt\0{sub}\0{int(signed_in)}\0{sign_in}\0{era}"
            if signed_in is not None
            else f"raw\0{raw}"
        )
        return SessionFacts(
            sid=session_id(config, material), signed_in_at=signed_in, assurance=assurance_of(token)
        )

    def current_user(self, config: Config, raw: str | None, salt: str) -> AdapterUser | None:
        if not raw:
            return None
        token = decode_token(config, raw, salt)
        if not token or not token.get("sub"):
            return None
        deadline = _token_deadline(config, token)
        if deadline is not None and time.time() >= deadline:
            return None
        if AUTH_HASH_CLAIM in token:
            try:
                bound = _bound_user(config, token)
            except UserUnavailable:
                return None
            return bound if isinstance(bound, AdapterUser) else None
        return config.storage.require("get_user").get_user(str(token["sub"]))

    def rebind(self, config: Config, raw: str | None, salt: str, user: object) -> str | None:
        return rebind_jwt(config, raw, salt, user)

    def event_fields(self, result: SessionResult) -> EventFields:
        return {"session": result.session, "token": result.token}

    def session_for(self, config: Config, salt: str, user: object, claims: Claims = None) -> str:
        now = time.time()
        token = {
            **default_token(
                user_to_dict(user)
            ),  # as a sign-in makes it: only the fields the user has
            # As a sign-in makes it: bound to a Django user's password and activeness.
            **binding_claims(user, now, sign_in_id=config.tokens is not None),
            **(claims or {}),
        }
        return encode_token(config, token, salt, jwt_lifetime(config, token, now)[0])
