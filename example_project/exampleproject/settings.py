"""Settings of the webauth example project: a development setup, not a deployment.

Everything webauth needs is marked "webauth:". Run it with ``./scripts/example``.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# Development only: set DJANGO_SECRET_KEY and AUTH_SECRET for anything else.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-project-insecure-django-key")
DEBUG = True
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "webauth",  # webauth: its models, templates, template tags and checks
    "exampleproject",  # this project's templates and the example_setup command
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # webauth: request.auth_session and request.user (after AuthenticationMiddleware).
    "webauth.middleware.AuthMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "exampleproject.urls"
WSGI_APPLICATION = "exampleproject.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                # webauth: {% webauth_signin_buttons %} needs the request.
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": BASE_DIR / "db.sqlite3",
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"

# webauth: sessions are JWTs encrypted with AUTH_SECRET (the same secret lets a
# Next.js app running Auth.js read them). The fallback is a DEVELOPMENT-ONLY
# value: anyone who knows it can forge sessions.
AUTH_SECRET = os.environ.get("AUTH_SECRET") or "example-project-DEV-ONLY-secret-do-not-deploy"

WEBAUTH = {
    "secret": AUTH_SECRET,
    "providers": ["webauth.providers.DjangoCredentials"],
}
