"""What a credentials sign-in costs besides the password hasher, on SQLite and PostgreSQL.

Run from anywhere (PostgreSQL at 127.0.0.1:5432, user ``postgres``, database ``test``)::

    python benchmarks/bench_signin_cost.py            # about 1 min
    python benchmarks/bench_signin_cost.py --number 500 --repeat 9

``POST /auth/callback/credentials`` of the benchmark site (``benchmarks/http/``,
the installed stack of docs/installation.md) in process, through Django's WSGI
handler, with a browser's CSRF cookies, signing in one user with the
``DjangoCredentials`` provider and Django's ``MD5PasswordHasher`` (so that what is
measured is everything but the hash). Per database, each in a process of its own:

* ``sqlite``: an SQLite file as Django creates it (rollback journal, ``synchronous=FULL``);
* ``sqlite-wal``: the same with ``PRAGMA journal_mode=WAL`` and ``synchronous=NORMAL``
  (Django 5.1+'s ``"init_command"`` option; docs/deployment.md);
* ``postgres``: PostgreSQL over TCP.

and per session strategy (``jwt``, ``database``), the cases:

* ``sign-in``: what a project gets;
* ``no last_login``: the same with Django's ``update_last_login`` receiver
  disconnected from ``user_logged_in``, so that the difference is what the
  ``last_login`` UPDATE and its commit cost (webauth keeps the receiver: projects
  rely on ``last_login``, and Django's password reset tokens change with it);

and the baseline, measured in each of those processes: ``constant``, the
sign-in of ``benchmarks/http/auth.py`` (a credentials provider comparing with one
fixed user in constant time, the twin of the Auth.js side of ``bench_authjs.py``),
which touches no database. Printed: microseconds per sign-in (median over the
rounds), queries per sign-in, and each case's cost over the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from loadtest import Caller, create_schema, drop_schema  # noqa: E402

DATABASES = ("sqlite", "sqlite-wal", "postgres")
STRATEGIES = ("jwt", "database")
CASES = ("constant", "sign-in", "no last_login")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds (7)")
    parser.add_argument("--number", type=int, default=300, help="sign-ins per round (300)")
    parser.add_argument("--databases", default=",".join(DATABASES), help="comma-separated")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one database, in this process
    return parser.parse_args()


def child(args: argparse.Namespace) -> dict[str, dict[str, list[float]]]:
    """Measure every case on the database ``args.child``; the figures per case."""
    database = args.child
    tmp = tempfile.mkdtemp(prefix="webauth-bench-signin-")
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.http.settings"
    os.environ["WEBAUTH_BENCH_STACK"] = "installed"
    os.environ["WEBAUTH_BENCH_DATABASE"] = (
        "postgres" if database == "postgres" else str(Path(tmp) / "bench.sqlite3")
    )
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import update_last_login
    from django.contrib.auth.signals import user_logged_in
    from django.core.management import call_command
    from django.db import connection
    from django.test import RequestFactory, override_settings

    from benchmarks.http.auth import USER
    from webauth.providers import Credentials

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    if database == "postgres":
        create_schema()
    call_command("migrate", verbosity=0)
    if database == "sqlite-wal":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
    get_user_model().objects.create_user(USER["username"], USER["email"], USER["password"])

    constant = Credentials(
        credentials={"username": {"label": "Username"}, "password": {"type": "password"}},
        authorize="benchmarks.http.auth.authorize",
    )
    count = [0]

    def counting(execute, sql, params, many, context):
        count[0] += 1
        return execute(sql, params, many, context)

    def environ(path: str, cookies: str, body: bytes | None = None) -> dict:
        env = RequestFactory().get(path).environ
        env["HTTP_HOST"] = "127.0.0.1"
        env["HTTP_COOKIE"] = cookies
        if body is not None:
            env.update(
                REQUEST_METHOD="POST",
                CONTENT_TYPE="application/x-www-form-urlencoded",
                CONTENT_LENGTH=str(len(body)),
            )
            env["webauth.body"] = body
        return env

    def sign_in_env(call: Caller) -> dict:
        call(environ("/auth/csrf", ""))
        cookies = "; ".join(f"{k}={v}" for k, v in call.set_cookies().items())
        token = json.loads(call(environ("/auth/csrf", cookies)))["csrfToken"]
        form = {"csrfToken": token, "username": USER["username"], "password": USER["password"]}
        return environ("/auth/callback/credentials", cookies, urlencode(form).encode())

    figures: dict[str, dict[str, list[float]]] = {}
    for strategy in STRATEGIES:
        webauth = {**settings.WEBAUTH, "session": {"strategy": strategy}}
        if strategy == "database":
            webauth["adapter"] = "webauth.adapters.django.DjangoAdapter"
        for case in CASES:
            figures[f"{strategy} {case}"] = {"us": [], "queries": []}
        for number in range(args.repeat + 1):  # round 0 warms up
            for case in CASES if number % 2 else CASES[::-1]:
                providers = [constant] if case == "constant" else webauth["providers"]
                with override_settings(WEBAUTH={**webauth, "providers": providers}):
                    if case == "no last_login":
                        user_logged_in.disconnect(
                            update_last_login, dispatch_uid="update_last_login"
                        )
                    try:
                        call = Caller()
                        env = sign_in_env(call)
                        call(env)
                        if not call.status.startswith("302") or (
                            "authjs.session-token" not in call.set_cookies()
                        ):
                            raise SystemExit(f"{database} {strategy} {case}: {call.status}")
                        count[0] = 0
                        start = time.perf_counter()
                        with connection.execute_wrapper(counting):
                            for _ in range(args.number):
                                call(env)
                        elapsed = time.perf_counter() - start
                    finally:
                        if case == "no last_login":
                            user_logged_in.connect(
                                update_last_login, dispatch_uid="update_last_login"
                            )
                if number:
                    row = figures[f"{strategy} {case}"]
                    row["us"].append(elapsed / args.number * 1e6)
                    row["queries"].append(count[0] / args.number)
    if database == "postgres":
        drop_schema()
    return figures


def main() -> int:
    args = parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return 0
    import django

    load = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = {}
    for database in args.databases.split(","):
        done = subprocess.run(
            [
                *(sys.executable, __file__, "--child", database),
                *("--repeat", str(args.repeat), "--number", str(args.number)),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            print(done.stderr[-3000:], file=sys.stderr)
            return 2
        results[database] = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"started {started}; Python {sys.version.split()[0]}, Django {django.get_version()}; "
        f"load average before {load:.2f}, after {os.getloadavg()[0]:.2f}"
    )
    print(
        "POST /auth/callback/credentials in process, installed stack, DjangoCredentials with "
        f"MD5PasswordHasher; {args.repeat} rounds x {args.number} sign-ins per case (medians)"
    )
    header = (
        f"{'database':<11} {'sessions':<9} {'case':<14} {'us/sign-in':>10} {'queries':>8} "
        f"{'over constant':>14}"
    )
    print(header)
    print("-" * len(header))
    for database, figures in results.items():
        for strategy in STRATEGIES:
            base = figures[f"{strategy} constant"]["us"]
            for case in CASES:
                row = figures[f"{strategy} {case}"]
                us = statistics.median(row["us"])
                over = statistics.median(r / b for r, b in zip(row["us"], base, strict=True))
                print(
                    f"{database:<11} {strategy:<9} {case:<14} {us:10.1f} "
                    f"{statistics.median(row['queries']):8.2f} {over:13.2f}x"
                )
    print(
        "over constant: the median of the per-round ratios to the constant sign-in\n"
        "(no database), measured in the same process; sign-in - no last_login is what\n"
        "the last_login UPDATE and its commit cost."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
