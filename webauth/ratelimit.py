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
The counting itself is :mod:`webauth.counters`; this module decides what is counted.

Keys hold no personal data: the address bucket and the key are hashed. A
failing cache does not take sign-in down: the error is logged and the request
is let through (the limits are a second line behind the password hasher).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.cache import caches
from django.http import HttpRequest, HttpResponse

from .client_ip import client_bucket_of
from .conf import Config, RateRule, get_config
from .counters import Counter, give_back, take_all
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
    "usage",
]

_log = get_logger("ratelimit")

_PREFIX = "webauth:rl"


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
) -> tuple[list[tuple[RateRule, Counter]], list[int]]:
    """Each rule that applies, in order, with its counter (cache key, limit, seconds left).

    With where each ``(action, key)`` of *hits* ends in that list.
    """
    counters: list[tuple[RateRule, Counter]] = []
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
            name = f"{_PREFIX}:{action}:{index}:{window}:{digest}"
            counters.append((rule, Counter(name, rule.limit, left)))
        ends.append(len(counters))
    return counters, ends


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
        refused, counted = take_all(caches[alias], [counter for _, counter in counters])
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
            rule, counter = counters[refused]
            decisions.append(Decision(False, action, counter.left, rule, mine, alias))
        start = end
    return tuple(decisions)


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
        values = caches[alias].get_many([counter.name for _, counter in found])
    except ValueError:
        raise
    except Exception:
        _log.exception("webauth: rate limit %r could not be read from cache %r", action, alias)
        return Decision(True, action, cache_alias=alias)
    for rule, counter in found:
        if int(values.get(counter.name) or 0) >= rule.limit:
            return Decision(False, action, counter.left, rule, (), alias)
    return Decision(True, action, cache_alias=alias)


def usage(
    request: HttpRequest, actions: Sequence[str], *, config: Config | None = None
) -> dict[str, tuple[tuple[RateRule, int], ...]]:
    """How much of each action's per-address rules *request*'s client has used so far.

    For each of *actions*, its ``ip`` rules with the count of the current window
    (the other scopes need a key, and are left out), read in one cache call;
    nothing is counted. What :mod:`webauth.challenges` asks to tell abuse. Like
    :func:`check` it is a read: use :func:`hit` to enforce. A cache that cannot
    be read is logged and reads as nothing used. Raises ``ValueError`` for an
    action that is not configured.
    """
    config = config or get_config()
    empty: dict[str, tuple[tuple[RateRule, int], ...]] = {action: () for action in actions}
    now = time.time()
    try:
        found, ends = _counters(request, config, [(action, None) for action in actions], now)
        if not found:  # limits off, or no rule per address
            return empty
        values = caches[config.rate_limits.cache].get_many([c.name for _, c in found])
    except ValueError:
        raise
    except Exception:
        names = ", ".join(repr(action) for action in actions)
        _log.exception("webauth: rate limit %s could not be read from cache", names)
        return empty
    used = {}
    start = 0
    for action, end in zip(actions, ends, strict=True):
        used[action] = tuple(
            (rule, int(values.get(counter.name) or 0)) for rule, counter in found[start:end]
        )
        start = end
    return used


def refund(decision: Decision) -> None:
    """Give back what *decision* took: the attempt turned out not to count (a success)."""
    if not decision.counted:
        return
    try:
        give_back(caches[decision.cache_alias], decision.counted)
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
