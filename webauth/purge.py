"""Deleting expired sessions, verification tokens, WebAuthn challenges and access token
sessions in short batches.

Batches follow the expired rows in primary-key order (keyset pagination): a
query finds where the next ``batch_size`` expired rows end, after the previous
batch's last id, and one ``DELETE`` removes them by key range; each batch
commits on its own. So no statement holds locks for long, no batch rescans
what earlier batches removed (the usual ``WHERE id IN (SELECT ... LIMIT n)``
does, and slows down quadratically as dead index entries pile up), and the
number of statements follows the number of rows, not the spread of their ids:
rows at ids 1 and 10**10 are one batch. Rows never travel to Python; each batch
reads back two numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connections, models, transaction
from django.utils import timezone

from .models import Session, TokenSession, VerificationToken, WebAuthnChallenge

__all__ = ["PURGED_MODELS", "PurgeResult", "count_expired", "purge_expired"]

PURGED_MODELS: tuple[type[models.Model], ...] = (
    Session,
    VerificationToken,
    WebAuthnChallenge,
    # The sessions access tokens were minted for, once their last token has expired.
    TokenSession,
)


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


def _next_batch_sql(table: str, pk: str, expires: str, *, after: bool) -> str:
    """The last id and the number of the next *batch_size* expired rows.

    With *after*, the rows after a given id: the previous batch's last one.
    """
    start = f" AND {pk} > %s" if after else ""
    return (
        f"SELECT MAX({pk}), COUNT(*) FROM (SELECT {pk} FROM {table}"  # noqa: S608 - quoted names
        f" WHERE {expires} < %s{start} ORDER BY {pk} LIMIT %s) batch"
    )


def purge_expired(
    model: type[models.Model],
    *,
    batch_size: int = 10_000,
    now: datetime | None = None,
    using: str = "default",
    progress: Callable[[int], None] | None = None,
) -> PurgeResult:
    """Delete *model*'s rows whose ``expires`` lies before *now*.

    Each batch of at most *batch_size* rows is its own short transaction;
    *progress* is called with each batch's count. Returns the totals.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    now = now or timezone.now()
    table, pk, expires = _names(model, using)
    first_sql = _next_batch_sql(table, pk, expires, after=False)
    next_sql = _next_batch_sql(table, pk, expires, after=True)
    first_delete = f"DELETE FROM {table} WHERE {pk} <= %s AND {expires} < %s"  # noqa: S608
    next_delete = f"DELETE FROM {table} WHERE {pk} > %s AND {pk} <= %s AND {expires} < %s"  # noqa: S608
    deleted = batches = 0
    last: Any = None
    connection = connections[using]
    while True:
        # The boundary is read outside the DELETE's transaction: on SQLite a
        # transaction that reads before it writes cannot wait for the write lock.
        with connection.cursor() as cursor:
            if last is None:
                cursor.execute(first_sql, [now, batch_size])
            else:
                cursor.execute(next_sql, [now, last, batch_size])
            high, found = cursor.fetchone()
        if not found:
            break
        with transaction.atomic(using=using), connection.cursor() as cursor:
            if last is None:
                cursor.execute(first_delete, [high, now])
            else:
                cursor.execute(next_delete, [last, high, now])
            count = max(cursor.rowcount, 0)
        last = high
        deleted += count
        batches += 1
        if progress is not None:
            progress(count)
        if found < batch_size:  # that was the rest
            break
    return PurgeResult(table=model._meta.db_table, deleted=deleted, batches=batches)
