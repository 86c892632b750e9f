"""webauth.mfa.keys piece by piece: what is offered, what the options say, what is stored,
and each refusal of a registration or an assertion, with the reason logged.

The end-to-end journeys (the account center, /auth/mfa, the app route) are in
tests/test_mfa_keys.py; these call the module as those routes do.
"""

from __future__ import annotations

import json
import logging
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from freezegun import freeze_time

from webauth.adapters.django import DjangoAdapter
from webauth.conf import get_config
from webauth.errors import WebAuthnVerificationError
from webauth.flows.webauthn import MFA_HANDLE_PREFIX
from webauth.mfa import factors, keys
from webauth.mfa.pending import Pending
from webauth.providers import Passkey
from webauth.types import SecondFactor, WebAuthnChallenge

from .support.authenticator import GOOGLE_AAGUID, SoftAuthenticator, b64url, unb64url
from .support.mfa import at, mfa_settings, person

ORIGIN = "http://testserver"
NOW = float(int(time.time()))
UA = "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36"


@pytest.fixture(autouse=True)
def _now():
    """NOW is each test's own start: set at import, a long suite would reach the module
    minutes later, and keys confirmed at the real time would outrun codes made for it."""
    global NOW
    NOW = float(int(time.time()))


@pytest.fixture
def site(settings):
    settings.WEBAUTH = mfa_settings()
    return settings


@pytest.fixture
def ada(db, site):
    return person("ada")


def uid(user) -> str:
    return str(user.pk)


def add(user, authenticator=None, *, name="", user_agent=UA, **create):
    """Register a key for *user* as the account center does; (authenticator, factor)."""
    authenticator = authenticator or SoftAuthenticator(backup_eligible=False, backed_up=False)
    config = get_config()
    registration = keys.registration_options(config, uid(user), ORIGIN, user_name=user.email)
    answer = authenticator.create(registration.options, origin=ORIGIN, **{"uv": False, **create})
    named = {"name": name} if name else {}  # else register's own default
    factor = keys.register(
        config, uid(user), ORIGIN, answer, registration.binding, user_agent=user_agent, **named
    )
    return authenticator, factor


def held(user, handle="h" * 43) -> Pending:
    return Pending(
        client="browser",
        user_id=uid(user),
        user_dict={"id": uid(user)},
        provider_id="credentials",
        callback_url="/",
        handle=handle,
    )


def assert_refused(caplog, reason: str) -> None:
    assert any(reason in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]


# -- what is offered -------------------------------------------------------------------------


def test_keys_are_usable_only_with_mfa_on_and_an_adapter_that_stores_them(site):
    assert keys.usable(get_config()) and keys.offered(get_config())
    site.WEBAUTH = mfa_settings(mfa={"enabled": False})
    assert not keys.usable(get_config()) and not keys.offered(get_config())
    site.WEBAUTH = {k: v for k, v in mfa_settings().items() if k != "adapter"}
    assert not keys.usable(get_config())

    class NoChallenges(DjangoAdapter):
        create_webauthn_challenge = None

    site.WEBAUTH = mfa_settings(adapter=NoChallenges())
    assert not keys.usable(get_config()) and not keys.offered(get_config())
    site.WEBAUTH = mfa_settings(mfa={"enabled": True, "security_keys": False})
    assert keys.usable(get_config()) and not keys.offered(get_config())


def test_the_relying_party_is_the_passkey_providers_else_the_requests(site):
    assert (
        keys.relying_party(get_config(), "https://shop.example.com:8443").id == "shop.example.com"
    )
    site.WEBAUTH = mfa_settings(
        providers=[
            "webauth.providers.DjangoCredentials",
            Passkey(relying_party={"id": "example.com", "origins": ["https://app.example.com"]}),
        ],
        experimental={"enable_webauthn": True},
    )
    rp = keys.relying_party(get_config(), "https://shop.example.com")
    assert (rp.id, rp.origins) == ("example.com", ("https://app.example.com",))


# -- adding a key ------------------------------------------------------------------------------


def test_the_registration_options_say_who_and_for_how_long(ada):
    config = get_config()
    options = keys.registration_options(config, uid(ada), ORIGIN, user_name="ada@example.com")
    user = options.options["user"]
    assert (user["name"], user["displayName"]) == ("ada@example.com", "ada@example.com")
    assert options.options["timeout"] == 300_000
    assert options.options["rp"] == {"id": "testserver", "name": "testserver"}
    anonymous = keys.registration_options(config, uid(ada), ORIGIN, user_name="")
    assert (anonymous.options["user"]["name"], anonymous.options["user"]["displayName"]) == (
        "testserver",
        "testserver",
    )
    named = keys.registration_options(
        config, uid(ada), ORIGIN, user_name="ada", display_name="Ada Lovelace"
    )
    assert named.options["user"]["displayName"] == "Ada Lovelace"
    # Challenges of 32 random bytes, each under its own binding; a handle of 32
    # random bytes after the second factor's mark.
    assert len(unb64url(options.options["challenge"])) == 32
    assert len(options.binding) == 43 and options.binding != anonymous.binding
    assert len(unb64url(user["id"])) == len(MFA_HANDLE_PREFIX) + 32


def test_a_registered_key_is_returned_stored_and_keeps_its_transports(ada):
    _, factor = add(ada, name="  Blue key  ")
    assert factor.id and factor.kind == "webauthn" and factor.name == "Blue key"
    [key] = keys.user_keys(get_config(), uid(ada))
    assert key.factor.id == factor.id and key.factor.confirmed
    assert key.transports == ("hybrid", "internal")
    assert len(key.credential_id) == 32 and key.public_key


def test_a_key_is_named_after_the_authenticator_then_the_browser_then_nothing(ada):
    add(ada, SoftAuthenticator(aaguid=GOOGLE_AAGUID), user_agent=None)
    add(ada, user_agent=UA)
    add(ada, user_agent=None)
    add(ada, name="x" * 150)
    names = [f.name for f in factors.confirmed_factors(get_config(), uid(ada))]
    assert names == ["Google Password Manager", "Chrome on Linux", "", "x" * 100]


def test_a_key_whose_browser_names_no_transports_is_added_without_them(ada):
    authenticator = SoftAuthenticator()
    config = get_config()
    registration = keys.registration_options(config, uid(ada), ORIGIN, user_name="a")
    answer = authenticator.create(registration.options, origin=ORIGIN)
    del answer["response"]["transports"]
    keys.register(config, uid(ada), ORIGIN, answer, registration.binding)
    [key] = keys.user_keys(config, uid(ada))
    assert key.transports == ()


def test_a_name_is_cut_to_100_characters_before_the_adapter_sees_it(site, db):
    from webauth.testing.memory import MemoryAdapter

    memory = MemoryAdapter()
    site.WEBAUTH = mfa_settings(adapter=memory, session={"strategy": "jwt"})
    config = get_config()
    registration = keys.registration_options(config, "u1", ORIGIN, user_name="a")
    answer = SoftAuthenticator().create(registration.options, origin=ORIGIN)
    keys.register(config, "u1", ORIGIN, answer, registration.binding, name="y" * 150)
    [stored] = memory.second_factors.values()
    assert stored.name == "y" * 100


def test_a_registration_without_a_binding_or_of_an_expired_challenge_is_refused(ada):
    config = get_config()
    authenticator = SoftAuthenticator()
    for binding in (None, "", 42):
        registration = keys.registration_options(config, uid(ada), ORIGIN, user_name="a")
        answer = authenticator.create(registration.options, origin=ORIGIN)
        with pytest.raises(WebAuthnVerificationError, match="carries no binding"):
            keys.register(config, uid(ada), ORIGIN, answer, binding)
    with freeze_time(at(NOW)):
        registration = keys.registration_options(config, uid(ada), ORIGIN, user_name="a")
    answer = authenticator.create(registration.options, origin=ORIGIN)
    # Expired at exactly its 300 seconds: a challenge lives for less than that.
    with freeze_time(at(NOW + 300)), pytest.raises(WebAuthnVerificationError, match="expired"):
        keys.register(config, uid(ada), ORIGIN, answer, registration.binding)
    assert not factors.confirmed_factors(config, uid(ada))


def test_a_registration_py_webauthn_refuses_says_so(ada):
    config = get_config()
    registration = keys.registration_options(config, uid(ada), ORIGIN, user_name="a")
    answer = SoftAuthenticator().create(registration.options, origin="https://evil.example")
    with pytest.raises(
        WebAuthnVerificationError, match=r"^The security key's registration was refused"
    ) as refused:
        keys.register(config, uid(ada), ORIGIN, answer, registration.binding)
    assert not refused.value.user_caused  # an origin the site does not allow: its set-up


def test_a_challenge_whose_user_data_is_not_a_mapping_names_nobody(ada):
    config = get_config()
    challenge = b64url(b"c" * 32)
    config.storage.create_webauthn_challenge(
        WebAuthnChallenge(
            challenge=challenge,
            ceremony=keys.REGISTER,
            binding="b" * 43,
            user_data=[uid(ada)],
            expires=datetime.now(UTC) + timedelta(minutes=5),
        )
    )
    options = {"rp": {"id": "testserver"}, "user": {"id": b64url(b"u")}, "challenge": challenge}
    answer = SoftAuthenticator().create(options, origin=ORIGIN)
    with pytest.raises(WebAuthnVerificationError, match="another user"):
        keys.register(config, uid(ada), ORIGIN, answer, "b" * 43)


def test_a_key_the_adapter_cannot_confirm_is_not_added(ada, monkeypatch):
    monkeypatch.setattr(DjangoAdapter, "confirm_second_factor", lambda *args: False)
    with pytest.raises(WebAuthnVerificationError, match="could not be stored"):
        add(ada)
    # Nor left behind unconfirmed: its creation time would start a grace period.
    assert get_config().storage.list_second_factors(uid(ada)) == []


# -- the options of a held sign-in -------------------------------------------------------------


def test_the_assertion_options_list_the_keys_with_their_known_transports(ada, site):
    _, factor = add(ada)
    config = get_config()
    storage = factors.storage_of(config)
    sealed = factors.seal(
        config,
        json.dumps({"id": b64url(b"k" * 16), "key": b64url(b"p"), "transports": ["usb", "pigeon"]}),
    )
    other = storage.create_second_factor(
        SecondFactor(id="", user_id=uid(ada), kind=keys.KIND, secret=sealed)
    )
    storage.confirm_second_factor(uid(ada), other.id, 0)
    bare = factors.seal(config, json.dumps({"id": b64url(b"n" * 16), "key": b64url(b"p")}))
    plain = storage.create_second_factor(
        SecondFactor(id="", user_id=uid(ada), kind=keys.KIND, secret=bare)
    )
    storage.confirm_second_factor(uid(ada), plain.id, 0)
    # Not keys: an app's TOTP key, an unconfirmed key, one whose seal does not open.
    factors.begin_totp(config, uid(ada), account="ada", issuer="x")
    unconfirmed = factors.seal(config, json.dumps({"id": b64url(b"u" * 16), "key": b64url(b"p")}))
    storage.create_second_factor(
        SecondFactor(id="", user_id=uid(ada), kind=keys.KIND, secret=unconfirmed)
    )
    broken = storage.create_second_factor(
        SecondFactor(id="", user_id=uid(ada), kind=keys.KIND, secret="not sealed")
    )
    storage.confirm_second_factor(uid(ada), broken.id, 0)

    options = keys.assertion_options(config, held(ada), ORIGIN)
    assert options is not None and options["timeout"] == 300_000
    listed = {c["id"]: c.get("transports") for c in options["allowCredentials"]}
    (first,) = [k for k in keys.user_keys(config, uid(ada)) if k.factor.id == factor.id]
    assert listed == {
        b64url(first.credential_id): ["hybrid", "internal"],
        b64url(b"k" * 16): ["usb"],  # a transport WebAuthn does not know is left out
        b64url(b"n" * 16): None,
    }
    site.WEBAUTH = mfa_settings(mfa={"enabled": False})
    assert keys.assertion_options(get_config(), held(ada), ORIGIN) is None


# -- proving the second factor -----------------------------------------------------------------


def prove(user, authenticator, pending=None, **get):
    config = get_config()
    pending = pending or held(user)
    options = keys.assertion_options(config, pending, ORIGIN)
    assert options is not None
    answer = authenticator.get(options, origin=ORIGIN, **get)
    return keys.check_assertion(config, pending, ORIGIN, answer)


def test_an_assertion_is_checked_against_the_stored_count(ada):
    authenticator, _ = add(ada)
    assert prove(ada, authenticator, sign_count=5)
    assert factors.confirmed_factors(get_config(), uid(ada))[0].last_step == 5


def test_a_key_that_counted_and_now_says_zero_is_refused(ada, caplog):
    authenticator, _ = add(ada)
    assert prove(ada, authenticator, sign_count=5)
    assert not prove(ada, authenticator, sign_count=0)
    assert_refused(caplog, "[WebAuthnVerificationError] The security key's assertion was refused")
    assert factors.confirmed_factors(get_config(), uid(ada))[0].last_step == 5


def test_a_key_that_keeps_no_count_is_marked_used_each_time(ada):
    with freeze_time(at(NOW)):
        authenticator, _ = add(ada, SoftAuthenticator(counter_step=0))
    with freeze_time(at(NOW + 60)):
        assert prove(ada, authenticator)
    [factor] = factors.confirmed_factors(get_config(), uid(ada))
    assert factor.last_step == 0
    assert factor.last_used_at == datetime.fromtimestamp(NOW + 60, UTC)


def test_a_count_raised_meanwhile_by_a_racing_request_refuses_this_one(ada, monkeypatch, caplog):
    authenticator, _ = add(ada)
    config = get_config()
    stale = keys.user_keys(config, uid(ada))  # read before the other request's write
    assert prove(ada, authenticator, sign_count=2)
    monkeypatch.setattr(keys, "user_keys", lambda config, user_id: stale)
    # py_webauthn sees 0 -> 2 and passes; the adapter's conditional write refuses.
    assert not prove(ada, authenticator, sign_count=2)
    assert_refused(caplog, "signature counter did not go up")


def test_another_users_key_is_refused_and_the_reason_logged(ada, caplog):
    add(ada)
    bob = get_user_model().objects.create_user("bob", "bob@example.com", "pw")
    bobs, _ = add(bob)
    config = get_config()
    pending = held(ada)
    options = keys.assertion_options(config, pending, ORIGIN)
    assert options is not None
    answer = bobs.get({**options, "allowCredentials": []}, origin=ORIGIN)
    assert keys.check_assertion(config, pending, ORIGIN, answer) is False
    assert_refused(caplog, "is not one of the user's")


def test_nothing_is_checked_where_keys_cannot_be_used(ada, site):
    authenticator, _ = add(ada)
    config = get_config()
    pending = held(ada)
    options = keys.assertion_options(config, pending, ORIGIN)
    assert options is not None
    answer = authenticator.get(options, origin=ORIGIN)
    site.WEBAUTH = mfa_settings(mfa={"enabled": False})
    assert keys.check_assertion(get_config(), pending, ORIGIN, answer) is False
    site.WEBAUTH = mfa_settings()
    # The challenge was not spent by the refusal above.
    assert keys.check_assertion(get_config(), pending, ORIGIN, answer) is True


@pytest.fixture(autouse=True)
def _log_errors(caplog):
    caplog.set_level(logging.INFO, logger="webauth")
