"""Exact comparisons and per-key locks on every database: a detail of the ORM adapter.

:func:`exactly` filters a text column by byte equality on MariaDB and MySQL too,
whatever the column's collation; :func:`grant_transaction` and
:func:`address_transaction` serialise the writers of one email grant's
identifier, or of one address, across processes. ``DjangoAdapter`` and
``manage.py webauth_addresses`` use them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from django.db import connections, models, transaction
from django.db.models import Func

__all__ = [
    "GRANT_LOCK_SECONDS",
    "Bytes",
    "address_transaction",
    "exactly",
    "exclusive",
    "grant_transaction",
]


#: How long a writer waits for another's lock on MariaDB and MySQL (seconds): a
#: grant's writer for the address's other grant writes, a new user for another
#: new user of the address.
GRANT_LOCK_SECONDS = 30


@contextmanager
def exclusive(alias: str, namespace: str, label: str, key: str) -> Iterator[None]:
    """A transaction in which no other holder of (*namespace*, *key*) runs.

    *label* names the lock on MariaDB and MySQL (``webauth.<label>.<hash>``).

    Row locks alone cannot serialise writers of a row that does not exist yet
    (two first grants of one address, two first users of one address): on
    PostgreSQL a concurrent transaction's new row is invisible to the other's
    statements, and on MariaDB and MySQL the new rows' locks and the index
    scans deadlock. So PostgreSQL takes a transaction-level advisory lock on
    the key's hash, and MariaDB and MySQL a named lock (``GET_LOCK``) around
    the transaction. SQLite has one writer: the transaction takes the write
    lock as it begins (:func:`_sqlite_write_transaction`).

    On MariaDB and MySQL the named lock ends with this block: inside an outer
    transaction (``ATOMIC_REQUESTS``, a project's own ``atomic``), it is
    released before that transaction commits. webauth's own routes are
    therefore never wrapped in one (:func:`django.db.transaction.non_atomic_requests`).
    """
    connection = connections[alias]
    digest = hashlib.sha256(f"{namespace}\0{key}".encode("utf-8", "surrogatepass")).digest()
    if connection.vendor == "mysql":
        # A lock name has at most 64 characters.
        name = f"webauth.{label}.{digest.hex()[:48]}"
        with connection.cursor() as cursor:
            cursor.execute("SELECT GET_LOCK(%s, %s)", [name, GRANT_LOCK_SECONDS])
            (acquired,) = cursor.fetchone()
        if acquired != 1:
            raise TimeoutError("timed out waiting for another request of this address")
        try:
            with transaction.atomic(using=alias):
                yield
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT RELEASE_LOCK(%s)", [name])
        return
    if connection.vendor == "sqlite":
        with _sqlite_write_transaction(alias):
            yield
        return
    with transaction.atomic(using=alias):
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                key_number = int.from_bytes(digest[:8], "big", signed=True)
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key_number])
        yield


@contextmanager
def _sqlite_write_transaction(alias: str) -> Iterator[None]:
    """A transaction that holds SQLite's write lock from its ``BEGIN IMMEDIATE``.

    A transaction that reads before it writes holds a shared lock; when two
    such want to write, SQLite refuses one at once ("database is locked")
    rather than let them wait for each other. Beginning with the write lock,
    the second waits (up to the connection's ``timeout``) and then reads what
    the first committed. Django begins with ``BEGIN`` unless the database's
    ``OPTIONS["transaction_mode"]`` says otherwise; this transaction says
    ``IMMEDIATE`` for its own ``BEGIN`` only. Inside an outer transaction it
    is a savepoint of that one.
    """
    connection: Any = connections[alias]
    if connection.in_atomic_block:
        with transaction.atomic(using=alias):
            yield
        return
    connection.ensure_connection()  # connecting sets transaction_mode from the settings
    mode = connection.transaction_mode
    connection.transaction_mode = "IMMEDIATE"
    try:
        with transaction.atomic(using=alias):
            connection.transaction_mode = mode
            yield
    finally:
        connection.transaction_mode = mode


def grant_transaction(alias: str, identifier: str) -> AbstractContextManager[None]:
    """A transaction in which no other grant write of *identifier* runs (:func:`exclusive`).

    ``replace_verification_token``, ``use_verification_code`` and
    ``use_verification_token`` of one identifier queue here.
    """
    return exclusive(alias, "webauth.verificationtoken", "vt", identifier)


def address_transaction(alias: str, address: str) -> AbstractContextManager[None]:
    """A transaction in which no other user is given *address* (:func:`exclusive`).

    ``create_user``, ``create_user_and_link_account`` and an ``update_user``
    that changes the address queue here, so that the check for another user
    with the address and the write are one step.
    """
    return exclusive(alias, "webauth.address", "ad", address)


class Bytes(Func):
    """A text column's bytes on MariaDB and MySQL: compared with ``=`` under no collation.

    The user model's table is the project's: its address column may have a
    case- and accent-insensitive collation, where ``email = 'john@x'`` also
    finds ``JOHN@x`` and ``jöhn@x``. ``CAST(email AS BINARY) = 'john@x'``
    compares the bytes.
    """

    template = "CAST(%(expressions)s AS BINARY)"
    output_field = models.CharField()


def exactly(rows: Any, field: str, value: str) -> Any:
    """*rows* whose *field* is *value*, compared byte for byte on every database.

    The plain ``=`` stays (an index on the column serves it); on MariaDB and
    MySQL the byte comparison is added to it. SQLite and PostgreSQL compare
    text exactly already.
    """
    rows = rows.filter(**{field: value})
    if connections[rows.db].vendor == "mysql":
        rows = rows.alias(_webauth_bytes=Bytes(field)).filter(_webauth_bytes=value)
    return rows
