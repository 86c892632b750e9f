"""The built-in provider catalog: registry, defaults, icons, env, profile mappings, quirks.

Each provider's mapping is checked against a recorded response of the shape the
real service returns (``tests/data/provider_profiles/<id>.json``: the userinfo
body or the ID-token claims, with made-up values). The provider-specific HTTP
calls go through a real ``requests.Session`` whose transport answers from
recorded responses, so the URLs, methods and headers sent are checked too.
"""

import copy
import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
import requests
from requests.adapters import BaseAdapter

import webauth
from webauth.providers.catalog import CATALOG, provider_class
from webauth.providers.catalog.apple import Apple
from webauth.providers.catalog.discord import Discord
from webauth.providers.catalog.dropbox import Dropbox
from webauth.providers.catalog.github import GitHub
from webauth.providers.catalog.gitlab import GitLab
from webauth.providers.catalog.microsoft_entra_id import MicrosoftEntraID
from webauth.providers.catalog.notion import Notion
from webauth.providers.catalog.reddit import Reddit
from webauth.providers.catalog.salesforce import Salesforce
from webauth.providers.catalog.twitch import Twitch
from webauth.providers.oauth import OIDC, OAuth2

DATA = Path(__file__).parent / "data" / "provider_profiles"
STATIC = Path(webauth.__file__).parent / "static"
IDS = sorted(CATALOG)
TOKENS = {"access_token": "recorded-access-token", "token_type": "bearer", "expires_in": 3600}


def recorded(name):
    return json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))


def env_prefix(provider_id):
    return "AUTH_" + provider_id.upper().replace("-", "_")


class RecordedAPI(BaseAdapter):
    """A ``requests`` transport that answers from recorded responses and keeps what was sent."""

    def __init__(self, routes):
        super().__init__()
        self.routes = routes
        self.sent = []

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        self.sent.append(request)
        status, body = self.routes.get(
            (request.method, request.url), (404, {"message": "Not Found"})
        )
        response = requests.Response()
        response.status_code = status
        response._content = json.dumps(body).encode()
        response.headers["Content-Type"] = "application/json; charset=utf-8"
        response.encoding = "utf-8"
        response.url = request.url
        response.request = request
        return response

    def close(self):
        pass


@pytest.fixture
def api():
    """``api(routes) -> (session, transport)``; routes: ``(method, url) -> (status, json)``."""
    sessions = []

    def make(routes):
        transport = RecordedAPI(routes)
        session = requests.Session()
        session.mount("https://", transport)
        session.mount("http://", transport)
        sessions.append(session)
        return session, transport

    yield make
    for session in sessions:
        session.close()


# -- the registry ----------------------------------------------------------------


def test_catalog_has_at_least_31_providers():
    assert len(CATALOG) >= 31
    for required in (
        "google", "github", "apple", "microsoft-entra-id", "facebook", "discord", "twitter",
        "linkedin", "gitlab", "slack", "auth0", "okta", "keycloak", "cognito", "zitadel",
        "authentik", "twitch", "spotify", "reddit", "dropbox", "bitbucket", "atlassian", "zoom",
        "notion", "salesforce", "patreon", "strava", "line", "kakao", "naver", "yandex",
    ):  # fmt: skip
        assert required in CATALOG


@pytest.mark.parametrize("provider_id", IDS)
def test_entry_imports_and_matches_its_id(provider_id):
    cls = provider_class(provider_id)
    assert issubclass(cls, OAuth2)
    assert cls.default_id == provider_id
    assert cls.default_name
    assert CATALOG[provider_id].endswith(f".{cls.__name__}")
    provider = cls()
    assert provider.id == provider_id
    assert provider.name == cls.default_name
    assert provider.type in ("oauth", "oidc")
    assert (provider.type == "oidc") == isinstance(provider, OIDC)


def test_ids_classes_and_modules_are_unique():
    classes = [provider_class(provider_id) for provider_id in IDS]
    assert len({cls.default_id for cls in classes}) == len(classes)
    assert len({cls.__name__ for cls in classes}) == len(classes)
    assert len({cls.__module__ for cls in classes}) == len(classes)


def test_unknown_id_raises_key_error():
    with pytest.raises(KeyError, match="no built-in provider has the id 'nope'"):
        provider_class("nope")


def test_classes_importable_by_name():
    from webauth.providers.catalog import GitHub as ByName
    from webauth.providers.catalog import MicrosoftEntraID as Entra

    assert ByName is GitHub
    assert Entra is MicrosoftEntraID
    with pytest.raises(ImportError):
        from webauth.providers.catalog import NoSuchProvider  # noqa: F401


def test_importing_the_catalog_imports_no_provider_module():
    code = (
        "import sys, webauth.providers.catalog as c\n"
        "loaded = [m for m in sys.modules if m.startswith('webauth.providers.catalog.')]\n"
        "assert not loaded, loaded\n"
        "c.provider_class('github')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('webauth.providers.catalog.'))\n"
        "assert loaded == ['webauth.providers.catalog._base', "
        "'webauth.providers.catalog.github'], loaded\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


# -- defaults every provider must satisfy ----------------------------------------------


@pytest.mark.parametrize("provider_id", IDS)
def test_icon_is_our_own_small_valid_svg(provider_id):
    cls = provider_class(provider_id)
    assert cls.style["logo"] == f"webauth/providers/{provider_id}.svg"
    assert cls.style["bg"].startswith("#")
    assert cls.style["text"].startswith("#")
    path = STATIC / cls.style["logo"]
    assert path.is_file()
    assert path.stat().st_size < 2048
    root = ElementTree.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("viewBox") == "0 0 24 24"
    # No embedded images, scripts or links: a plain shape and a letter.
    tags = {element.tag.rpartition("}")[2] for element in root.iter()}
    assert tags <= {"svg", "rect", "text"}


def contrast(one, other):
    """WCAG 2.1's contrast ratio of two ``#rgb``/``#rrggbb`` colours (1 to 21)."""

    def luminance(colour):
        digits = colour.lstrip("#")
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    lighter, darker = sorted((luminance(one), luminance(other)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_contrast_ratio_of_known_pairs():
    assert contrast("#000", "#fff") == pytest.approx(21)
    assert contrast("#346df1", "#1f2937") == pytest.approx(3.22, abs=0.01)  # issue 13's link


@pytest.mark.parametrize("provider_id", IDS)
def test_button_text_is_readable_and_the_icon_matches(provider_id):
    """The button's text meets WCAG AA (4.5:1) on its colour; the icon uses the same two."""
    style = provider_class(provider_id).style
    assert contrast(style["text"], style["bg"]) >= 4.5, style
    root = ElementTree.parse(STATIC / style["logo"]).getroot()
    svg = "{http://www.w3.org/2000/svg}"
    assert root.find(f"{svg}rect").get("fill") == style["bg"]
    assert root.find(f"{svg}text").get("fill") == style["text"]


@pytest.mark.parametrize("provider_id", IDS)
def test_configuration_is_valid(provider_id):
    provider = provider_class(provider_id)(client_id="id", client_secret="secret")
    assert provider.validate() == []


@pytest.mark.parametrize("provider_id", IDS)
def test_system_check_reports_missing_client_id(provider_id):
    provider = provider_class(provider_id)()
    errors = provider.system_checks()
    messages = [error.msg for error in errors]
    assert any("client id" in message for message in messages), messages
    assert any(f"{env_prefix(provider_id)}_ID" in message for message in messages)
    assert {error.id for error in errors} == {"webauth.E004"}


@pytest.mark.parametrize("provider_id", IDS)
def test_env_fills_credentials_and_issuer(provider_id):
    provider = provider_class(provider_id)()
    needs_issuer = provider.issuer is None and not (
        provider.authorization_endpoint and provider.token_endpoint
    )
    prefix = env_prefix(provider_id)
    env = {
        f"{prefix}_ID": f"{provider_id}-client",
        f"{prefix}_SECRET": f"{provider_id}-secret",
        f"{prefix}_ISSUER": "https://idp.example.com",
    }
    provider.apply_env(env.get)
    assert provider.client_id == f"{provider_id}-client"
    assert provider.client_secret == f"{provider_id}-secret"
    if needs_issuer:
        assert provider.issuer == "https://idp.example.com"
    assert provider.system_checks() == []


@pytest.mark.parametrize(
    "provider_id", ["auth0", "okta", "keycloak", "cognito", "zitadel", "authentik"]
)
def test_issuer_is_required_for_tenant_providers(provider_id):
    provider = provider_class(provider_id)(client_id="id", client_secret="secret")
    messages = [error.msg for error in provider.system_checks()]
    assert any(f"{env_prefix(provider_id)}_ISSUER" in message for message in messages)
    provider = provider_class(provider_id)(
        client_id="id", client_secret="secret", issuer="https://tenant.example.com"
    )
    assert provider.system_checks() == []
    assert provider.discovery_url == "https://tenant.example.com/.well-known/openid-configuration"


def test_env_does_not_replace_explicit_values():
    provider = GitHub(client_id="explicit", client_secret="explicit-secret")
    provider.apply_env({"AUTH_GITHUB_ID": "x", "AUTH_GITHUB_SECRET": "y"}.get)
    assert (provider.client_id, provider.client_secret) == ("explicit", "explicit-secret")


def test_env_names_use_the_provider_id():
    provider = MicrosoftEntraID()
    provider.apply_env(
        {
            "AUTH_MICROSOFT_ENTRA_ID_ID": "entra-client",
            "AUTH_MICROSOFT_ENTRA_ID_SECRET": "entra-secret",
        }.get
    )
    assert (provider.client_id, provider.client_secret) == ("entra-client", "entra-secret")
    # A custom id changes the variables read.
    work = GitHub(id="github-work")
    work.apply_env({"AUTH_GITHUB_ID": "wrong", "AUTH_GITHUB_WORK_ID": "right"}.get)
    assert work.client_id == "right"


def test_custom_profile_callable_replaces_the_mapping():
    provider = GitHub(profile=lambda profile, tokens: {"id": "custom", "name": profile["login"]})
    assert provider.profile(recorded("github")["response"], TOKENS) == {
        "id": "custom",
        "name": "octocat",
    }


# -- profile mappings against recorded responses ------------------------------------------


@pytest.mark.parametrize("provider_id", IDS)
def test_every_provider_has_a_recorded_response(provider_id):
    data = recorded(provider_id)
    assert data["source"]
    assert set(data["expected"]) == {"id", "name", "email", "image"}


@pytest.mark.parametrize("provider_id", IDS)
def test_profile_maps_recorded_response(provider_id):
    data = recorded(provider_id)
    provider = provider_class(provider_id)()
    assert provider.profile(copy.deepcopy(data["response"]), TOKENS) == data["expected"]


@pytest.mark.parametrize("provider_id", IDS)
def test_profile_with_only_the_id_fields(provider_id):
    data = recorded(provider_id)["minimal"]
    provider = provider_class(provider_id)()
    assert provider.profile(copy.deepcopy(data["response"]), TOKENS) == data["expected"]


@pytest.mark.parametrize("provider_id", IDS)
def test_profile_without_an_id_is_refused(provider_id):
    provider = provider_class(provider_id)()
    with pytest.raises(ValueError, match="no account id"):
        provider.profile({}, TOKENS)


def _mutations(response):
    """Copies of *response* with one field (top level or one level down) of a wrong type."""
    for key, value in response.items():
        for wrong in (None, 7, [], ["x"], {"x": 1}, ""):
            mutated = copy.deepcopy(response)
            mutated[key] = wrong
            yield mutated
        if isinstance(value, dict):
            for inner in value:
                for wrong in (None, 7, [], {"x": 1}):
                    mutated = copy.deepcopy(response)
                    mutated[key][inner] = wrong
                    yield mutated


@pytest.mark.parametrize("provider_id", IDS)
def test_profile_never_crashes_on_odd_fields(provider_id):
    provider = provider_class(provider_id)()
    for mutated in _mutations(recorded(provider_id)["response"]):
        try:
            user = provider.profile(mutated, TOKENS)
        except ValueError:
            continue  # the mutation removed the account id: refused on purpose
        assert set(user) == {"id", "name", "email", "image"}
        assert isinstance(user["id"], str)
        for field in ("name", "email", "image"):
            assert user[field] is None or isinstance(user[field], str)


def test_numeric_ids_become_strings():
    assert GitHub().profile({"id": 1}, TOKENS)["id"] == "1"
    with pytest.raises(ValueError):
        GitHub().profile({"id": True}, TOKENS)


# -- GitHub ---------------------------------------------------------------------------


def test_github_defaults():
    provider = GitHub()
    assert provider.issuer == "https://github.com/login/oauth"
    assert provider.authorization_endpoint == "https://github.com/login/oauth/authorize"
    assert provider.token_endpoint == "https://github.com/login/oauth/access_token"
    assert provider.userinfo_endpoint == "https://api.github.com/user"
    assert provider.scope == "read:user user:email"
    assert provider.checks == ("pkce",)
    assert provider.client_auth_method == "client_secret_basic"
    assert provider.uses_discovery is False


def test_github_falls_back_to_the_primary_email(api):
    data = recorded("github_emails")
    http, transport = api(
        {
            ("GET", "https://api.github.com/user"): (200, data["user"]),
            ("GET", "https://api.github.com/user/emails"): (200, data["emails"]),
        }
    )
    provider = GitHub()
    profile = provider.get_userinfo(http, dict(TOKENS), provider.userinfo_endpoint)
    assert profile["email"] == "mona@example.com"
    assert provider.profile(profile, TOKENS) == data["expected"]
    assert [(r.method, r.url) for r in transport.sent] == [
        ("GET", "https://api.github.com/user"),
        ("GET", "https://api.github.com/user/emails"),
    ]
    for request in transport.sent:
        assert request.headers["Authorization"] == "Bearer recorded-access-token"
        assert request.headers["User-Agent"] == "webauth"
        assert request.headers["Accept"] == "application/vnd.github+json"
        assert request.body is None


def test_github_takes_the_first_email_without_a_primary(api):
    data = recorded("github_emails")
    http, _ = api(
        {
            ("GET", "https://api.github.com/user"): (200, data["user"]),
            ("GET", "https://api.github.com/user/emails"): (200, data["emails_without_primary"]),
        }
    )
    profile = GitHub().get_userinfo(http, dict(TOKENS), "https://api.github.com/user")
    assert profile["email"] == "first@example.com"


def test_github_public_email_needs_no_second_request(api):
    http, transport = api(
        {("GET", "https://api.github.com/user"): (200, recorded("github")["response"])}
    )
    profile = GitHub().get_userinfo(http, dict(TOKENS), "https://api.github.com/user")
    assert profile["email"] == "octocat@example.com"
    assert len(transport.sent) == 1


@pytest.mark.parametrize(
    "emails_response",
    [(404, {"message": "Not Found"}), (403, {"message": "Forbidden"}), (200, []), (200, {})],
)
def test_github_without_any_email(api, emails_response):
    data = recorded("github_emails")
    http, _ = api(
        {
            ("GET", "https://api.github.com/user"): (200, data["user"]),
            ("GET", "https://api.github.com/user/emails"): emails_response,
        }
    )
    provider = GitHub()
    profile = provider.get_userinfo(http, dict(TOKENS), "https://api.github.com/user")
    assert provider.profile(profile, TOKENS)["email"] is None


def test_github_user_error_is_raised(api):
    http, _ = api({("GET", "https://api.github.com/user"): (401, {"message": "Bad credentials"})})
    with pytest.raises(requests.HTTPError):
        GitHub().get_userinfo(http, dict(TOKENS), "https://api.github.com/user")
    with pytest.raises(ValueError, match="access_token"):
        GitHub().get_userinfo(http, {"token_type": "bearer"}, "https://api.github.com/user")


def test_github_enterprise_endpoints(api):
    provider = GitHub(enterprise_base_url="https://github.example.com/")
    assert provider.issuer == "https://github.example.com/login/oauth"
    assert provider.authorization_endpoint == "https://github.example.com/login/oauth/authorize"
    assert provider.token_endpoint == "https://github.example.com/login/oauth/access_token"
    assert provider.userinfo_endpoint == "https://github.example.com/api/v3/user"
    assert provider.emails_endpoint == "https://github.example.com/api/v3/user/emails"
    assert provider.validate() == []
    data = recorded("github_emails")
    http, transport = api(
        {
            ("GET", "https://github.example.com/api/v3/user"): (200, data["user"]),
            ("GET", "https://github.example.com/api/v3/user/emails"): (200, data["emails"]),
        }
    )
    profile = provider.get_userinfo(http, dict(TOKENS), provider.userinfo_endpoint)
    assert profile["email"] == "mona@example.com"
    assert len(transport.sent) == 2
    # github.com itself is untouched.
    assert GitHub().emails_endpoint == "https://api.github.com/user/emails"


def test_github_enterprise_keeps_explicit_endpoints():
    provider = GitHub(
        enterprise_base_url="https://github.example.com",
        token_endpoint="https://proxy.example.com/token",
    )
    assert provider.token_endpoint == "https://proxy.example.com/token"
    assert provider.authorization_endpoint == "https://github.example.com/login/oauth/authorize"


# -- Microsoft Entra ID --------------------------------------------------------------------

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"


def test_entra_default_tenant_is_common():
    provider = MicrosoftEntraID()
    assert provider.tenant_id == "common"
    assert provider.issuer == "https://login.microsoftonline.com/common/v2.0"
    assert provider.scope == "openid profile email User.Read"
    assert provider.id_token is True


def test_entra_tenant_issuer():
    provider = MicrosoftEntraID(tenant_id=TENANT)
    assert provider.issuer == f"https://login.microsoftonline.com/{TENANT}/v2.0"
    assert provider.discovery_url == (
        f"https://login.microsoftonline.com/{TENANT}/v2.0/.well-known/openid-configuration"
    )
    assert provider.validate() == []


def test_entra_explicit_issuer_wins():
    issuer = "https://login.microsoftonline.com/contoso.example/v2.0"
    provider = MicrosoftEntraID(tenant_id=TENANT, issuer=issuer)
    assert provider.issuer == issuer
    provider.apply_env({"AUTH_MICROSOFT_ENTRA_ID_ISSUER": "https://other.example.com"}.get)
    assert provider.issuer == issuer


def test_entra_env_issuer_replaces_the_tenant_default():
    provider = MicrosoftEntraID()
    issuer = f"https://login.microsoftonline.com/{TENANT}/v2.0"
    provider.apply_env({"AUTH_MICROSOFT_ENTRA_ID_ISSUER": issuer}.get)
    assert provider.issuer == issuer


@pytest.mark.parametrize(
    "issuer",
    [
        "https://login.microsoftonline.com/{tenantid}/v2.0",
        "https://login.microsoftonline.com/common/v2.0",
        "https://login.microsoftonline.com/organizations/v2.0",
    ],
)
def test_entra_multi_tenant_issuer_uses_the_token_tenant(issuer):
    provider = MicrosoftEntraID()
    expected = f"https://login.microsoftonline.com/{TENANT}/v2.0"
    assert provider.expected_issuer({"tid": TENANT}, issuer) == expected


def test_entra_single_tenant_issuer_is_not_rewritten():
    issuer = f"https://login.microsoftonline.com/{TENANT}/v2.0"
    provider = MicrosoftEntraID(tenant_id=TENANT)
    assert provider.expected_issuer({"tid": "another-tenant"}, issuer) == issuer
    common = "https://login.microsoftonline.com/common/v2.0"
    for bad in (None, 3, "", "a/b", "../x"):
        assert provider.expected_issuer({"tid": bad}, common) == common


def test_entra_rejects_a_malformed_tenant():
    problems = MicrosoftEntraID(tenant_id="bad/tenant").validate()
    assert any("tenant_id" in problem for problem in problems)


def test_entra_does_not_fetch_the_graph_photo():
    data = recorded("microsoft-entra-id")
    # profile() takes no HTTP session: the photo is never fetched.
    assert MicrosoftEntraID().profile(data["response"], TOKENS)["image"] is None


# -- Apple ------------------------------------------------------------------------------


def test_apple_defaults():
    provider = Apple()
    assert provider.issuer == "https://appleid.apple.com"
    assert provider.scope == "name email"
    assert provider.response_mode == "form_post"
    assert set(provider.checks) == {"nonce", "state"}
    assert provider.client_auth_method == "client_secret_post"
    assert provider.id_token is True


def test_apple_user_parameter_gives_the_name():
    data = recorded("apple")
    provider = Apple()
    extra = provider.extra_callback_profile(data["callback_params"])
    assert extra["name"] == "Jane Appleseed"
    assert extra["user"]["name"] == {"firstName": "Jane", "lastName": "Appleseed"}
    # Whichever way the flow merges them, the ID token's claims keep their values.
    for profile in ({**data["response"], **extra}, {**extra, **data["response"]}):
        assert provider.profile(profile, TOKENS) == data["expected_with_user"]
    # Only the nested "user" object (as Auth.js stores it) is enough too.
    nested = {**data["response"], "user": extra["user"]}
    assert provider.profile(nested, TOKENS) == data["expected_with_user"]


def test_apple_user_parameter_never_supplies_the_email():
    provider = Apple()
    extra = provider.extra_callback_profile(
        {"user": json.dumps({"name": {"firstName": "Eve"}, "email": "victim@example.com"})}
    )
    assert "email" not in extra
    assert "sub" not in extra
    claims = {"sub": "001234.0000", "email": "eve@privaterelay.appleid.com"}
    user = provider.profile({**claims, **extra}, TOKENS)
    assert user == {
        "id": "001234.0000",
        "name": "Eve",
        "email": "eve@privaterelay.appleid.com",
        "image": None,
    }


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"user": ""},
        {"user": "not json"},
        {"user": "[1, 2]"},
        {"user": '"a string"'},
        {"user": json.dumps({"name": "not an object"})},
        {"user": json.dumps({"name": {"firstName": 5, "lastName": None}})},
        {"user": json.dumps({"name": {"firstName": "x" * 5000}})},
    ],
)
def test_apple_ignores_a_bad_user_parameter(params):
    extra = Apple().extra_callback_profile(params)
    assert "name" not in extra
    assert Apple().profile({"sub": "001234.0000", **extra}, TOKENS)["name"] is None


# -- Twitch -------------------------------------------------------------------------------


def test_twitch_defaults():
    provider = Twitch()
    assert provider.issuer == "https://id.twitch.tv/oauth2"
    assert provider.client_auth_method == "client_secret_post"
    assert json.loads(provider.authorization_params["claims"]) == {
        "id_token": {"email": None, "picture": None, "preferred_username": None}
    }
    merged = Twitch(authorization_params={"force_verify": "true"}).authorization_params
    assert set(merged) == {"claims", "force_verify"}


def test_twitch_conform_token():
    provider = Twitch()
    token = {"access_token": "a", "token_type": "bearer", "scope": ["openid", "user:read:email"]}
    assert provider.conform_token(token)["scope"] == "openid user:read:email"
    assert token["scope"] == ["openid", "user:read:email"]  # not modified in place
    assert provider.conform_token({"access_token": "a", "scope": "openid"})["scope"] == "openid"
    assert "scope" not in provider.conform_token({"access_token": "a", "scope": None})
    assert provider.conform_token({"status": 400, "message": "Invalid authorization code"}) == {
        "error": "invalid_request",
        "error_description": "Invalid authorization code",
    }
    standard = {"error": "invalid_grant", "error_description": "expired"}
    assert provider.conform_token(standard) == standard


# -- Dropbox, Notion, Reddit: their own profile requests -----------------------------------


def test_dropbox_userinfo_is_a_post(api):
    data = recorded("dropbox")
    url = "https://api.dropboxapi.com/2/users/get_current_account"
    http, transport = api({("POST", url): (200, data["response"])})
    provider = Dropbox()
    profile = provider.get_userinfo(http, dict(TOKENS), provider.userinfo_endpoint)
    assert provider.profile(profile, TOKENS) == data["expected"]
    (request,) = transport.sent
    assert (request.method, request.url) == ("POST", url)
    assert request.headers["Authorization"] == "Bearer recorded-access-token"
    assert not request.body
    assert provider.authorization_params == {"token_access_type": "offline"}


def test_notion_profile_is_the_bot_owner(api):
    data = recorded("notion")
    url = "https://api.notion.com/v1/users/me"
    http, transport = api({("GET", url): (200, data["users_me"])})
    provider = Notion()
    profile = provider.get_userinfo(http, dict(TOKENS), provider.userinfo_endpoint)
    assert profile == data["response"]
    assert provider.profile(profile, TOKENS) == data["expected"]
    (request,) = transport.sent
    assert request.headers["Notion-Version"] == "2022-06-28"
    assert request.headers["Authorization"] == "Bearer recorded-access-token"
    assert provider.authorization_params == {"owner": "user"}


def test_notion_workspace_owned_integration_is_refused(api):
    bot = {
        "object": "user",
        "type": "bot",
        "bot": {"owner": {"type": "workspace", "workspace": True}},
    }
    http, _ = api({("GET", "https://api.notion.com/v1/users/me"): (200, bot)})
    with pytest.raises(ValueError, match="owned by a workspace"):
        Notion().get_userinfo(http, dict(TOKENS), "https://api.notion.com/v1/users/me")


def test_notion_conform_token_drops_a_null_refresh_token():
    provider = Notion()
    assert "refresh_token" not in provider.conform_token(
        {"access_token": "a", "refresh_token": None}
    )
    kept = {"access_token": "a", "refresh_token": "r"}
    assert provider.conform_token(kept) == kept


def test_reddit_sends_a_user_agent(api):
    data = recorded("reddit")
    http, transport = api({("GET", "https://oauth.reddit.com/api/v1/me"): (200, data["response"])})
    provider = Reddit()
    profile = provider.get_userinfo(http, dict(TOKENS), provider.userinfo_endpoint)
    assert provider.profile(profile, TOKENS) == data["expected"]
    assert transport.sent[0].headers["User-Agent"] == "webauth"
    assert provider.checks == ("state",)


# -- other quirks ------------------------------------------------------------------------------


def test_discord_avatars():
    provider = Discord()
    animated = {"id": "80351110224678912", "username": "nelly", "avatar": "a_1269e74af4df7417b1"}
    assert provider.profile(animated, TOKENS)["image"] == (
        "https://cdn.discordapp.com/avatars/80351110224678912/a_1269e74af4df7417b1.gif"
    )
    legacy = {
        "id": "80351110224678912",
        "username": "nelly",
        "discriminator": "1337",
        "avatar": None,
    }
    assert provider.profile(legacy, TOKENS)["image"] == (
        "https://cdn.discordapp.com/embed/avatars/2.png"
    )


def test_gitlab_self_managed_base_url():
    provider = GitLab(base_url="https://gitlab.example.com/")
    assert provider.base_url == "https://gitlab.example.com"
    assert provider.authorization_endpoint == "https://gitlab.example.com/oauth/authorize"
    assert provider.token_endpoint == "https://gitlab.example.com/oauth/token"
    assert provider.userinfo_endpoint == "https://gitlab.example.com/api/v4/user"
    assert GitLab().userinfo_endpoint == "https://gitlab.com/api/v4/user"
    assert GitLab().scope == "read_user"


def test_salesforce_issuer_default_and_env():
    provider = Salesforce()
    assert provider.issuer == "https://login.salesforce.com"
    assert provider.id_token is False
    assert set(provider.checks) == {"pkce", "state", "nonce"}
    provider.apply_env({"AUTH_SALESFORCE_ISSUER": "https://test.salesforce.com"}.get)
    assert provider.issuer == "https://test.salesforce.com"
    explicit = Salesforce(issuer="https://example.my.salesforce.com")
    explicit.apply_env({"AUTH_SALESFORCE_ISSUER": "https://test.salesforce.com"}.get)
    assert explicit.issuer == "https://example.my.salesforce.com"


@pytest.mark.parametrize(
    ("provider_id", "attribute", "value"),
    [
        ("twitter", "checks", ("pkce", "state")),
        ("twitter", "authorization_endpoint", "https://x.com/i/oauth2/authorize"),
        ("linkedin", "issuer", "https://www.linkedin.com/oauth"),
        ("linkedin", "client_auth_method", "client_secret_post"),
        ("linkedin", "checks", ("state",)),
        ("slack", "issuer", "https://slack.com"),
        ("slack", "checks", ("nonce",)),
        ("google", "issuer", "https://accounts.google.com"),
        ("line", "id_token_signing_algs", ("HS256",)),
        ("line", "checks", ("state",)),
        ("atlassian", "checks", ("state",)),
        (
            "atlassian",
            "authorization_params",
            {"audience": "api.atlassian.com", "prompt": "consent"},
        ),
        ("zoom", "scope", ""),
        ("kakao", "scope", ""),
        ("kakao", "client_auth_method", "client_secret_post"),
        ("strava", "client_auth_method", "client_secret_post"),
        ("facebook", "scope", "email"),
        ("discord", "scope", "identify email"),
        ("spotify", "scope", "user-read-email"),
        ("patreon", "scope", "identity identity[email]"),
        ("okta", "checks", ("pkce", "state")),
    ],
)
def test_auth_js_defaults(provider_id, attribute, value):
    assert getattr(provider_class(provider_id)(), attribute) == value
