"""Providers are configuration: their hooks, their environment, and that nothing changes them."""

import pytest

from webauth.conf import build_config
from webauth.errors import OAuthProfileParseError
from webauth.flows import FLOWS, flow_for
from webauth.flows.oauth import _user_data
from webauth.providers import Credentials, DjangoCredentials, Provider
from webauth.providers.catalog.github import GitHub
from webauth.providers.catalog.microsoft_entra_id import MicrosoftEntraID
from webauth.providers.oauth import OIDC, OAuth2


def env_of(**values):
    return values.get


# -- the generic profile mapping --------------------------------------------------------


def test_generic_profile_maps_standard_claims():
    provider = OAuth2(id="corp")
    mapped = provider.profile(
        {"sub": "42", "name": "Ada", "email": "ada@example.com", "picture": "https://i/a.png"}, {}
    )
    assert mapped == {
        "id": "42",
        "name": "Ada",
        "email": "ada@example.com",
        "image": "https://i/a.png",
    }
    assert provider.profile({"id": 7, "nickname": "ad"}, {})["id"] == "7"


@pytest.mark.parametrize("profile", [{}, {"name": "No Id"}, {"sub": ""}, {"id": None}])
def test_generic_profile_without_an_id_is_refused(profile):
    # Auth.js invents a random id here, which creates a new account at every sign-in.
    with pytest.raises(ValueError, match="no account id"):
        OAuth2(id="corp").profile(profile, {})
    with pytest.raises(OAuthProfileParseError):
        _user_data(OAuth2(id="corp"), profile, {})


# -- the environment never changes the configured objects ------------------------------------


def test_building_the_config_leaves_the_settings_providers_alone():
    github = GitHub()
    entra = MicrosoftEntraID()
    before = (dict(vars(github)), dict(vars(entra)))
    env = env_of(
        AUTH_GITHUB_ID="gh-id",
        AUTH_GITHUB_SECRET="gh-secret",
        AUTH_MICROSOFT_ENTRA_ID_ISSUER="https://login.microsoftonline.com/t/v2.0",
    )
    config = build_config({"providers": [github, entra]}, env)
    assert (dict(vars(github)), dict(vars(entra))) == before
    assert github.client_id is None and entra.issuer.endswith("/common/v2.0")
    configured = config.get_provider("github")
    assert configured is not github
    assert (configured.client_id, configured.client_secret) == ("gh-id", "gh-secret")
    assert config.get_provider("microsoft-entra-id").issuer.endswith("/t/v2.0")


def test_a_provider_the_environment_does_not_touch_is_used_as_it_is():
    github = GitHub(client_id="x", client_secret="y")
    assert build_config({"providers": [github]}, env_of()).get_provider("github") is github
    assert github.with_env(env_of(AUTH_GITHUB_ID="other")) is github


def test_the_settings_dict_is_not_changed_by_the_environment():
    raw = {"providers": ["github"]}
    build_config(raw, env_of(AUTH_SECRET="s", AUTH_URL="https://a.example/api/auth"))
    assert raw == {"providers": ["github"]}


def test_credentials_sign_in_keeps_nothing_on_the_provider():
    provider = Credentials(authorize="tests.test_providers.authorize_nobody")
    before = dict(vars(provider))
    assert callable(provider.authorize_function)
    assert dict(vars(provider)) == before


# -- one way to tell kinds apart ---------------------------------------------------------------


def test_the_flow_is_chosen_by_the_provider_type():
    assert flow_for(DjangoCredentials()) is FLOWS["credentials"]
    assert flow_for(GitHub()) is FLOWS["oauth"]
    assert flow_for(OIDC(id="corp")) is FLOWS["oidc"]
    assert FLOWS["credentials"].posts_to_callback and FLOWS["credentials"].callback_needs_csrf
    assert FLOWS["oauth"].start is not None and not FLOWS["oauth"].posts_to_callback


def test_a_type_without_a_flow_has_none():
    class Custom(Provider):
        type = "carrier-pigeon"
        default_id = "pigeon"

    assert flow_for(Custom()) is None


def authorize_nobody(credentials, request):
    return None
