"""The JWT session check with and without ``session.user_check_cache``, on PostgreSQL over TCP.

Run from anywhere (PostgreSQL at 127.0.0.1:5432, user ``postgres``, database
``test``; Redis at 127.0.0.1:6379 for the Redis case)::

    python benchmarks/bench_session_check.py                  # about 1 min
    python benchmarks/bench_session_check.py --sqlite         # the same on an SQLite file

It serves ``GET /auth/session`` of the benchmark site (``benchmarks/http/``, the
installed stack of docs/installation.md) in process, through Django's WSGI
handler, with the JWT cookie of a Django user, so that every request checks that
the user is still active and has the same password:

* ``query``: today's default, one query of ``is_active`` and the password hash;
* ``locmem``: ``session.user_check_cache`` in a ``LocMemCache`` (one process);
* ``redis``: the same in Django's ``RedisCache`` (what a fleet shares);
* ``django-redis``: the same in django-redis's ``RedisCache`` (when installed:
  Django 5.2's own client builds a new ``redis.Redis`` object, with its table of
  response callbacks, for every call, which costs about as much as the round trip).

Per case, over ``--repeat`` rounds of ``--number`` requests (medians): the wall
time per request, the CPU time per request of this process and of the
PostgreSQL backend serving its connection (and of ``redis-server`` for the Redis
case), read from ``/proc``; and the queries per request. The ratios compare
each cached case with ``query`` (the baseline), measured in the same run,
rounds interleaved.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from loadtest import CLOCK_TICKS, Caller, create_schema, drop_schema  # noqa: E402

SESSION_COOKIE = "authjs.session-token"
REDIS = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": "redis://127.0.0.1:6379/0",
    "KEY_PREFIX": f"webauth-bench-check-{os.getpid()}",
}
LOCMEM = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
DJANGO_REDIS = {**REDIS, "BACKEND": "django_redis.cache.RedisCache"}
CASES = ("query", "locmem", "redis", "django-redis")
REDIS_CASES = ("redis", "django-redis")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9, help="rounds (9)")
    parser.add_argument("--number", type=int, default=2000, help="requests per round (2000)")
    parser.add_argument("--sqlite", action="store_true", help="an SQLite file, not PostgreSQL")
    return parser.parse_args()


def proc_cpu(pid: int | None) -> float:
    """User + system CPU seconds of process *pid* so far (0 without one)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def redis_pid() -> int | None:
    found = subprocess.run(["pidof", "redis-server"], capture_output=True, text=True).stdout
    return int(found.split()[0]) if found.strip() else None


def setup(sqlite: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.http.settings"
    os.environ["WEBAUTH_BENCH_STACK"] = "installed"
    os.environ["WEBAUTH_BENCH_DATABASE"] = sqlite or "postgres"
    import django

    django.setup()
    from django.core.management import call_command

    if sqlite is None:
        create_schema()
    call_command("migrate", verbosity=0)


def settings_of(case: str) -> dict[str, object]:
    from django.conf import settings

    session: dict[str, object] = {"strategy": "jwt"}
    caches: dict[str, object] = {"default": LOCMEM}
    if case != "query":
        session["user_check_cache"] = {"cache": "default", "max_staleness": 3600}
        caches = {"default": {"redis": REDIS, "django-redis": DJANGO_REDIS}.get(case, LOCMEM)}
    return {"CACHES": caches, "WEBAUTH": {**settings.WEBAUTH, "session": session}}


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-bench-check-") as tmp:
        setup(str(Path(tmp) / "bench.sqlite3") if args.sqlite else None)
        try:
            return run(args)
        finally:
            if not args.sqlite:
                drop_schema()


def run(args: argparse.Namespace) -> int:
    from importlib.util import find_spec

    import django
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import RequestFactory, override_settings

    from webauth.test import session_cookie_for

    user = get_user_model().objects.create_user("alice", "alice@example.com", "pw")
    name, value = session_cookie_for(user)
    env = RequestFactory().get("/auth/session").environ
    env["HTTP_HOST"] = "127.0.0.1"
    env["HTTP_COOKIE"] = f"{name}={value}"
    call = Caller()
    call(env)
    browser = "; ".join(f"{k}={v}" for k, v in call.set_cookies().items() if k != name)
    env["HTTP_COOKIE"] += "; " + browser  # the CSRF and callback cookies a browser holds
    backend = None
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
    redis = redis_pid()
    cases = [c for c in CASES if c != "django-redis" or find_spec("django_redis")]
    count = [0]

    def counting(execute, sql, params, many, context):
        count[0] += 1
        return execute(sql, params, many, context)

    load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())

    figures: dict[str, dict[str, list[float]]] = {
        c: {"wall": [], "cpu": [], "db": [], "redis": [], "queries": []} for c in cases
    }
    for number in range(args.repeat + 1):  # round 0 warms up
        for case in cases if number % 2 else cases[::-1]:
            with override_settings(**settings_of(case)):
                call = Caller()
                call(env)
                if not call.status.startswith("200") or name not in call.set_cookies():
                    raise SystemExit(f"{case}: {call.status} {call.set_cookies()}")
                count[0] = 0
                db0, redis0 = proc_cpu(backend), proc_cpu(redis)
                cpu0, wall0 = time.process_time(), time.perf_counter()
                with connection.execute_wrapper(counting):
                    for _ in range(args.number):
                        call(env)
                wall = time.perf_counter() - wall0
                cpu = time.process_time() - cpu0
                db, rd = proc_cpu(backend) - db0, proc_cpu(redis) - redis0
            if number == 0:
                continue
            per = 1e6 / args.number
            row = figures[case]
            row["wall"].append(wall * per)
            row["cpu"].append(cpu * per)
            row["db"].append(db * per)
            row["redis"].append(rd * per if case in REDIS_CASES else 0.0)
            row["queries"].append(count[0] / args.number)

    med = {c: {k: statistics.median(v) for k, v in f.items()} for c, f in figures.items()}
    print(
        f"started {started}; Python {sys.version.split()[0]}, Django {django.get_version()}; "
        f"database {connection.vendor}"
        + (" over TCP (127.0.0.1:5432)" if connection.vendor == "postgresql" else "")
        + f"; load average before {load:.2f}"
    )
    print(
        f"GET /auth/session, JWT of a Django user, installed stack, in process; "
        f"{args.repeat} rounds x {args.number} requests per case (medians)"
    )
    print(
        f"{'case':<12} {'queries/req':>11} {'wall us':>8} {'CPU us':>7} "
        f"{'DB CPU us':>9} {'Redis us':>8} {'total CPU':>9}"
    )
    for case in cases:
        m = med[case]
        total = m["cpu"] + m["db"] + m["redis"]
        print(
            f"{case:<12} {m['queries']:11.2f} {m['wall']:8.1f} {m['cpu']:7.1f} "
            f"{m['db']:9.1f} {m['redis']:8.1f} {total:9.1f}"
        )
    print()
    base = figures["query"]
    for case in cases[1:]:
        row = figures[case]
        wall = statistics.median(b / r for b, r in zip(base["wall"], row["wall"], strict=True))
        cpu = statistics.median(
            (b1 + b2) / (r1 + r2 + r3)
            for b1, b2, r1, r2, r3 in zip(
                base["cpu"], base["db"], row["cpu"], row["db"], row["redis"], strict=True
            )
        )
        print(
            f"query / {case:<12} wall {wall:.2f}x, CPU (this process + database + Redis) {cpu:.2f}x"
        )
    print(f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
