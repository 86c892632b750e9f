"""The ``database`` strategy: the cookie holds a session token, the session is a stored record.

Read, extended, listed and revoked through the adapter (``create_session``,
``get_session_and_user``, ``update_session``, ``delete_session``): a session
can be ended one by one, from the account center or the admin.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from django.core.exceptions import SynchronousOnlyOperation

from ..callbacks import run_session
from ..errors import AuthError, SessionTokenError
from ..types import AdapterSession, AdapterUser
from ..utils import aware, user_to_dict
from .base import (
    UNSET,
    Assurance,
    EndedSession,
    NewSession,
    SessionFacts,
    SessionResult,
    SessionStrategy,
    absolute_deadline,
    database_sid,
    iso_expires,
    timestamp,
)
from .binding import auth_hash_matches, session_auth_hash, session_ends

if TYPE_CHECKING:
    from ..conf import Config
    from .base import BindUser, Claims

__all__ = [
    "DatabaseSessions",
    "new_database_session",
    "read_database_session",
    "rebind_database_session",
]


def _user_session(user: AdapterUser, expires: datetime) -> dict[str, object]:
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
    new_session: object = UNSET,
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
    storage = config.storage
    try:
        pair = storage.get_session_and_user(session_token)
        if pair is None:
            return SessionResult(clear=True)
        stored, user = pair
        now = datetime.now(UTC)
        expires = aware(stored.expires)
        if expires <= now:
            storage.delete_session(session_token)
            return SessionResult(clear=True)
        reason = _database_session_ended(config, stored, user, now)
        if reason is not None:
            # Deactivated, password changed or past absolute_max_age: the session
            # ends for good, as contrib.auth's do.
            session_ends(config, reason, stored.user_id)
            storage.delete_session(session_token)
            return SessionResult(clear=True)
        max_age = config.session.max_age
        new_expires = now + timedelta(seconds=max_age)
        deadline = absolute_deadline(config, timestamp(stored.created_at))
        if deadline is not None:
            new_expires = min(new_expires, datetime.fromtimestamp(deadline, UTC))
        extended = False
        due = expires - timedelta(seconds=max_age - config.session.update_age) <= now
        if extend and due and (deadline is None or new_expires > expires):
            storage.update_session(
                {"session_token": session_token, "user_id": stored.user_id, "expires": new_expires}
            )
            extended = True
        # As in Auth.js, the session shows the stored expiry read before extending it.
        session: Any = _user_session(user, expires)
        params: dict[str, object] = {"session": session, "user": user}
        if trigger == "update":
            params.update(
                trigger="update", new_session=None if new_session is UNSET else new_session
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


def _database_session_ended(
    config: Config, stored: AdapterSession, user: AdapterUser, now: datetime
) -> str | None:
    """Why a stored, unexpired session must end now, or ``None``.

    The auth hash and the sign-in time are checked when the adapter returns
    them (``DjangoAdapter`` does); the user comes with the session, so no
    check costs a query.
    """
    deadline = absolute_deadline(config, timestamp(stored.created_at))
    if deadline is not None and now.timestamp() >= deadline:
        return "absolute_max_age"
    instance = user.instance
    if instance is not None and not getattr(instance, "is_active", True):
        return "user inactive"
    changed = stored.auth_hash and not auth_hash_matches(instance, stored.auth_hash)
    if instance is not None and changed:
        return "password changed"
    return None


def new_database_session(config: Config, new: NewSession) -> SessionResult:
    """Create a database session for a fresh sign-in.

    ``new.replaces`` is the request's previous session token, deleted so that
    a sign-in always starts a new session (no session fixation). ``new.user``
    (the model instance or ``AdapterUser``) gives the session its auth hash: it
    ends when the password changes. ``new.since`` is the sign-in time to record
    (``created_at``) when it is not now: see :func:`new_jwt_session`.
    """
    user_id, user, since, replaces = str(new.user_dict["id"]), new.user, new.since, new.replaces
    storage = config.storage
    storage.require("create_session")
    generate = config.session.generate_session_token
    token = str(generate()) if generate is not None else secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    signed_in = now if since is None else min(datetime.fromtimestamp(since, UTC), now)
    expires = now + timedelta(seconds=config.session.max_age)
    if config.session.absolute_max_age is not None:
        expires = min(expires, signed_in + timedelta(seconds=config.session.absolute_max_age))
    if replaces:
        storage.delete_session(replaces)
    record = AdapterSession(
        session_token=token,
        user_id=user_id,
        expires=expires,
        user_agent=(new.user_agent or "")[:512] or None,
        ip_address=new.ip_address,
        created_at=signed_in,
        auth_hash=session_auth_hash(user) if user is not None else None,
        amr=" ".join(new.amr) or None,
        mfa_at=datetime.fromtimestamp(new.mfa_at, UTC) if new.mfa_at is not None else None,
    )
    created = storage.create_session(record)
    stored_expires = aware(created.expires) if created is not None else expires
    return SessionResult(
        user_id=user_id, cookie=token, expires=stored_expires, valid_until=stored_expires
    )


def rebind_database_session(config: Config, session_token: str | None, user: object) -> bool:
    """Store *user*'s current session auth hash on the database session *session_token*.

    Only for a session of *user* whose adapter keeps the hash; returns whether
    it was updated.
    """
    if not session_token:
        return False
    storage = config.storage
    pair = storage.get_session_and_user(session_token)
    new_hash = session_auth_hash(user)
    if pair is None or new_hash is None:
        return False
    stored, owner = pair
    if not stored.auth_hash or owner.id != str(getattr(user, "pk", None)):
        return False
    updated = storage.update_session(
        {"session_token": session_token, "user_id": stored.user_id, "auth_hash": new_hash}
    )
    return updated is not None


class DatabaseSessions(SessionStrategy):
    """Sessions stored through the adapter (``strategy: "database"``)."""

    name: ClassVar[str] = "database"
    stored: ClassVar[bool] = True
    adapter_feature: ClassVar[str] = "database_session"

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
        # The session comes with its user (known_user and load_user are a JWT's
        # concern); the cookie is its token, always "re-issued".
        return read_database_session(config, raw, trigger=trigger, new_session=new_session)

    def create(self, config: Config, salt: str, new: NewSession) -> SessionResult:
        # Unlike Auth.js, credentials sign-ins get database sessions too.
        return new_database_session(config, new)

    def end(self, config: Config, raw: str | None, salt: str) -> EndedSession:
        deleted = config.storage.delete_session(raw) if raw else None
        return EndedSession(
            message={"session": deleted}, ended=deleted is not None, revoked=deleted is not None
        )

    def revoke(self, config: Config, raw: str | None) -> None:
        if raw:
            config.storage.delete_session(raw)

    def slide(
        self, config: Config, result: SessionResult, salt: str, bind: BindUser
    ) -> tuple[str | None, datetime | None] | None:
        # The cookie follows the stored expiry only when that moved.
        if result.extended and result.cookie is not None:
            return result.cookie, result.expires
        return None

    def signed_in_at(self, config: Config, raw: str | None, salt: str) -> float | None:
        if not raw:
            return None
        try:
            pair = config.storage.get_session_and_user(raw)
        except AuthError:  # a failing adapter (logged): the time is unknown
            return None
        return timestamp(pair[0].created_at) if pair is not None else None

    def assurance(self, config: Config, raw: str | None, salt: str) -> Assurance:
        if not raw:
            return Assurance()
        try:
            pair = config.storage.get_session_and_user(raw)
        except AuthError:  # a failing adapter (logged): nothing is known
            return Assurance()
        if pair is None:
            return Assurance()
        stored = pair[0]
        return Assurance(
            amr=tuple((stored.amr or "").split()),
            mfa_at=timestamp(stored.mfa_at) if stored.mfa_at is not None else None,
        )

    def facts(self, config: Config, raw: str | None, salt: str) -> SessionFacts | None:
        if not raw:
            return None
        pair = config.storage.get_session_and_user(raw)
        if pair is None:
            return None
        stored = pair[0]
        return SessionFacts(
            # The stored row's token hash (webauth.models.token_hash, which this
            # module cannot import before the app registry is ready).
            sid=database_sid(config, hashlib.sha256(raw.encode()).hexdigest(), stored.auth_hash),
            signed_in_at=timestamp(stored.created_at),
            assurance=Assurance(
                amr=tuple((stored.amr or "").split()),
                mfa_at=timestamp(stored.mfa_at) if stored.mfa_at is not None else None,
            ),
        )

    def current_user(self, config: Config, raw: str | None, salt: str) -> AdapterUser | None:
        if not raw:
            return None
        pair = config.storage.get_session_and_user(raw)
        if pair is None:
            return None
        stored, user = pair
        now = datetime.now(UTC)
        if aware(stored.expires) <= now or _database_session_ended(config, stored, user, now):
            return None
        return user

    def rebind(self, config: Config, raw: str | None, salt: str, user: object) -> str | None:
        return raw if rebind_database_session(config, raw, user) else None

    def session_for(self, config: Config, salt: str, user: object, claims: Claims = None) -> str:
        new = NewSession(user=user, user_dict=user_to_dict(user), user_agent="webauth.test")
        result = new_database_session(config, new)
        assert result.cookie is not None  # a new session's cookie is its token
        return result.cookie
