"""The access tokens' sessions end with the session: the revocation feed and its sources.

A token's ``sid`` is noted when it is minted; a sign-out (the form's, the
app's, Django's ``logout()``), "sign out everywhere", a password saved, a user
deactivated or deleted, and a database session row deleted all mark it ended.
From then on ``GET /auth/token`` refuses that session, ``GET /auth/token/ended``
lists it, and a :class:`webauth.tokens.RevocationFeed` makes a verifier refuse
its tokens (docs/tokens.md, "Revocation").
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.test import Client, RequestFactory
from freezegun import freeze_time

from webauth import signals
from webauth.adapters.django import DjangoAdapter
from webauth.conf import get_config
from webauth.models import Session, TokenSession
from webauth.test import session_cookie_for
from webauth.testing.memory import MemoryAdapter
from webauth.tokens import InvalidToken, RevocationFeed, Verifier
from webauth.tokens.ended import FEED_LIMIT, FEED_MARGIN
from webauth.tokens.keys import generate
from webauth.user_sessions import sign_out_everywhere
from webauth.utils import call

from .support.helpers import csrf_pair

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
API = "https://api.example.com"
ISSUER = "http://testserver/auth"
KEY = generate("ES256", kid="key-1").export(private_key=True)
FEED = "/auth/token/ended"


def configure(settings, strategy="jwt", **tokens):
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": ["webauth.providers.DjangoCredentials"],
        "bearer": True,
        "tokens": {"keys": [KEY], "audiences": [API], **tokens},
        **(
            {"adapter": "webauth.adapters.django.DjangoAdapter", "session": {"strategy": strategy}}
            if strategy == "database"
            else {}
        ),
    }


@pytest.fixture(params=["jwt", "database"])
def strategy(request, settings):
    configure(settings, request.param)
    return request.param


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", email="alice@example.com", password="pw")


def served(client, view):
    """Run *view* on a request carrying *client*'s cookies, through webauth's middleware;
    the cookies it sets go back to *client*."""
    from django.http import HttpResponse

    from webauth.middleware import AuthMiddleware

    request = RequestFactory().get("/")
    request.COOKIES.update({k: v.value for k, v in client.cookies.items()})

    def run(r):
        view(r)
        return HttpResponse()

    response = AuthMiddleware(run)(request)
    for name, morsel in response.cookies.items():
        client.cookies[name] = morsel.value
    return response


def signed_in(user):
    client = Client()
    name, value = session_cookie_for(user)
    client.cookies[name] = value
    return client


def token_of(client):
    response = client.get("/auth/token")
    assert response.status_code == 200, response.content
    return response.json()["access_token"]


def sid_of(token):
    import base64

    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sid"]


def ended(since=None):
    response = Client().get(FEED, {} if since is None else {"since": since})
    assert response.status_code == 200, response.content
    return response.json()


def ended_sids(since=None):
    return [entry["sid"] for entry in ended(since)["ended"]]


def checked_by_feed(**options):
    """A verifier of the live site's JWKS and feed, fetched through the test client."""

    def fetch(url):
        path = url.removeprefix("http://testserver")
        response = Client().get(path)
        assert response.status_code == 200
        return response.json()

    feed = RevocationFeed(f"http://testserver{FEED}", interval=0, fetch=fetch, **options)
    check = Verifier(
        issuer=ISSUER,
        audience=API,
        jwks_url="http://testserver/auth/.well-known/jwks.json",
        fetch=fetch,
        is_revoked=feed,
    )
    return check, feed


@pytest.fixture
def announced():
    seen = []

    def receiver(sender, signal, **kwargs):
        seen.append(kwargs)

    signals.token_sessions_ended.connect(receiver)
    yield seen
    signals.token_sessions_ended.disconnect(receiver)


# -- a sign-out -------------------------------------------------------------------------------
def test_a_sign_out_lists_the_session_and_refuses_its_tokens(strategy, alice, announced):
    client = signed_in(alice)
    token = token_of(client)
    check, _feed = checked_by_feed()
    assert check.verify(token)["sub"] == str(alice.pk)
    assert ended_sids() == []
    response = client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    assert response.status_code == 302
    assert ended_sids() == [sid_of(token)]
    with pytest.raises(InvalidToken) as refused:
        check.verify(token)
    assert refused.value.reason == "revoked"
    assert announced == [{"sids": [sid_of(token)], "user_id": str(alice.pk), "reason": "signout"}]


def test_a_copied_jwt_cookie_mints_nothing_after_its_sign_out(settings, alice):
    configure(settings)
    client = signed_in(alice)
    copy = Client()
    copy.cookies.update(client.cookies)
    token_of(client)
    client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    # The JWT itself still decodes (a cookie cannot be recalled); its session has ended.
    refused = copy.get("/auth/token")
    assert refused.status_code == 401
    assert refused.json() == {"error": "SessionRequired"}


def test_a_session_signed_out_before_its_first_token_is_not_fed_but_kept(settings, alice):
    configure(settings)
    client = signed_in(alice)
    copy = Client()
    copy.cookies.update(client.cookies)
    client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    assert ended_sids() == []  # no service has a token of it
    assert copy.get("/auth/token").status_code == 401  # and none is minted for it


def test_an_app_sign_out_and_djangos_logout_end_the_tokens(strategy, alice):
    _, raw = session_cookie_for(alice)
    app = Client(headers={"Authorization": f"Bearer {raw}"})
    minted = app.post("/auth/app/access-token", {}, content_type="application/json")
    assert minted.status_code == 200, minted.content
    sid = sid_of(minted.json()["access_token"])
    assert app.post("/auth/app/signout").status_code == 200
    assert ended_sids() == [sid]
    # Django's logout() (the admin's "Log out") on a browser's session: what it
    # sends is what webauth hears.
    client = signed_in(alice)
    other = sid_of(token_of(client))
    served(client, lambda r: user_logged_out.send(sender=type(alice), request=r, user=alice))
    assert set(ended_sids()) == {sid, other}


# -- every session of a user ------------------------------------------------------------------
def test_sign_out_everywhere_ends_the_others_and_keeps_this_one(strategy, alice, announced):
    here, there = signed_in(alice), signed_in(alice)
    kept, gone = token_of(here), token_of(there)
    assert sid_of(kept) != sid_of(gone)
    served(here, lambda r: sign_out_everywhere(alice, r))
    assert ended_sids() == [sid_of(gone)]
    assert announced[0]["reason"] == "signout_everywhere"
    assert token_of(here)  # this browser goes on
    # The other: its database session is gone; a JWT lives on but mints no more.
    assert there.get("/auth/token").status_code == 401


def test_the_apps_sign_out_everywhere_ends_every_session(strategy, alice):
    _, raw = session_cookie_for(alice)
    app = Client(headers={"Authorization": f"Bearer {raw}"})
    mine = app.post("/auth/app/access-token", {}, content_type="application/json").json()
    browser = signed_in(alice)
    theirs = token_of(browser)
    assert app.post("/auth/app/signout-everywhere").status_code == 200
    assert set(ended_sids()) == {sid_of(mine["access_token"]), sid_of(theirs)}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda user: (user.set_password("a new one 42"), user.save()), "password"),
        (lambda user: (setattr(user, "is_active", False), user.save()), "inactive"),
        (lambda user: user.delete(), "deleted"),
    ],
    ids=["password", "deactivated", "deleted"],
)
def test_a_password_saved_or_a_user_gone_ends_every_session(
    strategy, alice, announced, change, reason
):
    first, second = token_of(signed_in(alice)), token_of(signed_in(alice))
    user_id = str(alice.pk)
    change(alice)
    assert set(ended_sids()) == {sid_of(first), sid_of(second)}
    # (A deleted user's database sessions go first, each row "revoked", and
    # leave nothing for the user's own end.)
    reasons = {"revoked"} if reason == "deleted" and strategy == "database" else {reason}
    assert {a["reason"] for a in announced} == reasons
    assert {a["user_id"] for a in announced} == {user_id}


def test_other_saves_of_the_user_end_nothing(strategy, alice):
    token = token_of(signed_in(alice))
    alice.first_name = "Alice"
    alice.save()
    alice.last_login = datetime.now(UTC)
    alice.save(update_fields=["last_login"])
    assert ended_sids() == []
    assert TokenSession.objects.get(sid=sid_of(token)).ended is None


def test_a_kept_session_gets_a_new_sid_with_the_new_password(strategy, alice):
    client = signed_in(alice)
    before = token_of(client)
    from webauth import update_session_auth_hash

    def change(r):
        alice.set_password("a new one 42")
        alice.save()
        update_session_auth_hash(r, alice)

    served(client, change)
    after = token_of(client)
    assert sid_of(after) != sid_of(before)
    assert ended_sids() == [sid_of(before)]


def test_a_database_session_row_deleted_anywhere_is_fed(settings, alice):
    configure(settings, "database")
    token = token_of(signed_in(alice))
    Session.objects.filter(user=alice).delete()  # the admin's delete, a shell's
    assert ended_sids() == [sid_of(token)]


def test_a_deleted_row_no_token_was_minted_for_keeps_nothing(settings, alice):
    configure(settings, "database")
    signed_in(alice)
    Session.objects.filter(user=alice).delete()
    assert not TokenSession.objects.exists()


# -- the feed -----------------------------------------------------------------------------------
def test_the_feed_answers_from_since_and_tells_the_next(settings, alice):
    configure(settings)
    with freeze_time("2026-12-01 12:00:00") as clock:
        first = signed_in(alice)
        early = sid_of(token_of(first))
        first.post("/auth/signout", {"csrfToken": csrf_pair(first)})
        clock.tick(10)
        second = signed_in(alice)
        late = sid_of(token_of(second))
        second.post("/auth/signout", {"csrfToken": csrf_pair(second)})
        clock.tick(5)
        body = ended()
        now = int(datetime.now(UTC).timestamp())
        assert body["until"] == now
        assert [e["sid"] for e in body["ended"]] == [early, late]
        assert [e["at"] for e in body["ended"]] == [now - 15, now - 5]
        assert ended_sids(since=now - 5) == [late]
        assert ended_sids(since=now - 4) == []
        assert ended_sids(since=body["until"]) == []


def test_the_feed_reaches_back_only_as_far_as_a_token_lives(settings, alice):
    configure(settings, max_age=60)
    with freeze_time("2026-12-01 12:00:00") as clock:
        client = signed_in(alice)
        sid = sid_of(token_of(client))
        client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
        clock.tick(60 + FEED_MARGIN)
        assert ended_sids(since=0) == [sid]  # its tokens may still be believed
        clock.tick(1)
        assert ended_sids(since=0) == []  # every one of them has expired


def test_a_full_answer_ends_at_its_last_entry(settings):
    configure(settings)
    storage = get_config().storage
    with freeze_time("2026-12-01 12:00:00") as clock:
        expires = datetime.now(UTC) + timedelta(minutes=5)
        for n in range(FEED_LIMIT + 1):
            storage.register_token_session(f"sid-{n:05d}", "7", expires)
            storage.end_token_session(f"sid-{n:05d}", "7", None)
            if n == FEED_LIMIT - 1:
                clock.tick(1)
        body = ended()
        assert len(body["ended"]) == FEED_LIMIT
        assert [e["sid"] for e in body["ended"]] == [f"sid-{n:05d}" for n in range(FEED_LIMIT)]
        rest = Client().get(FEED, {"after": body["next"]}).json()
        assert [e["sid"] for e in rest["ended"]] == [f"sid-{FEED_LIMIT:05d}"]
        assert "next" not in rest


def test_a_full_answer_at_one_instant_goes_on_after_its_last_sid(settings):
    # A user with more sessions than a page signed out everywhere: one instant.
    configure(settings)
    storage = get_config().storage
    with freeze_time("2026-12-01 12:00:00"):
        expires = datetime.now(UTC) + timedelta(minutes=5)
        for n in range(FEED_LIMIT + 5):
            storage.register_token_session(f"sid-{n:05d}", "7", expires)
        storage.end_user_token_sessions("7")
        first = ended()
        second = Client().get(FEED, {"after": first["next"]}).json()
    sids = [e["sid"] for e in first["ended"] + second["ended"]]
    assert sids == [f"sid-{n:05d}" for n in range(FEED_LIMIT + 5)]
    assert "next" not in second


def test_the_follower_reads_every_page(settings):
    configure(settings)
    storage = get_config().storage
    expires = datetime.now(UTC) + timedelta(minutes=5)
    for n in range(FEED_LIMIT + 2):
        storage.register_token_session(f"sid-{n:05d}", "7", expires)
    storage.end_user_token_sessions("7")
    _check, feed = checked_by_feed()
    assert feed({"sid": f"sid-{FEED_LIMIT + 1:05d}"}) is True
    assert feed({"sid": "sid-00000"}) is True and not feed.failing


@pytest.mark.parametrize(
    ("name", "value"),
    [
        *(("since", v) for v in ("abc", "-1", "1.5", "1" * 13, "", " 1", "１２")),
        *(("after", v) for v in ("", "12", "12.", ".sid", "x.sid", "1.a/b", "1." + "a" * 33)),
        ("after", "1" * 20 + ".sid"),
        # Digits past year 9999 (they were a 500), and past int()'s digit limit.
        ("after", "9" * 19 + ".sid"),
        ("after", "253402300800000000.sid"),
        ("after", "1" * 5000 + ".sid"),
    ],
)
def test_a_since_or_after_that_is_no_time_is_refused(settings, name, value):
    configure(settings)
    response = Client().get(FEED, {name: value})
    assert response.status_code == 400
    assert response.json()["error"] == "InvalidRequest"


def test_the_feed_is_off_with_tokens_or_feed_off(settings):
    settings.WEBAUTH = {"secret": SECRET, "providers": []}
    assert Client().get(FEED).status_code == 404
    configure(settings, feed=False)
    assert Client().get(FEED).status_code == 404
    configure(settings)
    answer = Client().get(FEED)
    assert answer.status_code == 200
    assert "no-store" in answer["Cache-Control"]
    assert answer["Access-Control-Allow-Origin"] == "*"
    assert Client().post(FEED).status_code == 405


def test_the_feed_is_rate_limited(settings):
    configure(settings)
    settings.WEBAUTH = {**settings.WEBAUTH, "rate_limits": {"token_feed": "2/m/ip"}}
    codes = [Client().get(FEED).status_code for _ in range(3)]
    assert codes == [200, 200, 429]


def test_a_failing_adapter_is_a_500_and_logged(settings, monkeypatch, caplog):
    configure(settings)

    def broken(*args):
        raise RuntimeError("database down")

    monkeypatch.setattr(DjangoAdapter, "list_ended_token_sessions", broken)
    response = Client().get(FEED)
    assert response.status_code == 500
    assert response.json() == {"error": "AdapterError"}
    assert "database down" in caplog.text


def test_a_failing_adapter_never_blocks_a_sign_out(settings, alice, monkeypatch):
    configure(settings)
    client = signed_in(alice)
    token_of(client)

    def broken(*args):
        raise RuntimeError("database down")

    monkeypatch.setattr(DjangoAdapter, "end_token_session", broken)
    response = client.post("/auth/signout", {"csrfToken": csrf_pair(client)})
    assert response.status_code == 302
    assert not response.cookies["authjs.session-token"].value  # signed out all the same


# -- the verifier's side ------------------------------------------------------------------------
def _document(*entries, until=100):
    return {"ended": [{"sid": s, "at": a} for s, a in entries], "until": until}


def test_the_feed_follower_polls_from_until_and_remembers(monkeypatch):
    asked = []
    answers = [_document(("a", 50), until=100), _document(("b", 120), until=130)]

    def fetch(url):
        asked.append(url)
        return answers[len(asked) - 1] if len(asked) <= len(answers) else _document(until=200)

    feed = RevocationFeed("https://site/feed", interval=0, fetch=fetch, remember=10**12)
    assert feed({"sid": "a"}) is True
    assert feed({"sid": "b"}) is True
    assert feed({"sid": "c"}) is False
    assert feed({}) is False
    assert asked[:2] == ["https://site/feed", "https://site/feed?since=100"]


def test_the_feed_follower_forgets_what_no_token_can_outlive():
    now = datetime.now(UTC).timestamp()
    feed = RevocationFeed(
        "https://site/feed",
        interval=0,
        remember=60,
        fetch=lambda url: _document(("old", now - 61), ("new", now - 59)),
    )
    assert feed({"sid": "new"}) is True
    assert feed({"sid": "old"}) is False


def test_the_feed_follower_asks_at_most_every_interval():
    asked = []
    feed = RevocationFeed(
        "https://site/feed", interval=3600, fetch=lambda url: asked.append(url) or _document()
    )
    for _ in range(5):
        feed({"sid": "x"})
    assert len(asked) == 1


@pytest.mark.parametrize(
    "answer",
    [
        None,
        [],
        {"ended": []},
        {"until": 5},
        {"until": "5", "ended": []},
        {"until": True, "ended": []},
    ],
)
def test_a_feed_it_cannot_read_keeps_what_is_known_or_fails_closed(answer):
    answers = [_document(("a", 2**40)), answer]

    def fetch(url):
        return answers.pop(0) if answers else answer

    lenient = RevocationFeed("https://site/feed", interval=0, fetch=fetch)
    assert lenient({"sid": "a"}) is True  # the first answer
    assert lenient({"sid": "a"}) is True and lenient.failing  # the bad one: still known
    assert lenient({"sid": "b"}) is False
    strict = RevocationFeed(
        "https://site/feed", interval=0, fail_closed=True, fetch=lambda u: answer
    )
    assert strict({"sid": "b"}) is True and strict.failing


def test_a_feed_entry_of_the_wrong_shape_is_skipped():
    feed = RevocationFeed(
        "https://site/feed",
        interval=0,
        remember=10**12,
        fetch=lambda url: {
            "until": 9,
            "ended": [{"sid": 5, "at": 1}, {"sid": "ok", "at": 1}, "x", {"sid": "b", "at": True}],
        },
    )
    assert feed({"sid": "ok"}) is True
    assert feed({"sid": "b"}) is False and not feed.failing


# -- the adapters' methods ----------------------------------------------------------------------
@pytest.fixture(params=["django", "memory"])
def adapter(request, db):
    return DjangoAdapter() if request.param == "django" else MemoryAdapter()


def test_the_adapters_keep_token_sessions_alike(adapter):
    later = datetime.now(UTC) + timedelta(minutes=5)
    assert call(adapter.register_token_session, "s1", "1", later) is True
    assert call(adapter.register_token_session, "s1", "1", later) is True  # again: still live
    assert call(adapter.register_token_session, "s2", "1", later) is True
    assert call(adapter.register_token_session, "s3", "2", later) is True
    assert sorted(call(adapter.end_user_token_sessions, "1", "s2")) == ["s1"]
    assert call(adapter.register_token_session, "s1", "1", later) is False  # ended: no more
    assert call(adapter.end_token_session, "s3", "2", later) is True
    assert call(adapter.end_token_session, "s3", "2", later) is False  # once
    # A session no token was minted for: kept ended (with an expiry), never listed.
    assert call(adapter.end_token_session, "s4", "2", later) is False
    assert call(adapter.register_token_session, "s4", "2", later) is False
    assert call(adapter.end_token_session, "s5", "2", None) is False  # not kept
    assert call(adapter.register_token_session, "s5", "2", later) is True
    since = datetime.now(UTC) - timedelta(minutes=1)
    listed = call(adapter.list_ended_token_sessions, since, 10)
    assert [sid for sid, _ in listed] == ["s1", "s3"]
    assert call(adapter.list_ended_token_sessions, since, 1) == listed[:1]
    assert call(adapter.list_ended_token_sessions, datetime.now(UTC) + timedelta(1), 10) == []


@pytest.mark.django_db(transaction=True)
def test_a_session_noted_by_many_threads_at_once_is_one_row(settings):
    configure(settings)
    adapter = DjangoAdapter()
    later = datetime.now(UTC) + timedelta(minutes=5)
    barrier = threading.Barrier(8)
    answers = []

    def note():
        from django.db import connection

        try:
            barrier.wait(5)
            answers.append(adapter.register_token_session("race", "1", later))
        finally:
            connection.close()

    threads = [threading.Thread(target=note) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert answers == [True] * 8
    assert TokenSession.objects.filter(sid="race").count() == 1


def test_session_rows_are_watched_only_while_tokens_are_on(settings):
    from django.db.models.signals import post_delete

    # Any post_delete receiver costs every deletion of Session rows a read first.
    settings.WEBAUTH = {"secret": SECRET, "providers": []}
    assert not post_delete.has_listeners(Session)
    configure(settings, "database")
    assert post_delete.has_listeners(Session)


# -- the module's own rules ------------------------------------------------------------------
def test_the_page_and_margin_are_as_documented():
    # docs/tokens.md promises both: 1,000 entries a page, a minute of clock skew.
    assert (FEED_LIMIT, FEED_MARGIN) == (1000, 60)


def test_a_session_is_noted_until_the_window_after_next(settings, alice):
    from webauth.tokens.ended import note_minted

    configure(settings, max_age=300)
    config = get_config()
    assert note_minted(config, "sid-a", str(alice.pk), 1_796_212_950.9)
    row = TokenSession.objects.get(sid="sid-a")
    # 1796212950 // 300 = 5987376, + 2 windows: 5987378 * 300.
    assert row.expires == datetime.fromtimestamp(5_987_378 * 300, UTC)
    assert row.minted and row.ended is None
    # Another token in the same window asks for the same time: nothing to write.
    assert note_minted(config, "sid-a", str(alice.pk), 1_796_212_999)
    assert TokenSession.objects.get(sid="sid-a").expires == row.expires


def test_a_session_signed_out_before_any_token_is_kept_a_sessions_life(settings, alice):
    from webauth.tokens.ended import end_session

    configure(settings)
    config = get_config()
    with freeze_time("2026-12-01 12:00:00"):
        end_session(config, "sid-b", str(alice.pk), "signout", keep_unknown=True)
        row = TokenSession.objects.get(sid="sid-b")
        assert row.expires == datetime.now(UTC) + timedelta(seconds=config.session.max_age)
        assert row.ended == datetime.now(UTC) and not row.minted
    end_session(config, "sid-c", str(alice.pk), "revoked", keep_unknown=False)
    assert not TokenSession.objects.filter(sid="sid-c").exists()


def test_nothing_is_written_while_tokens_are_off(settings, alice):
    from django.test import RequestFactory as Factory

    from webauth.state import get_state
    from webauth.tokens.ended import end_request_session, end_session, end_user_sessions

    settings.WEBAUTH = {"secret": SECRET, "providers": ["webauth.providers.DjangoCredentials"]}
    config = get_config()
    end_session(config, "sid-d", str(alice.pk), "signout", keep_unknown=True)
    assert end_user_sessions(config, str(alice.pk), "password") == []
    request = Factory().get("/")
    request.COOKIES["authjs.session-token"] = session_cookie_for(alice)[1]
    end_request_session(get_state(request))
    alice.set_password("another one 42")
    alice.save()
    assert not TokenSession.objects.exists()


def test_a_request_without_a_session_ends_nothing(settings, alice, monkeypatch):
    from django.test import RequestFactory as Factory

    from webauth.state import get_state
    from webauth.tokens.ended import end_request_session

    configure(settings)
    asked = []
    monkeypatch.setattr(DjangoAdapter, "end_token_session", lambda *a: asked.append(a))
    request = Factory().get("/")  # held: the state keeps only a weak reference
    end_request_session(get_state(request))
    assert asked == []


def test_a_failure_is_logged_once_and_never_raised(settings, alice, monkeypatch, caplog):
    from django.test import RequestFactory as Factory

    from webauth.sessions.jwt import JwtSessions
    from webauth.state import get_state
    from webauth.tokens.ended import end_request_session, end_session

    configure(settings)
    config = get_config()

    def broken(*args):
        raise RuntimeError("database down")

    # The adapter's own failure: Storage logs it (AdapterError), nothing more here.
    monkeypatch.setattr(DjangoAdapter, "end_token_session", broken)
    caplog.clear()
    end_session(config, "sid-e", str(alice.pk), "signout", keep_unknown=True)
    errors = [r.getMessage() for r in caplog.records if r.msg.startswith("[auth][error]")]
    assert len(errors) == 1 and "adapter_end_token_session" in errors[0]
    # Anything else (here the session's facts) is logged as an AuthError.
    monkeypatch.setattr(JwtSessions, "facts", broken)
    request = Factory().get("/")
    request.COOKIES["authjs.session-token"] = session_cookie_for(alice)[1]
    caplog.clear()
    end_request_session(get_state(request))
    errors = [r.getMessage() for r in caplog.records if r.msg.startswith("[auth][error]")]
    assert len(errors) == 1 and "AuthError" in errors[0] and "database down" in caplog.text


def test_a_request_is_not_read_again_when_there_is_nothing_to_end(settings, alice, monkeypatch):
    from django.test import RequestFactory as Factory

    from webauth.sessions.jwt import JwtSessions
    from webauth.state import get_state
    from webauth.tokens.ended import end_request_session

    read = []
    real = JwtSessions.facts
    monkeypatch.setattr(JwtSessions, "facts", lambda *a: read.append(a) or real(*a))
    configure(settings)
    anonymous = Factory().get("/")  # held: the state keeps only a weak reference
    end_request_session(get_state(anonymous))  # no session: nothing to read
    settings.WEBAUTH = {"secret": SECRET, "providers": ["webauth.providers.DjangoCredentials"]}
    signed = Factory().get("/")
    signed.COOKIES["authjs.session-token"] = session_cookie_for(alice)[1]
    end_request_session(get_state(signed))  # tokens off: nothing to end
    assert read == []


def test_other_failures_are_logged_as_what_they_are(settings, alice, monkeypatch, caplog):
    from django.test import RequestFactory as Factory

    from webauth.adapters.storage import Storage
    from webauth.errors import SessionTokenError
    from webauth.sessions.jwt import JwtSessions
    from webauth.state import get_state
    from webauth.tokens.ended import end_session

    configure(settings)

    def broken(*args):
        raise RuntimeError("storage wrapper down")

    # Not the adapter's (Storage logs those): logged here, as an AuthError.
    monkeypatch.setattr(Storage, "end_token_session", broken)
    caplog.clear()
    end_session(get_config(), "sid-f", str(alice.pk), "signout", keep_unknown=True)
    errors = [r.getMessage() for r in caplog.records if r.msg.startswith("[auth][error]")]
    assert len(errors) == 1 and "AuthError" in errors[0]

    # webauth's own error keeps its type.
    def refused(*args):
        raise SessionTokenError("unreadable session")

    from webauth.tokens.ended import end_request_session

    monkeypatch.setattr(JwtSessions, "facts", refused)
    request = Factory().get("/")
    request.COOKIES["authjs.session-token"] = session_cookie_for(alice)[1]
    caplog.clear()
    end_request_session(get_state(request))
    (first, *_rest) = [r.getMessage() for r in caplog.records]
    assert "SessionTokenError" in first and "unreadable session" in first, first


def test_a_session_gone_between_the_read_and_the_sign_out_ends_nothing(
    settings, alice, monkeypatch
):
    from django.test import RequestFactory as Factory

    from webauth.sessions.jwt import JwtSessions
    from webauth.state import get_state
    from webauth.tokens.ended import end_request_session

    configure(settings)
    monkeypatch.setattr(JwtSessions, "facts", lambda *a: None)
    request = Factory().get("/")
    request.COOKIES["authjs.session-token"] = session_cookie_for(alice)[1]
    state = get_state(request)
    assert state.session_result.user_id == str(alice.pk)
    end_request_session(state)  # no facts: nothing to end, and no error
    assert not TokenSession.objects.exists()


def test_a_cursor_of_other_digits_is_refused(settings):
    configure(settings)
    # str.isdigit() takes these, and int() reads them: the cursor must be ASCII.
    for cursor in ("１２.sid", "١٢.sid"):
        response = Client().get(FEED, {"after": cursor})
        assert response.status_code == 400, cursor


def test_end_user_sessions_says_which_ended_and_nothing_on_failure(
    settings, alice, monkeypatch, caplog
):
    from webauth.adapters.storage import Storage
    from webauth.tokens.ended import end_user_sessions

    configure(settings)
    config = get_config()
    storage = config.storage
    later = datetime.now(UTC) + timedelta(minutes=5)
    storage.register_token_session("sid-g", str(alice.pk), later)
    storage.register_token_session("sid-h", str(alice.pk), later)
    assert sorted(end_user_sessions(config, str(alice.pk), "password")) == ["sid-g", "sid-h"]
    assert end_user_sessions(config, str(alice.pk), "password") == []  # ended already

    def broken(*args):
        raise RuntimeError("storage wrapper down")

    monkeypatch.setattr(Storage, "end_user_token_sessions", broken)
    caplog.clear()
    assert end_user_sessions(config, str(alice.pk), "password") == []
    errors = [r.getMessage() for r in caplog.records if r.msg.startswith("[auth][error]")]
    assert len(errors) == 1 and "AuthError" in errors[0]
