"""The benchmark site does the work its figures claim to measure.

Its yardstick views (bench_http.py's cases 2f, 7f and 8f), and the credentials
check that bench_authjs.py compares with Auth.js's.
"""

import json

import pytest
from django.contrib.auth import get_user_model

from benchmarks.http.views import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    csrf_floor,
    providers_floor,
    session_floor,
)
from webauth import jwt
from webauth.conf import get_config
from webauth.test import session_cookie_for

pytestmark = pytest.mark.django_db


def test_the_floor_view_decodes_answers_and_reissues(rf):
    user = get_user_model().objects.create_user("ann", "ann@example.com", "pw", first_name="Ann")
    name, value = session_cookie_for(user)
    assert name == SESSION_COOKIE
    request = rf.get("/floor/session")
    request.COOKIES[name] = value
    response = session_floor(request)
    body = json.loads(response.content)
    assert body["user"] == {"name": "Ann", "email": "ann@example.com", "image": None}
    assert body["expires"].endswith(".000Z")
    morsel = response.cookies[name]
    assert morsel.value != value and morsel["httponly"] and morsel["samesite"] == "Lax"
    claims = jwt.decode(token=morsel.value, secret=get_config().secret, salt=name)
    assert claims is not None and claims["sub"] == str(user.pk)
    assert response["Cache-Control"] == "private, no-cache, no-store"


@pytest.mark.parametrize("change", ["deactivate", "password", "delete"])
def test_the_floor_view_ends_the_session_as_webauth_does(rf, change):
    user = get_user_model().objects.create_user("ann", "ann@example.com", "pw")
    name, value = session_cookie_for(user)
    if change == "deactivate":
        user.is_active = False
        user.save()
    elif change == "password":
        user.set_password("new")
        user.save()
    else:
        user.delete()
    request = rf.get("/floor/session")
    request.COOKIES[name] = value
    assert session_floor(request).content == b"null"


def test_the_floor_view_without_a_session_answers_null(rf):
    response = session_floor(rf.get("/floor/session"))
    assert response.content == b"null" and not response.cookies


def test_the_csrf_floor_answers_what_webauth_answers(client, rf):
    # The token of the cookie webauth set, the same headers, no new cookie.
    token = client.get("/auth/csrf").json()["csrfToken"]
    request = rf.get("/floor/csrf")
    request.COOKIES[CSRF_COOKIE] = client.cookies[CSRF_COOKIE].value
    response = csrf_floor(request)
    assert json.loads(response.content) == {"csrfToken": token}
    assert response["Cache-Control"] == "private, no-cache, no-store"
    assert response["Pragma"] == "no-cache" and response["Expires"] == "0"
    assert not response.cookies


def test_the_csrf_floor_refuses_a_forged_cookie(rf):
    request = rf.get("/floor/csrf")
    request.COOKIES[CSRF_COOKIE] = "a" * 64 + "%7C" + "b" * 64
    response = csrf_floor(request)
    token = json.loads(response.content)["csrfToken"]
    assert token != "a" * 64 and len(token) == 64
    assert response.cookies[CSRF_COOKIE].value.startswith(token + "%7C")


def test_the_providers_floor_answers_what_webauth_answers(client, rf):
    assert json.loads(providers_floor(rf.get("/floor/providers")).content) == (
        client.get("/auth/providers").json()
    )


# The credentials twin of benchmarks/authjs/server.mjs (bench_authjs.py).


def bench_webauth_settings(monkeypatch, credentials):
    """The benchmark site's WEBAUTH with ``WEBAUTH_BENCH_CREDENTIALS=credentials``."""
    import runpy
    from pathlib import Path

    monkeypatch.setenv("WEBAUTH_BENCH_CREDENTIALS", credentials)
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "http" / "settings.py"
    return runpy.run_path(str(path))["WEBAUTH"]


def test_the_constant_authorize_accepts_exactly_the_one_user():
    from benchmarks.http.auth import USER, authorize

    good = {"username": USER["username"], "password": USER["password"], "csrfToken": "x"}
    assert authorize(good, None) == {"id": "1", "name": "Alice", "email": "alice@example.com"}
    assert authorize({**good, "password": USER["password"] + "x"}, None) is None
    assert authorize({**good, "password": USER["password"][:-1]}, None) is None
    assert authorize({**good, "username": "bob"}, None) is None
    assert authorize({**good, "password": ["bench-password"]}, None) is None
    assert authorize({"username": USER["username"]}, None) is None


def test_bench_http_keeps_django_credentials(monkeypatch):
    monkeypatch.delenv("WEBAUTH_BENCH_CREDENTIALS", raising=False)
    config = bench_webauth_settings(monkeypatch, "django")
    assert config["providers"] == ["webauth.providers.DjangoCredentials"]


def test_the_constant_credentials_sign_in_through_webauth(client, monkeypatch, settings):
    from benchmarks.http.auth import USER
    from webauth.providers import Credentials

    config = bench_webauth_settings(monkeypatch, "constant")
    [provider] = config["providers"]
    assert isinstance(provider, Credentials) and provider.id == "credentials"
    settings.WEBAUTH = {**settings.WEBAUTH, "providers": config["providers"]}
    token = client.get("/auth/csrf").json()["csrfToken"]
    form = {"csrfToken": token, "username": USER["username"], "password": USER["password"]}
    response = client.post("/auth/callback/credentials", form)
    assert response.status_code == 302 and response["Location"] == "http://testserver"
    value = response.cookies[SESSION_COOKIE].value
    claims = jwt.decode(token=value, secret=get_config().secret, salt=SESSION_COOKIE)
    assert claims["sub"] == "1" and claims["name"] == "Alice"
    refused = client.post("/auth/callback/credentials", {**form, "password": "nope"})
    assert "error=CredentialsSignin" in refused["Location"]
    assert SESSION_COOKIE not in refused.cookies


def test_the_installed_stack_is_the_installation_guides_middleware():
    # The benchmarks' default configuration must be what docs/installation.md tells
    # people to install, exactly and in order (issue 26).
    import ast
    import re
    from pathlib import Path

    from benchmarks.http import settings as bench

    guide = (Path(__file__).resolve().parent.parent / "docs" / "installation.md").read_text()
    block = re.search(r"MIDDLEWARE = (\[.*?\])", guide, re.S)
    assert block is not None
    assert ast.literal_eval(block.group(1)) == bench.STACKS["installed"]
    assert bench.STACKS["installed-django"] == [
        m for m in bench.STACKS["installed"] if m != "webauth.middleware.AuthMiddleware"
    ]
