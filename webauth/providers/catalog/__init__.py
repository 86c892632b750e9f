"""The built-in providers: one small module per service, with Auth.js's defaults.

Each is an :class:`~webauth.providers.oauth.OAuth2` or
:class:`~webauth.providers.oauth.OIDC` subclass whose id, endpoints, scopes,
checks, client authentication and profile mapping match the Auth.js provider
of the same id, and which reads ``AUTH_<ID>_ID``, ``AUTH_<ID>_SECRET`` (and
``AUTH_<ID>_ISSUER`` where it applies) from the environment::

    from webauth.providers.catalog import provider_class

    GitHub = provider_class("github")
    WEBAUTH = {"providers": [GitHub(), provider_class("google")(client_id="...")]}

The classes can also be imported by name (``from webauth.providers.catalog
import GitHub``) or from their module (``webauth.providers.catalog.github``).
:data:`CATALOG` maps each id to its class's dotted path; nothing is imported
until a class is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..oauth import OAuth2

__all__ = ["CATALOG", "provider_class"]

_PACKAGE = __name__

#: Provider id → dotted path of its class, in alphabetical order of id.
CATALOG: dict[str, str] = {
    "apple": f"{_PACKAGE}.apple.Apple",
    "atlassian": f"{_PACKAGE}.atlassian.Atlassian",
    "auth0": f"{_PACKAGE}.auth0.Auth0",
    "authentik": f"{_PACKAGE}.authentik.Authentik",
    "bitbucket": f"{_PACKAGE}.bitbucket.Bitbucket",
    "cognito": f"{_PACKAGE}.cognito.Cognito",
    "discord": f"{_PACKAGE}.discord.Discord",
    "dropbox": f"{_PACKAGE}.dropbox.Dropbox",
    "facebook": f"{_PACKAGE}.facebook.Facebook",
    "github": f"{_PACKAGE}.github.GitHub",
    "gitlab": f"{_PACKAGE}.gitlab.GitLab",
    "google": f"{_PACKAGE}.google.Google",
    "kakao": f"{_PACKAGE}.kakao.Kakao",
    "keycloak": f"{_PACKAGE}.keycloak.Keycloak",
    "line": f"{_PACKAGE}.line.Line",
    "linkedin": f"{_PACKAGE}.linkedin.LinkedIn",
    "microsoft-entra-id": f"{_PACKAGE}.microsoft_entra_id.MicrosoftEntraID",
    "naver": f"{_PACKAGE}.naver.Naver",
    "notion": f"{_PACKAGE}.notion.Notion",
    "okta": f"{_PACKAGE}.okta.Okta",
    "patreon": f"{_PACKAGE}.patreon.Patreon",
    "reddit": f"{_PACKAGE}.reddit.Reddit",
    "salesforce": f"{_PACKAGE}.salesforce.Salesforce",
    "slack": f"{_PACKAGE}.slack.Slack",
    "spotify": f"{_PACKAGE}.spotify.Spotify",
    "strava": f"{_PACKAGE}.strava.Strava",
    "twitch": f"{_PACKAGE}.twitch.Twitch",
    "twitter": f"{_PACKAGE}.twitter.Twitter",
    "yandex": f"{_PACKAGE}.yandex.Yandex",
    "zitadel": f"{_PACKAGE}.zitadel.Zitadel",
    "zoom": f"{_PACKAGE}.zoom.Zoom",
}

_BY_CLASS_NAME = {path.rpartition(".")[2]: path for path in CATALOG.values()}


def _load(path: str) -> type[OAuth2]:
    module, _, name = path.rpartition(".")
    cls: type[OAuth2] = getattr(import_module(module), name)
    return cls


def provider_class(provider_id: str) -> type[OAuth2]:
    """The built-in provider class with this id; ``KeyError`` for an unknown id."""
    try:
        path = CATALOG[provider_id]
    except KeyError:
        raise KeyError(
            f"no built-in provider has the id {provider_id!r}; "
            f"the catalog has: {', '.join(sorted(CATALOG))}"
        ) from None
    return _load(path)


def __getattr__(name: str) -> type[OAuth2]:
    # ``from webauth.providers.catalog import GitHub`` imports only github.py.
    path = _BY_CLASS_NAME.get(name)
    if path is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _load(path)
