"""``webauth.wsgi.FastPath``: csrf, providers and session served before the middleware (issue 26).

What it answers must be what the whole stack answers (status, body, every
header), for every kind of request these routes get; what it must not answer
(another method, another path, a cross-origin or bearer request, a host
``ALLOWED_HOSTS`` refuses, a request ``CommonMiddleware`` would redirect or
refuse, a URLconf that routes the path elsewhere) goes to the project's stack.
"""

from __future__ import annotations

import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.test import RequestFactory
from django.urls import path
from freezegun import freeze_time

from benchmarks.http.settings import INSTALLED_MIDDLEWARE
from webauth import jwt
from webauth.test import session_cookie_for
from webauth.wsgi import FAST_ACTIONS, FastPath

pytestmark = pytest.mark.django_db

COOKIE = "authjs.session-token"
MARK = "tests.test_wsgi_fast_path.marked"
#: docs/installation.md's MIDDLEWARE (tests/test_benchmark_site.py checks they agree).
STACK = INSTALLED_MIDDLEWARE


def marked(get_response):
    """A project middleware: marks every answer that went through the stack."""

    def middleware(request):
        response = get_response(request)
        response["X-Stack"] = "1"
        return response

    return middleware


@pytest.fixture
def stack(settings):
    """docs/installation.md's MIDDLEWARE, after a marking middleware of the project's
    (first, so that it marks every answer of the stack, its errors and redirects too)."""
    settings.MIDDLEWARE = [MARK, *STACK]
    return settings


class Answer:
    def __init__(self, app, environ):
        self.status = ""
        self.headers: list[tuple[str, str]] = []
        result = app(environ, self._start)
        self.body = b"".join(result)
        result.close()

    def _start(self, status, headers):
        self.status, self.headers = status, headers

    def header(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    @property
    def through_stack(self):
        return self.header("X-Stack") == ["1"]


def environ(path="/auth/session", method="GET", cookies=None, **extra):
    env = dict(RequestFactory().generic(method, path).environ)
    env["HTTP_HOST"] = extra.pop("host", "testserver")
    if cookies:
        env["HTTP_COOKIE"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
    env.update(extra)
    env["wsgi.input"] = io.BytesIO(b"")
    return env


def both(env):
    """The answers of the whole stack and of the fast path to *env*."""
    django_app = WSGIHandler()
    return Answer(django_app, dict(env)), Answer(FastPath(django_app), dict(env))


#: What SessionMiddleware adds for a Django session cookie that names no session: its
#: deletion (the next page through the stack deletes it; docs/deployment.md).
STALE_SESSIONID = (
    (
        "Set-Cookie",
        ' sessionid=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0; Path=/; SameSite=Lax',
    ),
    ("Vary", "Cookie"),
)


def normalized(answer):
    """Headers as a sorted list, a session JWT replaced by its claims (its IV is random)
    and a new CSRF token by its shape (it is random)."""
    headers = []
    for name, value in answer.headers:
        if name == "X-Stack":
            continue
        value = re.sub(
            r"authjs\.csrf-token=[0-9a-f]{64}%7C[0-9a-f]{64};", "authjs.csrf-token=<new>;", value
        )
        if name == "Set-Cookie" and value.strip().startswith(f"{COOKIE}="):
            token = re.match(rf"\s*{re.escape(COOKIE)}=([^;]*)", value).group(1)
            claims = jwt.decode(token=token, secret=SECRET, salt=COOKIE) if token else None
            value = value.replace(token, repr(sorted(claims.items())) if claims else "")
        headers.append((name, value))
    return sorted(headers)


SECRET = "test-secret-0123456789abcdef0123456789abcdef"


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", "alice@example.com", "pw-123456")


def browsers(alice):
    """The cookies of the requests these routes get."""
    name, value = session_cookie_for(alice)
    django_session = SessionStore()
    django_session["seen"] = True
    django_session.create()
    csrf = "0" * 64 + "%7C" + "1" * 64  # a forged CSRF cookie: replaced on both paths
    return {
        "no cookies": {},
        "signed in": {name: value},
        "a forged session": {name: value[:-4] + "AAAA"},
        "a forged csrf cookie": {"authjs.csrf-token": csrf},
        "signed in, Django's cookies too": {
            name: value,
            "sessionid": django_session.session_key,
            "csrftoken": "y" * 32,
        },
    }


@pytest.mark.parametrize("action", FAST_ACTIONS)
def test_the_same_answer_as_the_whole_stack(stack, alice, action):
    with freeze_time("2026-12-01 12:00:00"):
        for label, cookies in browsers(alice).items():
            for query in ("", "?callbackUrl=/private/"):
                env = environ(f"/auth/{action}{query}", cookies=cookies)
                full, fast = both(env)
                assert full.through_stack and not fast.through_stack, label
                assert fast.status == full.status, label
                assert normalized(fast) == normalized(full), label
                if '"csrfToken"' not in full.body.decode():
                    assert fast.body == full.body, label  # (the clock is frozen: same expiry)


def test_the_security_headers_of_the_project_are_kept(stack, alice):
    stack.SECURE_HSTS_SECONDS = 3600
    stack.SECURE_REFERRER_POLICY = "no-referrer"
    env = environ("/auth/csrf", **{"wsgi.url_scheme": "https"})
    full, fast = both(env)
    assert not fast.through_stack
    for name in (
        "Strict-Transport-Security",
        "X-Content-Type-Options",
        "Referrer-Policy",
        "Cross-Origin-Opener-Policy",
        "X-Frame-Options",
    ):
        assert fast.header(name) == full.header(name) != [], name


def test_an_ssl_redirect_is_kept(stack):
    stack.SECURE_SSL_REDIRECT = True
    full, fast = both(environ("/auth/providers"))
    assert fast.status.startswith("301") and fast.header("Location") == full.header("Location")


def test_only_the_listed_middleware_runs(stack):
    # Without SecurityMiddleware and XFrameOptionsMiddleware in MIDDLEWARE, their
    # headers are absent on both paths: the fast path copies the project, not a list.
    stack.MIDDLEWARE = [m for m in STACK if "security" not in m and "clickjacking" not in m]
    full, fast = both(environ("/auth/csrf"))
    assert normalized(fast) == normalized(full)
    assert not fast.header("X-Frame-Options") and not fast.header("X-Content-Type-Options")


@pytest.mark.parametrize(
    ("label", "env"),
    [
        ("POST", environ("/auth/session", method="POST")),
        ("HEAD", environ("/auth/session", method="HEAD")),
        ("another route", environ("/auth/signin")),
        ("a trailing slash", environ("/auth/session/")),
        ("another page", environ("/")),
        ("a cross-origin call", environ("/auth/session", HTTP_ORIGIN="https://other.example")),
        ("a bearer session", environ("/auth/session", HTTP_AUTHORIZATION="Bearer x")),
        ("a refused host", environ("/auth/csrf", host="evil.example")),
        ("a broken header", environ("/auth/csrf", host="bad host")),
    ],
)
def test_what_goes_through_the_stack(stack, label, env):
    full, fast = both(env)
    assert fast.through_stack, label
    assert fast.status == full.status, label


def test_a_refused_host_gets_the_stacks_400(stack):
    full, fast = both(environ("/auth/csrf", host="evil.example"))
    assert fast.status.startswith("400") and full.status.startswith("400")


def test_prepend_www_and_disallowed_user_agents_go_through_the_stack(stack):
    stack.PREPEND_WWW = True
    fast = both(environ("/auth/csrf"))[1]
    assert fast.through_stack and fast.status.startswith("301")
    stack.PREPEND_WWW = False
    stack.DISALLOWED_USER_AGENTS = [re.compile(r"BadBot")]
    fast = both(environ("/auth/csrf", HTTP_USER_AGENT="BadBot/1.0"))[1]
    assert fast.through_stack and fast.status.startswith("403")
    fast = both(environ("/auth/csrf", HTTP_USER_AGENT="Firefox"))[1]
    assert not fast.through_stack and fast.status.startswith("200")


def _shadowing_view(request):
    from django.http import HttpResponse

    return HttpResponse("the project's own session page")


urlpatterns = [
    path("auth/session", _shadowing_view),
    path("auth/", __import__("django.urls", fromlist=["include"]).include("webauth.urls")),
]


def test_a_path_the_urlconf_routes_elsewhere_is_not_served(stack):
    stack.ROOT_URLCONF = "tests.test_wsgi_fast_path"
    fast = both(environ("/auth/session"))[1]
    assert fast.through_stack and fast.body == b"the project's own session page"
    assert not both(environ("/auth/csrf"))[1].through_stack  # still webauth's


def test_a_stale_django_session_cookie_is_left_to_the_next_page(stack, alice):
    # The one difference: SessionMiddleware deletes a sessionid that names no session.
    full, fast = both(environ("/auth/csrf", cookies={"sessionid": "x"}))
    for header in STALE_SESSIONID:
        assert header in full.headers and header not in fast.headers
    rest = [h for h in normalized(full) if h not in STALE_SESSIONID]
    assert rest == normalized(fast)


def test_request_signals_are_sent(stack):
    seen = []

    def started(sender, **kwargs):
        seen.append("started")

    def finished(sender, **kwargs):
        seen.append("finished")

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        Answer(FastPath(WSGIHandler()), environ("/auth/csrf"))
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert seen == ["started", "finished"]


def test_a_content_length_as_common_middleware_sets_it(stack):
    fast = both(environ("/auth/providers"))[1]
    assert fast.header("Content-Length") == [str(len(fast.body))]


def test_a_broken_configuration_is_left_to_the_stack(stack):
    stack.WEBAUTH = {"providers": "not a list"}
    full, fast = both(environ("/auth/session"))
    assert fast.through_stack and fast.status == full.status


def test_actions_can_be_narrowed_and_are_checked(stack):
    app = FastPath(WSGIHandler(), actions=["csrf"])
    assert not Answer(app, environ("/auth/csrf")).through_stack
    assert Answer(app, environ("/auth/session")).through_stack
    with pytest.raises(ValueError, match="signin"):
        FastPath(WSGIHandler(), actions=["signin"])
