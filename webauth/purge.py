"""Deleting expired sessions and verification tokens in short batches.

Batches walk the primary key: each ``DELETE`` covers one key range of at most
``batch_size`` ids and commits on its own, so no statement holds locks for long
and no batch rescans what earlier batches removed (the usual
``WHERE id IN (SELECT ... LIMIT n)`` does, and slows down quadratically as dead
index entries pile up). Rows never travel to Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.db import connections, models, transaction
from django.utils import timezone

from .models import Session, VerificationToken

__all__ = ["PURGED_MODELS", "PurgeResult", "count_expired", "purge_expired"]

PURGED_MODELS: tuple[type[models.Model], ...] = (Session, VerificationToken)


@dataclass(frozen=True, slots=True)
class PurgeResult:
    """What one table's purge did."""

    table: str
    deleted: int
    batches: int


def _names(model: type[models.Model], using: str) -> tuple[str, str, str]:
    quote = connections[using].ops.quote_name
    pk = model._meta.pk
    assert pk is not None
    expires = model._meta.get_field("expires")
    assert pk.column is not None and isinstance(expires, models.Field)
    assert expires.column is not None
    return quote(model._meta.db_table), quote(pk.column), quote(expires.column)


def count_expired(
    model: type[models.Model], *, now: datetime | None = None, using: str = "default"
) -> int:
    """How many rows of *model* have expired (for ``--dry-run``)."""
    table, _, expires = _names(model, using)
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM {table} WHERE {expires} < %s",  # noqa: S608 - quoted names
            [now or timezone.now()],
        )
        return int(cursor.fetchone()[0])


def _ranges(
    model: type[models.Model], now: datetime, batch_size: int, using: str
) -> Iterator[tuple[int, int]]:
    """Consecutive ``[low, high)`` id ranges covering every expired row.

    The bounds are read once; walking fixed-width key ranges costs one index
    range scan per batch, even where ids are sparse.
    """
    table, pk, expires = _names(model, using)
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT MIN({pk}), MAX({pk}) FROM {table} WHERE {expires} < %s",  # noqa: S608
            [now],
        )
        first, last = cursor.fetchone()
    if first is None:
        return
    for low in range(int(first), int(last) + 1, batch_size):
        yield low, low + batch_size


def purge_expired(
    model: type[models.Model],
    *,
    batch_size: int = 10_000,
    now: datetime | None = None,
    using: str = "default",
    progress: Callable[[int], None] | None = None,
) -> PurgeResult:
    """Delete *model*'s rows whose ``expires`` lies before *now*.

    Each batch is its own short transaction; returns the totals.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    now = now or timezone.now()
    table, pk, expires = _names(model, using)
    delete_sql = f"DELETE FROM {table} WHERE {pk} >= %s AND {pk} < %s AND {expires} < %s"  # noqa: S608
    deleted = batches = 0
    for low, high in _ranges(model, now, batch_size, using):
        with transaction.atomic(using=using), connections[using].cursor() as cursor:
            cursor.execute(delete_sql, [low, high, now])
            count = max(cursor.rowcount, 0)
        deleted += count
        batches += 1
        if progress is not None:
            progress(count)
    return PurgeResult(table=model._meta.db_table, deleted=deleted, batches=batches)
