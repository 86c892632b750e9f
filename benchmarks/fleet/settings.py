"""Settings of the fleet benchmark's site (``benchmarks/bench_fleet.py``, issue 26).

A site that installs webauth exactly as docs/installation.md says (its
``INSTALLED_APPS``, its whole ``MIDDLEWARE`` list, its ``TEMPLATES``), with one
measuring middleware in front (:mod:`benchmarks.fleet.querycount`), and runs as a
production site of several processes would:

* PostgreSQL over TCP (127.0.0.1:5432, user ``postgres``, database ``test``), the
  tables in the schema :data:`PG_SCHEMA` that the driver creates and drops;
* Django's ``RedisCache`` at 127.0.0.1:6379 as the cache every process shares,
  under a key prefix of its own, so the rate limits (on, with ceilings no run
  reaches) count across the fleet;
* the ORM adapter with database sessions, ``DjangoCredentials`` checking passwords
  with Django's default hasher at its default cost (PBKDF2-SHA256, 1,000,000
  iterations in Django 5.2), an ``Email`` provider whose delivery function
  (:mod:`benchmarks.fleet.mail`) hands the link to the load script through Redis,
  bearer sessions for apps, and access tokens (``WEBAUTH["tokens"]``).

Environment variables (the driver sets them):

``WEBAUTH_FLEET_DB_CONN``
    ``pool`` (default): Django 5.1+'s PostgreSQL pool (psycopg_pool), one pool
    per process of ``WEBAUTH_FLEET_POOL_SIZE`` connections (default 2, the
    blocking threads per worker), ``CONN_MAX_AGE = 0`` as the pool requires.
    ``persistent``: ``CONN_MAX_AGE = None``, one connection per thread kept
    open. Under granian the pool is the one to use: granian ends a blocking
    thread after 30 s idle (``--blocking-threads-idle-timeout``) and its
    persistent connection stays open, so idle spells followed by load add
    connections: 8, then 12, 16, 16, 20, 21, 24 after six spells of 35 s idle
    with 4 workers x 2 threads, where the pool's stay at 8
    (``benchmarks/fleet/idle_connections.py``).
``WEBAUTH_FLEET_APPLICATION_NAME``
    PostgreSQL's ``application_name`` of the connections (default ``webauth-fleet``;
    the driver names its own otherwise, to count the fleet's alone).
``WEBAUTH_FLEET_TOKEN_KEY``
    The access tokens' signing key, a private JWK (one for the whole fleet: the
    driver makes it). Unset (``manage.py`` alone), a key is made at start-up.
``WEBAUTH_FLEET_REDIS``
    The Redis URL (default ``redis://127.0.0.1:6379/0``).
"""

import os

from benchmarks.fleet import shared
from benchmarks.http.settings import INSTALLED_MIDDLEWARE
from webauth.conf.options import DEFAULT_RATE_LIMITS
from webauth.providers import DjangoCredentials, Email

SECRET_KEY = "webauth-fleet-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
ROOT_URLCONF = "benchmarks.fleet.urls"
WSGI_APPLICATION = "benchmarks.fleet.wsgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
STATIC_URL = "static/"

# docs/installation.md, step 2.
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "webauth",
]

MIDDLEWARE = [
    # Not part of the site: counts the SQL queries of every request (querycount.py).
    "benchmarks.fleet.querycount.QueryCountMiddleware",
    # docs/installation.md's list, in its order (tests/test_benchmark_site.py checks it).
    *INSTALLED_MIDDLEWARE,
]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

PG_SCHEMA = "webauth_fleet"
#: PostgreSQL's application_name of the fleet's connections (the driver counts them).
APPLICATION_NAME = os.environ.get("WEBAUTH_FLEET_APPLICATION_NAME", "webauth-fleet")
DB_CONN = os.environ.get("WEBAUTH_FLEET_DB_CONN", "pool")
_options: dict[str, object] = {
    "options": f"-c search_path={PG_SCHEMA}",
    "application_name": APPLICATION_NAME,
}
if DB_CONN == "pool":
    size = int(os.environ.get("WEBAUTH_FLEET_POOL_SIZE", "2"))
    # psycopg_pool's ConnectionPool arguments; a request waits up to 10 s for one.
    _options["pool"] = {"min_size": size, "max_size": size, "timeout": 10}
    _conn_max_age: int | None = 0
elif DB_CONN == "persistent":
    _conn_max_age = None
else:
    raise ValueError(f"WEBAUTH_FLEET_DB_CONN must be persistent or pool, not {DB_CONN!r}")
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": "127.0.0.1",
        "PORT": "5432",
        "USER": "postgres",
        "NAME": "test",
        "CONN_MAX_AGE": _conn_max_age,
        "OPTIONS": _options,
    }
}

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": shared.REDIS_URL,
        "KEY_PREFIX": shared.CACHE_PREFIX,
        # Named, so that the driver can count the fleet's Redis connections.
        "OPTIONS": {"client_name": "webauth-fleet"},
    }
}

# The project's default rules (same actions, windows and scopes: the same
# counters in Redis on every request), each amount raised to a ceiling no run
# reaches: every simulated user comes from 127.0.0.1.
_HUGE = 1_000_000_000
RATE_LIMITS = {
    action: ",".join(f"{_HUGE}/{rule.split('/', 1)[1]}" for rule in rules.split(","))
    for action, rules in DEFAULT_RATE_LIMITS.items()
}

_token_key = os.environ.get("WEBAUTH_FLEET_TOKEN_KEY")
if not _token_key:
    from webauth.tokens.keys import generate

    _token_key = generate("ES256", kid="fleet").export(private_key=True)

#: The access tokens' one audience.
AUDIENCE = "fleet-api"

WEBAUTH = {
    "secret": "fleet-secret-0123456789abcdef0123456789abcdef",
    "adapter": "webauth.adapters.django.DjangoAdapter",
    "session": {"strategy": "database"},
    # Apps' bearer sessions and their refresh (POST /auth/app/session), docs/bearer.md.
    "bearer": True,
    "providers": [
        DjangoCredentials(),
        Email(
            from_email="Fleet <no-reply@fleet.example>",
            send_verification_request="benchmarks.fleet.mail.send_verification_request",
        ),
    ],
    # Access tokens for other services (GET /auth/token), docs/tokens.md.
    "tokens": {"keys": [_token_key], "audiences": [AUDIENCE]},
    "rate_limits": RATE_LIMITS,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}
