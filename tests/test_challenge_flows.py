"""The bot challenge (WEBAUTH["challenge"]) in front of password and email sign-in.

Turnstile's verify endpoint is a local fake (tests/support/challenge_fakes.py);
every route is the real one, through Django's test client: the built-in sign-in
page, ``POST /auth/callback/credentials``, ``POST /auth/signin/email``, their
JSON clients (``X-Auth-Return-Redirect``), the app routes and ``webauth.sign_in``.
Across processes: tests/test_challenge_processes.py. The services on their own:
tests/test_challenges.py.
"""

from __future__ import annotations

import json
import logging

import pytest
from django.contrib.auth import get_user_model
from django.template.loader import render_to_string
from django.test import Client, RequestFactory

from webauth import challenges, ratelimit
from webauth import sign_in as helper_sign_in
from webauth.conf import get_config
from webauth.errors import ChallengeFailed
from webauth.models import VerificationToken
from webauth.passwords import signup as signup_flow
from webauth.providers import DjangoCredentials, Email
from webauth.test import force_sign_in

from .support.challenge_fakes import FakeVerifier
from .support.helpers import csrf_pair, query

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SERVICE_SECRET = "0xTURNSTILE-secret-never-logged"
SITE_KEY = "0xSITE-KEY"
FIELD = "cf-turnstile-response"
SESSION = "authjs.session-token"
IP = "198.51.100.7"
MISSING = "http://testserver/auth/signin?error=ChallengeFailed&code=missing"
REFUSED = "http://testserver/auth/signin?error=ChallengeFailed&code=refused"
WRONG_PASSWORD = "http://testserver/auth/signin?error=CredentialsSignin&code=credentials"
WIDGET = f'<div class="cf-turnstile webauth-challenge-widget" data-sitekey="{SITE_KEY}"'
SCRIPT = '<script src="https://challenges.cloudflare.com/turnstile/v0/api.js" async defer>'
DESCRIBED = {"service": "turnstile", "siteKey": SITE_KEY, "field": FIELD}
#: signin_failed per address in a window no test straddles (the default's is a minute).
LONG = "10/1000d/ip"

pytestmark = pytest.mark.django_db


@pytest.fixture
def fake():
    with FakeVerifier("turnstile", SERVICE_SECRET, site_key=SITE_KEY) as fake:
        yield fake


@pytest.fixture
def site(settings, fake):
    """A password and an email provider, the bearer routes, the challenge as asked."""

    def configure(challenge=None, **options):
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "bearer": True,
            "providers": [DjangoCredentials(), Email(from_email="no-reply@example.com")],
            **(
                {}
                if challenge is False
                else {
                    "challenge": {
                        "service": "turnstile",
                        "site_key": SITE_KEY,
                        "secret_key": SERVICE_SECRET,
                        "verify_url": fake.url,
                        **(challenge or {}),
                    }
                }
            ),
            **options,
        }

    configure()
    return configure


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user(
        "alice", email="alice@example.com", password="correct horse"
    )


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.DEBUG, logger="webauth")
    return caplog


def logged(caplog):
    return "\n".join(r.getMessage() for r in caplog.records)


def password(client, token=None, *, ip=IP, json_client=False, pw="correct horse", **fields):
    data = {"csrfToken": csrf_pair(client), "username": "alice", "password": pw, **fields}
    if token is not None:
        data[FIELD] = token
    if json_client:
        return client.post(
            "/auth/callback/credentials",
            json.dumps(data),
            content_type="application/json",
            headers={"X-Auth-Return-Redirect": "1"},
            REMOTE_ADDR=ip,
        )
    return client.post("/auth/callback/credentials", data, REMOTE_ADDR=ip)


def ask_email(client, token=None, *, ip=IP, json_client=False, address="alice@example.com"):
    data = {"csrfToken": csrf_pair(client), "email": address}
    if token is not None:
        data[FIELD] = token
    if json_client:
        return client.post(
            "/auth/signin/email",
            json.dumps(data),
            content_type="application/json",
            headers={"X-Auth-Return-Redirect": "1"},
            REMOTE_ADDR=ip,
        )
    return client.post("/auth/signin/email", data, REMOTE_ADDR=ip)


def app(path, body, *, ip=IP):
    return Client().post(path, json.dumps(body), content_type="application/json", REMOTE_ADDR=ip)


def failures_counted(ip=IP):
    request = RequestFactory().post("/", REMOTE_ADDR=ip)
    return [count for _, count in ratelimit.usage(request, ["signin_failed"])["signin_failed"]]


# -- "always": password sign-in --------------------------------------------------------------


def test_a_password_sign_in_without_the_answer_is_refused_before_anything(
    site, fake, alice, client, log
):
    response = password(client)
    assert response.status_code == 302
    assert response["Location"] == MISSING
    assert SESSION not in response.cookies  # the right password did not sign in
    assert fake.requests == []  # the service was not asked
    assert failures_counted() == [0]  # nor the limits counted: the request did nothing
    assert "[auth][warn][ChallengeFailed]" in logged(log)


def test_the_refused_form_keeps_the_username_and_the_page_says_why(site, alice, client):
    response = password(client, username="alice")
    page = client.get(response["Location"])
    html = page.content.decode()
    assert "Please complete the security check, then try again." in html
    assert 'value="alice"' in html  # typed again for the person: only the password is not
    assert page.context["challenge"]["needed"] >= {"signin", "password"}


def test_a_password_sign_in_with_a_right_answer_signs_in(site, fake, alice, client, log):
    token = fake.issue()
    response = password(client, token)
    assert response.status_code == 302
    assert response["Location"] == "http://testserver"
    assert response.cookies[SESSION].value
    [form] = fake.sent()
    assert form == {"secret": SERVICE_SECRET, "response": token, "remoteip": IP}
    assert SERVICE_SECRET not in logged(log) and token not in logged(log)


def test_a_passed_challenge_does_not_make_a_wrong_password_right(site, fake, alice, client):
    response = password(client, fake.issue(), pw="wrong")
    assert response["Location"] == WRONG_PASSWORD
    assert failures_counted() == [1]  # past the challenge, the limits count as ever


@pytest.mark.parametrize("kind", ["unknown", "used", "expired"])
def test_a_refused_answer_is_refused(site, fake, alice, client, kind, log):
    if kind == "unknown":
        token = "0.never-issued"
    else:
        token = fake.issue(expired=kind == "expired")
        if kind == "used":
            assert password(Client(), token).cookies[SESSION].value  # used once, by someone
    response = password(client, token)
    assert response["Location"] == REFUSED
    assert SESSION not in response.cookies
    assert failures_counted() == [0]
    assert "[auth][warn][ChallengeFailed]" in logged(log)
    assert token not in logged(log)


def test_a_service_that_cannot_be_reached_refuses(site, fake, alice, client):
    fake.mode = "http500"
    response = password(client, fake.issue())
    assert response["Location"] == REFUSED
    assert SESSION not in response.cookies


def test_a_json_client_gets_400_with_what_it_needs(site, fake, alice, client):
    response = password(client, json_client=True)
    assert response.status_code == 400
    assert "no-store" in response["Cache-Control"]
    assert response.json() == {
        "error": "ChallengeFailed",
        "code": "missing",
        "challenge": DESCRIBED,
        "url": MISSING,
    }
    response = password(client, "0.never-issued", json_client=True)
    assert (response.status_code, response.json()["code"]) == (400, "refused")
    response = password(client, fake.issue(), json_client=True)
    assert response.status_code == 200 and response.cookies[SESSION].value


def test_with_a_custom_sign_in_page_the_refusal_goes_there(site, alice, client):
    site(pages={"sign_in": "/login/"})
    response = password(client)
    assert response.status_code == 302
    assert response["Location"].startswith("http://testserver/login/?")
    assert query(response["Location"])["error"] == "ChallengeFailed"
    assert query(response["Location"])["code"] == "missing"


def test_the_app_route_answers_400(site, fake, alice):
    body = {"username": "alice", "password": "correct horse"}
    response = app("/auth/app/signin/credentials", body)
    assert response.status_code == 400
    assert response.json() == {
        "error": "ChallengeFailed",
        "code": "missing",
        "challenge": DESCRIBED,
    }
    response = app("/auth/app/signin/credentials", {**body, FIELD: "0.never-issued"})
    assert response.json()["code"] == "refused"
    response = app("/auth/app/signin/credentials", {**body, FIELD: fake.issue()})
    assert response.status_code == 200 and response.json()["sessionToken"]


def test_the_sign_in_helper_is_guarded_too(site, fake, alice):
    request = RequestFactory().post("/login/", REMOTE_ADDR=IP)
    request.session = {}
    result = helper_sign_in(
        request, "credentials", options={"username": "alice", "password": "correct horse"}
    )
    assert result.failed and isinstance(result.error, ChallengeFailed)
    assert str(result.form_errors[0]) == "The security check failed. Please try again."
    options = {"username": "alice", "password": "correct horse", FIELD: fake.issue()}
    response = helper_sign_in(
        RequestFactory().post("/login/", REMOTE_ADDR=IP), "credentials", options=options
    )
    assert response.status_code == 302 and response.cookies[SESSION].value


def test_only_the_actions_named_are_guarded(site, fake, alice, client, mailoutbox):
    site({"on": ["email"]})
    assert password(client).cookies[SESSION].value
    assert ask_email(Client())["Location"] == MISSING
    assert mailoutbox == []


# -- "always": email sign-in -----------------------------------------------------------------


def test_an_email_request_without_the_answer_sends_nothing(site, fake, alice, client, mailoutbox):
    response = ask_email(client)
    assert response.status_code == 302
    assert response["Location"] == MISSING
    assert mailoutbox == []
    assert not VerificationToken.objects.exists()
    assert "authjs.email-pending" not in response.cookies
    assert fake.requests == []


def test_an_email_request_with_a_right_answer_sends(site, fake, alice, client, mailoutbox):
    response = ask_email(client, fake.issue())
    assert response["Location"].startswith("http://testserver/auth/verify-request?")
    assert len(mailoutbox) == 1
    assert fake.sent()[0]["remoteip"] == IP


def test_an_email_request_is_refused_before_the_address_is_read(site, client, mailoutbox):
    # Not even a bad address is looked at: the challenge comes first.
    response = ask_email(client, address="not an address")
    assert response["Location"] == MISSING


def test_an_email_request_s_json_client_and_app(site, fake, alice, client, mailoutbox):
    response = ask_email(client, json_client=True)
    assert (response.status_code, response.json()["error"]) == (400, "ChallengeFailed")
    response = app("/auth/app/signin/email", {"email": "alice@example.com"})
    assert response.status_code == 400
    assert response.json() == {
        "error": "ChallengeFailed",
        "code": "missing",
        "challenge": DESCRIBED,
    }
    assert mailoutbox == []
    response = app("/auth/app/signin/email", {"email": "alice@example.com", FIELD: fake.issue()})
    assert response.status_code == 200 and response.json()["sent"] is True
    assert len(mailoutbox) == 1


# -- "abuse": only once the limiter has seen it ----------------------------------------------


def test_abuse_below_the_share_asks_nothing_above_it_asks(site, fake, alice, client):
    # 10 per address (a window no test straddles): the challenge from the 5th failure on.
    site({"when": "abuse"}, rate_limits={"signin_failed": LONG})
    for n in range(5):
        assert password(client, username=f"nobody{n}", pw="wrong")["Location"] == WRONG_PASSWORD
    assert fake.requests == []
    assert password(client)["Location"] == MISSING  # the right password, but no answer
    assert password(client, pw="wrong")["Location"] == MISSING  # and nothing more is counted
    assert failures_counted() == [5]
    # Another address has done nothing wrong.
    assert password(Client(), ip="198.51.100.99").cookies[SESSION].value
    # The answer lets the person in.
    assert password(client, fake.issue()).cookies[SESSION].value


def test_abuse_the_page_shows_the_widget_once_it_is_needed(site, alice, client):
    site({"when": "abuse", "share": 0.2}, rate_limits={"signin_failed": LONG})  # from the 2nd
    assert client.get("/auth/signin", REMOTE_ADDR=IP).context["challenge"] is None
    password(client, pw="wrong")
    assert client.get("/auth/signin", REMOTE_ADDR=IP).context["challenge"] is None
    password(client, pw="wrong")
    challenge = client.get("/auth/signin", REMOTE_ADDR=IP).context["challenge"]
    assert challenge["needed"] == {"signin", "password"}  # not the email form's
    assert challenge["widget"].startswith(WIDGET)
    assert client.get("/auth/signin", REMOTE_ADDR="198.51.100.99").context["challenge"] is None


def test_abuse_of_email_is_read_from_email_send(site, fake, alice, client, mailoutbox):
    site({"when": "abuse", "on": ["email"]}, rate_limits={"email_send": "4/1000d/ip"})
    for n in range(2):
        assert ask_email(client, address=f"person{n}@example.com")["Location"].startswith(
            "http://testserver/auth/verify-request"
        )
    assert ask_email(client)["Location"] == MISSING
    assert len(mailoutbox) == 2
    assert ask_email(client, fake.issue())["Location"].startswith("http://testserver/auth/verify")
    assert len(mailoutbox) == 3


def test_abuse_with_the_limits_off_never_asks(site, alice, client):
    site({"when": "abuse"}, rate_limits=False)
    for _ in range(12):
        password(client, pw="wrong")
    assert password(client).cookies[SESSION].value


def test_abuse_with_a_cache_that_cannot_be_read_asks_nothing(site, alice, client, monkeypatch):
    site({"when": "abuse"})

    def broken(*args, **kwargs):
        raise ConnectionError("the cache is down")

    monkeypatch.setattr("django.core.cache.backends.locmem.LocMemCache.get_many", broken)
    assert password(client).cookies[SESSION].value


def test_is_required_and_require_for_other_flows(site, fake, alice):
    # What the sign-up and reset flows call (webauth.passwords.signup, .reset).
    request = RequestFactory().post("/", REMOTE_ADDR=IP)
    assert challenges.is_required(request, "signup") is True
    with pytest.raises(ChallengeFailed) as raised:
        challenges.require(request, "signup", {})
    assert (raised.value.code, raised.value.challenge) == ("missing", DESCRIBED)
    challenges.require(request, "reset", {FIELD: fake.issue()})
    with pytest.raises(ValueError, match="'login' is not a challenge action"):
        challenges.require(request, "login", {})
    with pytest.raises(ValueError):
        challenges.is_required(request, "login")
    site({"on": ["signin"]})
    assert challenges.is_required(request, "signup") is False
    challenges.require(request, "signup", {})  # not guarded: nothing asked


# -- off: nothing changes --------------------------------------------------------------------


def test_off_nothing_is_asked_read_or_shown(site, alice, client, monkeypatch, mailoutbox):
    site(False)
    assert get_config().challenge is None

    def never(*args, **kwargs):
        raise AssertionError("the challenge was consulted while off")

    monkeypatch.setattr(challenges, "require", never)
    monkeypatch.setattr(ratelimit, "usage", never)
    monkeypatch.setattr("webauth.pages.challenge_context", never)
    page = client.get("/auth/signin")
    assert page.context["challenge"] is None
    assert (
        "cf-turnstile" not in page.content.decode()
        and "webauth-challenge" not in page.content.decode()
    )
    assert password(client).cookies[SESSION].value
    assert ask_email(Client())["Location"].startswith("http://testserver/auth/verify-request")
    body = {"username": "alice", "password": "correct horse"}
    assert app("/auth/app/signin/credentials", body).status_code == 200


# -- the page ----------------------------------------------------------------------------------


def test_the_widget_template_renders_in_the_forms_that_need_it(site):
    challenge = {
        "service": "turnstile",
        "widget": challenges.Turnstile(site_key=SITE_KEY, secret_key="x").widget(),
        "script_url": challenges.Turnstile.script_url,
        "needed": frozenset({"signin", "password"}),
    }
    include = "webauth/includes/challenge.html"
    html = render_to_string(include, {"challenge": challenge, "challenge_for": "password"})
    assert WIDGET in html and 'data-webauth-challenge="turnstile"' in html
    assert "<noscript>" in html
    assert (
        render_to_string(include, {"challenge": challenge, "challenge_for": "email"}).strip() == ""
    )
    assert render_to_string(include, {"challenge": None, "challenge_for": "password"}).strip() == ""
    script = render_to_string("webauth/includes/challenge_script.html", {"challenge": challenge})
    assert SCRIPT in script
    assert render_to_string("webauth/includes/challenge_script.html", {}).strip() == ""


class _Forms:
    """The sign-in page's forms by action, with their inner HTML."""

    def __init__(self, html):
        import re

        self.by_action = {
            action: inner
            for action, inner in re.findall(
                r'<form[^>]*action="([^"]+)"[^>]*>(.*?)</form>', html, re.S
            )
        }


def test_the_sign_in_page_shows_the_widget_in_the_guarded_forms_and_the_script_once(site, client):
    html = client.get("/auth/signin").content.decode()
    forms = _Forms(html).by_action
    assert WIDGET in forms["http://testserver/auth/callback/credentials"]
    assert WIDGET in forms["http://testserver/auth/signin/email"]
    assert html.count(SCRIPT) == 1
    site({"on": ["signin"]})
    html = client.get("/auth/signin").content.decode()
    forms = _Forms(html).by_action
    assert WIDGET in forms["http://testserver/auth/callback/credentials"]
    assert WIDGET not in forms["http://testserver/auth/signin/email"]


def test_the_other_pages_with_sign_in_forms_show_it_too(site, alice, client):
    # The re-authentication page and {% webauth_signin_buttons %} post to the same routes.
    force_sign_in(client, alice)
    page = client.get("/account/reauthenticate/?mfa=1&next=/account/")
    assert page.status_code == 200
    assert page.context["challenge"]["needed"] == {"signin", "password", "email"}
    html = page.content.decode()
    assert html.count(SCRIPT) == 1
    assert WIDGET in _Forms(html).by_action["http://testserver/auth/callback/credentials"]
    html = Client().get("/buttons/").content.decode()
    assert html.count(SCRIPT) == 1
    assert WIDGET in _Forms(html).by_action["http://testserver/auth/callback/credentials"]
    site(False)
    page = client.get("/account/reauthenticate/?mfa=1&next=/account/")
    assert page.context["challenge"] is None and SCRIPT not in page.content.decode()
    assert SCRIPT not in Client().get("/buttons/").content.decode()


def test_the_widget_follows_the_page_s_scheme(site, client):
    site(theme={"color_scheme": "dark"})
    assert 'data-theme="dark"' in client.get("/auth/signin").context["challenge"]["widget"]


# -- hostile inputs ----------------------------------------------------------------------------


HOSTILE_TOKENS = [
    "0." + "a" * 5000,  # oversized
    "0." + "a" * 2047,  # one over Turnstile's maximum
    "0.tok\x00en",
    "0.tok\nen\r\nSet-Cookie: x=y",
    "0.\u202etoken",
    "0.tökén",
    " ",
]


@pytest.mark.parametrize("token", HOSTILE_TOKENS)
def test_a_hostile_token_is_refused_unsent(site, fake, alice, client, token, log):
    for response in (
        password(client, token),
        password(Client(), token, json_client=True),
        ask_email(Client(), token),
        app("/auth/app/signin/credentials", {"username": "alice", "password": "x", FIELD: token}),
        app("/auth/app/signin/email", {"email": "alice@example.com", FIELD: token}),
    ):
        assert response.status_code in (302, 400), response.content
        assert SESSION not in response.cookies
        if response.status_code == 302:
            assert response["Location"] == REFUSED
        else:
            assert response.json()["code"] == "refused"
    assert fake.requests == []
    assert "\x00" not in logged(log) and "\n" not in "".join(r.getMessage() for r in log.records)


@pytest.mark.parametrize("token", ["%00", "<script>alert(1)</script>", "0.'OR'1'='1"])
def test_a_well_formed_token_of_garbage_is_the_service_s_to_refuse(site, fake, alice, token, log):
    response = password(Client(), token)
    assert response["Location"] == REFUSED
    assert [f["response"] for f in fake.sent()] == [token]  # sent as it is, form-encoded
    assert token not in logged(log)


@pytest.mark.parametrize("value", [["0.a", "0.b"], {"token": "0.a"}, 12, 1.5, True, None, ""])
def test_an_answer_of_the_wrong_type_is_refused(site, fake, alice, value):
    # JSON bodies carry any type: the browser route's JSON client and the app routes.
    client = Client()
    body = {
        "csrfToken": csrf_pair(client),
        "username": "alice",
        "password": "correct horse",
        FIELD: value,
    }
    response = client.post(
        "/auth/callback/credentials",
        json.dumps(body),
        content_type="application/json",
        headers={"X-Auth-Return-Redirect": "1"},
        REMOTE_ADDR=IP,
    )
    expected = "missing" if value in (None, "") else "refused"
    assert (response.status_code, response.json()["code"]) == (400, expected)
    assert SESSION not in response.cookies
    for path, body in (
        ("/auth/app/signin/credentials", {"username": "alice", "password": "correct horse"}),
        ("/auth/app/signin/email", {"email": "alice@example.com"}),
    ):
        response = app(path, {**body, FIELD: value})
        assert response.status_code == 400
        # The app's credentials route refuses nested values itself (InvalidRequest).
        assert response.json()["error"] in ("ChallengeFailed", "InvalidRequest")
    assert fake.requests == []


def test_repeated_fields_the_last_one_counts(site, fake, alice):
    good = fake.issue()
    for tokens, signed_in in (([good, "0.never-issued"], False), (["0.never-issued", good], True)):
        client = Client()
        body = "&".join(
            [f"csrfToken={csrf_pair(client)}", "username=alice", "password=correct+horse"]
            + [f"{FIELD}={t}" for t in tokens]
        )
        response = client.post(
            "/auth/callback/credentials",
            body,
            content_type="application/x-www-form-urlencoded",
            REMOTE_ADDR=IP,
        )
        assert response.status_code == 302
        assert (SESSION in response.cookies) is signed_in, tokens
    assert [f["response"] for f in fake.sent()] == ["0.never-issued", good]


def test_another_service_s_field_is_no_answer(site, fake, alice, client):
    response = password(client, **{"h-captcha-response": fake.issue(), "g-recaptcha-response": "x"})
    assert response["Location"] == MISSING


def test_a_forged_csrf_token_is_refused_before_the_challenge(site, fake, alice, client):
    csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {
            "csrfToken": "forged",
            "username": "alice",
            "password": "correct horse",
            FIELD: fake.issue(),
        },
        REMOTE_ADDR=IP,
    )
    assert response.status_code == 302 and "error=MissingCSRF" in response["Location"]
    assert fake.requests == []  # the token is not spent on a forged request


# -- sign-up and password reset ---------------------------------------------------------------


@pytest.fixture
def lifecycle(site):
    """The sign-up and the reset on, under the challenge as asked."""

    def configure(challenge=None):
        site(challenge, passwords={"signup": True, "reset": True})

    configure()
    return configure


def signup(client, token=None, *, ip=IP, email="new@example.com"):
    data = {
        "csrfToken": csrf_pair(client),
        "username": "newcomer",
        "email": email,
        "password1": "a long new passphrase 81",
        "password2": "a long new passphrase 81",
    }
    if token is not None:
        data[FIELD] = token
    return client.post("/auth/signup", data, REMOTE_ADDR=ip)


def reset(client, token=None, *, ip=IP, identifier="alice@example.com"):
    data = {"csrfToken": csrf_pair(client), "identifier": identifier}
    if token is not None:
        data[FIELD] = token
    return client.post("/auth/reset", data, REMOTE_ADDR=ip)


def test_the_sign_up_and_reset_forms_show_the_widget(lifecycle, client):
    for path in ("/auth/signup", "/auth/reset"):
        page = client.get(path).content.decode()
        assert page.count(WIDGET) == 1, path
        assert page.count(SCRIPT) == 1, path


def test_a_sign_up_without_the_answer_makes_nothing_and_sends_nothing(
    lifecycle, fake, client, mailoutbox, log
):
    response = signup(client)
    assert response.status_code == 400
    page = response.content.decode()
    assert 'data-error="ChallengeMissing"' in page
    assert 'value="new@example.com"' in page  # what was typed, bar the passwords
    assert "a long new passphrase" not in page
    assert WIDGET in page
    assert fake.requests == []
    assert not get_user_model().objects.filter(username="newcomer").exists()
    assert "authjs.signup-pending" not in response.cookies
    signup_flow.wait_for_mail()
    assert mailoutbox == []
    assert "[auth][warn][ChallengeFailed]" in logged(log)


def test_a_sign_up_with_a_right_answer_goes_on(lifecycle, fake, client, mailoutbox):
    response = signup(client, fake.issue())
    assert response.status_code == 200
    assert "authjs.signup-pending" in response.cookies
    signup_flow.wait_for_mail()
    assert [m.to for m in mailoutbox] == [["new@example.com"]]


def test_a_sign_up_with_a_refused_answer_says_so(lifecycle, fake, client):
    response = signup(client, "not-a-token-the-service-issued")
    assert response.status_code == 400
    assert 'data-error="ChallengeFailed"' in response.content.decode()
    assert len(fake.requests) == 1


def test_a_reset_without_the_answer_mails_nothing(lifecycle, fake, alice, client, mailoutbox):
    response = reset(client)
    assert response.status_code == 400
    page = response.content.decode()
    assert 'value="alice@example.com"' in page
    assert WIDGET in page
    assert fake.requests == []
    assert not VerificationToken.objects.exists()
    assert "authjs.reset-pending" not in response.cookies


def test_a_reset_with_a_right_answer_goes_on(lifecycle, fake, alice, client):
    response = reset(client, fake.issue())
    assert response.status_code == 302
    assert response["Location"].endswith("/auth/reset/sent")
    assert VerificationToken.objects.count() == 1


def test_the_app_sign_up_and_reset_answer_400_with_the_widget(lifecycle, fake, alice):
    form = {
        "username": "newcomer",
        "email": "new@example.com",
        "password1": "a long new passphrase 81",
        "password2": "a long new passphrase 81",
    }
    for path, body in (("/auth/app/signup", form), ("/auth/app/reset", {"identifier": "alice"})):
        response = app(path, body)
        assert response.status_code == 400, path
        assert response.json()["error"] == "ChallengeFailed"
        assert response.json()["challenge"] == DESCRIBED
        passed = app(path, {**body, FIELD: fake.issue()})
        assert passed.status_code == 200, (path, passed.content)
    assert not get_user_model().objects.filter(username="newcomer").exists()  # verify_email


def test_a_reset_asked_directly_reads_the_answer_where_it_is_told(lifecycle, fake, alice):
    # reset.ask reads the challenge's answer from the form unless it is handed the
    # fields (an app's JSON body): then from those alone.
    from webauth.passwords import reset as reset_flow
    from webauth.state import AuthState

    config = get_config()
    in_form = RequestFactory().post("/auth/reset", {FIELD: fake.issue()}, REMOTE_ADDR=IP)
    reset_flow.ask(AuthState(in_form, config), "alice", "/")
    with pytest.raises(ChallengeFailed) as missing:
        reset_flow.ask(AuthState(in_form, config), "alice", "/", params={})
    assert missing.value.code == "missing"
    bare = RequestFactory().post("/auth/reset", {}, REMOTE_ADDR=IP)
    reset_flow.ask(AuthState(bare, config), "alice", "/", params={FIELD: fake.issue()})
    assert len(fake.requests) == 2
    assert reset_flow.outbox.flush()


def test_only_sign_in_guarded_leaves_sign_up_and_reset_alone(lifecycle, fake, alice, client):
    lifecycle({"on": ["signin"]})
    assert signup(client).status_code == 200
    assert reset(client).status_code == 302
    assert fake.requests == []


# -- the gate's own edges (called directly, as a project's view would) --------------------------


def test_abuse_a_share_of_one_attempt_asks_after_the_first(site, fake, alice, client):
    # 0.5 of a limit of 2 is one failure: the challenge is asked from the next request on.
    site({"when": "abuse"}, rate_limits={"signin_failed": "2/1000d/ip"})
    assert password(client, pw="wrong")["Location"] == WRONG_PASSWORD
    assert password(client)["Location"] == MISSING


def test_with_the_challenge_off_the_gate_asks_nothing(site, alice):
    site(False)
    request = RequestFactory().post("/", REMOTE_ADDR=IP)
    for action in ("signin", "signup", "reset", "email"):
        assert challenges.is_required(request, action) is False
        assert challenges.require(request, action, {}) is None
        assert challenges.page_context(request, [action]) is None


def test_page_context_says_what_the_templates_read(site):
    context = challenges.page_context(RequestFactory().get("/", REMOTE_ADDR=IP), ["signup"])
    assert context is not None
    assert {k: v for k, v in context.items() if k != "widget"} == {
        "service": "turnstile",
        "field": FIELD,
        "site_key": SITE_KEY,
        "script_url": "https://challenges.cloudflare.com/turnstile/v0/api.js",
        "needed": frozenset({"signup"}),
    }


def test_a_client_without_an_address_sends_no_remoteip(site, fake):
    request = RequestFactory().post("/")
    del request.META["REMOTE_ADDR"]
    challenges.require(request, "signup", {FIELD: fake.issue()})
    assert "remoteip" not in fake.requests[-1]["form"]
    challenges.require(RequestFactory().post("/", REMOTE_ADDR=IP), "signup", {FIELD: fake.issue()})
    assert fake.requests[-1]["form"]["remoteip"] == IP


def test_a_malformed_answer_never_reaches_a_project_s_verify(settings, site, monkeypatch):
    # A service of the project's may replace verify(); the gate refuses what no
    # service could have issued before calling it.
    asked = []
    monkeypatch.setattr(
        "webauth.challenges.services.Turnstile.verify",
        lambda self, token, remote_ip: asked.append(token) or True,
    )
    request = RequestFactory().post("/", REMOTE_ADDR=IP)
    for token in ("x" * 100_000, "bad\x00token"):
        with pytest.raises(ChallengeFailed) as raised:
            challenges.require(request, "signup", {FIELD: token})
        assert raised.value.code == "refused"
    assert asked == []
    challenges.require(request, "signup", {FIELD: "fine-token"})
    assert asked == ["fine-token"]
