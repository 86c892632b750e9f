"""Rate limits that hold across processes, on Django's cache framework.

Every POST that proves who someone is or makes webauth send something counts
against the limits of its *action* in ``WEBAUTH["rate_limits"]``
(docs/rate-limits.md has the table):

* ``signin`` and ``signin_failed``: credentials sign-ins (per address; failures
  also per identifier and per address and identifier);
* ``oauth_callback``: OAuth/OIDC callbacks, per address;
* ``session_update``: ``POST /auth/session``, per address;
* ``email_send`` and ``code_failed``: email sign-in (per address; per address
  and email address);
* ``passkey_options`` and ``passkey_failed``: the WebAuthn options route and
  failed passkey verifications, per address.

Use from a flow or a project's view::

    from webauth import ratelimit

    decision = ratelimit.hit(request, "email_send", key=email)
    if not decision:
        return ratelimit.limited_response(decision)  # 429 with Retry-After
    ...

    # Count failures only: take one before the check, give it back on success.
    decision = ratelimit.hit(request, "code_failed", key=email)
    if not decision:
        raise RateLimited(retry_after=decision.retry_after)
    if code_is_right:
        ratelimit.refund(decision)

    # Several actions at once (one round trip on Redis), as the credentials flow
    # counts its attempt and its failure:
    attempt, failure = ratelimit.hit_many(request, [("signin", None), ("signin_failed", key)])

Why it is atomic: each rule is a counter per fixed window, created with
``cache.add`` (only one process can create it) and raised with ``cache.incr``,
which is one atomic operation on Redis and Memcached (and under a lock in
``LocMemCache``, within one process). The value ``incr`` returns is this
request's place in the window, so out of any number of concurrent requests
exactly ``limit`` see a place within the limit; nothing is read, compared and
written back. On Django's ``RedisCache`` the same happens in one round trip for
all the counters of a request (of every action :func:`hit_many` counts): a short
script (``INCR``, and ``EXPIRE`` for a counter it created) that Redis runs
atomically. ``DatabaseCache`` and
``FileBasedCache`` do read-modify-write in ``incr`` and are not atomic;
``DummyCache`` stores nothing (system checks ``webauth.E009``, ``W006``, ``W007``).

Keys hold no personal data: the address bucket and the key are hashed. A
failing cache does not take sign-in down: the error is logged and the request
is let through (the limits are a second line behind the password hasher).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache
from django.http import HttpRequest, HttpResponse

from .client_ip import client_bucket_of
from .conf import Config, RateRule, get_config
from .identity import identifier_key
from .logger import get_logger
from .responses import json_response

__all__ = [
    "Decision",
    "check",
    "client_key",
    "hit",
    "hit_many",
    "limited_response",
    "normalize_key",
    "refund",
]

_log = get_logger("ratelimit")

#: A window's counter lives this much longer than the window, so that no request of
#: the window can find it expired (Django's Redis ``incr`` checks, then increments).
_EXPIRY_MARGIN = 30

_PREFIX = "webauth:rl"

#: One counter of a request: its rule, its cache key, the seconds left in its window.
Counter = tuple[RateRule, str, int]


@dataclass(frozen=True, slots=True)
class Decision:
    """What a limit decided: truthy when the request may go on.

    ``retry_after`` is the number of seconds until the refusing rule's window
    ends (0 when allowed); ``rule`` is that rule. ``counted`` names the counters
    this decision took one from, for :func:`refund`.
    """

    allowed: bool
    action: str
    retry_after: int = 0
    rule: RateRule | None = None
    counted: tuple[str, ...] = ()
    cache_alias: str = "default"

    def __bool__(self) -> bool:
        return self.allowed


def normalize_key(key: str) -> str:
    """The form a key is counted under: :func:`webauth.identity.identifier_key`.

    Every spelling that could reach one account shares one count
    (``" Alice@Example.com"``, ``"\uff41lice@example.com"``, ``"alíce@example.com"``
    and ``"ali\u200bce@example.com"`` are all ``"alice@example.com"``), so
    nobody gets more guesses at an account by spelling it differently.
    """
    return identifier_key(key)


def client_key(request: HttpRequest, config: Config | None = None) -> str:
    """The client's address bucket for *request* (its IP address, or its IPv6 /64)."""
    return client_bucket_of(request.META, (config or get_config()).trusted_proxies)


def _rules(config: Config, action: str) -> tuple[RateRule, ...]:
    limits = config.rate_limits
    if not limits.enabled:
        return ()
    try:
        return limits.rules[action]
    except KeyError:
        raise ValueError(
            f"{action!r} is not a rate-limit action; add it to WEBAUTH['rate_limits'] "
            f"(known: {', '.join(sorted(limits.rules))})"
        ) from None


def _counters(
    request: HttpRequest, config: Config, hits: Iterable[tuple[str, str | None]], now: float
) -> tuple[list[Counter], list[int]]:
    """(rule, cache key, seconds left in its window) for each rule that applies, in order.

    With where each ``(action, key)`` of *hits* ends in that list.
    """
    counters: list[Counter] = []
    ends: list[int] = []
    ip: str | None = None
    for action, key in hits:
        for index, rule in enumerate(_rules(config, action)):
            if rule.scope != "ip" and key is None:
                continue  # a rule per key, for a request that has none (an empty identifier)
            if rule.scope != "key" and ip is None:
                ip = client_key(request, config)
            if rule.scope == "ip":
                subject = f"ip\0{ip}"
            elif rule.scope == "key":
                subject = f"key\0{normalize_key(key or '')}"
            else:
                subject = f"ip+key\0{ip}\0{normalize_key(key or '')}"
            window = int(now // rule.period)
            left = max(1, math.ceil((window + 1) * rule.period - now))
            digest = hashlib.sha256(subject.encode("utf-8", "surrogatepass")).hexdigest()[:32]
            counters.append((rule, f"{_PREFIX}:{action}:{index}:{window}:{digest}", left))
        ends.append(len(counters))
    return counters, ends


def _take(cache: Any, name: str, timeout: int) -> int:
    """Add one to the counter *name*: this request's place in its window (atomic)."""
    for _ in range(3):
        if cache.add(name, 1, timeout):
            return 1
        try:
            return int(cache.incr(name))
        except ValueError:
            continue  # it expired between add() and incr(): only at a window's very end
    return 1


def hit(
    request: HttpRequest, action: str, key: str | None = None, *, config: Config | None = None
) -> Decision:
    """Count one *action* for *request* (and *key*) and decide whether it may go on.

    The rules are taken in their order and counting stops at the first that
    refuses, so that a refused request is not counted against the later rules
    (a stranger refused per address and identifier does not use up the
    identifier's own limit). *key* is what the ``key`` and ``ip+key`` rules count
    per, such as the identifier typed into a sign-in form; without one those
    rules are skipped. Raises ``ValueError`` for an action that is not configured.
    """
    return hit_many(request, ((action, key),), config=config)[0]


def hit_many(
    request: HttpRequest,
    hits: Sequence[tuple[str, str | None]],
    *,
    config: Config | None = None,
) -> tuple[Decision, ...]:
    """Count several ``(action, key)`` for *request* at once: one :class:`Decision` each.

    The same as calling :func:`hit` for each in turn and stopping at the first
    refusal, in one atomic step (one round trip on Django's ``RedisCache``):
    the rules of all the actions are taken in order and counting stops at the
    first that refuses. The actions after a refused one are counted nothing
    and refused too, with the refusing rule and its ``retry_after``. Raises
    ``ValueError``, before counting anything, for an action that is not configured.
    """
    config = config or get_config()
    alias = config.rate_limits.cache
    now = time.time()
    try:
        counters, ends = _counters(request, config, hits, now)
        if not counters:
            return tuple(Decision(True, action, cache_alias=alias) for action, _ in hits)
        cache = caches[alias]
        client = _redis_client(cache)
        if client is not None:
            refused, counted = _take_all_redis(cache, client, counters)
        else:
            refused, counted = _take_all(cache, counters)
    except ValueError:
        raise
    except Exception:
        # The cache is down or misconfigured: log it, and let the request through.
        names = ", ".join(repr(action) for action, _ in hits)
        _log.exception("webauth: rate limit %s could not be counted in cache %r", names, alias)
        return tuple(Decision(True, action, cache_alias=alias) for action, _ in hits)
    decisions = []
    start = 0
    for (action, _), end in zip(hits, ends, strict=True):
        mine = counted[start:end]
        if refused is None or refused >= end:
            decisions.append(Decision(True, action, 0, None, mine, alias))
        else:
            rule, _, left = counters[refused]
            decisions.append(Decision(False, action, left, rule, mine, alias))
        start = end
    return tuple(decisions)


def _take_all(cache: Any, counters: list[Counter]) -> tuple[int | None, tuple[str, ...]]:
    """Any cache: ``add`` + ``incr`` per counter. (index of the refusing one, names counted)."""
    counted = []
    for index, (rule, name, left) in enumerate(counters):
        place = _take(cache, name, left + _EXPIRY_MARGIN)
        counted.append(name)
        if place > rule.limit:
            return index, tuple(counted)
    return None, tuple(counted)


# Django's RedisCache: every counter of a hit in one round trip. A script runs
# atomically in Redis, so INCR and the EXPIRE of a counter it just created cannot
# be separated, and counting stops at the first refusing rule as in _take_all.
# KEYS: the counters; ARGV: limit and time to live of each, in turn.
_HIT_SCRIPT = """
for i, name in ipairs(KEYS) do
  local place = redis.call('INCR', name)
  if place == 1 then redis.call('EXPIRE', name, ARGV[2 * i]) end
  if place > tonumber(ARGV[2 * i - 1]) then return i end
end
return 0
"""
# DECR only what still exists: a counter whose window is over must not come back
# without a time to live.
_REFUND_SCRIPT = """
for _, name in ipairs(KEYS) do
  if redis.call('EXISTS', name) == 1 then redis.call('DECR', name) end
end
return 0
"""


def _redis_client(cache: Any) -> Any:
    """The ``redis.Redis`` client behind Django's ``RedisCache``, or ``None`` for other caches.

    Django makes a new ``redis.Redis`` (about 0.2 ms: its table of reply parsers)
    for every cache call; the limiter keeps one per connection pool (the client
    is thread-safe: each command borrows a connection from the pool).
    """
    if not isinstance(cache, RedisCache):
        return None
    backend = cache._cache
    client = backend.__dict__.get("_webauth_client")
    if client is None:
        client = backend.get_client(None, write=True)
        backend.__dict__["_webauth_client"] = client
    return client


def _take_all_redis(
    cache: Any, client: Any, counters: list[Counter]
) -> tuple[int | None, tuple[str, ...]]:
    # make_key, not make_and_validate_key: the validation only warns about keys
    # memcached would refuse (a Python loop over each character), and these are
    # Redis keys, ASCII and short by construction.
    names = [cache.make_key(name) for _, name, _ in counters]
    args: list[int] = []
    for rule, _, left in counters:
        args += [rule.limit, left + _EXPIRY_MARGIN]
    refused = int(client.eval(_HIT_SCRIPT, len(names), *names, *args))
    if refused:
        return refused - 1, tuple(name for _, name, _ in counters[:refused])
    return None, tuple(name for _, name, _ in counters)


def check(
    request: HttpRequest, action: str, key: str | None = None, *, config: Config | None = None
) -> Decision:
    """Whether :func:`hit` would let *action* through now, counting nothing.

    For a page that wants to show a message before a form is sent. It is a read,
    so two concurrent requests may both see room: use :func:`hit` to enforce.
    """
    config = config or get_config()
    alias = config.rate_limits.cache
    now = time.time()
    try:
        found, _ = _counters(request, config, ((action, key),), now)
        if not found:  # limits off, or only rules per key and no key: no cache needed
            return Decision(True, action, cache_alias=alias)
        values = caches[alias].get_many([name for _, name, _ in found])
    except ValueError:
        raise
    except Exception:
        _log.exception("webauth: rate limit %r could not be read from cache %r", action, alias)
        return Decision(True, action, cache_alias=alias)
    for rule, name, left in found:
        if int(values.get(name) or 0) >= rule.limit:
            return Decision(False, action, left, rule, (), alias)
    return Decision(True, action, cache_alias=alias)


def refund(decision: Decision) -> None:
    """Give back what *decision* took: the attempt turned out not to count (a success)."""
    if not decision.counted:
        return
    try:
        cache = caches[decision.cache_alias]
        client = _redis_client(cache)
        if client is not None:
            names = [cache.make_key(name) for name in decision.counted]
            client.eval(_REFUND_SCRIPT, len(names), *names)
            return
        for name in decision.counted:
            with contextlib.suppress(ValueError):  # its window is over
                cache.decr(name)
    except Exception:
        _log.exception("webauth: rate limit %r could not be refunded", decision.action)


def limited_response(decision: Decision | int, body: Any = None) -> HttpResponse:
    """``429 Too Many Requests`` with ``Retry-After`` and a JSON body.

    *decision* is a refusing :class:`Decision` or the seconds to wait. The body is
    ``{"error": "RateLimited", "retryAfter": <seconds>}`` plus *body*'s entries
    (the routes add the sign-in page's ``url`` for Auth.js's clients).
    """
    seconds = decision.retry_after if isinstance(decision, Decision) else decision
    retry_after = max(1, seconds)
    data = {"error": "RateLimited", "retryAfter": retry_after, **(body or {})}
    response = json_response(data, status=429, no_cache=True)
    response["Retry-After"] = str(retry_after)
    return response
