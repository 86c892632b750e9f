"""Shared helpers for the test-suite."""

from urllib.parse import parse_qs, urlsplit

from webauth import cookies as ck


def csrf_pair(client, *, secure=False):
    """Fetch a CSRF token (sets the cookie on the client); returns the token."""
    kwargs = {"secure": True} if secure else {}
    response = client.get("/auth/csrf", **kwargs)
    assert response.status_code == 200
    return response.json()["csrfToken"]


def query(url):
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}


def set_cookies(response):
    """The response's cookies as {name: morsel}."""
    return {name: morsel for name, morsel in response.cookies.items()}


def session_cookie(response, secure=False):
    name = ("__Secure-" if secure else "") + "authjs.session-token"
    morsel = response.cookies.get(name)
    return morsel.value if morsel is not None else None


def decode_cookie(value):
    return ck.decode_value(value)
