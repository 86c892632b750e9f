"""What both session strategies share: the result of reading a session, the
strategy interface, and the clocks of a session's life."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ClassVar

from ..typing_aliases import EventFields
from ..utils import aware

if TYPE_CHECKING:
    from ..conf import Config
    from ..types import AdapterUser

__all__ = [
    "UNSET",
    "Assurance",
    "EndedSession",
    "NewSession",
    "SessionFacts",
    "SessionResult",
    "SessionStrategy",
    "absolute_deadline",
    "cookie_expiry",
    "database_sid",
    "iso_expires",
    "session_id",
    "sub_of",
    "timestamp",
]

#: "No value given" for a session update's data (``None`` is a value: Auth.js's ``null``).
UNSET: object = object()


def absolute_deadline(config: Config, signed_in: float | None) -> float | None:
    """When a session signed in at *signed_in* must end (``absolute_max_age``), if ever."""
    limit = config.session.absolute_max_age
    if limit is None or signed_in is None:
        return None
    return signed_in + limit


def iso_expires(ts: float) -> str:
    """JavaScript's ``Date.toISOString()``: milliseconds and ``Z``."""
    seconds = int(ts // 1)
    micros = round((ts - seconds) * 1_000_000)  # as datetime.fromtimestamp rounds
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    return f"{_iso_second(seconds)}.{micros // 1000:03d}Z"


@lru_cache(maxsize=4)
def cookie_expiry(seconds: int) -> datetime:
    """A session cookie's expiry at POSIX second *seconds*."""
    # A session cookie's expiry (immutable): sessions read in the same second share it.
    return datetime.fromtimestamp(seconds, UTC)


@lru_cache(maxsize=4)
def _iso_second(seconds: int) -> str:
    # Formatting dominates; sessions read in the same second share it.
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


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
    token: dict[str, object] | None = None
    user_id: str | None = None
    cookie: str | None = None
    expires: datetime | None = None
    clear: bool = False
    user: AdapterUser | None = None
    extended: bool = False
    valid_until: datetime | None = None


def sub_of(token: Mapping[str, object]) -> str | None:
    """A token's ``sub`` as a string, or ``None``."""
    sub = token.get("sub")
    return str(sub) if sub is not None else None


def timestamp(value: datetime | None) -> float | None:
    """A stored datetime as a POSIX time (``None`` stays ``None``)."""
    return aware(value).timestamp() if value is not None else None


@dataclass(frozen=True, slots=True)
class NewSession:
    """A fresh sign-in, as :meth:`SessionStrategy.create` makes its session.

    ``user`` is what callbacks receive (an ``AdapterUser`` or ``authorize``'s
    object), ``user_dict`` its ``id``, ``name``, ``email`` and ``image``;
    ``account`` and ``profile`` what the ``jwt`` callback gets; ``replaces``
    the request's previous session token (deleted: no session fixation);
    ``since`` the sign-in time to record when it is not now (a sign-in that
    only linked an account carries on the session's time); ``amr`` how the
    person proved who they are and ``mfa_at`` when they last proved two
    factors (:class:`Assurance`).
    """

    user: object
    user_dict: Mapping[str, object]
    account: Mapping[str, object] | None = None
    profile: object = None
    is_new_user: bool = False
    user_agent: str | None = None
    ip_address: str | None = None
    replaces: str | None = None
    since: float | None = None
    amr: tuple[str, ...] = ()
    mfa_at: float | None = None


@dataclass(frozen=True, slots=True)
class Assurance:
    """How a session's user proved who they are (docs/mfa.md).

    ``amr``: the methods, in the spirit of RFC 8176 (``pwd``, ``email``,
    ``fed``, ``passkey``, ``otp``, ``recovery_code``, and ``mfa`` for two
    factors); ``mfa_at``: when two factors were last proven (a POSIX time), or
    ``None``. A session made before webauth recorded these has neither.
    """

    amr: tuple[str, ...] = ()
    mfa_at: float | None = None


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What an access token says of the session it came from (docs/tokens.md).

    ``sid``: the session's id, stable for its whole life and not its token (a
    service sees it; it must not be able to use it); ``signed_in_at`` (a POSIX
    time) and ``assurance``, where the session records them.
    """

    sid: str
    signed_in_at: float | None = None
    assurance: Assurance = Assurance()


def session_id(config: Config, material: str) -> str:
    """A session's public id: a keyed hash of what identifies it to the server.

    HMAC-SHA256 under a key derived from the newest secret, 128 bits in
    base64url: it names the session without revealing (or standing in for) its
    token, and another site with another secret gets other ids.
    """
    secret = config.secret[0] if config.secret else ""
    key = hashlib.sha256(b"webauth.session-id\0" + secret.encode()).digest()
    digest = hmac.new(key, material.encode(), hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def database_sid(config: Config, token_hash: str, auth_hash: str | None) -> str:
    """A database session's id: of its stored token's hash and its password era.

    The token never changes for the session's life; the auth hash changes when
    the password does, so a session kept through a password change (by the
    browser that made it) gets a new id, and the tokens of the old one can be
    dropped with the others. Computable from the stored row alone, so a row
    deleted by any means can be named.
    """
    return session_id(config, f"db\0{token_hash}\0{auth_hash or ''}")


#: Claims a test's session carries beside those a sign-in would give it.
Claims = Mapping[str, object] | None


@dataclass(frozen=True, slots=True)
class EndedSession:
    """What ending a session did.

    ``message`` holds the ``sign_out`` event's fields besides the request (the
    deleted ``session`` under ``database``, the decoded ``token`` under
    ``jwt``); ``ended`` tells whether there was a session to end, and
    ``revoked`` whether the server made its token unusable (only a stored
    session can be: a JWT stays valid until it expires, wherever a copy is).
    """

    message: EventFields = field(default_factory=EventFields)
    ended: bool = False
    revoked: bool = False


#: What :meth:`SessionStrategy.slide` asks of the request when a JWT from before
#: sessions were bound to their user is re-issued: the user's session auth hash
#: (``None`` for a user without one), or ``False`` when the session has just ended.
BindUser = Callable[[], "str | bool | None"]


class SessionStrategy(ABC):
    """How sessions are kept: one object per strategy, chosen once by its ``name``.

    ``WEBAUTH["session"]["strategy"]`` names it; :func:`webauth.sessions.strategy_of`
    gives a configuration's. Nothing outside :mod:`webauth.sessions` asks which
    strategy is in use: it asks the object, as Django's code asks a session
    engine. Every method takes the :class:`~webauth.conf.Config` it works for
    (the objects are shared by every configuration) and *salt*, the session
    cookie's name, where a JWT's key depends on it.
    """

    #: The configuration's name for it.
    name: ClassVar[str]
    #: Whether sessions are records the server keeps: listed, revoked one by one.
    stored: ClassVar[bool]
    #: The key of :data:`webauth.adapters.base.FLOW_METHODS` naming the adapter
    #: methods the strategy calls when there is an adapter.
    adapter_feature: ClassVar[str]

    @abstractmethod
    def read(
        self,
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
        """Read the session of cookie value *raw* as ``GET /auth/session`` does.

        ``trigger="update"`` with ``new_session`` (the client's
        data; none is :data:`UNSET`) is ``POST /auth/session``. With
        ``reissue`` a new cookie value is made with a new expiry (a JWT; a
        database session's cookie is its token); a database session is extended
        in storage either way (``extended`` says so). *known_user* and
        *load_user* say how a JWT's user is checked; a database session comes
        with its user.
        """

    @abstractmethod
    def create(self, config: Config, salt: str, new: NewSession) -> SessionResult:
        """The session of the fresh sign-in *new* describes."""

    @abstractmethod
    def end(self, config: Config, raw: str | None, salt: str) -> EndedSession:
        """End the session of cookie value *raw* (sign-out)."""

    @abstractmethod
    def revoke(self, config: Config, raw: str | None) -> None:
        """Make the token *raw* unusable where the server can (``logout()``); no event."""

    @abstractmethod
    def slide(
        self, config: Config, result: SessionResult, salt: str, bind: BindUser
    ) -> tuple[str | None, datetime | None] | None:
        """The session cookie to write on the way out of a request that read *result*.

        ``None`` to leave the cookie alone, ``(None, None)`` to delete it, else
        ``(value, expires)``. *bind* is called only when a JWT from before
        sessions were bound to their user is re-issued.
        """

    @abstractmethod
    def signed_in_at(self, config: Config, raw: str | None, salt: str) -> float | None:
        """When the session of cookie value *raw* signed in (a POSIX time), if it says."""

    @abstractmethod
    def assurance(self, config: Config, raw: str | None, salt: str) -> Assurance:
        """How the user of the session of cookie value *raw* proved who they are."""

    @abstractmethod
    def facts(self, config: Config, raw: str | None, salt: str) -> SessionFacts | None:
        """The id, sign-in time and assurance of the session *raw*, ``None`` without one.

        Call it for a session a read has found live: it checks no expiry itself.
        """

    @abstractmethod
    def current_user(self, config: Config, raw: str | None, salt: str) -> AdapterUser | None:
        """The user whose live session *raw* is; nothing runs, nothing is extended."""

    @abstractmethod
    def rebind(self, config: Config, raw: str | None, salt: str, user: object) -> str | None:
        """Carry *user*'s new session auth hash (their password changed) on session *raw*.

        The cookie value to use from now on, or ``None`` when *raw* is not a
        bound session of *user*.
        """

    def event_fields(self, result: SessionResult) -> EventFields:
        """The ``session`` event's fields for a read *result*, besides the request."""
        return {"session": result.session}

    @abstractmethod
    def session_for(self, config: Config, salt: str, user: object, claims: Claims = None) -> str:
        """A session cookie value for *user* made without a sign-in (no callback runs):
        what :func:`webauth.test.force_sign_in` hands a test client."""
