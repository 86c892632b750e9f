"""Small helpers shared by the package: importing dotted paths, calling
sync-or-async user code, reading user objects of any shape, caching answers
about client-sent strings, and time zones on adapter datetimes."""

from __future__ import annotations

import asyncio
import difflib
import functools
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

__all__ = [
    "aware",
    "call",
    "did_you_mean",
    "forget_user_model",
    "is_async",
    "is_awaitable",
    "own_transactions",
    "remember_short",
    "require_installed",
    "resolve",
    "user_id",
    "user_model",
    "user_to_dict",
]

R = TypeVar("R")

# An attribute the user object does not have (not the same as one that is None).
_ABSENT: object = object()


def remember_short(
    max_length: int, maxsize: int = 256
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Cache a pure function of a client-sent string (and other hashable arguments).

    Browsers send the same cookie values with every request, so remembering the
    answer for recent values saves work on the hot path. Only values of at most
    *max_length* characters are remembered, so a client sending junk cannot make
    the cache hold much memory; longer ones are computed every time.
    """

    def decorator(fn: Callable[..., R]) -> Callable[..., R]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def remembered(value: str, *args: object) -> R:
            return cached(value, *args) if len(value) <= max_length else fn(value, *args)

        return remembered

    return decorator


def aware(value: datetime) -> datetime:
    """*value* with UTC attached when it has no time zone (adapters may return naive datetimes)."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def resolve(value: Any) -> Any:
    """Import *value* if it is a dotted path string, else return it unchanged."""
    if isinstance(value, str):
        return import_string(value)
    return value


class _EveryDatabase(frozenset[str]):
    """A set that holds every database alias (``"default" in _EveryDatabase()``)."""

    def __contains__(self, alias: object) -> bool:
        return True


def own_transactions(view: Any) -> Any:
    """Mark *view* as one ``ATOMIC_REQUESTS`` never wraps in a transaction, on any database.

    What :func:`django.db.transaction.non_atomic_requests` does for one alias,
    for all of them. webauth's routes make their transactions themselves, and
    some must be outermost: the named locks that make one user per address
    (and one live grant per address) on MariaDB and MySQL end with their
    block, so inside a request-wide transaction they would end before it
    commits. A sign-in also calls providers over HTTP, which no transaction
    should be held open across.
    """
    view._non_atomic_requests = _EveryDatabase()
    return view


def require_installed(what: str) -> None:
    """Raise ``ImproperlyConfigured`` when ``"webauth"`` is not in ``INSTALLED_APPS``.

    Django runs an app's system checks only when the app is installed, so none
    of webauth's could say so; without it, its models cannot load and sign-ins
    fail on the first request. ``AuthMiddleware`` (built when the server starts)
    and ``webauth.urls`` (imported by ``manage.py check``) call this. Before the
    app registry is ready nothing can be told, and nothing is raised.
    """
    if apps.apps_ready and not apps.is_installed("webauth"):
        raise ImproperlyConfigured(
            f'{what} is used but "webauth" is not in INSTALLED_APPS, so webauth\'s '
            'models, templates and system checks are missing. Add "webauth" to '
            'INSTALLED_APPS (after "django.contrib.auth"; see docs/installation.md).'
        )


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """The choice *word* is most likely a typo of (``sesion`` -> ``session``), or ``None``."""
    found = difflib.get_close_matches(word.lower(), list(choices), n=1, cutoff=0.75)
    return found[0] if found else None


@functools.lru_cache(maxsize=512)
def is_async(fn: Callable[..., object]) -> bool:
    """``inspect.iscoroutinefunction``, remembered: adapter methods are asked on every request.

    A bound method hashes and compares as its object and function, so each new
    bound method of the same adapter finds the answer already there.
    """
    return inspect.iscoroutinefunction(fn)


# Types whose instances are never awaitable, as is_awaitable found them: adapter
# methods return the same few record types on every request, and asking a type
# for a missing __await__ raises (and discards) an AttributeError each time.
_never_awaitable: set[type] = set()


def is_awaitable(value: object) -> bool:
    """``inspect.isawaitable`` without the ABC machinery for the usual non-awaitable result.

    An awaitable's type has ``__await__`` (coroutines, futures, tasks, anything
    ``collections.abc.Awaitable`` recognises by its method); the one other kind
    is a generator-based coroutine (``types.coroutine``).
    """
    cls = type(value)
    if cls in _never_awaitable:
        return False
    if hasattr(cls, "__await__"):
        return True
    if isinstance(value, types.GeneratorType):
        return bool(value.gi_code.co_flags & inspect.CO_ITERABLE_COROUTINE)
    if len(_never_awaitable) < 256:  # bounded, whatever classes a project makes
        _never_awaitable.add(cls)
    return False


_user_model: Any = None


def user_model() -> Any:
    """``get_user_model()``, remembered until a setting changes (:func:`forget_user_model`).

    Django looks ``AUTH_USER_MODEL`` up in the app registry on each call, and the
    session route asks for it twice per request; Django's own ``ModelBackend``
    keeps the model from import on.
    """
    global _user_model
    model = _user_model
    if model is None:
        model = _user_model = get_user_model()
    return model


def forget_user_model(*, setting: str | None = None, **kwargs: object) -> None:
    """``setting_changed`` receiver: ``AUTH_USER_MODEL`` or the apps changed."""
    global _user_model
    if setting in (None, "AUTH_USER_MODEL", "INSTALLED_APPS"):
        _user_model = None


def call(fn: Callable[..., Any], *args: object, **kwargs: object) -> Any:
    """Call a user callback, event handler or adapter method from sync code.

    ``async def`` functions (and plain functions returning an awaitable) are run
    to completion with ``async_to_sync``, which also works from a thread that
    ``sync_to_async`` started for an async view.
    """
    if is_async(fn):
        _require_sync_context(fn)
        return async_to_sync(fn)(*args, **kwargs)
    result = fn(*args, **kwargs)
    if is_awaitable(result):
        if _in_event_loop():
            if inspect.iscoroutine(result):
                result.close()
            _require_sync_context(fn)

        async def _await() -> Any:
            return await result

        return async_to_sync(_await)()
    return result


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _require_sync_context(fn: Callable[..., object]) -> None:
    # async_to_sync cannot run inside an event loop; say what to do instead, with the
    # exception Django raises for the same mistake (callers must not mistake it for an
    # invalid session and delete the cookie).
    if _in_event_loop():
        from django.core.exceptions import SynchronousOnlyOperation

        name = getattr(fn, "__qualname__", repr(fn))
        raise SynchronousOnlyOperation(
            f"The async callable {name} was reached through a sync API from async code. "
            "In async views use the async API: await aget_session(request), "
            "await request.auser()."
        )


def user_id(user: object) -> str:
    """The id of a user of any shape (``pk``, ``id`` or a mapping's ``"id"``) as a string.

    Raises ``ValueError`` for something without one.
    """
    value = user.get("id") if isinstance(user, Mapping) else getattr(user, "pk", None)
    if value is None and not isinstance(user, Mapping):
        value = getattr(user, "id", None)
    if value is None:
        raise ValueError("a user (model instance or record with an id) is needed")
    return str(value)


def user_to_dict(user: Any) -> dict[str, object]:
    """Read ``id``, ``name``, ``email`` and ``image`` from a user of any shape.

    Accepts a mapping, a Django model instance (``pk``, ``get_full_name()``) or
    any object with those attributes. A member the user does not have (a key
    the mapping lacks, an attribute the object lacks: Django's ``User`` has no
    ``image``) is left out, as JavaScript's ``undefined`` is; one it has as
    ``None`` stays ``None``. The JWT session follows the same rule
    (:func:`webauth.sessions.default_token`).
    """
    if user is None:
        return {}
    if isinstance(user, Mapping):
        out = {k: user[k] for k in ("id", "name", "email", "image") if k in user}
        if "id" in out and out["id"] is not None:
            out["id"] = str(out["id"])
        return out
    out = {}
    pk = getattr(user, "pk", None)
    if pk is None:
        pk = getattr(user, "id", None)
    if pk is not None:
        out["id"] = str(pk)
    name = getattr(user, "name", _ABSENT)
    if name in (None, _ABSENT) and callable(getattr(user, "get_full_name", None)):
        name = user.get_full_name() or None
        if name is None and callable(getattr(user, "get_username", None)):
            name = user.get_username() or None
    if name is not _ABSENT:
        out["name"] = name
    email = getattr(user, getattr(type(user), "EMAIL_FIELD", "email"), _ABSENT)
    if email is not _ABSENT:
        out["email"] = email or None
    image = getattr(user, "image", _ABSENT)
    if image is not _ABSENT:
        out["image"] = image or None
    return out
