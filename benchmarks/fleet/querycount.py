"""Counts, on the server, the SQL queries and Redis round trips of every request.

The first middleware of the fleet site. Per request it counts:

* **SQL queries**: every statement Django runs on the request's thread
  (``connection.execute_wrapper``, the hook Django documents for this; an
  ``executemany`` is one). Connection set-up (psycopg's own ``SET``s) is not
  counted; with persistent connections or a pool there is none per request.
* **transactions**: every ``COMMIT`` or ``ROLLBACK`` of a transaction (an outermost
  ``atomic`` block: Django's ``DatabaseWrapper._commit`` / ``_rollback``). They are
  not statements of the first count; each is a ``BEGIN`` and a ``COMMIT`` more
  on the wire.
* **Redis round trips**: every command, or pipeline of commands, that redis-py
  sends on the request's thread (its connections' ``send_packed_command``: a
  pipeline or a Lua script is one). That is the rate limiter's counters, the
  email delivery of ``benchmarks/fleet/mail.py`` (one per sign-in email), and
  anything else that uses the cache.

The counts add up per process under ``"<METHOD> <path>"`` and a thread sends them
to Redis (``shared.QUERIES``, ``shared.TRANSACTIONS``, ``shared.REDIS_CALLS``,
``shared.REQUESTS``) every
half second, in one pipeline, off the request's path: a request pays for two
integer additions and a lock, not for a round trip. The driver reads the sums at
the start and the end of the measured window (the last half second of counts
may not have arrived: both boundaries lag alike, and the ratios are per
request counted).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import redis
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest, HttpResponse
from redis.connection import AbstractConnection

from benchmarks.fleet import shared

_lock = threading.Lock()
# key -> [requests, queries, redis round trips, transactions]
_pending: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
_local = threading.local()
_started = False


def _count_redis() -> None:
    """Wrap redis-py's send so that a request's thread counts its round trips."""
    send = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        counter = getattr(_local, "redis", None)
        if counter is not None:
            counter[0] += 1
        return send(self, command, check_health)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]


def _count_transactions() -> None:
    """Wrap Django's commit and rollback so that a request's thread counts its transactions."""
    for name in ("_commit", "_rollback"):
        original = getattr(BaseDatabaseWrapper, name)

        def counted(self: BaseDatabaseWrapper, _original: Any = original) -> Any:
            counter = getattr(_local, "transactions", None)
            if counter is not None:
                counter[0] += 1
            return _original(self)

        setattr(BaseDatabaseWrapper, name, counted)


def _flush_forever() -> None:
    client = redis.Redis.from_url(shared.REDIS_URL)
    while True:
        time.sleep(0.5)
        with _lock:
            batch = {key: list(values) for key, values in _pending.items()}
            _pending.clear()
        if not batch:
            continue
        try:
            with client.pipeline(transaction=False) as pipe:
                for key, (requests, queries, calls, transactions) in batch.items():
                    pipe.hincrby(shared.REQUESTS, key, requests)
                    pipe.hincrby(shared.QUERIES, key, queries)
                    pipe.hincrby(shared.REDIS_CALLS, key, calls)
                    pipe.hincrby(shared.TRANSACTIONS, key, transactions)
                pipe.execute()
        except redis.RedisError:
            with _lock:  # try again next time
                for key, values in batch.items():
                    for i, value in enumerate(values):
                        _pending[key][i] += value


def _start() -> None:
    global _started
    with _lock:
        if _started:
            return
        _started = True
    _count_redis()
    _count_transactions()
    threading.Thread(target=_flush_forever, name="querycount-flush", daemon=True).start()


class QueryCountMiddleware:
    """Count the SQL queries and Redis round trips of each request (see the module)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        _start()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        queries = [0]

        def count(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any):
            queries[0] += 1
            return execute(sql, params, many, context)

        calls, transactions = [0], [0]
        _local.redis, _local.transactions = calls, transactions
        try:
            with connection.execute_wrapper(count):
                response = self.get_response(request)
        finally:
            _local.redis = _local.transactions = None
        key = f"{request.method} {request.path}"
        with _lock:
            entry = _pending[key]
            entry[0] += 1
            entry[1] += queries[0]
            entry[2] += calls[0]
            entry[3] += transactions[0]
        return response
