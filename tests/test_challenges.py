"""webauth.challenges: each service against a local fake of its verify endpoint, the setting,
and the system checks. The flows that call it: tests/test_challenge_flows.py."""

from __future__ import annotations

import logging
import socket
import time

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured

from webauth.challenges import Challenge, HCaptcha, ReCaptcha, Turnstile, token_problem
from webauth.challenges.base import MAX_ANSWER_BYTES
from webauth.checks import check_config
from webauth.conf import ConfigError, build_config
from webauth.conf.options import CHALLENGE_ACTIONS, ChallengeService

from .support.challenge_fakes import CODES, FakeVerifier

pytestmark = pytest.mark.backend_independent

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SERVICE_SECRET = "0xSERVICE-SECRET-never-logged"
SITE_KEY = "site-key"
CLASSES = {"turnstile": Turnstile, "hcaptcha": HCaptcha, "recaptcha": ReCaptcha}


@pytest.fixture(params=sorted(CLASSES))
def service_name(request):
    return request.param


@pytest.fixture
def fake(service_name):
    with FakeVerifier(service_name, SERVICE_SECRET, site_key=SITE_KEY) as fake:
        yield fake


def make(fake, **kwargs):
    options = {
        "site_key": SITE_KEY,
        "secret_key": SERVICE_SECRET,
        "verify_url": fake.url,
        "timeout": 2,
        **kwargs,
    }
    return CLASSES[fake.service](**options)


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.DEBUG, logger="webauth")
    return caplog


def logged(caplog):
    return "\n".join(r.getMessage() for r in caplog.records)


# -- each service, as documented ------------------------------------------------------------


def test_the_built_in_services_are_what_each_service_documents():
    assert (Turnstile.field, Turnstile.default_verify_url) == (
        "cf-turnstile-response",
        "https://challenges.cloudflare.com/turnstile/v0/siteverify",
    )
    assert (HCaptcha.field, HCaptcha.default_verify_url) == (
        "h-captcha-response",
        "https://api.hcaptcha.com/siteverify",
    )
    assert (ReCaptcha.field, ReCaptcha.default_verify_url) == (
        "g-recaptcha-response",
        "https://www.google.com/recaptcha/api/siteverify",
    )
    assert Turnstile.script_url == "https://challenges.cloudflare.com/turnstile/v0/api.js"
    assert HCaptcha.script_url == "https://js.hcaptcha.com/1/api.js"
    assert ReCaptcha.script_url == "https://www.google.com/recaptcha/api.js"
    assert Turnstile.max_token_length == 2048  # Cloudflare's documented maximum
    # The names the setting and the JSON answers call them by.
    assert [cls.name for cls in (Turnstile, HCaptcha, ReCaptcha)] == list(CLASSES)
    for cls in CLASSES.values():
        service = cls(site_key="s", secret_key="k")
        assert service.verify_url == cls.default_verify_url  # without verify_url, the service's
        assert isinstance(service, ChallengeService)


def test_a_right_token_passes_and_the_request_is_the_documented_one(fake, log):
    service = make(fake)
    token = fake.issue()
    assert service.verify(token, "203.0.113.9") is True
    [form] = fake.sent()
    expected = {"secret": SERVICE_SECRET, "response": token, "remoteip": "203.0.113.9"}
    if fake.service == "hcaptcha":
        expected["sitekey"] = SITE_KEY  # hCaptcha's check that the token is this site key's
    assert form == expected
    [request] = fake.requests
    assert request["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert request["headers"]["User-Agent"] == "webauth"
    assert SERVICE_SECRET not in logged(log) and token not in logged(log)


def test_without_an_address_no_remoteip_is_sent(fake):
    assert make(fake).verify(fake.issue(), None) is True
    assert "remoteip" not in fake.sent()[0]


def test_a_token_the_service_never_issued_is_refused(fake, log):
    assert make(fake).verify("0.not-a-token-it-issued", "203.0.113.9") is False
    assert "invalid-input-response" in logged(log)


def test_a_token_passes_once(fake, log):
    service = make(fake)
    token = fake.issue()
    assert service.verify(token, None) is True
    assert service.verify(token, None) is False
    assert CODES[fake.service]["duplicate"] in logged(log)
    assert token not in logged(log)


def test_an_expired_token_is_refused(fake, log):
    assert make(fake).verify(fake.issue(expired=True), None) is False
    assert CODES[fake.service]["expired"] in logged(log)


def test_a_wrong_secret_is_refused_and_never_logged(fake, log):
    service = make(fake, secret_key="0xWRONG-secret")
    assert service.verify(fake.issue(), None) is False
    assert "invalid-input-secret" in logged(log)
    assert "0xWRONG-secret" not in logged(log) and "0xWRONG-secret" not in repr(service)


def test_hcaptcha_refuses_a_token_for_another_site_key():
    with FakeVerifier("hcaptcha", SERVICE_SECRET, site_key=SITE_KEY) as fake:
        other = make(fake, site_key="another-site-key")
        assert other.verify(fake.issue(), None) is False
        assert fake.sent()[0]["sitekey"] == "another-site-key"


@pytest.mark.parametrize(
    "mode, said",
    [
        ("garbage", "is not JSON"),
        ("list", "is not a JSON object"),
        ("http500", "answered HTTP 500"),
        ("huge", "is too long"),
        ("internal-error", "internal-error"),
    ],
)
def test_an_answer_that_is_not_a_clear_yes_is_a_refusal(fake, log, mode, said):
    fake.mode = mode
    assert make(fake).verify(fake.issue(), None) is False
    assert said in logged(log)
    assert SERVICE_SECRET not in logged(log)


def test_the_answer_is_read_up_to_its_limit_and_no_further(fake):
    assert MAX_ANSWER_BYTES == 64 * 1024  # the services' answers are under 1 KiB
    fake.mode = "sized"
    fake.size = MAX_ANSWER_BYTES
    assert make(fake).verify("0.anything", None) is True
    fake.size = MAX_ANSWER_BYTES + 1
    assert make(fake).verify("0.anything", None) is False


def test_a_gzip_encoded_answer_is_read(fake):
    fake.mode = "gzip"
    assert make(fake).verify(fake.issue(), None) is True


def test_a_redirect_is_not_followed(fake, log):
    # Whoever can make the endpoint redirect must not be able to answer for it.
    fake.mode = "redirect"
    assert make(fake).verify(fake.issue(), None) is False
    assert "answered HTTP 302" in logged(log)
    assert len(fake.requests) == 1


def test_the_service_s_log_lines_go_to_webauth_challenges(fake, log):
    make(fake).verify("0.never-issued", None)
    assert {r.name for r in log.records} == {"webauth.challenges"}


def test_the_refusal_names_the_first_codes_each_cut_and_escaped(log):
    service = Turnstile(site_key="s", secret_key="k")
    codes = ["c1", "c2", 7, "c" * 70, "c4", "c5", "c6"]
    assert service.accepts({"success": False, "error-codes": codes}) is False
    [line] = [r.getMessage() for r in log.records]
    assert line == (
        "webauth: turnstile refused the challenge token (c1, c2, "
        + "c" * 64
        + "... [6 more characters], c4)"
    )
    log.clear()
    assert service.accepts({"success": False}) is False
    assert logged(log) == "webauth: turnstile refused the challenge token (no error code)"


@pytest.mark.parametrize(
    "answer",
    [
        {"success": "true"},
        {"success": 1},
        {"success": None},
        {"error-codes": []},
        {"success": False, "error-codes": "not-a-list"},
        {"success": False, "error-codes": ["\x1b[31mforged\nline", 7]},
    ],
)
def test_only_success_true_is_a_yes(answer, log):
    service = Turnstile(site_key="s", secret_key="k")
    assert service.accepts(answer) is False
    assert "\x1b" not in logged(log) and "forged\nline" not in logged(log)


def test_a_slow_service_is_a_refusal_within_the_timeout(fake, log):
    fake.mode, fake.delay = "slow", 3
    start = time.monotonic()
    assert make(fake, timeout=0.3).verify(fake.issue(), None) is False
    assert time.monotonic() - start < 2
    assert "could not be reached (ReadTimeout" in logged(log)


def test_an_unreachable_service_is_a_refusal(log):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    service = Turnstile(
        site_key="s", secret_key=SERVICE_SECRET, verify_url=f"http://127.0.0.1:{port}/siteverify"
    )
    assert service.verify("0.token", None) is False
    assert "could not be reached (ConnectionError" in logged(log)
    assert SERVICE_SECRET not in logged(log)


def test_a_broken_http_client_is_a_refusal(fake, log):
    service = make(fake, http_client=lambda: "not a session")
    assert service.verify(fake.issue(), None) is False
    [record] = [r for r in log.records if "verify request failed" in r.getMessage()]
    error = record.exc_info[1]
    assert isinstance(error, TypeError)
    assert str(error) == "WEBAUTH['http_client'] must return a requests.Session"
    assert fake.requests == []


def test_the_configured_http_client_makes_the_request(fake):
    def client():
        session = requests.Session()
        session.headers["X-Through"] = "the-project-proxy"
        return session

    assert make(fake, http_client=client).verify(fake.issue(), None) is True
    assert fake.requests[0]["headers"]["X-Through"] == "the-project-proxy"
    assert fake.requests[0]["headers"]["User-Agent"] == "webauth"  # for requests' own


def test_the_projects_user_agent_is_kept(fake):
    def client():
        session = requests.Session()
        session.headers["User-Agent"] = "myproject/1.0"
        return session

    assert make(fake, http_client=client).verify(fake.issue(), None) is True
    assert fake.requests[0]["headers"]["User-Agent"] == "myproject/1.0"


def test_the_default_timeout_is_short():
    assert Turnstile(site_key="s", secret_key="k").timeout == 5.0


@pytest.mark.parametrize("hostname", [None, 7, ["example.com"]])
def test_a_missing_or_odd_hostname_is_refused_when_hostnames_are_asked(hostname, log):
    service = Turnstile(site_key="s", secret_key="k", hostnames=["example.com"])
    answer = {"success": True, **({} if hostname is None else {"hostname": hostname})}
    assert service.accepts(answer) is False
    assert "not on one of the configured hostnames" in logged(log)


def test_the_hostname_check(fake):
    service = make(fake, hostnames=["example.com"])
    assert service.verify(fake.issue(hostname="example.com"), None) is True
    assert service.verify(fake.issue(hostname="evil.example"), None) is False
    assert make(fake, hostnames=["example.com"]).verify(fake.issue(hostname=""), None) is False
    # the hostname the service answers is compared in lower case
    assert service.verify(fake.issue(hostname="EXAMPLE.com"), None) is True


def test_without_hostnames_any_hostname_passes(fake):
    assert make(fake).verify(fake.issue(hostname="anywhere.example"), None) is True


@pytest.mark.parametrize(
    "token, problem",
    [
        (None, "not a string"),
        (["0.a", "0.b"], "not a string"),
        ({"token": "0.a"}, "not a string"),
        (12, "not a string"),
        ("", "empty"),
        ("0." + "a" * 2047, "longer than 2048 characters"),
        ("0.tok en", "not printable ASCII without spaces"),
        ("0.tok\nen", "not printable ASCII without spaces"),
        ("0.tok\x00en", "not printable ASCII without spaces"),
        ("0.tökén", "not printable ASCII without spaces"),
    ],
)
def test_a_malformed_token_is_refused_unsent(token, problem, log):
    with FakeVerifier("turnstile", SERVICE_SECRET) as fake:
        assert token_problem(token, 2048) == problem
        assert make(fake).verify(token, None) is False
        assert fake.requests == []  # the service is never asked
        assert f"refused unsent: {problem}" in logged(log)


@pytest.mark.parametrize("cls", [HCaptcha, ReCaptcha])
def test_other_services_take_tokens_up_to_8192_characters(cls):
    with FakeVerifier(cls.name, SERVICE_SECRET, site_key=SITE_KEY) as fake:
        service = make(fake)
        assert service.verify("P" * 8192, None) is False  # sent: the service refuses it
        assert len(fake.requests) == 1
        assert service.verify("P" * 8193, None) is False  # refused unsent
        assert len(fake.requests) == 1


def test_the_longest_token_is_sent():
    with FakeVerifier("turnstile", SERVICE_SECRET) as fake:
        assert token_problem("0." + "a" * 2046, 2048) is None
        assert make(fake).verify("0." + "a" * 2046, None) is False  # sent, and unknown
        assert len(fake.requests) == 1


def test_repr_never_shows_the_secret():
    service = HCaptcha(site_key="public", secret_key=SERVICE_SECRET)
    assert SERVICE_SECRET not in repr(service)
    assert "public" in repr(service)
    config = build_config(
        {
            "secret": SECRET,
            "challenge": {
                "service": "hcaptcha",
                "site_key": "public",
                "secret_key": SERVICE_SECRET,
            },
        },
        lambda _: None,
    )
    assert SERVICE_SECRET not in repr(config) and SERVICE_SECRET not in repr(config.challenge)


# -- the widget --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls, css",
    [(Turnstile, "cf-turnstile"), (HCaptcha, "h-captcha"), (ReCaptcha, "g-recaptcha")],
)
def test_the_widget_element(cls, css):
    widget = cls(site_key='key"><script>x</script>', secret_key="k").widget(theme="dark")
    assert widget.startswith(f'<div class="{css} webauth-challenge-widget" data-sitekey="key&quot;')
    assert "<script>" not in widget
    assert 'data-theme="dark"' in widget
    assert cls(site_key="k", secret_key="k").widget(theme="light").count('data-theme="light"') == 1


def test_the_widget_markup_exactly():
    assert Turnstile(site_key="k", secret_key="s").widget() == (
        '<div class="cf-turnstile webauth-challenge-widget" data-sitekey="k" data-theme="auto">'
        "</div>"
    )
    assert HCaptcha(site_key="k", secret_key="s").widget() == (
        '<div class="h-captcha webauth-challenge-widget" data-sitekey="k"></div>'
    )


def test_only_turnstile_follows_the_browser_s_scheme():
    assert 'data-theme="auto"' in Turnstile(site_key="k", secret_key="k").widget(theme="auto")
    for cls in (HCaptcha, ReCaptcha):  # they know light and dark only: their default then
        assert "data-theme" not in cls(site_key="k", secret_key="k").widget(theme="auto")


# -- the setting -------------------------------------------------------------------------------


def config_with(challenge, **extra):
    return build_config({"secret": SECRET, "challenge": challenge, **extra}, lambda _: None)


def test_off_by_default():
    assert build_config({"secret": SECRET}, lambda _: None).challenge is None
    assert config_with(None).challenge is None
    assert config_with(False).challenge is None


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_service_by_name(name):
    options = config_with(
        {"service": name, "site_key": "pub", "secret_key": "sec", "timeout": 3}
    ).challenge
    assert type(options.service) is CLASSES[name]
    assert (options.service.site_key, options.service.secret_key) == ("pub", "sec")
    assert options.service.timeout == 3.0
    assert options.on == frozenset(CHALLENGE_ACTIONS) == {"signin", "signup", "reset", "email"}
    assert (options.when, options.share) == ("always", 0.5)


class Friendly(Challenge):
    """A project's own service (by its dotted path)."""

    name = "friendly"
    field = "frc-captcha-response"
    default_verify_url = "https://api.friendlycaptcha.example/siteverify"
    script_url = "https://cdn.friendlycaptcha.example/widget.js"
    widget_class = "frc-captcha"


class NotAService:
    def __init__(self, **kwargs):
        pass


#: What a service's subclass sets (Friendly, below, sets them all).
_WHAT_A_SERVICE_SETS = {
    "name": "forgetful",
    "field": "forgetful-response",
    "script_url": "https://forgetful.example/widget.js",
    "default_verify_url": "https://forgetful.example/siteverify",
    "widget_class": "forgetful",
}


@pytest.mark.parametrize(
    "missing, said",
    [
        ("field", "Forgetful has no field"),
        ("name", "Forgetful has no name"),
        ("script_url", "Forgetful has no script_url"),
        ("default_verify_url", "Forgetful has no verify_url"),
        ("widget_class", "Forgetful has no widget_class"),
    ],
)
def test_a_service_that_forgot_something_is_refused_at_start_up(missing, said):
    # What it forgot is Challenge's own: nothing.
    attrs = {k: v for k, v in _WHAT_A_SERVICE_SETS.items() if k != missing}
    forgetful = type("Forgetful", (Challenge,), attrs)
    with pytest.raises(ConfigError) as raised:
        config_with({"service": forgetful})
    assert said in str(raised.value)
    assert isinstance(
        config_with(
            {"service": type("Whole", (Challenge,), _WHAT_A_SERVICE_SETS)}
        ).challenge.service,
        Challenge,
    )


def test_a_service_of_ones_own():
    options = config_with(
        {
            "service": "tests.test_challenges.Friendly",
            "site_key": "pub",
            "secret_key": "sec",
            "on": ["signup"],
            "when": "abuse",
            "share": 0.25,
            "verify_url": "https://verify.example/siteverify",
            "hostnames": ["Example.com"],
        }
    ).challenge
    assert isinstance(options.service, Friendly)
    assert options.service.verify_url == "https://verify.example/siteverify"
    assert options.service.hostnames == {"example.com"}
    assert (options.on, options.when, options.share) == ({"signup"}, "abuse", 0.25)
    assert isinstance(config_with({"service": Friendly}).challenge.service, Friendly)


def test_the_service_gets_the_projects_http_client():
    def client():
        return requests.Session()

    options = config_with({"service": "turnstile"}, http_client=client).challenge
    assert options.service.http_client is client


@pytest.mark.parametrize(
    "challenge, message",
    [
        ("turnstile", "WEBAUTH['challenge'] must be a dict, not str"),
        ({}, "WEBAUTH['challenge.service'] is missing"),
        ({"service": "turnstyle"}, "'turnstyle' is not a built-in service"),
        ({"service": "recaptcha3"}, "'recaptcha3' is not a built-in service"),
        ({"service": "no.such.Module"}, "could not import 'no.such.Module'"),
        ({"service": 3}, "must be a service's name or class, got int"),
        ({"service": "tests.test_challenges.NotAService"}, "NotAService is not a challenge"),
        ({"service": object}, "object could not be made with the challenge's keys"),
        ({"service": "turnstile", "site-key": "x"}, "has unknown key(s) 'site-key'"),
        ({"service": "turnstile", "on": "signin"}, "must be a list of actions"),
        ({"service": "turnstile", "on": ["login"]}, "'login', which is not an action"),
        ({"service": "turnstile", "on": [["signin"]]}, "is not an action"),
        ({"service": "turnstile", "on": []}, "is empty"),
        ({"service": "turnstile", "when": "sometimes"}, "must be 'always' or 'abuse'"),
        ({"service": "turnstile", "when": ["abuse"]}, "must be 'always' or 'abuse'"),
        ({"service": "turnstile", "share": 0}, "must be a number above 0 and at most 1"),
        ({"service": "turnstile", "share": 1.5}, "must be a number above 0 and at most 1"),
        ({"service": "turnstile", "share": True}, "must be a number above 0"),
        ({"service": "turnstile", "timeout": 0}, "at most 30"),
        ({"service": "turnstile", "timeout": 60}, "at most 30"),
        ({"service": "turnstile", "timeout": "5"}, "at most 30"),
        ({"service": "turnstile", "site_key": 5}, "must be a string, got int"),
        ({"service": "turnstile", "verify_url": "ftp://x/y"}, "must be an http(s) URL"),
        ({"service": "turnstile", "verify_url": "/siteverify"}, "must be an http(s) URL"),
        ({"service": "turnstile", "verify_url": "http://[::1/"}, "must be an http(s) URL"),
        (
            {"service": "turnstile", "verify_url": "http://verify.example/siteverify"},
            "would send the secret key in clear",
        ),
        ({"service": "turnstile", "hostnames": "example.com"}, "must be a list of hostnames"),
        ({"service": "turnstile", "hostnames": ["https://x/"]}, "must hold hostnames"),
    ],
)
def test_setting_errors(challenge, message):
    with pytest.raises(ConfigError) as raised:
        config_with(challenge)
    assert message in str(raised.value)
    assert isinstance(raised.value, ImproperlyConfigured)


@pytest.mark.parametrize(
    "challenge, hint",
    [
        ({"service": "turnstyle"}, "Did you mean 'turnstile'?"),
        ({"service": "hcapcha"}, "Did you mean 'hcaptcha'?"),
        ({"service": "turnstile", "on": ["sigin"]}, "Did you mean 'signin'?"),
        ({"service": "turnstile", "siteKey": "x"}, "Did you mean 'site_key'?"),
        ({"service": "turnstile", "secret": "x"}, "Did you mean 'secret_key'?"),
        ({"service": "turnstile", "verifyUrl": "x"}, "Did you mean 'verify_url'?"),
        ({"servise": "turnstile"}, "Did you mean 'service'?"),
    ],
)
def test_setting_errors_say_what_was_meant(challenge, hint):
    with pytest.raises(ConfigError) as raised:
        config_with(challenge)
    assert hint in raised.value.hint


def test_a_local_fake_may_be_plain_http():
    for host in ("127.0.0.1:8001", "localhost", "[::1]:9"):
        url = f"http://{host}/siteverify"
        assert (
            config_with({"service": "turnstile", "verify_url": url}).challenge.service.verify_url
            == url
        )


def test_the_top_level_key_is_known():
    with pytest.raises(ConfigError) as raised:
        build_config({"secret": SECRET, "challenges": {}}, lambda _: None)
    assert "Did you mean 'challenge'?" in raised.value.hint


# -- system checks -----------------------------------------------------------------------------


def check_ids(settings, webauth):
    settings.WEBAUTH = {"secret": SECRET, **webauth}
    return [m.id for m in check_config()]


def messages_of(settings, webauth, check_id):
    settings.WEBAUTH = {"secret": SECRET, **webauth}
    return [m for m in check_config() if m.id == check_id]


def test_no_message_for_a_complete_challenge(settings):
    ids = check_ids(
        settings, {"challenge": {"service": "turnstile", "site_key": "a", "secret_key": "b"}}
    )
    assert "webauth.E014" not in ids and "webauth.W015" not in ids
    assert "webauth.E014" not in check_ids(settings, {})


@pytest.mark.parametrize(
    "keys, missing",
    [
        ({}, "has no site_key and no secret_key"),
        ({"site_key": "a"}, "has no secret_key"),
        ({"secret_key": "b", "site_key": ""}, "has no site_key"),
    ],
)
def test_a_missing_key_is_an_error(settings, keys, missing):
    [message] = messages_of(
        settings, {"challenge": {"service": "hcaptcha", **keys}}, "webauth.E014"
    )
    assert missing in message.msg and "every request it guards" in message.msg
    assert message.level == 40  # an Error: deploys stop


def test_abuse_the_limiter_cannot_see_is_a_warning(settings):
    challenge = {"service": "turnstile", "site_key": "a", "secret_key": "b", "when": "abuse"}
    assert "webauth.W015" not in check_ids(settings, {"challenge": challenge})
    [off] = messages_of(settings, {"challenge": challenge, "rate_limits": False}, "webauth.W015")
    assert "'email', 'reset', 'signin', 'signup'" in off.msg
    [per_key] = messages_of(
        settings,
        {
            "challenge": {**challenge, "on": ["signin", "email"]},
            "rate_limits": {"signin_failed": "5/5m/key", "email_send": False},
        },
        "webauth.W015",
    )
    assert "'email', 'signin'" in per_key.msg and "'email_send', 'signin_failed'" in per_key.msg
    always = {**challenge, "when": "always"}
    assert "webauth.W015" not in check_ids(settings, {"challenge": always, "rate_limits": False})
