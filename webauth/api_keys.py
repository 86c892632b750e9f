"""API keys: long-lived credentials for scripts, CI jobs and integrations (docs/api-keys.md).

A key looks like ``wak_Xk3f9QaZ2mLp7Vd1q8Rt0BcYh5Wn2Ks6Ju4Ae9Gf3Lx1Po7HkD2jT``:
the configured prefix and ``_``, a 12-character public id, a 40-character
secret and a 6-character checksum, all base62. The prefix makes a leaked key
easy for secret scanners to find; the checksum lets them (and this module)
tell a key from random text without a query. Only the id and the SHA-256 of
the secret are stored, through the adapter (``create_api_key``, ``get_api_key``,
``list_api_keys``, ``revoke_api_key``, ``touch_api_key``; the Django adapter's
table is :class:`webauth.models.ApiKey`).

    from webauth.api_keys import create_key, revoke_key

    made = create_key(user, name="CI deploys", scopes=["deploy"])
    made.key        # shown once: hand it to the user now
    revoke_key(made.record)

A request carries its key in ``Authorization: Bearer <key>`` or
``X-API-Key: <key>``. :func:`authenticate` checks it with one query (the key
and its user together): the secret compared in constant time, then not
revoked, not expired, its user active. So a key revoked in one process is
refused by every other at once: nothing is cached. Its last use is written at
most once a minute. Failures count against the ``api_key_failed`` limit per
client address, uses against ``api_key`` per key.

A key authenticates one request as its user: no session is made, no cookie
set, and :func:`webauth.sign_in` is never involved.

A key may instead belong to an instance of one of the project's own models
(``api_keys.owners = ["shop.Team"]``): ``create_key(team, ...)``. Such a key
acts as no person: ``KeyMatch.user`` is ``None`` and ``KeyMatch.owner`` is the
team, read by a second query once the secret matched; it is refused once the
team is gone (or has an ``is_active`` that is false), and deleting the team
deletes its keys.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import zlib
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.utils import timezone

from . import ratelimit
from .conf import get_config
from .errors import AuthError, RateLimited
from .events import emit
from .types import ApiKeyRecord
from .utils import user_id

if TYPE_CHECKING:
    from collections.abc import Iterable

    from django.http import HttpRequest

    from .conf import Config

__all__ = [
    "LAST_USED_EVERY",
    "ApiKeyError",
    "CreatedKey",
    "KeyMatch",
    "authenticate",
    "check_new_key",
    "create_key",
    "key_from_request",
    "list_keys",
    "looks_like_key",
    "owner_of",
    "owner_ref",
    "owners_for",
    "revoke",
    "revoke_key",
]

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ID_LENGTH = 12
_SECRET_LENGTH = 40
_CHECK_LENGTH = 6
#: The last-used time is written at most this often per key.
LAST_USED_EVERY = timedelta(minutes=1)
#: The most characters read from a header (a key is far shorter).
_MAX_LENGTH = 200


class ApiKeyError(AuthError):
    """A key cannot be made: too many keys, an unknown scope, an expiry in the past."""

    user_caused = True


@dataclass(frozen=True, slots=True)
class CreatedKey:
    """A new key: ``key``, the only time it is seen, and its stored ``record``."""

    key: str
    record: ApiKeyRecord


@dataclass(frozen=True, slots=True)
class KeyMatch:
    """A request's key that holds: its ``record``, its ``user`` (``None`` for a key of a
    project-defined owner) and its ``owner`` (the user, or that owner's instance)."""

    record: ApiKeyRecord
    user: Any
    owner: Any = None

    @property
    def scopes(self) -> frozenset[str]:
        return frozenset(self.record.scopes or ())


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def _checksum(text: str) -> str:
    value = zlib.crc32(text.encode("ascii"))
    digits = []
    for _ in range(_CHECK_LENGTH):
        value, digit = divmod(value, 62)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def _checksum_of(payload: str) -> str:
    """*payload* (``<prefix>_<id><secret>``) with its checksum: the whole key."""
    return payload + _checksum(payload)


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _parts(key: str, prefix: str) -> tuple[str, str] | None:
    """``(key id, secret)`` of a well-formed key of *prefix*, else ``None``."""
    head = f"{prefix}_"
    body = key[len(head) :]
    if not key.startswith(head) or len(body) != _ID_LENGTH + _SECRET_LENGTH + _CHECK_LENGTH:
        return None
    if not all(char in _ALPHABET for char in body):
        return None
    payload, check = key[:-_CHECK_LENGTH], body[-_CHECK_LENGTH:]
    if not hmac.compare_digest(_checksum(payload), check):
        return None
    return body[:_ID_LENGTH], body[_ID_LENGTH : _ID_LENGTH + _SECRET_LENGTH]


def looks_like_key(text: str, config: Config | None = None) -> bool:
    """Whether *text* is a well-formed key of this site's prefix (no query)."""
    options = (config or get_config()).api_keys
    return options is not None and _parts(text, options.prefix) is not None


def owner_ref(owner: Any, config: Config | None = None) -> str:
    """``"<app_label>.<model>:<pk>"`` of a saved instance of a model in ``api_keys.owners``.

    Raises :class:`ApiKeyError` for anything else (a user's keys need no owner).
    """
    options = (config or get_config()).api_keys
    meta = getattr(owner, "_meta", None)
    label = getattr(meta, "label_lower", None)
    if options is None or label not in options.owners:
        raise ApiKeyError(f"{label or type(owner).__name__!r} is not in api_keys.owners")
    if getattr(owner, "pk", None) is None:
        raise ApiKeyError("the owner is not saved yet")
    return f"{label}:{owner.pk}"


def owner_of(ref: str, config: Config | None = None) -> Any | None:
    """The instance *ref* (:func:`owner_ref`) names, or ``None``: gone, or not an owner model."""
    options = (config or get_config()).api_keys
    if options is None or not isinstance(ref, str):
        return None
    label, sep, pk = ref.partition(":")
    if not sep or label not in options.owners:
        return None
    try:
        model = apps.get_model(label)
        return model._default_manager.filter(pk=pk).first()
    except (LookupError, ValueError, TypeError, ValidationError):  # a pk of another type
        return None


def owners_for(user: Any, config: Config | None = None) -> list[tuple[str, Any]]:
    """``(ref, owner)`` for each owner whose keys *user* manages (``api_keys.owners_of``).

    What the function gives that is no saved instance of a model in
    ``api_keys.owners`` is left out; nothing without ``owners_of``.
    """
    options = (config or get_config()).api_keys
    if options is None or options.owners_of is None or not getattr(user, "is_authenticated", False):
        return []
    found: dict[str, Any] = {}
    for owner in options.owners_of(user) or ():
        with suppress(ApiKeyError):  # not an owner: left out
            found.setdefault(owner_ref(owner, config), owner)
    return list(found.items())


def _holder(holder: Any, config: Config) -> tuple[str, str]:
    """``(user_id, owner)`` of a key's holder: a user, or an owner model's instance."""
    options = config.api_keys
    label = getattr(getattr(holder, "_meta", None), "label_lower", None)
    if options is not None and label in options.owners:
        return "", owner_ref(holder, config)
    return user_id(holder), ""


def check_new_key(
    *,
    name: object,
    scopes: Iterable[str] = (),
    expires: datetime | bool | None = True,
    config: Config | None = None,
) -> tuple[str, list[str], datetime | None]:
    """The name, scopes and expiry a new key would get, or :class:`ApiKeyError` saying why not.

    What :func:`create_key` checks before anything is stored (forms call it to
    show the problem beside the field): API keys on, a name of 1 to 100
    characters, scopes from ``api_keys.scopes``, an expiry in the future and
    within ``api_keys.max_age`` (``True``: ``max_age`` from now; ``None``:
    never, only when ``max_age`` is ``None``).
    """
    config = config or get_config()
    options = config.api_keys
    if options is None:
        raise ApiKeyError("API keys are off (WEBAUTH['api_keys'])")
    given = [scopes] if isinstance(scopes, str) else list(scopes)
    # Checked before they are hashed: a scope that is no string (even a list) is unknown.
    unknown = [s for s in given if s not in options.scopes]
    if unknown:
        raise ApiKeyError(f"unknown scopes {unknown!r}; api_keys.scopes allows {options.scopes!r}")
    chosen = list(dict.fromkeys(given))
    text = name.strip() if isinstance(name, str) else ""
    if not text or len(text) > 100:
        raise ApiKeyError("a key needs a name of 1 to 100 characters")
    now = timezone.now()
    until: datetime | None
    if expires is True:
        until = now + timedelta(seconds=options.max_age) if options.max_age else None
    elif expires is None or expires is False:
        if options.max_age is not None:
            raise ApiKeyError("keys must expire (api_keys.max_age is set)")
        until = None
    else:
        until = expires
        if until <= now:
            raise ApiKeyError("the expiry is in the past")
        if options.max_age is not None and until > now + timedelta(seconds=options.max_age):
            raise ApiKeyError("the expiry is beyond api_keys.max_age")
    return text, chosen, until


def create_key(
    user: Any,
    /,
    *,
    name: str,
    scopes: Iterable[str] = (),
    expires: datetime | bool | None = True,
    config: Config | None = None,
    request: HttpRequest | None = None,
) -> CreatedKey:
    """Make a key for *user*: *scopes* from ``api_keys.scopes``, *expires* a time, ``True``
    for ``api_keys.max_age`` from now, or ``None`` for never (when ``max_age`` allows it).

    *user* may instead be an instance of a model in ``api_keys.owners`` (a
    team): the key is then that owner's, and acts as no user.

    Raises :class:`ApiKeyError` for an unknown scope, an expiry in the past, a
    name of more than 100 characters, or a user (an owner) at ``max_keys`` live keys.
    """
    config = config or get_config()
    name, chosen, until = check_new_key(name=name, scopes=scopes, expires=expires, config=config)
    options = config.api_keys
    assert options is not None
    holder_id, owner = _holder(user, config)
    key_id = _random(_ID_LENGTH)
    secret = _random(_SECRET_LENGTH)
    payload = f"{options.prefix}_{key_id}{secret}"
    new = ApiKeyRecord(
        key_id=key_id,
        user_id=holder_id,
        name=name,
        secret_hash=_hash(secret),
        scopes=chosen,
        expires=until,
        owner=owner,
    )
    record = config.storage.create_api_key(new, options.max_keys)
    if record is None:
        raise ApiKeyError(f"a user (or an owner) may hold {options.max_keys} live keys")
    _announce(config, record, "created", request)
    return CreatedKey(key=_checksum_of(payload), record=record)


def revoke_key(
    record: ApiKeyRecord, *, config: Config | None = None, request: HttpRequest | None = None
) -> bool:
    """Revoke *record* at once, in every process; ``False`` if it was revoked already."""
    return revoke(record.user_id, record.key_id, owner=record.owner, config=config, request=request)


def revoke(
    user_id: str,
    key_id: str,
    *,
    owner: str = "",
    config: Config | None = None,
    request: HttpRequest | None = None,
) -> bool:
    """Revoke the user's key *key_id*; ``False`` if it is not theirs or revoked already.

    With *owner* (an :func:`owner_ref`; *user_id* is then ignored), that owner's key.
    The ``api_key`` event (``action="revoked"``) is sent when it was revoked here.
    """
    config = config or get_config()
    if not isinstance(key_id, str) or not 0 < len(key_id) <= _ID_LENGTH:
        return False
    if owner:
        done = config.storage.revoke_api_key("", key_id, owner=owner)
    else:
        done = bool(user_id) and config.storage.revoke_api_key(str(user_id), key_id)
    if done:
        emit(
            config,
            "api_key",
            request=request,
            user_id="" if owner else str(user_id),
            key_id=key_id,
            action="revoked",
            **_owned(owner),
        )
    return done


def _announce(config: Config, record: ApiKeyRecord, action: str, request: object) -> None:
    emit(
        config,
        "api_key",
        request=request,
        user_id=record.user_id,
        key_id=record.key_id,
        key_name=record.name,
        action=action,
        **_owned(record.owner),
    )


def _owned(owner: str) -> dict[str, str]:
    """The ``owner`` of an event about an owner's key (left out for a user's key, as
    handlers written before owners expect)."""
    return {"owner": owner} if owner else {}


def list_keys(user: Any, *, config: Config | None = None) -> list[ApiKeyRecord]:
    """The user's (or an owner's) keys, newest first (revoked and expired ones too): never
    a key itself."""
    config = config or get_config()
    holder_id, owner = _holder(user, config)
    if owner:
        return config.storage.list_api_keys("", owner=owner)
    return config.storage.list_api_keys(holder_id)


def key_from_request(request: HttpRequest) -> str | None:
    """The key a request carries (``Authorization: Bearer`` or ``X-API-Key``), unchecked."""
    header = request.META.get("HTTP_X_API_KEY")
    if header is None:
        scheme, _, value = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        header = value
    header = header.strip()
    return header if 0 < len(header) <= _MAX_LENGTH else None


# A secret hash that matches nothing, compared when the key id is unknown, so that
# an unknown id costs what a wrong secret does.
_NO_HASH = "0" * 64


def authenticate(
    request: HttpRequest, key: str | None = None, *, config: Config | None = None
) -> KeyMatch | None:
    """The request's key if it holds, else ``None`` (nothing carried, or refused).

    One query: the key by its id, with its user (a second, once the secret
    matched, for the instance a project-defined owner's key belongs to). A
    malformed key, an unknown id, a wrong secret, a revoked or expired key, or
    an inactive user (an owner gone or inactive) is refused alike and counted
    against ``api_key_failed`` for the client's address; a key that holds
    counts against ``api_key`` (a refused request over either limit raises
    :class:`webauth.errors.RateLimited`).
    """
    config = config or get_config()
    options = config.api_keys
    if options is None:
        return None
    key = key if key is not None else key_from_request(request)
    if key is None:
        return None
    parts = _parts(key, options.prefix)
    found = config.storage.get_api_key(parts[0]) if parts is not None else None
    record, user = found if found is not None else (None, None)
    expected = record.secret_hash if record is not None else _NO_HASH
    given = _hash(parts[1]) if parts is not None else _hash("")
    matches = hmac.compare_digest(given, expected) and record is not None
    now = timezone.now()
    holder = user
    if record is not None and record.owner:
        # Read only for a key whose secret matched: a guess costs no second query.
        holder = owner_of(record.owner, config) if matches else None
        user = None
    if (
        not matches
        or record is None
        or record.revoked_at is not None
        or (record.expires is not None and record.expires <= now)
        or holder is None
        or not getattr(holder, "is_active", True)
    ):
        failed = ratelimit.hit(request, "api_key_failed", config=config)
        if not failed:
            raise RateLimited("Too many failed API keys", retry_after=failed.retry_after)
        return None
    used = ratelimit.hit(request, "api_key", record.key_id, config=config)
    if not used:
        raise RateLimited("Too many requests with this API key", retry_after=used.retry_after)
    if record.last_used_at is None or now - record.last_used_at >= LAST_USED_EVERY:
        config.storage.touch_api_key(record.key_id, now, LAST_USED_EVERY.total_seconds())
        record.last_used_at = now
    return KeyMatch(record=record, user=user, owner=holder)


# -- keys of project-defined owners: deleted with their owner ------------------------------
#: The owner models whose ``post_delete`` is connected now, by their label as configured.
_WATCHED: dict[str, Any] = {}


def watch_owners(*args: Any, setting: str | None = None, **kwargs: Any) -> None:
    """Connect :func:`owner_deleted` to the ``post_delete`` of each ``api_keys.owners``
    model, and disconnect models no longer listed (at start-up, and as a
    ``setting_changed`` receiver).

    Read from the raw setting: the configuration may not be buildable yet. A label
    that names no installed model is left out (``webauth.E019`` reports it): a
    lazy reference to it would stay pending, which Django's own checks report.
    """
    if setting not in (None, "WEBAUTH"):
        return
    from django.conf import settings
    from django.db.models.signals import post_delete

    raw = getattr(settings, "WEBAUTH", None)
    section = raw.get("api_keys") if isinstance(raw, dict) else None
    listed = section.get("owners", ()) if isinstance(section, dict) else ()
    listed = [listed] if isinstance(listed, str) else listed
    wanted: dict[str, Any] = {}
    for label in listed if isinstance(listed, list | tuple) else ():
        with suppress(LookupError, ValueError, TypeError, AttributeError):  # no such model
            wanted[label] = apps.get_model(label)
    for label, model in list(_WATCHED.items()):
        if wanted.get(label) is not model:
            post_delete.disconnect(sender=model, dispatch_uid=f"webauth.api_key_owner:{label}")
            del _WATCHED[label]
    for label, model in wanted.items():
        if label not in _WATCHED:
            post_delete.connect(
                owner_deleted, sender=model, dispatch_uid=f"webauth.api_key_owner:{label}"
            )
            _WATCHED[label] = model


def owner_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    """``post_delete`` of an owner model: its keys go with it, as a user's do.

    Through the adapter's ``delete_owner_api_keys`` where it has one (the Django
    adapter does); a custom adapter's keys without it are refused by
    :func:`authenticate` once their owner is gone.
    """
    try:
        config = get_config()
    except ImproperlyConfigured:  # the system checks say what is wrong
        return
    config.storage.delete_owner_api_keys(f"{instance._meta.label_lower}:{instance.pk}")
