"""The fleet run (issue 26): webauth in 4 server processes on PostgreSQL and Redis, under locust.

Run from anywhere (Linux; PostgreSQL at 127.0.0.1:5432 with user ``postgres`` and a
database ``test``, Redis at 127.0.0.1:6379; ``pip install -e '.[dev]'`` brings
granian, locust and psycopg_pool)::

    python benchmarks/bench_fleet.py --quick     # 5 s warm-up, 20 s of load
    python benchmarks/bench_fleet.py             # 10 s warm-up, 60 s of load
    python benchmarks/bench_fleet.py --server gunicorn --db-conn persistent
    python benchmarks/bench_fleet.py --rate 50   # 50 tasks/s in all, not as fast as it answers

The database connections come from Django's PostgreSQL pool, 2 per process
(``--db-conn persistent``: ``CONN_MAX_AGE = None``; under granian, whose idle
blocking threads end after 30 s, persistent connections pile up:
``benchmarks/fleet/idle_connections.py``). locust runs on the same CPUs as the
servers: the CPU line of the output says how much it took.

One run:

1. creates the schema ``webauth_fleet`` in the database ``test``, migrates it,
   and creates ``--accounts`` users (10,000; ``bulk_create`` with one password
   hash made once by Django's default hasher, so every user has the same
   password) and two database sessions for each (a browser's and an app's,
   tokens derived from the run's seed: ``benchmarks/fleet/shared.py``);
2. starts the site ``benchmarks/fleet/`` (webauth installed as
   docs/installation.md says, on PostgreSQL over TCP and Redis: see its
   ``settings.py``) under granian, WSGI interface, ``--workers 4
   --runtime-threads 1 --blocking-threads 2`` (``--server gunicorn``: 4 sync
   workers);
3. runs locust headless with ``benchmarks/fleet/locustfile.py`` (people who read
   pages, their session, sign in with a password or by email, sign out, refresh
   an app's bearer session, mint access tokens; see its docstring) for the
   warm-up and then the measured window;
4. prints requests/s, latency percentiles and errors per request type and overall,
   SQL queries and Redis round trips per request as the site counted them
   (``benchmarks/fleet/querycount.py``), CPU time per process group, the
   connections the fleet held, and what grew in the tables and in Redis;
5. checks that nothing was lost: a sample of the email links the script used is
   posted again from a copy of the browser as it was before it redeemed them
   (every one must be refused), then every account's session rows must be
   exactly those the driver made plus those the script got minus those it
   ended (compared by token hash, as webauth stores them), and no grant the
   script redeemed may be left in the table.

"no errors" and "no loss" are printed as MET / NOT MET; the exit status is 1
when either is not. The schema and the run's Redis keys (``webauth-fleet:*``) are
removed at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# benchmarks/loadtest.py, beside this script.
from loadtest import (  # noqa: E402
    cpu_seconds,
    create_schema,
    descendants,
    drop_schema,
    free_port,
)

SETTINGS_MODULE = "benchmarks.fleet.settings"
LOCUSTFILE = REPO_ROOT / "benchmarks" / "fleet" / "locustfile.py"
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: The fleet's PostgreSQL application_name and Redis client name (benchmarks/fleet/settings.py).
FLEET_NAME = "webauth-fleet"

#: The request types in the order of the table, with what each one is.
ROWS = (
    ("GET /whoami", "a page reading request.user"),
    ("GET /auth/session", "the session as JSON"),
    ("GET /auth/csrf", "before every form post"),
    ("POST /auth/callback/credentials", "password sign-in (PBKDF2)"),
    ("POST /auth/signout", "sign-out"),
    ("POST /auth/signin/email", "ask for a sign-in email"),
    ("GET /auth/callback/email", "open the link: confirm page"),
    ("POST /auth/callback/email", "confirm: sign in"),
    ("POST /auth/app/session", "app: bearer refresh"),
    ("GET /auth/token", "access token minted"),
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 s warm-up, 20 s measured")
    parser.add_argument("--duration", type=int, default=None, help="measured seconds (60)")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up seconds (10)")
    parser.add_argument("--users", type=int, default=32, help="locust users (32)")
    parser.add_argument("--spawn-rate", type=float, default=None, help="users/s (users / 2)")
    parser.add_argument(
        "--rate",
        type=float,
        default=0,
        help="tasks/s of all users together (locust constant_throughput); default 0: "
        "no think time, as fast as the fleet answers",
    )
    parser.add_argument(
        "--processes", type=int, default=1, help="locust processes (1; >1: locust --processes)"
    )
    parser.add_argument("--server", choices=("granian", "gunicorn"), default="granian")
    parser.add_argument("--workers", type=int, default=4, help="server processes (4)")
    parser.add_argument(
        "--threads", type=int, default=2, help="granian --blocking-threads per worker (2)"
    )
    parser.add_argument(
        "--db-conn",
        choices=("persistent", "pool"),
        default="pool",
        help="Django's PostgreSQL pool, psycopg_pool (default), or CONN_MAX_AGE=None",
    )
    parser.add_argument("--accounts", type=int, default=10_000, help="users created (10000)")
    parser.add_argument(
        "--replay", type=int, default=50, help="used email links tried again at the end (50)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the schema, the Redis keys and the run's files"
    )
    args = parser.parse_args()
    if args.duration is None:
        args.duration = 20 if args.quick else 60
    if args.warmup is None:
        args.warmup = 5 if args.quick else 10
    if args.spawn_rate is None:
        args.spawn_rate = max(1.0, args.users / 2)
    if args.server == "gunicorn":
        args.threads = 1  # sync workers: one request at a time per process
    return args


# ------------------------------------------------------------------ environment


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def process_tree(pid: int) -> list[int]:
    """*pid* and its descendants (from ``/proc``)."""
    return [pid, *descendants(pid)]


def machine_cpu_seconds() -> float:
    """Busy CPU time of the whole machine, all cores (``/proc/stat``)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / CLK_TCK


# ------------------------------------------------------------------ database


def setup_django() -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE
    import django

    django.setup()


def prepare_database(accounts: int) -> dict[int, int]:
    """A fresh schema, the tables, the users and their sessions; returns ``{user id: account}``."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.core.management import call_command
    from django.db import connection

    from benchmarks.fleet import shared
    from webauth.models import Session, token_hash

    create_schema()
    call_command("migrate", verbosity=0)
    User = get_user_model()
    password = make_password(shared.PASSWORD)  # Django's default hasher, once
    users = User.objects.bulk_create(
        User(username=shared.username(i), email=shared.address(i), password=password)
        for i in range(accounts)
    )
    auth_hash = users[0].get_session_auth_hash()  # the same password hash for all
    now = datetime.now(UTC)
    expires = now + timedelta(seconds=30 * 86400)  # session.max_age's default
    Session.objects.bulk_create(
        (
            Session(
                user=user,
                token_hash=token_hash(shared.session_token(kind, i)),
                expires=expires,
                created_at=now,
                updated_at=now,
                ip_address="127.0.0.1",
                user_agent=f"fleet {kind}",
                auth_hash=auth_hash,
                amr="pwd",
            )
            for i, user in enumerate(users)
            for kind in ("browser", "app")
        ),
        batch_size=5000,
    )
    connection.close()
    return {user.pk: i for i, user in enumerate(users)}


def table_counts() -> dict[str, int]:
    from django.db import connection

    tables = (
        "webauth_session",
        "webauth_verificationtoken",
        "webauth_tokensession",
        "webauth_account",
        "auth_user",
    )
    with connection.cursor() as cursor:
        counts = {}
        for table in tables:
            cursor.execute(f"SELECT count(*) FROM {table}")
            counts[table] = cursor.fetchone()[0]
    connection.close()
    return counts


def fleet_backends() -> list[int]:
    """Pids of the PostgreSQL backends serving the fleet (its ``application_name``)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [FLEET_NAME])
        pids = [row[0] for row in cursor.fetchall()]
    connection.close()
    return pids


def server_versions() -> tuple[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = cursor.fetchone()[0]
    connection.close()
    return postgres, redis_client().info("server")["redis_version"]


# ------------------------------------------------------------------ redis


def redis_client():
    import redis

    from benchmarks.fleet import shared

    return redis.Redis.from_url(shared.REDIS_URL, decode_responses=True)


def delete_run_keys() -> int:
    from benchmarks.fleet import shared

    client = redis_client()
    keys = list(client.scan_iter(match=shared.PREFIX + "*", count=1000))
    for start in range(0, len(keys), 1000):
        client.delete(*keys[start : start + 1000])
    return len(keys)


def cache_keys() -> int:
    """The keys webauth's cache holds for the fleet (rate-limit counters and the like)."""
    from benchmarks.fleet import shared

    return sum(1 for _ in redis_client().scan_iter(match=shared.CACHE_PREFIX + "*", count=1000))


def fleet_redis_clients() -> int:
    return sum(1 for c in redis_client().client_list() if c.get("name") == FLEET_NAME)


# ------------------------------------------------------------------ servers


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def pids(self) -> list[int]:
        return process_tree(self.process.pid)


def server_command(args: argparse.Namespace, port: int) -> list[str]:
    target = "benchmarks.fleet.wsgi:application"
    if args.server == "gunicorn":
        return [
            sys.executable,
            "-m",
            "gunicorn",
            "--worker-class=sync",
            f"--workers={args.workers}",
            f"--bind=127.0.0.1:{port}",
            "--log-level=warning",
            target,
        ]
    # docs/deployment.md's recommendation, with 4 workers.
    return [
        sys.executable,
        "-m",
        "granian",
        "--interface=wsgi",
        "--host=127.0.0.1",
        f"--port={port}",
        f"--workers={args.workers}",
        "--runtime-threads=1",
        f"--blocking-threads={args.threads}",
        "--no-ws",
        "--respawn-failed-workers",
        "--workers-kill-timeout=30",
        "--log-level=warning",
        target,
    ]


@contextmanager
def serve(args: argparse.Namespace, env: dict[str, str], tmp: Path):
    port = free_port()
    log = tmp / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            server_command(args, port), env=env, cwd=REPO_ROOT, stdout=out, stderr=out
        )
    server = Server(f"http://127.0.0.1:{port}", process, log)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited: {log.read_text()[-2000:]}")
            workers = len(server.pids()) - 1
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if workers >= args.workers:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start within 60 s")
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def check_site(url: str) -> None:
    """One signed-in page and one session per worker's worth, before any load."""
    import requests

    from benchmarks.fleet import shared

    for i in range(8):
        token = shared.session_token("browser", i)
        response = requests.get(
            f"{url}/whoami", cookies={"authjs.session-token": token}, timeout=10
        )
        if response.status_code != 200 or response.text != shared.username(i):
            raise RuntimeError(f"GET /whoami: {response.status_code} {response.text[:200]!r}")


# ------------------------------------------------------------------ the load


def run_locust(
    args: argparse.Namespace, env: dict[str, str], url: str, tmp: Path, server: Server
) -> dict[str, object]:
    """Run locust; returns what the driver sampled during the window."""
    from benchmarks.fleet import shared

    env = {
        **env,
        "WEBAUTH_FLEET_WARMUP": str(args.warmup),
        "WEBAUTH_FLEET_DURATION": str(args.duration),
        "WEBAUTH_FLEET_OUT": str(tmp),
        "WEBAUTH_FLEET_RATE": str(args.rate),
        "WEBAUTH_FLEET_USERS": str(args.users),
    }
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--headless",
        "-u",
        str(args.users),
        "-r",
        str(args.spawn_rate),
        "--run-time",
        # 3 s more than the window, so that locust is still running when the
        # locustfile marks the window's end; what ends after it is not measured.
        f"{args.warmup + args.duration + 3}s",
        "--host",
        url,
        "--csv",
        str(tmp / "locust"),
        "--stop-timeout",
        "30",
        "--only-summary",
        "--loglevel",
        "WARNING",
    ]
    if args.processes > 1:
        command += ["--processes", str(args.processes)]
    client = redis_client()
    sampled: dict[str, object] = {}
    with (tmp / "locust.log").open("wb") as out:
        locust = subprocess.Popen(command, env=env, cwd=REPO_ROOT, stdout=out, stderr=out)
        for phase in ("start", "end"):
            while not client.hexists(shared.WINDOW, phase):
                if locust.poll() is not None:
                    raise RuntimeError(
                        f"locust exited early: {(tmp / 'locust.log').read_text()[-3000:]}"
                    )
                time.sleep(0.05)
            if phase == "end":  # the fleet's connections while it is busy
                sampled["backends"] = fleet_backends()
                sampled["redis_clients"] = fleet_redis_clients()
            sampled[phase] = {
                "server": cpu_seconds(server.pids()),
                "locust": cpu_seconds(process_tree(locust.pid)),
                "postgres": cpu_seconds(fleet_backends()),
                "redis": cpu_seconds([int(client.info("server")["process_id"])]),
                "machine": machine_cpu_seconds(),
            }
        locust.wait()
    sampled["exit"] = locust.returncode
    window = client.hgetall(shared.WINDOW)
    sampled["window"] = (float(window["start"]), float(window["end"]))
    sampled["counts"] = (json.loads(window["start_counts"]), json.loads(window["end_counts"]))
    return sampled


# ------------------------------------------------------------------ the checks


def replay_links(url: str, sample: int) -> tuple[int, int, list[str]]:
    """Post used links again from a copy of the browser before it redeemed them.

    Returns ``(tried, refused, problems)``: refused means no session cookie and a
    redirect to the error page with ``error=Verification``.
    """
    import requests

    from benchmarks.fleet import shared

    snapshots = [json.loads(s) for s in redis_client().lrange(shared.LINKS, 0, -1)]
    chosen = random.sample(snapshots, min(sample, len(snapshots)))
    refused, problems = 0, []
    for snapshot in chosen:
        response = requests.post(
            url + snapshot["path"],
            data=snapshot["fields"],
            cookies=snapshot["cookies"],
            allow_redirects=False,
            timeout=30,
        )
        location = response.headers.get("Location", "")
        if (
            response.status_code == 302
            and "error=Verification" in location
            and "authjs.session-token" not in response.cookies
        ):
            refused += 1
        else:
            problems.append(f"account {snapshot['account']}: {response.status_code} {location}")
    return len(chosen), refused, problems


def check_sessions(accounts: dict[int, int], total: int) -> dict[str, object]:
    """Every account's session rows against the driver's and the script's records."""
    from django.db import connection

    from benchmarks.fleet import shared
    from webauth.models import token_hash

    client = redis_client()
    expected: dict[int, set[str]] = {
        i: {token_hash(shared.session_token(kind, i)) for kind in ("browser", "app")}
        for i in range(total)
    }
    created = [entry.split(" ", 1) for entry in client.smembers(shared.CREATED)]
    ended = [entry.split(" ", 1) for entry in client.smembers(shared.ENDED)]
    for account, token in created:
        expected[int(account)].add(token_hash(token))
    for account, token in ended:
        expected[int(account)].discard(token_hash(token))
    found: dict[int, set[str]] = defaultdict(set)
    with connection.cursor() as cursor:
        cursor.execute("SELECT user_id, token_hash FROM webauth_session")
        for user_id, hashed in cursor.fetchall():
            found[accounts[user_id]].add(hashed)
    connection.close()
    missing = sum(len(expected[i] - found[i]) for i in range(total))
    unexpected = sum(len(found[i] - expected[i]) for i in range(total))
    wrong_accounts = sum(1 for i in range(total) if expected[i] != found[i])
    return {
        "created": len(created),
        "ended": len(ended),
        "expected": sum(len(tokens) for tokens in expected.values()),
        "found": sum(len(tokens) for tokens in found.values()),
        "missing": missing,
        "unexpected": unexpected,
        "wrong_accounts": wrong_accounts,
        "touched": len({int(account) for account, _ in created + ended}),
    }


# ------------------------------------------------------------------ figures

Record = tuple[float, str, float, bool]  # end time, name, milliseconds, succeeded


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of sorted *values*."""
    if not values:
        return float("nan")
    return values[max(0, min(len(values) - 1, math.ceil(q * len(values)) - 1))]


def load_records(tmp: Path) -> tuple[list[Record], Counter[tuple[str, str]]]:
    """The request records and failures the locust processes left in *tmp*."""
    records: list[Record] = []
    failures: Counter[tuple[str, str]] = Counter()
    for path in tmp.glob("records-*.json"):
        data = json.loads(path.read_text())
        records.extend((r[0], r[1], r[2], r[3]) for r in data["records"])
        for name, message, count in data["failures"]:
            failures[(name, message)] += count
    return records, failures


def counted(counts: tuple[dict, dict], kind: str, keys: list[str]) -> int:
    """What the site counted of *kind* for *keys* between the window's two snapshots."""
    start, end = counts
    return sum(int(end[kind].get(k, 0)) - int(start[kind].get(k, 0)) for k in keys)


def print_table(records: list[Record], window: tuple[float, float], counts: tuple[dict, dict]):
    """The table of the measured window; returns ``(requests, seconds)``."""
    start, end = window
    seconds = end - start
    inside = [r for r in records if start <= r[0] <= end]
    by_name: dict[str, list[Record]] = defaultdict(list)
    for record in inside:
        by_name[record[1]].append(record)
    names = [name for name, _ in ROWS] + sorted(set(by_name) - {name for name, _ in ROWS})
    what = dict(ROWS)
    header = (
        f"{'request':<32} {'what':<32} {'count':>6} {'share':>6} {'req/s':>6} "
        f"{'p50 ms':>7} {'p99 ms':>8} {'errors':>6} {'SQL':>5} {'txn':>5} {'Redis':>5}"
    )
    print("\n" + header + "\n" + "-" * len(header))

    def row(label: str, description: str, items: list[Record], keys: list[str]) -> None:
        times = sorted(r[2] for r in items)
        served = counted(counts, "requests", keys)
        per = {
            kind: f"{counted(counts, kind, keys) / served:.2f}" if served else "-"
            for kind in ("queries", "transactions", "redis")
        }
        print(
            f"{label:<32} {description:<32} {len(items):>6} "
            f"{100 * len(items) / max(len(inside), 1):>5.1f}% {len(items) / seconds:>6.1f} "
            f"{percentile(times, 0.5):>7.2f} {percentile(times, 0.99):>8.2f} "
            f"{sum(1 for r in items if not r[3]):>6} {per['queries']:>5} "
            f"{per['transactions']:>5} {per['redis']:>5}"
        )

    for name in names:
        row(name, what.get(name, ""), by_name.get(name, []), [name])
    print("-" * len(header))
    row("all requests", f"in {seconds:.1f} s", inside, list(counts[1]["requests"]))
    print(
        "p50, p99: of the requests that ended in the window, as locust timed them (the client's\n"
        "view: queueing included). SQL, txn, Redis: per request as the site counted them\n"
        "(benchmarks/fleet/querycount.py): SQL statements, transactions (each a BEGIN and a\n"
        "COMMIT more), Redis round trips (a pipeline or a script is one)."
    )
    return len(inside), seconds


# ------------------------------------------------------------------ the run


def configure(args: argparse.Namespace) -> dict[str, str]:
    """The servers' environment; sets up Django in this process (the driver's connection)."""
    from webauth.tokens.keys import generate

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE,
        "WEBAUTH_FLEET_DB_CONN": args.db_conn,
        "WEBAUTH_FLEET_POOL_SIZE": str(args.threads),
        "WEBAUTH_FLEET_SEED": secrets.token_hex(16),
        "WEBAUTH_FLEET_ACCOUNTS": str(args.accounts),
        # One signing key for the whole fleet.
        "WEBAUTH_FLEET_TOKEN_KEY": generate("ES256", kid="fleet").export(private_key=True),
        "PYTHONPATH": str(REPO_ROOT),
    }
    env.pop("WEBAUTH_FLEET_APPLICATION_NAME", None)
    os.environ.update({k: v for k, v in env.items() if k.startswith("WEBAUTH_FLEET_")})
    # The driver's own connection: not pooled, and not counted as the fleet's.
    os.environ["WEBAUTH_FLEET_DB_CONN"] = "persistent"
    os.environ["WEBAUTH_FLEET_APPLICATION_NAME"] = "webauth-fleet-driver"
    setup_django()
    return env


def print_setup(args: argparse.Namespace) -> None:
    from django.conf import settings

    postgres, redis_version = server_versions()
    print(
        f"started {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; Python {platform.python_version()}, "
        f"Django {package_version('django')}, granian {package_version('granian')}, "
        f"locust {package_version('locust')}, psycopg {package_version('psycopg')}, "
        f"psycopg-pool {package_version('psycopg-pool')}, redis-py {package_version('redis')}; "
        f"PostgreSQL {postgres}, Redis {redis_version}"
    )
    print(
        f"{os.cpu_count()} CPUs shared by everything below; load average before: {load_average()}"
    )
    if args.server == "granian":
        server = (
            f"granian {package_version('granian')}, WSGI, {args.workers} workers x "
            f"(1 runtime thread + {args.threads} blocking threads)"
        )
    else:
        server = f"gunicorn {package_version('gunicorn')}, {args.workers} sync workers"
    print(f"server: {server}")
    if args.db_conn == "pool":
        conn = f"Django's PostgreSQL pool, {args.threads} connection(s) per process"
    else:
        conn = "CONN_MAX_AGE = None, a persistent connection per thread"
    print(
        f"database: PostgreSQL over TCP (127.0.0.1), schema {settings.PG_SCHEMA}; {conn} "
        f"({args.workers * args.threads} for the fleet)"
    )
    print(
        "cache: Django's RedisCache at 127.0.0.1:6379, shared by the processes; rate limits "
        "on: the default rules with ceilings of 10^9"
    )
    pace = f"{args.rate:g} tasks/s in all" if args.rate else "no think time"
    print(
        f"load: locust, {args.users} users (spawn rate {args.spawn_rate:g}/s, {pace}), "
        f"{args.processes} locust process(es) on the same CPUs as the servers; "
        f"{args.warmup} s warm-up, then {args.duration} s measured"
    )


def report(args, tmp, sampled, checks, before, server_log) -> tuple[bool, bool]:
    """Print the figures and the checks; returns ``(no errors, no loss)``."""
    records, failures = load_records(tmp)
    total, seconds = print_table(records, sampled["window"], sampled["counts"])
    cpus = os.cpu_count() or 1
    cpu = {part: sampled["end"][part] - sampled["start"][part] for part in sampled["start"]}
    others = cpu["machine"] - sum(value for part, value in cpu.items() if part != "machine")
    print(
        f"\nCPU time in the window ({seconds:.1f} s x {cpus} CPUs = {seconds * cpus:.0f} CPU-s): "
        f"servers {cpu['server']:.1f} s ({1e6 * cpu['server'] / max(total, 1):.0f} us per "
        f"request), PostgreSQL (the fleet's backends) {cpu['postgres']:.1f} s, Redis "
        f"{cpu['redis']:.1f} s, locust {cpu['locust']:.1f} s, anything else {others:.1f} s"
    )
    print(
        f"connections the fleet held at the end of the window: PostgreSQL "
        f"{len(sampled['backends'])}, Redis (the cache's) {sampled['redis_clients']}"
    )
    grown = checks["tables"]
    print(
        f"accounts that took part: {checks['persons']} persons; the script's sessions: "
        f"{checks['sessions']['created']} made, {checks['sessions']['ended']} ended"
    )
    print(
        "rows, before -> after the run (warm-up included): "
        + ", ".join(f"{table} {before[table]} -> {grown[table]}" for table in grown)
        + f"; webauth's keys in Redis at the end: {checks['cache_keys']}"
    )

    start, end = sampled["window"]
    failed = [r for r in records if not r[3]]
    tracebacks = server_log.count("Traceback")
    print(
        f"\nerrors: {len(failed)} failed requests in the whole run (warm-up "
        f"{sum(1 for r in failed if r[0] < start)}, window "
        f"{sum(1 for r in failed if start <= r[0] <= end)}, after it "
        f"{sum(1 for r in failed if r[0] > end)}); tracebacks in the server log: {tracebacks}"
    )
    for (name, message), count in failures.most_common(10):
        print(f"  {count:>6} x {name}: {message}")
    asked, used = checks["email_asked"], checks["email_used"]
    tried, refused, problems = checks["replay"]
    print(
        f"email: {asked} sign-in emails asked for, {used} links redeemed; "
        f"{grown['webauth_verificationtoken']} grants left in the table (expected "
        f"{asked - used}); {tried} used links posted again with the browser's cookies from "
        f"before it redeemed them: {refused} refused (error=Verification, no session)"
    )
    for problem in problems[:5]:
        print(f"  accepted again: {problem}")
    sessions = checks["sessions"]
    print(
        f"sessions: {sessions['expected']} expected (2 per account made before the run, plus "
        f"those the script made, less those it ended), {sessions['found']} in webauth_session; "
        f"missing {sessions['missing']}, unexpected {sessions['unexpected']}; accounts whose "
        f"rows differ: {sessions['wrong_accounts']} of {args.accounts}"
    )
    no_errors = bool(records) and not failed and not tracebacks
    no_loss = (
        sessions["missing"] == 0
        and sessions["unexpected"] == 0
        and grown["webauth_verificationtoken"] == asked - used
        and refused == tried
    )
    print(f"\nno errors: {'MET' if no_errors else 'NOT MET'}")
    print(f"no loss: {'MET' if no_loss else 'NOT MET'}")
    print(f"load average after the run: {load_average()}; locust's exit status {sampled['exit']}")
    if tracebacks:
        print("\nthe server log's end:\n" + server_log[-3000:])
    return no_errors, no_loss


def main() -> int:
    args = parse_args()
    if args.db_conn == "pool":
        try:
            import psycopg_pool  # noqa: F401
        except ImportError:
            print("--db-conn pool needs psycopg_pool: pip install 'psycopg[pool]'")
            return 2
    env = configure(args)
    from django.conf import settings

    from benchmarks.fleet import shared

    print_setup(args)
    tmp = Path(tempfile.mkdtemp(prefix="bench_fleet-"))
    delete_run_keys()
    made = time.monotonic()
    accounts = prepare_database(args.accounts)
    print(
        f"accounts: {args.accounts} users (one PBKDF2 hash, bulk_create), 2 database sessions "
        f"each (a browser's, an app's); made in {time.monotonic() - made:.1f} s"
    )
    before = table_counts()
    no_errors = no_loss = False
    try:
        with serve(args, env, tmp) as fleet:
            check_site(fleet.url)
            sampled = run_locust(args, env, fleet.url, tmp, fleet)
            time.sleep(1)  # the site's last counts
            client = redis_client()
            checks = {
                "replay": replay_links(fleet.url, args.replay),  # before the sessions' check
                "tables": table_counts(),
                "cache_keys": cache_keys(),
                "sessions": check_sessions(accounts, args.accounts),
                "email_asked": int(client.get(shared.EMAIL_ASKED) or 0),
                "email_used": int(client.get(shared.EMAIL_USED) or 0),
                "persons": int(client.get(shared.PERSONS) or 0),
            }
        no_errors, no_loss = report(
            args, tmp, sampled, checks, before, fleet.log.read_text(errors="replace")
        )
    finally:
        if args.keep:
            print(f"kept: schema {settings.PG_SCHEMA}, Redis keys {shared.PREFIX}*, files {tmp}")
        else:
            drop_schema()
            delete_run_keys()
            shutil.rmtree(tmp, ignore_errors=True)
    return 0 if no_errors and no_loss else 1


if __name__ == "__main__":
    sys.exit(main())
