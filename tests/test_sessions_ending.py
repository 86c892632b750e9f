"""Unit tests of the session-ending helpers in ``webauth.sessions`` (issue 10).

The end-to-end behaviour is in ``test_session_end.py``; these pin the pieces the
mutation run of ``scripts/mutation_test.py sessions`` found unchecked: the
session auth hash and its cache, the comparison, the sign-in time claim, the
absolute deadline, and the debug line that says why a session ended.
"""

import asyncio
import logging

import pytest
from django.contrib.auth import base_user, get_user_model
from django.core.exceptions import SynchronousOnlyOperation

from webauth import sessions
from webauth.conf import build_config
from webauth.sessions import AUTH_HASH_CLAIM, AUTH_TIME_CLAIM, binding
from webauth.sessions import jwt as jwt_sessions

from .test_session_end import PASSWORD, deactivate, new_password, sign_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("una", "una@example.com", "pw-una-123")


@pytest.fixture
def hmac_calls(monkeypatch):
    calls = []
    real = base_user.salted_hmac

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(base_user, "salted_hmac", counting)
    binding._auth_hashes.clear()
    return calls


# -- session_auth_hash ----------------------------------------------------------------------


def test_a_django_users_hash_is_djangos_and_is_computed_once(user, hmac_calls):
    assert sessions.session_auth_hash(user) == user.get_session_auth_hash()
    del hmac_calls[:]
    assert sessions.session_auth_hash(user) == user.get_session_auth_hash()
    assert len(hmac_calls) == 1  # only the direct call above: the helper used its cache


def test_the_hash_cache_is_bounded(user, hmac_calls):
    binding._auth_hashes.update({(str(i), "key"): "v" for i in range(1024)})
    sessions.session_auth_hash(user)
    assert len(binding._auth_hashes) == 1


class Overriding:
    password = "hash-of-the-password"

    def __init__(self, value):
        self.value = value
        self.calls = 0

    def get_session_auth_hash(self):
        self.calls += 1
        return self.value


def test_an_overridden_method_is_always_called():
    thing = Overriding("custom")
    assert sessions.session_auth_hash(thing) == "custom"
    assert sessions.session_auth_hash(thing) == "custom"
    assert thing.calls == 2


@pytest.mark.parametrize("value", [None, "", 5, b"bytes"])
def test_an_unusable_hash_is_none(value):
    assert sessions.session_auth_hash(Overriding(value)) is None


def test_a_default_method_with_no_string_password_is_called_uncached(user, hmac_calls):
    user.password = None
    del hmac_calls[:]
    sessions.session_auth_hash(user)
    sessions.session_auth_hash(user)
    assert len(hmac_calls) == 2
    assert binding._auth_hashes == {}


def test_an_object_without_the_method_has_no_hash():
    assert sessions.session_auth_hash(object()) is None


# -- auth_hash_matches ------------------------------------------------------------------------


def test_the_hash_matches_only_as_a_string(user):
    good = user.get_session_auth_hash()
    assert sessions.auth_hash_matches(user, good) is True
    assert sessions.auth_hash_matches(user, good.encode()) is False
    assert sessions.auth_hash_matches(user, None) is False


def test_no_hash_matches_a_user_without_one():
    # constant_time_compare("None", None) would be true: the None check must come first.
    assert sessions.auth_hash_matches(object(), "None") is False


def test_fallback_keys_need_djangos_private_method(settings):
    settings.SECRET_KEY_FALLBACKS = ["an-old-secret-key-0123456789"]
    assert sessions.auth_hash_matches(Overriding("current"), "old") is False


def test_a_hash_made_with_a_fallback_key_matches(user, settings):
    old = user._get_session_auth_hash(secret="an-old-secret-key-0123456789")
    settings.SECRET_KEY_FALLBACKS = ["an-old-secret-key-0123456789"]
    binding._auth_hashes.clear()
    assert sessions.auth_hash_matches(user, old) is True


# -- the sign-in time and the deadline ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1_700_000_000, 1_700_000_000.0), (1.5, 1.5), (True, None), ("1", None), (None, None)],
)
def test_the_sign_in_time_claim(value, expected):
    assert binding.auth_time({AUTH_TIME_CLAIM: value}) == expected


def test_a_lifetime_past_the_deadline_is_zero():
    config = build_config(
        {"secret": "s" * 40, "session": {"absolute_max_age": 100}}, lambda name: None
    )
    max_age, expires = sessions.jwt_lifetime(config, {AUTH_TIME_CLAIM: 1000}, 1200.0)
    assert (max_age, expires) == (0, 1100)


def test_a_bound_token_without_sub_ends():
    config = build_config({"secret": "s" * 40}, lambda name: None)
    assert jwt_sessions._bound_user(config, {AUTH_HASH_CLAIM: "x"}) is False


def test_reading_a_bound_session_from_async_code_says_what_to_use(user):
    config = build_config({"secret": "s" * 40}, lambda name: None)
    token = {"sub": str(user.pk), AUTH_HASH_CLAIM: user.get_session_auth_hash()}

    async def read():
        return jwt_sessions._bound_user(config, token)

    with pytest.raises(SynchronousOnlyOperation, match="aget_session"):
        asyncio.run(read())


# -- why a session ended (the debug log) ----------------------------------------------------


@pytest.fixture
def debug_log(settings, caplog):
    settings.WEBAUTH = {**settings.WEBAUTH, "debug": True}
    caplog.set_level(logging.DEBUG, logger="webauth")
    return caplog


def _delete(user):
    user.delete()


# Deleting a user deletes its database sessions: that case exists under JWT only.
@pytest.mark.parametrize(
    ("strategy", "change", "reason"),
    [
        ("jwt", deactivate, "user inactive"),
        ("database", deactivate, "user inactive"),
        ("jwt", new_password, "password changed"),
        ("database", new_password, "password changed"),
        ("jwt", _delete, "user not found"),
    ],
)
def test_the_log_says_why_a_session_ended(client, settings, debug_log, strategy, change, reason):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": strategy},
    }
    alice = get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    sign_in(client)
    change(alice)
    debug_log.clear()
    assert client.get("/auth/session").json() is None
    ended = [r.getMessage() for r in debug_log.records if "SESSION_ENDED" in r.getMessage()]
    assert ended and f'"reason": "{reason}"' in ended[0], debug_log.text


def test_the_log_says_when_the_absolute_lifetime_ended_a_session(client, settings, debug_log):
    from freezegun import freeze_time

    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"absolute_max_age": 3600}}
    get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    with freeze_time("2030-01-01 12:00:00"):
        sign_in(client)
    with freeze_time("2030-01-01 13:00:00"):  # exactly at the deadline: over
        debug_log.clear()
        assert client.get("/auth/session").json() is None
    ended = [r.getMessage() for r in debug_log.records if "SESSION_ENDED" in r.getMessage()]
    assert ended and '"reason": "absolute_max_age"' in ended[0], debug_log.text


# -- a database session near its absolute deadline --------------------------------------------


def _db_settings(settings, **session):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database", **session},
    }


def test_a_database_session_capped_at_its_deadline_is_not_extended(client, settings):
    from freezegun import freeze_time

    from webauth.models import Session

    _db_settings(settings, absolute_max_age=3600)
    get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    with freeze_time("2030-01-01 12:00:00"):
        sign_in(client)
    (row,) = Session.objects.all()
    capped = row.expires
    with freeze_time("2030-01-01 12:30:00"):
        response = client.get("/auth/session")
    assert response.json() is not None
    row.refresh_from_db()
    assert row.expires == capped and row.updated_at == row.created_at  # not written again


def test_a_database_session_is_extended_up_to_its_deadline(client, settings):
    from datetime import UTC, datetime

    from freezegun import freeze_time

    from webauth.models import Session

    _db_settings(settings, absolute_max_age=10 * 86_400, max_age=86_400, update_age=0)
    get_user_model().objects.create_user("alice", "alice@example.com", PASSWORD)
    with freeze_time("2030-01-01 12:00:00"):
        sign_in(client)
    with freeze_time("2030-01-02 00:00:00"):
        assert client.get("/auth/session").json() is not None
    (row,) = Session.objects.all()
    assert row.expires == datetime(2030, 1, 3, 0, 0, tzinfo=UTC)
