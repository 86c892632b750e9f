"""The password reset (webauth.passwords.reset, webauth.actions.reset) through its routes.

Django's test client as the person's browser (and as others: a stranger, a
mail scanner without the person's cookies), DjangoAdapter on the suite's
database, Django's locmem mail backend. The messages leave from the reset's
background outbox: each test waits for it (``reset.outbox.flush()``) before
reading ``mail.outbox``. The real browser, the real SMTP server and the mail
scanner are in test_passwords_reset_browser.py; the 50 racers in
test_passwords_reset_concurrency.py.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.utils import timezone
from freezegun import freeze_time

from webauth import signals
from webauth.checks import check_config
from webauth.models import Account, Session, TrustedBrowser, UnprovenEmail, VerificationToken
from webauth.passwords import reset
from webauth.providers import Email
from webauth.test import force_sign_in

pytestmark = pytest.mark.django_db

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PENDING = "authjs.reset-pending"
SESSION = "authjs.session-token"
OLD = "old password 1"
NEW = "a brand new password 2"
CODE = re.compile(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b")
VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
]


@pytest.fixture(autouse=True)
def _outbox_drained():
    # A message of this test must not land in the next test's outbox.
    yield
    assert reset.outbox.flush()


@pytest.fixture
def site(settings):
    def configure(*, email=True, passwords=None, **options):
        providers = ["webauth.providers.DjangoCredentials"]
        if email:
            providers.append(Email(from_email="Example <no-reply@example.com>", max_age=900))
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "providers": providers,
            "passwords": {"reset": True} if passwords is None else passwords,
            **options,
        }

    configure()
    return configure


@pytest.fixture
def users(db):
    model = get_user_model().objects
    return {
        "alice": model.create_user("alice", email="alice@example.com", password=OLD),
        "sleeper": model.create_user(
            "sleeper", email="sleeper@example.com", password=OLD, is_active=False
        ),
        "nopass": model.create_user("nopass", email="nopass@example.com"),
        "noaddr": model.create_user("noaddr", password=OLD),
    }


def sent():
    """Every message sent so far (waiting for the outbox)."""
    assert reset.outbox.flush()
    return list(mail.outbox)


def forget_sent():
    """Forget the messages sent so far (once the outbox has sent them)."""
    assert reset.outbox.flush()
    mail.outbox.clear()


def resets():
    return [m for m in sent() if m.subject.startswith("Reset your password")]


class Browser:
    """A test client with its CSRF pair: one person's browser."""

    def __init__(self, csrf_from=None):
        self.client = Client()
        if csrf_from is not None:  # the same CSRF cookie as another browser
            self.client.cookies.update(csrf_from.client.cookies)
        self.csrf = self.client.get("/auth/csrf").json()["csrfToken"]

    def ask(self, identifier, **extra):
        return self.client.post(
            "/auth/reset", {"csrfToken": self.csrf, "identifier": identifier, **extra}
        )

    def confirm(self, password=NEW, again=None, **fields):
        data = {"csrfToken": self.csrf, "new_password1": password, "new_password2": again}
        data["new_password2"] = password if again is None else again
        return self.client.post("/auth/reset/confirm", {**data, **fields})

    def page(self, path):
        return self.client.get(path)


class Received:
    """The reset message: its link, token and code."""

    def __init__(self, message):
        self.message = message
        [self.link] = re.findall(r"http://testserver/auth/reset/confirm\?\S+", message.body)
        self.token = parse_qs(urlsplit(self.link).query)["token"][0]
        [self.code] = CODE.findall(message.body)
        html = message.alternatives[0][0]
        assert f'href="{self.link}"' in html and self.code in html


def received(address="alice@example.com"):
    [message] = [m for m in resets() if m.to == [address]]
    return Received(message)


def password_of(username):
    return get_user_model().objects.get(username=username)


# -- off ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/auth/reset"),
        ("post", "/auth/reset"),
        ("get", "/auth/reset/"),
        ("get", "/auth/reset/sent"),
        ("get", "/auth/reset/confirm?token=x"),
        ("post", "/auth/reset/confirm"),
        ("get", "/auth/reset/done"),
    ],
)
def test_off_every_route_is_auth_js_400(site, users, method, path):
    site(passwords={})
    answer = getattr(Client(), method)(path)
    assert answer.status_code == 400
    assert answer.json() == "Bad request."
    assert not answer.cookies  # as a path Auth.js does not know: no CSRF cookie either
    assert VerificationToken.objects.count() == 0


def test_off_the_app_routes_are_404(site, users):
    site(passwords={}, bearer=True)
    for path in ("/auth/app/reset", "/auth/app/reset/confirm"):
        answer = Client().post(path, {}, content_type="application/json")
        assert answer.status_code == 404 and answer.json() == {"error": "UnknownAction"}
    site(bearer=False)
    answer = Client().post("/auth/app/reset", {}, content_type="application/json")
    assert answer.status_code == 404


# -- asking ------------------------------------------------------------------------------------


def test_the_form(site):
    page = Client().get("/auth/reset?callbackUrl=/after/")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<h1 class="webauth-heading">Reset your password</h1>' in html
    assert 'name="identifier"' in html and 'autocomplete="username"' in html
    assert '<label class="webauth-label" for="webauth-reset-identifier">Email or username' in html
    assert 'name="callbackUrl" value="http://testserver/after/"' in html
    assert "no-store" in page["Cache-Control"]
    assert page["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("typed", ["Alice@Example.com", "alice", " alice "])
def test_by_address_or_username_the_message_goes_to_the_users_address(site, users, typed):
    browser = Browser()
    answer = browser.ask(typed)
    assert answer.status_code == 302
    assert answer["Location"] == "http://testserver/auth/reset/sent"
    assert PENDING in answer.cookies
    mail_ = received()
    message = mail_.message
    assert message.from_email == "Example <no-reply@example.com>"
    assert message.subject == "Reset your password on testserver"
    assert "15 minutes" in message.body
    assert "alice" not in message.subject
    # The grant is the user's, under the reset's own identifier, nothing readable in it.
    [grant] = VerificationToken.objects.all()
    assert grant.identifier == f"password-reset:{users['alice'].pk}"
    assert (
        mail_.token not in grant.token_hash and mail_.code.replace("-", "") not in grant.code_hash
    )
    page = browser.page("/auth/reset/sent")
    assert page.status_code == 200
    assert f"If an account matches <strong>{typed.strip()}</strong>" in page.content.decode()
    assert 'name="code"' in page.content.decode()


@pytest.mark.parametrize(
    "who", ["nobody@example.com", "nobody", "sleeper", "nopass", "noaddr", "sleeper@example.com"]
)
def test_nobody_who_cannot_reset_is_mailed(site, users, who):
    answer = Browser().ask(who)
    assert answer.status_code == 302 and answer["Location"].endswith("/auth/reset/sent")
    assert resets() == []
    # A decoy grant did the same work (and belongs to nobody).
    [grant] = VerificationToken.objects.all()
    assert grant.identifier.startswith("password-reset:~")


def _same_but(a, b, a_text, b_text):
    return a.replace(a_text.encode(), b"X") == b.replace(b_text.encode(), b"X")


def _cookie_shape(answer):
    return {name: (len(m.value), m["max-age"], m["path"]) for name, m in answer.cookies.items()}


@pytest.mark.parametrize(
    ("known", "unknown"),
    [
        ("alice@example.com", "zelda@example.com"),
        ("alice", "zelda"),
        ("sleeper", "sleepy_"),
        ("nopass", "nopas_"),
    ],
)
def test_known_and_unknown_get_byte_identical_answers(site, users, known, unknown):
    first = Browser()
    second = Browser(csrf_from=first)
    assert first.csrf == second.csrf
    # One clock for both: a cookie's Max-Age counts down to the grant's expiry, and
    # a second that ends between the two requests (a slow database) is no leak.
    with freeze_time():
        asked = [first.ask(known), second.ask(unknown)]
    assert [a.status_code for a in asked] == [302, 302]
    assert asked[0].content == asked[1].content == b""
    assert asked[0]["Location"] == asked[1]["Location"]
    assert sorted(asked[0].headers) == sorted(asked[1].headers)
    assert _cookie_shape(asked[0]) == _cookie_shape(asked[1])
    pages = [first.page("/auth/reset/sent"), second.page("/auth/reset/sent")]
    assert _same_but(pages[0].content, pages[1].content, known, unknown)
    # A wrong code: the same answer, the same attempts left.
    with freeze_time():
        wrong = [b.confirm(code="0000-0000") for b in (first, second)]
    assert [w.status_code for w in wrong] == [400, 400]
    assert _same_but(wrong[0].content, wrong[1].content, known, unknown)
    assert b"4 attempts left" in wrong[0].content
    assert _cookie_shape(wrong[0]) == _cookie_shape(wrong[1])


def test_the_event(site, users):
    seen = []

    def receiver(sender, **kwargs):
        seen.append(kwargs)

    signals.password_reset_requested.connect(receiver)
    try:
        Browser().ask("alice")
        Browser().ask("nobody@example.com")
        Browser().ask("sleeper")
    finally:
        signals.password_reset_requested.disconnect(receiver)
    assert [(e["user"], e["identifier"]) for e in seen] == [
        (users["alice"], "alice"),
        (None, "nobody@example.com"),
        (None, "sleeper"),
    ]
    assert all(e["request"] is not None for e in seen)


def test_the_event_handler_in_settings(site, users):
    seen = []
    site(events={"password_reset_requested": lambda **kw: seen.append(kw)})
    Browser().ask("alice@example.com")
    [event] = seen
    assert event["user"] == users["alice"] and event["identifier"] == "alice@example.com"
    assert "request" not in event


# -- the link ----------------------------------------------------------------------------------


def test_by_link(site, users, client_factory):
    elsewhere = client_factory()
    force_sign_in(elsewhere, users["alice"])
    TrustedBrowser.objects.create(
        user=users["alice"], token_hash="a" * 64, expires=timezone.now() + timedelta(days=3)
    )
    browser = Browser()
    browser.ask("alice", callbackUrl="/after/")
    mail_ = received()
    opened = browser.page(mail_.link)
    assert opened.status_code == 200
    assert b"Choose a new password" in opened.content
    assert f'name="token" value="{mail_.token}"'.encode() in opened.content
    assert opened["Referrer-Policy"] == "no-referrer" and "no-store" in opened["Cache-Control"]
    assert VerificationToken.objects.count() == 1  # opening it used nothing

    done = browser.confirm(token=mail_.token)
    assert done.status_code == 302 and done["Location"] == "http://testserver/auth/reset/done"
    alice = password_of("alice")
    assert alice.check_password(NEW) and not alice.check_password(OLD)
    assert VerificationToken.objects.count() == 0
    assert not TrustedBrowser.objects.filter(user=alice).exists()
    assert elsewhere.get("/auth/session").json() is None  # signed out everywhere
    # The owner is told; nothing of the new password is in it.
    [notice] = [m for m in sent() if m.subject.startswith("Your password was changed")]
    assert notice.to == ["alice@example.com"] and NEW not in notice.body
    page = browser.page("/auth/reset/done")
    assert page.status_code == 200 and b"Your password has been changed" in page.content
    assert (
        b'href="http://testserver/auth/signin?callbackUrl=http%3A%2F%2Ftestserver%2Fafter%2F"'
        in (page.content)
    )
    # No session here: a reset signs nobody in (the sign-in asks for a second factor).
    assert browser.page("/auth/session").json() is None
    # The link, opened again here, is no longer valid; in another browser, elsewhere.
    again = browser.page(mail_.link)
    assert b"This link is no longer valid" in again.content
    assert b"Finish where you started" in Client().get(mail_.link).content
    assert browser.confirm(token=mail_.token).status_code == 400
    assert password_of("alice").check_password(NEW)


@pytest.mark.parametrize("strategy", ["database", "jwt"])
def test_every_session_ends_under_both_strategies(site, users, client_factory, strategy):
    site(session={"strategy": strategy})
    others = [client_factory(), client_factory()]
    for other in others:
        force_sign_in(other, users["alice"])
    browser = Browser()
    force_sign_in(browser.client, users["alice"])  # the resetting browser too
    browser.ask("alice")
    assert browser.confirm(code=received().code).status_code == 302
    for client in (*others, browser.client):
        assert client.get("/auth/session").json() is None
    assert Session.objects.filter(user=users["alice"]).count() == 0


def test_the_link_in_another_browser_changes_nothing(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    stranger = Browser()
    page = stranger.page(mail_.link)
    assert page.status_code == 200 and b"Finish where you started" in page.content
    assert b'name="token"' not in page.content
    # Its own CSRF pair, the token, the code: nothing redeemed, nothing counted.
    assert stranger.confirm(token=mail_.token).status_code == 400
    assert stranger.confirm(code=mail_.code).status_code == 400
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0
    assert password_of("alice").check_password(OLD)
    assert browser.confirm(code=mail_.code).status_code == 302


def test_a_link_of_another_request_of_this_browser_is_no_use(site, users):
    browser = Browser()
    browser.ask("alice")
    first = received()
    forget_sent()
    browser.ask("alice")
    second = received()
    # The earlier grant is void: the cookie remembers its link, and says so.
    assert b"This link is no longer valid" in browser.page(first.link).content
    assert browser.confirm(token=first.token).status_code == 400
    assert browser.confirm(code=first.code).status_code == 400
    assert browser.confirm(token=second.token).status_code == 302


def test_earlier_grants_of_the_user_are_voided_wherever_they_were_asked(site, users):
    one, two = Browser(), Browser()
    one.ask("alice")
    first = received()
    forget_sent()
    two.ask("alice@example.com")
    answer = one.confirm(token=first.token)
    assert answer.status_code == 400 and b"This link is no longer valid" in answer.content
    assert password_of("alice").check_password(OLD)
    assert two.confirm(code=received().code).status_code == 302


def test_a_password_changed_meanwhile_voids_the_grant(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    alice = password_of("alice")
    alice.set_password("changed by the admin 3")
    alice.save()
    assert browser.confirm(token=mail_.token).status_code == 400
    assert password_of("alice").check_password("changed by the admin 3")
    forget_sent()
    other = Browser()
    other.ask("alice")
    code = received().code
    alice.set_password("changed again 4")
    alice.save()
    answer = other.confirm(code=code)
    assert answer.status_code == 400 and b"attempts left" in answer.content
    assert password_of("alice").check_password("changed again 4")


def test_a_user_deactivated_meanwhile_cannot_finish(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    get_user_model().objects.filter(username="alice").update(is_active=False)
    assert b"This link is no longer valid" in browser.confirm(token=mail_.token).content
    assert password_of("alice").check_password(OLD)


def test_an_expired_grant(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    VerificationToken.objects.update(expires=timezone.now() - timedelta(seconds=1))
    assert b"This link is no longer valid" in browser.confirm(token=mail_.token).content
    assert password_of("alice").check_password(OLD)


# -- the code ----------------------------------------------------------------------------------


def test_by_code(site, users):
    browser = Browser()
    browser.ask("alice@example.com")
    code = received().code
    assert browser.confirm(code=code.lower().replace("-", " ")).status_code == 302
    assert password_of("alice").check_password(NEW)
    assert VerificationToken.objects.count() == 0
    assert browser.page("/auth/reset/sent").content.count(b'name="code"') == 0


def test_five_wrong_codes_and_the_grant_is_void(site, users):
    site(rate_limits={"code_failed": "100/m/ip,100/5m/key"})  # the grant's own count decides
    browser = Browser()
    browser.ask("alice")
    code = received().code
    wrong = "0000-0000" if code != "0000-0000" else "1111-1111"
    for left in (4, 3, 2, 1):
        answer = browser.confirm(code=wrong)
        assert answer.status_code == 400
        text = answer.content.decode()
        assert f"({left} attempt{'s' if left > 1 else ''} left)" in text
        assert 'aria-invalid="true" aria-describedby="webauth-reset-code-error"' in text
    answer = browser.confirm(code=wrong)
    assert b"This code can no longer be used" in answer.content
    assert VerificationToken.objects.count() == 0
    assert browser.confirm(code=code).status_code == 400
    assert password_of("alice").check_password(OLD)


def test_what_cannot_be_a_code_is_wrong_without_a_look_up(site, users):
    browser = Browser()
    browser.ask("alice")
    for typed in ("", "x" * 40, "ABCD-EFG!"):
        assert browser.confirm(code=typed).status_code == 400
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0


def test_a_reset_grant_signs_nobody_in_and_a_sign_in_grant_resets_nothing(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    # The reset's code and link at the email sign-in's callback: nothing.
    client = browser.client
    by_code = client.post("/auth/callback/email", {"csrfToken": browser.csrf, "code": mail_.code})
    by_link = client.post(
        "/auth/callback/email",
        {"csrfToken": browser.csrf, "token": mail_.token, "email": "alice@example.com"},
    )
    assert SESSION not in by_code.cookies and SESSION not in by_link.cookies
    # A sign-in email's code on the reset's form: a wrong code.
    forget_sent()
    client.post("/auth/signin/email", {"csrfToken": browser.csrf, "email": "alice@example.com"})
    [signin] = [m for m in sent() if m.subject.startswith("Sign in")]
    [signin_code] = CODE.findall(signin.body)
    assert browser.confirm(code=signin_code).status_code == 400
    assert password_of("alice").check_password(OLD)
    assert browser.confirm(code=mail_.code).status_code == 302


def test_an_app_ticket_is_not_a_browser_cookie(site, users):
    site(bearer=True)
    asked = (
        Client()
        .post("/auth/app/reset", {"identifier": "alice"}, content_type="application/json")
        .json()
    )
    code = received().code
    browser = Browser()
    browser.client.cookies[PENDING] = asked["resetToken"]
    assert browser.confirm(code=code).status_code == 400
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0


# -- the new password ---------------------------------------------------------------------------


def test_two_different_passwords(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    answer = browser.confirm(token=mail_.token, again=NEW + "x")
    assert answer.status_code == 400
    assert "didn’t match" in answer.content.decode()
    assert 'aria-describedby="webauth-new-password2-error"' in answer.content.decode()
    assert browser.confirm(token=mail_.token).status_code == 302


def test_the_validators_before_the_code_is_used(site, users, settings):
    settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
    browser = Browser()
    browser.ask("alice")
    code = received().code
    answer = browser.confirm(code=code, password="short")
    assert answer.status_code == 400
    assert b"This password is too short" in answer.content
    assert b"must contain at least 10 characters" in answer.content  # the rules, as hints
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0  # the code was not looked at
    assert browser.confirm(code=code).status_code == 302


def test_a_password_like_the_username_is_refused_only_after_the_code(site, users, settings):
    """Before the code, "too similar to the username" would say whose account it is."""
    settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
    stranger = Browser()
    stranger.ask("alice")
    forget_sent()
    answer = stranger.confirm(code="0000-0000", password="alice@example.com")
    assert b"is too similar to the" not in answer.content and b"attempts left" in answer.content

    browser = Browser()
    browser.ask("alice")
    code = received().code
    answer = browser.confirm(code=code, password="alice@example.com")
    assert answer.status_code == 400
    assert b"is too similar to the" in answer.content
    # The code is spent; this browser got a token of its own to try another password.
    assert b"Choose a new password" in answer.content
    [token] = re.findall(rb'name="token" value="([^"]+)"', answer.content)
    assert browser.confirm(code=code).status_code == 400  # the code is used up
    assert browser.confirm(token=token.decode()).status_code == 302
    assert password_of("alice").check_password(NEW)


def test_by_link_every_validator_speaks_before_anything_is_used(site, users, settings):
    settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    answer = browser.confirm(token=mail_.token, password="alice@example.com")
    assert answer.status_code == 400 and b"is too similar to the" in answer.content
    assert VerificationToken.objects.count() == 1
    assert browser.confirm(token=mail_.token).status_code == 302


# -- what a reset proves ------------------------------------------------------------------------


def test_an_unproven_address_is_proven_by_the_reset(site, users):
    alice = users["alice"]
    UnprovenEmail.objects.create(user=alice)
    # What a stranger may have put on the account goes; the address's own email
    # account (the one the reset just proved) stays.
    kept = Account.objects.create(
        user=alice, type="email", provider="email", provider_account_id="alice@example.com"
    )
    Account.objects.create(user=alice, type="oauth", provider="github", provider_account_id="7")
    browser = Browser()
    browser.ask("alice")
    assert browser.confirm(code=received().code).status_code == 302
    assert not UnprovenEmail.objects.filter(user=alice).exists()
    assert list(Account.objects.filter(user=alice)) == [kept]
    assert password_of("alice").check_password(NEW)  # set after the proof took the old one


def test_without_an_email_provider_django_s_sender_and_an_hour(site, users, settings):
    settings.DEFAULT_FROM_EMAIL = "Site <site@example.com>"
    site(email=False)
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    assert mail_.message.from_email == "Site <site@example.com>"
    assert "60 minutes" in mail_.message.body
    assert browser.confirm(code=mail_.code).status_code == 302


def test_the_first_email_provider_with_codes_sets_the_rules(site, users, settings):
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            "webauth.providers.DjangoCredentials",
            Email(id="links", from_email="links@example.com", code=None),
            Email(id="digits", from_email="digits@example.com", code="digits", max_age=120),
        ],
    }
    browser = Browser()
    browser.ask("alice")
    message = resets()[0]
    assert message.from_email == "digits@example.com" and "2 minutes" in message.body
    assert re.search(r"\b\d{4}-\d{4}\b", message.body)
    assert b'inputmode="numeric"' in browser.page("/auth/reset/sent").content


# -- limits ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["alice", "nobody"])
def test_three_requests_an_hour_per_identifier_known_or_not(site, users, who):
    for _ in range(3):
        assert Browser().ask(who).status_code == 302
    refused = Browser().ask(who.upper())  # another spelling counts with it
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert b"Too many attempts" in refused.content
    assert Browser().ask("someone-else").status_code == 302


def test_ten_requests_a_minute_per_client_address(site, users):
    for n in range(10):
        assert Browser().ask(f"person{n}").status_code == 302
    assert Browser().ask("person10").status_code == 429


def test_wrong_codes_count_under_code_failed(site, users):
    site(rate_limits={"code_failed": "2/m/ip"})
    browser = Browser()
    browser.ask("alice")
    code = received().code
    assert browser.confirm(code="0000-0000").status_code == 400
    assert browser.confirm(code="0000-0001").status_code == 400
    refused = browser.confirm(code=code)
    assert refused.status_code == 429 and b"Too many attempts" in refused.content
    assert password_of("alice").check_password(OLD)


def test_a_right_code_gives_its_attempt_back(site, users):
    site(rate_limits={"code_failed": "1/m/ip"})
    browser = Browser()
    browser.ask("alice")
    assert browser.confirm(code=received().code).status_code == 302
    other = Browser()
    other.ask("nobody")
    assert other.confirm(code="0000-0000").status_code == 400  # the limit is not used up


# -- hostile input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("", b"Enter your email address or username."),
        ("   ", b"Enter your email address or username."),
        ("a" * 10_000, b"That is too long"),
        ("ali\x00ce", b"Enter a valid email address or username."),
    ],
)
def test_identifiers_that_cannot_name_anyone(site, users, typed, message):
    answer = Browser().ask(typed)
    assert answer.status_code == 400 and message in answer.content
    assert b'aria-invalid="true"' in answer.content
    assert VerificationToken.objects.count() == 0 and resets() == []


@pytest.mark.parametrize("value", [["alice"], 42, {"a": 1}, None, True])
def test_wrong_types_in_a_json_body(site, users, value):
    browser = Browser()
    answer = browser.client.post(
        "/auth/reset",
        json.dumps({"csrfToken": browser.csrf, "identifier": value}),
        content_type="application/json",
    )
    assert answer.status_code == 400 and b"Enter your email address or username." in answer.content
    browser.ask("alice")
    mail_ = received()
    for field in ("code", "new_password1", "token"):
        body = {"csrfToken": browser.csrf, "code": mail_.code, "new_password1": NEW}
        body.update({"new_password2": NEW, field: value})
        if field == "token":
            del body["code"]
        answer = browser.client.post(
            "/auth/reset/confirm", json.dumps(body), content_type="application/json"
        )
        assert answer.status_code == 400, field
    assert password_of("alice").check_password(OLD)


def test_oversized_passwords_and_codes(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    answer = browser.confirm(code=mail_.code, password="p" * 5000)
    assert answer.status_code == 400 and b"This password is too long." in answer.content
    assert browser.confirm(code="A" * 100_000).status_code == 400
    assert browser.confirm(token="f" * 100_000).status_code == 400
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0  # none of them could be a code: refused before any look-up
    assert browser.confirm(code=mail_.code).status_code == 302


def test_csrf_variants_change_nothing(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    other = Browser()
    cases = [
        {},  # no token
        {"csrfToken": ""},
        {"csrfToken": "x" * 64},
        {"csrfToken": other.csrf},  # another browser's token
        {"csrfToken": browser.csrf + "0"},
    ]
    for tokens in cases:
        fields = {"new_password1": NEW, "new_password2": NEW, **tokens}
        by_code = browser.client.post("/auth/reset/confirm", {"code": mail_.code, **fields})
        by_link = browser.client.post("/auth/reset/confirm", {"token": mail_.token, **fields})
        assert by_code.status_code == by_link.status_code == 400, tokens
        assert b"This form has expired" in by_code.content and b"This form has expired" in (
            by_link.content
        )
        asked = browser.client.post("/auth/reset", {"identifier": "alice", **tokens})
        assert asked.status_code == 400 and b"This form has expired" in asked.content
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0 and len(resets()) == 1
    assert password_of("alice").check_password(OLD)
    # A cookie-less cross-site POST: no CSRF cookie, no pending cookie.
    assert Client().post("/auth/reset", {"identifier": "alice"}).status_code == 400


@pytest.mark.parametrize(
    "callback",
    ["https://evil.example/", "//evil.example/x", "javascript:alert(1)", "https:evil.example"],
)
def test_no_open_redirect_through_callback_url(site, users, callback):
    def targets(html):
        urls = re.findall(r'(?:href|value)="([^"]+)"', html.replace("&amp;", "&"))
        found = [v for u in urls for v in parse_qs(urlsplit(u).query).get("callbackUrl", [])]
        found += [u for u in urls if "evil" in u or "javascript" in u]
        return found

    browser = Browser()
    page = browser.client.get("/auth/reset", {"callbackUrl": callback}).content.decode()
    form = re.search(r'name="callbackUrl" value="([^"]*)"', page).group(1)
    for url in (form, *targets(page)):
        assert urlsplit(url).netloc == "testserver" and urlsplit(url).scheme == "http", url
    browser.ask("alice", callbackUrl=callback)
    assert browser.confirm(code=received().code).status_code == 302
    done = browser.page("/auth/reset/done").content.decode()
    found = targets(done)
    assert found
    for target in found:
        assert urlsplit(target).netloc == "testserver" and urlsplit(target).scheme == "http"


def test_a_forged_or_foreign_cookie_is_no_cookie(site, users):
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    for value in ("garbage", "a.b.c.d.e", browser.client.cookies[PENDING].value[:-4] + "AAAA"):
        forged = Browser()
        forged.client.cookies[PENDING] = value
        page = forged.page(mail_.link)
        assert page.status_code == 200 and b"Finish where you started" in page.content
        assert forged.confirm(code=mail_.code).status_code == 400
    # The email sign-in's pending cookie (another salt) is no reset cookie either.
    signing_in = Browser()
    signing_in.client.post(
        "/auth/signin/email", {"csrfToken": signing_in.csrf, "email": "alice@example.com"}
    )
    signing_in.client.cookies[PENDING] = signing_in.client.cookies["authjs.email-pending"].value
    assert signing_in.confirm(code=mail_.code).status_code == 400
    [grant] = VerificationToken.objects.filter(identifier__startswith="password-reset:")
    assert grant.attempts == 0


def test_pages_opened_out_of_order(site, users):
    client = Client()
    assert client.get("/auth/reset/done")["Location"] == "http://testserver/auth/reset"
    page = client.get("/auth/reset/sent")
    assert page.status_code == 200 and b'name="code"' not in page.content
    assert client.get("/auth/reset/confirm").status_code == 200  # no token: elsewhere
    assert client.get("/auth/reset/").status_code == 200  # a trailing slash
    assert client.put("/auth/reset").status_code == 400
    assert client.head("/auth/reset/confirm?token=x").status_code == 400
    browser = Browser()
    browser.ask("alice")
    received()
    # Asked, then failed: the done page is not shown for a grant found void.
    VerificationToken.objects.all().delete()
    assert browser.confirm(code="0000-0000").status_code == 400
    assert browser.page("/auth/reset/done").status_code == 302


# -- the app routes --------------------------------------------------------------------------------


def app_post(path, body):
    return Client().post(path, json.dumps(body), content_type="application/json")


@pytest.fixture
def app_site(site):
    site(bearer=True)


def test_an_app_resets_with_the_code(app_site, users):
    asked = app_post("/auth/app/reset", {"identifier": "alice"})
    assert asked.status_code == 200
    body = asked.json()
    assert body["sent"] is True and set(body) == {"sent", "resetToken"}
    assert "no-store" in asked["Cache-Control"]
    code = received().code
    wrong = app_post(
        "/auth/app/reset/confirm",
        {"resetToken": body["resetToken"], "code": "0000-0000", "password": NEW},
    )
    assert wrong.status_code == 401 and wrong.json() == {"error": "Verification"}
    done = app_post(
        "/auth/app/reset/confirm", {"resetToken": body["resetToken"], "code": code, "password": NEW}
    )
    assert done.status_code == 200 and done.json() == {"reset": True}
    assert password_of("alice").check_password(NEW)
    again = app_post(
        "/auth/app/reset/confirm", {"resetToken": body["resetToken"], "code": code, "password": NEW}
    )
    assert again.status_code == 401


def test_an_app_gets_the_same_answer_for_anyone(app_site, users):
    answers = [app_post("/auth/app/reset", {"identifier": who}) for who in ("alice", "zelda")]
    assert [a.status_code for a in answers] == [200, 200]
    shapes = [{k: len(str(v)) for k, v in a.json().items()} for a in answers]
    assert shapes[0] == shapes[1]
    assert sorted(answers[0].headers) == sorted(answers[1].headers)


def test_an_app_with_the_link_token_and_a_refused_password(app_site, users, settings):
    settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
    ticket = app_post("/auth/app/reset", {"identifier": "alice"}).json()["resetToken"]
    mail_ = received()
    short = app_post(
        "/auth/app/reset/confirm", {"resetToken": ticket, "code": mail_.code, "password": "short"}
    )
    assert short.status_code == 400
    assert short.json()["error"] == "InvalidPassword" and "token" not in short.json()
    similar = app_post(
        "/auth/app/reset/confirm",
        {"resetToken": ticket, "code": mail_.code, "password": "alice@example.com"},
    )
    body = similar.json()
    assert similar.status_code == 400 and body["error"] == "InvalidPassword"
    assert any("similar" in m for m in body["messages"])
    done = app_post(
        "/auth/app/reset/confirm",
        {"resetToken": body["resetToken"], "token": body["token"], "password": NEW},
    )
    assert done.status_code == 200 and password_of("alice").check_password(NEW)


@pytest.mark.parametrize(
    ("path", "body", "status", "error"),
    [
        ("/auth/app/reset", {}, 400, "InvalidRequest"),
        ("/auth/app/reset", {"identifier": ["alice"]}, 400, "InvalidRequest"),
        ("/auth/app/reset", {"identifier": "a" * 5000}, 400, "InvalidRequest"),
        ("/auth/app/reset", {"identifier": "ali\x00ce"}, 400, "InvalidRequest"),
        ("/auth/app/reset/confirm", {"code": "x", "password": NEW}, 400, "InvalidRequest"),
        ("/auth/app/reset/confirm", {"resetToken": "x", "password": NEW}, 400, "InvalidRequest"),
        (
            "/auth/app/reset/confirm",
            {"resetToken": "x", "code": "x", "token": "y", "password": NEW},
            400,
            "InvalidRequest",
        ),
        (
            "/auth/app/reset/confirm",
            {"resetToken": "x", "code": "x", "password": NEW},
            401,
            "Verification",
        ),
        (
            "/auth/app/reset/confirm",
            {"resetToken": "x", "code": "x", "password": "p" * 5000},
            400,
            "InvalidRequest",
        ),
    ],
)
def test_an_app_s_malformed_requests(app_site, users, path, body, status, error):
    answer = app_post(path, body)
    assert answer.status_code == status and answer.json()["error"] == error


def test_an_app_s_other_refusals(app_site, users):
    assert Client().get("/auth/app/reset").status_code == 405
    form = "application/x-www-form-urlencoded"
    assert (
        Client().post("/auth/app/reset", "identifier=alice", content_type=form).status_code == 400
    )
    assert app_post("/auth/app/reset", [1]).status_code == 400
    ticket = app_post("/auth/app/reset", {"identifier": "alice"}).json()["resetToken"]
    mail_ = received()
    # A token that is not this ticket's link, a tampered ticket: nothing used.
    other = app_post(
        "/auth/app/reset/confirm", {"resetToken": ticket, "token": "f" * 64, "password": NEW}
    )
    assert other.status_code == 401
    tampered = app_post(
        "/auth/app/reset/confirm",
        {"resetToken": ticket[:-4] + "AAAA", "code": mail_.code, "password": NEW},
    )
    assert tampered.status_code == 401
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0
    for _ in range(2):
        app_post("/auth/app/reset", {"identifier": "alice"})
    limited = app_post("/auth/app/reset", {"identifier": "alice"})
    assert limited.status_code == 429 and limited.json()["error"] == "RateLimited"


# -- the outbox and the checks --------------------------------------------------------------------


class FailingBackend:
    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        raise OSError("no mail server")


def test_a_message_that_cannot_be_sent_is_logged_and_the_answer_is_the_same(
    site, users, settings, caplog
):
    settings.EMAIL_BACKEND = "tests.test_passwords_reset.FailingBackend"
    answer = Browser().ask("alice")
    assert answer.status_code == 302
    assert reset.outbox.flush()
    assert any("could not be sent" in r.getMessage() for r in caplog.records)


def test_a_full_outbox_drops_and_logs(monkeypatch, site, users, caplog):
    monkeypatch.setattr(reset, "OUTBOX_LIMIT", 0)
    assert Browser().ask("alice").status_code == 302
    assert resets() == []
    assert any("outbox is full" in r.getMessage() for r in caplog.records)


def test_a_decoy_s_message_is_built_and_never_sent(site, users, monkeypatch):
    built = []
    original = type(mail.EmailMultiAlternatives()).message

    def message(self, *args, **kwargs):
        built.append(self.to)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(mail.EmailMultiAlternatives, "message", message)
    Browser().ask("nobody")
    Browser().ask("alice")
    assert reset.outbox.flush()
    assert ["nobody@invalid"] in built and ["alice@example.com"] in built
    assert [m.to for m in mail.outbox] == [["alice@example.com"]]


def test_nothing_secret_is_logged(site, users, caplog, settings):
    settings.AUTH_PASSWORD_VALIDATORS = VALIDATORS
    caplog.set_level("DEBUG")
    browser = Browser()
    browser.ask("alice")
    mail_ = received()
    browser.confirm(code="0000-0000")
    browser.confirm(code=mail_.code, password="alice@example.com")
    browser.confirm(token=mail_.token)
    secrets = [mail_.token, mail_.code, mail_.code.replace("-", ""), NEW, "alice@example.com"]
    for record in caplog.records:
        text = record.getMessage()
        assert not [s for s in secrets if s in text], text


def _ids(messages):
    return {m.id for m in messages}


def test_the_system_checks(site, settings):
    assert not {"webauth.E016", "webauth.W016"} & _ids(check_config())
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": "tests.test_passwords_reset.NoGrants",
    }
    assert "webauth.E016" in _ids(check_config())
    site(email=False)
    settings.DEFAULT_FROM_EMAIL = "webmaster@localhost"
    assert "webauth.W016" in _ids(check_config())
    settings.DEBUG = True
    assert "webauth.W016" not in _ids(check_config())


class NoGrants:
    """An adapter without the grant methods a reset needs."""

    def get_user(self, id):
        return None
