"""The second factor's pieces (webauth.mfa): TOTP codes, recovery codes, sealed keys, the settings.

The sign-in step that asks for them is tested in test_mfa_signin.py; the
adapter methods under them by the adapter suite (webauth.testing.extensions),
on every database.
"""

from __future__ import annotations

import re

import pyotp
import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from freezegun import freeze_time
from hypothesis import given
from hypothesis import strategies as st

from webauth.conf import build_config
from webauth.errors import MissingAdapter
from webauth.mfa import factors, recovery, totp
from webauth.models import RecoveryCode, SecondFactor

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
ADAPTER = "webauth.adapters.django.DjangoAdapter"
NOW = 1_900_000_000.0  # a time step boundary is every 30 s: 63,333,333 * 30 = 1,899,999,990


def config_with(**extra):
    return build_config(
        {"secret": SECRET, "adapter": ADAPTER, "providers": [], **extra}, {}.get, warn=False
    )


# -- TOTP codes --------------------------------------------------------------------------------


def test_a_code_matches_its_own_step_and_one_either_side():
    key = totp.new_key()
    app = pyotp.TOTP(key)
    step = int(NOW // 30)
    assert totp.matching_step(key, app.at(NOW), now=NOW) == step
    assert totp.matching_step(key, app.at(NOW - 30), now=NOW) == step - 1
    assert totp.matching_step(key, app.at(NOW + 30), now=NOW) == step + 1
    assert totp.matching_step(key, app.at(NOW - 60), now=NOW) is None
    assert totp.matching_step(key, app.at(NOW + 60), now=NOW) is None
    assert totp.matching_step(key, app.at(NOW - 30), now=NOW, skew=0) is None
    assert totp.matching_step(key, app.at(NOW + 30), now=NOW, skew=0) is None
    assert totp.matching_step(key, app.at(NOW + 60), now=NOW, skew=2) == step + 2


def test_a_code_is_six_digits_whatever_the_spacing():
    key = totp.new_key()
    code = pyotp.TOTP(key).at(NOW)
    assert totp.matching_step(key, f"{code[:3]} {code[3:]}", now=NOW) == int(NOW // 30)
    assert totp.matching_step(key, f"{code[:3]}-{code[3:]}", now=NOW) == int(NOW // 30)
    for not_a_code in (None, 123456, "", "12345", "1234567", "１２３４５６", "12a456"):
        assert totp.normalize_code(not_a_code) is None
        assert totp.matching_step(key, not_a_code, now=NOW) is None


def test_a_new_key_is_160_bits_of_base32():
    keys = {totp.new_key() for _ in range(20)}
    assert len(keys) == 20
    assert all(re.fullmatch(r"[A-Z2-7]{32}", key) for key in keys)


def test_the_provisioning_uri_and_its_qr_code():
    uri = totp.provisioning_uri(
        "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", account="ada@example.com", issuer="Example"
    )
    assert uri.startswith("otpauth://totp/Example:ada%40example.com?")
    assert "secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP" in uri and "issuer=Example" in uri
    svg = totp.qr_svg(uri, title="Scan me")
    assert svg.startswith("<svg") and "<title>Scan me</title>" in svg
    # Four pixels a module, and the quiet zone of four modules a camera needs.
    import segno

    side = segno.make(uri, error="m").symbol_size(scale=4, border=4)[0]
    assert f'width="{side}" height="{side}"' in svg
    assert "<script" not in svg and "<image" not in svg  # inline vector, no bitmap


# -- recovery codes ----------------------------------------------------------------------------


def test_recovery_codes_are_ten_distinct_groups_of_four():
    codes = recovery.new_codes()
    assert len(codes) == len(set(codes)) == 10
    assert all(re.fullmatch(r"([0-9a-hjkmnp-tv-z]{4}-){3}[0-9a-hjkmnp-tv-z]{4}", c) for c in codes)


def test_a_recovery_code_is_read_leniently():
    assert recovery.normalize(" 7K2M-QX9A 0OIL-ab12 ") == "7k2mqx9a0011ab12"
    for bad in (None, 7, "", "7k2m-qx9a-0000", "7k2m-qx9a-0000-000u", "x" * 65):
        assert recovery.normalize(bad) is None
    # At most 64 characters are read, spacing included.
    spaced = "7k2m-qx9a-0000-1111".ljust(64)
    assert recovery.normalize(spaced) == "7k2mqx9a00001111"
    assert recovery.normalize(spaced + " ") is None


@given(st.sampled_from(recovery.new_codes(50)))
def test_every_code_shown_reads_back_as_itself(code):
    assert recovery.normalize(code) == code.replace("-", "")
    assert recovery.normalize(code.upper().replace("-", " ")) == code.replace("-", "")


# -- a user's factors, through the adapter -----------------------------------------------------


@pytest.fixture
def ada(db):
    return get_user_model().objects.create_user("ada", "ada@example.com", "pw-1234567890")


def enrol(config, user, *, at=NOW):
    with freeze_time(_iso(at)):
        enrolment = factors.begin_totp(config, user.pk, account=user.email, issuer="Example")
        code = pyotp.TOTP(enrolment.key).at(at)
        assert factors.confirm_totp(config, user.pk, enrolment.factor.id, code)
    return enrolment


def _iso(at: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).isoformat()


def test_the_key_is_stored_sealed(ada):
    config = config_with()
    enrolment = factors.begin_totp(config, ada.pk, account="ada@example.com", issuer="Example")
    row = SecondFactor.objects.get(pk=enrolment.factor.id)
    assert enrolment.key not in row.secret and not row.confirmed
    assert factors.unseal(config, row.secret) == enrolment.key
    # Another secret opens nothing; a rotated list (new secret first) still opens it.
    assert factors.unseal(config_with(secret="another-secret-" + "x" * 32), row.secret) is None
    rotated = config_with(secret=["a-new-secret-" + "y" * 32, SECRET])
    assert factors.unseal(rotated, row.secret) == enrolment.key


def test_a_key_counts_only_after_a_right_code(ada):
    config = config_with()
    enrolment = factors.begin_totp(config, ada.pk, account="ada@example.com", issuer="Example")
    assert factors.confirmed_factors(config, ada.pk) == []
    with freeze_time(_iso(NOW)):
        assert not factors.confirm_totp(config, ada.pk, enrolment.factor.id, "000000")
        # A code from another key is as wrong.
        assert not factors.confirm_totp(
            config, ada.pk, enrolment.factor.id, pyotp.TOTP(totp.new_key()).at(NOW)
        )
        assert factors.check_code(config, ada.pk, pyotp.TOTP(enrolment.key).at(NOW)) is None
        assert factors.confirm_totp(
            config, ada.pk, enrolment.factor.id, pyotp.TOTP(enrolment.key).at(NOW)
        )
    [confirmed] = factors.confirmed_factors(config, ada.pk)
    assert confirmed.id == enrolment.factor.id


def test_a_code_passes_once(ada):
    config = config_with()
    enrolment = enrol(config, ada)
    app = pyotp.TOTP(enrolment.key)
    later = NOW + 60
    with freeze_time(_iso(later)):
        # The enrolment's own code was recorded: it does not sign in.
        assert factors.check_code(config, ada.pk, app.at(NOW)) is None
        assert factors.check_code(config, ada.pk, app.at(later)) == "totp"
        assert factors.check_code(config, ada.pk, app.at(later)) is None
        # A code of an earlier step, still inside the window, is refused too.
        assert factors.check_code(config, ada.pk, app.at(later - 30)) is None
    with freeze_time(_iso(later + 30)):
        assert factors.check_code(config, ada.pk, app.at(later + 30)) == "totp"


def test_recovery_codes_replace_each_other_and_pass_once(ada):
    config = config_with()
    first = factors.new_recovery_codes(config, ada.pk)
    assert factors.recovery_codes_left(config, ada.pk) == 10
    assert not any(
        code.replace("-", "") in h
        for code in first
        for h in RecoveryCode.objects.values_list("code_hash", flat=True)
    )
    assert factors.check_code(config, ada.pk, first[0].upper()) == "recovery_code"
    assert factors.check_code(config, ada.pk, first[0]) is None
    assert factors.recovery_codes_left(config, ada.pk) == 9
    second = factors.new_recovery_codes(config, ada.pk)
    assert factors.check_code(config, ada.pk, first[1]) is None
    assert factors.check_code(config, ada.pk, second[1]) == "recovery_code"


def test_codes_do_not_cross_users(ada):
    config = config_with()
    grace = get_user_model().objects.create_user("grace", "grace@example.com", "pw-0987654321")
    enrolment = enrol(config, ada)
    codes = factors.new_recovery_codes(config, ada.pk)
    with freeze_time(_iso(NOW + 60)):
        assert factors.check_code(config, grace.pk, pyotp.TOTP(enrolment.key).at(NOW + 60)) is None
    assert factors.check_code(config, grace.pk, codes[0]) is None
    assert not factors.remove_factor(config, grace.pk, enrolment.factor.id)
    assert factors.remove_factor(config, ada.pk, enrolment.factor.id)
    assert factors.confirmed_factors(config, ada.pk) == []


def test_without_an_adapter_a_second_factor_says_what_it_needs():
    config = build_config({"secret": SECRET, "providers": []}, {}.get, warn=False)
    with pytest.raises(MissingAdapter, match="A second factor requires an adapter"):
        factors.confirmed_factors(config, "1")


# -- the settings ------------------------------------------------------------------------------


def test_mfa_is_off_by_default_with_safe_defaults():
    mfa = config_with().mfa
    assert (mfa.enabled, mfa.skew, mfa.pending_max_age, mfa.attempts, mfa.issuer) == (
        False,
        1,
        300,
        5,
        None,
    )
    assert config_with().rate_limits.rules["mfa_failed"]


@pytest.mark.parametrize(
    ("mfa", "message"),
    [
        ({"skew": 3}, "mfa.skew"),
        ({"skew": -1}, "mfa.skew"),
        ({"pending_max_age": 10}, "mfa.pending_max_age"),
        ({"attempts": 0}, "mfa.attempts"),
        ({"attempts": True}, "mfa.attempts"),
        ({"enable": True}, "enabled"),  # the "did you mean" of an unknown key
        ("yes", "mfa"),
    ],
)
def test_mfa_settings_are_checked(mfa, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        config_with(mfa=mfa)


# -- the edges of webauth.mfa.factors (from the mutation runs) ----------------------------------


def test_a_sealed_key_is_a_token_of_its_own_salt_holding_text(ada):
    from webauth import jwt as jose

    config = config_with()

    def token(payload, salt="webauth.mfa.totp-key"):
        return jose.encode(token=payload, secret=[SECRET], salt=salt, max_age=3600)

    # The salt is part of the stored format: keys sealed by earlier versions must open.
    assert factors.unseal(config, token({"key": "JBSWY3DPEHPK3PXP"})) == "JBSWY3DPEHPK3PXP"
    assert (
        factors.unseal(config, token({"key": "JBSWY3DPEHPK3PXP"}, "authjs.session-token")) is None
    )
    assert factors.unseal(config, token({"key": 5})) is None
    assert factors.unseal(config, token({})) is None


def test_the_issuer_is_the_setting_else_the_host():
    assert factors.issuer_for(config_with(mfa={"issuer": "Acme"}), "example.com") == "Acme"
    assert factors.issuer_for(config_with(), "example.com") == "example.com"


def test_a_new_key_has_no_name_unless_given(ada):
    config = config_with()
    assert factors.begin_totp(config, ada.pk, account="a", issuer="x").factor.name == ""
    named = factors.begin_totp(config, ada.pk, account="a", issuer="x", name="Phone")
    assert named.factor.name == "Phone"


def _security_key(config, user, *, confirmed: bool):
    import json

    from webauth.types import SecondFactor as Record

    storage = factors.storage_of(config)
    sealed = factors.seal(config, json.dumps({"id": "aWQ", "key": "a2V5"}))
    stored = storage.create_second_factor(
        Record(id="", user_id=str(user.pk), kind="webauthn", secret=sealed)
    )
    if confirmed:
        assert storage.confirm_second_factor(str(user.pk), stored.id, 0)
    return stored


def test_the_key_being_added_is_an_unconfirmed_totp_key_never_another_factor(ada):
    config = config_with()
    confirmed = enrol(config, ada)
    _security_key(config, ada, confirmed=False)
    adding = factors.enrolment_for(config, ada.pk, account="a", issuer="x")
    # Not the confirmed app's key, not the security key: a new TOTP key.
    assert adding.key != confirmed.key and adding.factor.kind == "totp"
    assert adding.factor.id not in (confirmed.factor.id,)
    assert re.fullmatch(r"[A-Z2-7]{32}", adding.key)
    again = factors.enrolment_for(config, ada.pk, account="a", issuer="x")
    assert again.key == adding.key  # the same one, shown again


def test_confirming_looks_only_at_unconfirmed_totp_keys(ada):
    config = config_with()
    security_key = _security_key(config, ada, confirmed=False)
    # No TOTP key being added: nothing to confirm (the security key is not one).
    assert factors.confirm_enrolment(config, ada.pk, "123456") is False
    assert factors.confirm_totp(config, ada.pk, security_key.id, "123456") is False
    with freeze_time(_iso(NOW)):
        enrolment = factors.begin_totp(config, ada.pk, account="a", issuer="x")
        code = pyotp.TOTP(enrolment.key).at(NOW)
        assert factors.confirm_totp(config, ada.pk, "999999", code) is False  # not its id
        assert factors.confirm_enrolment(config, ada.pk, code) is True
        # Confirmed now: not again.
        assert factors.confirm_totp(config, ada.pk, enrolment.factor.id, code) is False


def test_a_key_whose_seal_does_not_open_confirms_and_proves_nothing(ada):
    config = config_with()
    storage = factors.storage_of(config)
    from webauth.types import SecondFactor as Record

    broken = storage.create_second_factor(
        Record(id="", user_id=str(ada.pk), kind="totp", secret="not sealed")
    )
    assert factors.confirm_totp(config, ada.pk, broken.id, "123456") is False
    assert storage.confirm_second_factor(str(ada.pk), broken.id, 1)
    assert factors.check_code(config, ada.pk, "123456") is None


def test_a_security_key_is_never_checked_as_a_totp_key(ada):
    config = config_with()
    _security_key(config, ada, confirmed=True)
    with freeze_time(_iso(NOW)):
        assert factors.check_code(config, ada.pk, "123456") is None


def test_what_is_not_a_code_proves_nothing_and_spends_nothing(ada):
    config = config_with()
    enrol(config, ada)
    factors.new_recovery_codes(config, ada.pk)
    for junk in ("", "not a code at all!", None, 42, "1234567"):
        assert factors.check_code(config, ada.pk, junk) is None
    assert factors.recovery_codes_left(config, ada.pk) == 10


def test_the_grace_runs_from_the_first_key_shown_and_only_with_grace_days(ada):
    from datetime import timedelta

    none = config_with()
    week = config_with(mfa={"enabled": True, "grace_days": 7})
    assert factors.grace_left(week, ada.pk) is None  # never shown a key: not started
    with freeze_time(_iso(NOW)):
        factors.begin_totp(week, ada.pk, account="a", issuer="x")
    assert factors.grace_left(none, ada.pk) is None  # no grace_days
    with freeze_time(_iso(NOW + 86400)):
        assert factors.grace_left(week, ada.pk) == timedelta(days=6)
    with freeze_time(_iso(NOW + 7 * 86400)):
        assert factors.grace_left(week, ada.pk) is None  # over at exactly its end
    # A confirmed key does not start (or keep) a grace.
    SecondFactor.objects.filter(user=ada).update(confirmed=True)
    with freeze_time(_iso(NOW + 86400)):
        assert factors.grace_left(week, ada.pk) is None


def test_a_reset_says_whether_there_was_anything_of_each_kind(ada):
    from datetime import UTC, datetime, timedelta

    from webauth.types import TrustedBrowser

    config = config_with(mfa={"enabled": True, "trust_days": 30})
    storage = factors.storage_of(config)
    assert factors.reset(config, ada) is False  # nothing at all
    factors.begin_totp(config, ada.pk, account="a", issuer="x")
    assert factors.reset(config, ada) is True  # a key (even unconfirmed)
    storage.replace_recovery_codes(str(ada.pk), ["a" * 64])
    assert factors.reset(config, ada) is True  # one recovery code
    storage.create_trusted_browser(
        TrustedBrowser(
            id="",
            user_id=str(ada.pk),
            token_hash="b" * 64,
            expires=datetime.now(UTC) + timedelta(days=1),
        )
    )
    assert factors.reset(config, ada.pk) is True  # a trusted browser (by id too)
    assert factors.reset(config, ada) is False


def test_a_reset_without_trusted_browsers_in_the_adapter_resets_the_rest(ada):
    from webauth.adapters.django import DjangoAdapter

    class NoTrust(DjangoAdapter):
        delete_trusted_browsers = None

    config = config_with(adapter=NoTrust())
    assert factors.reset(config, ada) is False
    enrol(config, ada)
    assert factors.reset(config, ada) is True
    assert not SecondFactor.objects.filter(user=ada).exists()


def test_a_wrong_code_proves_nothing_on_the_memory_adapter_too():
    from webauth.testing.memory import MemoryAdapter

    config = build_config(
        {
            "secret": SECRET,
            "adapter": MemoryAdapter(),
            "providers": [],
            "session": {"strategy": "jwt"},
        },
        {}.get,
        warn=False,
    )
    with freeze_time(_iso(NOW)):
        enrolment = factors.begin_totp(config, "u1", account="a", issuer="x")
        right = pyotp.TOTP(enrolment.key).at(NOW)
        assert factors.confirm_totp(config, "u1", enrolment.factor.id, right)
        wrong = "000000" if right != "000000" else "111111"
        assert factors.check_code(config, "u1", wrong) is None


def test_confirming_the_key_being_added_passes_over_a_confirmed_one(ada):
    config = config_with()
    enrol(config, ada, at=NOW - 300)  # an older, confirmed key
    with freeze_time(_iso(NOW)):
        adding = factors.begin_totp(config, ada.pk, account="a", issuer="x")
        assert factors.confirm_enrolment(config, ada.pk, pyotp.TOTP(adding.key).at(NOW)) is True
    assert len(factors.confirmed_factors(config, ada.pk)) == 2
