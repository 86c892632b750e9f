"""Settings for webauth's own test suite.

SQLite by default; PostgreSQL at 127.0.0.1:5432 when WEBAUTH_TEST_POSTGRES is set
(``.ci/run`` sets it when a server answers there).
"""

import os

SECRET_KEY = "webauth-tests-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1", "example.com", "app.example.com"]
USE_TZ = True
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

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
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "webauth.middleware.AuthMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

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
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}

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
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

WEBAUTH = {
    "secret": "test-secret-0123456789abcdef0123456789abcdef",
    "providers": ["webauth.providers.DjangoCredentials"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"null": {"class": "logging.NullHandler"}},
    "loggers": {"webauth": {"handlers": ["null"], "level": "DEBUG", "propagate": True}},
}
