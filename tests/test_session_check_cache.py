"""``session.user_check_cache``: the JWT session check kept in Django's cache (issue 26).

With it on, ``GET /auth/session`` makes no query once a check of the session has
passed; every change the ORM sees (deactivation, deletion, a new password) ends
the session at the next request; webauth's "sign out everywhere" forgets the
user's entry; a change behind the ORM's back (``QuerySet.update``) is seen once
``max_staleness`` has passed; a cache that fails leaves the database to answer.
tests/test_session_check_cache_processes.py does the same across 4 processes on
PostgreSQL and Redis.
"""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from freezegun import freeze_time

from webauth.conf import get_config
from webauth.sessions import check_cache
from webauth.test import force_sign_in
from webauth.user_sessions import sign_out_everywhere

from .test_session_end import cookie_deleted, deactivate, new_password

pytestmark = pytest.mark.django_db

User = get_user_model()
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "c1"},
    "checks": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "c2"},
    "dummy": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
    "broken": {"BACKEND": "tests.test_session_check_cache.BrokenCache"},
}


class BrokenCache:
    """A cache whose reads and writes fail, as an unreachable Redis's do."""

    def __init__(self, *args, **kwargs):
        pass

    def _fail(self, *args, **kwargs):
        raise ConnectionError("cache down")

    get = add = set = delete = _fail

    def close(self, **kwargs):
        pass


@pytest.fixture
def on(settings):
    """The check cache on, in cache ``checks``, 30 s of staleness at most."""
    settings.CACHES = CACHES
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "session": {
            "strategy": "jwt",
            "user_check_cache": {"cache": "checks", "max_staleness": 30},
        },
    }
    caches["checks"].clear()
    return settings


@pytest.fixture
def alice(db):
    return User.objects.create_user("alice", "alice@example.com", "pw-alice-123", first_name="A")


def signed_in(client, user):
    force_sign_in(client, user)
    return client


def session_of(client):
    response = client.get("/auth/session")
    assert response.status_code == 200
    return response


def test_off_by_default_every_check_queries(client, alice, django_assert_num_queries):
    assert get_config().session.user_check_cache is None
    signed_in(client, alice)
    for _ in range(2):
        with django_assert_num_queries(1):
            assert session_of(client).json()["user"]["name"] == "A"


def test_on_the_second_check_makes_no_query(on, client, alice, django_assert_num_queries):
    signed_in(client, alice)
    with django_assert_num_queries(1):
        assert session_of(client).json()["user"]["name"] == "A"
    for _ in range(3):
        with django_assert_num_queries(0):
            assert session_of(client).json()["user"]["name"] == "A"


def test_the_cache_holds_a_digest_not_the_password_hash(on, client, alice):
    signed_in(client, alice)
    session_of(client)
    value = caches["checks"].get(f"webauth:check:{alice.pk}")
    assert isinstance(value, str) and len(value) == 64
    assert alice.password not in value and alice.get_session_auth_hash() not in value


CHANGES = {
    "inactive": deactivate,
    "deleted": lambda user: user.delete(),
    "new password": new_password,
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_a_change_through_the_orm_ends_the_session_at_once(on, client, alice, change):
    signed_in(client, alice)
    session_of(client)
    session_of(client)  # from the cache
    change(alice)
    response = session_of(client)
    assert response.json() is None and cookie_deleted(response)


def test_a_change_in_a_transaction_is_marked_again_when_it_commits(
    on, client, alice, django_capture_on_commit_callbacks
):
    signed_in(client, alice)
    session_of(client)
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        deactivate(alice)
        # A check in between sees the old row (no commit yet) and remembers it...
        check_cache.remember(get_config(), str(alice.pk), "x" * 64)
    # ...but add() left the revoked mark in place, and the commit sets it again.
    assert caches["checks"].get(f"webauth:check:{alice.pk}") == check_cache.REVOKED
    assert len(callbacks) == 1
    caches["checks"].delete(f"webauth:check:{alice.pk}")
    callbacks[0]()
    assert caches["checks"].get(f"webauth:check:{alice.pk}") == check_cache.REVOKED


def test_a_revoked_mark_is_not_overwritten_by_a_check(on, client, alice, django_assert_num_queries):
    signed_in(client, alice)
    session_of(client)
    check_cache.forget_user(get_config(), alice.pk)
    # The user is unchanged: the session lives, but every check asks the database
    # while the mark lasts (a passed check cannot replace it).
    for _ in range(2):
        with django_assert_num_queries(1):
            assert session_of(client).json()["user"]["name"] == "A"


def test_sign_out_everywhere_forgets_the_users_entry(on, client, alice, django_assert_num_queries):
    signed_in(client, alice)
    session_of(client)
    sign_out_everywhere(alice)
    assert caches["checks"].get(f"webauth:check:{alice.pk}") == check_cache.REVOKED
    with django_assert_num_queries(1):
        session_of(client)


def test_a_change_behind_the_orms_back_is_seen_after_max_staleness(on, client, alice):
    with freeze_time("2026-12-01 12:00:00") as clock:
        signed_in(client, alice)
        assert session_of(client).json() is not None  # checked and remembered
        User.objects.filter(pk=alice.pk).update(is_active=False)  # no signal
        clock.tick(29)
        # Within the bound the remembered check still answers (the documented cost).
        assert session_of(client).json() is not None
        clock.tick(2)
        response = session_of(client)
        assert response.json() is None and cookie_deleted(response)


def test_a_session_with_another_hash_is_not_answered_from_the_cache(on, client, alice):
    signed_in(client, alice)
    session_of(client)
    config = get_config()
    assert check_cache.passed(config, str(alice.pk), alice.get_session_auth_hash())
    assert not check_cache.passed(config, str(alice.pk), "0" * 64)
    assert not check_cache.passed(config, str(alice.pk + 1), alice.get_session_auth_hash())
    assert not check_cache.passed(config, str(alice.pk), None)


def test_a_failing_cache_leaves_the_database_to_answer(
    on, client, alice, caplog, django_assert_num_queries
):
    on.WEBAUTH = {
        **on.WEBAUTH,
        "session": {"strategy": "jwt", "user_check_cache": {"cache": "broken"}},
    }
    signed_in(client, alice)
    with caplog.at_level(logging.WARNING, logger="webauth"):
        for _ in range(2):
            with django_assert_num_queries(1):
                assert session_of(client).json()["user"]["name"] == "A"
        deactivate(alice)  # the revocation fails: logged, and the database still answers
        response = session_of(client)
    assert response.json() is None
    assert "session check cache 'broken' unreadable" in caplog.text
    assert "a revocation failed" in caplog.text
    assert "pw-alice-123" not in caplog.text


# -- configuration and checks ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, ("default", 60)),
        ({}, ("default", 60)),
        ({"cache": "checks"}, ("checks", 60)),
        ({"max_staleness": 5}, ("default", 5)),
    ],
)
def test_configuration(settings, value, expected):
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"user_check_cache": value}}
    options = get_config().session.user_check_cache
    assert (options.cache, options.max_staleness) == expected


@pytest.mark.parametrize("value", [None, False])
def test_configuration_off(settings, value):
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"user_check_cache": value}}
    assert get_config().session.user_check_cache is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"max_staleness": 0}, "max_staleness"),
        ({"max_staleness": True}, "max_staleness"),
        ({"max_staleness": "60"}, "max_staleness"),
        ({"cache": ""}, "cache"),
        ({"cache": 3}, "cache"),
        ({"max_stalenes": 3}, "max_staleness"),  # the typo's hint
        ("default", "must be a dict"),
    ],
)
def test_bad_configuration(settings, value, message):
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"user_check_cache": value}}
    with pytest.raises(ImproperlyConfigured, match=message):
        get_config()


def _ids(settings, cache, debug=False):
    settings.CACHES = CACHES
    settings.DEBUG = debug
    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"user_check_cache": {"cache": cache}}}
    return {m.id for m in run_checks() if m.id and m.id.startswith("webauth.")}


@pytest.mark.parametrize("cache", ["missing", "dummy"])
def test_e020_a_cache_that_cannot_remember(settings, cache):
    ids = _ids(settings, cache)
    assert "webauth.E020" in ids and "webauth.W020" not in ids


def test_w020_a_per_process_cache_in_production(settings):
    assert "webauth.W020" in _ids(settings, "checks")
    assert not {"webauth.E020", "webauth.W020"} & _ids(settings, "checks", debug=True)


def test_no_message_while_off(settings):
    settings.CACHES = CACHES
    ids = {m.id for m in run_checks()}
    assert not {"webauth.E020", "webauth.W020"} & ids


def test_a_save_of_other_columns_keeps_the_entry(on, client, alice, django_assert_num_queries):
    signed_in(client, alice)
    session_of(client)
    alice.first_name = "B"
    alice.save(update_fields=["first_name", "last_login"])
    with django_assert_num_queries(0):
        session_of(client)
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    assert session_of(client).json() is None
