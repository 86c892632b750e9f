"""PKCE, state and nonce cookies (webauth.oauth.checks), without a provider."""

from __future__ import annotations

import pytest
from django.http import HttpResponse

from webauth import jwt as jose
from webauth.conf import build_config
from webauth.cookies import CHECK_MAX_AGE
from webauth.errors import InvalidCheck
from webauth.oauth.checks import clear_checks, decode_state, new_checks, read_check
from webauth.providers.oauth import OIDC
from webauth.state import AuthState

from .support.helpers import tampered

SECRET = "checks-test-secret-0123456789abcdef"
NAMES = {"pkce": "authjs.pkce.code_verifier", "state": "authjs.state", "nonce": "authjs.nonce"}


def make_provider(pid: str = "example", **options) -> OIDC:
    return OIDC(
        id=pid,
        issuer="https://idp.example",
        client_id="c",
        client_secret="s",
        **{"checks": ("pkce", "nonce"), **options},
    )


@pytest.fixture
def config():
    return build_config({"secret": SECRET, "providers": []}, lambda name: None)


@pytest.fixture
def make_state(rf, config):
    requests = []  # AuthState holds its request weakly

    def make(cookies: dict[str, str] | None = None, secure: bool = False) -> AuthState:
        request = rf.get("/auth/callback/example", secure=secure)
        request.COOKIES.update(cookies or {})
        requests.append(request)
        return AuthState(request, config)

    return make


def written(provider, state, checks):
    response = HttpResponse()
    checks.write(state, response, provider)
    return response.cookies


def test_pkce_state_and_nonce_each_get_a_cookie(make_state):
    provider = make_provider()
    checks = new_checks(make_state(), provider)
    assert [key for key, _ in checks.cookies] == ["pkce_code_verifier", "state", "nonce"]
    assert checks.code_verifier and checks.nonce and checks.state
    assert len({checks.code_verifier, checks.nonce}) == 2


def test_only_the_listed_checks_are_made(make_state):
    checks = new_checks(make_state(), make_provider(checks=("state",)))
    assert [key for key, _ in checks.cookies] == ["state"]
    assert checks.code_verifier is None and checks.nonce is None and checks.state


def test_the_state_parameter_is_an_auth_js_encoded_state(make_state, config):
    checks = new_checks(make_state(), make_provider())
    # Auth.js's salt for the state parameter, so its redirect proxy can read ours.
    payload = jose.decode(token=checks.state, secret=SECRET, salt="encodedState")
    assert payload is not None and "origin" not in payload
    assert decode_state(config, checks.state) == payload
    assert decode_state(config, "garbage") is None
    # It expires with the check cookies.
    assert payload["exp"] - payload["iat"] == CHECK_MAX_AGE


def test_the_proxy_origin_travels_in_the_state(make_state, config):
    checks = new_checks(make_state(), make_provider(), proxy_origin="https://preview.example")
    assert decode_state(config, checks.state)["origin"] == "https://preview.example"


def test_a_check_cookie_holds_the_value_and_the_provider(make_state):
    provider = make_provider()
    checks = new_checks(make_state(), provider)
    for key, value in checks.cookies:
        name = make_state().cookies[key].name
        payload = jose.decode(token=value, secret=SECRET, salt=name)
        assert payload["provider"] == "example"
        assert payload["exp"] - payload["iat"] == CHECK_MAX_AGE
        # The salt is the cookie's name: a value does not open under another cookie.
        other = next(n for n in NAMES.values() if n != name)
        assert jose.decode(token=value, secret=SECRET, salt=other) is None
    values = {
        key: jose.decode(token=v, secret=SECRET, salt=make_state().cookies[key].name)["value"]
        for key, v in checks.cookies
    }
    assert values == {
        "pkce_code_verifier": checks.code_verifier,
        "state": checks.state,
        "nonce": checks.nonce,
    }


def test_cookies_are_lax_unless_the_provider_posts_the_callback(make_state):
    provider = make_provider()
    state = make_state()
    cookies = written(provider, state, new_checks(state, provider))
    assert set(cookies) == set(NAMES.values())
    for name, morsel in cookies.items():
        assert morsel["samesite"] == "Lax"
        assert morsel["secure"] == ""  # plain http here
        assert morsel["httponly"] is True
        # As in Auth.js, the nonce cookie has no Max-Age (it gets Expires, below).
        assert morsel["max-age"] == ("" if name == NAMES["nonce"] else str(CHECK_MAX_AGE))
        assert morsel["expires"]


def test_form_post_makes_state_and_nonce_same_site_none_only(make_state):
    provider = make_provider(response_mode="form_post")
    state = make_state()
    cookies = written(provider, state, new_checks(state, provider))
    for name in (NAMES["state"], NAMES["nonce"]):
        assert cookies[name]["samesite"] == "None" and cookies[name]["secure"] is True
    # PKCE's verifier is sent with the token request, not the cross-site POST.
    assert cookies[NAMES["pkce"]]["samesite"] == "Lax"
    assert cookies[NAMES["pkce"]]["secure"] == ""


def test_the_nonce_cookie_expires_too(make_state):
    # Auth.js gives the nonce cookie no Max-Age; webauth bounds it with Expires anyway.
    from datetime import UTC, datetime
    from email.utils import parsedate_to_datetime

    provider = make_provider()
    state = make_state()
    cookies = written(provider, state, new_checks(state, provider))
    expires = parsedate_to_datetime(cookies[NAMES["nonce"]]["expires"])
    left = (expires - datetime.now(UTC)).total_seconds()
    assert CHECK_MAX_AGE - 5 <= left <= CHECK_MAX_AGE + 1


def _cookies_of(provider, state, checks):
    return {name: morsel.value for name, morsel in written(provider, state, checks).items()}


def test_read_check_returns_each_value(make_state):
    provider = make_provider()
    first = make_state()
    checks = new_checks(first, provider)
    state = make_state(_cookies_of(provider, first, checks))
    assert read_check(state, provider, "pkce") == checks.code_verifier
    assert read_check(state, provider, "state") == checks.state
    assert read_check(state, provider, "nonce") == checks.nonce


def test_a_missing_cookie_is_an_invalid_check_that_names_it(make_state):
    with pytest.raises(InvalidCheck) as info:
        read_check(make_state(), make_provider(), "nonce")
    assert "authjs.nonce cookie is missing" in str(info.value)
    assert "15 minutes" in str(info.value)
    with pytest.raises(InvalidCheck):
        read_check(make_state({NAMES["state"]: ""}), make_provider(), "state")


@pytest.mark.parametrize(
    "payload",
    [
        {"value": "", "provider": "example"},
        {"value": 42, "provider": "example"},
        {"provider": "example"},
    ],
)
def test_a_cookie_without_a_usable_value_is_refused(make_state, payload):
    token = jose.encode(token=payload, secret=SECRET, salt=NAMES["state"], max_age=60)
    with pytest.raises(InvalidCheck) as info:
        read_check(make_state({NAMES["state"]: token}), make_provider(), "state")
    assert "could not be read" in str(info.value)


def test_a_tampered_or_foreign_cookie_is_refused(make_state):
    provider = make_provider()
    first = make_state()
    cookies = _cookies_of(provider, first, new_checks(first, provider))
    good = cookies[NAMES["nonce"]]
    for bad in (
        tampered(good),
        "x",
        jose.encode(
            token={"value": "v", "provider": "example"},
            secret="another-secret-0123456789",
            salt=NAMES["nonce"],
        ),
    ):
        with pytest.raises(InvalidCheck):
            read_check(make_state({NAMES["nonce"]: bad}), provider, "nonce")
    # A value made for the state cookie does not open as the nonce cookie.
    with pytest.raises(InvalidCheck):
        read_check(make_state({NAMES["nonce"]: cookies[NAMES["state"]]}), provider, "nonce")


def test_a_cookie_made_for_another_provider_is_refused(make_state):
    other = make_provider("other")
    first = make_state()
    cookies = _cookies_of(other, first, new_checks(first, other))
    with pytest.raises(InvalidCheck) as info:
        read_check(make_state(cookies), make_provider(), "state")
    assert "made for provider 'other'" in str(info.value)


def test_an_encoded_cookie_value_is_decoded(make_state):
    provider = make_provider()
    first = make_state()
    checks = new_checks(first, provider)
    cookies = _cookies_of(provider, first, checks)
    value = cookies[NAMES["state"]]
    encoded = value.replace(".", "%2E")  # what some clients send back
    assert read_check(make_state({NAMES["state"]: encoded}), provider, "state") == checks.state


def test_secure_requests_use_the_secure_names(make_state):
    provider = make_provider()
    state = make_state(secure=True)
    cookies = written(provider, state, new_checks(state, provider))
    assert set(cookies) == {"__Secure-" + name for name in NAMES.values()}
    assert all(m["secure"] is True for m in cookies.values())


def test_clear_checks_deletes_only_the_cookies_sent(make_state):
    state = make_state({NAMES["state"]: "x", NAMES["nonce"]: "y", "authjs.session-token": "z"})
    response = HttpResponse()
    clear_checks(state, response)
    assert set(response.cookies) == {NAMES["state"], NAMES["nonce"]}
    assert all(m["max-age"] == "0" and m.value == "" for m in response.cookies.values())
    response = HttpResponse()
    clear_checks(make_state({NAMES["pkce"]: "x"}), response)
    assert set(response.cookies) == {NAMES["pkce"]}


def test_each_value_is_256_random_bits(make_state, config):
    # token_urlsafe(32): 32 random bytes, 43 base64url characters (PKCE allows 43 to 128).
    checks = new_checks(make_state(), make_provider())
    assert len(checks.code_verifier) == 43 and len(checks.nonce) == 43
    assert len(decode_state(config, checks.state)["random"]) == 43


def test_the_message_of_a_missing_cookie_lists_the_causes(make_state):
    with pytest.raises(InvalidCheck) as info:
        read_check(make_state(), make_provider(), "state")
    text = str(info.value)
    assert "cookie is missing: the callback URL was opened again after the sign-in" in text
    assert "or the cookie was blocked or dropped by the browser" in text
    assert info.value.user_caused  # the state: a stale or forged callback, a warning
