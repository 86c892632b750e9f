"""In-process benchmark: what the rate limiter adds to a request, on LocMemCache and on Redis.

Run from anywhere (Redis at 127.0.0.1:6379 for the Redis cases; they are left
out, with a note, when it does not answer)::

    python benchmarks/bench_ratelimit.py             # about 20 s
    python benchmarks/bench_ratelimit.py --repeat 21 --number 2000

It calls Django's ``WSGIHandler`` directly with prepared WSGI environs, as
``bench_inprocess.py`` does, for the two kinds of POST the limiter guards:

* ``signin``: ``POST /auth/callback/credentials`` with a CSRF token, a username
  and a wrong password, refused by an ``authorize`` that compares it with one
  fixed password (so the figures are the route's and the limiter's, not a
  password hasher's). The limiter counts ``signin`` (1 rule) and
  ``signin_failed`` (3 rules): 4 counters, one round trip on Redis;
* ``signin-ok``: the same with the right password: the 4 counters, then the
  failure given back (``refund``): two round trips on Redis; the answer sets
  the session cookie;
* ``update``: ``POST /auth/session`` (a session update without a session):
  ``session_update``, 1 counter.

Each runs with the limits off (the baseline, measured in the same run) and on,
counting in ``LocMemCache`` and in Django's ``RedisCache``. The limits are the
default rules with ceilings no run reaches, so every request pays for every
counter and none is refused (each answer is checked once). The figures are the
median and best of ``--repeat`` rounds of ``--number`` requests, in
microseconds per request, and the cost over the baseline; ``CPU us`` is the
process's CPU time per request (``time.process_time``: Redis's own work and the
waits for it are not in it), which other load on the machine moves much less.
"""

from __future__ import annotations

import argparse
import hmac
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# benchmarks/loadtest.py, beside this script.
from loadtest import Caller, timed  # noqa: E402

REDIS_URL = "redis://127.0.0.1:6379/0"
HUGE = 1_000_000_000
#: The default rules' shapes, with ceilings no run reaches.
CEILINGS = {
    "signin": f"{HUGE}/m/ip",
    "signin_failed": f"{HUGE}/m/ip,{HUGE}/5m/ip+key,{HUGE}/5m/key",
    "session_update": f"{HUGE}/m/ip",
}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=11, help="rounds (11)")
    parser.add_argument("--number", type=int, default=1000, help="requests per round (1000)")
    return parser.parse_args()


PASSWORD = "right"


def authorize(credentials: Any, request: Any) -> dict[str, str] | None:
    """An ``authorize`` that accepts one fixed password, without a password hasher."""
    given = str(credentials.get("password", "")).encode()
    return {"id": "7", "name": "Alice"} if hmac.compare_digest(given, PASSWORD.encode()) else None


def setup(tmp: str) -> None:
    from django.conf import settings

    from webauth.providers import Credentials

    settings.configure(
        SECRET_KEY="webauth-bench-not-secret",
        DEBUG=False,
        ALLOWED_HOSTS=["127.0.0.1"],
        USE_TZ=True,
        ROOT_URLCONF="benchmarks.http.urls",
        INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "webauth"],
        MIDDLEWARE=["webauth.middleware.AuthMiddleware"],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": f"{tmp}/b.sqlite3"}},
        CACHES={
            "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
            "redis": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": REDIS_URL,
                "KEY_PREFIX": f"webauth-bench-{uuid.uuid4().hex}",
            },
        },
        # Each refused sign-in is logged with its traceback: not what is measured.
        LOGGING={
            "version": 1,
            "disable_existing_loggers": False,
            "handlers": {"null": {"class": "logging.NullHandler"}},
            "loggers": {"webauth": {"handlers": ["null"], "propagate": False}},
        },
        WEBAUTH={
            "secret": "bench-secret-0123456789abcdef0123456789abcdef",
            "providers": [
                Credentials(
                    credentials={"username": {}, "password": {"type": "password"}},
                    authorize=authorize,
                )
            ],
        },
    )
    import django

    django.setup()


def redis_answers() -> bool:
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except Exception:
        return False
    return True


def environs(call: Caller) -> dict[str, dict[str, Any]]:
    """The WSGI environs of the two requests, with a CSRF cookie and its token."""
    import json

    from django.test import RequestFactory

    factory = RequestFactory()
    get = factory.get("/auth/csrf").environ
    get["HTTP_HOST"] = "127.0.0.1"
    token = json.loads(call(get))["csrfToken"]
    cookies = "; ".join(
        value.split(";", 1)[0] for name, value in call.headers if name == "Set-Cookie"
    )

    def signin(password: str) -> dict[str, Any]:
        form = urlencode({"csrfToken": token, "username": "alice", "password": password})
        return factory.post(
            "/auth/callback/credentials", form, content_type="application/x-www-form-urlencoded"
        ).environ

    update = factory.post(
        "/auth/session", json.dumps({"csrfToken": token}), content_type="application/json"
    ).environ
    envs = {"signin": signin("wrong"), "signin-ok": signin(PASSWORD), "update": update}
    for env in envs.values():
        env["HTTP_HOST"] = "127.0.0.1"
        env["HTTP_COOKIE"] = cookies
        env["webauth.body"] = env["wsgi.input"].read()
    return envs


def limits(mode: str) -> dict[str, Any]:
    """``WEBAUTH`` for a mode: ``off``, ``locmem`` or ``redis``."""
    from django.conf import settings

    webauth = dict(settings.WEBAUTH)
    if mode == "off":
        webauth["rate_limits"] = False
    else:
        webauth["rate_limits"] = CEILINGS
        webauth["rate_limit_cache"] = "default" if mode == "locmem" else "redis"
    return webauth


def check(call: Caller, label: str, env: dict[str, Any]) -> None:
    body = call(env)
    status = call.status
    location = dict(call.headers).get("Location", "")
    if label.startswith("signin-ok"):
        cookies = [value for name, value in call.headers if name == "Set-Cookie"]
        ok = status.startswith("302") and "error" not in location
        ok = ok and any(value.lstrip().startswith("authjs.session-token=") for value in cookies)
    elif label.startswith("signin"):
        ok = status.startswith("302") and "error=CredentialsSignin" in location
    else:
        ok = status.startswith("200") and body == b"null"
    if not ok:
        raise SystemExit(f"{label}: {status} {location} {body[:80]!r}")


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-ratelimit-") as tmp:
        setup(tmp)
        from django.test.utils import override_settings

        call = Caller()
        envs = environs(call)
        modes = ["off", "locmem"] + (["redis"] if redis_answers() else [])
        times: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        for request in envs:
            for mode in modes:
                times[f"{request}/{mode}"] = []
                cpu[f"{request}/{mode}"] = []
        for mode in modes:  # check each answer, and warm up
            with override_settings(WEBAUTH=limits(mode)):
                for request, env in envs.items():
                    check(call, f"{request}/{mode}", env)
                    timed(lambda env=env: call(env), args.number // 4)
        for _ in range(args.repeat):
            for mode in modes:
                with override_settings(WEBAUTH=limits(mode)):
                    for request, env in envs.items():
                        label = f"{request}/{mode}"
                        started = time.process_time()
                        times[label].append(timed(lambda env=env: call(env), args.number))
                        used = time.process_time() - started
                        cpu[label].append(used / args.number * 1e6)

    import django

    print(
        f"Python {sys.version.split()[0]}, Django {django.get_version()}; in-process "
        f"WSGIHandler, stack [AuthMiddleware]; {args.repeat} rounds x {args.number} requests"
    )
    if "redis" not in modes:
        print(f"(no Redis at {REDIS_URL}: the Redis cases are left out)")
    print(
        f"{'case':<16} {'median us':>10} {'best us':>9} {'- off us':>9} {'/ off':>7}"
        f" {'CPU us':>8} {'- off CPU':>9}"
    )
    median = {label: statistics.median(values) for label, values in times.items()}
    cpu_median = {label: statistics.median(values) for label, values in cpu.items()}
    for label, values in times.items():
        request = label.split("/")[0]
        base = median[f"{request}/off"]
        cpu_base = cpu_median[f"{request}/off"]
        print(
            f"{label:<16} {median[label]:10.1f} {min(values):9.1f} "
            f"{median[label] - base:9.1f} {median[label] / base:6.2f}x"
            f" {cpu_median[label]:8.1f} {cpu_median[label] - cpu_base:9.1f}"
        )
    print()
    print(
        "signin: 4 counters (signin 1 rule, signin_failed 3 rules), one Redis round trip;\n"
        "signin-ok: the same and the refund, two; update: 1 counter, one"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
