"""How ``GET /auth/session`` checks a JWT session's user (the performance issue).

Since the security issue a JWT session of a Django user ends when the user is
deactivated, deleted or changes password. The session route checks this with
the adapter's lean ``get_user_session_check`` (one query of the columns the check
needs, no user loaded) when the adapter has one that answers for its
``get_user``; through ``get_user`` otherwise; and with no query at all when the
request has loaded the user already. Each way must end the session in all
three cases: these tests fail if one lets a session through.
"""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connection, models
from django.test import RequestFactory
from django.test.utils import isolate_apps

from webauth import sessions
from webauth.actions.session import session as session_route
from webauth.adapters import _compiled
from webauth.adapters.django import DjangoAdapter
from webauth.sessions import binding
from webauth.state import get_state
from webauth.test import force_sign_in, session_cookie_for
from webauth.testing.memory import MemoryAdapter
from webauth.types import AdapterUser
from webauth.utils import forget_user_model

from .test_session_end import cookie_deleted, deactivate, new_password

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def alice(db):
    return User.objects.create_user("alice", "alice@example.com", "pw-alice-123", first_name="A")


def _delete(user):
    user.delete()


CHANGES = {"inactive": deactivate, "deleted": _delete, "new password": new_password}


# -- adapters, each recording how the session route reached the user -------------------------


class Recording(DjangoAdapter):
    """DjangoAdapter, recording which of the two methods each read used."""

    def __init__(self):
        super().__init__()
        self.calls: list[str] = []

    def get_user(self, id):
        self.calls.append("get_user")
        return super().get_user(id)

    def get_user_session_check(self, user_id):
        self.calls.append("get_user_session_check")
        return super().get_user_session_check(user_id)


class GetUserOnly:
    """A third-party adapter from before the lean method: users through get_user alone."""

    def __init__(self):
        self.calls: list[str] = []
        self._django = DjangoAdapter()

    def get_user(self, id):
        self.calls.append("get_user")
        return self._django.get_user(id)


class HidesBob(DjangoAdapter):
    """A subclass with a rule of its own in get_user (a soft delete, say), but not in the
    lean method it inherits: the session route must not go round the rule."""

    def get_user(self, id):
        found = super().get_user(id)
        return None if found is not None and found.instance.username == "bob" else found


def use(settings, adapter):
    settings.WEBAUTH = {**settings.WEBAUTH, "adapter": adapter, "session": {"strategy": "jwt"}}
    return adapter


def route(client):
    response = client.get("/auth/session")
    assert response.status_code == 200
    return response


# -- each way ends the session ----------------------------------------------------------------


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_the_lean_check_ends_the_session(client, alice, settings, change):
    adapter = use(settings, Recording())
    force_sign_in(client, alice)
    assert route(client).json()["user"]["name"] == "A"
    assert adapter.calls == ["get_user_session_check"]  # nothing loaded
    change(alice)
    response = route(client)
    assert response.json() is None and cookie_deleted(response)
    assert adapter.calls == ["get_user_session_check"] * 2


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_without_the_lean_method_get_user_ends_the_session(client, alice, settings, change):
    adapter = use(settings, GetUserOnly())
    force_sign_in(client, alice)
    assert route(client).json()["user"]["name"] == "A"
    change(alice)
    response = route(client)
    assert response.json() is None and cookie_deleted(response)
    assert adapter.calls == ["get_user", "get_user"]


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_without_an_adapter_the_django_adapter_checks_lean(
    client, alice, change, django_assert_num_queries, monkeypatch
):
    def no_full_load(self, id):
        raise AssertionError("the session route loaded the whole user")

    monkeypatch.setattr(DjangoAdapter, "get_user", no_full_load)
    force_sign_in(client, alice)
    with django_assert_num_queries(1):
        assert route(client).json()["user"]["name"] == "A"
    change(alice)
    response = route(client)
    assert response.json() is None and cookie_deleted(response)


def test_an_update_is_checked_the_same_way(client, alice, settings):
    adapter = use(settings, Recording())
    force_sign_in(client, alice)
    csrf = client.get("/auth/csrf").json()["csrfToken"]
    deactivate(alice)
    response = client.post(
        "/auth/session", {"csrfToken": csrf, "data": "{}"}, content_type="application/json"
    )
    assert response.json() is None and cookie_deleted(response)
    assert adapter.calls == ["get_user_session_check"]


def test_a_new_secret_key_ends_the_session_unless_the_old_one_is_a_fallback(
    client, alice, settings
):
    # The remembered HMACs are per key: a hash made with a key no longer in use
    # must not match from the cache.
    old = settings.SECRET_KEY
    force_sign_in(client, alice)
    assert route(client).json() is not None
    settings.SECRET_KEY = "another-secret-key-for-django-0123456789"
    settings.SECRET_KEY_FALLBACKS = [old]
    assert route(client).json() is not None
    settings.SECRET_KEY_FALLBACKS = []
    assert route(client).json() is None


def test_a_subclass_rule_in_get_user_is_not_gone_round(client, settings):
    adapter = use(settings, HidesBob())
    bob = User.objects.create_user("bob", password="pw-bob-123")
    carol = User.objects.create_user("carol", password="pw-carol-123")
    force_sign_in(client, carol)
    assert route(client).json() is not None
    force_sign_in(client, bob)
    assert route(client).json() is None  # through HidesBob.get_user, not the inherited check
    assert binding._session_check_usable(build_config_with(adapter)) is False


def build_config_with(adapter):
    from webauth.conf import get_config

    config = get_config()
    assert config.storage.adapter is adapter
    return config


def test_methods_set_on_the_adapter_object_count_only_together(settings):
    adapter = use(settings, DjangoAdapter())
    adapter.get_user = DjangoAdapter().get_user  # an override on the object itself
    assert binding._session_check_usable(build_config_with(adapter)) is False
    adapter.get_user_session_check = DjangoAdapter().get_user_session_check
    assert binding._session_check_usable(build_config_with(adapter)) is True


def test_a_model_with_its_own_session_auth_hash_is_checked_through_get_user(
    client, alice, settings, monkeypatch
):
    # A "log out everywhere" counter of the project's, say: the hash is not Django's
    # HMAC of the password, so the lean check cannot make it.
    version = {"n": 1}
    monkeypatch.setattr(
        User, "get_session_auth_hash", lambda self: f"v{version['n']}-{self.pk}", raising=False
    )
    adapter = use(settings, Recording())
    force_sign_in(client, alice)
    assert route(client).json() is not None
    version["n"] = 2
    assert route(client).json() is None
    assert adapter.calls == ["get_user", "get_user"]


def test_an_overridden_private_hash_is_called_too(alice, monkeypatch):
    # Django's fallback keys go through _get_session_auth_hash: overriding only
    # that one also takes the session off the remembered hashes.
    calls = []

    def keyed(self, secret=None):
        calls.append(secret)
        return f"custom-{self.pk}"

    monkeypatch.setattr(User, "_get_session_auth_hash", keyed)
    assert not binding._keeps_djangos_hash(User)
    assert sessions.session_auth_hash(alice) == f"custom-{alice.pk}"
    assert sessions.session_auth_hash(alice) == f"custom-{alice.pk}"
    assert len(calls) == 2


# -- a user this request has loaded already -----------------------------------------------------


def request_with_session(user):
    name, value = session_cookie_for(user)
    request = RequestFactory().get("/auth/session", HTTP_HOST="testserver")
    request.COOKIES[name] = value
    return request


def test_a_user_loaded_for_request_user_is_checked_without_a_query(
    alice, django_assert_num_queries
):
    request = request_with_session(alice)
    state = get_state(request)
    with django_assert_num_queries(1):
        assert state.session_user == alice  # what request.user does
        response = session_route(state, None)
    assert b'"name": "A"' in response.content or b'"name":"A"' in response.content


def test_a_loaded_user_is_still_checked(alice):
    request = request_with_session(alice)
    state = get_state(request)
    assert state.session_user == alice  # request.user loaded it
    loaded = state.loaded_user
    assert loaded is not None and loaded.instance == alice
    loaded.instance.is_active = False  # changed since it was loaded
    response = session_route(state, None)
    assert response.content == b"null"


def test_nothing_loaded_is_no_known_user(alice):
    state = get_state(request_with_session(alice))
    assert state.loaded_user is None
    assert "session_result" not in state.__dict__  # asking loaded nothing


# -- a third-party async adapter with the lean method ------------------------------------------


def test_an_async_adapter_with_the_lean_method(client, alice, settings):
    adapter = use(settings, MemoryAdapter())
    in_memory = User.objects.get(pk=alice.pk)
    adapter.users[str(alice.pk)] = AdapterUser(id=str(alice.pk), name="A", instance=in_memory)
    force_sign_in(client, alice)
    assert route(client).json() is not None
    in_memory.is_active = False  # the adapter's own record of the user
    assert route(client).json() is None


def test_the_memory_adapter_answers_for_django_users_behind_its_records(alice):
    adapter = MemoryAdapter()
    adapter.users[str(alice.pk)] = AdapterUser(id=str(alice.pk))
    check = async_to_sync(adapter.get_user_session_check)(str(alice.pk))
    assert (check.id, check.is_active, check.password_hash) == (str(alice.pk), True, alice.password)


# -- the comparison ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, 5, b"bytes", "", "é" * 64, "0" * 64])
def test_only_the_right_hash_matches(alice, value):
    assert binding._password_hash_matches(alice.password, value) is False
    assert binding._password_hash_matches(alice.password, alice.get_session_auth_hash())
    assert binding._password_hash_matches(None, alice.get_session_auth_hash()) is False


# -- DjangoAdapter's lean lookup -------------------------------------------------------------


def test_the_lookup_reads_two_columns_and_makes_no_instance(alice, monkeypatch):
    def no_instance(*args, **kwargs):
        raise AssertionError("a model instance was made")

    monkeypatch.setattr(User, "from_db", no_instance)
    adapter = DjangoAdapter()
    check = adapter.get_user_session_check(str(alice.pk))
    assert (check.id, check.is_active, check.password_hash) == (str(alice.pk), True, alice.password)
    lookup, active = _compiled._check_lookup("default", User._meta.label)
    assert active is None and len(lookup.cols) == 2
    for unknown in ("999999", "x", "", "9" * 30, None):
        assert adapter.get_user_session_check(unknown) is None


@pytest.fixture
def user_model(monkeypatch):
    """Make the next model defined in the test ``AUTH_USER_MODEL`` for the lookups."""

    def swap(model):
        monkeypatch.setattr(_compiled, "user_model", lambda: model)
        _compiled._check_lookup.cache_clear()
        _compiled._user_lookup.cache_clear()
        with connection.schema_editor() as editor:
            editor.create_model(model)
        return model

    yield swap
    _compiled._check_lookup.cache_clear()
    _compiled._user_lookup.cache_clear()
    forget_user_model()


@pytest.mark.django_db(transaction=True)
@isolate_apps("tests")
def test_a_user_model_without_is_active(user_model):
    class Plain(AbstractBaseUser):
        name = models.CharField(max_length=20, unique=True)
        USERNAME_FIELD = "name"

        class Meta:
            app_label = "tests"

    model = user_model(Plain)
    try:
        user = model(name="p")
        user.set_password("pw-plain-1")
        user.save()
        lookup, active = _compiled._check_lookup("default", "tests.Plain")
        assert active is True and len(lookup.cols) == 1
        assert _compiled.user_check_by_pk(str(user.pk)) == (True, user.password)
    finally:
        with connection.schema_editor() as editor:
            editor.delete_model(model)


@pytest.mark.django_db(transaction=True)
@isolate_apps("tests")
def test_a_user_model_whose_is_active_is_a_property(user_model):
    class Flagged(AbstractBaseUser):
        name = models.CharField(max_length=20, unique=True)
        status = models.CharField(max_length=10, default="on")
        USERNAME_FIELD = "name"

        @property
        def is_active(self):
            return self.status == "on"

        class Meta:
            app_label = "tests"

    model = user_model(Flagged)
    try:
        user = model(name="f", status="off")
        user.set_password("pw-flag-1")
        user.save()
        assert _compiled._check_lookup("default", "tests.Flagged") is None  # needs the instance
        assert _compiled.user_check_by_pk(str(user.pk)) == (False, user.password)
        model.objects.filter(pk=user.pk).update(status="on")
        assert _compiled.user_check_by_pk(str(user.pk)) == (True, user.password)
    finally:
        with connection.schema_editor() as editor:
            editor.delete_model(model)


def test_sqlite_lookups_are_sent_with_a_named_parameter(alice):
    lookup = _compiled._user_lookup("default", User._meta.label)
    if connection.vendor == "sqlite":
        assert "%(v)s" in lookup.sql and "%s" not in lookup.sql
    else:
        assert "%s" in lookup.sql
    assert lookup.fetch(alice.pk) == alice


@pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason="the named placeholder is SQLite's; psycopg and MySQLdb refuse a % in a name anyway",
)
@pytest.mark.django_db(transaction=True)
@isolate_apps("tests")
def test_a_percent_sign_in_a_table_name_keeps_the_usual_placeholder(user_model):
    class Odd(AbstractBaseUser):
        name = models.CharField(max_length=20, unique=True)
        USERNAME_FIELD = "name"

        class Meta:
            app_label = "tests"
            db_table = "odd%users"

    model = user_model(Odd)
    try:
        user = model(name="o")
        user.set_password("pw-odd-1")
        user.save()
        lookup = _compiled._user_lookup("default", "tests.Odd")
        assert "%(v)s" not in lookup.sql
        assert lookup.fetch(user.pk) == user
        assert _compiled.user_check_by_pk(str(user.pk)) == (True, user.password)
    finally:
        with connection.schema_editor() as editor:
            editor.delete_model(model)
