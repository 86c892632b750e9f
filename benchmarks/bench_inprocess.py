"""In-process benchmark: the benchmark site's requests through Django's WSGI handler, no server.

Run from anywhere::

    python benchmarks/bench_inprocess.py             # about 30 s
    python benchmarks/bench_inprocess.py --repeat 21 --number 2000
    python benchmarks/bench_inprocess.py --stack installed
    python benchmarks/bench_inprocess.py --stack installed --fast-path

It serves the site of ``benchmarks/http/`` (by default the ``webauth`` stack:
``AuthMiddleware`` only, which ``bench_instructions.py`` counts too; ``--stack
installed``: the exact ``MIDDLEWARE`` of docs/installation.md; ``--fast-path``:
behind :class:`webauth.wsgi.FastPath`) by calling ``WSGIHandler`` directly with
prepared WSGI environs, so that what a request costs Django and webauth is
measured without gunicorn, the network and wrk, and with far less noise than
``bench_http.py``. The cases:

* ``plain``: ``GET /plain`` without cookies (the baseline);
* ``floor``: ``GET /floor/session`` with the session cookies, the view that does only
  what any session endpoint must (``benchmarks/http/views.py:session_floor``);
* ``session``: ``GET /auth/session`` with the same cookies: webauth's route;
* ``whoami``: ``GET /whoami`` (``request.user.pk``) with the JWT cookie;
* ``csrf``, ``providers``: ``GET /auth/csrf`` and ``GET /auth/providers`` with the
  cookies a browser holds (so neither sets a cookie).

Every case is checked once (status 200 and the expected ``Set-Cookie`` names).
Then ``--repeat`` rounds time ``--number`` requests of each case in turn, with
the garbage collector on as in a server; the figures are the median and the best
round in microseconds per request. The ratios compare the cases' medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# benchmarks/loadtest.py, beside this script.
from loadtest import Caller, timed  # noqa: E402

SESSION_COOKIE = "authjs.session-token"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (15)")
    parser.add_argument("--number", type=int, default=1000, help="requests per round (1000)")
    parser.add_argument(
        "--stack",
        choices=("webauth", "installed"),
        default="webauth",
        help="webauth: AuthMiddleware only (default); installed: docs/installation.md's list",
    )
    parser.add_argument("--fast-path", action="store_true", help="behind webauth.wsgi.FastPath")
    return parser.parse_args()


def setup(database: str, stack: str = "webauth") -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "benchmarks.http.settings"
    os.environ["WEBAUTH_BENCH_STACK"] = stack
    os.environ["WEBAUTH_BENCH_DATABASE"] = database
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def environ(path: str, cookies: dict[str, str]) -> dict[str, Any]:
    from django.test import RequestFactory

    env: dict[str, Any] = RequestFactory().get(path).environ
    env["HTTP_HOST"] = "127.0.0.1"
    if cookies:
        env["HTTP_COOKIE"] = "; ".join(f"{name}={value}" for name, value in cookies.items())
    return env


def session_cookies(call: Caller) -> tuple[dict[str, str], dict[str, str]]:
    """``(JWT only, JWT + the CSRF and callback-URL cookies the first answer sets)``."""
    from django.contrib.auth import get_user_model

    from webauth.test import session_cookie_for

    user = get_user_model().objects.create_user("alice", "alice@example.com", "bench-password")
    name, value = session_cookie_for(user)
    jwt_only = {name: value}
    call(environ("/auth/session", jwt_only))
    browser = dict(jwt_only)
    for key, cookie in call.set_cookies().items():
        if key != name:
            browser[key] = cookie
    return jwt_only, browser


def build_cases(call: Caller) -> dict[str, tuple[dict[str, Any], set[str]]]:
    """Each case's WSGI environ and the ``Set-Cookie`` names its answer must carry."""
    jwt_only, browser = session_cookies(call)
    return {
        "plain": (environ("/plain", {}), set()),
        "floor": (environ("/floor/session", browser), {SESSION_COOKIE}),
        "session": (environ("/auth/session", browser), {SESSION_COOKIE}),
        "whoami": (environ("/whoami", jwt_only), set()),
        "csrf": (environ("/auth/csrf", browser), set()),
        "providers": (environ("/auth/providers", browser), set()),
    }


def check(call: Caller, label: str, env: dict[str, Any], set_cookies: set[str]) -> None:
    call(env)
    got = set(call.set_cookies())
    if not call.status.startswith("200") or got != set_cookies:
        wanted = sorted(set_cookies)
        raise SystemExit(f"{label}: {call.status}, Set-Cookie {sorted(got)} != {wanted}")


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-inprocess-") as tmp:
        setup(str(Path(tmp) / "bench.sqlite3"), args.stack)
        call = Caller()
        if args.fast_path:
            from webauth.wsgi import FastPath

            call.app = FastPath(call.app)
        cases = build_cases(call)
        for label, (env, expected) in cases.items():
            check(call, label, env, expected)
        times: dict[str, list[float]] = {label: [] for label in cases}
        for env, _ in cases.values():  # warm-up
            timed(lambda env=env: call(env), args.number)
        for _ in range(args.repeat):
            for label, (env, _) in cases.items():
                times[label].append(timed(lambda env=env: call(env), args.number))

    import django

    print(
        f"Python {sys.version.split()[0]}, Django {django.get_version()}; in-process "
        f"WSGIHandler, stack {args.stack}{' behind FastPath' if args.fast_path else ''}; "
        f"{args.repeat} rounds x {args.number} requests"
    )
    print(f"{'case':<10} {'median us':>10} {'best us':>9}")
    median = {label: statistics.median(values) for label, values in times.items()}
    for label, values in times.items():
        print(f"{label:<10} {median[label]:10.1f} {min(values):9.1f}")
    print()
    print(f"session - plain: {median['session'] - median['plain']:6.1f} us per request")
    print(f"floor - plain:   {median['floor'] - median['plain']:6.1f} us per request")
    print(f"session / floor: {median['session'] / median['floor']:6.2f}x")
    for label in ("csrf", "providers"):
        over = median[label] - median["plain"]
        print(
            f"{label} - plain: {over:6.1f} us per request ({over / median['plain']:.0%} of plain)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
