"""The ``second_factor`` event, and the admin's view and reset of a user's second factors."""

from __future__ import annotations

import time

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from freezegun import freeze_time

from webauth.conf import get_config
from webauth.mfa import factors
from webauth.models import SecondFactor
from webauth.signals import second_factor
from webauth.test import force_sign_in

from .support.helpers import csrf_pair
from .support.mfa import at

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
NOW = float(int(time.time()))

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _now():
    """NOW is each test's own start: set at import, a long suite would reach the module
    minutes later, and keys confirmed at the real time would outrun codes made for it."""
    global NOW
    NOW = float(int(time.time()))


@pytest.fixture
def site(settings):
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": ["webauth.providers.DjangoCredentials"],
        "mfa": {"enabled": True},
    }


@pytest.fixture
def heard():
    """What the ``second_factor`` signal carried: ``(action, username, by)``."""
    got: list[tuple[str, str, str | None]] = []

    def receiver(sender, user, action, request, by=None, **kwargs):
        assert sender is None and "code" not in kwargs and "key" not in kwargs
        got.append((action, user.get_username(), by.get_username() if by else None))

    second_factor.connect(receiver)
    yield got
    second_factor.disconnect(receiver)


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", PASSWORD)


def test_each_change_is_announced(site, ada, heard):
    client = Client()
    with freeze_time(at(NOW)):
        force_sign_in(client, ada)
        adding = client.post("/account/security/", {"op": "begin"})
        factor = adding.context["adding"]["factor"]
        key = adding.context["adding"]["key"].replace(" ", "")
        client.post(
            "/account/security/", {"op": "confirm", "factor": factor, "code": pyotp.TOTP(key).now()}
        )
        client.post("/account/security/", {"op": "codes"})
    assert heard == [("added", "ada", None), ("recovery_codes", "ada", None)]

    codes = factors.new_recovery_codes(get_config(), ada.pk)
    heard.clear()
    with freeze_time(at(NOW + 60)):
        signing_in = Client()
        signing_in.post(
            "/auth/callback/credentials",
            {"csrfToken": csrf_pair(signing_in), "username": "ada", "password": PASSWORD},
        )
        signing_in.post("/auth/mfa", {"csrfToken": csrf_pair(signing_in), "code": "not-a-code"})
        signing_in.post("/auth/mfa", {"csrfToken": csrf_pair(signing_in), "code": codes[0]})
    assert heard == [("failed", "ada", None), ("recovery_code_used", "ada", None)]

    heard.clear()
    with freeze_time(at(NOW + 90)):
        client.post("/account/security/", {"op": "remove", "factor": factor})
    assert heard == [("removed", "ada", None)]


def test_the_admin_shows_the_factors_and_resets_them(site, ada, heard, admin_client, admin_user):
    config = get_config()
    enrolment = factors.begin_totp(config, ada.pk, account=ada.email, issuer="Example")
    assert factors.confirm_totp(
        config, ada.pk, enrolment.factor.id, pyotp.TOTP(enrolment.key).now()
    )
    factors.new_recovery_codes(config, ada.pk)
    page = admin_client.get(reverse("admin:auth_user_change", args=[ada.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Second factors" in html and "authenticator app" in html
    assert SecondFactor.objects.get().secret not in html  # the sealed key is never shown

    done = admin_client.post(
        reverse("admin:auth_user_changelist"),
        {"action": "reset_second_factors", "_selected_action": [ada.pk, admin_user.pk]},
        follow=True,
    )
    assert "The two-step verification of 1 user was reset." in done.content.decode()
    assert factors.confirmed_factors(config, ada.pk) == []
    assert factors.recovery_codes_left(config, ada.pk) == 0
    assert heard == [("reset", "ada", admin_user.get_username())]


def test_the_owner_is_told_by_email_of_an_addition_a_removal_and_a_reset(
    site, ada, admin_client, settings, mailoutbox
):
    client = Client()
    with freeze_time(at(NOW)):
        force_sign_in(client, ada)
        adding = client.post("/account/security/", {"op": "begin"})
        factor = adding.context["adding"]["factor"]
        key = adding.context["adding"]["key"].replace(" ", "")
        client.post(
            "/account/security/", {"op": "confirm", "factor": factor, "code": pyotp.TOTP(key).now()}
        )
        client.post("/account/security/", {"op": "codes"})  # not a change to be told of
        client.post("/account/security/", {"op": "remove", "factor": factor})
    assert [m.to for m in mailoutbox] == [["ada@example.com"]] * 2
    added, removed = mailoutbox
    assert added.subject == "Two-step verification changed on testserver"
    assert "An authenticator app was added to your account on testserver." in added.body
    assert "was removed from your account" in removed.body
    assert key not in added.body and key not in added.alternatives[0][0]

    mailoutbox.clear()
    factors.new_recovery_codes(get_config(), ada.pk)
    admin_client.post(
        reverse("admin:auth_user_changelist"),
        {"action": "reset_second_factors", "_selected_action": [ada.pk]},
    )
    [reset] = mailoutbox
    assert "An administrator of testserver reset the two-step verification" in reset.body

    settings.WEBAUTH = {**settings.WEBAUTH, "mfa": {"enabled": True, "notify": False}}
    mailoutbox.clear()
    factors.new_recovery_codes(get_config(), ada.pk)
    admin_client.post(
        reverse("admin:auth_user_changelist"),
        {"action": "reset_second_factors", "_selected_action": [ada.pk]},
    )
    assert mailoutbox == []
