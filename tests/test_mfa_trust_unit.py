"""webauth.mfa.trust piece by piece: when it is offered, what the cookie and the row hold,
and each cookie it refuses (only a forged one, made with the secret, can carry these)."""

from __future__ import annotations

from http.cookies import SimpleCookie

import pytest
from django.contrib.auth import get_user_model
from django.http import HttpResponse
from django.test import RequestFactory

from webauth import jwt as jose
from webauth.adapters.django import DjangoAdapter
from webauth.conf import get_config
from webauth.mfa import trust
from webauth.models import TrustedBrowser
from webauth.state import get_state

from .support.mfa import PASSWORD, SECRET, mfa_settings, person

NAME = "authjs.mfa-trusted"


@pytest.fixture
def site(settings):
    settings.WEBAUTH = mfa_settings(mfa={"enabled": True, "trust_days": 30})
    return settings


@pytest.fixture
def ada(db, site):
    return person("ada")


#: The requests of the states made here (an AuthState holds its request weakly).
_requests: list[object] = []


def state_for(cookie: str | None = None, **meta):
    request = RequestFactory().get("/", **meta)
    if cookie is not None:
        request.COOKIES[NAME] = cookie
    _requests.append(request)
    return get_state(request)


def remembered(user, user_id, **meta) -> tuple[str, SimpleCookie]:
    response = HttpResponse()
    trust.remember(state_for(**meta), response, user, str(user_id))
    return response.cookies[NAME].value, response.cookies


def forged(payload) -> str:
    return jose.encode(token=payload, secret=[SECRET], salt=NAME, max_age=3600)


class NoTrustedBrowsers(DjangoAdapter):
    use_trusted_browser = None


def test_trust_is_offered_only_with_trust_days_and_an_adapter_that_keeps_it(site):
    assert trust.offered(get_config())
    site.WEBAUTH = mfa_settings(mfa={"enabled": True, "trust_days": 1})
    assert trust.offered(get_config())
    site.WEBAUTH = mfa_settings(mfa={"enabled": True})
    assert not trust.offered(get_config())  # trust_days 0
    site.WEBAUTH = mfa_settings(
        mfa={"enabled": True, "trust_days": 30}, adapter=NoTrustedBrowsers()
    )
    assert not trust.offered(get_config())
    no_adapter = {k: v for k, v in mfa_settings().items() if k != "adapter"}
    site.WEBAUTH = {**no_adapter, "mfa": {"enabled": True, "trust_days": 30}}
    assert not trust.offered(get_config())


def test_the_row_keeps_the_browser_and_the_cookie_lives_trust_days(ada):
    value, cookies = remembered(ada, ada.pk, HTTP_USER_AGENT="A" * 600)
    assert cookies[NAME]["max-age"] == str(30 * 86400)
    row = TrustedBrowser.objects.get(user=ada)
    assert row.user_agent == "A" * 512
    assert trust.trusted(state_for(value), ada, str(ada.pk))
    remembered(ada, ada.pk)  # no User-Agent at all
    assert TrustedBrowser.objects.filter(user=ada, user_agent="").exists()


def test_a_user_without_a_session_auth_hash_is_trusted_on_an_empty_one(ada):
    # Not a Django user (an adapter's own user object): no password to bind to.
    stranger = object()
    value, _ = remembered(stranger, ada.pk)
    assert trust.trusted(state_for(value), stranger, str(ada.pk))
    # A Django user's cookie does not pass for a user without a hash, nor the reverse.
    mine, _ = remembered(ada, ada.pk)
    assert not trust.trusted(state_for(mine), stranger, str(ada.pk))
    assert not trust.trusted(state_for(value), ada, str(ada.pk))


def test_a_cookie_is_not_trusted_once_trust_is_no_longer_offered(ada, site):
    value, _ = remembered(ada, ada.pk)
    site.WEBAUTH = mfa_settings(mfa={"enabled": True})
    assert not trust.trusted(state_for(value), ada, str(ada.pk))


@pytest.mark.parametrize(
    "payload",
    [
        {"token": 5},  # the right password's hash, a token that is not text
        {"token": 5, "hash": ""},
        {"token": "t" * 43, "hash": 5},
        {"token": None, "hash": None},
        {"hash": ""},
    ],
)
def test_a_cookie_whose_parts_are_not_text_is_refused(ada, payload):
    from webauth.sessions.binding import session_auth_hash

    # Bound to Ada's password as a real cookie is, so only the part's type is wrong.
    payload = {"hash": session_auth_hash(ada), **payload}
    value = forged({"sub": str(ada.pk), **payload})
    assert trust.trusted(state_for(value), ada, str(ada.pk)) is False


def test_another_users_cookie_is_refused(ada):
    bob = get_user_model().objects.create_user("bob", "bob@example.com", PASSWORD)
    value, _ = remembered(ada, ada.pk)
    assert not trust.trusted(state_for(value), bob, str(bob.pk))
    assert trust.trusted(state_for(value), ada, str(ada.pk))


def test_the_trust_token_lives_trust_days(ada):
    value, _ = remembered(ada, ada.pk)
    claims = jose.decode(token=value, secret=[SECRET], salt=NAME)
    assert claims is not None and claims["exp"] - claims["iat"] == 30 * 86400


def test_the_user_agent_is_cut_to_512_characters_before_the_adapter_sees_it(site, db):
    from webauth.testing.memory import MemoryAdapter

    memory = MemoryAdapter()
    site.WEBAUTH = mfa_settings(
        adapter=memory, session={"strategy": "jwt"}, mfa={"enabled": True, "trust_days": 30}
    )
    trust.remember(state_for(HTTP_USER_AGENT="B" * 600), HttpResponse(), object(), "u1")
    [stored] = memory.trusted_browsers.values()
    assert stored.user_agent == "B" * 512
