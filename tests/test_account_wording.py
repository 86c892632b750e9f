"""What the account center says, for each user's situation: only what is true for them.

* The last way in: the connections page says a connection cannot be disconnected
  only when it *is* the user's one way in, and suggests only what they can add
  here (a passkey where the site offers them, another connection where one is
  left); the passkeys page likewise for a passkey.
* Counts: zero has its own sentence ("No passkeys yet."), others are plurals.
* "sign-in link", hyphenated, on the check-your-email page.
* Renaming a passkey: the field is closed until "Rename" opens it (a
  ``<details>``, no JavaScript).
"""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from webauth.models import Account, Authenticator
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.catalog.github import GitHub
from webauth.providers.catalog.gitlab import GitLab
from webauth.test import force_sign_in

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"

pytestmark = pytest.mark.django_db

CONNECTION_IS_LAST = "This connection is your only way to sign in, so it cannot be disconnected."
PASSKEY_IS_LAST = "This passkey is your only way to sign in, so it cannot be removed."


def configure(settings, *, passkeys=True, oauth=("github",), strategy="database", mfa=False):
    providers = [DjangoCredentials(), Email(from_email="Example <no-reply@example.com>")]
    if passkeys:
        providers.append(Passkey())
    if "github" in oauth:
        providers.append(GitHub(client_id="gh", client_secret="s"))
    if "gitlab" in oauth:
        providers.append(GitLab(client_id="gl", client_secret="s"))
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": strategy},
        "experimental": {"enable_webauthn": True},
        "mfa": {"enabled": mfa},
        "providers": providers,
    }


@pytest.fixture
def site(settings):
    configure(settings)
    return settings


def person(username, *, password=False, github=0, passkeys=0):
    users = get_user_model().objects
    user = (
        users.create_user(username, email=f"{username}@example.com", password=PASSWORD)
        if password
        else users.create_user(username, email=f"{username}@example.com")
    )
    for n in range(github):
        Account.objects.create(
            user=user, type="oauth", provider="github", provider_account_id=f"{username}-{n}"
        )
    for n in range(passkeys):
        Authenticator.objects.create(
            user=user,
            credential_id=f"{username}-key-{n}",
            provider_account_id=f"{username}-key-{n}",
            credential_public_key="unused",
            credential_device_type="multiDevice",
            credential_backed_up=True,
            backup_eligible=True,
            name=f"Key {n}",
        )
    return user


def page_of(user, path):
    client = Client()
    force_sign_in(client, user)
    response = client.get(path)
    assert response.status_code == 200, response
    return unescape(response.content.decode())


def hint(html, element_id):
    found = re.search(rf'<p class="webauth-hint" id="{element_id}">([^<]*)</p>', html)
    return found.group(1) if found else None


# -- connections: the last way in --------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "oauth", "passkeys", "expected"),
    [
        # The reported case: a password and no connection. Nothing to disconnect, nothing said.
        ({"password": True}, ("github",), True, None),
        # A connection and a password (or a passkey, or two connections): either may go.
        ({"password": True, "github": 1}, ("github",), True, None),
        ({"passkeys": 1, "github": 1}, ("github",), True, None),
        ({"github": 2}, ("github",), True, None),
        # A passkey only: the connections page has nothing of theirs to refuse.
        ({"passkeys": 1}, ("github",), True, None),
        # One connection and nothing else: it stays, and the page says what can be added.
        ({"github": 1}, ("github",), True, f"{CONNECTION_IS_LAST} Create a passkey first."),
        (
            {"github": 1},
            ("github", "gitlab"),
            True,
            f"{CONNECTION_IS_LAST} Create a passkey or connect another account first.",
        ),
        (
            {"github": 1},
            ("github", "gitlab"),
            False,
            f"{CONNECTION_IS_LAST} Connect another account first.",
        ),
        ({"github": 1}, ("github",), False, CONNECTION_IS_LAST),
    ],
)
def test_the_connections_page_says_only_what_is_true(settings, who, oauth, passkeys, expected):
    configure(settings, oauth=oauth, passkeys=passkeys)
    html = page_of(person("pat", **who), "/account/connections/")
    assert hint(html, "webauth-connections-last") == expected
    assert "Add a password" not in html  # the account center cannot set one
    disabled = re.findall(r'aria-label="Disconnect GitHub" disabled', html)
    assert bool(disabled) == (expected is not None)


def test_a_disconnection_refused_as_the_last_way_in_says_the_same(site):
    pat = person("pat", github=1)
    client = Client()
    force_sign_in(client, pat)
    client.post(
        "/account/connections/", {"op": "disconnect", "provider": "github", "account": "pat-0"}
    )
    html = unescape(client.get("/account/connections/").content.decode())
    assert f'role="alert">{CONNECTION_IS_LAST} Create a passkey first.</div>' in html
    assert Account.objects.filter(user=pat).count() == 1


# -- passkeys: the last way in -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "oauth", "expected"),
    [
        (
            {"passkeys": 1},
            ("github",),
            f"{PASSKEY_IS_LAST} Create another passkey or connect an account first.",
        ),
        ({"passkeys": 1}, (), f"{PASSKEY_IS_LAST} Create another passkey first."),
        # GitHub connected already and no other provider: only another passkey can be added...
        # but then the connection is a second way in, and nothing is said.
        ({"passkeys": 1, "github": 1}, ("github",), None),
        ({"passkeys": 1, "password": True}, ("github",), None),
        ({"passkeys": 2}, ("github",), None),
        ({"password": True}, ("github",), None),  # no passkey: nothing to remove
    ],
)
@pytest.mark.parametrize("path", ["/account/passkeys/", "/passkeys/"])
def test_the_passkeys_page_says_only_what_is_true(settings, who, oauth, expected, path):
    configure(settings, oauth=oauth)
    html = page_of(person("pat", **who), path)
    assert hint(html, "webauth-passkeys-last") == expected
    assert bool(re.search(r'aria-label="Remove Key 0" disabled', html)) == (expected is not None)


def test_a_passkey_that_can_no_longer_be_made_says_only_that_it_stays(settings):
    configure(settings, oauth=(), passkeys=False)  # the site has stopped offering passkeys
    html = page_of(person("pat", passkeys=1), "/account/passkeys/")
    assert hint(html, "webauth-passkeys-last") == PASSKEY_IS_LAST


def test_a_removal_refused_as_the_last_way_in_says_the_same(site):
    pat = person("pat", passkeys=1)
    client = Client()
    force_sign_in(client, pat)
    client.post("/account/passkeys/", {"op": "remove", "credential_id": "pat-key-0"})
    html = unescape(client.get("/account/passkeys/").content.decode())
    expected = f"{PASSKEY_IS_LAST} Create another passkey or connect an account first."
    assert f'role="alert">{expected}</div>' in html
    assert Authenticator.objects.filter(user=pat).exists()


# -- counts --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("github", "passkeys", "lines"),
    [
        (0, 0, ["No connected accounts yet.", "No passkeys yet."]),
        (1, 1, ["1 connected account.", "1 passkey."]),
        (2, 3, ["2 connected accounts.", "3 passkeys."]),
    ],
)
def test_the_overview_counts(site, github, passkeys, lines):
    html = page_of(person("pat", password=True, github=github, passkeys=passkeys), "/account/")
    for line in lines:
        assert f"<p>{line}</p>" in html
    assert not re.search(r"\b0 (connected|passkey)", html)


def test_the_overview_counts_sessions(site):
    pat = person("pat", password=True)
    for _ in range(2):
        client = Client()
        token = client.get("/auth/csrf").json()["csrfToken"]
        client.post(
            "/auth/callback/credentials",
            {"csrfToken": token, "username": "pat", "password": PASSWORD},
        )
    html = unescape(client.get("/account/").content.decode())
    assert "You are signed in on 2 devices." in html
    assert pat.pk


def test_no_recovery_codes_left_has_its_own_sentence(settings):
    from .support.mfa import at  # noqa: F401  (the second factor's test helpers)
    from .test_mfa_keys_unit import add

    configure(settings, mfa=True)
    pat = person("pat", password=True)
    add(pat)  # a security key: a first key comes with no recovery codes from this helper
    html = page_of(pat, "/account/security/")
    assert (
        "No recovery codes left: get new ones, in case you lose your authenticator app or"
        " security key." in html
    )
    assert "0 recovery codes" not in html


def test_signing_out_everywhere_with_no_other_session(site):
    person("pat", password=True)
    client = Client()
    token = client.get("/auth/csrf").json()["csrfToken"]
    client.post(
        "/auth/callback/credentials", {"csrfToken": token, "username": "pat", "password": PASSWORD}
    )
    client.get("/account/sessions/")
    answer = client.post("/account/sessions/", {"op": "everywhere"}, follow=True)
    html = unescape(answer.content.decode())
    assert "There were no other sessions to sign out." in html
    assert "0 other sessions" not in html


# -- "sign-in link" ------------------------------------------------------------------------------


def test_the_check_your_email_page_says_sign_in_link(site):
    html = Client().get("/auth/verify-request?provider=email&type=email").content.decode()
    assert "sign-in link" in html and "sign in link" not in html


# -- renaming a passkey ------------------------------------------------------------------------


def test_the_rename_field_is_closed_until_asked_for(site):
    html = page_of(person("pat", password=True, passkeys=2), "/account/passkeys/")
    rename = re.findall(r"<details[^>]*>.*?</details>", html, re.S)
    assert len(rename) == 2
    first = rename[0]
    assert first.startswith('<details class="webauth-passkey-rename">')  # not open
    assert re.search(r'<summary class="[^"]*" aria-label="Rename Key 0">Rename</summary>', first)
    assert '<label class="webauth-label" for="rename-1">New name</label>' in first
    assert '<input class="webauth-input" id="rename-1" name="name" value="Key 0"' in first
    assert '<button class="webauth-button" type="submit">Save</button>' in first
    # Removing stays outside it, one press away.
    assert "Remove Key 0" not in first and 'aria-label="Remove Key 0"' in html
