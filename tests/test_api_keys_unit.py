"""webauth.api_keys one part at a time: a key's shape and checksum, where a request
carries it, the owner references, and what a new key may be.

The end-to-end behaviour (made, used, revoked, through the decorator, DRF and
Ninja) is in ``tests/test_api_keys.py`` and ``tests/test_api_keys_owners.py``;
these tests pin each rule down at its edges, so that the ``api_keys`` mutation
target (``scripts/mutation_test.py``) notices any of them changing.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser, Group
from django.contrib.sessions.models import Session
from django.test import RequestFactory
from django.utils import timezone
from freezegun import freeze_time

from webauth import api_keys
from webauth.api_keys import (
    ApiKeyError,
    check_new_key,
    key_from_request,
    looks_like_key,
    owner_of,
    owner_ref,
    owners_for,
    revoke,
)
from webauth.conf import build_config
from webauth.errors import RateLimited
from webauth.types import ApiKeyRecord

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
KEY_ID = "AbCdEf012345"
KEY_SECRET = "0123456789abcdefghijABCDEFGHIJ0123456789"


def keys_off():
    return build_config({"secret": SECRET}, lambda n: None)


def config_of(api_keys_section=True, **more):
    return build_config({"secret": SECRET, "api_keys": api_keys_section, **more}, lambda n: None)


@pytest.fixture(autouse=True)
def site(settings):
    settings.WEBAUTH = {"secret": SECRET, "api_keys": {"scopes": ["read", "write"]}}


def key_of(prefix="wak", key_id=KEY_ID, secret=KEY_SECRET):
    return api_keys._checksum_of(f"{prefix}_{key_id}{secret}")


# -- the shape of a key ---------------------------------------------------------------------
def test_the_lengths_and_alphabet_are_as_documented():
    assert (api_keys._ID_LENGTH, api_keys._SECRET_LENGTH, api_keys._CHECK_LENGTH) == (12, 40, 6)
    assert api_keys._ALPHABET == "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    assert api_keys._MAX_LENGTH == 200
    assert timedelta(minutes=1) == api_keys.LAST_USED_EVERY
    assert api_keys._NO_HASH == "0" * 64


def test_the_checksum_is_six_base62_digits_of_the_crc32():
    # zlib.crc32(b"wak_x") is 691390448 (measured); in base 62, most significant first.
    assert api_keys._checksum("wak_x") == "0kn0Eq"
    value, digits = 691390448, ""
    for _ in range(6):
        value, digit = divmod(value, 62)
        digits = api_keys._ALPHABET[digit] + digits
    assert digits == "0kn0Eq"
    assert api_keys._checksum_of("wak_x") == "wak_x0kn0Eq"


def test_random_parts_have_their_length_and_alphabet():
    made = api_keys._random(40)
    assert len(made) == 40 and set(made) <= set(api_keys._ALPHABET)
    assert api_keys._random(40) != made


def test_the_secret_is_stored_as_its_sha256():
    assert api_keys._hash("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    )


def test_a_well_formed_key_splits_into_its_id_and_secret():
    key = key_of()
    assert len(key) == 4 + 58
    assert api_keys._parts(key, "wak") == (KEY_ID, KEY_SECRET)


def test_a_key_of_another_prefix_is_no_key_even_with_a_right_checksum():
    # Same length, all base62, its checksum right for its own prefix.
    assert api_keys._parts(key_of("xak"), "wak") is None
    assert api_keys._parts(key_of("wak"), "xak") is None
    # The prefix must be followed by its "_".
    assert api_keys._parts(api_keys._checksum_of("wakX" + KEY_ID + KEY_SECRET[1:]), "wak") is None


@pytest.mark.parametrize("secret", [KEY_SECRET[:-1], KEY_SECRET + "A"])
def test_a_key_one_character_short_or_long_is_no_key_even_with_a_right_checksum(secret):
    assert api_keys._parts(key_of(secret=secret), "wak") is None


@pytest.mark.parametrize("char", ["-", "_", "+", "é", " "])
def test_a_character_outside_base62_is_no_key_even_with_a_right_checksum(char):
    secret = KEY_SECRET[:10] + char + KEY_SECRET[11:]
    payload = f"wak_{KEY_ID}{secret}"
    # "é" is no ASCII: the checksum cannot be computed over it, the key is refused first.
    key = api_keys._checksum_of(payload) if char.isascii() else payload + "000000"
    assert api_keys._parts(key, "wak") is None


def test_a_wrong_checksum_is_no_key():
    key = key_of()
    wrong = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert api_keys._parts(wrong, "wak") is None


def test_looks_like_key_reads_the_given_configuration_and_is_false_with_keys_off():
    other = config_of({"prefix": "zed"})
    assert looks_like_key(key_of("zed"), other)
    assert not looks_like_key(key_of("wak"), other)
    assert looks_like_key(key_of("wak"))  # the site's: prefix wak
    assert not looks_like_key(key_of("zed"))
    off = keys_off()
    assert not looks_like_key(key_of("wak"), off)


# -- where a request carries its key -----------------------------------------------------------
@pytest.mark.parametrize(
    ("headers", "found"),
    [
        ({}, None),
        ({"HTTP_AUTHORIZATION": "Bearer abc"}, "abc"),
        ({"HTTP_AUTHORIZATION": "bearer abc"}, "abc"),
        ({"HTTP_AUTHORIZATION": "BEARER abc"}, "abc"),
        ({"HTTP_AUTHORIZATION": "Bearer   abc  "}, "abc"),
        ({"HTTP_AUTHORIZATION": "Basic abc"}, None),
        ({"HTTP_AUTHORIZATION": "Bearer"}, None),
        ({"HTTP_AUTHORIZATION": "Bearer "}, None),
        ({"HTTP_AUTHORIZATION": "abc"}, None),
        ({"HTTP_X_API_KEY": " abc "}, "abc"),
        ({"HTTP_X_API_KEY": ""}, None),
        ({"HTTP_X_API_KEY": "a"}, "a"),
        # X-API-Key wins, even when it is empty.
        ({"HTTP_X_API_KEY": "abc", "HTTP_AUTHORIZATION": "Bearer def"}, "abc"),
        ({"HTTP_X_API_KEY": "", "HTTP_AUTHORIZATION": "Bearer def"}, None),
        ({"HTTP_X_API_KEY": "k" * 200}, "k" * 200),
        ({"HTTP_X_API_KEY": "k" * 201}, None),
        ({"HTTP_AUTHORIZATION": "Bearer " + "k" * 201}, None),
    ],
)
def test_a_key_is_read_from_x_api_key_or_a_bearer_authorization(headers, found):
    assert key_from_request(RequestFactory().get("/", **headers)) == found


# -- owner references ----------------------------------------------------------------------------
@pytest.fixture
def owners():
    return config_of({"owners": ["auth.Group"]})


@pytest.mark.django_db
def test_an_owner_ref_is_its_label_and_pk(owners):
    group = Group.objects.create(name="ops")
    assert owner_ref(group, owners) == f"auth.group:{group.pk}"
    with pytest.raises(ApiKeyError, match="the owner is not saved yet"):
        owner_ref(Group(name="new"), owners)


@pytest.mark.django_db
def test_an_owner_ref_needs_a_listed_model_and_keys_on(owners):
    user = get_user_model().objects.create_user("u")
    with pytest.raises(ApiKeyError, match=r"'auth\.user' is not in api_keys\.owners"):
        owner_ref(user, owners)
    with pytest.raises(ApiKeyError, match=r"'object' is not in api_keys\.owners"):
        owner_ref(object(), owners)
    group = Group.objects.create(name="ops")
    with pytest.raises(ApiKeyError, match=r"'auth\.group' is not in api_keys\.owners"):
        owner_ref(group, keys_off())
    with pytest.raises(ApiKeyError, match=r"'auth\.group' is not in api_keys\.owners"):
        owner_ref(group)  # the site's configuration lists no owners


@pytest.mark.django_db
def test_owner_of_finds_the_instance_and_nothing_else(owners):
    group = Group.objects.create(name="ops")
    assert owner_of(f"auth.group:{group.pk}", owners) == group
    assert owner_of(f"auth.group:{group.pk}") is None  # the site's lists no owners
    for ref in (
        f"auth.group:{group.pk + 1}",  # gone
        f"auth.group{group.pk}",  # no ":"
        f"auth.user:{group.pk}",  # not listed
        "auth.group:abc",  # a pk of another type
        "auth.group:",
        None,
        5,
    ):
        assert owner_of(ref, owners) is None, ref
    assert owner_of(f"auth.group:{group.pk}", keys_off()) is None


@pytest.mark.django_db
def test_owner_of_a_listed_label_that_names_no_model_is_none():
    config = config_of({"owners": ["nowhere.Team"]})
    assert owner_of("nowhere.team:1", config) is None


@pytest.mark.django_db
def test_owners_for_lists_each_listed_saved_owner_once():
    user = get_user_model().objects.create_user("u")
    ops, dev = Group.objects.create(name="ops"), Group.objects.create(name="dev")
    given = [ops, user, Group(name="unsaved"), dev, ops, "text"]
    config = config_of({"owners": ["auth.Group"], "owners_of": lambda who: given})
    assert owners_for(user, config) == [
        (f"auth.group:{ops.pk}", ops),
        (f"auth.group:{dev.pk}", dev),
    ]
    assert owners_for(AnonymousUser(), config) == []
    assert owners_for(object(), config) == []
    assert owners_for(user) == []  # the site's configuration has no owners_of
    assert owners_for(user, config_of({"owners": ["auth.Group"]})) == []
    assert owners_for(user, keys_off()) == []
    nothing = config_of({"owners": ["auth.Group"], "owners_of": lambda who: None})
    assert owners_for(user, nothing) == []


@pytest.mark.django_db
def test_a_holder_is_a_user_or_a_listed_owner(owners):
    user = get_user_model().objects.create_user("u")
    group = Group.objects.create(name="ops")
    assert api_keys._holder(user, owners) == (str(user.pk), "")
    assert api_keys._holder(group, owners) == ("", f"auth.group:{group.pk}")
    off = keys_off()
    assert api_keys._holder(user, off) == (str(user.pk), "")


# -- what a new key may be ----------------------------------------------------------------------
def test_keys_off_refuse_every_new_key():
    with pytest.raises(ApiKeyError, match=r"API keys are off \(WEBAUTH\['api_keys'\]\)"):
        check_new_key(name="x", config=keys_off())


def test_scopes_are_kept_in_order_once_and_one_string_is_one_scope():
    assert check_new_key(name="x", scopes="read")[1] == ["read"]
    assert check_new_key(name="x", scopes=["write", "read", "write"])[1] == ["write", "read"]
    assert check_new_key(name="x")[1] == []


@pytest.mark.parametrize("scopes", [["admin"], ["read", 5], [None], "rea"])
def test_a_scope_outside_the_list_is_refused(scopes):
    with pytest.raises(ApiKeyError, match="unknown scopes"):
        check_new_key(name="x", scopes=scopes)


def test_the_given_configuration_decides_the_scopes():
    assert check_new_key(name="x", scopes=["ci"], config=config_of({"scopes": ["ci"]}))[1] == ["ci"]


@pytest.mark.parametrize("name", ["", "   ", "x" * 101, " " + "x" * 101, None, 5, ["x"]])
def test_a_name_must_be_1_to_100_characters(name):
    with pytest.raises(ApiKeyError, match="a key needs a name of 1 to 100 characters"):
        check_new_key(name=name)


def test_a_name_is_stripped_and_100_characters_are_enough():
    assert check_new_key(name="  CI  ")[0] == "CI"
    assert check_new_key(name="x" * 100)[0] == "x" * 100
    assert check_new_key(name=" " + "x" * 100 + " ")[0] == "x" * 100
    assert check_new_key(name="x")[0] == "x"


@freeze_time("2026-12-03 10:00:00")
def test_expiry_true_is_max_age_from_now():
    now = timezone.now()
    assert check_new_key(name="x")[2] == now + timedelta(days=365)
    config = config_of({"max_age": 3600})
    assert check_new_key(name="x", config=config)[2] == now + timedelta(hours=1)
    assert check_new_key(name="x", config=config_of({"max_age": None}))[2] is None


@pytest.mark.parametrize("expires", [None, False])
def test_never_expiring_is_only_for_a_site_without_max_age(expires):
    with pytest.raises(ApiKeyError, match=r"keys must expire \(api_keys.max_age is set\)"):
        check_new_key(name="x", expires=expires)
    assert check_new_key(name="x", expires=expires, config=config_of({"max_age": None}))[2] is None


@freeze_time("2026-12-03 10:00:00")
def test_a_given_expiry_must_be_after_now_and_within_max_age():
    now = timezone.now()
    config = config_of({"max_age": 3600})
    with pytest.raises(ApiKeyError, match="the expiry is in the past"):
        check_new_key(name="x", expires=now, config=config)
    tiny = timedelta(microseconds=1)
    assert check_new_key(name="x", expires=now + tiny, config=config)[2] == now + tiny
    edge = now + timedelta(hours=1)
    assert check_new_key(name="x", expires=edge, config=config)[2] == edge
    with pytest.raises(ApiKeyError, match=r"the expiry is beyond api_keys\.max_age"):
        check_new_key(name="x", expires=edge + tiny, config=config)
    far = now + timedelta(days=10_000)
    assert check_new_key(name="x", expires=far, config=config_of({"max_age": None}))[2] == far


# -- revoking -------------------------------------------------------------------------------------
class Recording:
    """A storage standing in for the adapter: what revoke() asked, and its answer."""

    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def revoke_api_key(self, user_id, key_id, **kwargs):
        self.calls.append((user_id, key_id, kwargs))
        return self.answer


@pytest.fixture
def recorded(monkeypatch):
    events = []
    monkeypatch.setattr(api_keys, "emit", lambda config, name, **m: events.append((name, m)))
    return events


def with_storage(storage):
    config = config_of()
    config.__dict__["storage"] = storage  # the cached_property's slot
    return config


@pytest.mark.parametrize("key_id", ["", "x" * 13, None, 5])
def test_a_key_id_that_cannot_be_one_is_never_asked_for(recorded, key_id):
    storage = Recording(True)
    assert revoke("1", key_id, config=with_storage(storage)) is False
    assert storage.calls == [] and recorded == []


def test_a_users_key_is_revoked_by_user_and_id_and_announced(recorded):
    storage = Recording(True)
    assert revoke(7, "x" * 12, config=with_storage(storage)) is True
    assert storage.calls == [("7", "x" * 12, {})]
    assert recorded == [
        ("api_key", {"request": None, "user_id": "7", "key_id": "x" * 12, "action": "revoked"})
    ]


def test_a_key_id_of_one_character_is_asked_for(recorded):
    storage = Recording(True)
    assert revoke("7", "a", config=with_storage(storage)) is True
    assert storage.calls == [("7", "a", {})]


def test_a_revoke_that_changed_nothing_is_not_announced(recorded):
    storage = Recording(False)
    assert revoke("7", "abc", config=with_storage(storage)) is False
    assert storage.calls == [("7", "abc", {})] and recorded == []


def test_without_a_user_id_nothing_is_revoked(recorded):
    storage = Recording(True)
    assert revoke("", "abc", config=with_storage(storage)) is False
    assert storage.calls == [] and recorded == []


def test_an_owners_key_is_revoked_by_owner_whatever_the_user_id(recorded):
    storage = Recording(True)
    assert revoke("7", "abc", owner="auth.group:3", config=with_storage(storage)) is True
    assert storage.calls == [("", "abc", {"owner": "auth.group:3"})]
    assert recorded == [
        (
            "api_key",
            {
                "request": None,
                "user_id": "",
                "key_id": "abc",
                "action": "revoked",
                "owner": "auth.group:3",
            },
        )
    ]


def test_an_event_names_the_owner_only_for_an_owners_key():
    assert api_keys._owned("") == {}
    assert api_keys._owned("auth.group:3") == {"owner": "auth.group:3"}


# -- a key and what it carries ------------------------------------------------------------------
def test_a_key_that_cannot_be_made_is_the_users_doing():
    assert ApiKeyError.user_caused is True


def test_a_match_without_scopes_has_none():
    record = ApiKeyRecord(key_id=KEY_ID, user_id="1", name="n", secret_hash="h", scopes=None)
    assert api_keys.KeyMatch(record=record, user=None).scopes == frozenset()
    record = ApiKeyRecord(key_id=KEY_ID, user_id="1", name="n", secret_hash="h", scopes=["a"])
    match = api_keys.KeyMatch(record=record, user="u")
    assert match.scopes == frozenset({"a"}) and match.owner is None


# -- authenticating a request ------------------------------------------------------------------
class Decision:
    def __init__(self, allowed, retry_after=0):
        self.allowed, self.retry_after = allowed, retry_after

    def __bool__(self):
        return self.allowed


class Keys:
    """A storage holding one key: what authenticate() asked of it."""

    def __init__(self, record=None, user=None):
        self.record, self.user, self.asked, self.touched = record, user, [], []

    def get_api_key(self, key_id):
        self.asked.append(key_id)
        if self.record is None or key_id != self.record.key_id:
            return None
        return self.record, self.user

    def touch_api_key(self, key_id, when, every):
        self.touched.append((key_id, when, every))


class User:
    def __init__(self, is_active=True):
        self.is_active = is_active


NOW = "2026-12-03 10:00:00"


def record_of(**fields):
    values = {
        "key_id": KEY_ID,
        "user_id": "1",
        "name": "CI",
        "secret_hash": api_keys._hash(KEY_SECRET),
        "last_used_at": None,
    }
    return ApiKeyRecord(**(values | fields))


@pytest.fixture
def limits(monkeypatch):
    """The rate limits' answers, and the hits authenticate() counted."""
    state = {"failed": Decision(True), "used": Decision(True), "hits": []}

    def hit(request, action, key=None, *, config=None):
        state["hits"].append((action, key))
        return state["failed"] if action == "api_key_failed" else state["used"]

    monkeypatch.setattr(api_keys.ratelimit, "hit", hit)
    return state


def check(storage, key=None, headers=None, config=None):
    config = config or with_storage(storage)
    config.__dict__["storage"] = storage
    request = RequestFactory().get("/", **(headers or {}))
    return api_keys.authenticate(request, key, config=config)


@freeze_time(NOW)
def test_a_key_that_holds_is_its_user_counted_and_its_use_written(limits):
    user = User()
    storage = Keys(record_of(), user)
    match = check(storage, headers={"HTTP_X_API_KEY": key_of()})
    assert match is not None and match.user is user and match.owner is user
    assert match.record is storage.record
    assert storage.asked == [KEY_ID]
    assert limits["hits"] == [("api_key", KEY_ID)]
    now = timezone.now()
    assert storage.touched == [(KEY_ID, now, 60.0)]
    assert match.record.last_used_at == now


def test_with_keys_off_or_no_key_nothing_is_asked_or_counted(limits):
    storage = Keys(record_of(), User())
    assert check(storage, config=keys_off()) is None
    assert check(storage, key_of(), config=keys_off()) is None
    assert check(storage) is None
    assert storage.asked == [] and limits["hits"] == []


def test_the_given_key_wins_over_the_headers(limits):
    storage = Keys(record_of(), User())
    assert check(storage, key_of(), headers={"HTTP_X_API_KEY": "wak_nothing"}) is not None
    assert check(storage, "wak_nothing", headers={"HTTP_X_API_KEY": key_of()}) is None


def test_a_malformed_key_is_refused_without_a_query_and_counted(limits):
    storage = Keys(record_of(), User())
    key = key_of()
    assert check(storage, key[:-1] + ("A" if key[-1] != "A" else "B")) is None
    assert check(storage, "wak_" + "A" * 58) is None
    assert storage.asked == []
    assert limits["hits"][-1] == ("api_key_failed", None)


@pytest.mark.parametrize(
    "problem",
    ["unknown id", "wrong secret", "revoked", "expired now", "inactive", "no user"],
)
@freeze_time(NOW)
def test_a_key_that_does_not_hold_is_refused_and_counted(limits, problem):
    now = timezone.now()
    record, user, key = record_of(), User(), key_of()
    if problem == "unknown id":
        key = key_of(key_id="ZZZZZZZZZZZZ")
    elif problem == "wrong secret":
        key = key_of(secret="Z" * 40)
    elif problem == "revoked":
        record = record_of(revoked_at=now - timedelta(days=1))
    elif problem == "expired now":
        record = record_of(expires=now)
    elif problem == "inactive":
        user = User(is_active=False)
    elif problem == "no user":
        user = None
    storage = Keys(record, user)
    assert check(storage, key) is None
    assert limits["hits"] == [("api_key_failed", None)]
    assert storage.touched == []


@freeze_time(NOW)
def test_a_key_expiring_a_moment_from_now_holds_as_does_a_user_without_is_active(limits):
    later = timezone.now() + timedelta(microseconds=1)
    assert check(Keys(record_of(expires=later), User()), key_of()) is not None
    assert check(Keys(record_of(), object()), key_of()) is not None


def test_too_many_failures_are_rate_limited(limits):
    limits["failed"] = Decision(False, retry_after=42)
    with pytest.raises(RateLimited, match="Too many failed API keys") as raised:
        check(Keys(record_of(), User()), key_of(secret="Z" * 40))
    assert raised.value.retry_after == 42


def test_too_many_uses_of_a_key_are_rate_limited_before_its_use_is_written(limits):
    limits["used"] = Decision(False, retry_after=7)
    storage = Keys(record_of(), User())
    with pytest.raises(RateLimited, match="Too many requests with this API key") as raised:
        check(storage, key_of())
    assert raised.value.retry_after == 7
    assert storage.touched == []


@freeze_time(NOW)
def test_the_last_use_is_written_at_most_once_a_minute(limits):
    now = timezone.now()
    recent = record_of(last_used_at=now - timedelta(seconds=59, microseconds=999_999))
    storage = Keys(recent, User())
    assert check(storage, key_of()) is not None
    assert storage.touched == [] and recent.last_used_at < now
    due = record_of(last_used_at=now - timedelta(minutes=1))
    storage = Keys(due, User())
    assert check(storage, key_of()) is not None
    assert storage.touched == [(KEY_ID, now, 60.0)] and due.last_used_at == now


@pytest.mark.django_db
def test_an_owners_key_is_its_owner_read_only_once_the_secret_matched(limits, monkeypatch):
    config = config_of({"owners": ["auth.Group"]})
    group = Group.objects.create(name="ops")
    record = record_of(user_id="", owner=f"auth.group:{group.pk}")
    read = []
    real = api_keys.owner_of
    monkeypatch.setattr(api_keys, "owner_of", lambda ref, c=None: read.append(ref) or real(ref, c))
    # The adapter gives no user for an owner's key; one it gave would be ignored.
    match = check(Keys(record, User()), key_of(), config=config)
    assert match is not None and match.user is None and match.owner == group
    assert read == [record.owner]
    assert check(Keys(record, User()), key_of(secret="Z" * 40), config=config) is None
    assert read == [record.owner]  # a guess costs no second query
    group.delete()
    assert check(Keys(record, User()), key_of(), config=config) is None


@pytest.mark.django_db
def test_a_ref_without_its_colon_names_no_owner_even_where_an_empty_pk_exists():
    # Session's pk is a string, so a row may have "" as its pk.
    config = config_of({"owners": ["sessions.Session"]})
    Session.objects.create(session_key="", session_data="", expire_date=timezone.now())
    assert owner_of("sessions.session", config) is None
    assert owner_of("sessions.session:", config) == Session.objects.get(session_key="")


def test_a_scope_that_cannot_be_hashed_is_unknown_not_a_crash():
    with pytest.raises(ApiKeyError, match="unknown scopes"):
        check_new_key(name="x", scopes=[["read"]])


class Creating:
    """A storage that stores what create_key() gives it, or refuses (at max_keys)."""

    def __init__(self, accept=True):
        self.accept, self.calls = accept, []

    def create_api_key(self, record, max_keys):
        self.calls.append((record, max_keys))
        return record if self.accept else None


def test_a_new_key_follows_the_given_configuration(recorded):
    config = config_of({"prefix": "zed", "max_keys": 3, "scopes": ["ci"]})
    storage = Creating()
    config.__dict__["storage"] = storage
    made = api_keys.create_key({"id": "7"}, name="CI", scopes=["ci"], config=config)
    assert made.key.startswith("zed_") and looks_like_key(made.key, config)
    ((record, max_keys),) = storage.calls
    assert max_keys == 3 and record is made.record and record.user_id == "7"
    key_id, secret = api_keys._parts(made.key, "zed")
    assert (record.key_id, record.secret_hash, record.scopes) == (
        key_id,
        api_keys._hash(secret),
        ["ci"],
    )
    assert [name for name, _ in recorded] == ["api_key"]


def test_a_holder_at_max_keys_gets_no_key_and_no_event(recorded):
    config = config_of({"max_keys": 3})
    config.__dict__["storage"] = Creating(accept=False)
    with pytest.raises(ApiKeyError, match="may hold 3 live keys"):
        api_keys.create_key({"id": "7"}, name="CI", config=config)
    assert recorded == []


class Listing:
    def __init__(self):
        self.calls = []

    def list_api_keys(self, user_id, **kwargs):
        self.calls.append((user_id, kwargs))
        return ["listed"]


@pytest.mark.django_db
def test_keys_are_listed_by_user_or_by_owner_under_the_given_configuration(owners):
    storage = Listing()
    owners.__dict__["storage"] = storage
    group = Group.objects.create(name="ops")
    assert api_keys.list_keys({"id": "7"}, config=owners) == ["listed"]
    assert api_keys.list_keys(group, config=owners) == ["listed"]
    assert storage.calls == [("7", {}), ("", {"owner": f"auth.group:{group.pk}"})]


# -- the owner models whose deletion deletes their keys -----------------------------------------
def watched():
    return sorted(api_keys._WATCHED)


@pytest.mark.django_db
def test_only_a_change_of_webauth_reconnects_the_owner_models(settings):
    settings.WEBAUTH = {"secret": SECRET, "api_keys": {"owners": ["auth.Group"]}}
    assert watched() == ["auth.Group"]
    settings.WEBAUTH["api_keys"] = {}  # changed in place: no setting_changed
    api_keys.watch_owners(setting="CACHES")
    assert watched() == ["auth.Group"]
    api_keys.watch_owners(setting="WEBAUTH")
    assert watched() == []
    settings.WEBAUTH["api_keys"] = {"owners": ["auth.Group"]}
    api_keys.watch_owners()  # at start-up
    assert watched() == ["auth.Group"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"secret": SECRET, "api_keys": {"owners": "auth.Group"}}, ["auth.Group"]),
        (
            {"secret": SECRET, "api_keys": {"owners": ["auth.Group", "nowhere.Team", 5]}},
            ["auth.Group"],
        ),
        ({"secret": SECRET, "api_keys": {"owners": 5}}, []),
        ({"secret": SECRET, "api_keys": True}, []),
        ({"secret": SECRET}, []),
        ("not a dict", []),
    ],
)
def test_the_owner_models_are_read_from_whatever_the_setting_holds(settings, raw, expected):
    settings.WEBAUTH = {"secret": SECRET}
    assert watched() == []
    settings.WEBAUTH = raw
    assert watched() == expected
