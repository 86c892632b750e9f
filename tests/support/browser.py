"""Debian's Chromium, driven by Playwright, for the real-browser tests.

Playwright's own browser downloads are never used: a test that needs the browser
skips when ``/usr/bin/chromium`` (or playwright) is absent, or fails when
``WEBAUTH_REQUIRE_BROWSER`` is set (as CI does).
"""

import os
from contextlib import contextmanager

import pytest

CHROMIUM = "/usr/bin/chromium"


def unavailable(reason):
    """Skip, or fail where a browser is required (CI sets WEBAUTH_REQUIRE_BROWSER)."""
    if os.environ.get("WEBAUTH_REQUIRE_BROWSER"):
        pytest.fail(f"{reason}, and WEBAUTH_REQUIRE_BROWSER is set", pytrace=False)
    pytest.skip(reason)


@contextmanager
def chromium():
    """One headless Chromium for a module's tests (each test opens its own contexts)."""
    if not os.path.exists(CHROMIUM):
        unavailable(f"{CHROMIUM} is absent (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("playwright is not installed")
    # Playwright's sync API keeps an asyncio loop running on this thread, so Django's
    # async-safety check would refuse the test's own ORM calls (creating users,
    # flushing the database) while the browser is open. They are plain synchronous
    # calls; the live server handles requests in its own thread either way.
    with pytest.MonkeyPatch.context() as mp, sync_playwright() as playwright:
        mp.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            yield browser
        finally:
            browser.close()


# -- passkeys: Chromium's virtual authenticators ------------------------------------------------

# A platform authenticator as a phone or laptop has one: a discoverable credential
# (resident key) and user verification (a fingerprint or PIN) that succeeds. With
# automatic presence simulation, every request is answered at once, as if the person
# touched the sensor: the tests never wait for a prompt.
PLATFORM_AUTHENTICATOR = {
    "protocol": "ctap2",
    "transport": "internal",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


def base64url(standard):
    """A CDP credential id (standard base64, padded) as WebAuthn's JSON writes it."""
    return standard.replace("+", "-").replace("/", "_").rstrip("=")


class VirtualAuthenticators:
    """Chromium's WebAuthn testing domain (over CDP) for one page.

    Software authenticators that answer the page's ``navigator.credentials`` calls
    with real attestations and assertions: the server verifies them as it would a
    phone's. Chromium allows one ``internal`` (platform) authenticator per page, so
    a second device is a security key (``transport="usb"``).
    """

    def __init__(self, page):
        self.cdp = page.context.new_cdp_session(page)
        self.cdp.send("WebAuthn.enable", {"enableUI": False})
        # Credentials the page asked the browser to forget (the Signal API):
        # [{"authenticatorId": ..., "credentialId": <standard base64>}].
        self.deleted = []
        # A Python function, not a bound builtin: Playwright tags the callable it gets.
        self.cdp.on("WebAuthn.credentialDeleted", lambda event: self.deleted.append(event))

    def add(self, **options):
        """A new authenticator (PLATFORM_AUTHENTICATOR with *options* changed): its id."""
        answer = self.cdp.send(
            "WebAuthn.addVirtualAuthenticator",
            {"options": {**PLATFORM_AUTHENTICATOR, **options}},
        )
        return answer["authenticatorId"]

    def remove(self, authenticator):
        self.cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticator})

    def credentials(self, authenticator):
        """The credentials *authenticator* holds (id in standard base64, signCount, ...)."""
        answer = self.cdp.send("WebAuthn.getCredentials", {"authenticatorId": authenticator})
        return answer["credentials"]

    def credential_ids(self, authenticator):
        """The base64url ids of the credentials *authenticator* holds."""
        return [base64url(c["credentialId"]) for c in self.credentials(authenticator)]

    def add_credential(self, authenticator, credential):
        """Put a credential (as ``credentials()`` returned it) into *authenticator*."""
        self.cdp.send(
            "WebAuthn.addCredential", {"authenticatorId": authenticator, "credential": credential}
        )

    def remove_credential(self, authenticator, credential_id):
        """Make *authenticator* forget a credential (standard base64 id, as CDP gives it)."""
        self.cdp.send(
            "WebAuthn.removeCredential",
            {"authenticatorId": authenticator, "credentialId": credential_id},
        )
