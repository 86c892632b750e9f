"""50 simultaneous first sign-ins of one new address, by three methods: one user.

Each racer has finished its first factor for ``new@example.com`` before the
race, and all 50 send their last request at once through the live server (each
request in its own server thread with its own database connection):

* 20 passkey registrations of the address (20 authenticators, 20 challenges);
* 20 OpenID Connect callbacks of 20 different provider accounts whose
  verified address it is (the real OpenID provider; the provider is trusted to
  link by address);
* 10 redemptions of the one email code for it (the browser that asked, in 10 tabs).

Before any of them a user with the address does not exist. Whichever finishes
first creates it; every other one must find it (or be refused), never make a
second: the adapter checks for another user with the address and writes in one
step per address (an advisory lock on PostgreSQL, a named lock on MariaDB, the
single writer on SQLite). Runs on the suite's database: SQLite, PostgreSQL with
WEBAUTH_TEST_POSTGRES=1, MariaDB with WEBAUTH_TEST_MARIADB=1.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from urllib.parse import urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connection
from django.test import Client
from oauth2_provider.models import get_application_model

from webauth import jwt as jose
from webauth.models import Account
from webauth.providers import Email, Passkey
from webauth.providers.oauth import OIDC

from .support import idp as idp_module
from .support.authenticator import SoftAuthenticator
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET
from .test_email_concurrency import server  # noqa: F401 - the wide live server fixture

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
ADDRESS = "new@example.com"
PASSKEYS, PROVIDER_ACCOUNTS, EMAIL_TABS = 20, 20, 10
JSON = {"X-Auth-Return-Redirect": "1", "Accept": "application/json"}


@pytest.fixture
def sqlite_waits_longer():
    """On SQLite, connections opened during the test wait up to 60 s for the write lock.

    50 writers at once, and the OpenID provider's own writes on the same file,
    queue longer than the default 5 s; PostgreSQL and MariaDB need nothing.
    """
    options = connection.settings_dict.setdefault("OPTIONS", {})
    before = options.get("timeout")
    if connection.vendor == "sqlite":
        options["timeout"] = 60
    yield
    if before is None:
        options.pop("timeout", None)
    else:
        options["timeout"] = before


@pytest.fixture
def site(settings, server, sqlite_waits_longer):  # noqa: F811
    get_application_model().objects.create(
        name="webauth tests",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        client_type="confidential",
        authorization_grant_type="authorization-code",
        redirect_uris=f"{server.url}/auth/callback/example",
        algorithm="RS256",
        skip_authorization=True,
    )
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
        "experimental": {"enable_webauthn": True},
        "providers": [
            Email(from_email="Example <no-reply@example.com>"),
            Passkey(),
            OIDC(
                id="example",
                name="Example IdP",
                issuer=f"{server.url}/idp",
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
                checks=("pkce", "nonce"),
                allow_dangerous_email_account_linking=True,
            ),
        ],
        # The race is the adapter's to decide, not the limiter's.
        "rate_limits": False,
    }
    yield server
    idp_module.EMAIL_CLAIMS.clear()


def _csrf(browser: requests.Session, url: str) -> str:
    return browser.get(f"{url}/auth/csrf", timeout=30).json()["csrfToken"]


def _passkey_racer(url: str):
    """A browser that has answered a registration ceremony for the address: its last POST."""
    browser = requests.Session()
    asked = browser.get(
        f"{url}/auth/webauthn-options/passkey",
        params={"action": "register", "email": ADDRESS},
        timeout=30,
    )
    assert asked.status_code == 200, asked.text
    data = SoftAuthenticator().create(asked.json()["options"], origin=url)

    def last():
        return browser.post(
            f"{url}/auth/callback/passkey",
            data={"action": "register", "data": json.dumps(data)},
            headers=JSON,
            allow_redirects=False,
            timeout=120,
        )

    return "passkey", last


def _provider_racer(url: str, number: int):
    """A browser back from the provider with a code for its own account: its last GET."""
    username = f"racer-{number}"
    person = get_user_model().objects.create_user(username)
    idp_module.EMAIL_CLAIMS[username] = ADDRESS
    at_provider = requests.Session()
    logged_in = Client()
    logged_in.force_login(person)
    at_provider.cookies.set("sessionid", logged_in.cookies["sessionid"].value)
    browser = requests.Session()
    started = browser.post(
        f"{url}/auth/signin/example",
        data={"csrfToken": _csrf(browser, url), "callbackUrl": "/after/"},
        allow_redirects=False,
        timeout=30,
    )
    assert started.status_code == 302, started.text
    back = at_provider.get(started.headers["Location"], allow_redirects=False, timeout=30)
    assert back.status_code == 302, back.text[:500]
    callback = back.headers["Location"]
    assert urlsplit(callback).path == "/auth/callback/example"

    def last():
        return browser.get(callback, allow_redirects=False, timeout=120)

    return "provider", last


def _email_racers(url: str, count: int):
    """One browser that asked for a code, in *count* tabs: their POSTs of the code."""
    browser = requests.Session()
    csrf = _csrf(browser, url)
    asked = browser.post(
        f"{url}/auth/signin/email",
        data={"csrfToken": csrf, "email": ADDRESS},
        allow_redirects=False,
        timeout=30,
    )
    assert asked.status_code == 302 and "verify-request" in asked.headers["Location"]
    code = re.search(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", mail.outbox[-1].body).group()
    cookies = browser.cookies.get_dict()

    def tab():
        with requests.Session() as again:
            again.cookies.update(cookies)
            return again.post(
                f"{url}/auth/callback/email",
                data={"csrfToken": csrf, "code": code},
                allow_redirects=False,
                timeout=120,
            )

    return [("email", tab) for _ in range(count)]


def _signed_in_as(response) -> str | None:
    value = response.cookies.get(SESSION)
    if not value:
        return None
    claims = jose.decode(token=value, secret=SECRET, salt=SESSION)
    return claims["sub"] if claims else None


@pytest.mark.django_db(transaction=True)
def test_fifty_first_sign_ins_of_one_address_make_one_user(site):
    url = site.url
    racers = [_passkey_racer(url) for _ in range(PASSKEYS)]
    racers += [_provider_racer(url, i) for i in range(PROVIDER_ACCOUNTS)]
    racers += _email_racers(url, EMAIL_TABS)
    assert not [u for u in get_user_model().objects.all() if u.email == ADDRESS]

    start = threading.Barrier(len(racers))
    results: list[tuple[str, requests.Response] | None] = [None] * len(racers)

    def run(i: int) -> None:
        kind, last = racers[i]
        start.wait()
        results[i] = (kind, last())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(racers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert all(result is not None for result in results)
    outcomes = Counter((kind, r.status_code, _signed_in_as(r) is not None) for kind, r in results)
    assert not [o for o in outcomes if o[1] >= 500], outcomes

    # One user has the address (compared in Python: MariaDB's "=" ignores accents and case).
    holders = [u for u in get_user_model().objects.all() if u.email == ADDRESS]
    assert len(holders) == 1, outcomes
    (user,) = holders
    # Every session made in the race is that user's.
    signed_in = {_signed_in_as(r) for _kind, r in results} - {None}
    assert signed_in == {str(user.pk)}, outcomes
    # The one code was used once.
    assert sum(1 for kind, r in results if kind == "email" and _signed_in_as(r)) == 1, outcomes
    # Every provider account signed in to that user (linked by its verified address).
    # On SQLite the test provider's own token endpoint (django-oauth-toolkit, which
    # reads before it writes) is refused the file's write lock now and then; that
    # racer sees the error page of a failed token request, and nothing was stored.
    for kind, response in results:
        if kind != "provider" or _signed_in_as(response) == str(user.pk):
            continue
        assert connection.vendor == "sqlite", outcomes
        assert response.headers["Location"].endswith("/auth/error?error=Configuration")
    provider_accounts = Account.objects.filter(provider="example")
    assert {a.user_id for a in provider_accounts} <= {user.pk}
