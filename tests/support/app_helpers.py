"""An app's side of OAuth against the test provider (tests/support/idp.py).

What a platform SDK does (an ID token issued to the app's own client id, with
the nonce's hash) and what an app computes for PKCE; used by the app sign-in
tests (tests/test_app_signin.py, tests/test_apps_end_to_end.py).
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from urllib.parse import urlencode

import requests

from .helpers import query
from .oidc_helpers import IdP, authorize

#: The app's own client at the provider (an iOS app's client id), and its redirect.
IOS_CLIENT_ID = "webauth-ios-app"
IOS_REDIRECT = "https://app.example.com/sdk"
#: Redirect URIs of the app for the code flow, registered for the web client too.
APP_REDIRECT = "https://app.example.com/oauth/callback"
APP_SCHEME_REDIRECT = "com.example.app:/oauth2redirect"


def s256(verifier: str) -> str:
    """PKCE's S256 code challenge of *verifier*."""
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def hashed(raw: str) -> str:
    """What the app gives the SDK as the nonce: SHA-256 of the raw nonce, hex."""
    return hashlib.sha256(raw.encode()).hexdigest()


def register_ios_app(idp: IdP):
    """The app's own client at the provider, as a platform SDK uses it (public, PKCE)."""
    from oauth2_provider.models import get_application_model

    return get_application_model().objects.create(
        name="webauth tests iOS",
        client_id=IOS_CLIENT_ID,
        client_type="public",
        authorization_grant_type="authorization-code",
        redirect_uris=IOS_REDIRECT,
        algorithm="RS256",
        skip_authorization=True,
        user=idp.user,
    )


def sdk_id_token(
    idp: IdP,
    *,
    nonce: str | None,
    client_id: str = IOS_CLIENT_ID,
    redirect_uri: str = IOS_REDIRECT,
    secret: str | None = None,
) -> str:
    """What a platform SDK hands the app: an ID token the provider issued to *client_id*."""
    verifier = secrets.token_urlsafe(48)
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": "openid profile email",
        "state": "sdk-state",
        "code_challenge": s256(verifier),
        "code_challenge_method": "S256",
    }
    if nonce is not None:
        params["nonce"] = nonce
    location = authorize(idp, f"{idp.issuer}/authorize/?{urlencode(params)}")
    data = {
        "grant_type": "authorization_code",
        "code": query(location)["code"],
        "redirect_uri": redirect_uri,
        "client_id": client_id,
        "code_verifier": verifier,
    }
    auth = (client_id, secret) if secret else None
    response = requests.post(f"{idp.issuer}/token/", data=data, auth=auth, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()["id_token"]
