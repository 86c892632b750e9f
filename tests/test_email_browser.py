"""Email sign-in end to end: a real SMTP server, a real browser, and a mail scanner.

The message leaves through Django's SMTP backend and arrives at an aiosmtpd server
on 127.0.0.1; Chromium (Debian's, through Playwright, as in test_pages_browser.py)
asks for it on the built-in sign-in page, and the test reads the link and the code
from what the SMTP server received, as a person reads their mail.

The scanner is what corporate mail gateways do to every link in a message before
the person sees it (Outlook Safe Links, Proofpoint, Gmail): a HEAD, a GET, then a
headless browser that runs the page's JavaScript and clicks what it finds. It has
none of the person's cookies. It must get no session, and the person must still
sign in afterwards, with the link or with the code.
"""

import email
import email.policy
import hashlib
import logging
import re
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model

from webauth import jwt as jose
from webauth.models import VerificationToken
from webauth.providers import Email

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SESSION = "authjs.session-token"
PENDING = "authjs.email-pending"
VERIFY_REQUEST = "/auth/verify-request?provider=email&type=email"

pytestmark = pytest.mark.browser


# -- the SMTP server ---------------------------------------------------------------------------


class Inbox:
    """An aiosmtpd handler that keeps every message it accepts."""

    def __init__(self):
        self.messages = []
        self._arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._arrived:
            self.messages.append((list(envelope.rcpt_tos), message))
            self._arrived.notify_all()
        return "250 Message accepted for delivery"

    def clear(self):
        with self._arrived:
            self.messages.clear()

    def wait_for(self, address, timeout=10):
        """The one message to *address* (waiting for it); fails if none or several came."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while not any(address in to for to, _ in self.messages):
                left = deadline - time.monotonic()
                assert left > 0, f"no message to {address}: {self.messages}"
                self._arrived.wait(left)
            found = [m for to, m in self.messages if address in to]
        assert len(found) == 1, found
        return found[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def smtp():
    from aiosmtpd.controller import Controller

    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


@pytest.fixture
def site(settings, smtp):
    """Email sign-in on DjangoAdapter, delivered by SMTP to the test's server."""
    inbox, port = smtp
    inbox.clear()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = port
    settings.EMAIL_TIMEOUT = 10
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
        "providers": [Email(from_email="Example <no-reply@example.com>", max_age=900)],
    }
    return inbox


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
    return django_user_model.objects.create_user(
        "alice", email="alice@example.com", password="correct horse battery staple"
    )


# -- the person's side ---------------------------------------------------------------------------


class Received:
    """A received sign-in message: its link and code, from the text and the HTML part."""

    def __init__(self, message, base_url):
        self.message = message
        text = message.get_body(("plain",)).get_content()
        html = message.get_body(("html",)).get_content()
        pattern = re.escape(base_url) + r"/auth/callback/email\?[^\s\"'<>]+"
        links = set(re.findall(pattern, text))
        assert len(links) == 1, text
        self.link = links.pop()
        # The HTML part links to the same URL (its & escaped as &amp;).
        assert f'href="{self.link.replace("&", "&amp;")}"' in html
        codes = set(re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", text))
        assert len(codes) == 1, text
        self.code = codes.pop()
        assert self.code in html
        self.token = parse_qs(urlsplit(self.link).query)["token"][0]


def ask_on_the_sign_in_page(page, address, callback):
    page.goto(f"/auth/signin?callbackUrl={quote(callback)}")
    page.fill("#input-email-for-email", address)
    with page.expect_navigation():
        page.click("form[data-provider=email] button[type=submit]")
    assert urlsplit(page.url).path + "?" + urlsplit(page.url).query == VERIFY_REQUEST
    assert page.locator("h1").inner_text() == "Check your email"
    assert page.locator(".webauth-identifier strong").inner_text() == address.lower()


def received(inbox, address, live_server):
    return Received(inbox.wait_for(address.lower()), live_server.url)


def confirm_with_the_link(page, link):
    page.goto(link)
    assert page.locator("h1").inner_text() == "Sign in"
    with page.expect_navigation():
        page.click("#webauth-email-confirm")


def type_the_code(page, code):
    page.goto(VERIFY_REQUEST)
    page.fill("#webauth-email-code-input", code)
    with page.expect_navigation():
        page.click("#webauth-email-code button[type=submit]")


def session_of(page):
    """GET /auth/session as this browser (its cookies, same origin)."""
    return page.evaluate("() => fetch('/auth/session').then((r) => r.json())")


def whoami(page):
    return page.evaluate("() => fetch('/whoami/').then((r) => r.json())")


def cookie_names(context):
    return {c["name"] for c in context.cookies()}


# -- (a) the link and the code, end to end -----------------------------------------------------


@pytest.mark.parametrize("way", ["link", "code"])
def test_a_person_signs_in_from_the_email(site, new_context, live_server, alice, caplog, way):
    caplog.set_level(logging.INFO)
    page = new_context().new_page()
    callback = f"{live_server.url}/account/settings/"

    ask_on_the_sign_in_page(page, "Alice@Example.com", callback)
    assert PENDING in cookie_names(page.context)
    mail = received(site, "alice@example.com", live_server)
    assert mail.message["From"] == "Example <no-reply@example.com>"
    assert mail.message["Subject"] == f"Sign in to {urlsplit(live_server.url).netloc}"
    assert "15 minutes" in mail.message.get_body(("plain",)).get_content()

    if way == "link":
        confirm_with_the_link(page, mail.link)
    else:
        type_the_code(page, mail.code)

    assert page.url == callback  # the token is not in the address bar any more
    assert session_of(page)["user"]["email"] == "alice@example.com"
    assert whoami(page)["username"] == "alice"  # request.user is her Django user
    names = cookie_names(page.context)
    assert SESSION in names
    assert VerificationToken.objects.count() == 0
    # The pending cookie now only remembers the link (it is no longer valid here).
    [pending] = [c for c in page.context.cookies() if c["name"] == PENDING]
    assert pending["httpOnly"] and pending["sameSite"] == "Lax"

    # Nothing secret reached the logs at INFO or above, from any logger but the test's
    # own SMTP server's ("mail.log", the recipient's side, which logs no content).
    secrets = [mail.token, mail.code, mail.code.replace("-", ""), mail.link]
    secrets += [
        hashlib.sha256((value + SECRET).encode()).hexdigest()
        for value in (mail.token, mail.code.replace("-", ""))
    ]
    for record in caplog.records:
        if record.levelno >= logging.INFO and record.name != "mail.log":
            text = caplog.handler.format(record)
            assert not [s for s in secrets if s in text], text


def test_a_new_address_gets_an_account(site, new_context, live_server):
    page = new_context().new_page()
    ask_on_the_sign_in_page(page, "newcomer@example.com", f"{live_server.url}/account/settings/")
    mail = received(site, "newcomer@example.com", live_server)
    type_the_code(page, mail.code.lower())

    assert session_of(page)["user"]["email"] == "newcomer@example.com"
    assert get_user_model().objects.filter(email="newcomer@example.com").count() == 1


def test_a_wrong_code_then_the_right_one(site, new_context, live_server, alice):
    page = new_context().new_page()
    ask_on_the_sign_in_page(page, "alice@example.com", f"{live_server.url}/account/settings/")
    mail = received(site, "alice@example.com", live_server)
    wrong = "0000-0000" if mail.code != "0000-0000" else "1111-1111"

    type_the_code(page, wrong)
    error = page.locator("#webauth-email-code-error[role=alert]")
    assert "4 attempts left" in error.inner_text()
    field = page.locator("#webauth-email-code-input")
    assert field.get_attribute("aria-invalid") == "true"
    assert field.get_attribute("aria-describedby") == "webauth-email-code-error"
    assert SESSION not in cookie_names(page.context)

    type_the_code(page, mail.code)
    assert session_of(page)["user"]["email"] == "alice@example.com"


# -- (b) the scanner --------------------------------------------------------------------------


CLICKABLE = "a[href], button, input[type=submit], input[type=button], [role=button]"


def scan(context, live_server, mail):
    """Everything a mail scanner does with the message, in its own browser profile.

    Returns the status of every answer it got, every Set-Cookie it was sent, and
    the heading of the page the link showed it.
    """
    statuses, set_cookies = [], []

    def seen(response):
        statuses.append(response.status)
        set_cookies.extend(v for k, v in response.headers_array if k.lower() == "set-cookie")

    # A gateway's plain HTTP client: HEAD, then GET, no cookies at all.
    for method in (requests.head, requests.get):
        answer = method(mail.link, allow_redirects=True, timeout=10)
        for response in (*answer.history, answer):  # the redirects' cookies too
            statuses.append(response.status_code)
            set_cookies.extend(response.raw.headers.getlist("Set-Cookie"))
    # The same through the scanner browser's own HTTP client (its cookie jar).
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
    # Then every form of every page the clicks led to, submitted as it is.
    for url in landed:
        page.goto(url)
        for i in range(page.locator("form").count()):
            page.goto(url)
            with page.expect_navigation():  # else the next goto could abort the submission
                page.evaluate("(i) => document.forms[i].submit()", i)
    # The most a scanner could do: a valid CSRF pair of its own, then POST the link's
    # token, and the code it read in the message, to the callback.
    csrf = context.request.get("/auth/csrf").json()["csrfToken"]
    query = parse_qs(urlsplit(mail.link).query)
    seen(
        context.request.post(
            "/auth/callback/email",
            form={"csrfToken": csrf, "token": mail.token, "email": query["email"][0]},
        )
    )
    seen(context.request.post("/auth/callback/email", form={"csrfToken": csrf, "code": mail.code}))
    for cookie in context.cookies():
        set_cookies.append(f"{cookie['name']}=(in the jar)")
    return statuses, set_cookies, heading


@pytest.mark.parametrize("way", ["link", "code"])
def test_a_scanner_gets_nothing_and_burns_nothing(site, new_context, live_server, alice, way):
    person = new_context().new_page()
    ask_on_the_sign_in_page(person, "alice@example.com", f"{live_server.url}/account/settings/")
    mail = received(site, "alice@example.com", live_server)

    scanner = new_context()
    statuses, set_cookies, heading = scan(scanner, live_server, mail)

    assert not [s for s in statuses if s >= 500], statuses
    assert not [c for c in set_cookies if SESSION in c or PENDING in c], set_cookies
    assert SESSION not in cookie_names(scanner)
    # The grant is whole: still there, no code attempt counted against it.
    [grant] = VerificationToken.objects.all()
    assert grant.attempts == 0
    # What the scanner was shown: where to finish, and nothing a click can send.
    assert heading == "Finish signing in where you started"

    if way == "link":
        confirm_with_the_link(person, mail.link)
    else:
        type_the_code(person, mail.code)
    assert session_of(person)["user"]["email"] == "alice@example.com"
    scanner_page = scanner.new_page()
    scanner_page.goto("/auth/signin")
    assert session_of(scanner_page) is None  # the scanner is still nobody
    # A scanner that comes back after the sign-in sees what it saw before.
    scanner_page.goto(mail.link)
    assert scanner_page.locator("h1").inner_text() == "Finish signing in where you started"


# -- (c) the link opened again ----------------------------------------------------------------


@pytest.mark.parametrize("way", ["link", "code"])
def test_the_used_link_opened_again_in_the_same_browser(site, new_context, live_server, alice, way):
    """Not "finish where you started" (it was started here): the link is no longer valid."""
    page = new_context().new_page()
    callback = f"{live_server.url}/account/settings/"
    ask_on_the_sign_in_page(page, "alice@example.com", callback)
    mail = received(site, "alice@example.com", live_server)
    if way == "link":
        confirm_with_the_link(page, mail.link)
    else:
        type_the_code(page, mail.code)
    assert session_of(page)["user"]["email"] == "alice@example.com"

    page.goto(mail.link)
    assert urlsplit(page.url).path == "/auth/error"
    assert parse_qs(urlsplit(page.url).query) == {"error": ["Verification"]}
    assert page.locator("h1").inner_text() == "Unable to sign in"
    assert "no longer valid" in page.locator(".webauth-message").inner_text()
    assert "where you started" not in page.content()
    # Signed in already: the page says so, and Continue goes on.
    assert page.locator("[data-signed-in=true]").is_visible()
    with page.expect_navigation():
        page.click("#webauth-continue")
    assert session_of(page)["user"]["email"] == "alice@example.com"

    # In another browser the same link still says where to finish.
    other = new_context().new_page()
    other.goto(mail.link)
    assert other.locator("h1").inner_text() == "Finish signing in where you started"


def test_an_expired_link_in_the_browser_that_asked(site, new_context, live_server, alice):
    page = new_context().new_page()
    ask_on_the_sign_in_page(page, "alice@example.com", f"{live_server.url}/account/settings/")
    mail = received(site, "alice@example.com", live_server)
    # Fifteen minutes on: the grant's expiry and the cookie's copy of it have passed
    # (the browser keeps the cookie a week longer than the grant).
    passed = datetime.now(UTC) - timedelta(minutes=1)
    VerificationToken.objects.update(expires=passed)
    [cookie] = [c for c in page.context.cookies() if c["name"] == PENDING]
    claims = jose.decode(token=cookie["value"], secret=SECRET, salt=PENDING)
    claims["expires"] = int(passed.timestamp())
    cookie["value"] = jose.encode(token=claims, secret=SECRET, salt=PENDING)
    page.context.add_cookies([cookie])

    page.goto(mail.link)
    assert parse_qs(urlsplit(page.url).query) == {"error": ["Verification"]}
    assert page.locator("h1").inner_text() == "Unable to sign in"
    assert not page.locator("[data-signed-in=true]").count()
    assert SESSION not in cookie_names(page.context)
    assert VerificationToken.objects.count() == 1  # nothing was looked up or consumed
