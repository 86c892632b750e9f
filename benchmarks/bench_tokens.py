"""Access tokens and API keys: verifying per request against simplejwt and DRF's tokens.

Run from anywhere (the test extra has both frameworks)::

    python benchmarks/bench_tokens.py                      # about 40 s
    python benchmarks/bench_tokens.py --repeat 21 --number 2000

Two questions, one process, Django's WSGI handler called directly (no server,
network or load generator, as ``bench_drf_bearer.py``), SQLite in a temporary
file, ``DEBUG = False``, the middleware ``AuthMiddleware`` alone:

**Verifying per request**, what another service does with each call: the same
DRF ``APIView`` (``GET /api/<case>/me``, answering the caller's ``sub``) behind

* ``simplejwt``: ``JWTAuthentication`` (an HS256 access token from
  ``AccessToken.for_user``, its user loaded by primary key: what simplejwt's
  users run), the baseline;
* ``simplejwt-stateless``: ``JWTStatelessUserAuthentication`` (the same token,
  no query), for reference;
* ``webauth-es256`` and ``webauth-eddsa``: a five-line DRF authentication class
  around :class:`webauth.tokens.Verifier` (the JWKS given, as a service holds it
  after its first fetch), verifying a token minted by ``GET /auth/token``.

The target: ``webauth-es256`` at least 1.0x simplejwt's requests per second
(``MET`` / ``NOT MET``; the exit status is 1 when it is not met).

**API keys** (docs/api-keys.md), per request, the same DRF view behind

* ``drf-token``: ``rest_framework.authentication.TokenAuthentication`` (its
  ``authtoken`` table: the token looked up as it is, with its user), the
  baseline;
* ``webauth-api-key``: ``webauth.contrib.rest_framework.ApiKeyAuthentication``
  (the key parsed, one query for the key and its user, the secret's hash
  compared in constant time; its last use already written this minute).

**Minting and the JWKS**, on the site: ``GET /auth/token`` for a signed-in
JWT session, ``GET /auth/.well-known/jwks.json``, each against ``GET
/auth/session`` for the same session in the same run (the route every signed-in
page already pays for).

``--repeat`` rounds time ``--number`` requests of each case in turn (the order
rotates each round); the figures are the median and best round in microseconds
per request, requests/s from the median, and the ratios. Every answer is
checked once before the timing. On a loaded machine ratios move by several
percent from run to run: compare figures from one quiet run only.
"""

from __future__ import annotations

import argparse
import json
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

SECRET = "bench-secret-0123456789abcdef0123456789abcdef"
ISSUER = "http://127.0.0.1/auth"
API = "https://api.example.com"
TARGET = 1.0
#: Filled by setup(): the site's key set, newest first (ES256 signs; EdDSA published).
KEYS: dict[str, str] = {}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (15)")
    parser.add_argument("--number", type=int, default=1000, help="requests per round (1000)")
    return parser.parse_args()


def webauth_settings(signing: str) -> dict[str, Any]:
    other = "eddsa" if signing == "es256" else "es256"
    return {
        "secret": SECRET,
        "rate_limits": False,
        "providers": ["webauth.providers.DjangoCredentials"],
        "tokens": {"keys": [KEYS[signing], KEYS[other]], "audiences": [API], "issuer": ISSUER},
        "api_keys": {"scopes": ["orders:read"]},
    }


def setup(database: str) -> None:
    from django.conf import settings

    from webauth.tokens.keys import generate

    KEYS["es256"] = generate("ES256", kid="es256").export(private_key=True)
    KEYS["eddsa"] = generate("EdDSA", kid="eddsa").export(private_key=True)
    settings.configure(
        SECRET_KEY="bench-not-secret-0123456789abcdef0123456789abcdef",
        DEBUG=False,
        ALLOWED_HOSTS=["127.0.0.1"],
        USE_TZ=True,
        ROOT_URLCONF="bench_tokens_urls",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        INSTALLED_APPS=[
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "rest_framework",
            "rest_framework.authtoken",
            "webauth",
        ],
        MIDDLEWARE=["webauth.middleware.AuthMiddleware"],
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": database,
                "CONN_MAX_AGE": None,
            }
        },
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
        REST_FRAMEWORK={
            "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
            "DEFAULT_AUTHENTICATION_CLASSES": [],
            "UNAUTHENTICATED_USER": None,
        },
        SIMPLE_JWT={"USER_ID_CLAIM": "user_id"},
        WEBAUTH=webauth_settings("es256"),
    )
    # API keys on, without their limits (as the rest: rate_limits False).
    import django

    django.setup()
    sys.modules["bench_tokens_urls"] = _urls()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _urls() -> Any:
    import types

    from django.urls import include, path
    from rest_framework.authentication import BaseAuthentication, TokenAuthentication
    from rest_framework.exceptions import AuthenticationFailed
    from rest_framework.permissions import IsAuthenticated
    from rest_framework.response import Response
    from rest_framework.views import APIView
    from rest_framework_simplejwt.authentication import (
        JWTAuthentication,
        JWTStatelessUserAuthentication,
    )

    from webauth.contrib.rest_framework import ApiKeyAuthentication
    from webauth.tokens import InvalidToken, Verifier
    from webauth.tokens.keys import public_jwks, read_keys

    jwks = public_jwks(read_keys([KEYS["es256"], KEYS["eddsa"]]))

    class Caller:
        """The caller a verified token names (no query: the token is the proof)."""

        is_authenticated = True

        def __init__(self, claims: dict[str, Any]) -> None:
            self.pk = claims["sub"]
            self.claims = claims

    class AccessTokenAuthentication(BaseAuthentication):
        """What docs/tokens.md's DRF service writes: the header's token, verified."""

        verifier = Verifier(issuer=ISSUER, audience=API, jwks=jwks)

        def authenticate(self, request: Any) -> tuple[Caller, dict[str, Any]] | None:
            scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
            if scheme != "Bearer" or not token:
                return None
            try:
                claims = self.verifier.verify(token)
            except InvalidToken as exc:
                raise AuthenticationFailed(exc.reason) from None
            return Caller(claims), claims

    def view(auth: type) -> Any:
        class Me(APIView):
            authentication_classes = [auth]
            permission_classes = [IsAuthenticated]

            def get(self, request: Any) -> Response:
                return Response({"id": str(request.user.pk)})

        return Me.as_view()

    module = types.ModuleType("bench_tokens_urls")
    module.urlpatterns = [  # type: ignore[attr-defined]
        path("api/simplejwt/me", view(JWTAuthentication)),
        path("api/stateless/me", view(JWTStatelessUserAuthentication)),
        path("api/webauth/me", view(AccessTokenAuthentication)),
        path("api/drftoken/me", view(TokenAuthentication)),
        path("api/apikey/me", view(ApiKeyAuthentication)),
        path("auth/", include("webauth.urls")),
    ]
    return module


def use(config: dict[str, Any]) -> None:
    from django.conf import settings

    from webauth.conf import reset_config

    settings.WEBAUTH = config
    reset_config()


def environ(path: str, *, bearer: str | None = None, cookie: str | None = None) -> dict[str, Any]:
    from django.test import RequestFactory

    env: dict[str, Any] = RequestFactory().get(path).environ
    env["HTTP_HOST"] = "127.0.0.1"
    if bearer is not None:
        env["HTTP_AUTHORIZATION"] = f"Bearer {bearer}"
    if cookie is not None:
        env["HTTP_COOKIE"] = f"authjs.session-token={cookie}"
    return env


def build(call: Caller) -> tuple[dict[str, tuple[dict[str, Any], str]], dict[str, Any], str]:
    """The verify cases (environ, expected body), the site cases, the user's pk."""
    from django.contrib.auth import get_user_model
    from rest_framework_simplejwt.tokens import AccessToken

    from webauth.test import session_cookie_for

    user = get_user_model().objects.create_user("alice", "alice@example.com", "bench-password")
    cookie = session_cookie_for(user)[1]
    minted = {}
    for signing in ("es256", "eddsa"):
        use(webauth_settings(signing))
        body = call(environ("/auth/token", cookie=cookie))
        if not call.status.startswith("200"):
            raise SystemExit(f"GET /auth/token: {call.status} {body[:200]!r}")
        minted[signing] = json.loads(body)["access_token"]
    use(webauth_settings("es256"))
    expected = json.dumps({"id": str(user.pk)}, separators=(",", ":"))
    simple = str(AccessToken.for_user(user))
    verify = {
        "simplejwt": (environ("/api/simplejwt/me", bearer=simple), expected),
        "simplejwt-stateless": (environ("/api/stateless/me", bearer=simple), expected),
        "webauth-es256": (environ("/api/webauth/me", bearer=minted["es256"]), expected),
        "webauth-eddsa": (environ("/api/webauth/me", bearer=minted["eddsa"]), expected),
    }
    from rest_framework.authtoken.models import Token

    from webauth.api_keys import create_key

    drf_token = Token.objects.create(user=user).key
    api_key = create_key(user, name="bench", scopes=["orders:read"]).key
    keys = {
        "drf-token": (
            environ("/api/drftoken/me", bearer=None) | {"HTTP_AUTHORIZATION": f"Token {drf_token}"},
            expected,
        ),
        "webauth-api-key": (environ("/api/apikey/me", bearer=api_key), expected),
    }
    verify.update(keys)
    site = {
        "session": environ("/auth/session", cookie=cookie),
        "mint": environ("/auth/token", cookie=cookie),
        "jwks": environ("/auth/.well-known/jwks.json"),
    }
    return verify, site, str(user.pk)


def rounds(call: Caller, cases: dict[str, dict[str, Any]], args: argparse.Namespace):
    times: dict[str, list[float]] = {label: [] for label in cases}
    order = list(cases)
    for label in order:  # warm-up
        timed(lambda env=cases[label]: call(env), args.number // 4 or 1)
    for round_ in range(args.repeat):
        rotated = order[round_ % len(order) :] + order[: round_ % len(order)]
        for label in rotated:
            times[label].append(timed(lambda env=cases[label]: call(env), args.number))
    return times


def table(times: dict[str, list[float]], baseline: str, against: str) -> dict[str, float]:
    median = {label: statistics.median(values) for label, values in times.items()}
    print(f"{'case':<20} {'median us':>10} {'best us':>9} {'req/s':>9} {against:>16}")
    for label, values in times.items():
        ratio = median[baseline] / median[label]
        print(
            f"{label:<20} {median[label]:10.1f} {min(values):9.1f} "
            f"{1e6 / median[label]:9.0f} {ratio:15.2f}x"
        )
    return median


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-tokens-bench-") as tmp:
        setup(str(Path(tmp) / "bench.sqlite3"))
        call = Caller()
        verify, site, _pk = build(call)
        for label, (env, expected) in verify.items():
            body = call(env)
            if not call.status.startswith("200") or body.decode() != expected:
                raise SystemExit(f"{label}: {call.status} {body[:200]!r}")
        for label, env in site.items():
            body = call(env)
            if not call.status.startswith("200"):
                raise SystemExit(f"{label}: {call.status} {body[:200]!r}")
        if not json.loads(call(site["jwks"]))["keys"]:
            raise SystemExit("the JWKS is empty")
        key_cases = ("drf-token", "webauth-api-key")
        verify_times = rounds(
            call, {k: env for k, (env, _) in verify.items() if k not in key_cases}, args
        )
        key_times = rounds(call, {k: verify[k][0] for k in key_cases}, args)
        site_times = rounds(call, site, args)

    from importlib.metadata import version

    import django
    import rest_framework
    import rest_framework_simplejwt

    print(
        f"Python {sys.version.split()[0]}, Django {django.get_version()}, "
        f"DRF {rest_framework.VERSION}, simplejwt {rest_framework_simplejwt.__version__}, "
        f"jwcrypto {version('jwcrypto')}; in-process WSGIHandler, SQLite; "
        f"{args.repeat} rounds x {args.number} requests"
    )
    print("\nVerifying a token per request (a DRF view behind each authentication):")
    median = table(verify_times, "simplejwt", "vs simplejwt")
    print("\nAPI keys per request (a DRF view behind each authentication):")
    keyed = table(key_times, "drf-token", "vs drf-token")
    print("\nOn the site (a signed-in JWT session):")
    table(site_times, "session", "vs session read")
    ratio = median["simplejwt"] / median["webauth-es256"]
    ok = ratio >= TARGET
    print(
        f"\nwebauth-es256 req/s >= {TARGET:.1f}x simplejwt's: {ratio:.2f}x "
        f"{'MET' if ok else 'NOT MET'}"
    )
    key_ratio = keyed["drf-token"] / keyed["webauth-api-key"]
    print(f"webauth-api-key req/s vs drf-token's: {key_ratio:.2f}x (measured; no target)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
