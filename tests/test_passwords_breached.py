"""webauth.passwords.breached: the Pwned Passwords validator, against a local fake.

The fake (tests/support/pwned.py) is a real HTTP server on 127.0.0.1 that
answers like the range API and keeps every request it got; the real service is
never asked. No test here touches the database.
"""

from __future__ import annotations

import itertools
import logging
import time

import pytest
import requests
from django.contrib.auth.password_validation import (
    password_validators_help_texts,
    validate_password,
)
from django.core.cache import caches
from django.core.checks import run_checks
from django.core.exceptions import ValidationError
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.support.pwned import FakeRange, sha1_hex
from webauth.checks import check_breached_password_validator
from webauth.passwords import breached
from webauth.passwords.breached import DEFAULT_API_URL, PwnedPasswordValidator

pytestmark = pytest.mark.backend_independent

NAME = "webauth.passwords.breached.PwnedPasswordValidator"
BREACHED = "correct horse battery staple"
CLEAN = "a password nobody ever saw 7f3c"
# Two passwords whose SHA-1 share the first five hex characters (5DAC3).
TWIN_A, TWIN_B = "twin-654", "twin-995"
_locations = itertools.count()


@pytest.fixture
def fake():
    with FakeRange() as server:
        server.breach(BREACHED, 3)
        yield server


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.DEBUG)
    return caplog


def configure(settings, fake, **options):
    """``AUTH_PASSWORD_VALIDATORS`` with the validator asking *fake*, fresh caches."""
    settings.CACHES = {
        name: {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"pwned-{next(_locations)}",
        }
        for name in ("default", "pwned")
    }
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": NAME, "OPTIONS": {"api_url": fake.url, "cache": "pwned", **options}}
    ]


def refusal(password, user=None):
    """The codes of the ValidationError validate_password raises (``[]`` when none)."""
    try:
        validate_password(password, user)
    except ValidationError as exc:
        return [e.code for e in exc.error_list]
    return []


def logged(caplog):
    """Everything the log got: messages, their arguments, tracebacks."""
    return "\n".join(
        f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records
    )


def assert_nothing_secret_logged(caplog, *passwords):
    text = logged(caplog)
    for password in passwords:
        digest = sha1_hex(password)
        for secret in (password, digest, digest[5:], digest.lower(), digest[5:].lower()):
            assert secret not in text


# -- what leaves the server ------------------------------------------------------------


@pytest.mark.parametrize("password", [BREACHED, CLEAN])
def test_only_the_first_five_hex_characters_leave(settings, fake, password):
    configure(settings, fake)
    refusal(password)
    digest = sha1_hex(password)
    [request] = fake.requests
    assert request["path"] == "/range/" + digest[:5]
    raw = request["raw"].upper()
    # No six characters of the hash that reach past the prefix are anywhere in
    # the request line or its headers, in either case; nor the password.
    for start in range(len(digest) - 5):
        assert digest[start : start + 6] not in raw
    assert password.upper() not in raw


def test_padding_is_asked_for_and_the_client_names_itself(settings, fake):
    configure(settings, fake, user_agent="example.com sign-up")
    refusal(CLEAN)
    [request] = fake.requests
    assert request["headers"]["Add-Padding"] == "true"
    assert request["headers"]["User-Agent"] == "example.com sign-up"
    assert request["line"].startswith("GET ")


def test_the_default_user_agent_names_webauth(settings, fake):
    configure(settings, fake)
    refusal(CLEAN)
    assert fake.requests[0]["headers"]["User-Agent"] == "django-webauth-pwned-passwords"


def test_the_request_goes_through_the_http_client_session(settings, fake):
    def session():
        s = requests.Session()
        s.headers["X-Through"] = "the project's session"
        return s

    settings.WEBAUTH = {**settings.WEBAUTH, "http_client": session}
    configure(settings, fake)
    refusal(CLEAN)
    assert fake.requests[0]["headers"]["X-Through"] == "the project's session"


@given(st.text(max_size=40))
@hypothesis_settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_prefix_sent_is_always_the_first_five_of_the_upper_case_sha1(fake, password):
    validator = PwnedPasswordValidator(api_url=fake.url, cache=None)
    before = len(fake.requests)
    validator.validate(password)
    request = fake.requests[before]
    digest = sha1_hex(password)
    assert request["path"] == "/range/" + digest[:5]
    assert digest[5:11] not in request["raw"].upper()


# -- the verdict ------------------------------------------------------------------------


def test_a_breached_password_is_refused_through_validate_password(settings, fake):
    configure(settings, fake)
    with pytest.raises(ValidationError) as caught:
        validate_password(BREACHED)
    [error] = caught.value.error_list
    assert error.code == "password_pwned"
    assert error.params == {"count": 3}
    assert error.messages == [
        "This password has appeared in a data breach, so it is not safe to use. "
        "Please choose a different one."
    ]


def test_a_clean_password_passes(settings, fake):
    configure(settings, fake)
    assert refusal(CLEAN) == []
    assert len(fake.requests) == 1


def test_a_suffix_the_range_lists_with_count_zero_passes(settings, fake):
    fake.breach(CLEAN, 0)  # as padding is: a made-up suffix, never seen
    configure(settings, fake)
    assert refusal(CLEAN) == []


@pytest.mark.parametrize(
    ("threshold", "codes"), [(1, ["password_pwned"]), (3, ["password_pwned"]), (4, [])]
)
def test_threshold(settings, fake, threshold, codes):
    configure(settings, fake, threshold=threshold)
    assert refusal(BREACHED) == codes


def test_a_large_count_is_read_whole(settings, fake):
    fake.breach(CLEAN, 123456789012)
    configure(settings, fake, threshold=123456789012)
    with pytest.raises(ValidationError) as caught:
        validate_password(CLEAN)
    assert caught.value.error_list[0].params == {"count": 123456789012}


def test_a_mirror_that_answers_in_lower_case(settings, fake):
    fake.mode = "lowercase"
    configure(settings, fake)
    assert refusal(BREACHED) == ["password_pwned"]
    assert refusal(CLEAN) == []


def test_an_api_url_without_its_final_slash(settings, fake):
    configure(settings, fake, api_url=fake.url.rstrip("/"))
    assert refusal(BREACHED) == ["password_pwned"]
    assert fake.paths() == ["/range/" + sha1_hex(BREACHED)[:5]]


def test_a_twin_suffix_is_not_taken_for_the_password(settings, fake):
    # The range holds TWIN_A; TWIN_B shares its prefix but not its suffix.
    fake.breach(TWIN_A, 10)
    configure(settings, fake)
    assert refusal(TWIN_B) == []
    assert refusal(TWIN_A) == ["password_pwned"]


def test_every_suffix_of_a_range_counts_even_one_seen_once(settings, fake):
    # Two in one range, the first listed seen twice and the second once: each is refused.
    fake.breach(TWIN_A, 2)
    fake.breach(TWIN_B, 1)
    configure(settings, fake)
    validator = PwnedPasswordValidator(api_url=fake.url, cache=None)
    for password, count in ((TWIN_A, 2), (TWIN_B, 1)):
        with pytest.raises(ValidationError) as refused:
            validator.validate(password)
        assert refused.value.error_list[0].params == {"count": count}


def test_the_help_text(settings, fake):
    configure(settings, fake)
    assert password_validators_help_texts() == [
        "Your password cannot be one that has appeared in a known data breach."
    ]
    assert fake.requests == []


# -- the cache -----------------------------------------------------------------------------


def test_a_prefix_is_asked_once_then_comes_from_the_cache(settings, fake):
    fake.breach(TWIN_B, 2)
    configure(settings, fake)
    assert refusal(TWIN_A) == []
    assert refusal(TWIN_A) == []
    # Another password under the same prefix is judged from the cached range.
    assert refusal(TWIN_B) == ["password_pwned"]
    assert len(fake.requests) == 1
    # A different prefix is asked.
    assert refusal(BREACHED) == ["password_pwned"]
    assert fake.paths() == ["/range/5DAC3", "/range/" + sha1_hex(BREACHED)[:5]]


def test_the_cache_keeps_only_the_suffixes_seen(settings, fake):
    fake.breach(CLEAN, 0)
    configure(settings, fake)
    refusal(BREACHED)
    validator = PwnedPasswordValidator(api_url=fake.url, cache="pwned")
    digest = sha1_hex(BREACHED)
    assert caches["pwned"].get(validator.cache_key(digest[:5])) == f"{digest[5:]}:3"
    assert caches["default"].get(validator.cache_key(digest[:5])) is None


def test_the_cache_key_names_webauth_the_service_and_the_prefix(fake):
    # webauth:pwned:<the first 12 hex of the service URL's SHA-256>:<prefix>, so that
    # an operator can find (and drop) the answers kept.
    import hashlib

    service = hashlib.sha256(fake.url.encode()).hexdigest()[:12]
    key = PwnedPasswordValidator(api_url=fake.url).cache_key("ABCDE")
    assert key == f"webauth:pwned:{service}:ABCDE"


def test_without_a_cache_none_is_looked_up(settings, fake, logs):
    configure(settings, fake, cache=None)
    assert refusal(BREACHED) == ["password_pwned"]
    assert "cache" not in logged(logs)


def test_the_cache_key_tells_services_apart(fake):
    one = PwnedPasswordValidator(api_url=fake.url)
    two = PwnedPasswordValidator(api_url=fake.origin + "/mirror/")
    assert one.cache_key("ABCDE") != two.cache_key("ABCDE")
    assert one.cache_key("ABCDE").endswith(":ABCDE")
    assert one.cache_key("ABCDE") == PwnedPasswordValidator(api_url=fake.url).cache_key("ABCDE")


def test_the_default_cache_is_default(settings, fake):
    configure(settings, fake)
    settings.AUTH_PASSWORD_VALIDATORS = [{"NAME": NAME, "OPTIONS": {"api_url": fake.url}}]
    refusal(CLEAN)
    refusal(CLEAN)
    assert len(fake.requests) == 1
    key = PwnedPasswordValidator(api_url=fake.url).cache_key(sha1_hex(CLEAN)[:5])
    assert caches["default"].get(key) == ""


def expiries(alias):
    """The expiry times LocMemCache keeps, one per key."""
    return list(caches[alias]._expire_info.values())


def test_cache_timeout(settings, fake):
    configure(settings, fake, cache_timeout=1000)
    now = time.time()
    refusal(CLEAN)
    [expiry] = expiries("pwned")
    assert 1000 - 5 < expiry - now < 1000 + 5


def test_the_default_cache_timeout_is_a_day(settings, fake):
    configure(settings, fake)
    now = time.time()
    refusal(CLEAN)
    [expiry] = expiries("pwned")
    assert 86400 - 5 < expiry - now < 86400 + 5


def test_without_a_cache_every_check_asks(settings, fake):
    configure(settings, fake, cache=None)
    refusal(CLEAN)
    refusal(CLEAN)
    assert len(fake.requests) == 2


def test_a_failed_answer_is_not_cached(settings, fake):
    fake.mode = "http503"
    configure(settings, fake, fail="closed")
    assert refusal(BREACHED) == ["password_pwned_unchecked"]
    fake.mode = "normal"
    assert refusal(BREACHED) == ["password_pwned"]
    assert len(fake.requests) == 2


class BrokenCache:
    """A cache whose every read and write raises (Redis gone)."""

    def __init__(self, *args, **kwargs):
        pass

    def get(self, *args, **kwargs):
        raise ConnectionError("the cache is down")

    def set(self, *args, **kwargs):
        raise ConnectionError("the cache is down")

    def close(self, **kwargs):
        pass


class UnopenableCache:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("no client library")


def test_a_cache_that_is_down_still_checks_and_logs(settings, fake, logs):
    configure(settings, fake)
    settings.CACHES = {
        **settings.CACHES,
        "pwned": {"BACKEND": "tests.test_passwords_breached.BrokenCache"},
    }
    assert refusal(BREACHED) == ["password_pwned"]
    assert refusal(CLEAN) == []
    assert len(fake.requests) == 2
    text = logged(logs)
    assert "breached-password cache could not be read (ConnectionError)" in text
    assert "breached-password cache could not be written (ConnectionError)" in text
    assert_nothing_secret_logged(logs, BREACHED, CLEAN)


@pytest.mark.parametrize(
    ("alias", "backend"),
    [("missing", None), ("pwned", "tests.test_passwords_breached.UnopenableCache")],
)
def test_a_cache_that_cannot_be_opened_still_checks_and_logs(settings, fake, logs, alias, backend):
    configure(settings, fake, cache=alias)
    if backend:
        settings.CACHES = {**settings.CACHES, alias: {"BACKEND": backend}}
    assert refusal(BREACHED) == ["password_pwned"]
    assert f"breached-password cache {alias!r} cannot be used" in logged(logs)


# -- when the service cannot be asked ----------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("slow", "no answer within 0.3 s"),
        ("trickle", "no whole answer within 0.3 s"),
        ("http500", "HTTP status 500"),
        ("http503", "HTTP status 503"),
        ("http429", "HTTP status 429"),
        ("redirect", "HTTP status 301"),
        ("html", "a malformed answer (a line that is not SUFFIX:COUNT)"),
        ("empty", "an empty answer"),
        ("latin1", "a malformed answer (not ASCII)"),
    ],
)
@pytest.mark.parametrize("fail", ["open", "closed"])
def test_an_answer_that_is_no_range(settings, fake, logs, mode, reason, fail):
    fake.mode = mode
    fake.delay = 2.0 if mode == "slow" else 0.2
    # Each piece comes sooner than the socket's 0.3 s timeout, the whole too late.
    fake.piece = 2048
    configure(settings, fake, timeout=0.3, fail=fail)
    started = time.monotonic()
    codes = refusal(BREACHED)
    elapsed = time.monotonic() - started
    assert codes == ([] if fail == "open" else ["password_pwned_unchecked"])
    if mode in ("slow", "trickle"):
        # Unbounded, the answer would take 2 s or more (a 2 s wait; a padded range,
        # some 30 KB, in 2 KB pieces 0.2 s apart): the 0.3 s timeout bounds the
        # whole request.
        # (The margin is for a loaded machine: once, 0.62 s in CI's suite.)
        assert elapsed < 1.5
    warnings = [
        r for r in logs.records if r.levelno == logging.WARNING and "breached" in r.getMessage()
    ]
    assert len(warnings) == 1
    outcome = "accepted (fail open)" if fail == "open" else "refused (fail closed)"
    assert warnings[0].getMessage() == (
        f"webauth: the breached-password check could not be made ({reason}); "
        f"the password was {outcome}"
    )
    assert warnings[0].name == "webauth.passwords.breached"
    assert_nothing_secret_logged(logs, BREACHED)


def test_fail_closed_says_the_check_could_not_be_made(settings, fake):
    fake.mode = "http503"
    configure(settings, fake, fail="closed")
    with pytest.raises(ValidationError) as caught:
        validate_password(CLEAN)
    assert caught.value.messages == [
        "Your password could not be checked against known data breaches just now. "
        "Please try again in a few minutes."
    ]


def test_fail_open_is_the_default(settings, fake, logs):
    fake.mode = "http500"
    configure(settings, fake)
    assert refusal(BREACHED) == []
    assert "accepted (fail open)" in logged(logs)


def test_a_service_that_is_not_there(settings, fake, logs):
    with FakeRange() as gone:
        url = gone.url
    configure(settings, fake, api_url=url, fail="closed")
    assert refusal(CLEAN) == ["password_pwned_unchecked"]
    assert "(no connection (ConnectionError))" in logged(logs)


@pytest.mark.parametrize(
    ("extra", "codes"), [(0, ["password_pwned"]), (1, ["password_pwned_unchecked"])]
)
def test_an_answer_over_one_mebibyte_is_no_range(settings, fake, logs, extra, codes):
    fake.mode = "sized"
    fake.size = 1024 * 1024 + extra  # the limit written out: the module's constant may be wrong
    configure(settings, fake, fail="closed", timeout=10)
    assert refusal(BREACHED) == codes
    if extra:
        assert "(an answer over 1 MiB)" in logged(logs)


def test_a_range_that_trickles_in_within_the_timeout_is_read(settings, fake):
    fake.mode = "trickle"
    fake.piece = 8000  # a padded range in five pieces, 0.05 s apart
    fake.delay = 0.05
    configure(settings, fake, timeout=1, fail="closed")
    assert refusal(BREACHED) == ["password_pwned"]


# -- nothing secret is logged --------------------------------------------------------------


def test_nothing_logged_holds_the_password_or_its_hash(settings, fake, logs):
    configure(settings, fake)
    for mode in ("normal", "http500", "html", "slow"):
        fake.mode = mode
        fake.delay = 0.3
        settings.AUTH_PASSWORD_VALIDATORS = [
            {"NAME": NAME, "OPTIONS": {"api_url": fake.url, "cache": None, "timeout": 0.2}}
        ]
        refusal(BREACHED)
        refusal(CLEAN)
    assert len(fake.requests) == 8
    assert logs.records  # requests and the validator did log
    assert_nothing_secret_logged(logs, BREACHED, CLEAN)


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"threshold": 0},
        {"threshold": -1},
        {"threshold": 1.5},
        {"threshold": True},
        {"threshold": "2"},
        {"timeout": 0},
        {"timeout": -1},
        {"timeout": True},
        {"timeout": "2"},
        {"fail": "maybe"},
        {"fail": None},
        {"cache": 5},
        {"cache_timeout": 0},
        {"cache_timeout": -5},
        {"cache_timeout": "60"},
        {"cache_timeout": False},
        {"api_url": None},
        {"api_url": 123},
        {"api_url": ["https://mirror.example/range/"]},
        {"api_url": "ftp://mirror.example/range/"},
        {"api_url": "https:///range/"},
        {"api_url": "api.pwnedpasswords.com/range/"},
        {"user_agent": ""},
        {"user_agent": "   "},
        {"user_agent": None},
    ],
)
def test_an_invalid_option_is_refused(options):
    with pytest.raises(ValueError, match=next(iter(options))):
        PwnedPasswordValidator(**options)


def test_the_defaults():
    validator = PwnedPasswordValidator()
    assert validator.threshold == 1
    assert validator.timeout == 2.0
    assert validator.fail == "open"
    assert validator.cache == "default"
    assert validator.cache_timeout == 86400
    assert validator.api_url == DEFAULT_API_URL == "https://api.pwnedpasswords.com/range/"
    assert validator.user_agent == "django-webauth-pwned-passwords"


def test_edge_options_are_accepted():
    validator = PwnedPasswordValidator(
        threshold=1,
        timeout=0.001,
        fail="closed",
        cache=None,
        cache_timeout=0.5,
        api_url="http://localhost:8000/range",
        user_agent="x",
    )
    assert (validator.threshold, validator.timeout, validator.fail) == (1, 0.001, "closed")
    assert (validator.cache, validator.cache_timeout) == (None, 0.5)
    assert validator.api_url == "http://localhost:8000/range/"
    assert isinstance(PwnedPasswordValidator(timeout=3).timeout, float)


# -- system checks ------------------------------------------------------------------------


def _ids(messages):
    return [m.id for m in messages]


def test_no_check_without_the_validator(settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
        {"NAME": "no.such.Validator"},
        {"NAME": 5},
        "not a dict",
    ]
    assert check_breached_password_validator() == []


@pytest.mark.parametrize("value", [None, "a string", 5])
def test_no_check_when_the_setting_is_no_list(settings, value):
    settings.AUTH_PASSWORD_VALIDATORS = value
    assert breached.system_checks() == []


def test_a_valid_configuration_passes(settings, fake):
    configure(settings, fake)
    assert check_breached_password_validator() == []
    ours = {"webauth.E017", "webauth.W018", "webauth.W019"}
    assert not ours & set(_ids(run_checks()))


def test_the_check_is_registered(settings, fake):
    configure(settings, fake, threshold=0)
    assert "webauth.E017" in _ids(run_checks())


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"threshold": 0}, "threshold must be a whole number"),
        ({"tresholt": 2}, "unexpected keyword argument 'tresholt'"),
        ({"fail": "sometimes"}, 'fail must be "open" or "closed"'),
    ],
)
def test_e017_invalid_options(settings, fake, options, text):
    configure(settings, fake, **options)
    [message] = check_breached_password_validator()
    assert message.id == "webauth.E017"
    assert message.msg.startswith(f"AUTH_PASSWORD_VALIDATORS[0] ({NAME}) has invalid OPTIONS: ")
    assert text in message.msg
    assert message.hint == "See docs/passwords.md for the validator's options."


def test_e017_options_that_are_no_mapping(settings):
    settings.AUTH_PASSWORD_VALIDATORS = [{"NAME": NAME, "OPTIONS": ["threshold", 2]}]
    assert _ids(check_breached_password_validator()) == ["webauth.E017"]


def test_e017_a_cache_not_in_caches(settings, fake):
    configure(settings, fake, cache="nowhere")
    [message] = check_breached_password_validator()
    assert message.id == "webauth.E017"
    assert "cache 'nowhere', which is not in CACHES" in message.msg
    assert message.hint == 'Name a cache in CACHES, or pass "cache": None to keep nothing.'


def test_e017_a_cache_that_cannot_be_opened(settings, fake):
    configure(settings, fake)
    settings.CACHES = {
        **settings.CACHES,
        "pwned": {"BACKEND": "tests.test_passwords_breached.UnopenableCache"},
    }
    [message] = check_breached_password_validator()
    assert message.id == "webauth.E017"
    assert "cannot be opened (RuntimeError: no client library)" in message.msg
    assert message.hint == 'Fix the cache in CACHES, or pass "cache": None to keep nothing.'


@pytest.mark.parametrize(
    ("fail", "end"),
    [("open", "the password is not checked)."), ("closed", "the password is refused).")],
)
def test_w018_a_dummy_cache(settings, fake, fail, end):
    configure(settings, fake, fail=fail)
    settings.CACHES = {
        **settings.CACHES,
        "pwned": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
    }
    [message] = check_breached_password_validator()
    assert message.id == "webauth.W018"
    assert message.msg.endswith(end)
    assert "a DummyCache" in message.msg
    assert message.hint == 'Point "cache" at a real cache (LocMemCache will do).'


def test_no_cache_is_no_warning(settings, fake):
    configure(settings, fake, cache=None)
    assert check_breached_password_validator() == []


@pytest.mark.parametrize(
    ("url", "ids"),
    [
        ("http://mirror.example/range/", ["webauth.W019"]),
        ("http://10.0.0.7/range/", ["webauth.W019"]),
        ("https://mirror.example/range/", []),
        ("http://localhost:8000/range/", []),
        ("http://127.0.0.1:8000/range/", []),
        ("http://[::1]:8000/range/", []),
    ],
)
def test_w019_plain_http(settings, fake, url, ids):
    configure(settings, fake, api_url=url)
    messages = check_breached_password_validator()
    assert _ids(messages) == ids
    assert all(m.hint == "Use an https:// URL." for m in messages)


def test_entries_that_cannot_be_imported_or_are_no_class_are_passed_over(settings, fake):
    configure(settings, fake, threshold=0)
    [ours] = settings.AUTH_PASSWORD_VALIDATORS
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "no.such.Validator"},
        ours,
        {"NAME": "no.such.Other"},
        # A function, not a class: nothing to check, and no failure.
        {"NAME": "django.contrib.auth.password_validation.validate_password"},
    ]
    messages = check_breached_password_validator()
    assert _ids(messages) == ["webauth.E017"]
    assert messages[0].msg.startswith(f"AUTH_PASSWORD_VALIDATORS[1] ({NAME})")


class Subclass(PwnedPasswordValidator):
    pass


def test_a_subclass_is_checked_and_its_place_named(settings, fake):
    configure(settings, fake)
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
        {"NAME": "tests.test_passwords_breached.Subclass", "OPTIONS": {"timeout": -1}},
        {"NAME": NAME, "OPTIONS": {"timeout": -2}},
    ]
    messages = check_breached_password_validator()
    assert _ids(messages) == ["webauth.E017", "webauth.E017"]
    assert messages[0].msg.startswith(
        "AUTH_PASSWORD_VALIDATORS[1] (tests.test_passwords_breached.Subclass)"
    )
    assert messages[1].msg.startswith(f"AUTH_PASSWORD_VALIDATORS[2] ({NAME})")


def test_a_validator_without_options_is_checked(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}
    settings.AUTH_PASSWORD_VALIDATORS = [{"NAME": NAME}]
    assert _ids(check_breached_password_validator()) == ["webauth.W018"]
