"""HTTP sessions for talking to providers.

Every request to a provider goes through a ``requests.Session``; the
``http_client`` option supplies a factory for it (proxies, custom headers, CA
bundles, test transports). Authlib's ``OAuth2Session`` is a ``requests.Session``
subclass, so it takes over the configured session's transport and settings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7523 import PrivateKeyJWT

from ..providers.base import TIMEOUT

if TYPE_CHECKING:
    from ..conf import Config
    from ..providers.oauth import OAuth2

__all__ = ["http_session", "oauth_session"]


def http_session(config: Config) -> requests.Session:
    """A session from the ``http_client`` factory, or a plain one."""
    factory = config.http_client
    session = factory() if factory is not None else requests.Session()
    if not isinstance(session, requests.Session):
        raise TypeError("WEBAUTH['http_client'] must return a requests.Session")
    session.headers.setdefault("User-Agent", "webauth")
    return session


def oauth_session(
    config: Config,
    provider: OAuth2,
    *,
    redirect_uri: str | None = None,
    token_endpoint: str | None = None,
    **kwargs: object,
) -> OAuth2Session:
    """An Authlib client for *provider* that uses the configured HTTP session's transport."""
    base = http_session(config)
    private_key_jwt = provider.client_auth_method == "private_key_jwt"
    client = OAuth2Session(
        client_id=provider.client_id,
        client_secret=provider.private_key if private_key_jwt else provider.client_secret,
        token_endpoint_auth_method=provider.client_auth_method,
        redirect_uri=redirect_uri,
        default_timeout=TIMEOUT,
        **kwargs,
    )
    if private_key_jwt:
        client.register_client_auth_method(PrivateKeyJWT(token_endpoint))
    client.adapters = base.adapters
    client.proxies = base.proxies
    client.verify = base.verify
    client.cert = base.cert
    client.trust_env = base.trust_env
    client.headers.update(base.headers)
    return client
