"""Provider metadata (OpenID discovery) and signing keys (JWKS), cached.

Both are kept in Django's cache, so one fetch serves every process sharing the
cache. A JWKS is fetched again when an ID token names a key it lacks (the
provider rotated its keys), at most once per token.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.cache import cache

from ..conf import Config
from ..errors import InvalidEndpoints
from ..providers.base import TIMEOUT
from ..providers.oauth import OAuth2
from .client import http_session

__all__ = ["METADATA_TTL", "endpoints", "fetch_json", "jwks", "metadata"]

METADATA_TTL = 24 * 3600
JWKS_TTL = 3600


def _key(kind: str, url: str) -> str:
    return f"webauth:{kind}:{hashlib.sha256(url.encode()).hexdigest()}"


def fetch_json(config: Config, url: str) -> dict[str, object]:
    """GET *url* and return its JSON object (raises on HTTP errors or non-objects)."""
    response = http_session(config).get(url, timeout=TIMEOUT)
    response.raise_for_status()
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError(f"{url} did not return a JSON object")
    return data


def metadata(config: Config, provider: OAuth2) -> dict[str, object]:
    """The provider's discovery document, or ``{}`` when it has none to fetch."""
    if not provider.uses_discovery:
        return {}
    url = provider.discovery_url
    if not url:
        raise InvalidEndpoints(
            f"provider {provider.id!r} needs an issuer or its endpoints "
            "(authorization_endpoint, token_endpoint, userinfo_endpoint or jwks_uri)"
        )
    key = _key("oidc", url)
    data = cache.get(key)
    if data is None:
        try:
            data = fetch_json(config, url)
        except Exception as exc:
            raise InvalidEndpoints(
                f"could not read the discovery document of provider {provider.id!r}",
                cause={"err": exc, "url": url},
            ) from exc
        cache.set(key, data, METADATA_TTL)
    return dict(data)


def endpoints(config: Config, provider: OAuth2) -> dict[str, Any]:
    """The provider's effective endpoints and issuer: its own settings over discovery."""
    found = metadata(config, provider)
    result = {
        "issuer": provider.issuer or found.get("issuer"),
        "authorization_endpoint": provider.authorization_endpoint
        or found.get("authorization_endpoint"),
        "token_endpoint": provider.token_endpoint or found.get("token_endpoint"),
        "userinfo_endpoint": provider.userinfo_endpoint or found.get("userinfo_endpoint"),
        "jwks_uri": provider.jwks_uri or found.get("jwks_uri"),
    }
    for name in ("authorization_endpoint", "token_endpoint"):
        if not result[name]:
            raise InvalidEndpoints(f"provider {provider.id!r} has no {name}")
    return result


def jwks(config: Config, uri: str, *, refresh: bool = False) -> dict[str, object]:
    """The JWKS at *uri* (from the cache unless *refresh*)."""
    key = _key("jwks", uri)
    data = None if refresh else cache.get(key)
    if data is None:
        data = fetch_json(config, uri)
        cache.set(key, data, JWKS_TTL)
    return dict(data)
