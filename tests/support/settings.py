"""Settings for webauth's own test suite.

SQLite by default; PostgreSQL at 127.0.0.1:5432 when WEBAUTH_TEST_POSTGRES is set,
MariaDB (or MySQL) at 127.0.0.1:3306 when WEBAUTH_TEST_MARIADB is set. ``.ci/run``
runs the suite on all three.
"""

import os
import tempfile

SECRET_KEY = "webauth-tests-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1", "example.com", "app.example.com"]
USE_TZ = True
ROOT_URLCONF = "tests.support.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "oauth2_provider",  # the real OpenID provider of the OAuth tests (tests/support/idp.py)
    "webauth",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webauth.middleware.AuthMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

if os.environ.get("WEBAUTH_TEST_POSTGRES") and os.environ.get("WEBAUTH_TEST_MARIADB"):
    raise RuntimeError("set WEBAUTH_TEST_POSTGRES or WEBAUTH_TEST_MARIADB, not both")

DATABASES: dict[str, dict[str, object]]
if os.environ.get("WEBAUTH_TEST_POSTGRES"):
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": os.environ.get("WEBAUTH_TEST_POSTGRES_HOST", "127.0.0.1"),
            "PORT": os.environ.get("WEBAUTH_TEST_POSTGRES_PORT", "5432"),
            "USER": os.environ.get("WEBAUTH_TEST_POSTGRES_USER", "postgres"),
            "NAME": os.environ.get("WEBAUTH_TEST_POSTGRES_DB", "test"),
        }
    }
elif os.environ.get("WEBAUTH_TEST_MARIADB"):
    # Needs the optional "mariadb" extra (mysqlclient, Django's recommended driver).
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.mysql",
            "HOST": os.environ.get("WEBAUTH_TEST_MARIADB_HOST", "127.0.0.1"),
            "PORT": os.environ.get("WEBAUTH_TEST_MARIADB_PORT", "3306"),
            "USER": os.environ.get("WEBAUTH_TEST_MARIADB_USER", "root"),
            "PASSWORD": os.environ.get("WEBAUTH_TEST_MARIADB_PASSWORD", ""),
            "NAME": os.environ.get("WEBAUTH_TEST_MARIADB_DB", "test"),
            "OPTIONS": {"charset": "utf8mb4"},
            # A case-insensitive collation, as most MariaDB/MySQL databases have:
            # the suite must pass where "ABC" = "abc" in a WHERE clause.
            "TEST": {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"},
        }
    }
else:
    # A file, not ":memory:": the live server (the test OpenID provider) serves
    # requests from its own threads, which need their own connections.
    _SQLITE = os.path.join(tempfile.gettempdir(), f"webauth-tests-{os.getpid()}.sqlite3")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _SQLITE,
            "TEST": {"NAME": _SQLITE},
        }
    }

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
            ]
        },
    }
]

STATIC_URL = "/static/"
LOGIN_URL = "/admin/login/"

from .keys import rsa_key_pem  # noqa: E402

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": rsa_key_pem("a"),
    "PKCE_REQUIRED": False,
    "OAUTH2_VALIDATOR_CLASS": "tests.support.idp.Validator",
    "SCOPES": {"openid": "OpenID", "profile": "Profile", "email": "Email"},
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

WEBAUTH = {
    "secret": "test-secret-0123456789abcdef0123456789abcdef",
    "providers": ["webauth.providers.DjangoCredentials"],
}

# The suite runs in one process, where LocMemCache's counters are exact; the
# rate-limit tests call the cache checks themselves (tests/test_ratelimit.py).
SILENCED_SYSTEM_CHECKS = ["webauth.W006"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"null": {"class": "logging.NullHandler"}},
    "loggers": {"webauth": {"handlers": ["null"], "level": "DEBUG", "propagate": True}},
}
