"""Reading, creating and ending sessions: one object per strategy.

With ``jwt`` (:class:`~webauth.sessions.jwt.JwtSessions`) the whole session
is an encrypted token in the session cookie; with ``database``
(:class:`~webauth.sessions.database.DatabaseSessions`) the cookie holds a
session token and the session lives in the adapter's storage. Both have the
interface of :class:`~webauth.sessions.base.SessionStrategy` (read, create,
end, slide, signed-in time); :func:`strategy_of` gives a configuration's, and
nothing outside this package asks which one it is.

:mod:`webauth.sessions.binding` ties a session to its user (the session auth
hash, the sign-in time), the same under both strategies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    Assurance,
    EndedSession,
    NewSession,
    SessionResult,
    SessionStrategy,
    iso_expires,
)
from .binding import (
    AUTH_HASH_CLAIM,
    AUTH_TIME_CLAIM,
    SESSION_CHECK_METHOD,
    auth_hash_matches,
    binding_claims,
    find_user,
    session_auth_hash,
)
from .database import (
    DatabaseSessions,
    new_database_session,
    read_database_session,
    rebind_database_session,
)
from .jwt import (
    JwtSessions,
    decode_token,
    default_session,
    default_token,
    encode_token,
    jwt_lifetime,
    new_jwt_session,
    read_jwt_session,
    rebind_jwt,
    reissue_jwt,
)

if TYPE_CHECKING:
    from ..conf import Config

__all__ = [
    "AUTH_HASH_CLAIM",
    "AUTH_TIME_CLAIM",
    "SESSION_CHECK_METHOD",
    "STRATEGIES",
    "Assurance",
    "DatabaseSessions",
    "EndedSession",
    "JwtSessions",
    "NewSession",
    "SessionResult",
    "SessionStrategy",
    "assurance",
    "auth_hash_matches",
    "binding_claims",
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
    "strategy_of",
]

#: ``WEBAUTH["session"]["strategy"]`` -> its strategy (the configuration checks
#: the name against these keys).
STRATEGIES: dict[str, SessionStrategy] = {
    JwtSessions.name: JwtSessions(),
    DatabaseSessions.name: DatabaseSessions(),
}


def strategy_of(config: Config) -> SessionStrategy:
    """The session strategy *config* chose."""
    return STRATEGIES[config.session.strategy]


def read_session(config: Config, raw: str | None, salt: str, **options: Any) -> SessionResult:
    """Read a session cookie's value (*raw*) with the configured strategy.

    *salt* is the session cookie's name (the JWT's key depends on it); the
    *options* are :meth:`SessionStrategy.read`'s (``trigger``, ``new_session``,
    ``reissue``, ``known_user``, ``load_user``). With
    ``reissue`` the cookie is made again with a new expiry, as ``GET
    /auth/session`` does; without it the database strategy still extends the
    stored session (and says so in ``extended``), as ordinary pages do.
    ``known_user`` and ``load_user`` say how a JWT's user is checked
    (:func:`read_jwt_session`); a database session comes with its user.
    """
    return STRATEGIES[config.session.strategy].read(config, raw, salt, **options)


def assurance(config: Config, raw: str | None, salt: str) -> Assurance:
    """How the user of the session of cookie value *raw* proved who they are (docs/mfa.md).

    The JWT's ``amr`` and ``webauth_mfa_time`` claims, or the database
    session's ``amr`` and ``mfa_at``; nothing for no session or an unreadable one.
    """
    return STRATEGIES[config.session.strategy].assurance(config, raw, salt)


def signed_in_at(config: Config, raw: str | None, salt: str) -> float | None:
    """When the session of cookie value *raw* signed in (a POSIX time), if it says.

    The JWT's ``webauth_auth_time`` claim as the token carries it, or the
    database session's ``created_at``, read through the adapter. ``None`` for no
    session, an unreadable one, or one that does not record it (a token an
    Auth.js app made, an adapter that returns no ``created_at``). Only the time
    is read: whether the session is still valid is the caller's concern.
    """
    return STRATEGIES[config.session.strategy].signed_in_at(config, raw, salt)
