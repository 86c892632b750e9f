"""OpenID Connect sign-in end to end against a real provider over HTTP."""

import re
from urllib.parse import urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.cache import cache
from jwcrypto import jwk

from webauth import jwt as jose
from webauth.models import Account
from webauth.providers.oauth import OIDC

from .support.keys import rsa_key_pem
from .support.oidc_helpers import (
    CLIENT_ID,
    CLIENT_SECRET,
    authorize,
    begin,
    callback,
    plain_oauth2,
    query,
    sign_in,
    start_idp,
)
from .support.views import FORGED_JWKS

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def idp(live_server):
    cache.clear()
    return start_idp(live_server)


@pytest.fixture
def rp(settings, idp):
    """webauth configured with the provider (database adapter, JWT sessions)."""

    def configure(**options):
        provider = OIDC(
            id="example",
            name="Example IdP",
            issuer=idp.issuer,
            **{
                "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET,
                "checks": ("pkce", "nonce"),
                **options,
            },
        )
        settings.WEBAUTH = {
            **settings.WEBAUTH,
            "providers": ["webauth.providers.DjangoCredentials", provider],
            "adapter": "webauth.adapters.django.DjangoAdapter",
            "session": {"strategy": "jwt"},
        }
        return provider

    configure()
    return configure


def session_claims(response):
    value = response.cookies["authjs.session-token"].value
    return jose.decode(token=value, secret=SECRET, salt="authjs.session-token")


def test_first_sign_in_creates_user_and_account(client, idp, rp):
    response = sign_in(client, idp)
    assert response.status_code == 302, response.get("Location")
    assert response["Location"] == "http://testserver/after/"
    account = Account.objects.get(provider="example")
    assert account.provider_account_id == str(idp.user.pk)
    assert account.type == "oidc" and account.token_type == "bearer"
    assert account.access_token and account.id_token and account.expires_at
    user = account.user
    assert user.email == "ida@idp.example" and user.first_name == "Ida"
    claims = session_claims(response)
    assert claims["sub"] == str(user.pk) and claims["email"] == "ida@idp.example"
    # check cookies are cleared
    for name in ("authjs.state", "authjs.pkce.code_verifier", "authjs.nonce"):
        assert response.cookies[name]["max-age"] == "0"


def test_returning_user_signs_in_and_tokens_are_updated(client, client_factory, idp, rp):
    sign_in(client, idp)
    account = Account.objects.get(provider="example")
    first_token = account.access_token
    users = get_user_model().objects.count()
    again = client_factory()
    response = sign_in(again, idp)
    assert response["Location"] == "http://testserver/after/"
    account.refresh_from_db()
    assert account.access_token != first_token  # Auth.js would keep the stale one
    assert get_user_model().objects.count() == users
    assert session_claims(response)["sub"] == str(account.user_id)


def test_events_of_a_first_sign_in(client, idp, rp, settings):
    seen = []
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "events": {
            name: (lambda name: lambda **m: seen.append((name, m)))(name)
            for name in ("create_user", "link_account", "sign_in")
        },
    }
    sign_in(client, idp)
    assert [name for name, _ in seen] == ["create_user", "link_account", "sign_in"]
    assert seen[2][1]["is_new_user"] is True
    assert seen[2][1]["profile"]["email"] == "ida@idp.example"


def test_a_new_user_goes_to_pages_new_user_once(client, client_factory, idp, rp, settings):
    settings.WEBAUTH = {**settings.WEBAUTH, "pages": {"new_user": "/welcome/"}}
    response = sign_in(client, idp)
    # As Auth.js: the configured path as it is, with where to go next.
    assert response["Location"] == "/welcome/?callbackUrl=http%3A%2F%2Ftestserver%2Fafter%2F"
    assert session_claims(response)["sub"]
    assert sign_in(client_factory(), idp)["Location"] == "http://testserver/after/"


def test_database_strategy(client, idp, rp, settings):
    from webauth.models import Session

    settings.WEBAUTH = {**settings.WEBAUTH, "session": {"strategy": "database"}}
    response = sign_in(client, idp)
    session = Session.objects.get()
    assert session.user.email == "ida@idp.example"
    assert client.get("/whoami/").json()["authenticated"] is True
    assert response.cookies["authjs.session-token"].value.count(".") == 0


def test_user_cancelling_at_the_provider(client, live_server, settings):
    cache.clear()
    idp = start_idp(live_server, skip_authorization=False)
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [
            OIDC(id="example", issuer=idp.issuer, client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
        ],
        "adapter": "webauth.adapters.django.DjangoAdapter",
    }
    url = begin(client)
    page = idp.browser.get(url, timeout=10)
    assert page.status_code == 200 and "allow" in page.text
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.text))
    fields["csrfmiddlewaretoken"] = re.search(
        r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text
    ).group(1)
    denied = idp.browser.post(
        page.url, data=fields, headers={"Referer": page.url}, allow_redirects=False, timeout=10
    )
    assert denied.status_code == 302 and "error=access_denied" in denied.headers["Location"]
    response = callback(client, denied.headers["Location"])
    assert response["Location"] == "http://testserver/auth/signin?error=OAuthCallbackError"
    assert not Account.objects.exists()


def test_state_mismatch(client, idp, rp, caplog):
    location = authorize(idp, begin(client))
    tampered = re.sub(r"state=[^&]+", "state=forged", location)
    response = callback(client, tampered)
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"
    assert "does not match the state cookie" in caplog.text
    assert not Account.objects.exists()


def test_missing_check_cookie_names_the_cookie_and_causes(client, idp, rp, caplog):
    location = authorize(idp, begin(client))
    del client.cookies["authjs.pkce.code_verifier"]
    response = callback(client, location)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "InvalidCheck" in caplog.text
    assert "authjs.pkce.code_verifier cookie is missing" in caplog.text
    assert "ALLOWED_HOSTS" in caplog.text


def _check_cookies_of_another_flow(client_factory, idp):
    other = client_factory()
    begin(other)
    return other.cookies


def test_pkce_mismatch_is_refused_by_the_provider(client, client_factory, idp, rp, caplog):
    location = authorize(idp, begin(client))
    other = _check_cookies_of_another_flow(client_factory, idp)
    client.cookies["authjs.pkce.code_verifier"] = other["authjs.pkce.code_verifier"].value
    response = callback(client, location)
    # The provider answers invalid_grant: as for a spent code, the visitor starts again.
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"
    assert "token request" in caplog.text
    assert not Account.objects.exists()


def test_nonce_mismatch(client, client_factory, idp, rp, caplog):
    location = authorize(idp, begin(client))
    other = _check_cookies_of_another_flow(client_factory, idp)
    client.cookies["authjs.nonce"] = other["authjs.nonce"].value
    response = callback(client, location)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "nonce does not match" in caplog.text
    assert not Account.objects.exists()


def test_check_cookie_of_another_provider_is_refused(client, idp, rp, settings, caplog):
    from webauth import jwt as jose

    location = authorize(idp, begin(client))
    forged = jose.encode(
        token={"value": "x", "provider": "github"}, secret=SECRET, salt="authjs.state", max_age=900
    )
    client.cookies["authjs.state"] = forged
    response = callback(client, location)
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"
    assert "made for provider 'github'" in caplog.text


def test_replayed_code_is_refused(client, idp, rp, caplog):
    location = authorize(idp, begin(client))
    saved = {k: v.value for k, v in client.cookies.items()}
    assert callback(client, location)["Location"] == "http://testserver/after/"
    for name, value in saved.items():
        client.cookies[name] = value
    accounts = Account.objects.count()
    response = callback(client, location)
    assert response["Location"] == "http://testserver/auth/error?error=SignInExpired"
    assert "token request" in caplog.text
    assert Account.objects.count() == accounts


def test_wrong_issuer_in_the_id_token(client, idp, rp, settings, caplog):
    rp(
        authorization_endpoint=f"{idp.issuer}/authorize/",
        token_endpoint=f"{idp.issuer}/token/",
        jwks_uri=f"{idp.issuer}/.well-known/jwks.json",
    )
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OIDC_ISS_ENDPOINT": "http://evil.example/idp",
    }
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "unexpected ID token issuer 'http://evil.example/idp'" in caplog.text
    assert not Account.objects.exists()


def test_iss_parameter_mix_up_is_refused(client, idp, rp, caplog):
    location = authorize(idp, begin(client)) + "&iss=https%3A%2F%2Fother.example"
    response = callback(client, location)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "mix-up" in caplog.text


def test_expired_id_token(client, idp, rp, settings, caplog):
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "ID_TOKEN_EXPIRE_SECONDS": -600}
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "the ID token has expired" in caplog.text
    assert not Account.objects.exists()


def test_bad_signature(client, idp, rp, caplog, live_server):
    real = requests.get(f"{idp.issuer}/.well-known/jwks.json", timeout=10).json()
    kid = real["keys"][0]["kid"]
    forged = jwk.JWK.from_pem(rsa_key_pem("forger").encode())
    FORGED_JWKS["keys"] = [{**forged.export_public(as_dict=True), "kid": kid, "alg": "RS256"}]
    rp(jwks_uri=f"{live_server.url}/forged-jwks/")
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert "no key of the issuer verifies the ID token" in caplog.text
    assert not Account.objects.exists()


def test_jwks_key_rotation(client, client_factory, idp, rp, settings):
    sign_in(client, idp)  # caches the JWKS with key "a"
    settings.OAUTH2_PROVIDER = {
        **settings.OAUTH2_PROVIDER,
        "OIDC_RSA_PRIVATE_KEY": rsa_key_pem("b"),
        "OIDC_RSA_PRIVATE_KEYS_INACTIVE": [rsa_key_pem("a")],
    }
    response = sign_in(client_factory(), idp)
    assert response["Location"] == "http://testserver/after/"
    assert Account.objects.count() == 1


def test_userinfo_instead_of_id_token(client, idp, rp):
    rp(id_token=False)
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/after/"
    assert Account.objects.get().user.email == "ida@idp.example"


def test_plain_oauth2_provider_with_explicit_endpoints(client, idp, settings):

    provider = plain_oauth2(
        idp, name="Example OAuth", scope="openid", client_auth_method="client_secret_post"
    )
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [provider],
        "adapter": "webauth.adapters.django.DjangoAdapter",
    }
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/after/"
    account = Account.objects.get()
    assert account.type == "oauth" and account.provider_account_id == str(idp.user.pk)


def test_wrong_client_secret(client, idp, rp, caplog):
    rp(client_secret="not-the-secret")
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/auth/error?error=Configuration"
    assert not Account.objects.exists()


def test_form_post_callback(client, idp, rp):
    rp(response_mode="form_post")
    url = begin(client)
    state_cookie = client.cookies["authjs.state"]
    assert state_cookie["samesite"] == "None" and state_cookie["secure"]
    location = authorize(idp, url)
    response = callback(client, location, method="post")
    assert response["Location"] == "http://testserver/after/"
    assert Account.objects.exists()


def test_email_of_an_existing_user_is_not_linked(client, idp, rp):
    get_user_model().objects.create_user("other", email="ida@idp.example")
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/auth/signin?error=OAuthAccountNotLinked"
    assert not Account.objects.exists()


def test_dangerous_email_linking_links_to_the_existing_user(client, idp, rp):
    existing = get_user_model().objects.create_user("other", email="ida@idp.example")
    rp(allow_dangerous_email_account_linking=True)
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/after/"
    assert Account.objects.get().user == existing


def test_dangerous_email_linking_proves_an_unproven_address(client, idp, rp):
    # A stranger registered a passkey under the address (issue 12); the provider
    # vouches for it, so the stranger's passkey and account go, the new one stays.
    from webauth.adapters.django import DjangoAdapter
    from webauth.models import Authenticator, UnprovenEmail
    from webauth.types import AdapterAccount, AdapterAuthenticator

    existing = get_user_model().objects.create_user("made-by-passkey", email="ida@idp.example")
    adapter = DjangoAdapter()
    adapter.create_authenticator(
        AdapterAuthenticator(
            credential_id="cred-1",
            user_id=str(existing.pk),
            provider_account_id="cred-1",
            credential_public_key="pQECAyYgASFYIA",
            counter=0,
            credential_backed_up=False,
            credential_device_type="singleDevice",
        )
    )
    adapter.link_account(
        AdapterAccount(
            user_id=str(existing.pk),
            type="webauthn",
            provider="passkey",
            provider_account_id="cred-1",
        )
    )
    adapter.mark_email_unproven(str(existing.pk))
    rp(allow_dangerous_email_account_linking=True)
    assert sign_in(client, idp)["Location"] == "http://testserver/after/"
    assert list(Account.objects.values_list("user", "type")) == [(existing.pk, "oidc")]
    assert not Authenticator.objects.exists() and not UnprovenEmail.objects.exists()


def test_signed_in_user_links_a_new_provider(client, idp, rp):
    from webauth.test import force_sign_in

    bob = get_user_model().objects.create_user("bob", email="bob@example.com")
    force_sign_in(client, bob)
    sign_in(client, idp)
    assert Account.objects.get().user == bob


def test_account_of_another_user_is_refused_while_signed_in(client, client_factory, idp, rp):
    from webauth.test import force_sign_in

    sign_in(client_factory(), idp)  # the account now belongs to a new user
    bob = get_user_model().objects.create_user("bob", email="bob@example.com")
    force_sign_in(client, bob)
    response = sign_in(client, idp)
    assert response["Location"] == "http://testserver/auth/signin?error=OAuthAccountNotLinked"
    assert Account.objects.get().user != bob


@pytest.mark.parametrize("per_provider", [False, True])
def test_redirect_proxy(client, live_server, settings, per_provider):
    cache.clear()
    proxy_callback = "http://proxy.example/auth/callback/example"
    idp = start_idp(live_server, redirect_uri=proxy_callback)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "proxy.example"]
    proxy = "http://proxy.example/auth"
    provider = OIDC(
        id="example",
        issuer=idp.issuer,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        redirect_proxy_url=proxy if per_provider else None,
    )
    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [provider],
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "redirect_proxy_url": None if per_provider else proxy,
    }
    url = begin(client)
    assert query(url)["redirect_uri"] == proxy_callback
    location = authorize(idp, url)
    assert location.startswith(proxy_callback)
    parts = urlsplit(location)
    # The test client keeps one cookie jar for every host; a browser would not
    # send testserver's cookies to the proxy, nor let the proxy's replace them.
    saved = {k: v.value for k, v in client.cookies.items()}
    hop = client.get(f"{parts.path}?{parts.query}", HTTP_HOST="proxy.example")
    for name, value in saved.items():
        client.cookies[name] = value
    assert hop.status_code == 302
    assert hop["Location"].startswith("http://testserver/auth/callback/example?")
    response = callback(client, hop["Location"])
    assert response["Location"] == "http://testserver/after/"
    assert Account.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/auth/callback/example",
        "/auth/callback/example?code=abc",
        "/auth/callback/example?code=abc&state=garbage",
        "/auth/callback/example?error=" + "x" * 20000,
        "/auth/callback/example?code=" + "%FF" * 100 + "&state=%00",
        "/auth/callback/example?state=a&state=b&code=1&code=2",
        "/auth/callback/unknown?code=abc",
        "/auth/signin/example",
    ],
)
def test_hostile_callbacks_never_500(client, idp, rp, path):
    response = client.get(path)
    assert response.status_code in (302, 400), response.status_code
    assert not get_user_model().objects.exclude(pk=idp.user.pk).exists()


def test_wrong_methods(client, idp, rp):
    assert client.put("/auth/callback/example").status_code == 400
    assert client.delete("/auth/signin/example").status_code == 400
    response = client.post("/auth/signin/example", {"csrfToken": "wrong"})
    assert response["Location"] == "http://testserver/auth/signin?error=MissingCSRF"
