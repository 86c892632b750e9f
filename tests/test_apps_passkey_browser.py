"""An app's passkey sign-in with Chromium's virtual authenticator, no cookie anywhere.

tests/test_apps_end_to_end.py drives every app sign-in method with the suite's
software authenticator. Here the passkey half is the platform's own: the app
(plain HTTP requests with no cookie jar) asks ``/auth/app/webauthn-options``,
hands the options to a WebAuthn client (Chromium on the relying party's origin,
with a CDP virtual authenticator: ctap2, internal transport, resident key,
user verification), and posts what it answers to ``/auth/app/callback`` with
the ``binding`` instead of a challenge cookie. The token then opens a Django
REST framework view and a django-ninja view, refreshes, and is signed out.
"""

from __future__ import annotations

import pytest
import requests

from webauth.providers import Passkey

from .support.browser import VirtualAuthenticators

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    # The DRF and django-ninja views of the cookieless end-to-end test.
    pytest.mark.urls("tests.test_apps_end_to_end"),
]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"

#: The browser half of the ceremony: the platform's JSON helpers, as an app's
#: WebAuthn client (Android's Credential Manager, iOS's AuthenticationServices)
#: takes and gives JSON.
CREATE = """async (options) => {
  const publicKey = PublicKeyCredential.parseCreationOptionsFromJSON(options);
  return (await navigator.credentials.create({ publicKey })).toJSON();
}"""
GET = """async (options) => {
  const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(options);
  return (await navigator.credentials.get({ publicKey })).toJSON();
}"""


@pytest.fixture(params=["jwt", "database"])
def site(request, settings, live_server):
    assert live_server.url.startswith("http://localhost:"), live_server.url
    settings.WEBAUTH = {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "session": {"strategy": request.param},
        "bearer": True,
        "experimental": {"enable_webauthn": True},
        "providers": [
            Passkey(
                relying_party={
                    "id": "localhost",
                    "name": "webauth tests",
                    "origins": [live_server.url],
                }
            )
        ],
    }
    return request.param, live_server.url


def call(base, method, path, *, token=None, **kwargs):
    """One request of the app: no cookie jar, and no cookie in the answer."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = requests.request(method, base + path, headers=headers, timeout=10, **kwargs)
    assert "Set-Cookie" not in response.headers, (path, response.headers["Set-Cookie"])
    return response


def token_of(response) -> str:
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["tokenType"] == "Bearer"
    return answer["sessionToken"]


def test_an_app_signs_in_with_a_platform_passkey(browser, site):
    strategy, base = site
    context = browser.new_context(base_url=base)
    try:
        page = context.new_page()
        page.goto("/auth/csrf")  # any page of the relying party's origin
        authenticator = VirtualAuthenticators(page)
        device = authenticator.add()

        asked = call(
            base,
            "get",
            "/auth/app/webauthn-options/passkey",
            params={"action": "register", "email": "pat@example.com"},
        ).json()
        data = page.evaluate(CREATE, asked["options"])
        body = {"action": "register", "data": data, "binding": asked["binding"]}
        token_of(call(base, "post", "/auth/app/callback/passkey", json=body))
        assert len(authenticator.credentials(device)) == 1

        # The sign-in an app does every day: a discoverable credential, no address.
        asked = call(
            base, "get", "/auth/app/webauthn-options/passkey", params={"action": "authenticate"}
        ).json()
        data = page.evaluate(GET, asked["options"])
        body = {"action": "authenticate", "data": data, "binding": asked["binding"]}
        token = token_of(call(base, "post", "/auth/app/callback/passkey", json=body))

        # The same answer again is a replay: its challenge is spent.
        replay = call(base, "post", "/auth/app/callback/passkey", json=body)
        assert replay.status_code in (400, 401) and "sessionToken" not in replay.json()
    finally:
        context.close()

    profile = {"email": "pat@example.com"}
    assert call(base, "get", "/api/drf/profile", token=token).json() == profile
    assert call(base, "get", "/api/ninja/me", token=token).json() == profile
    fresh = token_of(call(base, "post", "/auth/app/session", token=token))
    assert call(base, "get", "/api/drf/profile", token=fresh).json() == profile
    signed_out = call(base, "post", "/auth/app/signout", token=fresh)
    assert signed_out.json() == {"revoked": strategy == "database"}
    if strategy == "database":
        assert call(base, "get", "/api/ninja/me", token=fresh).status_code == 401
    assert call(base, "get", "/api/drf/profile").status_code == 401
