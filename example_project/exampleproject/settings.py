"""Settings of the webauth example project: a development setup, not a deployment.

Everything webauth needs is marked "webauth:". Run it with ``./scripts/example``;
``WEBAUTH_EXAMPLE_SESSIONS=database ./scripts/example`` keeps the sessions in the
database instead of JWT cookies (see WEBAUTH["session"] below).
"""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

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
    "oauth2_provider",  # the bundled "Example IdP" (an OpenID provider), see below
    "webauth",  # webauth: its models, templates, template tags and checks
    "exampleproject",  # this project's templates and the example_setup command
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Each visitor's language: the language switcher's cookie (base.html), else the
    # browser's Accept-Language. After the sessions, before CommonMiddleware.
    "django.middleware.locale.LocaleMiddleware",
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
        "NAME": os.environ.get("EXAMPLE_DB", BASE_DIR / "db.sqlite3"),
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
# English and the six languages webauth's pages and emails are translated into
# (docs/translations.md), each named in its own language for the switcher.
LANGUAGES = [
    ("en", "English"),
    ("de", "Deutsch"),
    ("fr", "Français"),
    ("es", "Español"),
    ("pt-br", "Português (Brasil)"),
    ("ja", "日本語"),
    ("zh-hans", "简体中文"),
]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"

# webauth: sessions are JWTs encrypted with AUTH_SECRET (the same secret lets a
# Next.js app running Auth.js read them). The fallback is a DEVELOPMENT-ONLY
# value: anyone who knows it can forge sessions.
AUTH_SECRET = os.environ.get("AUTH_SECRET") or "example-project-DEV-ONLY-secret-do-not-deploy"

# The port scripts/example serves on: the Example IdP's URLs depend on it.
PORT = int(os.environ.get("PORT", "8000"))

# webauth: where sessions live. "jwt" (the default here): an encrypted cookie, nothing
# stored. "database": a row per session, so the account center lists them and
# "Sign out everywhere else" ends the others (docs/sessions.md). Pick it with
# WEBAUTH_EXAMPLE_SESSIONS=database ./scripts/example.
SESSION_STRATEGY = os.environ.get("WEBAUTH_EXAMPLE_SESSIONS") or "jwt"
if SESSION_STRATEGY not in ("jwt", "database"):
    raise ImproperlyConfigured(
        f"WEBAUTH_EXAMPLE_SESSIONS={SESSION_STRATEGY!r}: use 'jwt' (the default) or 'database'"
    )

# Email: this project has no mail server, so messages are printed on the console
# (where ./scripts/example runs) and the last 20 are listed at /dev/outbox/ (DEBUG
# only). A real project sets EMAIL_BACKEND to SMTP or a delivery service: see
# docs/email.md.
EMAIL_BACKEND = "exampleproject.mail.EmailBackend"
EXAMPLE_OUTBOX = os.environ.get("EXAMPLE_OUTBOX", BASE_DIR / "outbox.json")
DEFAULT_FROM_EMAIL = "webauth example <no-reply@localhost>"

# webauth: passkeys, email sign-in (a link and a code), credentials sign-in for the
# demo user, the bundled Example IdP, and GitHub / Google whenever their client ids
# are in the environment (AUTH_GITHUB_ID + AUTH_GITHUB_SECRET, AUTH_GOOGLE_ID +
# AUTH_GOOGLE_SECRET).
from webauth.providers import Email, Passkey  # noqa: E402
from webauth.providers.oauth import OIDC  # noqa: E402
from webauth.tokens.keys import generate as generate_token_key  # noqa: E402

# The access tokens' signing key: WEBAUTH_TOKEN_KEY, else one made once for this
# checkout and kept beside the database.
TOKEN_KEY_FILE = BASE_DIR / "token_key.json"
TOKEN_KEY = os.environ.get("WEBAUTH_TOKEN_KEY")
if TOKEN_KEY is None:
    if not TOKEN_KEY_FILE.exists():
        _new_key = generate_token_key("ES256", kid="example")
        TOKEN_KEY_FILE.write_text(_new_key.export(private_key=True))
    TOKEN_KEY = TOKEN_KEY_FILE.read_text()

WEBAUTH = {
    "secret": AUTH_SECRET,
    # OAuth and email sign-ins store users (and linked accounts, and the emails'
    # one-time grants) through the ORM adapter...
    "adapter": "webauth.adapters.django.DjangoAdapter",
    # ...while the session is a JWT cookie unless WEBAUTH_EXAMPLE_SESSIONS=database
    # (see SESSION_STRATEGY above; an adapter alone would pick "database").
    "session": {
        "strategy": SESSION_STRATEGY,
        # Signed out after two weeks without a visit (the default is 30 days)...
        "max_age": 14 * 24 * 3600,
        # ...and 30 days after signing in however active: then sign in again.
        # Off by default (Auth.js has no such limit); see docs/sessions.md.
        "absolute_max_age": 30 * 24 * 3600,
    },
    # Passkeys sit behind Auth.js's experimental switch; webauth logs
    # "[auth][warn][experimental-webauthn]" at start-up. docs/passkeys.md says what
    # "experimental" means here.
    "experimental": {"enable_webauthn": True},
    "providers": [
        # A passkey is bound to its relying-party id, a domain name: "localhost" here
        # (browsers allow WebAuthn on http://localhost, never on 127.0.0.1). Open the
        # site at http://localhost:<PORT>/ to use passkeys. A deployment names its own
        # domain and public origins (docs/passkeys.md, "The relying party").
        Passkey(
            relying_party={
                "id": "localhost",
                "name": "webauth example",
                "origins": [f"http://localhost:{PORT}"],
            }
        ),
        # Links and codes expire after 15 minutes (Auth.js's default is 24 hours): a
        # short window suits a link that signs in, and a person who asked for it
        # reads it within minutes. docs/email.md explains the trade-off.
        Email(max_age=15 * 60),
        "webauth.providers.DjangoCredentials",
        OIDC(
            id="example-idp",
            name="Example IdP",
            # The IdP lives in this same project under /idp/, reached as 127.0.0.1
            # so that its login cookie stays apart from the site's (localhost).
            issuer=f"http://127.0.0.1:{PORT}/idp",
            client_id="example-client",
            client_secret="example-client-secret",
        ),
        *[p for p in ("github", "google") if os.environ.get(f"AUTH_{p.upper()}_ID")],
    ],
    # A second factor (docs/mfa.md): anyone may add an authenticator app in the
    # account center (/account/security/), and staff must: a staff member without
    # one adds it right after their password, before the sign-in ends.
    "mfa": {"enabled": True, "required": "staff", "issuer": "webauth example"},
    # The account center's header: its home link goes to this project's home page
    # (by default it is settings.LOGIN_REDIRECT_URL, Django's /accounts/profile/).
    "account": {"home_url": "home", "site_name": "webauth example"},
    # The password's whole life (docs/passwords.md): "Create an account" on the sign-in
    # page (the address proven by an emailed code or link before the account exists),
    # "Forgot your password?" (a link and a code, usable only in the browser that
    # asked), changing or setting one in the account center (/account/password/), and
    # an email to the owner whenever it changes.
    "passwords": {"signup": True, "reset": True, "change": True, "notify": True},
    # A bot check (docs/passwords.md#the-bot-challenge) on password sign-in, sign-up,
    # reset and email requests, asked only once the rate limiter sees abuse from an
    # address (here: 5 failed passwords in a minute). These are Cloudflare's published
    # Turnstile test keys, which always pass; the widget needs the network, so offline
    # the check is refused. A real site puts its own keys in the environment.
    "challenge": {
        "service": "turnstile",
        "site_key": os.environ.get("TURNSTILE_SITE_KEY", "1x00000000000000000000AA"),
        "secret_key": os.environ.get("TURNSTILE_SECRET_KEY", "1x0000000000000000000000000000000AA"),
        "when": "abuse",
    },
    # Access tokens for other services (docs/tokens.md): GET /auth/token?audience=...
    # for a signed-in browser, the keys at /.well-known/jwks.json, and the revocation
    # feed at /auth/token/ended. The key is made on the first run (token_key.json,
    # not committed); a deployment keeps its key in a secret store
    # (manage.py webauth_tokenkey prints one).
    # API keys for scripts (docs/api-keys.md): made at /account/api-keys/, shown once;
    # /api/key/me/ answers to one with the "profile:read" scope. A key may also
    # belong to a group (Django's auth.Group stands for a team here): a member of
    # a group manages its keys on the same page; made in the admin too.
    "api_keys": {
        "prefix": "wak",
        "scopes": ["profile:read", "orders:read"],
        "owners": ["auth.Group"],
        "owners_of": "exampleproject.views.groups_of",
    },
    "tokens": {
        "keys": [TOKEN_KEY],
        "audiences": [f"http://localhost:{PORT}/api", "billing"],
    },
}

# Django's password rules, applied by sign-up, reset, change and set alike, and a
# check against passwords known from breaches (Have I Been Pwned's range API: only
# five hex characters of the password's SHA-1 leave the server). Offline, the check
# cannot be made and fail="open" accepts the password after the timeout (and logs a
# warning); fail="closed" would refuse it.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {
        "NAME": "webauth.passwords.breached.PwnedPasswordValidator",
        "OPTIONS": {"timeout": 2, "fail": "open"},
    },
]

# --- The bundled Example IdP: django-oauth-toolkit as an OpenID provider --------
# Not part of using webauth: it exists so "Sign in with Example IdP" works offline.
# manage.py example_setup registers its client and the IdP user.
IDP_KEY_FILE = BASE_DIR / "idp_key.pem"
if not IDP_KEY_FILE.exists():
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    _key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    IDP_KEY_FILE.write_bytes(
        _key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": IDP_KEY_FILE.read_text(),
    "OAUTH2_VALIDATOR_CLASS": "exampleproject.idp.Validator",
    "SCOPES": {"openid": "OpenID", "profile": "Your name", "email": "Your email address"},
}
LOGIN_URL = "/idp/login/"  # where the IdP sends people who have not logged in to it
