"""A sign-in waiting for its second factor: held server-side, found by a handle, used once.

When the first factor succeeds for a user with a second factor, no session is
made: what the session will need (who, through which account, where to land)
is kept in the rate limits' cache (``WEBAUTH["rate_limit_cache"]``, shared by
every process) for ``mfa.pending_max_age`` seconds under the hash of a random
handle. A browser holds the handle in an encrypted cookie
(``authjs.mfa-pending``), an app receives it as ``mfaToken``; each record
remembers which kind of client it was made for, and refuses the other.

Wrong codes are counted per record (``mfa.attempts``; the record is dropped
at the limit) and per user by the ``mfa_failed`` rate limit. The record is
used once: the request that passes claims it (``cache.add``, atomic on every
cache webauth accepts for its limits), so two right codes sent at once make
one session.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from django.core.cache import caches

from ..counters import take

if TYPE_CHECKING:
    from ..conf import Config
    from ..flows.outcomes import NeedsStep

__all__ = [
    "OPTIONS_PER_SIGN_IN",
    "Client",
    "Pending",
    "claim",
    "count_failure",
    "count_options",
    "drop",
    "hold",
    "load",
]

#: The kind of client a pending sign-in answers.
Client = Literal["browser", "app"]

_PREFIX = "webauth:mfa"
#: Security-key challenges one held sign-in may ask for (each is a stored row
#: until it is used or expires): a page reloaded, a key tried again.
OPTIONS_PER_SIGN_IN = 10


@dataclass(slots=True)
class Pending:
    """What the session of a sign-in waiting for its second factor needs."""

    client: str
    user_id: str
    user_dict: dict[str, Any]
    provider_id: str
    callback_url: str
    account: dict[str, Any] | None = None
    profile: Any = None
    is_new_user: bool = False
    linked_to_session: bool = False
    #: How the first factor was proven (the attempt's ``amr``).
    amr: list[str] = field(default_factory=list)
    #: The handle itself (never stored: only its hash is a key).
    handle: str = field(default="", compare=False)


def _key(handle: str) -> str:
    return f"{_PREFIX}:{hashlib.sha256(handle.encode('utf-8', 'surrogatepass')).hexdigest()}"


def _cache(config: Config) -> Any:
    return caches[config.rate_limits.cache]


def hold(config: Config, outcome: NeedsStep, client: Client) -> Pending:
    """Keep *outcome*'s sign-in for its second factor; the record, with its new handle."""
    signed_in = outcome.signed_in
    pending = Pending(
        client=client,
        user_id=str(signed_in.user_dict.get("id") or ""),
        user_dict=dict(signed_in.user_dict),
        provider_id=outcome.attempt.provider_id,
        callback_url=outcome.attempt.callback_url,
        account=dict(signed_in.account) if signed_in.account is not None else None,
        profile=signed_in.profile,
        is_new_user=signed_in.is_new_user,
        linked_to_session=signed_in.linked_to_session,
        amr=list(outcome.attempt.amr),
    )
    handle = secrets.token_urlsafe(32)
    record = asdict(pending)
    del record["handle"]
    # default=str: a profile value JSON cannot hold (a date) is kept as its text.
    _cache(config).set(_key(handle), json.dumps(record, default=str), config.mfa.pending_max_age)
    pending.handle = handle
    return pending


def load(config: Config, handle: object, client: Client) -> Pending | None:
    """The pending sign-in of *handle* made for *client*; ``None`` if none (expired, used...)."""
    if not isinstance(handle, str) or not 20 <= len(handle) <= 100:
        return None
    raw = _cache(config).get(_key(handle))
    if not isinstance(raw, str):
        return None
    try:
        record = json.loads(raw)
        pending = Pending(**record, handle=handle)
    except (ValueError, TypeError):
        return None
    return pending if pending.client == client and pending.user_id else None


def count_failure(config: Config, pending: Pending) -> bool:
    """Count a wrong code; ``False`` (and the record dropped) once there were too many."""
    name = f"{_key(pending.handle)}:failed"
    place = take(_cache(config), name, config.mfa.pending_max_age)
    if place < config.mfa.attempts:
        return True
    drop(config, pending)
    return False


def count_options(config: Config, pending: Pending) -> bool:
    """Count a security-key challenge asked for; ``False`` beyond :data:`OPTIONS_PER_SIGN_IN`."""
    name = f"{_key(pending.handle)}:options"
    return take(_cache(config), name, config.mfa.pending_max_age) <= OPTIONS_PER_SIGN_IN


def claim(config: Config, pending: Pending) -> bool:
    """Use the pending sign-in: ``True`` for exactly one caller, who then makes the session."""
    cache = _cache(config)
    if not cache.add(f"{_key(pending.handle)}:used", 1, config.mfa.pending_max_age):
        return False
    cache.delete(_key(pending.handle))
    return True


def drop(config: Config, pending: Pending) -> None:
    """Forget the pending sign-in (too many wrong codes, or the user gave up)."""
    _cache(config).delete(_key(pending.handle))
