"""The second-factor step's edges: who is asked, what an app is told, a request without a hold.

``SecondFactorStep.needed`` decides for every sign-in whether to hold it; it
must say no (and not fail) wherever nobody can have a second factor: a user
without an id, no adapter, an adapter without the second factor's methods.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from webauth.adapters.django import DjangoAdapter
from webauth.conf import get_config
from webauth.flows.outcomes import SignedIn
from webauth.mfa import factors, keys
from webauth.mfa.step import SECOND_FACTOR, methods_of

from .support.helpers import csrf_pair, query
from .support.mfa import PASSWORD, add_key, mfa_settings, person


class NoChallenges(DjangoAdapter):
    create_webauthn_challenge = None
    use_webauthn_challenge = None


class NoSecondFactor(DjangoAdapter):
    list_second_factors = None


@pytest.fixture
def ada(db):
    return person("ada")


def needed(user_dict, user=None) -> bool:
    state = SimpleNamespace(config=get_config())
    signed_in = SignedIn(user=user, user_dict=user_dict, account=None)
    return SECOND_FACTOR.needed(state, signed_in)  # type: ignore[arg-type]


def test_nobody_is_held_without_an_id_an_adapter_or_its_methods(settings, ada):
    settings.WEBAUTH = mfa_settings(mfa={"enabled": True, "required": "all"})
    assert needed({"id": str(ada.pk)}, ada) is True  # required, and no key yet
    assert needed({}, ada) is False  # a user without an id cannot be held
    settings.WEBAUTH = mfa_settings(
        mfa={"enabled": True, "required": "all"}, adapter=NoSecondFactor()
    )
    assert needed({"id": str(ada.pk)}, ada) is False
    no_adapter = {k: v for k, v in mfa_settings().items() if k != "adapter"}
    settings.WEBAUTH = {**no_adapter, "mfa": {"enabled": True, "required": "all"}}
    assert needed({"id": str(ada.pk)}, ada) is False


def test_the_methods_named_to_an_app_are_the_ones_that_can_work(settings, ada):
    settings.WEBAUTH = mfa_settings()
    config = get_config()
    assert methods_of(config, str(ada.pk)) == ["totp"]  # none yet: an app's key to add
    add_key(ada)
    import json as _json

    from webauth.types import SecondFactor

    storage = factors.storage_of(config)
    sealed = factors.seal(config, _json.dumps({"id": "aWQ", "key": "a2V5"}))
    key = storage.create_second_factor(
        SecondFactor(id="", user_id=str(ada.pk), kind=keys.KIND, secret=sealed)
    )
    storage.confirm_second_factor(str(ada.pk), key.id, 0)
    assert methods_of(config, str(ada.pk)) == ["totp", "webauthn", "recovery_code"]
    # An adapter that cannot keep a key's challenges: the key is not offered.
    settings.WEBAUTH = mfa_settings(adapter=NoChallenges())
    assert methods_of(get_config(), str(ada.pk)) == ["totp", "recovery_code"]


@pytest.mark.parametrize(
    ("email", "first", "label"),
    [("ada@example.com", "Ada", "ada@example.com"), ("", "Ada", "Ada"), ("", "", "ada")],
)
def test_an_apps_key_to_add_is_labelled_with_the_address_else_the_name(
    settings, db, email, first, label
):
    settings.WEBAUTH = mfa_settings(bearer=True, mfa={"enabled": True, "required": "all"})
    user = get_user_model().objects.create_user("ada", email, PASSWORD, first_name=first)
    answer = Client().post(
        "/auth/app/signin/credentials",
        json.dumps({"username": "ada", "password": PASSWORD}),
        content_type="application/json",
    )
    uri = answer.json()["enrolment"]["uri"]
    # The name is the full name, else the username (webauth.utils.user_to_dict).
    assert f"totp/testserver:{quote(label)}?" in uri
    assert user.pk


@pytest.mark.parametrize("method", ["get", "post"])
def test_the_second_factor_page_without_a_held_sign_in_starts_again(settings, db, method):
    settings.WEBAUTH = mfa_settings()
    client = Client()
    data = {"csrfToken": csrf_pair(client), "code": "123456"} if method == "post" else None
    answer = getattr(client, method)("/auth/mfa", data)
    assert answer.status_code == 302
    assert query(answer["Location"])["error"] == "SecondFactorExpired"
