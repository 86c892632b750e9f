"""Which sessions' access tokens must be dropped: noted at minting, ended with the session.

A token carries its session's ``sid`` (:func:`webauth.sessions.base.session_id`).
The first token of a session notes the sid through the adapter
(``register_token_session``); when the session ends, the sid is marked ended,
from then on no token is minted for it, and the revocation feed
(``GET /auth/token/ended``, :func:`ended_since`) lists it, so that a service
can drop the session's tokens before they expire. The
:data:`webauth.signals.token_sessions_ended` signal is sent at the same time,
for a project that pushes the news instead.

What ends a sid here:

* a sign-out (``POST /auth/signout``, the app's, Django's ``logout()``):
  :func:`end_request_session`;
* "sign out everywhere" (every other session of the user; the app's: every
  session) and a database session row deleted by any ORM call (one revoked in
  the account center or the admin, the rows of a deleted user):
  :func:`end_user_sessions`, :func:`row_deleted`;
* the user's password saved, or the user deactivated or deleted, by any code
  that goes through ``Model.save()``/``delete()`` (webauth's flows, the admin,
  ``set_password()`` and ``save()`` in a shell): :func:`user_saved`,
  :func:`user_deleted`. A session kept through its own password change gets a
  new sid (it names the password era), so its new tokens are not refused.

``QuerySet.update()`` and raw SQL send no signal: a change made that way is
seen by the sessions themselves (the next request) but not by the feed; its
tokens then live out their ``tokens.max_age`` (docs/tokens.md).

Every function here is a no-op while ``WEBAUTH["tokens"]`` is off, and none
of them lets a storage failure break the sign-out or save that called it: the
failure is logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..conf import get_config
from ..errors import AdapterError, AuthError
from ..sessions.base import database_sid
from ..signals import token_sessions_ended

if TYPE_CHECKING:
    from ..conf import Config
    from ..state import AuthState

__all__ = [
    "FEED_LIMIT",
    "FeedPage",
    "cursor_of",
    "end_request_session",
    "end_user_sessions",
    "ended_since",
    "note_minted",
    "read_cursor",
    "row_deleted",
    "user_deleted",
    "user_saved",
    "watch_session_rows",
]

#: The most entries one answer of the feed carries (the next asks from its ``until``).
FEED_LIMIT = 1000
#: How far back the feed reaches beyond a token's life: a service's clock skew.
FEED_MARGIN = 60


def _now() -> datetime:
    return datetime.now(UTC)


def _announce(sids: list[str], user_id: str, reason: str) -> None:
    if not sids:
        return
    # send_robust: a failing receiver is the project's, never the sign-out's.
    token_sessions_ended.send_robust(None, sids=sids, user_id=user_id, reason=reason)


def _logged(config: Config, exc: Exception) -> None:
    if isinstance(exc, AdapterError):
        return  # Storage has logged it
    error = exc if isinstance(exc, AuthError) else AuthError(cause={"err": exc})
    config.logger.error(error)


def note_minted(config: Config, sid: str, user_id: str, expires_at: float) -> bool:
    """Note that a token of session *sid* lives until *expires_at*; ``False`` if it has ended.

    The row is kept until the end of the ``max_age`` window after the next one
    (between one and two token lives past *expires_at*), so that the tokens
    minted within a window ask the adapter to keep it until the same time: one
    write per window, a read for the others. A storage failure propagates: no
    token is minted when it cannot be noted.
    """
    assert config.tokens is not None
    window = config.tokens.max_age
    keep_until = (int(expires_at) // window + 2) * window
    return config.storage.register_token_session(
        sid, user_id, datetime.fromtimestamp(keep_until, UTC)
    )


def end_session(config: Config, sid: str, user_id: str, reason: str, *, keep_unknown: bool) -> None:
    """End one session's tokens.

    With *keep_unknown*, a session no token was minted for yet is kept as ended
    for a session's life, so that none is minted for it later (a JWT cookie
    copied before its sign-out); a deleted database session cannot come back,
    so its end needs no row.
    """
    if config.tokens is None:
        return
    expires = _now() + timedelta(seconds=config.session.max_age) if keep_unknown else None
    try:
        had_tokens = config.storage.end_token_session(sid, user_id, expires)
    except Exception as exc:  # logged; the sign-out goes on
        _logged(config, exc)
        return
    if had_tokens:
        _announce([sid], user_id, reason)


def end_request_session(state: AuthState) -> None:
    """End the tokens of the request's own session (call it before the session ends)."""
    config = state.config
    raw = state.session_token
    if config.tokens is None or not raw:
        return
    user_id = state.session_result.user_id
    try:
        facts = state.sessions.facts(config, raw, state.cookies["session_token"].name)
    except Exception as exc:  # a failing adapter: logged, the sign-out goes on
        _logged(config, exc)
        return
    if facts is not None and user_id is not None:
        # A stored session's row is deleted next: nothing could mint for it again.
        keep_unknown = not state.sessions.stored
        end_session(config, facts.sid, user_id, "signout", keep_unknown=keep_unknown)


def end_user_sessions(
    config: Config, user_id: str, reason: str, *, keep: AuthState | None = None
) -> list[str]:
    """End the tokens of every session of *user_id*, but *keep*'s own session if given."""
    if config.tokens is None:
        return []
    keep_sid = None
    if keep is not None:  # facts() of no session token is None
        facts = keep.sessions.facts(config, keep.session_token, keep.cookies["session_token"].name)
        keep_sid = facts.sid if facts is not None else None
    try:
        sids = config.storage.end_user_token_sessions(user_id, keep_sid)
    except Exception as exc:  # logged; what called it goes on
        _logged(config, exc)
        return []
    _announce(sids, user_id, reason)
    return sids


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(microseconds=1)


def cursor_of(ended: datetime, sid: str) -> str:
    """Where a full answer of the feed stopped: ``<microseconds>.<sid>``."""
    return f"{_micros(ended)}.{sid}"


def read_cursor(value: str) -> tuple[datetime, str] | None:
    """The time and sid of a :func:`cursor_of` value, or ``None`` for anything else."""
    micros, _, sid = value.partition(".")
    if not (micros.isascii() and micros.isdigit()):
        return None
    if not (0 < len(sid) <= 32 and sid.isascii() and all(c.isalnum() or c in "-_" for c in sid)):
        return None
    try:
        # Past year 9999 is an OverflowError, past int()'s 4,300 digits a ValueError.
        return _EPOCH + timedelta(microseconds=int(micros)), sid
    except (OverflowError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class FeedPage:
    """One answer of the feed: ``entries`` (sid, POSIX seconds), oldest first; ``until``,
    the next poll's ``since``; ``next``, when the answer is full, where to go on."""

    entries: list[tuple[str, int]]
    until: int
    next: str | None


def ended_since(
    config: Config, since: float | None = None, after: tuple[datetime, str] | None = None
) -> FeedPage:
    """The feed from *since* (POSIX seconds) or from where a full answer stopped (*after*).

    Never further back than a live token could be (``tokens.max_age`` and
    :data:`FEED_MARGIN`); at most :data:`FEED_LIMIT` entries.
    """
    assert config.tokens is not None
    now = _now()
    oldest = now - timedelta(seconds=config.tokens.max_age + FEED_MARGIN)
    start, after_sid = oldest, None
    if after is not None:
        if after[0] >= oldest:
            start, after_sid = after
    elif since is not None:
        start = max(oldest, _EPOCH + timedelta(seconds=since))
    rows = config.storage.list_ended_token_sessions(start, FEED_LIMIT, after_sid)
    entries = [(sid, int(ended.timestamp())) for sid, ended in rows]
    full = len(rows) >= FEED_LIMIT
    return FeedPage(
        entries=entries,
        until=int(now.timestamp()),
        next=cursor_of(rows[-1][1], rows[-1][0]) if full else None,
    )


# -- receivers of Django's model signals (connected by webauth.apps) ----------------------
def _config() -> Config | None:
    try:
        config = get_config()
    except Exception:  # a broken configuration is the system checks' to report
        return None
    return config if config.tokens is not None else None


def user_saved(sender: Any, instance: Any, created: bool = False, **kwargs: Any) -> None:
    """``post_save`` of the user model: a new password or a deactivation ends every session."""
    if created:
        return
    # AbstractBaseUser.set_password() keeps the new password in _password until
    # save() is done: post_save still sees it.
    new_password = getattr(instance, "_password", None) is not None
    inactive = getattr(instance, "is_active", True) is False
    if not (new_password or inactive):
        return
    config = _config()
    if config is not None and instance.pk is not None:
        end_user_sessions(config, str(instance.pk), "password" if new_password else "inactive")


def user_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    """``post_delete`` of the user model: every session's tokens end."""
    config = _config()
    if config is not None and instance.pk is not None:
        end_user_sessions(config, str(instance.pk), "deleted")


def watch_session_rows(*args: Any, setting: str | None = None, **kwargs: Any) -> None:
    """Connect :func:`row_deleted` to ``Session``'s ``post_delete`` while ``WEBAUTH["tokens"]``
    is set, disconnect it otherwise (at start-up, and as a ``setting_changed`` receiver).

    Read from the raw setting: the configuration may not be buildable yet.
    """
    if setting not in (None, "WEBAUTH"):
        return
    from django.conf import settings
    from django.db.models.signals import post_delete

    raw = getattr(settings, "WEBAUTH", None)
    wanted = isinstance(raw, dict) and bool(raw.get("tokens"))
    uid = "webauth.token_session_row"
    if wanted:
        post_delete.connect(row_deleted, sender="webauth.Session", dispatch_uid=uid)
    else:
        post_delete.disconnect(sender="webauth.Session", dispatch_uid=uid)


def row_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    """``post_delete`` of :class:`webauth.models.Session`: that session's tokens end."""
    config = _config()
    if config is None:
        return
    sid = database_sid(config, instance.token_hash, instance.auth_hash)
    end_session(config, sid, str(instance.user_id), "revoked", keep_unknown=False)
