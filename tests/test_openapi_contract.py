"""The OpenAPI description against the live server: schemathesis drives every operation.

schemathesis generates requests for each operation of the description as the
site serves it (fitted to its providers), valid ones and invalid ones (its
positive and negative modes, the description's examples, boundary values and
unexpected methods), against a site with every kind of provider (credentials,
email, a passkey provider and an OpenID provider, the suite's own on the live
server), the Django adapter, bearer sessions, sign-up with a password, the
password reset and access tokens on. Every answer must be no server error and must be described:
its status, its content type, its headers and its body. (The answers past an
email's code, and the bot challenge's: tests/test_openapi_passwords.py.)

Two things schemathesis cannot make are put into the generated requests, so
that they get past the first checks into the flows:

* where a cookie route's body has a ``csrfToken``, a real one, with its cookie
  (the client first asks ``GET /auth/csrf``, as a browser does);
* where an app route's request carries a bearer token, a real session token
  for half of them (chosen by the generated token itself, so that a run is
  replayed exactly); the other half keep the generated garbage.
"""

from __future__ import annotations

import os
import tempfile
import zlib
from dataclasses import dataclass

import pytest
import requests
import schemathesis
from django.contrib.auth import get_user_model
from django.core.cache import cache
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from webauth.conf import build_config, get_config
from webauth.openapi import description
from webauth.passwords import reset
from webauth.passwords import signup as signup_flow
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.oauth import OIDC
from webauth.test import session_cookie_for
from webauth.tokens.keys import generate

from .support.app_helpers import APP_REDIRECT, APP_SCHEME_REDIRECT, IOS_CLIENT_ID, register_ios_app
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, REDIRECT_URI, start_idp

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
#: Hypothesis keeps what it stores (the examples it found, replayed on the next
#: run, and its cache of the code's constants) in the system's temporary
#: directory, never in the working tree.
HYPOTHESIS_HOME = os.path.join(tempfile.gettempdir(), "webauth-hypothesis")
set_hypothesis_home_dir(HYPOTHESIS_HOME)
HYPOTHESIS_DATABASE = DirectoryBasedExampleDatabase(os.path.join(HYPOTHESIS_HOME, "examples"))
#: The access tokens' signing key (a new one each run: nothing depends on its value).
TOKEN_KEY = generate("ES256", kid="contract").export(private_key=True)


def webauth_settings(issuer: str) -> dict:
    return {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "bearer": True,
        "openapi": True,
        "app_redirect_uris": [APP_REDIRECT, APP_SCHEME_REDIRECT],
        "experimental": {"enable_webauthn": True},
        # Sign-up and the reset on, so that their routes answer as served, not 400 / 404.
        "passwords": {"signup": True, "reset": True},
        # Access tokens on, so that their routes and the JWKS answer as served.
        "tokens": {"keys": [TOKEN_KEY], "audiences": ["https://api.example.com"]},
        "providers": [
            DjangoCredentials(),
            Email(from_email="no-reply@example.com"),
            Passkey(),
            # The description's examples name an OAuth provider "google": here it
            # is the suite's OpenID provider, so that discovery and keys are real.
            OIDC(
                id="google",
                name="Google",
                issuer=issuer,
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
                checks=("pkce", "nonce"),
                app_client_ids=[IOS_CLIENT_ID],
            ),
        ],
    }


# The description as the site serves it, made before the live server exists (the
# issuer's address does not change it; the fixture checks the served one is the
# same). Not loaded from the live server: schemathesis's lazy loader
# (schemathesis.pytest.from_fixture) does not run under pytest 9, which dropped
# the Node._nodeid it sets.
schema = schemathesis.openapi.from_dict(
    description(build_config(webauth_settings("http://localhost/idp"), lambda name: None), "/auth")
)


@dataclass
class Site:
    base_url: str
    user: object


@pytest.fixture
def site(settings, live_server) -> Site:
    """The site under test, set up anew for each operation (its examples share it)."""
    cache.clear()
    idp = start_idp(live_server, redirect_uri=f"{REDIRECT_URI} {APP_REDIRECT}")
    register_ios_app(idp)
    settings.WEBAUTH = webauth_settings(idp.issuer)
    alice = get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )
    base_url = f"{live_server.url}/auth"
    served = requests.get(f"{base_url}/openapi.json", timeout=10).json()
    assert served == description(get_config(), base_url)
    assert served["paths"] == schema.raw_schema["paths"]
    return Site(base_url, alice)


def no_server_error(ctx, response, case):
    """schemathesis's ``not_a_server_error``, but for the page that reports one.

    ``GET /auth/error?error=Configuration`` is the page telling a user that the
    server is misconfigured, answered ``500`` as Auth.js answers it (the
    description says so); anything else at or above 500 is a failure.
    """
    if case.path == "/error" and (case.query or {}).get("error") == "Configuration":
        return None
    return not_a_server_error(ctx, response, case)


CHECKS = [
    no_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def _with_csrf(case, site: Site) -> requests.Session | None:
    """A client holding a CSRF cookie, its token put in the body, when the body has one."""
    if not isinstance(case.body, dict) or "csrfToken" not in case.body:
        return None
    client = requests.Session()
    answer = client.get(f"{site.base_url}/csrf", timeout=10)
    case.body["csrfToken"] = answer.json()["csrfToken"]
    return client


def _with_token(case, site: Site) -> None:
    """Half the generated bearer tokens replaced by a real one (a new session each)."""
    header = (case.headers or {}).get("Authorization")
    if not isinstance(header, str) or zlib.crc32(header.encode("utf-8", "surrogatepass")) % 2:
        return
    case.headers["Authorization"] = f"Bearer {session_cookie_for(site.user)[1]}"


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    # Where CI is set, Hypothesis loads its "ci" profile: derandomized, with no
    # example database (it refuses one given here, and a derandomized run has
    # nothing to replay). Elsewhere the database keeps what a run found.
    database=None if settings.default.derandomize else HYPOTHESIS_DATABASE,
    # One site per operation, shared by its examples (the live server's database
    # is emptied between operations).
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
    ],
)
def test_every_operation_answers_as_described(case, site):
    session = _with_csrf(case, site)
    _with_token(case, site)
    # Redirects are answers to check, not to follow.
    response = case.call(base_url=site.base_url, session=session, timeout=30, allow_redirects=False)
    _mail_sent()
    case.validate_response(response, checks=CHECKS)


def _mail_sent() -> None:
    """Wait for the sign-up and reset messages the request handed to their threads.

    Before the next example is drawn: building a message draws from the ``random``
    module (its Message-ID), which Hypothesis takes for a strategy that uses it.
    """
    signup_flow.wait_for_mail()
    assert reset.outbox.flush()
