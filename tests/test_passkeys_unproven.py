"""Pre-account hijacking: a passkey registered under someone else's address.

Anyone may register a passkey with any address (Auth.js's flow asks for none
of it to be proven). The user made then is marked unproven; the first time the
address's owner proves it (an email sign-in, or a provider trusted to link by
email), every way in added before goes: the stranger's passkeys, accounts,
password and sessions. Users whose address was never in doubt keep theirs.
"""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from webauth.models import Account, Authenticator, Session, UnprovenEmail
from webauth.providers import Email, Passkey
from webauth.signals import user_updated
from webauth.test import force_sign_in

from .support.authenticator import SoftAuthenticator
from .test_flows_email import ask, confirm, last_mail
from .test_flows_webauthn import (
    ADAPTER,
    CHROME_LINUX,
    ORIGIN,
    SECRET,
    SESSION,
    answer,
    assert_refused,
    options_of,
    register,
    sign_in,
)

pytestmark = pytest.mark.django_db

VICTIM = "victim@example.com"


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": ADAPTER,
        "session": {"strategy": request.param},
        "experimental": {"enable_webauthn": True},
        "providers": [Passkey(), Email(from_email="Example <no-reply@example.com>")],
    }
    return request.param


def session_of(client) -> dict:
    response = client.get("/auth/session")
    assert response.status_code == 200
    return response.json() or {}


def owner_signs_in_by_email(client) -> None:
    assert ask(client, VICTIM).status_code == 302
    response = confirm(client, last_mail())
    assert response.status_code == 302, response.content
    assert session_of(client)["user"]["email"] == VICTIM


def test_the_owners_email_sign_in_takes_the_strangers_way_in(strategy, caplog):
    stranger, owner = Client(), Client()
    key = SoftAuthenticator()
    assert register(stranger, key, VICTIM).status_code == 200
    user = get_user_model().objects.get(email=VICTIM)
    assert UnprovenEmail.objects.filter(user=user).exists()
    assert session_of(stranger)["user"]["email"] == VICTIM
    if strategy == "database":
        assert Session.objects.filter(user=user).count() == 1

    with caplog.at_level(logging.WARNING, logger="webauth"):
        owner_signs_in_by_email(owner)

    # The same user, now the owner's: the stranger's passkey, account and
    # session are gone; the address is the way in.
    assert get_user_model().objects.filter(email=VICTIM).count() == 1
    assert not Authenticator.objects.filter(user=user).exists()
    assert list(Account.objects.filter(user=user).values_list("type", "provider")) == [
        ("email", "email")
    ]
    assert not UnprovenEmail.objects.filter(user=user).exists()
    assert session_of(stranger) == {}
    assert session_of(owner)["user"]["email"] == VICTIM
    if strategy == "database":
        assert Session.objects.filter(user=user).count() == 1  # the owner's
    assert "unproven-email-proven" in caplog.text
    assert VICTIM not in caplog.text

    # The stranger's passkey no longer signs anyone in.
    assert_refused(sign_in(Client(), key), unknown=True)


def test_the_owners_email_sign_in_sends_update_user_once(strategy):
    """Proving the address and dating its proof are one change to the user: one event."""
    assert register(Client(), SoftAuthenticator(), VICTIM).status_code == 200
    user = get_user_model().objects.get(email=VICTIM)
    events = []
    user_updated.connect(receiver := lambda **kw: events.append(kw))
    try:
        owner_signs_in_by_email(Client())
    finally:
        user_updated.disconnect(receiver)
    assert len(events) == 1, events
    [event] = events
    assert event["sender"] == "email"
    assert event["user"].id == str(user.pk)


def test_what_the_owner_adds_afterwards_stays(strategy):
    stranger, owner = Client(), Client()
    assert register(stranger, SoftAuthenticator(), VICTIM).status_code == 200
    owner_signs_in_by_email(owner)
    mine = SoftAuthenticator()
    options = options_of(owner, action="register")
    data = mine.create(options, origin=ORIGIN)
    assert answer(owner, "register", data, HTTP_USER_AGENT=CHROME_LINUX).status_code == 200
    user = get_user_model().objects.get(email=VICTIM)
    assert Authenticator.objects.filter(user=user).count() == 1

    owner_signs_in_by_email(Client())
    assert Authenticator.objects.filter(user=user).count() == 1
    later = Client()
    assert sign_in(later, mine).status_code == 200
    assert session_of(later)["user"]["email"] == VICTIM


def test_a_user_whose_address_was_never_in_doubt_keeps_its_passkeys(strategy):
    user = get_user_model().objects.create_user("ida", email=VICTIM)
    client = Client()
    force_sign_in(client, user)
    options = options_of(client, action="register")
    data = SoftAuthenticator().create(options, origin=ORIGIN)
    assert answer(client, "register", data, HTTP_USER_AGENT=CHROME_LINUX).status_code == 200
    assert not UnprovenEmail.objects.exists()

    owner_signs_in_by_email(Client())
    assert Authenticator.objects.filter(user=user).count() == 1
    assert session_of(client)["user"]["email"] == VICTIM


def test_the_stranger_signing_in_by_email_is_not_possible_without_the_mail(strategy):
    # The mark stays until the address is proven: the stranger's own sessions
    # and further passkeys do not remove it.
    stranger = Client()
    assert register(stranger, SoftAuthenticator(), VICTIM).status_code == 200
    options = options_of(stranger, action="register")
    data = SoftAuthenticator().create(options, origin=ORIGIN)
    assert answer(stranger, "register", data, HTTP_USER_AGENT=CHROME_LINUX).status_code == 200
    user = get_user_model().objects.get(email=VICTIM)
    assert Authenticator.objects.filter(user=user).count() == 2
    assert UnprovenEmail.objects.filter(user=user).exists()
    owner_signs_in_by_email(Client())
    assert not Authenticator.objects.filter(user=user).exists()


@pytest.mark.parametrize("strategy", ["jwt"], indirect=True)
def test_the_jwt_of_the_stranger_ends_with_the_password_hash(strategy):
    # The database strategy's rows are deleted (the first test); a JWT cannot
    # be: the user's new unusable password changes the session auth hash.
    stranger = Client()
    assert register(stranger, SoftAuthenticator(), VICTIM).status_code == 200
    token = stranger.cookies[SESSION].value
    user = get_user_model().objects.get(email=VICTIM)
    before = user.password
    owner_signs_in_by_email(Client())
    user.refresh_from_db()
    assert user.password != before and not user.has_usable_password()
    replay = Client()
    replay.cookies[SESSION] = token
    assert session_of(replay) == {}
