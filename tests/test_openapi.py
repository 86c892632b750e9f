"""webauth/openapi.json: a valid OpenAPI 3.1 description, in step with the URLconf, and served.

The contract test against the live server is tests/test_openapi_contract.py; the password
routes' answers past the email's code, and the bot challenge's, tests/test_openapi_passwords.py.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import URLPattern, include, path, reverse
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from webauth import urls as webauth_urls
from webauth.actions import app_session
from webauth.actions.app import APP_ROUTES, app_mfa_view, app_view
from webauth.actions.app_session import app_session_view
from webauth.actions.reset import app_reset_view
from webauth.actions.signup import app_signup_view
from webauth.actions.token import ended_view, jwks_view, metadata_view, token_view
from webauth.conf import build_config, get_config
from webauth.openapi import description, load_description, openapi_view
from webauth.providers import DjangoCredentials, Email, Passkey
from webauth.providers.catalog import GitHub
from webauth.providers.oauth import OIDC
from webauth.tokens.keys import generate
from webauth.views import ROUTES, auth_view

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
ROOT = Path(__file__).resolve().parent.parent
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# A site that mounts webauth elsewhere (test_the_servers_url_follows_base_path).
urlpatterns = [path("api/auth/", include("webauth.urls"))]


def operations(doc: dict) -> set[tuple[str, str]]:
    return {
        (method.upper(), route)
        for route, item in doc["paths"].items()
        for method in item
        if method in METHODS
    }


#: An access tokens' section (the token routes are described only with one).
TOKENS = {
    "keys": [generate("ES256", kid="k1").export(private_key=True)],
    "audiences": ["https://api.example.com"],
}


def every_provider(**extra) -> dict:
    return {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "bearer": True,
        "openapi": True,
        "experimental": {"enable_webauthn": True},
        "providers": [
            DjangoCredentials(),
            Email(from_email="no-reply@example.com"),
            Email(id="links", from_email="no-reply@example.com", code=None),
            Passkey(),
            OIDC(
                id="google", issuer="https://accounts.example.com", client_id="c", client_secret="s"
            ),
            GitHub(client_id="c", client_secret="s"),
        ],
        **extra,
    }


def config_of(raw: dict):
    return build_config(raw, lambda name: None)


# -- the file --------------------------------------------------------------------------------------


def test_the_shipped_description_is_valid_openapi_3_1():
    doc = load_description()
    assert doc["openapi"].startswith("3.1.")
    validate(doc, cls=OpenAPIV31SpecValidator)


def test_its_version_is_webauths():
    import webauth

    assert load_description()["info"]["version"] == webauth.__version__


def test_the_file_is_package_data():
    # Shipped in the wheel and the sdist beside the code that serves it.
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "openapi.json" in pyproject["tool"]["setuptools"]["package-data"]["webauth"]
    assert (ROOT / "webauth" / "openapi.json").is_file()


def test_each_call_gives_a_new_dict():
    doc = load_description()
    doc["paths"].clear()
    assert load_description()["paths"]


def test_every_example_fits_its_schema():
    doc = load_description()
    resolver_root = {"components": doc["components"]}

    def check(example, schema):
        # The description's schemas are JSON Schema 2020-12, with refs into components.
        validator = jsonschema.Draft202012Validator(
            {**schema, **resolver_root}, format_checker=jsonschema.FormatChecker()
        )
        validator.validate(example)

    checked = 0
    for item in doc["paths"].values():
        for method, operation in item.items():
            if method not in METHODS:
                continue
            for media in operation.get("requestBody", {}).get("content", {}).values():
                for example in media.get("examples", {}).values():
                    check(example["value"], media["schema"])
                    checked += 1
    for schema in doc["components"]["schemas"].values():
        if "example" in schema:
            check(schema["example"], schema)
            checked += 1
    assert checked >= 4


# -- in step with the URLconf ------------------------------------------------------------------


def _route_path(pattern: URLPattern) -> str:
    """The description's path of a named webauth route: ``/signin/{provider_id}``."""
    kwargs = (
        {"provider_id": "PROVIDER"} if "provider_id" in pattern.pattern.regex.groupindex else {}
    )
    url = reverse(f"webauth:{pattern.name}", kwargs=kwargs)
    prefix = reverse("webauth:session")[: -len("session")]
    return "/" + unquote(url[len(prefix) :]).replace("PROVIDER", "{provider_id}")


def _served_methods(pattern: URLPattern) -> set[str]:
    """The methods the route's view answers (anything else is an error)."""
    view, kwargs = pattern.callback, pattern.default_args
    action = kwargs.get("action")
    if view is auth_view:
        methods = {method for method, name in ROUTES if name == action}
        if action == "signin" and pattern.name == "signin-provider":
            methods.discard("GET")  # auth_view: Auth.js has no GET /signin/<provider>
        return methods
    if view is app_view:
        return {method for method, name in APP_ROUTES if name == action}
    if view is app_session_view:
        assert action in app_session.ROUTES
        return {"POST"}
    if view is openapi_view:
        return {"GET"}
    if view is app_mfa_view:
        return {"POST"}
    if view is app_signup_view:
        return {"POST"}
    if view is app_reset_view:
        assert action in ("reset", "confirm")
        return {"POST"}
    if view is token_view:
        return {"GET"}
    if view in (jwks_view, metadata_view, ended_view):
        return {"GET"}  # and HEAD, which OpenAPI describes as GET
    raise AssertionError(f"a webauth route the description does not know: {pattern.name}")


def test_every_route_and_method_is_described_and_nothing_else():
    served = set()
    unnamed = []
    for pattern in webauth_urls.urlpatterns:
        if pattern.name is None:
            unnamed.append(pattern)
            continue
        route = _route_path(pattern)
        served |= {(method, route) for method in _served_methods(pattern)}
    # The only unnamed pattern is the catch-all, which answers 400 "Bad request.".
    assert [p.pattern.regex.pattern for p in unnamed] == ["^(?P<rest>.*)$"]
    described = operations(load_description())
    assert described - served == set(), "described, but not served"
    assert served - described == set(), "served, but not described"


def test_operation_ids_are_unique():
    doc = load_description()
    ids = [
        operation["operationId"]
        for item in doc["paths"].values()
        for method, operation in item.items()
        if method in METHODS
    ]
    assert len(ids) == len(set(ids))


def test_every_provider_type_is_in_the_providers_schema():
    types = set(
        load_description()["components"]["schemas"]["Provider"]["properties"]["type"]["enum"]
    )
    for provider in every_provider()["providers"]:
        assert provider.type in types


# -- fitted to the site --------------------------------------------------------------------------


def test_the_served_description_is_valid_for_each_site():
    for raw in (
        every_provider(),
        every_provider(bearer=False),
        {"secret": SECRET, "providers": [DjangoCredentials()]},
        {"secret": SECRET, "providers": []},
    ):
        validate(
            description(config_of(raw), "https://example.com/auth"), cls=OpenAPIV31SpecValidator
        )


def test_servers_names_the_sites_routes():
    doc = description(config_of(every_provider()), "https://example.com/auth")
    assert [server["url"] for server in doc["servers"]] == ["https://example.com/auth"]


def test_each_provider_id_lists_the_providers_its_route_serves():
    doc = description(config_of(every_provider()), "https://example.com/auth")

    def ids(route, method):
        (parameter,) = [
            p for p in doc["paths"][route][method]["parameters"] if p.get("name") == "provider_id"
        ]
        assert parameter["in"] == "path" and parameter["required"] is True
        return parameter["schema"]["enum"]

    everyone = ["credentials", "email", "links", "passkey", "google", "github"]
    assert ids("/signin/{provider_id}", "post") == everyone
    assert ids("/callback/{provider_id}", "get") == everyone
    assert ids("/callback/{provider_id}", "post") == everyone
    assert ids("/webauthn-options/{provider_id}", "get") == ["passkey"]
    # An email provider without codes has no app sign-in; GitHub issues no ID token.
    assert ids("/app/signin/{provider_id}", "post") == ["credentials", "email"]
    assert ids("/app/callback/{provider_id}", "post") == ["email", "passkey"]
    assert ids("/app/webauthn-options/{provider_id}", "get") == ["passkey"]
    assert ids("/app/idtoken/{provider_id}", "post") == ["google"]
    assert ids("/app/authorize/{provider_id}", "post") == ["google", "github"]
    assert ids("/app/token/{provider_id}", "post") == ["google", "github"]


def test_a_route_no_provider_can_use_is_left_out():
    doc = description(
        config_of({"secret": SECRET, "bearer": True, "providers": [DjangoCredentials()]}), "/auth"
    )
    assert "/app/signin/{provider_id}" in doc["paths"]
    for route in (
        "/webauthn-options/{provider_id}",
        "/app/idtoken/{provider_id}",
        "/app/token/{provider_id}",
    ):
        assert route not in doc["paths"]


def test_without_bearer_the_app_routes_are_left_out():
    raw = every_provider(bearer=False, passwords={"signup": True, "reset": True}, tokens=TOKENS)
    doc = description(config_of(raw), "https://example.com/auth")
    assert not [route for route in doc["paths"] if route.startswith("/app/")]
    assert "bearerAuth" not in doc["components"]["securitySchemes"]
    assert not [tag for tag in doc["tags"] if tag["name"].startswith("App ")]
    # The cookie routes are all there.
    assert operations(doc) == {
        op for op in operations(load_description()) if not op[1].startswith("/app/")
    }


PASSWORD_PATHS = {
    "/signup",
    "/reset",
    "/reset/sent",
    "/reset/confirm",
    "/reset/done",
    "/app/signup",
    "/app/reset",
    "/app/reset/confirm",
}


@pytest.mark.parametrize(
    ("passwords", "served"),
    [
        ({}, set()),
        ({"signup": True}, {"/signup", "/app/signup"}),
        ({"reset": True}, PASSWORD_PATHS - {"/signup", "/app/signup"}),
        ({"signup": True, "reset": True}, PASSWORD_PATHS),
    ],
)
def test_the_password_routes_are_there_only_while_they_are_on(passwords, served):
    doc = description(config_of(every_provider(passwords=passwords)), "https://example.com/auth")
    assert set(doc["paths"]) & PASSWORD_PATHS == served
    tags = {tag["name"] for tag in doc["tags"]}
    assert ("Passwords" in tags) is bool(served)
    assert ("App passwords" in tags) is bool(served)
    assert set(load_description()["paths"]) >= PASSWORD_PATHS  # the file has them all


TOKEN_PATHS = {
    "/token",
    "/token/ended",
    "/.well-known/jwks.json",
    "/.well-known/openid-configuration",
    "/app/access-token",
}


@pytest.mark.parametrize(
    ("extra", "served"),
    [
        ({}, set()),
        ({"tokens": TOKENS}, TOKEN_PATHS),
        ({"tokens": TOKENS, "bearer": False}, TOKEN_PATHS - {"/app/access-token"}),
        ({"tokens": {**TOKENS, "feed": False}}, TOKEN_PATHS - {"/token/ended"}),
    ],
)
def test_the_token_routes_are_there_only_with_tokens(extra, served):
    doc = description(config_of(every_provider(**extra)), "https://example.com/auth")
    assert set(doc["paths"]) & TOKEN_PATHS == served
    assert ("Tokens" in {tag["name"] for tag in doc["tags"]}) is bool(served)
    assert set(load_description()["paths"]) >= TOKEN_PATHS


def test_sign_up_without_its_credentials_provider_is_left_out():
    raw = every_provider(passwords={"signup": True})
    raw["providers"] = [p for p in raw["providers"] if not isinstance(p, DjangoCredentials)]
    doc = description(config_of(raw), "https://example.com/auth")
    assert "/signup" not in doc["paths"] and "/app/signup" not in doc["paths"]


# -- the route -------------------------------------------------------------------------------------


def test_the_option_is_off_by_default(settings):
    settings.WEBAUTH = {"secret": SECRET}
    assert get_config().openapi is False
    response = Client().get("/auth/openapi.json")
    # As before the route existed: Auth.js's answer to a path it does not serve.
    assert response.status_code == 400
    assert response.json() == "Bad request."


@pytest.mark.parametrize("value", ["yes", 1, {"on": True}])
def test_the_option_must_be_a_bool(value):
    with pytest.raises(ImproperlyConfigured, match="openapi"):
        config_of({"secret": SECRET, "openapi": value})


@pytest.mark.django_db
def test_served_at_the_base_path(settings):
    settings.WEBAUTH = every_provider()
    response = Client().get(reverse("webauth:openapi"))
    assert reverse("webauth:openapi") == "/auth/openapi.json"
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert not response.cookies
    served = response.json()
    assert served == description(get_config(), "http://testserver/auth")
    validate(served, cls=OpenAPIV31SpecValidator)
    assert Client().head("/auth/openapi.json").status_code == 200


@pytest.mark.django_db
def test_the_servers_url_follows_url_and_its_origin(settings):
    settings.WEBAUTH = every_provider(url="https://auth.example.com/auth")
    served = Client().get("/auth/openapi.json").json()
    assert served["servers"][0]["url"] == "https://auth.example.com/auth"


@pytest.mark.urls(__name__)
@pytest.mark.django_db
def test_the_servers_url_follows_base_path(settings):
    settings.WEBAUTH = every_provider(base_path="/api/auth")
    assert reverse("webauth:openapi") == "/api/auth/openapi.json"
    served = Client().get("/api/auth/openapi.json").json()
    assert served["servers"][0]["url"] == "http://testserver/api/auth"


@pytest.mark.django_db
def test_the_served_description_follows_the_settings(settings):
    settings.WEBAUTH = every_provider()
    assert "/app/session" in Client().get("/auth/openapi.json").json()["paths"]
    settings.WEBAUTH = every_provider(bearer=False)
    assert "/app/session" not in Client().get("/auth/openapi.json").json()["paths"]


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_other_methods_are_405(settings, method):
    settings.WEBAUTH = every_provider()
    response = getattr(Client(), method)("/auth/openapi.json")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


def test_an_untrusted_host_is_the_configuration_error(settings):
    settings.WEBAUTH = every_provider(trust_host=False)
    response = Client().get("/auth/openapi.json")
    assert response.status_code == 500
    assert response.json() == {
        "message": "There was a problem with the server configuration. "
        "Check the server logs for more information."
    }


def test_a_trailing_slash_is_not_the_description(settings):
    settings.WEBAUTH = every_provider()
    response = Client().get("/auth/openapi.json/")
    assert response.status_code == 400 and response.json() == "Bad request."


def test_the_answer_is_encoded_once_per_site(settings):
    from webauth.openapi import _encoded

    settings.WEBAUTH = every_provider()
    _encoded.cache_clear()
    for _ in range(3):
        Client().get("/auth/openapi.json")
    assert _encoded.cache_info().misses == 1 and _encoded.cache_info().hits == 2
    assert json.loads(_encoded(get_config(), "http://testserver/auth"))["openapi"] == "3.1.0"
