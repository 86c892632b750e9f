"""Client authentication methods, the http_client option and discovery caching."""

import pytest
import requests
from django.core.cache import cache
from requests.adapters import HTTPAdapter

from webauth.models import Account, Session
from webauth.providers.oauth import OIDC, OAuth2

from .support.helpers import csrf_pair
from .support.keys import rsa_key_pem
from .support.oidc_helpers import (
    CLIENT_ID,
    CLIENT_SECRET,
    begin,
    callback,
    query,
    sign_in,
    start_idp,
)
from .support.views import TOKEN_REQUESTS

pytestmark = pytest.mark.django_db(transaction=True)
ADAPTER = "webauth.adapters.django.DjangoAdapter"


class CountingAdapter(HTTPAdapter):
    """A real transport that records every URL it sends."""

    sent: list[str] = []

    def send(self, request, **kwargs):
        CountingAdapter.sent.append(f"{request.method} {request.url}")
        return super().send(request, **kwargs)


def counting_session():
    session = requests.Session()
    session.mount("http://", CountingAdapter())
    return session


def test_http_client_carries_every_provider_request_and_discovery_is_cached(
    client_factory, live_server, settings
):
    cache.clear()
    CountingAdapter.sent = []
    idp = start_idp(live_server)
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": ADAPTER,
        "http_client": "tests.test_oauth_client.counting_session",
        "providers": [
            OIDC(id="example", issuer=idp.issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        ],
    }
    assert sign_in(client_factory(), idp)["Location"] == "http://testserver/after/"
    first = list(CountingAdapter.sent)
    assert any("/.well-known/openid-configuration" in url for url in first)
    assert any(url.startswith("POST") and url.endswith("/idp/token/") for url in first)
    assert any("/.well-known/jwks.json" in url for url in first)
    CountingAdapter.sent = []
    assert sign_in(client_factory(), idp)["Location"] == "http://testserver/after/"
    assert [url for url in CountingAdapter.sent if "well-known" in url] == []  # cached
    assert any(url.endswith("/idp/token/") for url in CountingAdapter.sent)


def test_public_client_with_client_auth_none(client, live_server, settings):
    cache.clear()
    idp = start_idp(live_server)
    idp.application.client_type = "public"
    idp.application.save()
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": ADAPTER,
        "providers": [
            OIDC(id="example", issuer=idp.issuer, client_id=CLIENT_ID, client_auth_method="none")
        ],
    }
    assert sign_in(client, idp)["Location"] == "http://testserver/after/"
    assert Account.objects.exists()


def test_private_key_jwt_client_authentication(client, live_server, settings):
    TOKEN_REQUESTS.clear()
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": ADAPTER,
        "providers": [
            OAuth2(
                id="pk",
                name="Private key",
                authorization_endpoint="https://idp.invalid/authorize",
                token_endpoint=f"{live_server.url}/fake-token/",
                userinfo_endpoint=f"{live_server.url}/fake-userinfo/",
                client_id="pk-client",
                client_auth_method="private_key_jwt",
                private_key=rsa_key_pem("client"),
            )
        ],
    }
    url = begin(client, provider="pk")
    state = query(url)["state"]
    response = callback(client, f"http://testserver/auth/callback/pk?code=the-code&state={state}")
    assert response["Location"] == "http://testserver/after/"
    (sent,) = TOKEN_REQUESTS
    assert sent["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    assert "client_secret" not in sent and sent["code"] == "the-code"
    account = Account.objects.get(provider="pk")
    assert account.provider_account_id == "pk-user-1" and account.user.email == "pk@example.com"


@pytest.mark.django_db
def test_generate_session_token_is_used_for_database_sessions(client, settings):
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("gen", password="gen-password-1")
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "adapter": ADAPTER,
        "session": {"generate_session_token": lambda: "custom-session-token-0001"},
    }
    token = csrf_pair(client)
    response = client.post(
        "/auth/callback/credentials",
        {"csrfToken": token, "username": "gen", "password": "gen-password-1"},
    )
    assert response.cookies["authjs.session-token"].value == "custom-session-token-0001"
    assert Session.objects.count() == 1
