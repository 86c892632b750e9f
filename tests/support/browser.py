"""Debian's Chromium, driven by Playwright, for the real-browser tests.

Playwright's own browser downloads are never used: a test that needs the browser
skips when ``/usr/bin/chromium`` (or playwright) is absent, or fails when
``WEBAUTH_REQUIRE_BROWSER`` is set (as CI does).
"""

import json
import os
from contextlib import contextmanager, suppress

import pytest

CHROMIUM = "/usr/bin/chromium"


def unavailable(reason):
    """Skip, or fail where a browser is required (CI sets WEBAUTH_REQUIRE_BROWSER)."""
    if os.environ.get("WEBAUTH_REQUIRE_BROWSER"):
        pytest.fail(f"{reason}, and WEBAUTH_REQUIRE_BROWSER is set", pytrace=False)
    pytest.skip(reason)


def focus_lands_on(page, element_id, timeout=5000):
    """The id of the focused element once it is *element_id*, or whatever has it then.

    ``autofocus`` is applied at the browser's next rendering step, which can come
    after the ``load`` event a navigation waits for: reading ``activeElement`` at
    once can find the body. This waits (up to *timeout* ms) for the focus to land,
    and gives back what is focused, so a page that never moves it still fails.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    script = "(id) => document.activeElement && document.activeElement.id === id"
    with suppress(PlaywrightTimeout):  # the focus never came: say what has it instead
        page.wait_for_function(script, arg=element_id, timeout=timeout)
    return page.evaluate("() => document.activeElement && document.activeElement.id")


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


#: The field where browsers offer passkeys (conditional mediation, "autofill").
AUTOFILL_FIELD = 'input[autocomplete="username webauthn"]'
#: The disclosure "Create an account with a passkey" of the built-in sign-in page,
#: there when the page's identifier field is a username (a password form is primary).
NEW_ACCOUNT_MORE = "details[data-webauth-passkey-more]"


def fill_new_account_email(page, email):
    """Type a new passkey account's address where the sign-in page asks for it.

    Its own field, behind the "Create an account with a passkey" disclosure, when
    the page's identifier is a username; else the identifier field (an address).
    """
    more = page.locator(NEW_ACCOUNT_MORE)
    if more.count():
        if more.get_attribute("open") is None:
            more.locator("summary").click()
        more.locator('input[type="email"]').fill(email)
    else:
        page.fill(AUTOFILL_FIELD, email)


# What the page asked of navigator.credentials, reported to the test as it happens
# (window state would not survive the navigations of a sign-in). AUTOFILL is
# "hold" (the person never picks a suggestion: the request waits until aborted)
# or "on-focus" (the person picks one once the field has the focus).
_WATCH_CREDENTIALS = """
(() => {
  const AUTOFILL = %s;
  const report = (call) => window.reportCredentialCall(call);
  const realGet = navigator.credentials.get.bind(navigator.credentials);
  const realCreate = navigator.credentials.create.bind(navigator.credentials);
  const aborted = (signal) => new Promise((_, reject) => {
    if (!signal) return;
    const stop = () => reject(signal.reason || new DOMException("aborted", "AbortError"));
    if (signal.aborted) stop(); else signal.addEventListener("abort", stop, { once: true });
  });
  const fieldFocused = () => new Promise((resolve) => {
    const isField = (el) => el && el.matches && el.matches('%s');
    if (isField(document.activeElement)) return resolve();
    document.addEventListener("focusin", function seen(event) {
      if (isField(event.target)) {
        document.removeEventListener("focusin", seen);
        resolve();
      }
    });
  });
  const watch = (kind, mediation, promise) => {
    report({ kind, mediation, event: "start" });
    return promise.then(
      (credential) => { report({ kind, mediation, event: "resolved" }); return credential; },
      (error) => {
        report({ kind, mediation, event: "rejected", error: error && error.name });
        throw error;
      },
    );
  };
  // A hostile script on the page (or an extension) that weakens what the site asked
  // for before the device sees it: set window.weakenUserVerification = true.
  const weaken = (publicKey, selection) => {
    if (!window.weakenUserVerification || !publicKey) return;
    const target = selection ? publicKey.authenticatorSelection : publicKey;
    if (target) target.userVerification = "discouraged";
  };
  // "strict": as "hold", and as a browser enforces it, one request at a time: a
  // request made before the one under way has let go (a moment after its abort)
  // is refused with a NotAllowedError ("A request is already pending").
  let pending = 0;
  const oneAtATime = (start) => {
    if (AUTOFILL !== "strict") return start();
    if (pending) {
      return Promise.reject(new DOMException("A request is already pending.", "NotAllowedError"));
    }
    pending += 1;
    const done = () => { pending -= 1; };
    return start().then((value) => { done(); return value; }, (error) => { done(); throw error; });
  };
  const slowAbort = (signal) => new Promise((_, reject) => {
    const stop = () => setTimeout(
      () => reject(signal.reason || new DOMException("aborted", "AbortError")), 200,
    );
    if (signal.aborted) stop(); else signal.addEventListener("abort", stop, { once: true });
  });
  navigator.credentials.get = (options = {}) => {
    const mediation = options.mediation || "optional";
    if (AUTOFILL === "strict") {
      if (mediation === "conditional") {
        return oneAtATime(() => watch("get", mediation, slowAbort(options.signal)));
      }
      return oneAtATime(() => watch("get", mediation, realGet(options)));
    }
    if (mediation !== "conditional") weaken(options.publicKey, false);
    if (mediation !== "conditional" || AUTOFILL === "pass") {
      return watch("get", mediation, realGet(options));
    }
    if (AUTOFILL === "hold") return watch("get", mediation, aborted(options.signal));
    if (AUTOFILL === "timeout") {
      // The request runs out of time with nobody at the page, as a browser's does
      // (a NotAllowedError), a moment after it starts.
      const timedOut = new Promise((_, reject) => setTimeout(
        () => reject(new DOMException("The request timed out.", "NotAllowedError")),
        300,
      ));
      return watch("get", mediation, Promise.race([timedOut, aborted(options.signal)]));
    }
    const picked = Promise.race([fieldFocused(), aborted(options.signal)]);
    return watch("get", mediation, picked.then(() => realGet(options)));
  };
  navigator.credentials.create = (options = {}) => {
    weaken(options.publicKey, true);
    return oneAtATime(() => watch("create", "optional", realCreate(options)));
  };
})();
"""


def watch_credentials(context, autofill="hold"):
    """Report every ``navigator.credentials`` call of *context*'s pages; the list of reports.

    Each report is ``{"kind": "get"|"create", "mediation", "event": "start"|
    "resolved"|"rejected", "error"}``. The virtual authenticator answers autofill
    requests at once, as if the person had picked a passkey before the page
    finished loading; *autofill* says what the simulated person does instead:
    ``"hold"`` never picks (the request waits until the page aborts it),
    ``"on-focus"`` picks once the passkey field has the focus, ``"pass"`` leaves
    Chromium's behaviour alone, ``"timeout"`` lets each request run out of time
    (a ``NotAllowedError`` after 300 ms) as on a page nobody touches, and
    ``"strict"`` holds it as ``"hold"`` does while enforcing what browsers do:
    one request at a time, an aborted one letting go 200 ms after its abort, a
    request made meanwhile refused with ``NotAllowedError``. A page where
    ``window.weakenUserVerification`` is true asks the device for no user
    verification, whatever the site asked.
    """
    calls = []
    # A Python function, not a bound builtin: Playwright tags the callable it gets.
    context.expose_function("reportCredentialCall", lambda call: calls.append(call))
    context.add_init_script(_WATCH_CREDENTIALS % (json.dumps(autofill), AUTOFILL_FIELD))
    return calls


class Person:
    """One browser profile with its device (a platform authenticator) and its calls.

    ``calls``: what its pages asked of ``navigator.credentials``
    (:func:`watch_credentials`, with *autofill* the simulated person's choice).
    """

    def __init__(self, context, autofill="hold"):
        self.calls = watch_credentials(context, autofill)
        self.page = context.new_page()
        self.authenticators = VirtualAuthenticators(self.page)
        self.platform = self.authenticators.add()

    def session(self):
        """``GET /auth/session`` as this browser (its cookies, same origin)."""
        return self.page.evaluate("() => fetch('/auth/session').then((r) => r.json())")

    def calls_of(self, kind, mediation, event):
        return [
            c
            for c in self.calls
            if (c["kind"], c["mediation"], c["event"]) == (kind, mediation, event)
        ]
