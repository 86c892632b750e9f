"""The pieces of :mod:`webauth.tokens.ended` alone: the feed's cursor and window
at their edges, and each model-signal receiver's guards (tokens off, a new or
unsaved row, nothing that ends a session), with the functions they call spied
on. tests/test_tokens_ended.py runs the same paths through the site.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from django.db.models.signals import post_delete

from webauth.tokens import ended

SID = "a" * 32
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


# -- the cursor -----------------------------------------------------------------------------
def test_a_cursor_round_trips_to_the_microsecond():
    moment = datetime(2026, 12, 1, 12, 0, 0, 123456, tzinfo=UTC)
    cursor = ended.cursor_of(moment, "s-1_X")
    assert cursor == f"{int(moment.timestamp())}123456.s-1_X"
    assert ended.read_cursor(cursor) == (moment, "s-1_X")
    assert ended.read_cursor("0.a") == (datetime(1970, 1, 1, tzinfo=UTC), "a")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "123",
        "123.",
        ".abc",
        "12a.abc",
        "-1.abc",
        "１２.abc",
        "123." + "a" * 33,
        "123.a+b",
        "123.a.b",
        "123.a b",
        "123.é",
        "123.ａ",
        "9" * 19 + ".abc",
        "253402300800000000.abc",
        "1" * 5000 + ".abc",
    ],
)
def test_a_cursor_of_another_shape_is_none(cursor):
    assert ended.read_cursor(cursor) is None


def test_a_cursor_sid_may_be_thirty_two_characters_and_the_last_year_9999():
    assert ended.read_cursor("1." + SID) == (
        datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=1),
        SID,
    )
    last = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert ended.read_cursor(ended.cursor_of(last, "z")) == (last, "z")


# -- the feed's window ----------------------------------------------------------------------
@dataclass
class Rows:
    rows: list[tuple[str, datetime]] = field(default_factory=list)
    asked: list[tuple[datetime, int, str | None]] = field(default_factory=list)

    def list_ended_token_sessions(self, start, limit, after_sid):
        self.asked.append((start, limit, after_sid))
        return self.rows


def feed_config(rows: Rows, max_age: int = 600) -> Any:
    return SimpleNamespace(tokens=SimpleNamespace(max_age=max_age), storage=rows)


@pytest.fixture
def now(monkeypatch):
    monkeypatch.setattr(ended, "_now", lambda: NOW)
    return NOW


def test_the_feed_reaches_back_a_token_life_and_the_margin(now):
    rows = Rows()
    page = ended.ended_since(feed_config(rows))
    oldest = NOW - timedelta(seconds=600 + 60)
    assert rows.asked == [(oldest, 1000, None)]
    assert (page.entries, page.until, page.next) == ([], int(NOW.timestamp()), None)
    assert (ended.FEED_LIMIT, ended.FEED_MARGIN) == (1000, 60)


def test_since_is_taken_within_the_window_and_raised_to_it(now):
    rows = Rows()
    config = feed_config(rows)
    oldest = NOW - timedelta(seconds=660)
    ended.ended_since(config, since=oldest.timestamp() + 5)
    ended.ended_since(config, since=oldest.timestamp() - 5)
    assert [start for start, _, _ in rows.asked] == [oldest + timedelta(seconds=5), oldest]


def test_an_after_cursor_is_taken_from_the_window_start_on(now):
    rows = Rows()
    config = feed_config(rows)
    oldest = NOW - timedelta(seconds=660)
    ended.ended_since(config, after=(oldest, "at-edge"))
    ended.ended_since(config, after=(oldest - timedelta(microseconds=1), "too-old"))
    ended.ended_since(config, since=10**10, after=(oldest + timedelta(seconds=1), "wins"))
    assert rows.asked == [
        (oldest, 1000, "at-edge"),
        (oldest, 1000, None),
        (oldest + timedelta(seconds=1), 1000, "wins"),
    ]


def test_a_full_answer_says_where_it_stopped(now, monkeypatch):
    monkeypatch.setattr(ended, "FEED_LIMIT", 2)
    first = NOW - timedelta(seconds=30)
    last = NOW - timedelta(seconds=20, microseconds=5)
    rows = Rows([("one", first), ("two", last)])
    page = ended.ended_since(feed_config(rows))
    assert page.entries == [("one", int(first.timestamp())), ("two", int(last.timestamp()))]
    assert page.next == ended.cursor_of(last, "two")
    rows.rows = rows.rows[:1]
    assert ended.ended_since(feed_config(rows)).next is None


# -- the receivers --------------------------------------------------------------------------
@pytest.fixture
def calls(monkeypatch):
    """The receivers' calls of end_user_sessions and end_session, and a config they see."""
    seen: list[tuple[Any, ...]] = []
    config = SimpleNamespace(tokens=object(), name="config")
    monkeypatch.setattr(ended, "get_config", lambda: config)
    monkeypatch.setattr(
        ended, "end_user_sessions", lambda c, user_id, reason: seen.append((c, user_id, reason))
    )
    monkeypatch.setattr(
        ended,
        "end_session",
        lambda c, sid, user_id, reason, *, keep_unknown: seen.append(
            (c, sid, user_id, reason, keep_unknown)
        ),
    )
    return SimpleNamespace(seen=seen, config=config)


class User:
    def __init__(self, pk: object = 7, *, password: str | None = None, is_active: object = True):
        self.pk = pk
        self._password = password
        self.is_active = is_active


def test_a_new_password_ends_every_session(calls):
    ended.user_saved(None, User(password="new"))
    assert calls.seen == [(calls.config, "7", "password")]


def test_a_deactivation_ends_every_session_and_a_password_names_the_reason_first(calls):
    ended.user_saved(None, User(is_active=False))
    ended.user_saved(None, User(password="new", is_active=False))
    assert calls.seen == [(calls.config, "7", "inactive"), (calls.config, "7", "password")]


@pytest.mark.parametrize(
    "instance",
    [
        User(),
        User(is_active=0),  # falsy, not False: a custom model's field; only False ends
        User(is_active=None),
        User(pk=None, password="new"),
        User(pk=None, is_active=False),
        SimpleNamespace(pk=7),  # a user model with neither attribute
    ],
)
def test_other_saves_end_nothing(calls, instance):
    ended.user_saved(None, instance)
    assert calls.seen == []


def test_a_created_user_ends_nothing(calls):
    ended.user_saved(None, User(password="new", is_active=False), created=True)
    ended.user_saved(None, User(password="new"), created=False)
    assert calls.seen == [(calls.config, "7", "password")]


def test_a_deleted_user_ends_every_session_once_it_had_a_pk(calls):
    ended.user_deleted(None, User(pk=9))
    ended.user_deleted(None, User(pk=None))
    assert calls.seen == [(calls.config, "9", "deleted")]


def test_a_deleted_session_row_ends_its_sid(calls, monkeypatch):
    monkeypatch.setattr(
        ended, "database_sid", lambda config, token_hash, auth_hash: f"{token_hash}/{auth_hash}"
    )
    row = SimpleNamespace(token_hash="th", auth_hash="ah", user_id=3)
    ended.row_deleted(None, row)
    assert calls.seen == [(calls.config, "th/ah", "3", "revoked", False)]


@pytest.mark.parametrize("broken", [True, False])
def test_the_receivers_do_nothing_while_tokens_are_off_or_the_configuration_is_broken(
    calls, monkeypatch, broken
):
    def get_config():
        if broken:
            raise RuntimeError("a broken configuration")
        return SimpleNamespace(tokens=None)

    monkeypatch.setattr(ended, "get_config", get_config)
    assert ended._config() is None
    ended.user_saved(None, User(password="new"))
    ended.user_deleted(None, User())
    ended.row_deleted(None, SimpleNamespace(token_hash="t", auth_hash=None, user_id=1))
    assert calls.seen == []


def test_config_gives_the_configuration_while_tokens_are_on(calls):
    assert ended._config() is calls.config


# -- the request's and the user's sessions ----------------------------------------------------
class Sessions:
    def __init__(self, facts: object, stored: bool = False) -> None:
        self.result = facts
        self.stored = stored
        self.asked: list[tuple[object, ...]] = []

    def facts(self, config, raw, salt):
        self.asked.append((raw, salt))
        return self.result


def request_state(
    *,
    token: str | None = "raw",
    user_id: str | None = "5",
    facts: object = None,
    stored: bool = False,
    tokens: object = True,
) -> Any:
    return SimpleNamespace(
        config=SimpleNamespace(tokens=tokens),
        session_token=token,
        session_result=SimpleNamespace(user_id=user_id),
        sessions=Sessions(facts, stored),
        cookies={"session_token": SimpleNamespace(name="authjs.session-token")},
    )


@pytest.fixture
def ended_sessions(monkeypatch):
    seen: list[tuple[Any, ...]] = []
    monkeypatch.setattr(
        ended,
        "end_session",
        lambda c, sid, user_id, reason, *, keep_unknown: seen.append(
            (sid, user_id, reason, keep_unknown)
        ),
    )
    return seen


def test_the_request_session_ends_by_its_sid(ended_sessions):
    cookie = request_state(facts=SimpleNamespace(sid="s1"))
    ended.end_request_session(cookie)
    assert cookie.sessions.asked == [("raw", "authjs.session-token")]
    ended.end_request_session(request_state(facts=SimpleNamespace(sid="s2"), stored=True))
    assert ended_sessions == [("s1", "5", "signout", True), ("s2", "5", "signout", False)]


@pytest.mark.parametrize(
    "state",
    [
        request_state(facts=SimpleNamespace(sid="s"), user_id=None),
        request_state(facts=None),
        request_state(facts=SimpleNamespace(sid="s"), token=None),
        request_state(facts=SimpleNamespace(sid="s"), token=""),
        request_state(facts=SimpleNamespace(sid="s"), tokens=None),
    ],
)
def test_a_request_without_a_session_user_or_tokens_ends_nothing(ended_sessions, state):
    ended.end_request_session(state)
    assert ended_sessions == []


class Ending:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []

    def end_user_token_sessions(self, user_id, keep_sid):
        self.asked.append((user_id, keep_sid))
        return ["x"]


def test_end_user_sessions_keeps_the_given_session_by_its_sid(monkeypatch):
    monkeypatch.setattr(ended, "_announce", lambda sids, user_id, reason: None)
    storage = Ending()
    config = SimpleNamespace(tokens=object(), storage=storage)
    keep = request_state(facts=SimpleNamespace(sid="mine"))
    assert ended.end_user_sessions(config, "5", "password", keep=keep) == ["x"]
    ended.end_user_sessions(config, "5", "password", keep=request_state(facts=None))
    ended.end_user_sessions(config, "5", "password", keep=request_state(token=None))
    ended.end_user_sessions(config, "5", "password")
    assert storage.asked == [("5", "mine"), ("5", None), ("5", None), ("5", None)]
    off = SimpleNamespace(tokens=None, storage=storage)
    assert ended.end_user_sessions(off, "5", "password", keep=keep) == []
    assert len(storage.asked) == 4


# -- the Session rows' receiver is connected only while tokens are on --------------------------
def _connected() -> bool:
    return any(key[0] == "webauth.token_session_row" for key, *_ in post_delete.receivers)


def test_the_session_row_receiver_follows_the_setting(monkeypatch):
    # A plain object as the settings: assigning to it sends no setting_changed,
    # so only the calls made here connect and disconnect.
    import django.conf

    fake = SimpleNamespace(WEBAUTH={"tokens": {"keys": []}}, configured=True, DEBUG=False)
    monkeypatch.setattr(django.conf, "settings", fake)
    try:
        ended.watch_session_rows()
        assert _connected()
        fake.WEBAUTH = {"tokens": {}}
        ended.watch_session_rows(setting="OTHER")  # another setting changed: nothing is done
        assert _connected()
        ended.watch_session_rows(setting="WEBAUTH")
        assert not _connected()
        fake.WEBAUTH = {"tokens": {"keys": []}}
        ended.watch_session_rows(setting="WEBAUTH")
        assert _connected()
        fake.WEBAUTH = "not a dict"
        ended.watch_session_rows()
        assert not _connected()
        fake.WEBAUTH = {"tokens": {"keys": []}}
        ended.watch_session_rows()
        del fake.WEBAUTH
        ended.watch_session_rows()
        assert not _connected()
    finally:
        monkeypatch.undo()
        ended.watch_session_rows()  # as the real settings say
