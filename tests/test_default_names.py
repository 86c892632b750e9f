"""Default names of new passkeys and security keys are told apart from the user's others.

Two passkeys both called "Chrome on Linux" could not be told apart on the
passkeys page: a default name that the user has already gets the date it is
added ("Chrome on Linux (12/01/2026)", in the reader's short date format) and,
if that is taken too, a number. One helper, ``distinct_name``, for both.
"""

from __future__ import annotations

from datetime import date

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import translation
from freezegun import freeze_time

from webauth.conf import get_config
from webauth.mfa import factors
from webauth.models import Authenticator
from webauth.providers.webauthn import MAX_NAME_LENGTH, WebAuthn, distinct_name

from .support.authenticator import GOOGLE_AAGUID, SoftAuthenticator
from .test_flows_webauthn import register
from .test_mfa_keys_unit import add, uid

DAY = date(2026, 12, 1)


# -- the helper ----------------------------------------------------------------------------------


def test_a_name_nobody_has_is_kept():
    assert distinct_name("Chrome on Linux", [], DAY) == "Chrome on Linux"
    assert distinct_name("Chrome on Linux", ["Safari on iPhone", None, ""], DAY) == (
        "Chrome on Linux"
    )


def test_a_taken_name_gets_the_date_then_a_number():
    taken = ["Chrome on Linux"]
    assert distinct_name("Chrome on Linux", taken, DAY) == "Chrome on Linux (12/01/2026)"
    taken.append("Chrome on Linux (12/01/2026)")
    assert distinct_name("Chrome on Linux", taken, DAY) == "Chrome on Linux (12/01/2026, 2)"
    taken.append("Chrome on Linux (12/01/2026, 2)")
    assert distinct_name("Chrome on Linux", taken, DAY) == "Chrome on Linux (12/01/2026, 3)"


def test_names_are_compared_as_a_person_reads_them():
    assert distinct_name("Chrome on Linux", ["chrome  ON linux "], DAY) != "Chrome on Linux"


def test_the_date_is_in_the_readers_language():
    with translation.override("de"):
        assert distinct_name("Chrome unter Linux", ["Chrome unter Linux"], DAY) == (
            "Chrome unter Linux (01.12.2026)"
        )


@freeze_time("2031-03-04 10:00:00")
def test_the_date_is_today_by_default():
    assert distinct_name("Key", ["Key"]) == "Key (03/04/2031)"


def test_a_long_name_is_cut_never_its_date():
    long = "x" * 150
    named = distinct_name(long, ["x" * 150], DAY)
    assert len(named) == MAX_NAME_LENGTH and named.endswith(" (12/01/2026)")
    assert distinct_name(long, [], DAY) == "x" * MAX_NAME_LENGTH


# -- passkeys ------------------------------------------------------------------------------------


def test_the_provider_names_from_its_hook_aaguid_or_browser_then_tells_apart(settings):
    chrome = "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36"
    provider = WebAuthn()
    with freeze_time("2026-12-01 12:00:00"):
        assert provider.passkey_name(None, chrome) == "Chrome on Linux"
        assert provider.passkey_name(None, chrome, ["Chrome on Linux"]) == (
            "Chrome on Linux (12/01/2026)"
        )
        # An unnamed passkey shows as "Passkey": a new one with no better name is told apart.
        assert provider.passkey_name(None, None, [None]) == "Passkey (12/01/2026)"
        hooked = WebAuthn(passkey_name=lambda aaguid, agent: "Work laptop")
        assert hooked.passkey_name(None, chrome, ["Work laptop"]) == "Work laptop (12/01/2026)"


@pytest.fixture
def passkey_site(settings):
    settings.WEBAUTH = {
        "secret": "test-secret-0123456789abcdef0123456789abcdef",
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "experimental": {"enable_webauthn": True},
        "providers": ["webauth.providers.Passkey"],
    }
    return settings


@pytest.mark.django_db
@freeze_time("2026-12-01 12:00:00", tick=True)
def test_each_new_passkey_of_a_user_gets_a_name_of_its_own(passkey_site, client):
    for authenticator in (SoftAuthenticator(), SoftAuthenticator(), SoftAuthenticator()):
        email = "new@example.com" if not Authenticator.objects.exists() else None
        assert register(client, authenticator, email=email).status_code == 200
    names = list(Authenticator.objects.order_by("pk").values_list("name", flat=True))
    assert names == [
        "Chrome on Linux",
        "Chrome on Linux (12/01/2026)",
        "Chrome on Linux (12/01/2026, 2)",
    ]
    # Another user's passkeys are theirs: a new account's first one keeps the plain name.
    other = Client()
    assert register(other, SoftAuthenticator(), email="other@example.com").status_code == 200
    user = get_user_model().objects.get(email="other@example.com")
    assert Authenticator.objects.get(user=user).name == "Chrome on Linux"


# -- security keys -------------------------------------------------------------------------------


@pytest.fixture
def ada(db, settings):
    from .support.mfa import mfa_settings, person

    settings.WEBAUTH = mfa_settings()
    return person("ada")


@freeze_time("2026-12-01 12:00:00", tick=True)
def test_each_new_security_key_of_a_user_gets_a_name_of_its_own(ada):
    add(ada)
    add(ada)
    add(ada, SoftAuthenticator(aaguid=GOOGLE_AAGUID))
    add(ada, SoftAuthenticator(aaguid=GOOGLE_AAGUID))
    add(ada, name="Chrome on Linux")  # typed by the person: kept as typed
    add(ada, user_agent=None)  # no name to give: shown as "Security key"
    add(ada, user_agent=None)
    names = [f.name for f in factors.confirmed_factors(get_config(), uid(ada))]
    assert names == [
        "Chrome on Linux",
        "Chrome on Linux (12/01/2026)",
        "Google Password Manager",
        "Google Password Manager (12/01/2026)",
        "Chrome on Linux",
        "",
        "Security key (12/01/2026)",
    ]
