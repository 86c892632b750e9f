"""Benchmark: ``webauth_purge`` against one bare ``DELETE ... WHERE expires < now``.

Fills ``webauth_session`` with ``--expired`` expired rows and ``--live`` live ones
(interleaved ids, as real traffic leaves them), then times, on the same data:

(a) one bare ``DELETE FROM webauth_session WHERE expires < now`` (the floor: one
    statement, one long transaction holding its locks throughout);
(b) ``webauth.purge.purge_expired`` with ``--batch-size`` (many short transactions).

The table is refilled before each run. It prints seconds, the ratio (b)/(a)
(target <= 1.5), the longest single batch (how long any lock is held), and the
peak Python memory allocated during the purge (tracemalloc), which stays flat
because no row is loaded into Python.

    python benchmarks/bench_purge.py                 # SQLite file in a temp dir
    python benchmarks/bench_purge.py --postgres      # PostgreSQL at 127.0.0.1:5432
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def configure(postgres: bool, tmp: str) -> None:
    """Minimal Django settings with webauth installed."""
    import django
    from django.conf import settings

    if postgres:
        database = {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ.get("WEBAUTH_TEST_POSTGRES_HOST", "127.0.0.1"),
            "PORT": os.environ.get("WEBAUTH_TEST_POSTGRES_PORT", "5432"),
            "USER": os.environ.get("WEBAUTH_TEST_POSTGRES_USER", "postgres"),
            "NAME": PG_BENCH_DB,
        }
    else:
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": f"{tmp}/purge.sqlite3"}
    settings.configure(
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "webauth"],
        DATABASES={"default": database},
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        WEBAUTH={"secret": "x" * 40, "providers": []},
    )
    django.setup()


PG_BENCH_DB = "webauth_bench"


def recreate_postgres_database(create: bool = True) -> None:
    """A fresh, dedicated database so the benchmark never touches anything else."""
    import psycopg

    params = {
        "host": os.environ.get("WEBAUTH_TEST_POSTGRES_HOST", "127.0.0.1"),
        "port": os.environ.get("WEBAUTH_TEST_POSTGRES_PORT", "5432"),
        "user": os.environ.get("WEBAUTH_TEST_POSTGRES_USER", "postgres"),
        "dbname": "postgres",
    }
    with psycopg.connect(**params, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {PG_BENCH_DB}")
        if create:
            conn.execute(f"CREATE DATABASE {PG_BENCH_DB}")


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fill(expired: int, live: int) -> None:
    """Empty the table and insert the rows in one SQL statement (ids interleaved)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    user = get_user_model().objects.get_or_create(username="bench")[0]
    total = expired + live
    every = max(total // max(live, 1), 1)  # one live row every `every` ids
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM webauth_session")
        if connection.vendor == "postgresql":
            cursor.execute(
                "INSERT INTO webauth_session (user_id, token_hash, expires, created_at,"
                " updated_at, user_agent, auth_hash) SELECT %s, md5(i::text) || md5((i+1)::text),"
                " CASE WHEN i %% %s = 0 THEN now() + interval '1 day'"
                " ELSE now() - interval '1 day' END, now(), now(), '', ''"
                " FROM generate_series(1, %s) AS i",
                [user.pk, every, total],
            )
        else:
            cursor.execute(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %s)"
                " INSERT INTO webauth_session (user_id, token_hash, expires, created_at,"
                " updated_at, user_agent, auth_hash) SELECT %s, printf('%%064d', i),"
                " CASE WHEN i %% %s = 0 THEN datetime('now', '+1 day')"
                " ELSE datetime('now', '-1 day') END, datetime('now'), datetime('now'), '', ''"
                " FROM n",
                [total, user.pk, every],
            )
    if connection.vendor == "postgresql":
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE webauth_session")


def expired_count() -> int:
    from django.utils import timezone

    from webauth.models import Session

    return Session.objects.filter(expires__lt=timezone.now()).count()


def bare_delete() -> float:
    from django.db import connection, transaction
    from django.utils import timezone

    start = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM webauth_session WHERE expires < %s", [timezone.now()])
    return time.perf_counter() - start


def webauth_purge(batch_size: int) -> tuple[float, float, int, int]:
    """(seconds, longest batch seconds, peak bytes allocated, rows deleted)."""
    from webauth.models import Session
    from webauth.purge import purge_expired

    longest = 0.0
    last = time.perf_counter()

    def progress(_count: int) -> None:
        nonlocal longest, last
        now = time.perf_counter()
        longest = max(longest, now - last)
        last = now

    tracemalloc.start()
    start = last = time.perf_counter()
    result = purge_expired(Session, batch_size=batch_size, progress=progress)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, longest, peak, result.deleted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--postgres", action="store_true", help="use PostgreSQL at 127.0.0.1")
    parser.add_argument("--expired", type=int, default=1_000_000)
    parser.add_argument("--live", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=10_000)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        if args.postgres:
            recreate_postgres_database()
        configure(args.postgres, tmp)
        from django.db import connection

        migrate()
        print(
            f"database: {connection.vendor}; rows: {args.expired:,} expired + "
            f"{args.live:,} live; batch size {args.batch_size:,}"
        )

        fill(args.expired, args.live)
        to_delete = expired_count()
        bare = bare_delete()
        print(f"(a) bare DELETE:      {bare:8.2f} s  ({to_delete:,} rows, one transaction)")

        fill(args.expired, args.live)
        seconds, longest, peak, deleted = webauth_purge(args.batch_size)
        assert deleted == to_delete, (deleted, to_delete)
        assert expired_count() == 0
        print(
            f"(b) webauth purge:    {seconds:8.2f} s  ({deleted:,} rows; longest batch "
            f"{longest * 1000:.0f} ms; peak Python memory {peak / 1024:.0f} KiB)"
        )
        print(f"ratio (b)/(a): {seconds / bare:.2f}x  (target <= 1.5x)")
        connection.close()
        if args.postgres:
            recreate_postgres_database(create=False)


if __name__ == "__main__":
    main()
