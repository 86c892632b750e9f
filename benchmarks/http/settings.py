"""Settings of the benchmark site that ``benchmarks/bench_http.py`` serves through gunicorn.

Environment variables pick the variant, so that one module serves every case:

``WEBAUTH_BENCH_STACK``
    A key of :data:`STACKS` (default ``installed``: the list of docs/installation.md):
    the ``MIDDLEWARE`` list.
``WEBAUTH_BENCH_CREDENTIALS``
    ``django`` (default): the ``DjangoCredentials`` provider, as ``bench_http.py``
    measures it. ``constant``: instead, a ``Credentials`` provider (same id,
    ``credentials``) whose ``authorize`` compares with one fixed user in constant
    time (``benchmarks/http/auth.py``), the twin of the Auth.js server that
    ``bench_authjs.py`` compares webauth with.
``WEBAUTH_BENCH_RATELIMIT``
    ``off`` (default): ``WEBAUTH["rate_limits"] = False``. The load tests send
    thousands of sign-ins a second from one address, which the default limits
    would (rightly) refuse after 30 a minute, and the Auth.js twin that
    ``bench_authjs.py`` compares with has no limiter. ``locmem`` or ``redis``:
    the default rules with ceilings no run reaches, counting in each worker's
    ``LocMemCache`` or in Django's ``RedisCache`` at 127.0.0.1:6379, so that
    every request pays for every counter and none is refused: the limiter's cost
    over HTTP. (``bench_ratelimit.py`` measures it in process.)
``WEBAUTH_BENCH_DATABASE``
    ``postgres`` for PostgreSQL at 127.0.0.1:5432 (user ``postgres``, database
    ``test``, tables in the schema :data:`PG_SCHEMA`), else the path of an SQLite
    file (default ``bench.sqlite3`` in the current directory).

Everything else is identical across variants: the same apps, URLs and database,
persistent database connections (``CONN_MAX_AGE = None``) as a production site
would have, ``DEBUG = False``.

``benchmarks/http`` has no ``__init__.py`` on purpose: as a namespace package it
never shadows the standard library's ``http`` for scripts run from ``benchmarks/``.
"""

import os

SECRET_KEY = "webauth-bench-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
ROOT_URLCONF = "benchmarks.http.urls"
WSGI_APPLICATION = "benchmarks.http.wsgi.application"
ASGI_APPLICATION = "benchmarks.http.asgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "webauth",
]

#: The middleware list of docs/installation.md, exactly: what a site that follows
#: the installation guide runs, and so what the benchmarks measure by default.
INSTALLED_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webauth.middleware.AuthMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

#: The middleware stacks the benchmarks compare, by name.
STACKS = {
    # The installation guide's list (the default configuration of the benchmarks).
    "installed": INSTALLED_MIDDLEWARE,
    # The same, with the ORM adapter and so database sessions (see WEBAUTH below).
    "installed-db": INSTALLED_MIDDLEWARE,
    # The same list without webauth: what the project's own pages cost without it,
    # the yardstick of the installed configuration (and its contrib.auth sessions).
    "installed-django": [m for m in INSTALLED_MIDDLEWARE if not m.startswith("webauth.")],
    # The lean configuration (labelled "lean" in the output), each stack only
    # what its way of authenticating needs:
    # nothing at all: the ceiling of Django behind the server;
    "bare": [],
    # all a webauth site needs: request.user and request.auth_session come from it;
    "webauth": ["webauth.middleware.AuthMiddleware"],
    # the same, with the ORM adapter and so database sessions;
    "webauth-db": ["webauth.middleware.AuthMiddleware"],
    # all a django.contrib.auth site needs for request.user from a database session.
    "contrib": [
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
    ],
}
STACK = os.environ.get("WEBAUTH_BENCH_STACK", "installed")
MIDDLEWARE = STACKS[STACK]
# The bare, contrib and installed-django variants leave AuthMiddleware out deliberately.
SILENCED_SYSTEM_CHECKS = ["webauth.E006"]

PG_SCHEMA = "webauth_bench"
_DATABASE = os.environ.get("WEBAUTH_BENCH_DATABASE", "bench.sqlite3")
if _DATABASE == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": "127.0.0.1",
            "PORT": "5432",
            "USER": "postgres",
            "NAME": "test",
            "CONN_MAX_AGE": None,
            "OPTIONS": {"options": f"-c search_path={PG_SCHEMA}"},
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _DATABASE,
            "CONN_MAX_AGE": None,
        }
    }

WEBAUTH = {
    "secret": "bench-secret-0123456789abcdef0123456789abcdef",
    "providers": ["webauth.providers.DjangoCredentials"],
}
if os.environ.get("WEBAUTH_BENCH_CREDENTIALS", "django") == "constant":
    from webauth.providers import Credentials

    WEBAUTH["providers"] = [
        Credentials(
            credentials={
                "username": {"label": "Username"},
                "password": {"label": "Password", "type": "password"},
            },
            authorize="benchmarks.http.auth.authorize",
        )
    ]
if STACK in ("webauth-db", "installed-db"):
    WEBAUTH["adapter"] = "webauth.adapters.django.DjangoAdapter"  # strategy: database

_RATELIMIT = os.environ.get("WEBAUTH_BENCH_RATELIMIT", "off")
if _RATELIMIT == "off":
    WEBAUTH["rate_limits"] = False
else:
    _HUGE = 1_000_000_000
    WEBAUTH["rate_limits"] = {
        "signin": f"{_HUGE}/m/ip",
        "signin_failed": f"{_HUGE}/m/ip,{_HUGE}/5m/ip+key,{_HUGE}/5m/key",
        "oauth_callback": f"{_HUGE}/m/ip",
        "session_update": f"{_HUGE}/m/ip",
    }
    if _RATELIMIT == "redis":
        CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": "redis://127.0.0.1:6379/0",
                "KEY_PREFIX": "webauth-bench",
            }
        }
    else:
        # One LocMemCache per worker process: the counters are per process (W006).
        SILENCED_SYSTEM_CHECKS = [*SILENCED_SYSTEM_CHECKS, "webauth.W006"]
