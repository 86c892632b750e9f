"""Every lookup path reaches an account by address exactly when the canonical forms are equal.

Generated pairs of addresses (tests/support/addresses.py: case, full-width,
decomposed, punycode, Kelvin-sign spellings of one mailbox; dotless-i,
accented, Cyrillic and look-alike-domain spellings of another; invisible
characters) go through each path that looks a user up by address, on the
database the suite runs on (SQLite; PostgreSQL with WEBAUTH_TEST_POSTGRES=1;
MariaDB with WEBAUTH_TEST_MARIADB=1, whose collation takes "ä" for "a"):

* an email sign-in by code, in a browser and through the app route;
* a passkey registration of a new address;
* linking a provider account by its verified address (the real OpenID provider);
* the account center's change of address.

The base address's account is made by that path's own first sign-in, as it
would be in production; then the variant must reach that account if and only
if ``canonical_email(variant) == canonical_email(base)``. The message for the
variant must go to the variant's canonical form (whoever reads it owns the
account it opens). Before the canonical form, PostgreSQL's ``UPPER()`` took
the dotless i for an i and MariaDB's collation took ``gmäil`` for ``gmail``:
the look-alike reached the existing account.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.cache import cache
from django.db import transaction
from django.test import Client, RequestFactory
from hypothesis import HealthCheck, example, find, given, settings

from webauth import jwt as jose
from webauth.account.email import EmailChangeError, change_email, send_code
from webauth.identity import canonical_email, canonical_email_or_none
from webauth.models import Account
from webauth.providers import Email, Passkey
from webauth.providers.oauth import OIDC

from .support import idp as idp_module
from .support.addresses import MUTATIONS, OTHER, REFUSED, SAME, Pair, pairs
from .support.authenticator import SoftAuthenticator
from .support.helpers import csrf_pair
from .support.oidc_helpers import CLIENT_ID, CLIENT_SECRET, authorize, begin, callback, start_idp

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
ADAPTER = "webauth.adapters.django.DjangoAdapter"
ORIGIN = "http://testserver"

# The known look-alikes of the hostile review, on every database: each path
# meets them first, whatever Hypothesis draws after.
KNOWN = [
    Pair("alice@gmail.com", "alıce@gmail.com", "dotless i", OTHER),
    Pair("alice@gmail.com", "ALİCE@gmail.com", "dotted capital I", OTHER),
    Pair("alice@gmail.com", "alice@gmäil.com", "look-alike domain", OTHER),
    Pair("john@example.com", "jöhn@example.com", "accent added", OTHER),
    Pair("alice@gmail.com", "alice@gmаil.com", "look-alike domain", OTHER),
    Pair("dup@пример.рф", "dup@xn--e1afmkfd.xn--p1ai", "punycode or unicode domain", SAME),
    Pair("alice@gmail.com", "ＡＬＩＣＥ@GMAIL.COM", "full-width", SAME),
    Pair("kate@example.com", "\u212aate@example.com", "kelvin sign for k", SAME),
    Pair("alice@gmail.com", "ali\u200bce@gmail.com", "invisible character", REFUSED),
]


def _examples(test):
    for pair in KNOWN:
        test = example(pair)(test)
    return test


def lookup_settings(max_examples: int):
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,  # the same examples on every run: CI cannot be lucky or unlucky
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def reached(pair: Pair) -> bool:
    """Whether the rules say the variant reaches the base's account."""
    return canonical_email_or_none(pair.variant) == canonical_email(pair.base)


@contextmanager
def example_state():
    """One example's database writes, mail and rate-limit counters, undone afterwards."""
    mail.outbox.clear()
    cache.clear()
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def sub_of(response) -> str | None:
    morsel = response.cookies.get(SESSION)
    if morsel is None or not morsel.value:
        return None
    claims = jose.decode(token=morsel.value, secret=SECRET, salt=SESSION)
    return claims["sub"] if claims else None


def code_of(message) -> str:
    (code,) = re.findall(r"\b([0-9A-Z]{4}-[0-9A-Z]{4})\b", message.body)
    return code


@pytest.fixture
def site(settings, db):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "session": {"strategy": "jwt"},
        "bearer": True,
        "experimental": {"enable_webauthn": True},
        "providers": [Email(from_email="Example <no-reply@example.com>"), Passkey()],
        # The lookups are under test, not the limits (each example asks several times).
        "rate_limits": False,
    }


# -- email sign-in --------------------------------------------------------------------------------


def browser_email_sign_in(address: str) -> str | None:
    """Sign in by code in a fresh browser; the user id, or None when the address is refused."""
    browser = Client()
    sent = len(mail.outbox)
    asked = browser.post("/auth/signin/email", {"csrfToken": csrf_pair(browser), "email": address})
    if asked.status_code == 400:  # the sign-in page again, with the field's error
        assert "Enter a valid email address." in asked.content.decode()
        assert len(mail.outbox) == sent
        return None
    assert asked.status_code == 302 and "/auth/verify-request" in asked["Location"], asked
    message = mail.outbox[-1]
    assert message.to == [canonical_email(address)]
    response = browser.post(
        "/auth/callback/email", {"csrfToken": csrf_pair(browser), "code": code_of(message)}
    )
    assert response.status_code == 302, response.content
    return sub_of(response)


@lookup_settings(max_examples=40)
@given(pair=pairs())
@_examples
def test_email_sign_in_in_a_browser(site, pair):
    with example_state():
        owner = browser_email_sign_in(pair.base)
        assert owner is not None
        other = browser_email_sign_in(pair.variant)
        if pair.relation == REFUSED or canonical_email_or_none(pair.variant) is None:
            assert other is None
        else:
            assert (other == owner) is reached(pair), pair
            # One user has the variant's canonical form (compared in Python: MariaDB's
            # "=" would take the base's row for it too).
            address = canonical_email(pair.variant)
            holders = [str(u.pk) for u in get_user_model().objects.all() if u.email == address]
            assert holders == [other]


def app_email_sign_in(address: str) -> str | None:
    app = Client()
    asked = app.post(
        "/auth/app/signin/email", json.dumps({"email": address}), content_type="application/json"
    )
    if asked.status_code == 400:
        assert asked.json()["code"] == "invalid_email"
        return None
    assert asked.status_code == 200, asked.content
    message = mail.outbox[-1]
    assert message.to == [canonical_email(address)]
    body = {"email": address, "code": code_of(message), "binding": asked.json()["binding"]}
    response = app.post(
        "/auth/app/callback/email", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    claims = jose.decode(token=response.json()["sessionToken"], secret=SECRET, salt=SESSION)
    return claims["sub"]


@lookup_settings(max_examples=40)
@given(pair=pairs())
@_examples
def test_email_sign_in_through_the_app_route(site, pair):
    with example_state():
        owner = app_email_sign_in(pair.base)
        other = app_email_sign_in(pair.variant)
        if canonical_email_or_none(pair.variant) is None:
            assert other is None
        else:
            assert (other == owner) is reached(pair), pair


# -- passkey registration -------------------------------------------------------------------------


@lookup_settings(max_examples=40)
@given(pair=pairs())
@_examples
def test_passkey_registration_of_a_new_address(site, pair):
    with example_state():
        owner = browser_email_sign_in(pair.base)
        browser = Client()
        asked = browser.get(
            "/auth/webauthn-options/passkey", {"action": "register", "email": pair.variant}
        )
        if canonical_email_or_none(pair.variant) is None or reached(pair):
            # No address, or one that has an account: nothing to register (protocol 8.1).
            assert asked.status_code == 400 and asked.json() == {"error": "Invalid request"}
            return
        assert asked.status_code == 200, (pair, asked.content)
        options = asked.json()["options"]
        data = SoftAuthenticator().create(options, origin=ORIGIN)
        response = browser.post(
            "/auth/callback/passkey",
            {"action": "register", "data": json.dumps(data)},
            headers={"X-Auth-Return-Redirect": "1", "Accept": "application/json"},
        )
        assert response.status_code == 200, response.content
        new = sub_of(response)
        assert new is not None and new != owner
        assert get_user_model().objects.get(pk=new).email == canonical_email(pair.variant)


# -- the account center's change of address --------------------------------------------------------


@lookup_settings(max_examples=40)
@given(pair=pairs())
@_examples
def test_changing_the_address_to_one_another_user_has(site, pair):
    with example_state():
        owner = browser_email_sign_in(pair.base)
        xavier = get_user_model().objects.create_user("xavier", email="xavier@example.net")
        request = RequestFactory().post("/account/email/")
        request.user = xavier
        try:
            send_code(request, pair.variant)
        except EmailChangeError as exc:
            assert canonical_email_or_none(pair.variant) is None, (pair, str(exc))
            return
        message = mail.outbox[-1]
        assert message.to == [canonical_email(pair.variant)]
        try:
            change_email(request, pair.variant, code_of(message))
        except EmailChangeError as exc:
            assert reached(pair), (pair, str(exc))
            assert str(exc) == "Another account uses this email address."
        else:
            assert not reached(pair), pair
            xavier.refresh_from_db()
            assert xavier.email == canonical_email(pair.variant)
        assert get_user_model().objects.get(pk=owner).email == canonical_email(pair.base)


# -- linking a provider account by its verified address ------------------------------------------


@pytest.fixture
def oidc_site(settings, live_server):
    cache.clear()
    idp = start_idp(live_server)
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "session": {"strategy": "jwt"},
        "providers": [
            Email(from_email="Example <no-reply@example.com>"),
            OIDC(
                id="example",
                name="Example IdP",
                issuer=idp.issuer,
                client_id=CLIENT_ID,
                client_secret=CLIENT_SECRET,
                checks=("pkce", "nonce"),
                # The provider vouches for the address: an account with it is linked.
                allow_dangerous_email_account_linking=True,
            ),
        ],
        "rate_limits": False,
    }
    yield idp
    idp_module.EMAIL_CLAIMS.clear()


def _oidc_sign_in(idp, address: str) -> str | None:
    idp_module.EMAIL_CLAIMS[idp.user.get_username()] = address
    browser = Client()
    response = callback(browser, authorize(idp, begin(browser)))
    return sub_of(response)


@pytest.mark.django_db(transaction=True)
@lookup_settings(max_examples=20)
@given(pair=pairs())
@_examples
def test_linking_a_provider_account_by_its_verified_address(oidc_site, pair):
    idp = oidc_site
    mail.outbox.clear()
    try:
        owner = browser_email_sign_in(pair.base)
        linked = _oidc_sign_in(idp, pair.variant)
        accounts = Account.objects.filter(provider="example")
        (account,) = accounts
        if reached(pair):
            assert linked == owner and str(account.user_id) == owner, pair
        else:
            assert linked is not None and linked != owner, pair
            user = get_user_model().objects.get(pk=linked)
            assert (user.email or None) == canonical_email_or_none(pair.variant), pair
    finally:
        # Transactional: each example cleans up after itself (the IdP's user stays).
        get_user_model().objects.exclude(pk=idp.user.pk).delete()
        Account.objects.all().delete()


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_the_generator_makes_every_kind_of_spelling(mutation):
    # What the lookup tests draw from: every mutation can come out of pairs().
    found = find(
        pairs(),
        lambda pair: pair.mutation == mutation,
        settings=settings(max_examples=5000, database=None, derandomize=True, deadline=None),
    )
    assert found.relation == MUTATIONS[mutation][0]
