"""Driving a full OpenID Connect sign-in against the test provider (tests/support/idp.py)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import requests
from django.contrib.auth import get_user_model
from django.test import Client

from .helpers import csrf_pair

CLIENT_ID = "webauth-test-client"
CLIENT_SECRET = "webauth-test-secret-0123456789"
REDIRECT_URI = "http://testserver/auth/callback/example"


@dataclass
class IdP:
    """The running provider: its URLs, registered application and a signed-in browser."""

    url: str
    application: object
    user: object
    browser: requests.Session

    @property
    def issuer(self) -> str:
        return f"{self.url}/idp"


def start_idp(live_server, *, skip_authorization=True, redirect_uri=REDIRECT_URI) -> IdP:
    from oauth2_provider.models import get_application_model

    user = get_user_model().objects.create_user(
        "ida", password="ida-password-123", first_name="Ida", last_name="Provider"
    )
    application = get_application_model().objects.create(
        name="webauth tests",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        client_type="confidential",
        authorization_grant_type="authorization-code",
        redirect_uris=redirect_uri,
        algorithm="RS256",
        skip_authorization=skip_authorization,
        user=user,
    )
    idp_client = Client()
    idp_client.force_login(user)
    browser = requests.Session()
    browser.cookies.set("sessionid", idp_client.cookies["sessionid"].value)
    return IdP(url=live_server.url, application=application, user=user, browser=browser)


def plain_oauth2(idp: IdP, **options):
    """An OAuth 2 provider (no OpenID discovery, no issuer) on the test provider's endpoints."""
    from webauth.providers.oauth import OAuth2

    return OAuth2(
        **{
            "id": "example",
            "authorization_endpoint": f"{idp.issuer}/authorize/",
            "token_endpoint": f"{idp.issuer}/token/",
            "userinfo_endpoint": f"{idp.issuer}/userinfo/",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            **options,
        }
    )


def begin(client, callback_url="/after/", provider="example", query=""):
    """POST /auth/signin/<provider>; returns the authorization URL."""
    token = csrf_pair(client)
    response = client.post(
        f"/auth/signin/{provider}{query}", {"csrfToken": token, "callbackUrl": callback_url}
    )
    assert response.status_code == 302, response.content
    return response["Location"]


def authorize(idp: IdP, authorization_url: str) -> str:
    """The user at the provider: returns where the provider redirects the browser."""
    response = idp.browser.get(authorization_url, allow_redirects=False, timeout=10)
    assert response.status_code == 302, response.text[:2000]
    return response.headers["Location"]


def callback(client, location: str, method="get"):
    """The browser following the provider's redirect back to webauth."""
    parts = urlsplit(location)
    if method == "post":
        data = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        return client.post(parts.path, data)
    return client.get(f"{parts.path}?{parts.query}")


def sign_in(client, idp: IdP, **kwargs):
    """A whole sign-in; returns webauth's final response."""
    return callback(client, authorize(idp, begin(client, **kwargs)))


def query(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlsplit(url).query).items()}
