"""Counters in Django's cache that every process shares: the arithmetic of the rate limits.

:mod:`webauth.ratelimit` decides *what* to count (the rules of an action, the
client's address bucket, the identifier); this module adds one to a row of
counters and gives it back, atomically, on any cache:

* any cache: ``cache.add`` (only one process can create a counter) then
  ``cache.incr`` (one atomic operation on Redis and Memcached, under a lock in
  ``LocMemCache``); the value ``incr`` returns is this request's place in the
  window, so nothing is read, compared and written back;
* Django's ``RedisCache``: every counter of a request in one round trip, a
  short script that Redis runs atomically (``INCR``, and ``EXPIRE`` for a
  counter it created).

Counting stops at the first counter over its limit, so a refused request is not
counted against the counters after it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from django.core.cache.backends.redis import RedisCache

__all__ = ["EXPIRY_MARGIN", "Counter", "give_back", "redis_client", "take", "take_all"]

#: A window's counter lives this much longer than the window, so that no request of
#: the window can find it expired (Django's Redis ``incr`` checks, then increments).
EXPIRY_MARGIN = 30


class Counter(NamedTuple):
    """One counter of a request: its cache key, its limit, the seconds left in its window."""

    name: str
    limit: int
    left: int


def take(cache: Any, name: str, timeout: int) -> int:
    """Add one to the counter *name*: this request's place in its window (atomic)."""
    for _ in range(3):
        if cache.add(name, 1, timeout):
            return 1
        try:
            return int(cache.incr(name))
        except ValueError:
            continue  # it expired between add() and incr(): only at a window's very end
    return 1


def take_all(cache: Any, counters: Sequence[Counter]) -> tuple[int | None, tuple[str, ...]]:
    """Add one to each of *counters* in turn, stopping at the first over its limit.

    Returns the index of that counter (``None`` when all are within their
    limits) and the names of the counters that were counted.
    """
    client = redis_client(cache)
    if client is not None:
        return _take_all_redis(cache, client, counters)
    counted = []
    for index, (name, limit, left) in enumerate(counters):
        place = take(cache, name, left + EXPIRY_MARGIN)
        counted.append(name)
        if place > limit:
            return index, tuple(counted)
    return None, tuple(counted)


def give_back(cache: Any, names: Iterable[str]) -> None:
    """Take one from each counter of *names* that still exists (a refund)."""
    client = redis_client(cache)
    if client is not None:
        keys = [cache.make_key(name) for name in names]
        client.eval(_REFUND_SCRIPT, len(keys), *keys)
        return
    for name in names:
        with contextlib.suppress(ValueError):  # its window is over
            cache.decr(name)


# Django's RedisCache: every counter of a hit in one round trip. A script runs
# atomically in Redis, so INCR and the EXPIRE of a counter it just created cannot
# be separated, and counting stops at the first refusing counter as take_all does.
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


def redis_client(cache: Any) -> Any:
    """The ``redis.Redis`` client behind Django's ``RedisCache``, or ``None`` for other caches.

    Django makes a new ``redis.Redis`` (about 0.2 ms: its table of reply parsers)
    for every cache call; the counters keep one per connection pool (the client
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
    cache: Any, client: Any, counters: Sequence[Counter]
) -> tuple[int | None, tuple[str, ...]]:
    # make_key, not make_and_validate_key: the validation only warns about keys
    # memcached would refuse (a Python loop over each character), and these are
    # Redis keys, ASCII and short by construction.
    keys = [cache.make_key(counter.name) for counter in counters]
    args: list[int] = []
    for _, limit, left in counters:
        args += [limit, left + EXPIRY_MARGIN]
    refused = int(client.eval(_HIT_SCRIPT, len(keys), *keys, *args))
    if refused:
        return refused - 1, tuple(counter.name for counter in counters[:refused])
    return None, tuple(counter.name for counter in counters)
