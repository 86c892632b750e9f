"""Every built-in page, in each state a person can meet it, reached as a person does.

The accessibility tests (tests/test_accessibility_browser.py) and the screenshot
script (scripts/screenshots) walk this one list, so what a reviewer looks at is
what axe-core checked. A stop starts as a browser the site has never seen (no
cookies), does what leads to its page (signs in, asks for an email, opens the
email's link, ...) and leaves the page there; the caller then looks at it in
each colour scheme and size.

The site is the test project (tests/support/settings.py, urls.py) served on
``http://localhost:<port>``: every provider kind on the sign-in page (a password,
an email link or code, a passkey, OpenID Connect and OAuth buttons), the
passkeys page at ``/passkeys/``, the account center at ``/account/``. Emails go
to Django's ``locmem`` backend, read back from ``django.core.mail.outbox`` (the
server runs in the caller's process).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
EMAIL_VERIFY_REQUEST = "/auth/verify-request?provider=email&type=email"

#: The colour schemes and window sizes every page is looked at in (name, viewport).
SCHEMES = ("light", "dark")
SIZES = {"desktop": {"width": 1280, "height": 800}, "mobile": {"width": 390, "height": 844}}

#: Buttons, fields and links styled as buttons must be at least this tall and wide
#: (CSS pixels): the usual minimum for a finger (WCAG 2.5.5, Apple's and Google's
#: guidelines).
TARGET_SIZE = 44

#: A theme logo (an inline SVG: no file to serve): the account center's header shows it.
LOGO = (
    "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='120' height='32'%3E"
    "%3Crect width='32' height='32' rx='6' fill='%23346df1'/%3E"
    "%3Ctext x='40' y='23' font-family='sans-serif' font-size='18' fill='%23346df1'%3EExample"
    "%3C/text%3E%3C/svg%3E"
)


def idp_origin(base_url: str) -> str:
    """Where the sign-in page's OpenID provider is (the test project's own,
    tests/support/idp.py): the site reached as 127.0.0.1, so that the provider's
    login cookie stays apart from the site's (localhost)."""
    return base_url.replace("://localhost:", "://127.0.0.1:")


def idp_issuer(base_url: str) -> str:
    return idp_origin(base_url) + "/idp"


def site_settings(
    base_url: str,
    *,
    catalog: bool = False,
    strategy: str = "jwt",
    mfa: bool = False,
    mfa_required: str | None = None,
    logo: bool = False,
    password: bool = True,
    challenge: bool = False,
    api_keys: bool = False,
) -> dict[str, Any]:
    """``WEBAUTH`` with every provider kind; *catalog*: also every built-in OAuth provider;
    *mfa*: the second factor on; *logo*: a theme logo and the account center's site name;
    *password*: the password provider too (without it, the address is the page's one field)."""
    from webauth.providers import Email, Passkey
    from webauth.providers.catalog import CATALOG, provider_class
    from webauth.providers.oauth import OIDC

    from .oidc_helpers import CLIENT_ID, CLIENT_SECRET

    providers: list[Any] = [
        *(["webauth.providers.DjangoCredentials"] if password else []),
        Email(from_email="Example <no-reply@example.com>", max_age=900),
        Passkey(relying_party={"id": "localhost", "name": "webauth tests", "origins": [base_url]}),
        OIDC(
            id="example",
            name="Example IdP",
            issuer=idp_issuer(base_url),
            client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET,
        ),
    ]
    if catalog:
        # The brand colours of all of them on one page (never clicked: no network).
        for provider_id in CATALOG:
            provider = provider_class(provider_id)(client_id="id", client_secret="secret")
            if provider.issuer is None and not provider.token_endpoint:  # a tenant's
                provider.issuer = "https://tenant.example.com"
            providers.append(provider)
    return {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": strategy},
        "experimental": {"enable_webauthn": True},
        "providers": providers,
        # "Trust this browser" offered: the code page shows its box.
        "mfa": {"enabled": mfa, "required": mfa_required, "trust_days": 30, "grace_days": 7},
        **({"theme": {"logo": LOGO}, "account": {"site_name": "Example"}} if logo else {}),
        **({"challenge": CHALLENGE} if challenge else {}),
        **({"api_keys": API_KEYS} if api_keys else {}),
    }


def groups_of(user: Any) -> Any:
    """``api_keys.owners_of`` of the tour: a user manages the keys of their groups."""
    return user.groups.all()


#: The tour's API keys: keys of Django's groups too (the team stop).
API_KEYS = {
    "scopes": ["orders:read", "orders:write"],
    "owners": ["auth.Group"],
    "owners_of": f"{__name__}.groups_of",
}


def create_people() -> None:
    """The users the stops sign in as: alice (no passkey) and bob (two passkeys)."""
    from django.contrib.auth import get_user_model

    from webauth.models import Authenticator

    users = get_user_model().objects
    users.create_user("alice", email="alice@example.com", password=PASSWORD)
    bob = users.create_user("bob", email="bob@example.com", password=PASSWORD)
    # What the passkeys page lists; never used to sign in, so no real key is needed.
    for n, (name, synced) in enumerate((("iCloud Keychain", True), ("YubiKey 5C", False))):
        Authenticator.objects.create(
            user=bob,
            credential_id=f"dG91ci1wYXNza2V5LT{n}",
            provider_account_id="bob",
            credential_public_key="unused",
            credential_device_type="multiDevice" if synced else "singleDevice",
            credential_backed_up=synced,
            backup_eligible=synced,
            name=name,
        )


def outbox_since(start: int) -> list[Any]:
    from django.core import mail

    return list(getattr(mail, "outbox", []))[start:]


@dataclass
class Tour:
    """What the stops need: a browser page on the site, and a way to configure the site.

    One page serves every stop (a new one costs more than the page it shows): a
    stop that needs a new visitor clears the cookies, which is all that tells
    one browser from another to the site.
    """

    browser_page: Any  # a Playwright Page whose context has base_url set
    base_url: str
    configure: Callable[[dict[str, Any]], None]  # replaces settings.WEBAUTH

    def page(self) -> Any:
        """The page, as a browser the site has never seen (no cookies)."""
        self.browser_page.context.clear_cookies()
        return self.browser_page

    def signed_in(self, username: str) -> Any:
        """The page, as a browser signed in as *username* (by password, over HTTP)."""
        page = self.page()
        api = page.context.request
        csrf = api.get("/auth/csrf").json()["csrfToken"]
        answer = api.post(
            "/auth/callback/credentials",
            form={"csrfToken": csrf, "username": username, "password": PASSWORD},
            max_redirects=0,
        )
        assert answer.status == 302, answer.text()[:500]
        return page

    def ask_for_email(self, page: Any, address: str) -> tuple[str, str]:
        """Ask for a sign-in email in *page*'s profile; the message's link and code."""
        from django.core import mail

        before = len(getattr(mail, "outbox", []))
        api = page.context.request
        csrf = api.get("/auth/csrf").json()["csrfToken"]
        answer = api.post(
            "/auth/signin/email",
            form={"csrfToken": csrf, "email": address, "callbackUrl": "/whoami/"},
            max_redirects=0,
        )
        assert answer.status == 302, answer.text()[:500]
        [message] = outbox_since(before)
        text = message.body
        [link] = re.findall(re.escape(self.base_url) + r"/auth/callback/email\?\S+", text)
        [code] = re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", text)
        return link, code


@dataclass(frozen=True)
class Stop:
    """One page in one state: *name* (a file name), *about* (one line), *open* (gets there)."""

    name: str
    about: str
    open: Callable[[Tour], Any]
    catalog: bool = False  # the sign-in page with every built-in OAuth provider
    strategy: str = "jwt"  # the session strategy (the account center's sessions page lists
    # database sessions)
    mfa: bool = False  # WEBAUTH["mfa"] on
    mfa_required: str | None = None  # WEBAUTH["mfa"]["required"]
    logo: bool = False  # WEBAUTH["theme"]["logo"] and WEBAUTH["account"]["site_name"] set
    password: bool = True  # the password provider on the sign-in page
    challenge: bool = False  # WEBAUTH["challenge"]: Turnstile's widget in the forms
    api_keys: bool = False  # WEBAUTH["api_keys"]: the account center's API keys tab


def _goto(path: str) -> Callable[[Tour], Any]:
    def open(tour: Tour) -> Any:
        page = tour.page()
        page.goto(path)
        return page

    return open


def _signed_in_at(path: str, username: str = "alice") -> Callable[[Tour], Any]:
    def open(tour: Tour) -> Any:
        page = tour.signed_in(username)
        page.goto(path)
        return page

    return open


#: WEBAUTH["challenge"] of the challenge's stops: Turnstile with Cloudflare's test keys.
CHALLENGE = {
    "service": "turnstile",
    "site_key": "1x00000000000000000000AA",
    "secret_key": "1x0000000000000000000000000000000AA",
}
#: What the page gets for Turnstile's script (no network here): a stand-in that takes
#: the widget's place and size, and adds its field. The widget itself is Cloudflare's
#: frame, whose inside (and its focus ring) no check of this page can see.
_TURNSTILE_STAND_IN = """
for (const el of document.querySelectorAll(".cf-turnstile")) {
  const box = document.createElement("div");
  box.className = "webauth-challenge-stand-in";
  box.style.width = "300px"; box.style.height = "65px"; box.style.border = "1px solid";
  el.appendChild(box);
  const field = document.createElement("input");
  field.type = "hidden"; field.name = "cf-turnstile-response";
  el.appendChild(field);
}
"""


def _with_challenge(path: str) -> Callable[[Tour], Any]:
    def open(tour: Tour) -> Any:
        page = tour.page()
        page.route(
            "https://challenges.cloudflare.com/**",
            lambda route: route.fulfill(
                status=200, content_type="text/javascript", body=_TURNSTILE_STAND_IN
            ),
        )
        page.goto(path)
        page.locator(".webauth-challenge-stand-in").first.wait_for(state="attached")
        return page

    return open


def _signin_field_error(tour: Tour) -> Any:
    # An address the server refuses (the browser's own check is off, as in a browser
    # without it): the page comes back with the field's error and what was typed.
    page = tour.page()
    page.goto("/auth/signin")
    # The email link sits behind its disclosure when the page has a password form.
    page.click("details[data-provider=email] > summary")
    page.fill("#input-email-for-email", "not an address")
    page.evaluate("() => { for (const f of document.forms) f.noValidate = true; }")
    with page.expect_navigation():
        page.press("#input-email-for-email", "Enter")
    return page


def _signin_more_open(tour: Tour) -> Any:
    page = tour.page()
    page.goto("/auth/signin")
    page.locator("[data-webauth-passkey-more]").wait_for()  # shown by the script
    for summary in (
        "details[data-provider=email] > summary",
        "[data-webauth-passkey-more] > summary",
    ):
        page.click(summary)
    return page


def _signin_passkey_email(tour: Tour) -> Any:
    # "Create the account" with the address left empty: the page asks for it there.
    page = _signin_more_open(tour)
    page.click("#webauth-passkey-register")
    page.get_by_text("Enter your email address to create a passkey.").wait_for()
    return page


def _verify_request(tour: Tour) -> Any:
    page = tour.page()
    tour.ask_for_email(page, "alice@example.com")
    page.goto(EMAIL_VERIFY_REQUEST)
    return page


def _verify_request_wrong_code(tour: Tour) -> Any:
    page = _verify_request(tour)
    page.fill("#webauth-email-code-input", "0000-0000")
    with page.expect_navigation():
        page.press("#webauth-email-code-input", "Enter")
    return page


def _email_confirm(tour: Tour) -> Any:
    page = tour.page()
    link, _ = tour.ask_for_email(page, "alice@example.com")
    page.goto(link)
    return page


def _email_elsewhere(tour: Tour) -> Any:
    link, _ = tour.ask_for_email(tour.page(), "alice@example.com")
    other = tour.page()  # another browser: none of the asking one's cookies
    other.goto(link)
    return other


def _email_link_used(tour: Tour) -> Any:
    # Signed in with the code, then the email's link opened in the same browser:
    # the error page (the link is no longer valid), saying who is signed in.
    page = tour.page()
    link, code = tour.ask_for_email(page, "alice@example.com")
    page.goto(EMAIL_VERIFY_REQUEST)
    page.fill("#webauth-email-code-input", code)
    with page.expect_navigation():
        page.press("#webauth-email-code-input", "Enter")
    page.goto(link)
    assert page.locator("[data-signed-in=true]").is_visible()
    return page


def _passkeys_rename_open(tour: Tour) -> Any:
    """The passkeys page with the first passkey's name field opened (a <details>)."""
    page = tour.signed_in("bob")
    page.goto("/passkeys/")
    page.locator("details.webauth-passkey-rename > summary").first.click()
    assert page.locator("#rename-1").is_visible()
    return page


def _passkeys_after_rename(tour: Tour) -> Any:
    page = _passkeys_rename_open(tour)
    page.fill("#rename-1", "Work laptop")
    with page.expect_navigation():
        page.press("#rename-1", "Enter")
    return page


# -- the account center (webauth.account, routed at /account/) ---------------------------------


def _signed_in_long_ago(tour: Tour, username: str) -> Any:
    """The page, signed in as *username* an hour ago (by cookie: such a user may have no
    password): the session is no longer fresh for re-authentication."""
    import time

    from django.contrib.auth import get_user_model

    from webauth.sessions import AUTH_TIME_CLAIM
    from webauth.test import session_cookie_for

    page = tour.page()
    user = get_user_model().objects.get(username=username)
    name, value = session_cookie_for(user, claims={AUTH_TIME_CLAIM: int(time.time()) - 3600})
    page.context.add_cookies([{"name": name, "value": value, "url": tour.base_url}])
    return page


def _account_at(path: str, username: str = "alice") -> Callable[[Tour], Any]:
    def open(tour: Tour) -> Any:
        page = tour.signed_in(username)
        page.goto(path)
        return page

    return open


def _account_api_keys(tour: Tour) -> Any:
    from django.contrib.auth import get_user_model

    from webauth.api_keys import create_key, revoke_key

    alice = get_user_model().objects.get(username="alice")
    create_key(alice, name="Nightly export", scopes=["orders:read"])
    revoke_key(create_key(alice, name="Old laptop script").record)
    page = tour.signed_in("alice")
    page.goto("/account/api-keys/")
    assert page.locator(".webauth-account-item").count() == 2
    return page


def _account_api_key_made(tour: Tour) -> Any:
    page = tour.signed_in("alice")  # just now: fresh enough to make a key
    page.goto("/account/api-keys/")
    page.fill("#webauth-key-name", "Deploys")
    page.check("#webauth-key-scope-1")
    with page.expect_navigation():
        page.get_by_role("button", name="Make key").click()
    assert page.locator("#webauth-new-key").input_value().startswith("wak_")
    return page


def _account_api_keys_of_a_team(tour: Tour) -> Any:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from webauth.api_keys import create_key

    alice = get_user_model().objects.get(username="alice")
    ops, _ = Group.objects.get_or_create(name="Ops")
    Group.objects.get_or_create(name="Billing")[0].user_set.add(alice)
    alice.groups.add(ops)
    create_key(ops, name="Deploys", scopes=["orders:write"])
    page = tour.signed_in("alice")
    page.goto("/account/api-keys/")
    assert page.get_by_role("heading", name="Keys of Ops").count() == 1
    assert page.get_by_role("heading", name="Keys of Billing").count() == 1
    assert page.locator("#webauth-key-owner option").count() == 3
    return page


def _account_sessions(tour: Tour) -> Any:
    # Two devices: a first sign-in whose browser then forgets its cookie, and this one.
    tour.signed_in("alice")
    page = tour.signed_in("alice")
    page.goto("/account/sessions/")
    assert page.locator(".webauth-account-item").count() >= 2  # and more at the next stop
    return page


def _account_session_revoked(tour: Tour) -> Any:
    page = _account_sessions(tour)
    with page.expect_navigation():
        page.locator("form button[aria-label^='Sign out']").first.click()
    assert page.get_by_role("status").inner_text() == "That device was signed out."
    return page


def _account_connections(tour: Tour) -> Any:
    from django.contrib.auth import get_user_model

    from webauth.models import Account

    bob = get_user_model().objects.get(username="bob")
    Account.objects.get_or_create(
        user=bob, type="oidc", provider="example", provider_account_id="bob-at-idp"
    )
    page = tour.signed_in("bob")
    page.goto("/account/connections/")
    return page


def _account_last_way_in(tour: Tour) -> Any:
    from django.contrib.auth import get_user_model

    from webauth.models import Account

    # Carol signs in only through the OpenID provider: her one way in stays.
    users = get_user_model().objects
    carol = users.filter(username="carol").first() or users.create_user(
        "carol",
        email="carol@example.com",  # no password: an unusable one
    )
    Account.objects.get_or_create(
        user=carol, type="oidc", provider="example", provider_account_id="carol-at-idp"
    )
    page = _signed_in_long_ago(tour, "carol")
    page.goto("/account/connections/")
    assert page.get_by_role("button", name="Disconnect Example IdP").is_disabled()
    return page


def _account_only_passkey(tour: Tour) -> Any:
    from django.contrib.auth import get_user_model

    from webauth.models import Authenticator

    # Dana signs in only with her passkey: it cannot be removed, and the page says why.
    users = get_user_model().objects
    dana = users.filter(username="dana").first() or users.create_user(
        "dana", email="dana@example.com"
    )
    Authenticator.objects.get_or_create(
        credential_id="dG91ci1kYW5hLXBhc3NrZXk",
        defaults={
            "user": dana,
            "provider_account_id": "dana",
            "credential_public_key": "unused",
            "credential_device_type": "multiDevice",
            "credential_backed_up": True,
            "backup_eligible": True,
            "name": "Chrome on Linux",
        },
    )
    page = _signed_in_long_ago(tour, "dana")
    page.goto("/account/passkeys/")
    assert page.get_by_role("button", name="Remove Chrome on Linux").is_disabled()
    return page


def _account_email_code(tour: Tour) -> Any:
    page = tour.signed_in("alice")
    page.goto("/account/email/")
    page.fill("#webauth-email-change-address", "alice.new@example.com")
    with page.expect_navigation():
        page.press("#webauth-email-change-address", "Enter")
    assert page.locator("#webauth-email-change-code").is_visible()
    return page


# -- the account center's Password section (webauth.passwords.change) -----------------------

#: The validators of the Password section's stops: their rules on the form, their refusals.
PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]


def _password_page(tour: Tour, username: str, *, has_password: bool = True) -> Any:
    """The Password section on (``passwords.change``), *username* (made without a
    password unless *has_password*) signed in just now, on the page; the validators
    are on for what this stop's requests render (``with`` around them)."""
    import time

    from django.contrib.auth import get_user_model

    from webauth.sessions import AUTH_TIME_CLAIM
    from webauth.test import session_cookie_for

    tour.configure({**site_settings(tour.base_url), "passwords": {"change": True}})
    users = get_user_model().objects
    user = users.filter(username=username).first() or users.create_user(
        username, email=f"{username}@example.com", password=PASSWORD if has_password else None
    )
    page = tour.page()
    name, value = session_cookie_for(user, claims={AUTH_TIME_CLAIM: int(time.time())})
    page.context.add_cookies([{"name": name, "value": value, "url": tour.base_url}])
    page.goto("/account/password/")
    return page


def _validated(open: Callable[[Tour], Any]) -> Callable[[Tour], Any]:
    def with_validators(tour: Tour) -> Any:
        from django.test import override_settings

        with override_settings(AUTH_PASSWORD_VALIDATORS=PASSWORD_VALIDATORS):
            return open(tour)

    return with_validators


def _password_send(page: Any, current: str | None, new1: str, new2: str) -> Any:
    if current is not None:
        page.fill("#webauth-password-current", current)
    page.fill("#webauth-password-new1", new1)
    page.fill("#webauth-password-new2", new2)
    with page.expect_navigation():
        page.press("#webauth-password-new2", "Enter")
    return page


@_validated
def _account_password(tour: Tour) -> Any:
    page = _password_page(tour, "alice")
    assert page.locator("h1").inner_text() == "Change your password"
    return page


@_validated
def _account_password_set(tour: Tour) -> Any:
    page = _password_page(tour, "dora", has_password=False)
    assert page.locator("h1").inner_text() == "Set a password"
    return page


@_validated
def _account_password_wrong(tour: Tour) -> Any:
    page = _password_send(_password_page(tour, "alice"), "not the password", *["a new one 42"] * 2)
    assert page.locator("#webauth-password-current-error").is_visible()
    return page


@_validated
def _account_password_refused(tour: Tour) -> Any:
    page = _password_send(_password_page(tour, "alice"), PASSWORD, "password", "password")
    assert page.locator("#webauth-password-new1-error").is_visible()
    return page


@_validated
def _account_password_was_set(tour: Tour) -> Any:
    # pat sets a first password: the change form comes back with the outcome.
    page = _password_page(tour, "pat", has_password=False)
    page = _password_send(page, None, "a first passphrase 9", "a first passphrase 9")
    assert page.get_by_role("status").is_visible()
    return page


@_validated
def _account_password_overview(tour: Tour) -> Any:
    page = _password_page(tour, "alice")
    page.goto("/account/")
    return page


def _account_reauthenticate(tour: Tour) -> Any:
    page = _signed_in_long_ago(tour, "bob")
    page.goto("/account/reauthenticate/?next=/account/connections/")
    assert page.locator("h1").inner_text() == "Confirm it is you"
    return page


def _with_a_key(username: str) -> str:
    """*username* (made if needed) with a confirmed TOTP key; the key."""
    import pyotp
    from django.contrib.auth import get_user_model

    from webauth.conf import get_config
    from webauth.mfa import factors

    users = get_user_model().objects
    user = users.filter(username=username).first() or users.create_user(
        username, email=f"{username}@example.com", password=PASSWORD
    )
    config = get_config()
    enrolment = factors.begin_totp(config, user.pk, account=user.email, issuer="localhost")
    assert factors.confirm_totp(
        config, user.pk, enrolment.factor.id, pyotp.TOTP(enrolment.key).now()
    )
    return enrolment.key


def _with_security_key(username: str) -> None:
    """*username* (made if needed) with a confirmed security key (a made-up P-256 key:
    the pages only list it and ask for it)."""
    import json
    import os

    from cryptography.hazmat.primitives.asymmetric import ec
    from django.contrib.auth import get_user_model

    from webauth.conf import get_config
    from webauth.mfa import factors, keys
    from webauth.types import SecondFactor

    from .authenticator import _cose_key, b64url

    users = get_user_model().objects
    user = users.filter(username=username).first() or users.create_user(
        username, email=f"{username}@example.com", password=PASSWORD
    )
    config = get_config()
    public = _cose_key(ec.generate_private_key(ec.SECP256R1()))
    sealed = factors.seal(
        config,
        json.dumps({"id": b64url(os.urandom(32)), "key": b64url(public), "transports": ["usb"]}),
    )
    storage = factors.storage_of(config)
    stored = storage.create_second_factor(
        SecondFactor(id="", user_id=str(user.pk), kind=keys.KIND, secret=sealed, name="Yellow key")
    )
    assert storage.confirm_second_factor(str(user.pk), stored.id, 0)


def _mfa_code(tour: Tour) -> Any:
    _with_a_key("erin")
    page = tour.signed_in("erin")  # the first factor: the sign-in is held
    page.goto("/auth/mfa")
    assert page.locator("#webauth-mfa-code").is_visible()
    return page


def _mfa_security_key(tour: Tour) -> Any:
    _with_security_key("grace")
    page = tour.signed_in("grace")
    page.goto("/auth/mfa")
    assert page.get_by_role("button", name="Use your security key").is_visible()
    return page


def _mfa_wrong_code(tour: Tour) -> Any:
    page = _mfa_code(tour)
    page.fill("#webauth-mfa-code", "000000")
    with page.expect_navigation():
        page.press("#webauth-mfa-code", "Enter")
    assert page.get_by_role("alert").is_visible()
    return page


def _mfa_enrolment(tour: Tour) -> Any:
    # Under mfa.required = "all", heidi (no key yet) adds one before her sign-in ends.
    from django.contrib.auth import get_user_model

    from webauth.models import RecoveryCode, SecondFactor

    users = get_user_model().objects
    heidi = users.filter(username="heidi").first() or users.create_user(
        "heidi", email="heidi@example.com", password=PASSWORD
    )
    SecondFactor.objects.filter(user=heidi).delete()  # each visit starts with no key
    RecoveryCode.objects.filter(user=heidi).delete()
    page = tour.signed_in("heidi")
    page.goto("/auth/mfa")
    assert page.locator(".webauth-qr-code svg").is_visible()
    return page


def _mfa_enrolment_codes(tour: Tour) -> Any:
    import pyotp

    page = _mfa_enrolment(tour)
    key = page.locator("[data-key]").inner_text().replace(" ", "")
    page.fill("#webauth-mfa-code", pyotp.TOTP(key).now())
    with page.expect_navigation():
        page.press("#webauth-mfa-code", "Enter")
    assert page.locator(".webauth-code-list li").count() == 10
    return page


def _account_security_adding(tour: Tour) -> Any:
    page = tour.signed_in("alice")
    page.goto("/account/security/")
    with page.expect_navigation():
        page.get_by_role("button", name="Add an authenticator app").click()
    assert page.locator(".webauth-qr-code svg").is_visible()
    return page


def _account_security_codes(tour: Tour) -> Any:
    import pyotp

    page = _account_security_adding(tour)
    key = page.locator("[data-key]").inner_text().replace(" ", "")
    page.fill("#webauth-add-key-code", pyotp.TOTP(key).now())
    with page.expect_navigation():
        page.press("#webauth-add-key-code", "Enter")
    assert page.locator(".webauth-code-list li").count() == 10
    return page


def _account_security_adding_key(tour: Tour) -> Any:
    page = tour.signed_in("alice")
    page.goto("/account/security/")
    with page.expect_navigation():
        page.get_by_role("button", name="Add a security key").click()
    assert page.get_by_role("button", name="Add this security key").is_visible()
    return page


def _account_security_keys(tour: Tour) -> Any:
    _with_a_key("frank")
    _with_security_key("frank")
    page = tour.signed_in("frank")
    page.goto("/auth/mfa")  # the held sign-in: finished with a recovery code below
    from django.contrib.auth import get_user_model

    from webauth.conf import get_config
    from webauth.mfa import factors

    frank = get_user_model().objects.get(username="frank")
    codes = factors.new_recovery_codes(get_config(), frank.pk)
    page.fill("#webauth-mfa-code", codes[0])
    with page.expect_navigation():
        page.press("#webauth-mfa-code", "Enter")
    page.goto("/account/security/")
    assert page.get_by_role("button", name="Get new recovery codes").is_visible()
    return page


# -- sign-up with a password (webauth.passwords.signup) ----------------------------------------


def _signup_site(tour: Tour, verify: bool = True) -> None:
    """The tour's site with sign-up on (``passwords.signup``)."""
    tour.configure(
        {
            **site_settings(tour.base_url),
            "passwords": {"signup": {"verify_email": verify}},
            # The tour signs sam up at several stops: more than 3 an hour.
            "rate_limits": {"signup": "100/m/ip,100/h/key"},
        }
    )


def _signup_filled(tour: Tour, username: str, address: str, verify: bool = True) -> Any:
    """The sign-up form filled in and sent by a new visitor; the page it answers."""
    _signup_site(tour, verify)
    page = tour.page()
    page.goto("/auth/signup")
    page.fill("#id_username", username)
    page.fill("#id_email", address)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    with page.expect_navigation():
        page.press("#id_password2", "Enter")
    return page


def _signup_mail(address: str) -> Any:
    from django.core import mail

    from webauth.passwords.signup import wait_for_mail

    wait_for_mail()
    return [m for m in getattr(mail, "outbox", []) if m.to == [address]][-1]


def _signup_form(tour: Tour) -> Any:
    _signup_site(tour)
    page = tour.page()
    page.goto("/auth/signup")
    return page


def _signup_invalid(tour: Tour) -> Any:
    _signup_site(tour)
    page = tour.page()
    page.goto("/auth/signup")
    page.fill("#id_username", "sam")
    page.fill("#id_email", "sam@example.com")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", "something else")
    with page.expect_navigation():
        page.press("#id_password2", "Enter")
    assert page.locator('[aria-invalid="true"]').count() >= 1
    return page


def _signup_sent(tour: Tour) -> Any:
    page = _signup_filled(tour, "sam", "sam@example.com")
    assert page.locator("#webauth-signup-code-input").is_visible()
    return page


def _signup_wrong_code(tour: Tour) -> Any:
    page = _signup_sent(tour)
    page.fill("#webauth-signup-code-input", "0000-0000")
    with page.expect_navigation():
        page.press("#webauth-signup-code-input", "Enter")
    assert page.locator("#webauth-signup-code-error").is_visible()
    return page


def _signup_link(tour: Tour, address: str = "sam@example.com") -> str:
    [link] = re.findall(r"http://\S+/auth/signup\?\S+", _signup_mail(address).body)
    return link


def _signup_confirm(tour: Tour) -> Any:
    page = _signup_sent(tour)
    page.goto(_signup_link(tour))
    assert page.locator("#webauth-signup-confirm").is_visible()
    return page


def _signup_elsewhere(tour: Tour) -> Any:
    _signup_sent(tour)
    link = _signup_link(tour)
    other = tour.page()  # another browser: none of the asking one's cookies
    other.goto(link)
    return other


def _signup_taken_meanwhile(tour: Tour) -> Any:
    # The address proven, but an account was made with it meanwhile: said to its owner.
    from django.contrib.auth import get_user_model

    page = _signup_sent(tour)
    [code] = re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", _signup_mail("sam@example.com").body)
    get_user_model().objects.create_user("sam2", email="sam@example.com")
    page.fill("#webauth-signup-code-input", code)
    with page.expect_navigation():
        page.press("#webauth-signup-code-input", "Enter")
    assert page.locator("#webauth-signup-message").is_visible()
    return page


def _signup_sent_unverified(tour: Tour) -> Any:
    # verify_email=False, an address taken: "check your email", no code to type.
    return _signup_filled(tour, "zed", "alice@example.com", verify=False)


# -- the password reset (webauth.passwords.reset) -----------------------------------------


def _reset_site(tour: Tour) -> None:
    """The tour's site with the password reset on (``passwords.reset``)."""
    tour.configure(
        {
            **site_settings(tour.base_url),
            "passwords": {"reset": True},
            # The tour asks for alice's reset at several stops: more than 3 an hour.
            "rate_limits": {"password_reset": "100/m/ip,100/h/key"},
        }
    )


def _reset_at(path: str) -> Callable[[Tour], Any]:
    def open(tour: Tour) -> Any:
        _reset_site(tour)
        page = tour.page()
        page.goto(path)
        return page

    return open


def _reset_asked(tour: Tour, *, new: bool = True) -> tuple[Any, str, str]:
    """A visitor (a new one with *new*) asked for alice's reset on the form: the page, and
    the message's link and code."""
    from webauth.passwords import reset

    _reset_site(tour)
    assert reset.outbox.flush()
    before = len(outbox_since(0))
    page = tour.page() if new else tour.browser_page
    page.goto("/auth/reset")
    page.fill("#webauth-reset-identifier", "alice")
    with page.expect_navigation():
        page.press("#webauth-reset-identifier", "Enter")
    assert reset.outbox.flush()
    [message] = [m for m in outbox_since(before) if m.subject.startswith("Reset your password")]
    [link] = re.findall(re.escape(tour.base_url) + r"/auth/reset/confirm\?\S+", message.body)
    [code] = re.findall(r"\b[0-9A-Z]{4}-[0-9A-Z]{4}\b", message.body)
    return page, link, code


def _reset_send(page: Any, submit: str, password: str, again: str) -> Any:
    page.fill("#webauth-new-password1", password)
    page.fill("#webauth-new-password2", again)
    with page.expect_navigation():
        page.click(submit)
    return page


def _reset_request_error(tour: Tour) -> Any:
    # Nothing typed (the browser's own check off, as in a browser without it).
    page = _reset_at("/auth/reset")(tour)
    page.evaluate("() => { for (const f of document.forms) f.noValidate = true; }")
    with page.expect_navigation():
        page.click("#webauth-reset-submit")
    assert page.locator("#webauth-reset-identifier-error").is_visible()
    return page


def _reset_sent(tour: Tour) -> Any:
    page, _, _ = _reset_asked(tour)
    return page


def _reset_wrong_code(tour: Tour) -> Any:
    page, _, _ = _reset_asked(tour)
    page.fill("#webauth-reset-code-input", "0000-0000")
    _reset_send(page, "#webauth-reset-code-submit", PASSWORD, PASSWORD)
    assert page.locator("#webauth-reset-code-error").is_visible()
    return page


def _reset_sent_refused(tour: Tour) -> Any:
    page, _, code = _reset_asked(tour)
    page.fill("#webauth-reset-code-input", code)
    _reset_send(page, "#webauth-reset-code-submit", PASSWORD, "something else")
    assert page.locator("#webauth-new-password2-error").is_visible()
    return page


def _reset_confirm(tour: Tour) -> Any:
    page, link, _ = _reset_asked(tour)
    page.goto(link)
    assert page.locator("#webauth-reset-confirm").is_visible()
    return page


def _reset_confirm_refused(tour: Tour) -> Any:
    page = _reset_confirm(tour)
    _reset_send(page, "#webauth-reset-confirm-submit", PASSWORD, "something else")
    assert page.locator("#webauth-new-password2-error").is_visible()
    return page


def _reset_elsewhere(tour: Tour) -> Any:
    _, link, _ = _reset_asked(tour)
    other = tour.page()  # another browser: none of the asking one's cookies
    other.goto(link)
    return other


def _reset_invalid(tour: Tour) -> Any:
    # The link of an earlier request, after a newer one in the same browser.
    _, link, _ = _reset_asked(tour)
    page, _, _ = _reset_asked(tour, new=False)
    page.goto(link)
    return page


def _reset_done(tour: Tour) -> Any:
    # Reset to the password alice had (the stops after this one sign in with it).
    page, _, code = _reset_asked(tour)
    page.fill("#webauth-reset-code-input", code)
    _reset_send(page, "#webauth-reset-code-submit", PASSWORD, PASSWORD)
    assert page.locator("#webauth-reset-done-signin").is_visible()
    return page


def reset_stops() -> Iterator[Stop]:
    """The password reset's pages, in every state a person sees them in."""
    yield Stop("reset-request", "password reset: the form", _reset_at("/auth/reset"))
    yield Stop("reset-request-error", "password reset: nothing typed", _reset_request_error)
    yield Stop("reset-sent", "password reset: check your email, the code form", _reset_sent)
    yield Stop("reset-sent-wrong-code", "password reset: a wrong code", _reset_wrong_code)
    yield Stop(
        "reset-sent-refused",
        "password reset: the code form, passwords that differ",
        _reset_sent_refused,
    )
    yield Stop(
        "reset-sent-elsewhere",
        "password reset: check your email, in a browser that did not ask",
        _reset_at("/auth/reset/sent"),
    )
    yield Stop(
        "reset-confirm", "password reset: the email's link, where it was asked", _reset_confirm
    )
    yield Stop(
        "reset-confirm-refused",
        "password reset: the email's link, passwords that differ",
        _reset_confirm_refused,
    )
    yield Stop("reset-elsewhere", "password reset: the email's link elsewhere", _reset_elsewhere)
    yield Stop("reset-invalid", "password reset: the link of an earlier request", _reset_invalid)
    yield Stop("reset-done", "password reset: the new password set", _reset_done)


def stops() -> Iterator[Stop]:
    """Every built-in page in every state a person sees it in (error pages: every type)."""
    from webauth.pages import ERROR_PAGES

    yield Stop("signin", "sign-in page, every provider kind", _goto("/auth/signin"))
    yield Stop(
        "signin-all-providers",
        "sign-in page with every built-in OAuth provider's button",
        _goto("/auth/signin"),
        catalog=True,
    )
    yield Stop(
        "signin-error",
        "sign-in page after a wrong password",
        _goto("/auth/signin?error=CredentialsSignin&code=credentials"),
    )
    yield Stop("signin-field-error", "sign-in page, a refused email address", _signin_field_error)
    yield Stop(
        "signin-signed-in", "sign-in page, opened while signed in", _signed_in_at("/auth/signin")
    )
    yield Stop(
        "signin-more-open",
        "sign-in page, the email link's and the new passkey account's disclosures open",
        _signin_more_open,
    )
    yield Stop(
        "signin-passkey-email",
        "sign-in page, a new passkey account asked for with no address yet",
        _signin_passkey_email,
    )
    yield Stop(
        "signin-passwordless",
        "sign-in page without a password: the address is the one field",
        _goto("/auth/signin"),
        password=False,
    )
    yield Stop(
        "signin-challenge",
        "sign-in page with the bot challenge's widget in its forms",
        _with_challenge("/auth/signin"),
        challenge=True,
    )
    yield Stop(
        "signin-challenge-missing",
        "sign-in page after a sign-in without the bot challenge's answer",
        _with_challenge("/auth/signin?error=ChallengeFailed&code=missing"),
        challenge=True,
    )
    yield Stop(
        "signin-challenge-refused",
        "sign-in page after the bot challenge refused",
        _with_challenge("/auth/signin?error=ChallengeFailed&code=refused"),
        challenge=True,
    )
    yield Stop("signout", "sign-out page", _signed_in_at("/auth/signout"))
    yield Stop("signout-signed-out", "sign-out page, opened signed out", _goto("/auth/signout"))
    for error in ERROR_PAGES:
        query = "" if error == "default" else f"?error={quote(error)}"
        yield Stop(f"error-{error}", f"error page: {error}", _goto(f"/auth/error{query}"))
    yield Stop("verify-request", "check your email, with the code form", _verify_request)
    yield Stop(
        "verify-request-wrong-code",
        "check your email, after a wrong code",
        _verify_request_wrong_code,
    )
    yield Stop(
        "verify-request-elsewhere",
        "check your email, in a browser that did not ask",
        _goto(EMAIL_VERIFY_REQUEST),
    )
    yield Stop("email-confirm", "the email's link, in the browser that asked", _email_confirm)
    yield Stop("email-elsewhere", "the email's link, opened in another browser", _email_elsewhere)
    yield Stop(
        "email-link-used", "the email's link, opened again where it was used", _email_link_used
    )
    yield Stop("passkeys-empty", "passkeys page, no passkeys yet", _signed_in_at("/passkeys/"))
    yield Stop("passkeys", "passkeys page with two passkeys", _signed_in_at("/passkeys/", "bob"))
    yield Stop(
        "passkeys-rename-open", "passkeys page, a passkey's name field open", _passkeys_rename_open
    )
    yield Stop("passkeys-renamed", "passkeys page after a rename", _passkeys_after_rename)
    yield Stop("account", "account center: overview", _account_at("/account/"))
    yield Stop(
        "account-sessions-jwt",
        "account center: sessions under the JWT strategy",
        _account_at("/account/sessions/"),
    )
    yield Stop(
        "account-sessions",
        "account center: two devices (database sessions)",
        _account_sessions,
        strategy="database",
    )
    yield Stop(
        "account-session-revoked",
        "account center: after signing the other device out",
        _account_session_revoked,
        strategy="database",
    )
    yield Stop("account-connections", "account center: a connected provider", _account_connections)
    yield Stop(
        "account-connections-last",
        "account center: the last way in, its button disabled",
        _account_last_way_in,
    )
    yield Stop(
        "account-passkeys", "account center: two passkeys", _account_at("/account/passkeys/", "bob")
    )
    yield Stop(
        "account-passkeys-last",
        "account center: a passkey that is the only way in, its button disabled",
        _account_only_passkey,
    )
    yield Stop(
        "account-with-logo",
        "account center: the header with the theme's logo and a configured name",
        _account_at("/account/connections/"),
        logo=True,
    )
    yield Stop("account-email", "account center: the email address", _account_at("/account/email/"))
    yield Stop(
        "account-email-code", "account center: the code sent to a new address", _account_email_code
    )
    yield Stop("account-password", "account center: changing the password", _account_password)
    yield Stop(
        "account-password-set", "account center: setting a first password", _account_password_set
    )
    yield Stop(
        "account-password-wrong",
        "account center: a refused current password",
        _account_password_wrong,
    )
    yield Stop(
        "account-password-refused",
        "account center: a new password the validators refuse",
        _account_password_refused,
    )
    yield Stop(
        "account-password-was-set",
        "account center: a first password set, the change form with the outcome",
        _account_password_was_set,
    )
    yield Stop(
        "account-password-overview",
        "account center: the overview with the Password section",
        _account_password_overview,
    )
    yield Stop(
        "account-api-keys",
        "account center: API keys, one live and one revoked",
        _account_api_keys,
        api_keys=True,
    )
    yield Stop(
        "account-api-key-made",
        "account center: a new API key, shown once",
        _account_api_key_made,
        api_keys=True,
    )
    yield Stop(
        "account-api-keys-team",
        "account center: API keys of two groups alice manages, one with a key",
        _account_api_keys_of_a_team,
        api_keys=True,
    )
    yield Stop(
        "account-reauthenticate",
        "re-authentication: every way in bob has",
        _account_reauthenticate,
    )
    yield Stop("mfa-code", "second factor: the code page", _mfa_code, mfa=True)
    yield Stop("mfa-wrong-code", "second factor: a wrong code", _mfa_wrong_code, mfa=True)
    yield Stop(
        "mfa-security-key", "second factor: a security key's button", _mfa_security_key, mfa=True
    )
    yield Stop(
        "mfa-enrolment",
        "second factor required: adding an authenticator app before the session",
        _mfa_enrolment,
        mfa=True,
        mfa_required="all",
    )
    yield Stop(
        "mfa-enrolment-codes",
        "second factor required: the first recovery codes, with the new session",
        _mfa_enrolment_codes,
        mfa=True,
        mfa_required="all",
    )
    yield Stop(
        "account-security",
        "account center: security, no authenticator app yet",
        _account_at("/account/security/"),
        mfa=True,
    )
    yield Stop(
        "account-security-adding",
        "account center: adding an authenticator app (its QR code)",
        _account_security_adding,
        mfa=True,
    )
    yield Stop(
        "account-security-adding-key",
        "account center: adding a security key (its name, its button)",
        _account_security_adding_key,
        mfa=True,
    )
    yield Stop(
        "account-security-codes",
        "account center: the recovery codes, shown once",
        _account_security_codes,
        mfa=True,
    )
    yield Stop(
        "account-security-keys",
        "account center: an authenticator app, a security key and the recovery codes",
        _account_security_keys,
        mfa=True,
    )
    yield Stop("signup", "sign-up: the form", _signup_form)
    yield Stop("signup-invalid", "sign-up: the form with a field's error", _signup_invalid)
    yield Stop("signup-sent", "sign-up: check your email, with the code form", _signup_sent)
    yield Stop("signup-wrong-code", "sign-up: a wrong code", _signup_wrong_code)
    yield Stop("signup-confirm", "sign-up: the email's link, where it was asked", _signup_confirm)
    yield Stop("signup-elsewhere", "sign-up: the email's link elsewhere", _signup_elsewhere)
    yield Stop(
        "signup-taken", "sign-up: the address taken meanwhile, once proven", _signup_taken_meanwhile
    )
    yield Stop(
        "signup-sent-unverified",
        "sign-up without verification: a taken address (no code to type)",
        _signup_sent_unverified,
    )
    yield from reset_stops()


def visit(tour: Tour, stop: Stop) -> Any:
    """Configure the site for *stop*, open its page; the Playwright page."""
    tour.configure(
        site_settings(
            tour.base_url,
            catalog=stop.catalog,
            strategy=stop.strategy,
            mfa=stop.mfa,
            mfa_required=stop.mfa_required,
            logo=stop.logo,
            password=stop.password,
            challenge=stop.challenge,
            api_keys=stop.api_keys,
        )
    )
    return stop.open(tour)
