"""Reading a session (webauth.sessions) under both strategies, without HTTP.

Every outcome of a read is checked: no session, a session, a session to clear,
what the callbacks see and return, what is re-issued and when the stored
expiry moves.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import SynchronousOnlyOperation
from django.utils.crypto import salted_hmac
from freezegun import freeze_time

from webauth import jwt as jose
from webauth.conf import build_config
from webauth.errors import JWTSessionError, SessionTokenError
from webauth.sessions import (
    AUTH_HASH_CLAIM,
    AUTH_TIME_CLAIM,
    SessionResult,
    auth_hash_matches,
    decode_token,
    default_session,
    iso_expires,
    read_database_session,
    read_jwt_session,
    read_session,
)
from webauth.testing.memory import MemoryAdapter
from webauth.types import AdapterSession, AdapterUser

from .support.helpers import tampered

SECRET = "session-reading-secret-0123456789abcdef"
SALT = "authjs.session-token"
NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
DAY = 86400


def make_config(errors: list | None = None, **raw: Any):
    logger = {"error": errors.append} if errors is not None else {}
    return build_config(
        {"secret": SECRET, "providers": [], "logger": logger, **raw}, lambda name: None
    )


def token(**claims: Any) -> str:
    return jose.encode(token=claims, secret=SECRET, salt=SALT)


CLAIMS = {"name": "Ada", "email": "ada@example.com", "picture": "https://img/ada", "sub": "7"}


# -- the JWT strategy -----------------------------------------------------------------------


def test_no_cookie_is_no_session_and_nothing_to_clear():
    for raw in (None, ""):
        result = read_jwt_session(make_config(), raw, SALT)
        assert result == SessionResult()
        assert result.clear is False and result.session is None and result.cookie is None


@freeze_time(NOW)
def test_a_valid_token_is_the_default_session_and_is_reissued():
    config = make_config(session={"max_age": 7 * DAY}, jwt={"max_age": 2 * DAY})
    result = read_jwt_session(config, token(**CLAIMS), SALT)
    expires = NOW + timedelta(days=7)
    assert result.session == {
        "user": {"name": "Ada", "email": "ada@example.com", "image": "https://img/ada"},
        "expires": "2026-03-11T05:06:07.000Z",
    }
    assert result.user_id == "7" and result.clear is False
    assert {k: result.token[k] for k in CLAIMS} == CLAIMS
    # The session's expiry comes from session.max_age, the token's from jwt.max_age.
    assert result.expires == expires
    reissued = jose.decode(token=result.cookie, secret=SECRET, salt=SALT)
    assert {k: reissued[k] for k in CLAIMS} == CLAIMS
    assert reissued["exp"] == int(NOW.timestamp()) + 2 * DAY


def test_without_reissue_no_cookie_is_made():
    result = read_jwt_session(make_config(), token(**CLAIMS), SALT, reissue=False)
    assert result.session["user"]["name"] == "Ada"
    assert result.cookie is None and result.expires is None


@pytest.mark.parametrize("raw", ["garbage", tampered(token(sub="1"))])
def test_a_bad_token_is_cleared_and_logged(raw):
    errors: list = []
    result = read_jwt_session(make_config(errors), raw, SALT)
    assert result.clear is True and result.session is None and result.cookie is None
    assert len(errors) == 1 and isinstance(errors[0], JWTSessionError)
    # The log says what happened, not some later TypeError.
    assert str(errors[0]).startswith("Invalid JWT") and not errors[0].cause
    assert errors[0].user_caused is True  # logged as a warning, not an error


def test_a_token_for_another_cookie_name_is_refused():
    assert read_jwt_session(make_config([]), token(sub="1"), "__Secure-" + SALT).clear is True


@pytest.mark.parametrize(
    ("claims", "user_id"), [({"sub": 42}, "42"), ({}, None), ({"sub": None}, None)]
)
def test_the_user_id_is_the_sub_as_a_string(claims, user_id):
    assert read_jwt_session(make_config(), token(**claims), SALT).user_id == user_id


def test_the_default_session_has_only_what_the_token_has():
    assert default_session({"sub": "1"}, "E") == {"user": {}, "expires": "E"}
    assert default_session({"email": "e", "picture": None}, "E") == {
        "user": {"email": "e", "image": None},
        "expires": "E",
    }
    assert default_session({"name": "n"}, "E")["user"] == {"name": "n"}


def test_the_jwt_callback_sees_the_token_and_its_result_is_the_session():
    seen = []

    def jwt(**params):
        seen.append(params)
        return {**params["token"], "name": "Changed", "role": "admin"}

    result = read_jwt_session(make_config(callbacks={"jwt": jwt}), token(**CLAIMS), SALT)
    assert seen[0]["session"] is None and "trigger" not in seen[0]
    assert seen[0]["token"]["sub"] == "7"
    assert result.token["role"] == "admin" and result.session["user"]["name"] == "Changed"
    assert jose.decode(token=result.cookie, secret=SECRET, salt=SALT)["role"] == "admin"


def test_an_update_tells_both_callbacks_what_the_client_sent():
    jwt_params, session_params = [], []

    def jwt(**params):
        jwt_params.append(params)
        return params["token"]

    def session(**params):
        session_params.append(params)
        return {**params["session"], "extra": params["token"]["sub"]}

    config = make_config(callbacks={"jwt": jwt, "session": session})
    result = read_jwt_session(
        config, token(**CLAIMS), SALT, trigger="update", new_session={"name": "N"}
    )
    assert jwt_params[0]["trigger"] == "update" and jwt_params[0]["session"] == {"name": "N"}
    assert session_params[0]["trigger"] == "update"
    assert session_params[0]["new_session"] == {"name": "N"}
    assert session_params[0]["token"]["sub"] == "7"
    assert result.session["extra"] == "7"
    # An update without a body passes None, not a sentinel.
    read_jwt_session(config, token(**CLAIMS), SALT, trigger="update")
    assert jwt_params[1]["session"] is None and session_params[1]["new_session"] is None
    # A plain read is no update.
    read_jwt_session(config, token(**CLAIMS), SALT)
    assert "trigger" not in jwt_params[2] and "trigger" not in session_params[2]


def test_a_jwt_callback_returning_none_ends_the_session():
    errors: list = []
    config = make_config(errors, callbacks={"jwt": lambda **p: None})
    result = read_jwt_session(config, token(**CLAIMS), SALT)
    assert result.clear is True and result.session is None and result.cookie is None
    assert errors == []  # the documented way to end a session: no error


def test_a_failing_callback_ends_the_session_and_is_logged():
    errors: list = []

    def session(**params):
        raise RuntimeError("boom")

    result = read_jwt_session(make_config(errors, callbacks={"session": session}), token(), SALT)
    assert result.clear is True and result.session is None
    assert isinstance(errors[0], JWTSessionError)
    assert isinstance(errors[0].cause["err"], RuntimeError)


def test_reading_from_async_code_is_a_usage_error_not_a_bad_token():
    def jwt(**params):
        raise SynchronousOnlyOperation("from async")

    with pytest.raises(SynchronousOnlyOperation):
        read_jwt_session(make_config(callbacks={"jwt": jwt}), token(), SALT)


def test_custom_decode_gets_the_secrets_and_salt():
    seen = []

    def decode(**params):
        seen.append(params)
        return {"sub": "9"} if params["token"] == "mine" else "not a mapping"

    config = make_config(jwt={"decode": decode})
    assert decode_token(config, "mine", SALT) == {"sub": "9"}
    assert seen[0] == {"token": "mine", "secret": [SECRET], "salt": SALT}
    assert decode_token(config, "other", SALT) is None
    assert read_jwt_session(config, "mine", SALT, reissue=False).user_id == "9"


def test_read_session_follows_the_strategy():
    read = read_session(make_config(), token(**CLAIMS), SALT)
    assert read.user_id == "7" and read.cookie is not None  # re-issued by default
    assert read_session(make_config(), token(**CLAIMS), SALT, reissue=False).cookie is None
    adapter = MemoryAdapter()
    config = make_config(adapter=adapter, session={"strategy": "database"})
    # A JWT is no session token of the database strategy.
    assert read_session(config, token(**CLAIMS), SALT).clear is True


def test_iso_expires_is_javascripts_to_iso_string():
    assert iso_expires(0) == "1970-01-01T00:00:00.000Z"
    assert iso_expires(1.9999996) == "1970-01-01T00:00:02.000Z"  # as fromtimestamp rounds
    assert iso_expires(1.9996) == "1970-01-01T00:00:01.999Z"
    assert iso_expires(1.25) == "1970-01-01T00:00:01.250Z"


# -- the database strategy ---------------------------------------------------------------------


@pytest.fixture
def adapter():
    store = MemoryAdapter()
    store.users["1"] = AdapterUser(id="1", name="Ada", email="ada@example.com", image="i")
    return store


def db_config(adapter, errors=None, **raw):
    return make_config(errors, adapter=adapter, session={"strategy": "database", **raw})


def add_session(adapter, expires: datetime, token: str = "tok", user_id: str = "1") -> None:
    adapter.sessions[token] = AdapterSession(session_token=token, user_id=user_id, expires=expires)


def test_no_session_token_is_no_session(adapter):
    for raw in (None, ""):
        assert read_database_session(db_config(adapter), raw) == SessionResult()


def test_an_unknown_token_is_cleared(adapter):
    result = read_database_session(db_config(adapter), "unknown")
    assert result.clear is True and result.session is None


@freeze_time(NOW)
@pytest.mark.parametrize(("offset", "alive"), [(0, False), (-1, False), (1, True)])
def test_an_expired_session_is_deleted(adapter, offset, alive):
    add_session(adapter, NOW + timedelta(seconds=offset))
    result = read_database_session(db_config(adapter), "tok")
    assert (result.session is not None) is alive
    assert result.clear is (not alive)
    assert ("tok" in adapter.sessions) is alive


@freeze_time(NOW)
def test_a_deactivated_users_session_ends(adapter):
    adapter.users["1"] = dataclasses.replace(
        adapter.users["1"], instance=SimpleNamespace(is_active=False)
    )
    add_session(adapter, NOW + timedelta(days=10))
    result = read_database_session(db_config(adapter), "tok")
    assert result.clear is True and result.session is None and "tok" not in adapter.sessions
    adapter.users["1"] = dataclasses.replace(
        adapter.users["1"], instance=SimpleNamespace(is_active=True)
    )
    add_session(adapter, NOW + timedelta(days=10))
    assert read_database_session(db_config(adapter), "tok").user_id == "1"
    # A user model without is_active (AbstractBaseUser has it; custom ones may not).
    adapter.users["1"] = dataclasses.replace(adapter.users["1"], instance=SimpleNamespace())
    assert read_database_session(db_config(adapter), "tok").user_id == "1"


class UserModel:
    """A user model that is no AbstractBaseUser: a session auth hash, no ``is_active``."""

    def get_session_auth_hash(self):
        return "hash-of-ada"


class InactiveUserModel(UserModel):
    is_active = False


@pytest.mark.parametrize(("model", "alive"), [(UserModel, True), (InactiveUserModel, False)])
def test_a_jwt_of_a_user_model_without_is_active_lives(adapter, model, alive):
    # Like Django's ModelBackend, only is_active=False is inactive (JWT twin of the above).
    adapter.users["1"] = dataclasses.replace(adapter.users["1"], instance=model())
    raw = token(sub="1", name="Ada", **{AUTH_HASH_CLAIM: "hash-of-ada"})
    result = read_jwt_session(make_config(adapter=adapter), raw, SALT)
    assert (result.session is not None, result.clear) == (alive, not alive)
    assert (result.user is adapter.users["1"]) is alive


@freeze_time(NOW)
def test_a_live_session_and_what_it_shows(adapter):
    stored = NOW + timedelta(days=29, hours=12)
    add_session(adapter, stored)
    result = read_database_session(db_config(adapter), "tok")
    assert result.session == {
        "user": {"name": "Ada", "email": "ada@example.com", "image": "i"},
        "expires": iso_expires(stored.timestamp()),
    }
    assert result.user_id == "1" and result.user.email == "ada@example.com"
    assert result.cookie == "tok" and result.clear is False
    assert result.expires == NOW + timedelta(days=30)


@freeze_time(NOW)
@pytest.mark.parametrize(
    ("left", "extended"),
    [
        (timedelta(days=29), True),  # exactly update_age (1 day) since the last extension
        (timedelta(days=29, seconds=1), False),
        (timedelta(days=29, seconds=-1), True),
        (timedelta(days=30), False),
        (timedelta(hours=1), True),
    ],
)
def test_the_expiry_moves_once_per_update_age(adapter, left, extended):
    add_session(adapter, NOW + left)
    result = read_database_session(db_config(adapter), "tok")
    assert result.extended is extended
    expected = NOW + timedelta(days=30) if extended else NOW + left
    assert adapter.sessions["tok"].expires == expected
    # The session shows the expiry as it was read.
    assert result.session["expires"] == iso_expires((NOW + left).timestamp())


@freeze_time(NOW)
def test_configured_max_age_and_update_age(adapter):
    config = db_config(adapter, max_age=2 * DAY, update_age=DAY // 2)
    add_session(adapter, NOW + timedelta(days=1, hours=12))  # 12 hours since the last write
    result = read_database_session(config, "tok")
    assert result.extended is True
    assert adapter.sessions["tok"].expires == NOW + timedelta(days=2)
    assert result.expires == NOW + timedelta(days=2)
    add_session(adapter, NOW + timedelta(days=1, hours=13))
    assert read_database_session(config, "tok").extended is False


@freeze_time(NOW)
def test_without_extend_nothing_is_written(adapter):
    add_session(adapter, NOW + timedelta(hours=1))
    result = read_database_session(db_config(adapter), "tok", extend=False)
    assert result.extended is False and adapter.sessions["tok"].expires == NOW + timedelta(hours=1)
    assert result.session is not None


@freeze_time(NOW)
def test_the_session_callback_and_updates(adapter):
    seen = []

    def session(**params):
        seen.append(params)
        return {"custom": params["user"].id}

    config = make_config(
        adapter=adapter, session={"strategy": "database"}, callbacks={"session": session}
    )
    add_session(adapter, NOW + timedelta(days=10))
    assert read_database_session(config, "tok").session == {"custom": "1"}
    assert "trigger" not in seen[0] and seen[0]["session"]["user"]["name"] == "Ada"
    read_database_session(config, "tok", trigger="update", new_session={"n": 1})
    assert seen[1]["trigger"] == "update" and seen[1]["new_session"] == {"n": 1}
    read_database_session(config, "tok", trigger="update")
    assert seen[2]["new_session"] is None


def test_a_failing_adapter_is_no_session_and_is_logged(adapter):
    errors: list = []

    class Broken(MemoryAdapter):
        async def get_session_and_user(self, session_token):
            raise RuntimeError("database down")

    result = read_database_session(db_config(Broken(), errors), "tok")
    # Not cleared: the session may be fine once the database is back.
    assert result == SessionResult()
    logged = [error for error in errors if isinstance(error, SessionTokenError)]
    assert len(logged) == 1 and isinstance(logged[0].cause["err"], Exception)


def test_a_session_error_raised_by_the_callback_is_logged_as_it_is(adapter):
    errors: list = []
    raised = SessionTokenError("the callback's own words")

    def session(**params):
        raise raised

    config = make_config(
        errors, adapter=adapter, session={"strategy": "database"}, callbacks={"session": session}
    )
    add_session(adapter, datetime.now(UTC) + timedelta(days=10))
    assert read_database_session(config, "tok") == SessionResult()
    assert errors == [raised]


def test_the_extension_names_the_sessions_user(adapter):
    updates = []

    class Recording(MemoryAdapter):
        async def update_session(self, session):
            updates.append(dict(session))
            return await super().update_session(session)

    store = Recording()
    store.users = adapter.users
    add_session(store, datetime.now(UTC) + timedelta(hours=1))
    read_database_session(db_config(store), "tok")
    assert [(u["session_token"], u["user_id"]) for u in updates] == [("tok", "1")]


def test_reading_a_database_session_from_async_code_is_a_usage_error(adapter):
    class AsyncOnly(MemoryAdapter):
        async def get_session_and_user(self, session_token):
            raise SynchronousOnlyOperation("from async")

    with pytest.raises(SynchronousOnlyOperation):
        read_database_session(db_config(AsyncOnly()), "tok")


def test_read_session_passes_updates_to_the_database_strategy(adapter):
    seen = []
    config = make_config(
        adapter=adapter,
        session={"strategy": "database"},
        callbacks={"session": lambda **p: seen.append(p) or p["session"]},
    )
    add_session(adapter, datetime.now(UTC) + timedelta(days=10))
    assert read_session(config, "tok", SALT, trigger="update", new_session={"x": 1}).user_id == "1"
    assert seen[0]["new_session"] == {"x": 1}


# -- what the mutation test of sessions.py found untested ---------------------------------------


class EmailBoundUser:
    """A user model whose session auth hash also covers its address (Django's overridden)."""

    password = "pbkdf2_sha256$1000000$salt$hash"

    def __init__(self, email: str) -> None:
        self.email = email

    def _get_session_auth_hash(self, secret=None):
        return salted_hmac(
            "tests.EmailBoundUser",
            f"{self.password}:{self.email}",
            secret=secret,
            algorithm="sha256",
        ).hexdigest()

    def get_session_auth_hash(self):
        return self._get_session_auth_hash()


def djangos_hash(password: str) -> str:
    return AbstractBaseUser._get_session_auth_hash(SimpleNamespace(password=password))


def test_a_user_models_own_session_hash_decides():
    user = EmailBoundUser("ada@example.com")
    own = user.get_session_auth_hash()
    assert auth_hash_matches(user, own)
    # Django's hash of the same password is not this model's.
    assert not auth_hash_matches(user, djangos_hash(user.password))
    # Only a str: the right hash as bytes, or no hash, is no match.
    assert not auth_hash_matches(user, own.encode())
    assert not auth_hash_matches(user, None)
    user.email = "eve@example.com"  # what the model hashes changed: its sessions end
    assert not auth_hash_matches(user, own)


def test_a_user_models_own_hash_survives_a_secret_key_rotation(settings):
    user = EmailBoundUser("ada@example.com")
    old_key = settings.SECRET_KEY
    own = user.get_session_auth_hash()
    settings.SECRET_KEY = "a-new-secret-key-for-the-rotation-0123456789"
    settings.SECRET_KEY_FALLBACKS = []
    assert not auth_hash_matches(user, own)
    settings.SECRET_KEY_FALLBACKS = ["an-unrelated-key-0123456789abcdef", old_key]
    assert auth_hash_matches(user, own)


@freeze_time(NOW)
def test_with_a_jwt_callback_a_token_from_before_absolute_max_age_starts_its_clock():
    config = make_config(
        session={"absolute_max_age": 30 * DAY}, callbacks={"jwt": lambda **p: p["token"]}
    )
    result = read_jwt_session(config, token(**CLAIMS), SALT)
    assert result.token[AUTH_TIME_CLAIM] == int(NOW.timestamp())
    reissued = jose.decode(token=result.cookie, secret=SECRET, salt=SALT)
    assert reissued[AUTH_TIME_CLAIM] == int(NOW.timestamp())


@freeze_time(NOW)
def test_valid_until_is_when_the_reissued_token_stops_working():
    config = make_config(session={"max_age": 7 * DAY}, jwt={"max_age": 2 * DAY})
    result = read_jwt_session(config, token(**CLAIMS), SALT)
    assert result.valid_until == NOW + timedelta(days=2)
    assert read_jwt_session(config, token(**CLAIMS), SALT, reissue=False).valid_until is None


@freeze_time(NOW)
@pytest.mark.parametrize(
    ("left", "extended"), [(timedelta(hours=1), True), (timedelta(days=29, seconds=1), False)]
)
def test_valid_until_of_a_database_session_is_its_stored_expiry(adapter, left, extended):
    add_session(adapter, NOW + left)
    result = read_database_session(db_config(adapter), "tok")
    assert result.extended is extended
    assert result.valid_until == (NOW + timedelta(days=30) if extended else NOW + left)


BOUND = {"sub": "1", "name": "Ada", AUTH_HASH_CLAIM: "hash-of-ada"}


def test_the_user_the_request_loaded_is_used_only_when_it_is_the_tokens(adapter):
    # User 1 (the token's) is inactive; user 2, whom the request loaded, is fine.
    adapter.users["1"] = dataclasses.replace(adapter.users["1"], instance=InactiveUserModel())
    other = AdapterUser(id="2", name="Bob", email="bob@example.com", instance=UserModel())
    result = read_jwt_session(make_config(adapter=adapter), token(**BOUND), SALT, known_user=other)
    assert result.clear is True and result.session is None


def test_the_tokens_own_loaded_user_is_not_loaded_again(adapter):
    known = AdapterUser(id="1", name="Ada", email="ada@example.com", instance=UserModel())
    del adapter.users["1"]  # a load would find nobody
    result = read_jwt_session(make_config(adapter=adapter), token(**BOUND), SALT, known_user=known)
    assert result.session is not None and result.user is known


def test_a_loaded_user_without_its_model_instance_is_loaded_again(adapter):
    adapter.users["1"] = dataclasses.replace(adapter.users["1"], instance=UserModel())
    known = AdapterUser(id="1", name="Ada", email="ada@example.com")  # no instance
    result = read_jwt_session(make_config(adapter=adapter), token(**BOUND), SALT, known_user=known)
    assert result.session is not None and result.user is adapter.users["1"]


class HidingAdapter(MemoryAdapter):
    """Overrides get_user (soft-deleted users are nobody) but inherits the lean check."""

    hidden: set = set()

    async def get_user(self, id):
        return None if id in self.hidden else await super().get_user(id)


def test_without_loading_an_overridden_get_user_is_not_skipped():
    adapter = HidingAdapter()
    adapter.hidden = {"1"}
    password = "pbkdf2_sha256$1000000$salt$hash"
    instance = get_user_model()(pk=1, username="ada", password=password)  # never saved
    adapter.users["1"] = AdapterUser(id="1", name="Ada", email="ada@example.com", instance=instance)
    raw = token(sub="1", **{AUTH_HASH_CLAIM: djangos_hash(password)})
    result = read_jwt_session(make_config(adapter=adapter), raw, SALT, load_user=False)
    assert result.clear is True and result.session is None  # get_user says: nobody
    adapter.hidden = set()
    result = read_jwt_session(make_config(adapter=adapter), raw, SALT, load_user=False)
    assert result.session is not None


@pytest.mark.parametrize(
    ("instance", "reason"),
    [(None, "user not found"), (InactiveUserModel(), "user inactive"), (UserModel(), None)],
)
def test_the_debug_log_says_why_a_session_ended(adapter, instance, reason):
    debug: list = []
    if instance is None:
        del adapter.users["1"]
    else:
        adapter.users["1"] = dataclasses.replace(adapter.users["1"], instance=instance)
    claims = BOUND if reason != "password changed" else {**BOUND, AUTH_HASH_CLAIM: "old"}
    config = make_config(adapter=adapter, logger={"debug": lambda m, d=None: debug.append((m, d))})
    read_jwt_session(config, token(**claims), SALT)
    ended = [d for m, d in debug if m == "SESSION_ENDED"]
    assert ended == ([{"reason": reason, "userId": "1"}] if reason else [])


def test_the_debug_log_says_when_the_password_changed(adapter):
    debug: list = []
    adapter.users["1"] = dataclasses.replace(adapter.users["1"], instance=UserModel())
    config = make_config(adapter=adapter, logger={"debug": lambda m, d=None: debug.append((m, d))})
    read_jwt_session(config, token(**{**BOUND, AUTH_HASH_CLAIM: "old"}), SALT)
    assert ("SESSION_ENDED", {"reason": "password changed", "userId": "1"}) in debug


@freeze_time(NOW)
def test_a_database_session_without_a_sign_in_time_has_no_deadline(adapter):
    # Rows from before created_at was kept: absolute_max_age cannot count, the read works.
    add_session(adapter, NOW + timedelta(hours=1))
    adapter.sessions["tok"] = dataclasses.replace(adapter.sessions["tok"], created_at=None)
    result = read_database_session(db_config(adapter, absolute_max_age=DAY), "tok")
    assert result.session is not None and result.extended is True
    assert adapter.sessions["tok"].expires == NOW + timedelta(days=30)
