"""webauth.ratelimit: the rules, the routes they guard, and what holds across processes."""

import json
import logging
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory
from freezegun import freeze_time

from webauth import client_ip as client_ip_module
from webauth import counters, ratelimit, sign_in
from webauth.checks import check_rate_limit_actions, check_rate_limit_cache
from webauth.conf import RateRule, build_config
from webauth.conf.options import parse_rate
from webauth.errors import RateLimited
from webauth.forms import FormResult
from webauth.pages import SIGNIN_ERRORS
from webauth.providers import Credentials, DjangoCredentials
from webauth.providers.oauth import OIDC

from .support.gunicorn import gunicorn
from .support.helpers import csrf_pair
from .support.redis import HOST as REDIS_HOST
from .support.redis import PORT as REDIS_PORT
from .support.redis import REDIS_CACHE, fresh_redis_cache, redis_or_skip
from .support.redis import URL as REDIS_URL

REPO_ROOT = Path(__file__).resolve().parent.parent
SECRET = "test-secret-0123456789abcdef0123456789abcdef"
BASE = {"secret": SECRET, "providers": [DjangoCredentials()]}
LIMITED = "http://testserver/auth/signin?error=RateLimited"
FAILED = "http://testserver/auth/signin?error=CredentialsSignin&code=credentials"


def config_with(**extra):
    return build_config({**BASE, **extra}, lambda _: None)


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="correct horse")


def post_credentials(client, ip="198.51.100.1", headers=None, **fields):
    token = csrf_pair(client)
    return client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, **fields},
        headers=headers or {},
        REMOTE_ADDR=ip,
    )


def wrong(client, ip="198.51.100.1", username="alice", **kw):
    return post_credentials(client, ip, username=username, password="wrong", **kw)


# -- rate strings and the setting ----------------------------------------------------------


@pytest.mark.parametrize(
    "text, rules",
    [
        ("10/m/ip", [RateRule(10, 60, "ip")]),
        ("10/m/ip,5/5m/key", [RateRule(10, 60, "ip"), RateRule(5, 300, "key")]),
        (" 3 / 30s / ip+key ", [RateRule(3, 30, "ip+key")]),
        ("1/h/ip,2/2d/key", [RateRule(1, 3600, "ip"), RateRule(2, 172800, "key")]),
    ],
)
def test_parse_rate(text, rules):
    assert list(parse_rate(text)) == rules


@pytest.mark.parametrize(
    "text, message",
    [
        ("10/m", "is not <amount>/<duration>/<scope>"),
        ("ten/m/ip", "is not <amount>/<duration>/<scope>"),
        ("10/w/ip", "is not <amount>/<duration>/<scope>"),
        ("10/m/user", "'user' is not a scope"),
        ("0/m/ip", "allows nothing"),
        ("1/0m/ip", "allows nothing"),
        ("10/m/ip,", "is not <amount>/<duration>/<scope>"),
    ],
)
def test_parse_rate_errors(text, message):
    with pytest.raises(ValueError, match=message):
        parse_rate(text)


def test_defaults_follow_allauths_reference_points():
    rules = config_with().rate_limits.rules
    assert rules["signin"] == (RateRule(30, 60, "ip"),)
    # allauth's login_failed is 10/m/ip,5/5m/key
    assert rules["signin_failed"] == (
        RateRule(10, 60, "ip"),
        RateRule(5, 300, "ip+key"),
        RateRule(10, 300, "key"),
    )
    assert set(rules) >= {"oauth_callback", "session_update", "email_send", "code_failed"}
    assert config_with().rate_limits.cache == "default"


def test_setting_changes_only_the_actions_it_names():
    limits = config_with(
        rate_limits={"signin": "5/m/ip", "session_update": False, "mine": "1/s/key"},
        rate_limit_cache="limits",
    ).rate_limits
    assert limits.rules["signin"] == (RateRule(5, 60, "ip"),)
    assert limits.rules["session_update"] == ()
    assert limits.rules["mine"] == (RateRule(1, 1, "key"),)
    assert limits.rules["signin_failed"] == parse_rate("10/m/ip,5/5m/ip+key,10/5m/key")
    assert limits.cache == "limits"


def test_false_turns_every_limit_off():
    assert config_with(rate_limits=False).rate_limits.enabled is False


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"rate_limits": "10/m/ip"}, r"WEBAUTH\['rate_limits'\] must be a dict or False"),
        ({"rate_limits": {"signin": 10}}, r"rate_limits.signin'\] must be a rate string"),
        ({"rate_limits": {"signin": "10/m/everyone"}}, r"'everyone' is not a scope"),
        ({"rate_limit_cache": 3}, r"rate_limit_cache'\] must be a string"),
    ],
)
def test_setting_errors(extra, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        config_with(**extra)


# -- the counters ------------------------------------------------------------------------------


@pytest.fixture(params=["locmem", "redis", "redis-add-incr"])
def cache_alias(request, settings, monkeypatch):
    """The limiter's cache: Django's LocMemCache, and RedisCache when Redis answers.

    ``redis-add-incr``: RedisCache through the add/incr path every other cache takes,
    instead of the one-round-trip script.
    """
    if request.param.startswith("redis"):
        redis_or_skip()
        if request.param == "redis-add-incr":
            monkeypatch.setattr(counters, "redis_client", lambda cache: None)
        settings.CACHES = {**settings.CACHES, "limits": fresh_redis_cache()}
        return "limits"
    return "default"


def req(ip="198.51.100.1", **meta):
    return RequestFactory().post("/x", REMOTE_ADDR=ip, **meta)


def test_hit_lets_exactly_the_limit_through_then_says_how_long_to_wait(cache_alias):
    config = config_with(rate_limits={"mine": "3/m/ip"}, rate_limit_cache=cache_alias)
    with freeze_time("2026-01-01 12:00:15"):
        decisions = [ratelimit.hit(req(), "mine", config=config) for _ in range(5)]
    assert [bool(d) for d in decisions] == [True, True, True, False, False]
    assert decisions[3].retry_after == 45
    assert decisions[3].rule == RateRule(3, 60, "ip")
    assert decisions[0].retry_after == 0


def test_a_new_window_starts_from_zero(cache_alias):
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache=cache_alias)
    with freeze_time("2026-01-01 12:00:59") as frozen:
        assert ratelimit.hit(req(), "mine", config=config)
        assert not ratelimit.hit(req(), "mine", config=config)
        frozen.tick(2)
        assert ratelimit.hit(req(), "mine", config=config)


def test_addresses_and_keys_have_their_own_counters(cache_alias):
    config = config_with(rate_limits={"mine": "1/m/ip+key"}, rate_limit_cache=cache_alias)
    assert ratelimit.hit(req("198.51.100.1"), "mine", "alice", config=config)
    assert not ratelimit.hit(req("198.51.100.1"), "mine", " ALICE ", config=config)
    assert ratelimit.hit(req("198.51.100.2"), "mine", "alice", config=config)
    assert ratelimit.hit(req("198.51.100.1"), "mine", "bob", config=config)


def test_ipv6_neighbours_in_one_64_share_a_counter(cache_alias):
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache=cache_alias)
    assert ratelimit.hit(req("2001:db8:1:2::1"), "mine", config=config)
    assert not ratelimit.hit(req("2001:db8:1:2:ffff::9"), "mine", config=config)
    assert ratelimit.hit(req("2001:db8:1:3::1"), "mine", config=config)


def test_refund_gives_the_attempt_back(cache_alias):
    config = config_with(rate_limits={"mine": "2/m/ip"}, rate_limit_cache=cache_alias)
    for _ in range(10):
        decision = ratelimit.hit(req(), "mine", config=config)
        assert decision
        ratelimit.refund(decision)


def test_a_refund_after_the_window_leaves_nothing_behind(cache_alias):
    from django.core.cache import caches

    config = config_with(rate_limits={"mine": "2/m/ip"}, rate_limit_cache=cache_alias)
    decision = ratelimit.hit(req(), "mine", config=config)
    caches[cache_alias].delete_many(list(decision.counted))  # the window ended, it expired
    ratelimit.refund(decision)
    assert caches[cache_alias].get_many(list(decision.counted)) == {}


def test_check_counts_nothing(cache_alias):
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache=cache_alias)
    for _ in range(3):
        assert ratelimit.check(req(), "mine", config=config)
    assert ratelimit.hit(req(), "mine", config=config)
    refused = ratelimit.check(req(), "mine", config=config)
    assert not refused and refused.retry_after > 0


def test_usage_reads_each_action_s_per_address_counts_in_one_call(cache_alias, monkeypatch):
    # What the bot challenge's "abuse" asks (webauth.challenges): nothing is counted.
    from django.core.cache import caches

    config = config_with(
        rate_limits={
            "mine": "5/m/ip,2/m/key,3/h/ip",
            "yours": "4/m/ip+key,9/m/ip",
            "keyed": "1/m/key",
        },
        rate_limit_cache=cache_alias,
    )
    with freeze_time("2026-01-01 12:00:15"):
        for _ in range(2):
            ratelimit.hit(req(), "mine", "alice", config=config)
        ratelimit.hit(req(), "yours", "alice", config=config)
        ratelimit.hit(req("198.51.100.2"), "yours", "alice", config=config)
        reads = []
        cache = caches[cache_alias]
        real = type(cache).get_many
        monkeypatch.setattr(
            type(cache), "get_many", lambda self, keys: reads.append(keys) or real(self, keys)
        )
        used = ratelimit.usage(req(), ["mine", "yours", "keyed"], config=config)
        assert used == {
            "mine": ((RateRule(5, 60, "ip"), 2), (RateRule(3, 3600, "ip"), 2)),
            "yours": ((RateRule(9, 60, "ip"), 1),),
            "keyed": (),  # no rule per address
        }
        assert len(reads) == 1  # one round trip for all of them
        assert ratelimit.usage(req(), ["mine"], config=config) == {
            "mine": ((RateRule(5, 60, "ip"), 2), (RateRule(3, 3600, "ip"), 2))
        }  # reading counted nothing
        assert ratelimit.usage(req("198.51.100.3"), ["mine"], config=config)["mine"][0][1] == 0
    with freeze_time("2026-01-01 12:01:15"):  # the minute's window is over, not the hour's
        assert [n for _, n in ratelimit.usage(req(), ["mine"], config=config)["mine"]] == [0, 2]


def test_usage_with_nothing_to_read_and_with_a_broken_cache(settings, caplog, monkeypatch):
    config = config_with(rate_limits=False)
    assert ratelimit.usage(req(), ["signin_failed"], config=config) == {"signin_failed": ()}
    with pytest.raises(ValueError, match="not a rate-limit action"):
        ratelimit.usage(req(), ["nope"], config=config_with())
    monkeypatch.setattr(
        "django.core.cache.backends.locmem.LocMemCache.get_many",
        lambda self, keys: 1 / 0,
    )
    with caplog.at_level(logging.ERROR, logger="webauth.ratelimit"):
        used = ratelimit.usage(req(), ["signin_failed", "email_send"], config=config_with())
    assert used == {"signin_failed": (), "email_send": ()}
    assert "'signin_failed', 'email_send' could not be read" in caplog.text


def test_a_refusing_rule_stops_the_count_before_the_later_rules():
    # A stranger refused per address and identifier does not use up the identifier's limit.
    config = config_with(rate_limits={"mine": "1/m/ip+key,2/m/key"})
    assert ratelimit.hit(req("198.51.100.1"), "mine", "alice", config=config)
    for _ in range(5):
        assert not ratelimit.hit(req("198.51.100.1"), "mine", "alice", config=config)
    assert ratelimit.hit(req("198.51.100.2"), "mine", "alice", config=config)


def test_key_rules_are_skipped_without_a_key():
    config = config_with(rate_limits={"mine": "1/m/key"})
    for _ in range(3):
        assert ratelimit.hit(req(), "mine", None, config=config)


def test_hit_many_counts_as_hit_after_hit_stopping_at_the_first_refusal(cache_alias):
    from django.core.cache import caches

    config = config_with(
        rate_limits={"first": "2/m/ip", "second": "1/m/ip", "third": "5/m/key"},
        rate_limit_cache=cache_alias,
    )
    hits = (("first", None), ("second", None), ("third", "alice"))
    cache = caches[cache_alias]
    with freeze_time("2026-01-01 12:00:10"):
        one = ratelimit.hit_many(req(), hits, config=config)
        two = ratelimit.hit_many(req(), hits, config=config)
        three = ratelimit.hit_many(req(), hits, config=config)
        names = [one[0].counted[0], one[1].counted[0], one[2].counted[0]]
        counts = cache.get_many(names)
    assert [bool(d) for d in one] == [True, True, True]
    assert [d.action for d in one] == ["first", "second", "third"]
    assert [len(d.counted) for d in one] == [1, 1, 1]
    # "second" refuses: "third" is not counted, and is refused with second's rule.
    assert [bool(d) for d in two] == [True, False, False]
    assert two[1].rule == two[2].rule == RateRule(1, 60, "ip") and two[2].retry_after == 50
    assert two[2].counted == ()
    # "first" refuses: nothing after it is counted.
    assert [bool(d) for d in three] == [False, False, False]
    assert three[0].counted == one[0].counted and three[1].counted == three[2].counted == ()
    assert [int(counts[name]) for name in names] == [3, 2, 1]


def test_hit_many_refunds_each_decision_on_its_own(cache_alias):
    config = config_with(
        rate_limits={"tries": "100/m/ip", "fails": "1/m/key"}, rate_limit_cache=cache_alias
    )
    for _ in range(5):
        tries, fails = ratelimit.hit_many(req(), (("tries", None), ("fails", "k")), config=config)
        assert tries and fails
        ratelimit.refund(fails)
    tries, fails = ratelimit.hit_many(req(), (("tries", None), ("fails", "k")), config=config)
    assert fails and not ratelimit.hit(req(), "fails", "k", config=config)


def test_hit_many_checks_every_action_before_counting(cache_alias):
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache=cache_alias)
    with pytest.raises(ValueError, match="'nope'"):
        ratelimit.hit_many(req(), (("mine", None), ("nope", None)), config=config)
    assert ratelimit.hit(req(), "mine", config=config)  # nothing was counted


def test_hit_many_with_nothing_to_count():
    config = config_with(rate_limits={"mine": "1/m/key"})
    assert ratelimit.hit_many(req(), (), config=config) == ()
    decisions = ratelimit.hit_many(req(), (("mine", None), ("mine", None)), config=config)
    assert [(bool(d), d.counted) for d in decisions] == [(True, ()), (True, ())]


class CountingClient:
    """The limiter's Redis client, counting its round trips."""

    def __init__(self, client):
        self.client = client
        self.calls = 0

    def eval(self, *args):
        self.calls += 1
        return self.client.eval(*args)


@pytest.fixture
def redis_round_trips(settings, monkeypatch):
    redis_or_skip()
    settings.CACHES = {**settings.CACHES, "limits": fresh_redis_cache()}
    settings.WEBAUTH = {**BASE, "rate_limit_cache": "limits"}
    real = counters.redis_client
    clients: dict[int, CountingClient] = {}

    def counting(cache):
        client = real(cache)
        if client is None:
            return None
        return clients.setdefault(id(client), CountingClient(client))

    monkeypatch.setattr(counters, "redis_client", counting)

    def trips():
        return sum(c.calls for c in clients.values())

    return trips


@pytest.mark.django_db
def test_a_credentials_sign_in_costs_one_round_trip_and_a_refund(
    client_factory, alice, redis_round_trips
):
    response = post_credentials(client_factory(), username="alice", password="correct horse")
    assert "authjs.session-token" in response.cookies
    assert redis_round_trips() == 2  # signin + signin_failed, then the refund
    assert wrong(client_factory())["Location"] == FAILED
    assert redis_round_trips() == 3  # a failure keeps its count: no refund


def test_unknown_action_is_a_programming_error():
    with pytest.raises(ValueError, match="'nope' is not a rate-limit action"):
        ratelimit.hit(req(), "nope", config=config_with())


def test_limits_off_let_everything_through():
    config = config_with(rate_limits=False)
    for _ in range(5):
        assert ratelimit.hit(req(), "nope", config=config)


def test_cache_keys_hold_no_personal_data(settings):
    config = config_with(rate_limits={"mine": "1/m/ip+key"})
    decision = ratelimit.hit(req("198.51.100.77"), "mine", "alice@example.com", config=config)
    (name,) = decision.counted
    assert "alice" not in name and "198.51.100.77" not in name
    assert len(name) < 100


def test_a_failing_cache_lets_requests_through_and_logs(settings, caplog):
    settings.CACHES = {
        **settings.CACHES,
        "down": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",  # the discard port: nothing answers
            "OPTIONS": {"socket_connect_timeout": 0.2},
        },
    }
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache="down")
    with caplog.at_level(logging.ERROR, logger="webauth.ratelimit"):
        assert ratelimit.hit(req(), "mine", config=config)
        assert ratelimit.hit(req(), "mine", config=config)
    assert "could not be counted" in caplog.text
    # check() reads the same cache: a failure to read lets the request through too.
    with caplog.at_level(logging.ERROR, logger="webauth.ratelimit"):
        decision = ratelimit.check(req(), "mine", config=config)
    assert decision and decision.cache_alias == "down" and decision.retry_after == 0
    assert "could not be read" in caplog.text


def test_without_a_configuration_the_settings_are_used(settings):
    # hit(), hit_many() and check() read WEBAUTH when no configuration is passed.
    settings.WEBAUTH = {**BASE, "rate_limits": {"mine": "1/m/ip"}}
    assert ratelimit.check(req("198.51.100.9"), "mine")
    assert ratelimit.hit(req("198.51.100.9"), "mine")
    assert not ratelimit.check(req("198.51.100.9"), "mine")
    assert not ratelimit.hit(req("198.51.100.9"), "mine")
    (refused,) = ratelimit.hit_many(req("198.51.100.9"), [("mine", None)])
    assert not refused and refused.retry_after > 0


def test_limited_response():
    decision = ratelimit.Decision(False, "mine", 42)
    response = ratelimit.limited_response(decision, {"url": "/x"})
    assert response.status_code == 429
    assert response["Retry-After"] == "42"
    assert json.loads(response.content) == {"error": "RateLimited", "retryAfter": 42, "url": "/x"}
    assert ratelimit.limited_response(0)["Retry-After"] == "1"


# -- credentials sign-in ------------------------------------------------------------------------


@pytest.mark.django_db
def test_failed_sign_ins_are_refused_after_five_per_address_and_identifier(client, alice):
    for _ in range(5):
        assert wrong(client)["Location"] == FAILED
    refused = wrong(client)
    assert refused.status_code == 302 and refused["Location"] == LIMITED
    assert 0 < int(refused["Retry-After"]) <= 300
    # Even the right password waits: otherwise the limit would be a password oracle.
    right = post_credentials(client, username="alice", password="correct horse")
    assert right["Location"] == LIMITED and "authjs.session-token" not in right.cookies


@pytest.mark.django_db
def test_a_stranger_at_one_address_cannot_lock_the_owner_out(client_factory, alice):
    stranger, owner = client_factory(), client_factory()
    answers = [wrong(stranger, ip="203.0.113.66")["Location"] for _ in range(30)]
    assert answers.count(FAILED) == 5  # then refused per address and identifier
    signed_in = post_credentials(
        owner, ip="198.51.100.1", username="alice", password="correct horse"
    )
    assert signed_in["Location"] == "http://testserver"
    assert "authjs.session-token" in signed_in.cookies


@pytest.mark.django_db
def test_an_identifier_is_limited_across_addresses(client, alice):
    # A spread attack: two guesses from each of many addresses.
    answers = [
        wrong(client, ip=f"203.0.113.{n}")["Location"] for n in range(1, 9) for _ in range(2)
    ]
    assert answers.count(FAILED) == 10
    assert answers[10:] == [LIMITED] * 6


@pytest.mark.django_db
def test_unknown_identifiers_are_limited_exactly_like_known_ones(client, alice):
    # The answers must not tell which identifiers have accounts.
    known = [wrong(client, "198.51.100.1", username="alice")["Location"] for _ in range(7)]
    unknown = [wrong(client, "198.51.100.2", username="nobody")["Location"] for _ in range(7)]
    assert known == unknown == [FAILED] * 5 + [LIMITED] * 2


@pytest.mark.django_db
def test_an_identifier_spelt_differently_is_counted_as_one(client, alice):
    # Full-width letters, the dotless i, a zero-width space, an accent, case:
    # a database's collation may take each for "alice" (Django's ModelBackend
    # compares the username there), so none of them buys more guesses.
    spellings = ["alice", "ａｌｉｃｅ", "al\u0131ce", "ali\u200bce", "alíce", "ALICE", " alice "]
    answers = [
        wrong(client, ip=f"203.0.113.{n}", username=spelling)["Location"]
        for n, spelling in enumerate(spellings, start=1)
        for _ in range(2)
    ]
    assert answers == [FAILED] * 10 + [LIMITED] * 4


@pytest.mark.django_db
def test_an_address_spelt_differently_is_counted_as_one(client, settings):
    # The email sign-in's limit per address: one count for every spelling of it.
    settings.WEBAUTH = {
        **BASE,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": ["webauth.providers.Email"],
        "rate_limits": {"email_send": "3/h/key"},
    }
    spellings = [
        "alice@example.com",
        "ＡＬＩＣＥ@EXAMPLE.COM",
        "alice@exämple.com",
        "alıce@example.com",
    ]
    answers = []
    for spelling in spellings:
        token = client.get("/auth/csrf").json()["csrfToken"]
        response = client.post("/auth/signin/email", {"csrfToken": token, "email": spelling})
        answers.append(response["Location"])
    assert [a.startswith("http://testserver/auth/verify-request") for a in answers] == [
        True,
        True,
        True,
        False,
    ]
    assert answers[3] == LIMITED


@pytest.mark.django_db
def test_an_address_is_limited_across_identifiers(client, alice):
    answers = [wrong(client, username=f"user{n}")["Location"] for n in range(12)]
    assert answers == [FAILED] * 10 + [LIMITED] * 2


@pytest.mark.django_db
def test_successful_sign_ins_are_not_failures(client_factory, alice):
    for _ in range(12):  # more than any failure limit, fewer than "signin" (30/m/ip)
        response = post_credentials(client_factory(), username="alice", password="correct horse")
        assert "authjs.session-token" in response.cookies


@pytest.mark.django_db
def test_every_attempt_counts_for_signin(client_factory, alice, settings):
    settings.WEBAUTH = {**BASE, "rate_limits": {"signin": "3/m/ip"}}
    answers = [
        post_credentials(client_factory(), username="alice", password="correct horse")
        for _ in range(4)
    ]
    assert ["authjs.session-token" in r.cookies for r in answers] == [True, True, True, False]
    assert answers[3]["Location"] == LIMITED


@pytest.mark.django_db
def test_json_clients_get_429_with_retry_after(client, alice):
    for _ in range(5):
        wrong(client)
    refused = wrong(client, headers={"X-Auth-Return-Redirect": "1"})
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 300
    body = refused.json()
    assert body["error"] == "RateLimited" and body["url"] == LIMITED
    assert body["retryAfter"] == int(refused["Retry-After"])
    accept_json = wrong(client, headers={"Accept": "application/json"})
    assert accept_json.status_code == 429


@pytest.mark.django_db
def test_the_sign_in_page_explains(client):
    page = client.get("/auth/signin?error=RateLimited")
    assert page.status_code == 200
    assert str(SIGNIN_ERRORS["RateLimited"]) in page.content.decode()
    assert 'data-error="RateLimited"' in page.content.decode()


@pytest.mark.django_db
def test_the_limits_are_off_when_turned_off(client, alice, settings):
    settings.WEBAUTH = {**BASE, "rate_limits": False}
    assert all(wrong(client)["Location"] == FAILED for _ in range(15))


@pytest.mark.django_db
def test_a_credentials_provider_without_username_is_limited_by_its_first_field(client, settings):
    provider = Credentials(
        credentials={"email": {"type": "email"}, "password": {"type": "password"}},
        authorize=lambda credentials, request: None,
    )
    settings.WEBAUTH = {"secret": SECRET, "providers": [provider]}
    answers = [
        post_credentials(client, email="a@example.com", password="x")["Location"] for _ in range(6)
    ]
    assert answers[-1] == LIMITED
    other = post_credentials(client, email="b@example.com", password="x")
    assert other["Location"] == FAILED


def test_identifier_is_the_field_authorize_checks():
    from webauth.flows.credentials import identifier

    django = DjangoCredentials()
    assert identifier(django, {"username": "alice", "password": "x"}) == "alice"
    assert identifier(django, {"email": "a@example.com", "password": "x"}) == "a@example.com"
    assert identifier(django, {"password": "x"}) is None
    assert identifier(django, {"username": "  ", "password": "x"}) is None
    by_email = Credentials(
        credentials={"tenant": {}, "email": {"type": "email"}, "password": {"type": "password"}},
        authorize=_tenant_limit,
    )
    # An extra "username" cannot move the count away from the declared email.
    assert identifier(by_email, {"username": "junk", "email": "v@example.com"}) == "v@example.com"
    assert identifier(by_email, {"tenant": "acme"}) == "acme"
    assert identifier(by_email, {"password": "x", "username": 3}) is None


def _tenant_limit(credentials, request):
    raise RateLimited("this tenant's own limit", retry_after=90)


@pytest.mark.django_db
def test_an_authorize_can_raise_rate_limited_itself(client, settings):
    provider = Credentials(credentials={"username": {}}, authorize=_tenant_limit)
    settings.WEBAUTH = {"secret": SECRET, "providers": [provider]}
    browser = post_credentials(client, username="a")
    assert browser["Location"] == LIMITED and browser["Retry-After"] == "90"
    api = post_credentials(client, username="a", headers={"X-Auth-Return-Redirect": "1"})
    assert api.status_code == 429 and api["Retry-After"] == "90"


@pytest.mark.django_db
def test_the_sign_in_helper_is_limited_too(client, alice):
    for _ in range(5):
        wrong(client)
    request = RequestFactory().post("/login", REMOTE_ADDR="198.51.100.1")
    result = sign_in(request, "credentials", options={"username": "alice", "password": "x"})
    assert isinstance(result, FormResult) and result.failed
    assert isinstance(result.error, RateLimited)
    assert result.form_errors == [
        "Too many attempts. Please wait a few minutes before you try again."
    ]


# -- spoofed addresses ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_spoofed_forwarded_for_does_not_escape_the_address_limit(client, alice):
    answers = [
        wrong(
            client,
            username=f"user{n}",
            headers={"X-Forwarded-For": f"10.9.{n}.1"},
        )["Location"]
        for n in range(12)
    ]
    assert answers == [FAILED] * 10 + [LIMITED] * 2


def test_a_proxy_without_trusted_proxies_is_pointed_out_once(caplog, monkeypatch):
    monkeypatch.setattr(client_ip_module, "_warned_about_proxy", False)
    config = config_with()
    direct = req("93.184.216.34", HTTP_X_FORWARDED_FOR="198.51.100.1")
    proxied = req("10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.1")
    with caplog.at_level(logging.WARNING, logger="webauth.ratelimit"):
        assert ratelimit.client_key(direct, config) == "93.184.216.34"  # its own header
        assert caplog.text == ""
        assert ratelimit.client_key(proxied, config) == "10.0.0.2"
        assert ratelimit.client_key(proxied, config) == "10.0.0.2"
    assert caplog.text.count("trusted_proxies") == 1
    caplog.clear()
    monkeypatch.setattr(client_ip_module, "_warned_about_proxy", False)
    with caplog.at_level(logging.WARNING, logger="webauth.ratelimit"):
        ratelimit.client_key(proxied, config_with(trusted_proxies=1))
    assert caplog.text == ""


def test_a_private_peer_without_the_header_or_an_unusable_peer_is_not_pointed_out(
    caplog, monkeypatch
):
    monkeypatch.setattr(client_ip_module, "_warned_about_proxy", False)
    config = config_with()
    with caplog.at_level(logging.WARNING, logger="webauth.ratelimit"):
        assert ratelimit.client_key(req("10.0.0.2"), config) == "10.0.0.2"
        unusable = req("junk", HTTP_X_FORWARDED_FOR="198.51.100.1")
        assert ratelimit.client_key(unusable, config) == "unknown"
    assert caplog.text == "" and client_ip_module._warned_about_proxy is False


def test_a_new_process_has_not_pointed_anything_out_yet():
    code = (
        "import django; django.setup(); import webauth.client_ip as r; print(r._warned_about_proxy)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.support.settings"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "False"


def test_client_key_reads_the_settings_without_a_configuration(settings):
    settings.WEBAUTH = {**BASE, "trusted_proxies": 1}
    request = req("10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert ratelimit.client_key(request) == "198.51.100.7"


def test_the_limiters_log_lines_go_to_its_own_logger(settings, caplog):
    settings.CACHES = {
        **settings.CACHES,
        "down": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:9/0",
            "OPTIONS": {"socket_connect_timeout": 0.2},
        },
    }
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache="down")
    with caplog.at_level(logging.ERROR):
        ratelimit.hit(req(), "mine", config=config)
    assert {r.name for r in caplog.records} == {"webauth.ratelimit"}


def test_limits_off_need_no_cache_and_log_nothing(caplog):
    config = config_with(rate_limits=False, rate_limit_cache="no-such-cache")
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        assert ratelimit.hit(req(), "signin", "alice", config=config)
        assert ratelimit.check(req(), "signin", "alice", config=config)
    assert caplog.text == ""


def test_counters_live_in_webauths_keys_and_past_their_window(cache_alias):
    # A window's counter outlives the window by counters.EXPIRY_MARGIN (30 s), so that no
    # request of the window finds it expired; its name holds no personal data.
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache=cache_alias)
    with freeze_time("2026-01-01 12:00:00") as frozen:
        decision = ratelimit.hit(req(), "mine", config=config)
        (name,) = decision.counted
        assert name.startswith("webauth:rl:mine:0:")
        frozen.tick(timedelta(seconds=89.5))
        assert caches[cache_alias].get(name) == 1
        if cache_alias == "default":  # LocMemCache follows the frozen clock; Redis does not
            frozen.tick(timedelta(seconds=0.5))
            assert caches[cache_alias].get(name) is None


def test_in_a_windows_last_second_the_wait_is_one_second(cache_alias):
    config = config_with(rate_limits={"mine": "1/m/ip"}, rate_limit_cache=cache_alias)
    with freeze_time("2026-01-01 12:00:59.5"):
        assert ratelimit.hit(req(), "mine", config=config)
        refused = ratelimit.hit(req(), "mine", config=config)
    assert not refused and refused.retry_after == 1


def test_a_key_with_a_lone_surrogate_is_counted(cache_alias):
    config = config_with(rate_limits={"mine": "1/m/key"}, rate_limit_cache=cache_alias)
    key = "alice\udc80"
    assert ratelimit.hit(req(), "mine", key, config=config)
    assert not ratelimit.hit(req(), "mine", key, config=config)


def test_counters_are_written_to_the_primary_of_a_replicated_redis(settings):
    # Django's RedisCache reads from replicas and writes to the first server: a
    # counter is a write, wherever the cache would read from.
    import redis

    redis_or_skip()
    prefix = f"webauth-test-{uuid.uuid4().hex}"
    settings.CACHES = {
        **settings.CACHES,
        "limits": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": [
                f"redis://{REDIS_HOST}:{REDIS_PORT}/3",
                f"redis://{REDIS_HOST}:{REDIS_PORT}/4",
            ],
            "KEY_PREFIX": prefix,
        },
    }
    config = config_with(rate_limits={"mine": "5/m/ip"}, rate_limit_cache="limits")
    decision = ratelimit.hit(req(), "mine", config=config)
    (name,) = decision.counted
    key = caches["limits"].make_key(name)
    primary = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=3)
    replica = redis.Redis(host=REDIS_HOST, port=REDIS_PORT, db=4)
    try:
        assert int(primary.get(key)) == 1 and replica.get(key) is None
    finally:
        primary.delete(key)


def test_check_names_an_unknown_action():
    with pytest.raises(ValueError, match="not a rate-limit action"):
        ratelimit.check(req(), "no-such-action", config=config_with())


def test_refunds(settings, caplog):
    # Nothing counted, nothing to give back: the cache is not even looked up.
    assert ratelimit.Decision(True, "mine").cache_alias == "default"
    nothing = ratelimit.Decision(True, "mine", cache_alias="no-such-cache")
    with caplog.at_level(logging.DEBUG, logger="webauth"):
        ratelimit.refund(nothing)
    assert caplog.text == ""
    # A cache that fails is logged, and the request goes on.
    counted = ratelimit.Decision(True, "mine", counted=("webauth:rl:x",), cache_alias="gone")
    with caplog.at_level(logging.ERROR, logger="webauth.ratelimit"):
        ratelimit.refund(counted)
    assert "rate limit 'mine' could not be refunded" in caplog.text


def test_the_429_is_never_cached():
    response = ratelimit.limited_response(7)
    assert response["Cache-Control"] == "private, no-cache, no-store"
    assert response["Retry-After"] == "7"


def test_a_counter_that_keeps_expiring_counts_as_the_first():
    # add() finds the counter, incr() finds it gone (the window's very end):
    # tried three times, then counted as the window's first request.
    calls = []

    class Racing:
        def add(self, name, value, timeout):
            calls.append("add")
            return False

        def incr(self, name):
            calls.append("incr")
            raise ValueError("gone")

    assert counters.take(Racing(), "n", 30) == 1
    assert calls == ["add", "incr"] * 3


@pytest.mark.django_db
def test_behind_a_trusted_proxy_each_client_has_its_own_limit(client, alice, settings):
    settings.WEBAUTH = {**BASE, "trusted_proxies": 1}
    answers = [
        wrong(
            client,
            ip="127.0.0.1",
            username=f"user{n}",
            headers={"X-Forwarded-For": f"198.51.100.{n}"},
        )["Location"]
        for n in range(12)
    ]
    assert answers == [FAILED] * 12


# -- OAuth callbacks and session updates --------------------------------------------------------


@pytest.mark.django_db
def test_oauth_callbacks_are_limited_per_address(client, settings):
    provider = OIDC(
        id="corp", client_id="c", client_secret="s", issuer="https://sso.example.invalid"
    )
    settings.WEBAUTH = {
        "secret": SECRET,
        "providers": [provider],
        "rate_limits": {"oauth_callback": "2/m/ip"},
    }
    answers = [client.get("/auth/callback/corp?code=x&state=y") for _ in range(3)]
    assert [r.status_code for r in answers] == [302, 302, 302]
    assert LIMITED not in answers[0]["Location"]  # the state check refused those
    assert answers[2]["Location"] == LIMITED
    assert int(answers[2]["Retry-After"]) > 0
    other = client.get("/auth/callback/corp?code=x&state=y", REMOTE_ADDR="198.51.100.9")
    assert other["Location"] != LIMITED


@pytest.mark.django_db
def test_session_updates_are_limited_per_address(client, settings):
    settings.WEBAUTH = {**BASE, "rate_limits": {"session_update": "2/m/ip"}}
    token = csrf_pair(client)
    answers = [
        client.post("/auth/session", {"csrfToken": token}, content_type="application/json")
        for _ in range(3)
    ]
    assert [r.status_code for r in answers] == [200, 200, 429]
    assert int(answers[2]["Retry-After"]) > 0
    assert answers[2].json()["error"] == "RateLimited"
    # Reading the session is not an update.
    assert client.get("/auth/session").status_code == 200


@pytest.mark.django_db
def test_forged_session_updates_are_counted_too(client, settings):
    settings.WEBAUTH = {**BASE, "rate_limits": {"session_update": "2/m/ip"}}
    answers = [client.post("/auth/session", {}) for _ in range(3)]
    assert [r.status_code for r in answers] == [400, 400, 429]


# -- system checks -------------------------------------------------------------------------------


def check_ids():
    return [m.id for m in check_rate_limit_cache()]


def test_check_silent_for_redis_and_memcached(settings):
    settings.CACHES = {"default": REDIS_CACHE}
    assert check_ids() == []
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.memcached.PyMemcacheCache",
            "LOCATION": "127.0.0.1:11211",
        }
    }
    try:
        import pymemcache  # noqa: F401
    except ImportError:
        # Without its client library the cache cannot even be opened: an error, not a crash.
        (message,) = check_rate_limit_cache()
        assert message.id == "webauth.E009" and "cannot be opened" in message.msg
    else:
        assert check_ids() == []


def test_e009_dummy_cache(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    (message,) = check_rate_limit_cache()
    assert message.id == "webauth.E009" and "DummyCache" in message.msg
    assert "rate_limit_cache" in message.hint


def test_e009_unknown_alias(settings):
    settings.WEBAUTH = {**BASE, "rate_limit_cache": "limits"}
    (message,) = check_rate_limit_cache()
    assert message.id == "webauth.E009" and "'limits'" in message.msg


def test_e009_held_second_factors_need_the_cache_even_with_the_limits_off(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    settings.WEBAUTH = {**BASE, "rate_limits": False}
    assert check_ids() == []
    settings.WEBAUTH = {**BASE, "rate_limits": False, "mfa": {"enabled": True}}
    (message,) = check_rate_limit_cache()
    assert message.id == "webauth.E009"
    assert "sign-ins waiting for their second factor" in message.msg
    assert "rate_limits'] = False" not in message.hint


def test_w006_locmem_without_debug(settings):
    settings.DEBUG = False
    assert check_ids() == ["webauth.W006"]
    settings.DEBUG = True
    assert check_ids() == []


@pytest.mark.parametrize(
    "backend",
    [
        "django.core.cache.backends.db.DatabaseCache",
        "django.core.cache.backends.filebased.FileBasedCache",
    ],
)
def test_w007_non_atomic_caches(settings, backend, tmp_path):
    settings.CACHES = {"default": {"BACKEND": backend, "LOCATION": str(tmp_path / "c")}}
    assert check_ids() == ["webauth.W007"]


def test_w012_a_misspelt_action_is_named(settings):
    settings.WEBAUTH = {
        **BASE,
        "rate_limits": {"signin_faild": "3/m/ip", "export_report": "3/h/key"},
    }
    (message,) = check_rate_limit_actions()
    assert message.id == "webauth.W012"
    assert "'signin_faild'" in message.msg and "did you mean 'signin_failed'?" in message.msg
    assert "SILENCED_SYSTEM_CHECKS" in message.hint
    # The project's own action, far from any of webauth's, is not questioned.
    assert "export_report" not in message.msg


def test_w012_silent_for_builtin_and_own_actions(settings):
    settings.WEBAUTH = {
        **BASE,
        "rate_limits": {"signin_failed": "3/m/ip", "export_report": "3/h/key"},
    }
    assert check_rate_limit_actions() == []
    settings.WEBAUTH = {**BASE, "rate_limits": False}
    assert check_rate_limit_actions() == []


APP_OAUTH = {
    "bearer": True,
    "rate_limits": False,
    "providers": [
        DjangoCredentials(),
        OIDC(id="corp", issuer="https://idp.example.com", client_id="id", client_secret="s"),
    ],
}


def test_app_oauth_needs_a_cache_that_keeps_its_nonces_even_with_limits_off(settings):
    # Bearer sessions and an OAuth provider: the app routes keep the code flow's
    # state and the ID tokens' used nonces in this cache.
    settings.WEBAUTH = {**BASE, **APP_OAUTH}
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    (message,) = check_rate_limit_cache()
    assert message.id == "webauth.E009" and "nonce could be used twice" in message.msg
    assert "rate limits" not in message.msg and "rate_limits'] = False" not in message.hint
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    settings.DEBUG = False
    (message,) = check_rate_limit_cache()
    assert message.id == "webauth.W006" and "once per process" in message.msg


def test_app_oauth_in_a_file_cache_is_w007(settings, tmp_path):
    settings.WEBAUTH = {**BASE, **APP_OAUTH}
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(tmp_path / "c"),
        }
    }
    (message,) = check_rate_limit_cache()
    assert message.id == "webauth.W007" and "nonce" in message.msg


def test_without_bearer_or_oauth_limits_off_need_no_cache(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    settings.WEBAUTH = {**BASE, **APP_OAUTH, "bearer": False}
    assert check_ids() == []
    settings.WEBAUTH = {**BASE, **APP_OAUTH, "providers": [DjangoCredentials()]}
    assert check_ids() == []


def test_checks_silent_when_limits_are_off(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    settings.WEBAUTH = {**BASE, "rate_limits": False}
    assert check_ids() == []


# -- across processes: 4 gunicorn workers sharing Django's RedisCache ---------------------------


@pytest.fixture
def gunicorn_site(tmp_path):
    """tests.support.settings_ratelimit served by 4 gunicorn sync workers on Redis."""
    redis_or_skip()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.support.settings_ratelimit",
        "WEBAUTH_TEST_REDIS_PREFIX": f"webauth-test-{uuid.uuid4().hex}",
        "WEBAUTH_TEST_REDIS_URL": REDIS_URL,
        "PYTHONPATH": str(REPO_ROOT),
    }
    with gunicorn(env, tmp_path) as base:
        yield base


def _concurrently(count, send):
    with ThreadPoolExecutor(max_workers=40) as pool:
        return list(pool.map(lambda _: send(), range(count)))


def test_exactly_n_of_200_concurrent_failures_pass_across_four_processes(gunicorn_site):
    session = requests.Session()
    token = session.get(f"{gunicorn_site}/auth/csrf").json()["csrfToken"]
    cookies = session.cookies.get_dict()
    identifier = f"victim-{uuid.uuid4().hex}"

    def attempt():
        return requests.post(
            f"{gunicorn_site}/auth/callback/credentials",
            data={"csrfToken": token, "username": identifier, "password": "guess"},
            cookies=cookies,
            allow_redirects=False,
            timeout=30,
        )

    answers = _concurrently(200, attempt)
    locations = [r.headers.get("Location", "") for r in answers]
    assert all(r.status_code == 302 for r in answers)
    assert sum("error=CredentialsSignin" in loc for loc in locations) == 37
    assert sum("error=RateLimited" in loc for loc in locations) == 163
    assert len({r.headers["X-Worker-Pid"] for r in answers}) >= 2  # really several processes


def test_exactly_n_of_200_concurrent_session_updates_pass_across_four_processes(gunicorn_site):
    def update():
        return requests.post(f"{gunicorn_site}/auth/session", json={}, timeout=30)

    answers = _concurrently(200, update)
    statuses = [r.status_code for r in answers]
    assert statuses.count(400) == 23  # let through (and refused for want of a CSRF token)
    assert statuses.count(429) == 177
    assert all(int(r.headers["Retry-After"]) > 0 for r in answers if r.status_code == 429)
    assert len({r.headers["X-Worker-Pid"] for r in answers}) >= 2


# -- the benchmark site ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["off", "locmem", "redis"])
def test_the_benchmark_site_never_refuses_its_load(monkeypatch, mode):
    # bench_http.py and bench_authjs.py send thousands of sign-ins from one address.
    import importlib

    monkeypatch.setenv("WEBAUTH_BENCH_RATELIMIT", mode)
    import benchmarks.http.settings as bench_settings

    try:
        module = importlib.reload(bench_settings)
        webauth_setting, caches_setting = module.WEBAUTH, getattr(module, "CACHES", None)
    finally:
        monkeypatch.delenv("WEBAUTH_BENCH_RATELIMIT")
        importlib.reload(bench_settings)  # as the other tests expect it
    limits = build_config(webauth_setting, lambda _: None).rate_limits
    if mode == "off":
        assert limits.enabled is False
    else:
        assert limits.enabled
        for action in ("signin", "signin_failed", "oauth_callback", "session_update"):
            assert all(rule.limit >= 10**9 for rule in limits.rules[action])
        assert [len(limits.rules[a]) for a in ("signin", "signin_failed")] == [1, 3]
        if mode == "redis":
            assert caches_setting["default"]["BACKEND"].endswith("RedisCache")
