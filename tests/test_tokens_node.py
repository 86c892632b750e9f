"""webauth's access tokens checked by a service in another language: Node with jose.

tests/support/jose_verifier.mjs is the service docs/tokens.md describes: it
fetches the site's JWKS (jose's ``createRemoteJWKSet``), requires the issuer,
the audience and ``typ: at+jwt``, and follows the revocation feed. Against the
live server it must accept the site's tokens across a key rotation and refuse
an expired token, one for another audience, one signed by a key since removed,
one whose session the feed lists, and forged ones (``alg: none``, HS256 keyed
with the public key).

Needs Node.js and jose (``npm ci``, which ./scripts/test runs); without them the
test skips, saying so, and with ``WEBAUTH_REQUIRE_NODE`` set (CI) it fails.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client
from freezegun import freeze_time

from webauth.test import session_cookie_for
from webauth.tokens.keys import generate

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).parent / "support" / "jose_verifier.mjs"
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
API = "https://api.example.com"
COOKIE = "authjs.session-token"


def _node() -> str:
    node = shutil.which("node")
    missing = None
    if node is None:
        missing = "Node.js is not installed (Debian: apt-get install nodejs npm)"
    elif not (ROOT / "node_modules" / "jose" / "package.json").exists():
        missing = "jose is not installed: run `npm ci` at the repository root"
    if missing is not None:
        if os.environ.get("WEBAUTH_REQUIRE_NODE"):
            pytest.fail(f"{missing}; WEBAUTH_REQUIRE_NODE is set", pytrace=False)
        pytest.skip(missing)
    assert node is not None
    return node


@pytest.fixture
def site(settings, live_server):
    keys = {"new": generate("ES256", kid="2026-12"), "old": generate("EdDSA", kid="2026-11")}
    issuer = f"{live_server.url}/auth"

    def configure(*names):
        settings.WEBAUTH = {
            "secret": SECRET,
            "providers": ["webauth.providers.DjangoCredentials"],
            "tokens": {
                "keys": [keys[name].export(private_key=True) for name in names],
                "audiences": [API, "billing"],
                "issuer": issuer,
            },
        }

    configure("old")
    site.configure = configure
    site.url = live_server.url
    site.issuer = issuer
    site.keys = keys
    return site


@pytest.fixture
def service(site):
    node = _node()
    process = subprocess.Popen(
        [
            node,
            str(SCRIPT),
            site.issuer,
            API,
            f"{site.issuer}/.well-known/jwks.json",
            f"{site.issuer}/token/ended",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        if not line:
            pytest.fail(f"the Node verifier did not start: {process.stderr.read()}")
        port = json.loads(line)["port"]

        def ask(token):
            answer = requests.get(
                f"http://127.0.0.1:{port}/",
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
            return answer.status_code, answer.json()

        yield ask
    finally:
        process.terminate()
        process.communicate(timeout=10)  # and closes its pipes


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password="pw")


def browser_of(site, user):
    browser = requests.Session()
    _, value = session_cookie_for(user)
    browser.cookies.set(COOKIE, value)
    return browser


def mint(site, browser, audience=API):
    answer = browser.get(f"{site.url}/auth/token", params={"audience": audience}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_jose_verifies_across_a_rotation_and_refuses_what_it_must(site, service, alice):
    browser = browser_of(site, alice)
    first = mint(site, browser)
    status, body = service(first)
    assert (status, body["sub"]) == (200, str(alice.pk))

    # Rotation: the new key signs, the old one stays published.
    site.configure("new", "old")
    second = mint(site, browser)
    assert json.loads(base64.urlsafe_b64decode(second.split(".")[0] + "=="))["kid"] == "2026-12"
    assert service(second)[0] == 200
    assert service(first)[0] == 200  # signed by the old key, still published

    # The old key removed once its tokens could have expired: what it signed is refused.
    site.configure("new")
    assert service(first) == (401, {"error": "ERR_JWKS_NO_MATCHING_KEY"})
    assert service(second)[0] == 200

    # Another audience.
    billing = mint(site, browser, audience="billing")
    assert service(billing) == (401, {"error": "ERR_JWT_CLAIM_VALIDATION_FAILED"})

    # Expired: minted an hour ago (and past the 30 s the verifier allows for skew).
    with freeze_time(datetime.now(UTC) - timedelta(hours=1)):
        client = Client()
        client.cookies[COOKIE] = session_cookie_for(alice)[1]
        answer = client.get("/auth/token", {"audience": API})
        assert answer.status_code == 200, answer.content
        old = answer.json()["access_token"]
    assert service(old) == (401, {"error": "ERR_JWT_EXPIRED"})

    # Forged: no signature at all, and HS256 keyed with the published public key.
    _, payload, _ = second.split(".")
    none = (
        f"{b64(json.dumps({'alg': 'none', 'typ': 'at+jwt', 'kid': '2026-12'}).encode())}.{payload}."
    )
    assert service(none)[0] == 401
    public = site.keys["new"].export_to_pem().decode()
    hs_header = b64(json.dumps({"alg": "HS256", "typ": "at+jwt", "kid": "2026-12"}).encode())
    mac = hmac.new(public.encode(), f"{hs_header}.{payload}".encode(), hashlib.sha256).digest()
    assert service(f"{hs_header}.{payload}.{b64(mac)}")[0] == 401

    # Signed out: the feed lists the session, and its live token is refused.
    csrf = browser.get(f"{site.url}/auth/csrf", timeout=10).json()["csrfToken"]
    out = browser.post(
        f"{site.url}/auth/signout", data={"csrfToken": csrf}, allow_redirects=False, timeout=10
    )
    assert out.status_code == 302
    assert service(second) == (401, {"error": "SESSION_ENDED"})
    # Another session of the same user goes on.
    other = mint(site, browser_of(site, alice))
    assert service(other)[0] == 200
