"""Shared helpers for the test-suite."""

import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import requests

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


def wait_until_serving(base, server, log_path, *, timeout=60):
    """Wait until the server process *server* answers ``GET <base>/auth/csrf`` with 200.

    Fails with the server's log (*log_path*) when it exits or does not answer in
    *timeout* seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(f"{base}/auth/csrf", timeout=10).status_code == 200:
                return
        except requests.RequestException:
            pass
        if server.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{base} did not start:\n" + Path(log_path).read_text())
        time.sleep(0.1)


def tampered(value: str) -> str:
    """*value* with one character in the middle of its longest segment replaced.

    Always a different string, and one whose decoded bytes differ too: the
    middle of a base64url segment (never its last character, whose low bits
    may be padding a decoder ignores) gets another letter of the alphabet.
    Replacing the last characters with a constant ("...AA") is no tamper about
    once in 4,096 runs, when they were that constant already.
    """
    parts = value.split(".")
    index = max(range(len(parts)), key=lambda i: len(parts[i]))
    segment = parts[index]
    if len(segment) < 3:
        raise ValueError("nothing to tamper with in so short a value")
    middle = len(segment) // 2
    replacement = "A" if segment[middle] != "A" else "B"
    parts[index] = segment[:middle] + replacement + segment[middle + 1 :]
    changed = ".".join(parts)
    assert changed != value
    return changed
