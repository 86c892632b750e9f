"""The session check kept in Django's cache: ``session.user_check_cache`` (opt-in).

Under JWT, ``GET /auth/session`` (and a bearer session's routes) checks with one
query that the session's user still exists, is active and has the password the
session was made with. With ``WEBAUTH["session"]["user_check_cache"]`` on, a
passed check is remembered in a Django cache for ``max_staleness`` seconds, so
that the next ones make no query:

* what is remembered is a digest of the user's id and the session's auth hash
  (itself an HMAC of the password hash): no password hash, nothing that signs
  anyone in, and a new password never matches an old entry;
* only passed checks are remembered; a failed one always asks the database;
* every save or deletion of a user through the ORM (deactivation, a new
  password, ``update_session_auth_hash``, the admin; not a save whose
  ``update_fields`` name neither ``is_active`` nor ``password``, such as a
  sign-in's ``last_login``) and webauth's "sign out everywhere" replace the
  user's entry with a *revoked* mark, at once and again when the transaction
  commits, for ``max_staleness`` seconds. Entries are written
  with ``cache.add``, so a check that read the user before the change cannot
  put the old answer back over the mark;
* a change the ORM does not see (``QuerySet.update()``, raw SQL, another
  program) is seen when the entry expires: after ``max_staleness`` seconds at
  the most.

With a cache that every process shares (Redis, Memcached), a revocation is seen
by every process at once; with ``LocMemCache`` only by the process that made
it, others within ``max_staleness`` (``webauth.W020``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from django.core.cache import caches
from django.db import transaction

from ..logger import get_logger

if TYPE_CHECKING:
    from ..conf import Config
    from ..conf.options import UserCheckCache

__all__ = ["forget_user", "passed", "remember", "revoke_on_change"]

#: The value that marks a user's checks as revoked (a digest is 64 hex digits).
REVOKED = "-"
_log = get_logger("sessions")
_PREFIX = "webauth:check:"
#: The user's columns the check reads: a save that names neither (``update_fields``)
#: cannot change its answer.
CHECKED_FIELDS = frozenset({"is_active", "password"})


def _key(user_id: object) -> str:
    return f"{_PREFIX}{user_id}"


def _digest(user_id: str, auth_hash: str) -> str:
    return hashlib.sha256(f"{user_id}\x00{auth_hash}".encode()).hexdigest()


def _options(config: Config) -> UserCheckCache | None:
    return config.session.user_check_cache


def passed(config: Config, user_id: str, auth_hash: object) -> bool:
    """Whether a check of *user_id*'s session bound to *auth_hash* passed recently.

    ``False`` when the cache is off, knows nothing, holds the revoked mark or
    another hash, or fails (the database answers then).
    """
    options = _options(config)
    if options is None or not isinstance(auth_hash, str):
        return False
    try:
        value = caches[options.cache].get(_key(user_id))
    except Exception:  # an unreachable cache ends no session: the database answers
        _log.warning("session check cache %r unreadable", options.cache, exc_info=True)
        return False
    # A digest, not a secret: compared plainly (it is not what the request sent).
    return isinstance(value, str) and value != REVOKED and value == _digest(user_id, auth_hash)


def remember(config: Config, user_id: str, auth_hash: object) -> None:
    """Remember that *user_id*'s session bound to *auth_hash* passed the check.

    ``add``, never ``set``: the revoked mark of a change made meanwhile stays.
    """
    options = _options(config)
    if options is None or not isinstance(auth_hash, str):
        return
    try:
        caches[options.cache].add(
            _key(user_id), _digest(user_id, auth_hash), timeout=options.max_staleness
        )
    except Exception:
        _log.warning("session check cache %r unwritable", options.cache, exc_info=True)


def forget_user(config: Config, user_id: object, using: str | None = None) -> None:
    """Mark *user_id*'s remembered checks revoked, now and when the transaction of
    database *using* (the default one when ``None``) commits."""
    options = _options(config)
    if options is None or user_id is None:
        return
    key = _key(user_id)

    def mark() -> None:
        try:
            caches[options.cache].set(key, REVOKED, timeout=options.max_staleness)
        except Exception:  # the entry expires within max_staleness
            _log.error("session check cache %r: a revocation failed", options.cache, exc_info=True)

    mark()
    # A check between the mark and the commit may read the old row: the mark is
    # set again once the change is visible. (Outside a transaction this runs now.)
    transaction.on_commit(mark, using=using)


def revoke_on_change(sender: Any, instance: Any, **kwargs: Any) -> None:
    """``post_save`` / ``post_delete`` receiver for ``AUTH_USER_MODEL``."""
    # Imported when called: the configuration reads settings and the app registry,
    # and the sessions package is imported by it (webauth.conf, through the strategies).
    from ..conf import get_config

    if kwargs.get("raw"):
        return  # loaddata: no cache to keep in step
    if kwargs.get("created"):
        return  # a new user: no check of it was remembered (an old entry's digest differs)
    fields = kwargs.get("update_fields")
    if fields is not None and not CHECKED_FIELDS & set(fields):
        return  # a save of other columns only (sign-in's last_login): the check is unchanged
    try:
        config = get_config()
    except Exception:  # a broken configuration is reported by the system checks
        return
    if _options(config) is not None:
        forget_user(config, instance.pk, kwargs.get("using"))
