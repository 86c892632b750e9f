"""The sign-in page as one guided page (issue 23), in Debian's Chromium.

One identifier field (where the browser also offers passkeys), one primary
action, the other ways in plainly secondary; every form still posts to its
provider's Auth.js route with Auth.js's field names, and each method works with
JavaScript off (passkeys excepted, which need it and are then not shown). A
refused password is said beside the fields and takes the focus. The passkey
messages say what happened: a request the person never started stays quiet
(autofill running out of time on an idle page, or ended by a button), and a
passkey sign-in that finds nothing says what to do next.
"""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core import mail

from webauth.providers import Email, Passkey
from webauth.providers.catalog.github import GitHub

from .support.browser import (
    AUTOFILL_FIELD,
    NEW_ACCOUNT_MORE,
    Person,
    fill_new_account_email,
    focus_lands_on,
)

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"

pytestmark = pytest.mark.browser


@pytest.fixture
def site(settings, live_server):
    """Every kind on one page: a password, the email link, passkeys and GitHub."""
    assert live_server.url.startswith("http://localhost:"), live_server.url
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"

    def configure(*, password=True):
        providers = [
            Email(from_email="Example <no-reply@example.com>", max_age=900),
            Passkey(
                relying_party={
                    "id": "localhost",
                    "name": "webauth tests",
                    "origins": [live_server.url],
                }
            ),
            GitHub(client_id="github-id", client_secret="github-secret"),
        ]
        if password:
            providers.insert(0, "webauth.providers.DjangoCredentials")
        settings.WEBAUTH = {
            "secret": SECRET,
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
            "experimental": {"enable_webauthn": True},
            "providers": providers,
        }

    configure()
    configure.url = live_server.url
    return configure


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(
        "alice", email="alice@example.com", password=PASSWORD
    )


@pytest.fixture
def visitor(browser, site):
    contexts = []

    def make(autofill="hold", javascript=True):
        context = browser.new_context(base_url=site.url, java_script_enabled=javascript)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return Person(context, autofill) if javascript else context.new_page()

    yield make
    for context in contexts:
        context.close()


def wait_until(page, condition, what):
    """Let the browser run until *condition()* holds, for up to 10 seconds."""
    for _ in range(200):
        if condition():
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"still waiting for {what}")


def visible_alerts(page):
    alerts = page.locator("[role=alert]")
    return [alerts.nth(i).inner_text() for i in range(alerts.count()) if alerts.nth(i).is_visible()]


# -- one guided page ---------------------------------------------------------------------------


def test_one_identifier_field_and_one_primary_action(visitor):
    page = visitor().page
    page.goto("/auth/signin")
    page.locator("#webauth-passkey-signin").wait_for(state="visible")  # the script has run

    # What a person sees first: one identifier (where passkeys are offered), the
    # password, one primary button.
    fields = page.locator("input:not([type=hidden])")
    shown = [
        fields.nth(i).get_attribute("id")
        for i in range(fields.count())
        if fields.nth(i).is_visible()
    ]
    assert shown == ["input-username-for-credentials", "input-password-for-credentials"]
    assert page.locator(AUTOFILL_FIELD).count() == 1
    assert page.locator(AUTOFILL_FIELD).get_attribute("id") == "input-username-for-credentials"
    primary = page.locator(".webauth-button-primary")
    assert primary.count() == 1 and primary.inner_text() == "Sign in"

    # Every other way in is secondary: outlined buttons, disclosures, a link-style button.
    buttons = page.locator("button:visible, summary:visible")
    kinds = {}
    for i in range(buttons.count()):
        button = buttons.nth(i)
        classes = button.get_attribute("class") or ""
        kinds[button.inner_text().strip()] = classes
    assert "webauth-button-primary" in kinds.pop("Sign in")
    assert all("webauth-button-primary" not in classes for classes in kinds.values()), kinds
    assert "webauth-button-secondary" in kinds["Sign in with a passkey"]
    assert "webauth-button-provider" in kinds["Sign in with GitHub"]
    assert set(kinds) == {
        "Sign in with a passkey",
        "Email me a sign-in link instead",
        "Sign in with GitHub",
        "Create an account with a passkey",
    }
    # The provider's mark is on its button.
    logo = page.locator("form[data-provider=github] img.webauth-logo")
    assert logo.get_attribute("src").endswith("/webauth/providers/github.svg")
    assert logo.get_attribute("alt") == ""  # the button's text names it

    # Each form posts to Auth.js's route with Auth.js's field names.
    forms = page.eval_on_selector_all(
        "form",
        """forms => forms.map(f => [new URL(f.action).pathname, f.method,
            [...f.elements].filter(e => e.name).map(e => e.name)])""",
    )
    assert forms == [
        [
            "/auth/callback/credentials",
            "post",
            ["csrfToken", "callbackUrl", "username", "password"],
        ],
        ["/auth/signin/email", "post", ["csrfToken", "callbackUrl", "email"]],
        ["/auth/signin/github", "post", ["csrfToken", "callbackUrl"]],
    ]


def test_without_a_password_the_address_is_the_one_field(visitor, site):
    site(password=False)
    page = visitor().page
    page.goto("/auth/signin")
    page.locator("#webauth-passkey-signin").wait_for(state="visible")
    field = page.locator(AUTOFILL_FIELD)
    assert field.get_attribute("id") == "input-email-for-email"
    assert field.get_attribute("type") == "email"
    primary = page.locator(".webauth-button-primary")
    assert primary.count() == 1 and primary.inner_text() == "Email me a sign-in link"
    assert page.locator("details").count() == 0  # nothing else asks for an address
    assert page.locator("input[type=email]").count() == 1


# -- without JavaScript ------------------------------------------------------------------------


def test_each_method_works_without_javascript(visitor, alice):
    page = visitor(javascript=False)
    page.goto("/auth/signin")
    # Passkeys need the script: not offered at all, rather than a dead button.
    assert not page.locator("#webauth-passkey-signin").is_visible()
    assert not page.locator("#webauth-passkey-register").is_visible()

    page.fill("#input-username-for-credentials", "alice")
    page.fill("#input-password-for-credentials", PASSWORD)
    with page.expect_navigation():
        page.click(".webauth-button-primary")
    page.goto("/whoami/")
    assert '"username": "alice"' in page.content()


def test_the_email_link_without_javascript(visitor):
    page = visitor(javascript=False)
    page.goto("/auth/signin")
    page.click("details[data-provider=email] > summary")  # a disclosure needs no script
    page.fill("#input-email-for-email", "reader@example.com")
    with page.expect_navigation(url=re.compile(r"/auth/verify-request")):
        page.click("details[data-provider=email] button[type=submit]")
    [message] = mail.outbox
    assert message.to == ["reader@example.com"]


def test_a_provider_button_without_javascript(visitor):
    page = visitor(javascript=False)
    page.goto("/auth/signin")
    # The form posts to Auth.js's route, which sends the browser on to GitHub
    # (unreachable from here: the answer that sends it is what counts).
    with page.expect_response("**/auth/signin/github") as answer:
        page.click("form[data-provider=github] button")
    assert answer.value.status == 302
    location = urlsplit(answer.value.headers["location"])
    assert (location.scheme, location.netloc) == ("https", "github.com")
    assert parse_qs(location.query)["client_id"] == ["github-id"]


# -- a refused password ------------------------------------------------------------------------


def test_a_refused_password_is_said_at_the_fields_and_takes_the_focus(visitor, alice):
    page = visitor().page
    page.goto("/auth/signin")
    page.fill("#input-username-for-credentials", "alice")
    page.fill("#input-password-for-credentials", "wrong")
    with page.expect_navigation():
        page.click(".webauth-button-primary")

    message = page.locator("form[data-provider=credentials] [role=alert]")
    assert "Sign in failed" in message.inner_text()
    assert page.locator("h1 + [role=alert]").count() == 0  # not at the top of the card
    # The username is there again; the focus is on the password, to type it again.
    assert page.input_value("#input-username-for-credentials") == "alice"
    password_field = "input-password-for-credentials"
    assert focus_lands_on(page, password_field) == password_field
    for field in ("#input-username-for-credentials", "#input-password-for-credentials"):
        assert page.get_attribute(field, "aria-invalid") == "true"
        described = page.get_attribute(field, "aria-describedby")
        assert page.locator(f"#{described}").inner_text() == message.inner_text()
    # A screen reader hears the message with the field.
    description = page.evaluate(
        """() => {
            const field = document.activeElement;
            return field.getAttribute('aria-describedby').split(' ')
                .map(id => document.getElementById(id).textContent).join(' ');
        }"""
    )
    assert "Sign in failed" in description

    page.fill("#input-password-for-credentials", PASSWORD)
    with page.expect_navigation():
        page.press("#input-password-for-credentials", "Enter")
    assert page.evaluate("() => fetch('/whoami/').then(r => r.json())")["username"] == "alice"


def test_an_error_of_the_whole_page_takes_the_focus(visitor):
    page = visitor().page
    page.goto("/auth/signin?error=OAuthAccountNotLinked")
    assert focus_lands_on(page, "webauth-signin-error") == "webauth-signin-error"
    assert "same account you used originally" in page.inner_text("#webauth-signin-error")


# -- what the passkey controls say -------------------------------------------------------------


def test_create_an_account_before_the_autofill_request_is_answered(visitor):
    """The page's autofill request is still out when the person asks for an account.

    They are asked for their address, and nothing else: no "cancelled" from a
    request they never made, neither then nor once the autofill request lands.
    """
    person = visitor()
    page = person.page
    held = []

    def slow_options(route):
        held.append(route)  # answered below, after the person has pressed the button

    page.route("**/auth/webauthn-options/**", slow_options)
    page.goto("/auth/signin")
    wait_until(page, lambda: held, "the autofill options request")
    page.click(f"{NEW_ACCOUNT_MORE} > summary")
    page.click("#webauth-passkey-register")
    assert visible_alerts(page) == ["Enter your email address to create a passkey."]
    assert page.evaluate("() => document.activeElement.id") == "input-email-for-passkey"

    held.pop().continue_()
    wait_until(page, lambda: person.calls_of("get", "conditional", "start"), "autofill")
    page.wait_for_timeout(300)
    assert visible_alerts(page) == ["Enter your email address to create a passkey."]


def test_create_an_account_while_the_browser_holds_the_autofill_request(visitor):
    """The page's autofill request is pending in the browser when the person acts.

    Browsers allow one WebAuthn request at a time, and an aborted one lets go a
    moment later; a request made meanwhile is refused (``NotAllowedError``,
    which the page would have called "cancelled"). The page ends the autofill
    request and waits for the browser to let go before it asks for the new
    passkey, so the person gets their account.
    """
    person = visitor(autofill="strict")
    page = person.page
    page.goto("/auth/signin?callbackUrl=/whoami/")
    wait_until(page, lambda: person.calls_of("get", "conditional", "start"), "autofill")
    fill_new_account_email(page, "new@example.com")
    with page.expect_navigation(url="**/whoami/"):
        page.click("#webauth-passkey-register")
    assert person.session()["user"]["email"] == "new@example.com"
    assert [c["error"] for c in person.calls_of("get", "conditional", "rejected")] == ["AbortError"]
    assert len(person.calls_of("create", "optional", "resolved")) == 1


def test_sign_in_with_the_button_while_the_browser_holds_the_autofill_request(visitor, alice):
    """The same for the passkey button: no "No passkey was used" from a refused overlap."""
    person = visitor(autofill="strict")
    page = person.page
    page.goto("/auth/signin?callbackUrl=/whoami/")
    wait_until(page, lambda: person.calls_of("get", "conditional", "start"), "autofill")
    page.click("#webauth-passkey-signin")
    # The device has no passkey for the site: the browser's own refusal, said as such.
    wait_until(page, lambda: person.calls_of("get", "optional", "rejected"), "the button's request")
    [refusal] = person.calls_of("get", "optional", "rejected")
    assert refusal["error"] == "NotAllowedError"
    assert person.calls_of("get", "optional", "start")  # it was made, not refused unmade
    assert [c["error"] for c in person.calls_of("get", "conditional", "rejected")] == ["AbortError"]


def test_an_idle_autofill_request_that_runs_out_of_time_stays_quiet(visitor):
    person = visitor(autofill="timeout")
    page = person.page
    page.goto("/auth/signin")
    # It runs out of time, and is asked again (a few times), without a word.
    wait_until(
        page, lambda: len(person.calls_of("get", "conditional", "rejected")) >= 2, "two timeouts"
    )
    assert {c["error"] for c in person.calls_of("get", "conditional", "rejected")} == {
        "NotAllowedError"
    }
    assert visible_alerts(page) == []


def test_the_address_field_serves_a_new_passkey_account_too(visitor, site):
    """With no password form, the one field is the address, for the link and the passkey."""
    site(password=False)
    person = visitor()
    page = person.page
    page.goto("/auth/signin?callbackUrl=/whoami/")
    page.click("#webauth-passkey-register")  # nothing typed yet
    assert visible_alerts(page) == ["Enter your email address to create a passkey."]
    assert page.evaluate("() => document.activeElement.id") == "input-email-for-email"
    page.fill("#input-email-for-email", "Pat@Example.com")
    with page.expect_navigation(url="**/whoami/"):
        page.click("#webauth-passkey-register")
    assert person.session()["user"]["email"] == "pat@example.com"
