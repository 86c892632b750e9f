"""A DRF view under a webauth bearer session against the same view under simplejwt.

Run from anywhere (the test extra has both frameworks)::

    python benchmarks/bench_drf_bearer.py                      # about 30 s
    python benchmarks/bench_drf_bearer.py --repeat 21 --number 2000

djangorestframework-simplejwt is what Django REST framework users pick for
token authentication today. The same ``APIView`` (``GET /api/<case>/me``,
answering the user's primary key) is served to three kinds of token, in one
process, through Django's WSGI handler called directly (no server, network or
load generator, as ``bench_inprocess.py``):

* ``simplejwt``: ``rest_framework_simplejwt.authentication.JWTAuthentication``
  and ``IsAuthenticated``, with an access token from ``AccessToken.for_user``
  (HS256 signed, ``SIMPLE_JWT``'s defaults);
* ``webauth-jwt``: ``webauth.contrib.rest_framework.WebAuthAuthentication`` and
  ``IsSignedIn`` with the session JWT as bearer token (``dir`` +
  ``A256CBC-HS512`` encrypted, ``session.strategy = "jwt"``);
* ``webauth-db``: the same with a database session's token
  (``session.strategy = "database"``, ``DjangoAdapter``).

Each looks its user up once per request (simplejwt by primary key; webauth's
JWT by primary key with the password-change check; webauth's database token
with its session in one joined query). The site is a webauth site: its
``MIDDLEWARE`` is ``AuthMiddleware`` for every case. SQLite in a temporary
file, persistent connections, ``DEBUG = False``.

Every case is checked once (200 and the user's primary key). Then
``--repeat`` rounds time ``--number`` requests of each case in turn (the order
rotates each round), the garbage collector on as in a server. The figures are
the median and best round in microseconds per request, requests/s from the
median, and each webauth case's requests/s over simplejwt's (the target: at
least 1.0x: printed as ``MET`` / ``NOT MET``, and the exit status is 1 when
one is not met). On a loaded machine the ratios move by several percent from run
to run: compare figures from one quiet run only.
"""

from __future__ import annotations

import argparse
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
WEBAUTH_JWT: dict[str, Any] = {"secret": SECRET, "bearer": True, "rate_limits": False}
WEBAUTH_DB: dict[str, Any] = {
    **WEBAUTH_JWT,
    "adapter": "webauth.adapters.django.DjangoAdapter",
    "session": {"strategy": "database"},
}
#: webauth's requests/s over simplejwt's, for each webauth case.
TARGET = 1.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="rounds (15)")
    parser.add_argument("--number", type=int, default=1000, help="requests per round (1000)")
    return parser.parse_args()


def setup(database: str) -> None:
    from django.conf import settings

    settings.configure(
        SECRET_KEY="bench-not-secret-0123456789abcdef0123456789abcdef",
        DEBUG=False,
        ALLOWED_HOSTS=["127.0.0.1"],
        USE_TZ=True,
        ROOT_URLCONF="bench_drf_urls",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        INSTALLED_APPS=[
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "rest_framework",
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
            "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
            "DEFAULT_AUTHENTICATION_CLASSES": [],
        },
        WEBAUTH=WEBAUTH_JWT,
    )
    import django

    django.setup()
    sys.modules["bench_drf_urls"] = _urls()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _urls() -> Any:
    """The site's URLconf: one view class, two authentication set-ups."""
    import types

    from django.urls import path
    from rest_framework.permissions import IsAuthenticated
    from rest_framework.response import Response
    from rest_framework.views import APIView
    from rest_framework_simplejwt.authentication import JWTAuthentication

    from webauth.contrib.rest_framework import IsSignedIn, WebAuthAuthentication

    class Me(APIView):
        def get(self, request: Any) -> Response:
            return Response({"id": request.user.pk})

    class SimpleJWTMe(Me):
        authentication_classes = [JWTAuthentication]
        permission_classes = [IsAuthenticated]

    class WebAuthMe(Me):
        authentication_classes = [WebAuthAuthentication]
        permission_classes = [IsSignedIn]

    module = types.ModuleType("bench_drf_urls")
    module.urlpatterns = [  # type: ignore[attr-defined]
        path("api/simplejwt/me", SimpleJWTMe.as_view()),
        path("api/webauth/me", WebAuthMe.as_view()),
    ]
    return module


def use_webauth(config: dict[str, Any]) -> None:
    """Switch the WEBAUTH settings between the two webauth cases."""
    from django.conf import settings

    from webauth.conf import reset_config

    settings.WEBAUTH = config
    reset_config()


def environ(path: str, token: str) -> dict[str, Any]:
    from django.test import RequestFactory

    env: dict[str, Any] = RequestFactory().get(path).environ
    env["HTTP_HOST"] = "127.0.0.1"
    env["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return env


def build_cases() -> tuple[dict[str, tuple[dict[str, Any], dict[str, Any]]], int]:
    """Each case's environ and WEBAUTH settings, and the user's primary key."""
    from django.contrib.auth import get_user_model
    from rest_framework_simplejwt.tokens import AccessToken

    from webauth.test import session_cookie_for

    user = get_user_model().objects.create_user("alice", "alice@example.com", "bench-password")
    use_webauth(WEBAUTH_JWT)
    jwt_token = session_cookie_for(user)[1]
    use_webauth(WEBAUTH_DB)
    db_token = session_cookie_for(user)[1]
    cases = {
        "simplejwt": (environ("/api/simplejwt/me", str(AccessToken.for_user(user))), WEBAUTH_JWT),
        "webauth-jwt": (environ("/api/webauth/me", jwt_token), WEBAUTH_JWT),
        "webauth-db": (environ("/api/webauth/me", db_token), WEBAUTH_DB),
    }
    return cases, user.pk


def check(call: Caller, label: str, env: dict[str, Any], pk: int) -> None:
    body = call(env)
    if not call.status.startswith("200") or body != f'{{"id":{pk}}}'.encode():
        raise SystemExit(f"{label}: {call.status} {body[:200]!r}")
    if any(name == "Set-Cookie" for name, _ in call.headers):
        raise SystemExit(f"{label}: a bearer answer set a cookie")


def main() -> int:
    args = parse_args()
    with tempfile.TemporaryDirectory(prefix="webauth-drf-bench-") as tmp:
        setup(str(Path(tmp) / "bench.sqlite3"))
        call = Caller()
        cases, pk = build_cases()
        for label, (env, config) in cases.items():
            use_webauth(config)
            check(call, label, env, pk)
        times: dict[str, list[float]] = {label: [] for label in cases}
        order = list(cases)
        for label in order:  # warm-up
            env, config = cases[label]
            use_webauth(config)
            timed(lambda env=env: call(env), args.number)
        for round_ in range(args.repeat):
            rotated = order[round_ % len(order) :] + order[: round_ % len(order)]
            for label in rotated:
                env, config = cases[label]
                use_webauth(config)
                call(env)  # the config is built outside the timing
                times[label].append(timed(lambda env=env: call(env), args.number))

    import django
    import rest_framework
    import rest_framework_simplejwt

    print(
        f"Python {sys.version.split()[0]}, Django {django.get_version()}, "
        f"DRF {rest_framework.VERSION}, simplejwt {rest_framework_simplejwt.__version__}; "
        f"in-process WSGIHandler, SQLite; {args.repeat} rounds x {args.number} requests"
    )
    print(f"{'case':<12} {'median us':>10} {'best us':>9} {'req/s':>9} {'vs simplejwt':>13}")
    median = {label: statistics.median(values) for label, values in times.items()}
    for label, values in times.items():
        ratio = median["simplejwt"] / median[label]
        print(
            f"{label:<12} {median[label]:10.1f} {min(values):9.1f} "
            f"{1e6 / median[label]:9.0f} {ratio:12.2f}x"
        )
    print()
    met = True
    for label in ("webauth-jwt", "webauth-db"):
        ratio = median["simplejwt"] / median[label]
        ok = ratio >= TARGET
        met = met and ok
        print(
            f"{label} req/s >= {TARGET:.1f}x simplejwt's: {ratio:.2f}x {'MET' if ok else 'NOT MET'}"
        )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
