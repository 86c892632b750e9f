"""Passkeys end to end: Debian's Chromium, Chromium's virtual authenticators, a live server.

The browser talks WebAuthn to software authenticators that Chromium provides for
testing (its ``WebAuthn`` DevTools domain, tests/support/browser.py): real
attestations and assertions, signed with keys the authenticator made, checked by
py_webauthn on the server exactly as a phone's would be. The site is reached as
``http://localhost:<port>``, so the relying-party id is ``localhost`` (browsers
allow WebAuthn there without HTTPS; never on an IP address).

A person registers, signs out, signs in with the button, signs in through
autofill, adds a second passkey and removes one; after each step the test asks
``GET /auth/session`` what the browser's cookies say. Then the refusals only a
browser can show: a device that does not verify its user, and a passkey removed
on the server that the browser is told to forget (the Signal API).

The virtual authenticator answers every request at once, autofill included
(Chromium picks the credential itself), so a page that starts autofill as it
loads would sign in before the test clicks anything. An init script watches the
page's ``navigator.credentials`` calls and reports them to the test; where a test
stands for a person who does not pick from the suggestions, it holds the autofill
request until the page aborts it, and where the person does pick, it lets the
request through only once the field has the focus.
"""

import base64
import re
import threading

import pytest
from django.contrib.auth import get_user_model

from webauth.adapters.django import DjangoAdapter
from webauth.models import Account, Authenticator, WebAuthnUserHandle
from webauth.types import as_webauthn_challenge

from .support.browser import (
    AUTOFILL_FIELD,
    NEW_ACCOUNT_MORE,
    Person,
    base64url,
    fill_new_account_email,
)

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SIGNIN_BUTTON = "#webauth-passkey-signin"
REGISTER_BUTTON = "#webauth-passkey-register"

pytestmark = pytest.mark.browser


# -- the site and the browser ------------------------------------------------------------------


@pytest.fixture
def site(settings, live_server):
    """Passkeys on DjangoAdapter, JWT sessions, the relying party ``localhost``."""
    from webauth.providers import Passkey

    assert live_server.url.startswith("http://localhost:"), live_server.url
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": "jwt"},
        "experimental": {"enable_webauthn": True},
        "providers": [
            Passkey(
                relying_party={
                    "id": "localhost",
                    "name": "webauth tests",
                    "origins": [live_server.url],
                }
            ),
            "webauth.providers.DjangoCredentials",
        ],
    }
    return live_server


@pytest.fixture
def person(browser, site):
    """A fresh browser profile whose autofill requests wait for a person who never picks."""
    contexts = []

    def make(autofill="hold"):
        context = browser.new_context(base_url=site.url)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return Person(context, autofill)

    make.contexts = contexts
    yield make
    for context in contexts:
        context.close()


# -- what the person does ----------------------------------------------------------------------


def register(person, email, callback="/whoami/"):
    """Create an account with a passkey on the built-in sign-in page."""
    page = person.page
    page.goto(f"/auth/signin?callbackUrl={callback}")
    fill_new_account_email(page, email)
    with page.expect_navigation(url=f"**{callback}"):
        page.click(REGISTER_BUTTON)


def sign_out(person):
    page = person.page
    page.goto("/auth/signout")
    with page.expect_navigation():
        page.click("#submitButton")
    assert person.session() is None


def sign_in_with_the_button(person, callback="/whoami/"):
    page = person.page
    page.goto(f"/auth/signin?callbackUrl={callback}")
    with page.expect_navigation(url=f"**{callback}"):
        page.click(SIGNIN_BUTTON)


def alert_of(page):
    """The text of the passkey UI's error element (``role="alert"``), once it shows one."""
    alert = page.locator("[role=alert]").filter(has_text=re.compile(r"\S")).first
    alert.wait_for(state="visible")
    return alert.inner_text()


def wait_until(page, condition, what):
    """Let the browser run (and report) until *condition()* holds, for up to 10 seconds."""
    for _ in range(200):
        if condition():
            return
        page.wait_for_timeout(50)
    raise AssertionError(f"still waiting for {what}")


def passkeys_on_the_page(page):
    """The passkeys /passkeys/ (webauth's ready page) lists: credential id -> name."""
    page.goto("/passkeys/")
    items = page.locator("li.webauth-passkey")
    return {
        items.nth(i).get_attribute("data-credential-id"): items.nth(i)
        .locator(".webauth-passkey-name")
        .inner_text()
        for i in range(items.count())
    }


def raw_id(credential_id):
    """The bytes of a credential id, whichever base64 alphabet and padding it is in."""
    text = credential_id.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4))


def stored_passkeys(user):
    """The user's Authenticator rows, by raw credential id."""
    return {raw_id(a.credential_id): a for a in Authenticator.objects.filter(user=user)}


# -- the journey -------------------------------------------------------------------------------


def test_register_sign_out_and_sign_in_with_the_button(person):
    alice = person()
    register(alice, "Alice@Example.com")

    session = alice.session()
    assert session["user"]["email"] == "alice@example.com"
    user = get_user_model().objects.get(email="alice@example.com")
    [device_credential] = alice.authenticators.credentials(alice.platform)
    stored = stored_passkeys(user)
    assert list(stored) == [base64.b64decode(device_credential["credentialId"])]
    [passkey] = stored.values()
    assert passkey.name  # named from the AAGUID or the browser, never blank
    assert passkey.transports == "internal"
    assert Account.objects.filter(user=user, provider="passkey", type="webauthn").count() == 1
    # The device keeps the user's handle: 64 random bytes stored for the user, not
    # the primary key.
    handle = base64.b64decode(device_credential["userHandle"])
    assert len(handle) == 64
    assert raw_id(WebAuthnUserHandle.objects.get(user=user).handle) == handle
    assert len(alice.calls_of("create", "optional", "resolved")) == 1

    sign_out(alice)

    counter_before = passkey.counter
    alice.calls.clear()
    sign_in_with_the_button(alice)

    assert alice.session()["user"]["email"] == "alice@example.com"
    # The button cancelled the pending autofill request before opening the dialog.
    assert alice.calls_of("get", "conditional", "start")
    assert [c["error"] for c in alice.calls_of("get", "conditional", "rejected")] == ["AbortError"]
    assert len(alice.calls_of("get", "optional", "resolved")) == 1
    passkey.refresh_from_db()
    assert passkey.counter > counter_before  # Chromium's authenticator counts
    assert passkey.last_used_at is not None


WITHOUT_JSON_HELPERS = """
delete PublicKeyCredential.parseCreationOptionsFromJSON;
delete PublicKeyCredential.parseRequestOptionsFromJSON;
delete PublicKeyCredential.prototype.toJSON;
"""


def test_a_browser_without_the_json_helpers(person):
    """The script's own base64url conversion, for browsers older than the JSON helpers.

    Chromium has ``parseCreationOptionsFromJSON``, ``parseRequestOptionsFromJSON``
    and ``toJSON``; Safari before 18 and Firefox before 119 have none. With them
    taken away, registration and the button still work.
    """
    alice = person()
    alice.page.context.add_init_script(WITHOUT_JSON_HELPERS)
    register(alice, "alice@example.com")
    assert alice.page.evaluate("() => 'toJSON' in PublicKeyCredential.prototype") is False
    assert alice.session()["user"]["email"] == "alice@example.com"
    user = get_user_model().objects.get(email="alice@example.com")
    [passkey] = stored_passkeys(user).values()
    assert passkey.transports == "internal"  # getTransports(), through the fallback

    sign_out(alice)
    sign_in_with_the_button(alice)
    assert alice.session()["user"]["email"] == "alice@example.com"
    passkey.refresh_from_db()
    assert passkey.last_used_at is not None


def test_sign_in_through_autofill(person):
    alice = person(autofill="on-focus")
    register(alice, "alice@example.com")
    sign_out(alice)
    alice.calls.clear()

    page = alice.page
    page.goto("/auth/signin?callbackUrl=/whoami/")
    field = page.locator(AUTOFILL_FIELD)
    assert field.count() == 1
    # Autofill is already asking, quietly, before the person does anything.
    wait_until(page, lambda: alice.calls_of("get", "conditional", "start"), "autofill")
    assert alice.session() is None

    with page.expect_navigation(url="**/whoami/"):
        field.focus()  # the passkey is offered and picked

    assert alice.session()["user"]["email"] == "alice@example.com"
    assert len(alice.calls_of("get", "conditional", "resolved")) == 1
    assert alice.calls_of("get", "optional", "start") == []  # the button was never used


def test_autofill_and_the_button_on_a_projects_own_page(person):
    """``{% webauth_passkey_signin %}`` gives a project's page the same two ways in."""
    alice = person(autofill="on-focus")
    register(alice, "alice@example.com")
    sign_out(alice)

    page = alice.page
    page.goto("/passkey-signin/")
    assert page.locator(f"#project-signin {AUTOFILL_FIELD}").count() == 1
    assert page.locator(f"#project-signin {SIGNIN_BUTTON}").count() == 1
    with page.expect_navigation(url="**/whoami/"):
        page.locator(AUTOFILL_FIELD).focus()
    assert alice.session()["user"]["email"] == "alice@example.com"

    sign_out(alice)
    page.goto("/passkey-signin/")
    with page.expect_navigation(url="**/whoami/"):
        page.click(SIGNIN_BUTTON)
    assert alice.session()["user"]["email"] == "alice@example.com"


def test_add_a_second_passkey_and_remove_one(person):
    alice = person()
    register(alice, "alice@example.com", callback="/passkeys/")
    assert alice.session()["user"]["email"] == "alice@example.com"
    [first_id] = passkeys_on_the_page(alice.page)

    # A security key, plugged in beside the laptop's own authenticator. The browser
    # is told the user's existing passkeys (excludeCredentials), so it makes the new
    # one on the key.
    key = alice.authenticators.add(transport="usb")
    with alice.page.expect_navigation(url="**/passkeys/"):
        alice.page.click(REGISTER_BUTTON)

    assert alice.session()["user"]["email"] == "alice@example.com"
    listed = passkeys_on_the_page(alice.page)
    assert len(listed) == 2 and first_id in listed
    [second_id] = set(listed) - {first_id}
    [on_the_key] = alice.authenticators.credentials(key)
    [on_the_laptop] = alice.authenticators.credentials(alice.platform)
    assert raw_id(second_id) == base64.b64decode(on_the_key["credentialId"])
    assert on_the_key["userHandle"] == on_the_laptop["userHandle"]  # one handle per user
    user = get_user_model().objects.get(email="alice@example.com")
    assert len(stored_passkeys(user)) == 2
    assert get_user_model().objects.count() == 1  # added to alice, not a new user

    # Rename the key's passkey (its field opens on "Rename"), then remove the laptop's.
    item = alice.page.locator(f'li.webauth-passkey[data-credential-id="{second_id}"]')
    assert not item.get_by_label("New name").is_visible()
    item.locator("summary", has_text="Rename").click()
    item.get_by_label("New name").fill("Blue security key")
    with alice.page.expect_navigation():
        item.get_by_role("button", name="Save").click()
    assert passkeys_on_the_page(alice.page)[second_id] == "Blue security key"

    item = alice.page.locator(f'li.webauth-passkey[data-credential-id="{first_id}"]')
    with alice.page.expect_navigation():
        item.get_by_role("button", name="Remove").click()
    assert list(passkeys_on_the_page(alice.page)) == [second_id]
    assert alice.session()["user"]["email"] == "alice@example.com"

    # The last one is her only way in: its button is disabled, and says why.
    item = alice.page.locator(f'li.webauth-passkey[data-credential-id="{second_id}"]')
    remove = item.get_by_role("button", name="Remove")
    assert remove.is_disabled()
    reason = alice.page.locator("#" + remove.get_attribute("aria-describedby"))
    assert "only way to sign in" in reason.inner_text()
    assert list(passkeys_on_the_page(alice.page)) == [second_id]
    assert len(stored_passkeys(user)) == 1

    # Signed out, with the key unplugged, the laptop still offers the removed
    # passkey: the server refuses it, and the browser is told to forget it.
    sign_out(alice)
    unplugged = alice.authenticators.credentials(key)
    alice.authenticators.remove(key)
    alice.page.goto("/auth/signin?callbackUrl=/whoami/")
    with alice.page.expect_response("**/auth/callback/passkey") as response:
        alice.page.click(SIGNIN_BUTTON)
    answer = response.value
    assert answer.status == 400
    body = answer.json()
    assert body["error"] == "WebAuthnVerificationError"
    assert raw_id(body["unknownCredential"]["credentialId"]) == raw_id(first_id)
    assert body["unknownCredential"]["rpId"] == "localhost"
    assert alert_of(alice.page)
    assert alice.session() is None
    wait_until(alice.page, lambda: alice.authenticators.deleted, "the Signal API")
    assert [raw_id(base64url(d["credentialId"])) for d in alice.authenticators.deleted] == [
        raw_id(first_id)
    ]
    assert alice.authenticators.credentials(alice.platform) == []

    # The key, plugged in again, signs her in.
    key = alice.authenticators.add(transport="usb")
    for credential in unplugged:
        alice.authenticators.add_credential(key, credential)
    sign_in_with_the_button(alice)
    assert alice.session()["user"]["email"] == "alice@example.com"


class SlowAutofillAdapter(DjangoAdapter):
    """DjangoAdapter that holds the first autofill challenge until a register one is asked for.

    It stands for a slow network or server: the autofill request a page makes as it
    loads is still unanswered when the person presses "Create a passkey". It waits
    up to 1.5 seconds and records whether a register request arrived meanwhile.
    """

    held = threading.Event()  # the autofill request is being held
    register_asked = threading.Event()
    overlapped = None

    @classmethod
    def reset(cls):
        cls.held = threading.Event()
        cls.register_asked = threading.Event()
        cls.overlapped = None

    def create_webauthn_challenge(self, challenge):
        cls = type(self)
        if as_webauthn_challenge(challenge).ceremony == "register":
            cls.register_asked.set()
        elif not cls.held.is_set():
            cls.held.set()
            cls.overlapped = cls.register_asked.wait(timeout=1.5)
        return super().create_webauthn_challenge(challenge)


def test_register_while_the_autofill_request_is_unanswered(person, settings):
    """The page asks for one ceremony's options at a time.

    The first options answer gives the browser its challenge cookie. A second
    request sent before that answer lands has no cookie, so it would get a binding
    of its own, and whichever answer landed last would leave the other ceremony's
    challenge "made for another browser" (CI saw this once as a failed
    registration). The script waits for the autofill request before asking for
    the registration's options, and both carry the same binding.
    """
    SlowAutofillAdapter.reset()
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": f"{__name__}.SlowAutofillAdapter",
    }
    alice = person()
    page = alice.page
    page.goto("/auth/signin?callbackUrl=/whoami/")
    wait_until(page, SlowAutofillAdapter.held.is_set, "the autofill options request")
    fill_new_account_email(page, "alice@example.com")
    with page.expect_response("**/auth/callback/passkey") as answer:
        page.click(REGISTER_BUTTON)

    assert SlowAutofillAdapter.overlapped is False  # the register request waited
    assert answer.value.status == 200, answer.value.text()
    page.wait_for_url(re.compile(r"^[^?]*/whoami/$"))
    assert alice.session()["user"]["email"] == "alice@example.com"


# -- what a browser refuses, and what the server refuses ---------------------------------------


def refusals(caplog):
    """What webauth logged as refused verifications (the live server's thread included)."""
    return [r.getMessage() for r in caplog.records if "WebAuthnVerificationError" in r.getMessage()]


def test_a_device_that_does_not_verify_its_user_is_refused(person, caplog):
    """A passkey used without a fingerprint, face or PIN signs nobody in.

    The passkey moves to a second authenticator that cannot verify its user
    (``isUserVerified`` false). Asked for user verification, Chromium refuses
    before anything is sent. With the options weakened on their way to the device
    (``userVerification: "discouraged"``, as a hostile script or extension could),
    the device signs without verifying, and the server refuses the assertion.
    """
    alice = person()
    register(alice, "alice@example.com")
    sign_out(alice)
    user = get_user_model().objects.get(email="alice@example.com")
    [passkey] = stored_passkeys(user).values()
    counter = passkey.counter

    credentials = alice.authenticators.credentials(alice.platform)
    alice.authenticators.remove(alice.platform)
    unverified = alice.authenticators.add(isUserVerified=False)
    for credential in credentials:
        alice.authenticators.add_credential(unverified, credential)
    alice.calls.clear()

    page = alice.page
    posted = []
    page.on(
        "requestfinished", lambda r: posted.append(r.url) if "/auth/callback/" in r.url else None
    )
    page.goto("/auth/signin?callbackUrl=/whoami/")
    page.click(SIGNIN_BUTTON)
    wait_until(page, lambda: alice.calls_of("get", "optional", "rejected"), "the refusal")
    assert [c["error"] for c in alice.calls_of("get", "optional", "rejected")] == [
        "NotAllowedError"
    ]
    assert posted == []
    assert alice.session() is None

    page.goto("/auth/signin?callbackUrl=/whoami/")
    page.evaluate("() => { window.weakenUserVerification = true; }")
    options = "**/auth/webauthn-options/passkey?action=authenticate"
    with (
        page.expect_response(options) as asked,
        page.expect_response("**/auth/callback/passkey") as response,
    ):
        page.click(SIGNIN_BUTTON)
    # The site asked for user verification; the page's script took it out.
    assert asked.value.json()["options"]["userVerification"] == "required"
    assert response.value.status == 400
    assert response.value.json()["error"] == "WebAuthnVerificationError"
    [refused] = refusals(caplog)
    assert "user verification is required" in refused.lower(), refused
    assert alert_of(page)
    assert alice.session() is None
    passkey.refresh_from_db()
    assert passkey.counter == counter  # nothing was accepted
    assert page.url.endswith("/auth/signin?callbackUrl=/whoami/")


def test_registration_without_user_verification_is_refused(person, caplog):
    """A new passkey made without verifying the person creates no user.

    Chromium will not make a discoverable credential on an authenticator that has
    user verification and fails it, so this device has none at all (a sensor-less
    authenticator, touched but never verifying anyone).
    """
    bob = person()
    bob.authenticators.remove(bob.platform)
    bob.platform = bob.authenticators.add(hasUserVerification=False, isUserVerified=False)

    page = bob.page
    page.goto("/auth/signin?callbackUrl=/whoami/")
    page.evaluate("() => { window.weakenUserVerification = true; }")
    fill_new_account_email(page, "bob@example.com")
    with page.expect_response("**/auth/callback/passkey") as response:
        page.click(REGISTER_BUTTON)
    assert response.value.status == 400
    assert response.value.json()["error"] == "WebAuthnVerificationError"
    [refused] = refusals(caplog)
    assert "user verification is required" in refused.lower(), refused
    assert alert_of(page)
    assert bob.session() is None
    assert not get_user_model().objects.filter(email="bob@example.com").exists()
    assert not Authenticator.objects.exists()


# -- accessibility -----------------------------------------------------------------------------


def test_the_passkey_controls_work_for_a_keyboard_and_a_screen_reader(person):
    """A labelled field, named buttons reached and pressed with the keyboard, an alert.

    The page's one identifier field (the username, where the browser offers
    passkeys), the passkey button right after the password form's, and the
    disclosure that creates an account; each reached with Tab and used with
    Enter. A device with no passkey for the site is told so, with what to do.
    """
    visitor = person()  # a device with no passkey for the site
    page = visitor.page
    page.goto("/auth/signin")
    field = page.get_by_role("textbox", name="Username")
    assert field.get_attribute("autocomplete") == "username webauthn"
    sign_in = page.get_by_role("button", name="Sign in with a passkey")
    assert sign_in.count() == 1
    more = page.locator(NEW_ACCOUNT_MORE)
    alert = page.locator("#webauth-passkey-error")
    assert alert.get_attribute("role") == "alert" and alert.is_hidden()

    # Tab reaches the field, the passkey button and the disclosure, in that order.
    page.locator("body").focus()
    reached = []
    for _ in range(20):
        page.keyboard.press("Tab")
        reached.append(
            page.evaluate(
                "() => document.activeElement.closest('[id], summary')?.id"
                " || document.activeElement.tagName"
            )
        )
        if reached[-1] == "SUMMARY" and page.evaluate(
            "() => !!document.activeElement.closest('[data-webauth-passkey-more]')"
        ):
            break
    passkey_ids = [i for i in reached if i in (field.get_attribute("id"), SIGNIN_BUTTON[1:])]
    assert passkey_ids == [field.get_attribute("id"), SIGNIN_BUTTON[1:]]
    # Enter opens it; Tab then reaches the new account's address and its button.
    page.keyboard.press("Enter")
    assert more.get_attribute("open") is not None
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.type") == "email"
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == REGISTER_BUTTON[1:]

    # Enter on the button starts the ceremony; its failure is announced in the alert
    # (the browser cannot tell the page whether the person cancelled or the device
    # has no passkey, so it says both and what to do), and the button is usable again.
    sign_in.focus()
    page.keyboard.press("Enter")
    said = alert_of(page)
    assert "No passkey was used" in said and "Create an account with a passkey" in said
    assert alert.is_visible()
    assert sign_in.is_enabled() and sign_in.get_attribute("aria-busy") is None
    assert visitor.session() is None
