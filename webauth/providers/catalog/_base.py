"""What the built-in providers share beyond their base classes: calling a provider API.

Each built-in provider subclasses :class:`~webauth.providers.oauth.OAuth2` or
:class:`~webauth.providers.oauth.OIDC`, maps its service's profile in
``map_profile`` with the helpers of :mod:`webauth.providers.profile`, and, when
the profile needs more than the userinfo endpoint, calls the service's API with
:func:`request_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..base import TIMEOUT

if TYPE_CHECKING:
    import requests

__all__ = ["request_json"]


def request_json(
    http: requests.Session,
    method: str,
    url: str,
    tokens: Mapping[str, object],
    headers: Mapping[str, str] | None = None,
) -> Any:
    """Call a provider API with the access token and return the decoded JSON body.

    Raises ``requests.HTTPError`` for an error status and ``ValueError`` when
    the token response has no access token or the body is not JSON.
    """
    access_token = tokens.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise ValueError("the token response has no access_token")
    response = http.request(
        method,
        url,
        headers={"Authorization": f"Bearer {access_token}", **(headers or {})},
        timeout=TIMEOUT,
    )
    response.raise_for_status()
    return response.json()
