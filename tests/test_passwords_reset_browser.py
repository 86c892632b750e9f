"""The password reset end to end: a real SMTP server, a real browser, and a mail scanner.

The message leaves from the reset's outbox through Django's SMTP backend and
arrives at an aiosmtpd server on 127.0.0.1; Chromium (Debian's, through
Playwright) asks for it on the built-in form, and the test reads the link and
the code from what the SMTP server received, as a person reads their mail.

The scanner is what corporate mail gateways do to every link in a message
before the person sees it (Outlook Safe Links, Proofpoint, Gmail): a HEAD, a
GET, then a headless browser that runs the page's JavaScript and clicks and
submits everything it finds. It has none of the person's cookies. It must
change nothing (no password, no grant used or counted, no email sent), and the
person must still reset afterwards, with the link or with the code.
"""

import re
import time
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model

from webauth.models import VerificationToken
from webauth.passwords import reset
from webauth.providers import Email

from .support.browser import focus_lands_on
from .test_email_browser import Inbox, free_port

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
PENDING = "authjs.reset-pending"
OLD = "correct horse battery staple"
NEW = "a brand new password 2"
SENT = "/auth/reset/sent"

pytestmark = pytest.mark.browser


class Mailbox(Inbox):
    """The SMTP server's inbox, read by subject (a reset's message, then its notice)."""

    def wait_for_subject(self, start, timeout=10):
        """The one message whose subject starts with *start* (waiting for it)."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                found = [m for _, m in self.messages if m["Subject"].startswith(start)]
                left = deadline - time.monotonic()
                if found or left <= 0:
                    break
                self._arrived.wait(left)
        assert len(found) == 1, [m["Subject"] for _, m in self.messages]
        return found[0]


@pytest.fixture(scope="module")
def smtp():
    from aiosmtpd.controller import Controller

    inbox = Mailbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


@pytest.fixture
def site(settings, smtp):
    """The reset on DjangoAdapter, its messages delivered by SMTP to the test's server."""
    inbox, port = smtp
    inbox.clear()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = port
    settings.EMAIL_TIMEOUT = 10
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    ]
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "database"},
        "providers": [
            "webauth.providers.DjangoCredentials",
            Email(from_email="Example <no-reply@example.com>", max_age=900),
        ],
        "passwords": {"reset": True},
    }
    yield inbox
    assert reset.outbox.flush()


@pytest.fixture
def new_context(browser, live_server):
    """Fresh browser profiles (no cookies), closed after the test."""
    contexts = []

    def make():
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", email="alice@example.com", password=OLD)


class Received:
    """The reset message as it arrived: its link, token and code, in both parts."""

    def __init__(self, message, base_url):
        self.message = message
        text = message.get_body(("plain",)).get_content()
        html = message.get_body(("html",)).get_content()
        links = set(re.findall(re.escape(base_url) + r"/auth/reset/confirm\?[^\s\"'<>]+", text))
        assert len(links) == 1, text
        self.link = links.pop()
        assert f'href="{self.link}"' in html
        codes = set(re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", text))
        assert len(codes) == 1, text
        self.code = codes.pop()
        assert self.code in html
        self.token = parse_qs(urlsplit(self.link).query)["token"][0]


def received(inbox, live_server):
    message = inbox.wait_for_subject("Reset your password")
    assert message["To"] == "alice@example.com"
    return Received(message, live_server.url)


def ask(page, identifier, callback="/whoami/"):
    page.goto(f"/auth/reset?callbackUrl={quote(callback)}")
    assert page.locator("h1").inner_text() == "Reset your password"
    page.fill("#webauth-reset-identifier", identifier)
    with page.expect_navigation():
        page.click("#webauth-reset-submit")
    assert urlsplit(page.url).path == SENT
    assert page.locator("h1").inner_text() == "Check your email"


def choose(page, password=NEW, again=None):
    page.fill("#webauth-new-password1", password)
    page.fill("#webauth-new-password2", password if again is None else again)


def cookie_names(context):
    return {c["name"] for c in context.cookies()}


def signs_in(context, password):
    """Whether *password* signs alice in (a password form's POST, in *context*)."""
    api = context.request
    csrf = api.get("/auth/csrf").json()["csrfToken"]
    answer = api.post(
        "/auth/callback/credentials",
        form={"csrfToken": csrf, "username": "alice", "password": password},
        max_redirects=0,
    )
    return answer.status == 302 and "error=" not in answer.headers["location"]


def password_is(password):
    return get_user_model().objects.get(username="alice").check_password(password)


# -- the link and the code, end to end ---------------------------------------------------------


@pytest.mark.parametrize("way", ["link", "code"])
def test_a_person_resets_from_the_email(site, new_context, live_server, alice, way):
    elsewhere = new_context()  # alice, signed in on another device
    assert signs_in(elsewhere, OLD)
    page = new_context().new_page()

    ask(page, "Alice@Example.com")
    assert PENDING in cookie_names(page.context)
    assert "Alice@Example.com" in page.locator(".webauth-identifier").inner_text()
    mail = received(site, live_server)
    assert mail.message["From"] == "Example <no-reply@example.com>"
    assert mail.message["Subject"] == f"Reset your password on {urlsplit(live_server.url).netloc}"
    assert "15 minutes" in mail.message.get_body(("plain",)).get_content()

    if way == "link":
        page.goto(mail.link)
        assert page.locator("h1").inner_text() == "Choose a new password"
        assert VerificationToken.objects.count() == 1  # opening it used nothing
        choose(page, "alice@example.com")  # like the address: refused, nothing used
        with page.expect_navigation():
            page.click("#webauth-reset-confirm-submit")
        error = page.locator("#webauth-new-password2-error[role=alert]")
        assert "too similar" in error.inner_text()
        assert page.locator("#webauth-new-password2").get_attribute("aria-invalid") == "true"
        choose(page)
        with page.expect_navigation():
            page.click("#webauth-reset-confirm-submit")
    else:
        page.fill("#webauth-reset-code-input", mail.code.lower())
        choose(page)
        with page.expect_navigation():
            page.click("#webauth-reset-code-submit")

    assert urlsplit(page.url).path == "/auth/reset/done"
    assert page.locator("h1").inner_text() == "Your password has been changed"
    assert "token=" not in page.url
    assert SESSION not in cookie_names(page.context)  # a reset signs nobody in
    assert password_is(NEW) and not password_is(OLD)
    assert VerificationToken.objects.count() == 0
    # The other device is signed out; the owner is told.
    assert elsewhere.request.get("/auth/session").json() is None
    notice = site.wait_for_subject("Your password was changed")
    assert notice["To"] == "alice@example.com"
    # "Sign in" goes to the sign-in page, which then goes where the person was going.
    with page.expect_navigation():
        page.click("#webauth-reset-done-signin")
    assert urlsplit(page.url).path == "/auth/signin"
    assert parse_qs(urlsplit(page.url).query)["callbackUrl"] == [f"{live_server.url}/whoami/"]
    assert signs_in(page.context, NEW) and not signs_in(new_context(), OLD)
    # The link opened again here: no longer valid; elsewhere: where to finish.
    page.goto(mail.link)
    assert page.locator("h1").inner_text() == "This link is no longer valid"
    other = new_context().new_page()
    other.goto(mail.link)
    assert other.locator("h1").inner_text() == "Finish where you started"


def test_a_wrong_code_then_the_right_one(site, new_context, live_server, alice):
    page = new_context().new_page()
    ask(page, "alice")
    mail = received(site, live_server)
    wrong = "0000-0000" if mail.code != "0000-0000" else "1111-1111"
    page.fill("#webauth-reset-code-input", wrong)
    choose(page)
    with page.expect_navigation():
        page.click("#webauth-reset-code-submit")
    error = page.locator("#webauth-reset-code-error[role=alert]")
    assert "4 attempts left" in error.inner_text()
    field = page.locator("#webauth-reset-code-input")
    assert field.get_attribute("aria-invalid") == "true"
    assert focus_lands_on(page, "webauth-reset-code-input") == "webauth-reset-code-input"
    page.fill("#webauth-reset-code-input", mail.code)
    choose(page)
    with page.expect_navigation():
        page.click("#webauth-reset-code-submit")
    assert page.locator("h1").inner_text() == "Your password has been changed"


# -- the scanner --------------------------------------------------------------------------------


CLICKABLE = "a[href], button, input[type=submit], input[type=button], [role=button]"


def scan(context, mail):
    """Everything a mail scanner does with the message, in its own browser profile.

    Returns the status of every answer it got, every Set-Cookie it was sent,
    and the heading of the page the link showed it.
    """
    statuses, set_cookies = [], []

    def seen(response):
        statuses.append(response.status)
        set_cookies.extend(v for k, v in response.headers_array if k.lower() == "set-cookie")

    # A gateway's plain HTTP client: HEAD, then GET, no cookies at all.
    for method in (requests.head, requests.get):
        answer = method(mail.link, allow_redirects=True, timeout=10)
        for response in (*answer.history, answer):
            statuses.append(response.status_code)
            set_cookies.extend(response.raw.headers.getlist("Set-Cookie"))
    seen(context.request.head(mail.link))
    seen(context.request.get(mail.link))

    # A headless browser with JavaScript on: load the link, click everything on it.
    page = context.new_page()
    page.on("response", lambda r: statuses.append(r.status))
    page.goto(mail.link)
    heading = page.locator("h1").inner_text()
    clickables = page.locator(CLICKABLE).count()
    assert clickables >= 1
    landed = set()
    for i in range(clickables):
        page.goto(mail.link)
        page.locator(CLICKABLE).nth(i).click()
        page.wait_for_load_state()
        landed.add(page.url)
    # Then every form of every page the clicks led to, submitted as it is, and the
    # links of those pages followed.
    for url in landed:
        page.goto(url)
        hrefs = page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.href)")
        for i in range(page.locator("form").count()):
            page.goto(url)
            # Waits for the navigation the submission starts (wait_for_load_state alone
            # returns at once, and the next goto would then abort it: ERR_ABORTED).
            with page.expect_navigation():
                page.evaluate("(i) => document.forms[i].submit()", i)
        for href in hrefs:
            page.goto(href)
    # The most a scanner could do: a CSRF pair of its own, then POST the link's
    # token, and the code it read in the message, with a password of its choosing.
    csrf = context.request.get("/auth/csrf").json()["csrfToken"]
    chosen = {"new_password1": "scanner password 9", "new_password2": "scanner password 9"}
    for secret in ({"token": mail.token}, {"code": mail.code}):
        seen(
            context.request.post(
                "/auth/reset/confirm", form={"csrfToken": csrf, **secret, **chosen}
            )
        )
    for cookie in context.cookies():
        set_cookies.append(f"{cookie['name']}=(in the jar)")
    return statuses, set_cookies, heading


@pytest.mark.parametrize("way", ["link", "code"])
def test_a_scanner_changes_nothing(site, new_context, live_server, alice, way):
    person = new_context().new_page()
    ask(person, "alice")
    mail = received(site, live_server)
    site.clear()

    scanner = new_context()
    statuses, set_cookies, heading = scan(scanner, mail)

    assert not [s for s in statuses if s >= 500], statuses
    assert not [c for c in set_cookies if SESSION in c or PENDING in c], set_cookies
    # The grant is whole: still there, no code attempt counted against it; the
    # password is what it was; the scanner's clicks sent no email.
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0
    assert password_is(OLD)
    assert reset.outbox.flush()
    assert site.messages == []
    # What the scanner was shown: where to finish, and nothing a click can send.
    assert heading == "Finish where you started"

    if way == "link":
        person.goto(mail.link)
        choose(person)
        with person.expect_navigation():
            person.click("#webauth-reset-confirm-submit")
    else:
        person.goto(SENT)
        person.fill("#webauth-reset-code-input", mail.code)
        choose(person)
        with person.expect_navigation():
            person.click("#webauth-reset-code-submit")
    assert person.locator("h1").inner_text() == "Your password has been changed"
    assert password_is(NEW)
    # A scanner that comes back afterwards sees what it saw before.
    again = scanner.new_page()
    again.goto(mail.link)
    assert again.locator("h1").inner_text() == "Finish where you started"


# -- the pages' accessibility (the tour's stops, with the validators' rules shown) -------------


@pytest.mark.django_db(transaction=True)
def test_the_reset_pages_pass_axe_in_both_schemes_and_sizes(browser, live_server, settings):
    """The reset's stops of tests/support/tour.py, as test_accessibility_browser.py checks
    every stop, here with AUTH_PASSWORD_VALIDATORS on, so that their rules are on the pages."""
    from .support import a11y, tour
    from .test_accessibility_browser import sentence_case

    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
        {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    ]
    script = a11y.axe_script()
    tour.create_people()
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(30_000)

    def configure(webauth):
        settings.WEBAUTH = webauth

    site = tour.Tour(browser_page=context.new_page(), base_url=live_server.url, configure=configure)
    problems = []
    try:
        for stop in tour.reset_stops():
            page = tour.visit(site, stop)
            page.add_script_tag(path=script)
            title, heading = page.title(), page.locator("h1").inner_text()
            if title != heading or not sentence_case(heading):
                problems.append(f"{stop.name}: title {title!r}, heading {heading!r}")
            problems += a11y.problems_of(page, stop.name)
            problems += a11y.unseen_focus(page, stop.name)
    finally:
        context.close()
        assert reset.outbox.flush()
    assert not problems, "\n".join(problems)
